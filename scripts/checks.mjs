#!/usr/bin/env node
// The checks (`npm run checks`; CI runs them): the type check, the linter,
// the layering, the docs' links, the GitHub workflows (actionlint) and the MCP
// Registry entry (server.json agrees with package.json and manifest.json; see
// scripts/registry-entry.ts). The first two take most of the time
// (some 25 and 45 s of CPU from a fresh clone; the type check 2 s when
// little changed since the last run) and each uses about one core, so they
// run side by side; each one's output is printed whole when it ends. Exits 1
// if any failed. `npm test` runs layers and links beside the tests (a second
// of CPU each; scripts/test.mjs): the first two would add a third to its time.
//   node scripts/checks.mjs [--only NAME,NAME]
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { only: { type: 'string' } } });

const CHECKS = [
  // Incremental: an unchanged tree is checked in about 2 s instead of 6; what changed, and what depends on it,
  // is checked again (the build info is TypeScript's own, exact; a fresh clone has none and checks everything).
  ['types', ['node_modules/typescript/bin/tsc', '--noEmit', '--incremental', '--tsBuildInfoFile', 'node_modules/.cache/folder-mcp/typecheck.tsbuildinfo', '-p', '.']],
  ['lint', ['node_modules/eslint/bin/eslint.js', '.']],
  ['layers', ['scripts/layers.mjs', '--check']],
  ['links', ['scripts/check-links.mjs']],
  ['workflows', ['scripts/lint-workflows.mjs']],
  ['registry', ['--import', 'tsx', 'scripts/registry-entry.ts', '--check']],
];

const only = values.only?.split(',');
const unknown = only?.filter((name) => !CHECKS.some(([known]) => known === name)) ?? [];
if (unknown.length > 0) throw new Error(`--only: no check named ${unknown.join(', ')}; known: ${CHECKS.map(([name]) => name).join(', ')}`);

const results = await Promise.all(
  CHECKS.filter(([name]) => !only || only.includes(name)).map(
    ([name, args]) =>
      new Promise((resolve) => {
        const started = performance.now();
        const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (chunk) => (output += chunk));
        child.stderr.on('data', (chunk) => (output += chunk));
        child.on('error', (error) => resolve({ name, ok: false, output: String(error), ms: 0 }));
        child.on('close', (code) => resolve({ name, ok: code === 0, output, ms: performance.now() - started }));
      }),
  ),
);
for (const { name, ok, output, ms } of results) {
  process.stdout.write(`${ok ? 'ok' : 'FAILED'}  ${name} (${(ms / 1000).toFixed(1)} s)\n${output.trim() ? output.trimEnd() + '\n' : ''}`);
}
process.exitCode = results.every((r) => r.ok) ? 0 : 1;
