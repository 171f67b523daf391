// The README's tables are claims about the code: the tools it lists are the
// tools the server defines, and the options it lists are the options the CLI
// parses (and --help prints). A tool or option added, renamed or removed
// without the README following fails here, not in a user's hands.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { findTool } from '../../src/catalog/find.ts';
import { readTool } from '../../src/catalog/read-tool.ts';
import { searchTool } from '../../src/catalog/search.ts';
import { treeTool } from '../../src/catalog/tree.ts';
import { WRITE_TOOLS } from '../../src/catalog/write-tools.ts';
import { CLI_OPTIONS, USAGE } from '../../src/config.ts';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The rows of the Markdown table whose header line matches `header`, as arrays of cells. */
function tableAfter(header: RegExp): string[][] {
  const lines = README.split('\n');
  const start = lines.findIndex((line) => header.test(line));
  assert.ok(start >= 0, `README has no line matching ${header}`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('|')) rows.push(line.split('|').slice(1, -1).map((cell) => cell.trim()));
    else if (rows.length > 0) break;
  }
  return rows.slice(1); // the |---| line
}

/** The `--names` (and `-x` shorts) written in backquotes in a cell. */
function optionsIn(cell: string): string[] {
  return [...cell.matchAll(/`(--?[a-z][a-z-]*)/g)].map((m) => m[1]!);
}

describe('the README says what the code does', () => {
  test('the tool table lists exactly the tools the server defines, the --write ones marked', () => {
    const rows = tableAfter(/^\| tool \| what it does \|$/);
    const named = rows.map(([name]) => /^`([a-z_]+)`$/.exec(name ?? '')?.[1]);
    const readOnly = [findTool, searchTool, readTool, treeTool].map((t) => t.name);
    const writing = WRITE_TOOLS.map((t) => t.name);
    assert.deepEqual([...named].sort(), [...readOnly, ...writing].sort());
    for (const [name, what] of rows) {
      const tool = name!.replaceAll('`', '');
      assert.equal(what!.startsWith('`--write`'), writing.includes(tool), `${tool}: marked --write iff it is a write tool`);
    }
    const words = ['none', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'];
    assert.match(README, new RegExp(`There are ${words[readOnly.length]} read-only ones, and ${words[writing.length]} more`));
  });

  test('the option table lists exactly the options the CLI parses, and so does --help', () => {
    const parsed = Object.entries(CLI_OPTIONS).flatMap(([long, spec]) => [`--${long}`, ...('short' in spec ? [`-${spec.short}`] : [])]);
    const rows = tableAfter(/^\| option \| default \| meaning \|$/);
    const documented = rows.flatMap(([option]) => optionsIn(option!));
    assert.deepEqual([...documented].sort(), [...parsed].sort());
    const inUsage = new Set([...USAGE.matchAll(/^ {2}(?:(-[a-z]), )?(--[a-z][a-z-]*)/gm)].flatMap((m) => (m[1] ? [m[1], m[2]!] : [m[2]!])));
    assert.deepEqual([...inUsage].sort(), [...parsed].sort());
  });
});
