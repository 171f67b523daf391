// Each reconcile task keeps what it has found in its own PendingChange
// (src/sync/pending-change.ts), so two tasks never commit each other's rows,
// and each reports only the directories it found, even if they overlap
// (the write queue runs them one at a time; these tests do not use it).
import assert from 'node:assert/strict';
import { appendFileSync, readdirSync, lstatSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { FolderIndex, type CommittedChange } from '../../src/index/folder-index.ts';
import { silentLogger } from '../../src/log.ts';
import { PendingChange } from '../../src/sync/pending-change.ts';
import { Reconciler } from '../../src/sync/reconcile.ts';
import { makeRoot } from '../../src/uri.ts';
import { tempDir, writeTree } from '../basics.ts';

/** A served folder holding `files`, indexed in memory; `run` gets the index and the folder's path, and the batches committed meanwhile. */
async function withIndex(files: Record<string, string>, run: (index: FolderIndex, root: string, batches: string[][]) => Promise<void>): Promise<void> {
  const dir = tempDir();
  const root = join(dir.path, 'served');
  writeTree(root, files);
  const index = new FolderIndex({ roots: [makeRoot(root)], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
  try {
    await index.readiness.reached('scanned');
    const batches: string[][] = [];
    index.onChange((committed: CommittedChange) => batches.push([...committed.removed, ...committed.upserted.map((row) => row.uri)]));
    await run(index, root, batches);
  } finally {
    index.close();
    dir.cleanup();
  }
}

/** Every file under `root` as `uri size`, sorted. */
function diskFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, d.name);
      if (d.isDirectory()) walk(path);
      else out.push(`${pathToFileURL(path).href} ${lstatSync(path).size}`);
    }
  };
  walk(root);
  return out.sort();
}

function indexedFiles(index: FolderIndex): string[] {
  const rows = index.db.prepare('SELECT uri, size FROM entries WHERE kind <> 1').all() as { uri: string; size: number }[];
  return rows.map((r) => `${r.uri} ${r.size}`).sort();
}

describe('a pending change belongs to the task that built it', () => {
  test("one change's commit writes its own rows, not those another change holds", async () => {
    await withIndex({ 'a.txt': 'a', 'b.txt': 'b' }, async (index, root, batches) => {
      const uri = (name: string) => pathToFileURL(join(root, name)).href;
      const signal = new AbortController().signal;
      const [first, second] = [new PendingChange(index, signal), new PendingChange(index, signal)];
      const a = index.store.get(uri('a.txt'))!;
      const b = index.store.get(uri('b.txt'))!;
      assert.equal(first.consider({ ...a, size: 10 }, join(root, 'a.txt'), a), true);
      assert.equal(second.consider({ ...b, size: 20 }, join(root, 'b.txt'), b), true);
      await second.flush();
      assert.deepEqual(batches, [[uri('b.txt')]]);
      assert.equal(index.store.get(uri('a.txt'))!.size, 1, "the first change's row waits for its own commit");
      assert.equal(second.written, 1);
      assert.equal(first.written, 0);
      await first.flush();
      assert.deepEqual(batches, [[uri('b.txt')], [uri('a.txt')]]);
      assert.equal(index.store.get(uri('a.txt'))!.size, 10);
    });
  });

  test('two reconcile tasks run at once: no batch mixes their rows, and each reports only the directories it found', async () => {
    await withIndex({ 'x/a.txt': 'a', 'y/keep.txt': 'k' }, async (index, root, batches) => {
      appendFileSync(join(root, 'x/a.txt'), ' written');
      writeTree(root, { 'y/new/f.txt': 'f', 'y/new/deeper/g.txt': 'g' });
      const reconciler = new Reconciler(index, silentLogger, new AbortController().signal);
      const [written, made] = await Promise.all([reconciler.paths([join(root, 'x/a.txt')]), reconciler.paths([join(root, 'y/new')])]);
      assert.deepEqual(indexedFiles(index), diskFiles(root));
      const x = pathToFileURL(join(root, 'x')).href;
      for (const batch of batches) {
        const ofX = batch.filter((u) => u.startsWith(`${x}/`));
        assert.ok(ofX.length === 0 || ofX.length === batch.length, `a batch of both tasks: ${batch.join(' ')}`);
      }
      assert.deepEqual(written, { rewatch: [], recheck: [] }, 'a file written asks for no watch');
      const newDir = join(root, 'y/new');
      // y's mtime moved: listed again, it finds y/new and walks it, each directory in it new to the index.
      assert.deepEqual(new Set(made.rewatch.map((r) => `${r.dir} ${r.reason}`)), new Set([`${newDir} found`, `${join(newDir, 'deeper')} found`]));
      assert.deepEqual(made.recheck, [newDir]);
    });
  });
});
