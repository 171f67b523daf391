// The fuzzer of the one promise (test/fuzz.ts) on Windows: node.exe under
// Wine runs the built server with `dirs`, which there is one recursive
// ReadDirectoryChangesW watch per root, through random operations, restarts
// and kills, and compares every page of resources/list with a walk of the
// disk. Run by `npm run test:windows`, never by npm test.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fuzz } from '../fuzz.ts';

if (process.platform !== 'win32') throw new Error('the Windows lane runs on Node.js for Windows: npm run test:windows');

/** `FOLDER_MCP_FUZZ_SEEDS=FIRST-LAST` (and `FOLDER_MCP_FUZZ_OPS`, `FOLDER_MCP_FUZZ_SHRINK=1`) for a run by hand; the lane runs three. */
const range = /^(\d+)-(\d+)$/.exec(process.env.FOLDER_MCP_FUZZ_SEEDS ?? '');
const SEEDS = range ? Array.from({ length: Number(range[2]) - Number(range[1]) + 1 }, (_, i) => Number(range[1]) + i) : [1, 2, 3];
const OPS = Number(process.env.FOLDER_MCP_FUZZ_OPS ?? 40);

describe('the fuzzer on Windows: the listing equals the disk after random operations, restarts and kills', () => {
  for (const seed of SEEDS) {
    test(`dirs (recursive on Windows), seed ${seed}, ${OPS} operations`, async () => {
      const failure = await fuzz({ seed, ops: OPS, backend: 'dirs', settleMs: 20_000, shrink: process.env.FOLDER_MCP_FUZZ_SHRINK === '1' });
      if (failure) assert.fail(`${failure.message}\n${failure.ops.map((op) => JSON.stringify(op)).join('\n')}`);
    });
  }
});
