// Path completion reads a bounded part of the index, whatever the folder's size.
import assert from 'node:assert/strict';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { MAX_COMPLETIONS, MAX_COUNTED, PathCompleter } from '../../src/catalog/complete.ts';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { tempDir } from '../basics.ts';

describe('PathCompleter', () => {
  test(`a folder past ${MAX_COUNTED} children: ${MAX_COMPLETIONS} values, total counted to ${MAX_COUNTED} and said to be more (issue 44: a full count per request)`, async () => {
    const dir = tempDir('folder-mcp-complete-');
    const real = realpathSync(dir.path);
    mkdirSync(join(real, 'big'));
    for (let i = 0; i < MAX_COUNTED + 200; i++) writeFileSync(join(real, 'big', `f${String(i).padStart(5, '0')}.txt`), '');
    writeFileSync(join(real, 'small.txt'), '');
    const roots = [makeRoot(real)];
    const index = new FolderIndex({ roots, dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
    try {
      await index.readiness.reached('scanned');
      const completer = new PathCompleter(index.db, roots);
      const big = completer.relative('big/');
      assert.equal(big.values.length, MAX_COMPLETIONS);
      assert.equal(big.total, MAX_COUNTED);
      assert.equal(big.hasMore, true);
      const few = completer.relative('big/f0119');
      assert.deepEqual(few, { values: Array.from({ length: 10 }, (_, i) => `big/f0119${i}.txt`), total: 10, hasMore: false });
      assert.deepEqual(completer.relative('sm'), { values: ['small.txt'], total: 1, hasMore: false });
    } finally {
      await index.close();
      dir.cleanup();
    }
  });
});
