// scripts/layers.mjs, the check `npm test` runs on the house: an import that
// points up a floor, a cycle of value imports, and (issue 47) a circle that
// type imports close fail it. Run on small trees of its own.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';

const LAYERS = fileURLToPath(new URL('../../scripts/layers.mjs', import.meta.url));
const made: string[] = [];
after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** Runs the check on a src/ of these files (rooms from scripts/layers.mjs's floors). */
function check(files: Record<string, string>): { status: number | null; out: string } {
  const src = mkdtempSync(join(tmpdir(), 'fmcp-layers-'));
  made.push(src);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(src, path, '..'), { recursive: true });
    writeFileSync(join(src, path), text);
  }
  const run = spawnSync(process.execPath, [LAYERS, '--check', src], { encoding: 'utf8' });
  return { status: run.status, out: run.stdout + run.stderr };
}

test('a house with no circle passes', () => {
  const { status, out } = check({
    'protocol/a.ts': "import type { B } from './b.ts';\nexport type A = B;\n",
    'protocol/b.ts': 'export type B = 2;\n',
  });
  assert.equal(status, 0, out);
  assert.match(out, /0 circle\(s\) of type imports \(0 new\)/);
});

test('a circle closed by type imports fails, and is named', () => {
  const { status, out } = check({
    'protocol/a.ts': "import type { B } from './b.ts';\nexport type A = B | 1;\n",
    'protocol/b.ts': "import type { A } from './a.ts';\nexport type B = A | 2;\n",
  });
  assert.equal(status, 1, out);
  assert.match(out, /NEW circle of type imports: src\/protocol\/a\.ts, src\/protocol\/b\.ts/);
});

test('a cycle of value imports fails as a cycle, not as a type circle', () => {
  const { status, out } = check({
    'protocol/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
    'protocol/b.ts': "import { a } from './a.ts';\nexport const b = () => a;\n",
  });
  assert.equal(status, 1, out);
  assert.match(out, /1 import cycle\(s\), 0 circle\(s\) of type imports/);
});
