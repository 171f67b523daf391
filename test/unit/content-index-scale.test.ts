// The content index's build over thousands of files (the slow lane,
// scripts/lanes.mjs): a warm restart's check a slice at a time, and the
// small folder indexed before the big one. Real temp folders, real SQLite.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ContentSearch, contentIndexUnfollowed } from '../../src/search/content-search.ts';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { bigTree, tempDir, waitFor, writeTree } from '../basics.ts';

test('a warm restart checks the content index a slice at a time: every document counted, those gone meanwhile dropped', async () => {
  const dir = tempDir();
  const state = tempDir('folder-mcp-state-');
  try {
    // Past two slices (CHECK_SLICE_ROWS = 5,000) of entries and of document ids.
    bigTree(dir.path, 11_000, (i) => `d${String(Math.floor(i / 100)).padStart(3, '0')}/f${i}.txt`, 'alpha\n');
    const root = makeRoot(dir.path);
    const dbFile = join(state.path, 'i.db');
    const index = new FolderIndex({ roots: [root], dbFile, log: silentLogger, gitignore: true, exclude: [] });
    const search = new ContentSearch(index, silentLogger);
    index.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
    search.start();
    await search.idle();
    assert.deepEqual(search.progress, { done: 11_000, total: 11_000, complete: true, waiting: 0, rechecking: false });
    await search.close();
    // Folders that go while no content index listens (first, middle and last slice of ids): their documents are orphans.
    const gone = ['d000', 'd060', 'd109'];
    index.apply({ upserted: [], removed: gone.map((d) => pathToFileURL(join(dir.path, d)).href + '/') });

    // As a --no-search server leaves it: the build is not taken for complete.
    contentIndexUnfollowed(index.db);
    index.close();

    const again = new FolderIndex({ roots: [root], dbFile, log: silentLogger, gitignore: true, exclude: [] });
    const search2 = new ContentSearch(again, silentLogger);
    again.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
    search2.start();
    // The search tool's wait: a build counted past its bound is not waited for; one within it is, to the end.
    assert.equal(await search2.whenComplete(60_000, 1000), false, 'counted 10,700 > 1,000: no wait');
    assert.equal(await search2.whenComplete(60_000, 20_000), true, 'within the bound: waits for the build');
    await search2.idle();
    assert.deepEqual(search2.progress, { done: 10_700, total: 10_700, complete: true, waiting: 0, rechecking: false });
    const docs = again.db.prepare(`SELECT count(*) AS n FROM search_docs`).get() as { n: number };
    assert.equal(docs.n, 10_700, 'the orphans of all three slices are dropped');
    await search2.close();
    again.close();

    // Now that build finished: a warm restart answers from it at once, complete, while it re-checks every document.
    const third = new FolderIndex({ roots: [root], dbFile, log: silentLogger, gitignore: true, exclude: [] });
    const search3 = new ContentSearch(third, silentLogger);
    third.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
    search3.start();
    const counted = (await waitFor(() => (search3.progress.total > 0 ? { ...search3.progress } : undefined), 60_000, 'the documents counted'))!;
    assert.equal(counted.complete, true, `complete as soon as counted (${counted.done} of ${counted.total} re-checked)`);
    assert.equal(await search3.whenComplete(60_000, 1000), true, 'a complete build is never waited for');
    await search3.idle();
    assert.deepEqual(search3.progress, { done: 10_700, total: 10_700, complete: true, waiting: 0, rechecking: false });
    await search3.close();
    third.close();
  } finally {
    dir.cleanup();
    state.cleanup();
  }
});

test('with a big and a small folder served together, the small one is indexed first, whatever their order', async () => {
  const dir = tempDir();
  const state = tempDir('folder-mcp-state-');
  try {
    // URI order puts the big folder first: the build must not.
    bigTree(join(dir.path, 'a-big'), 1_500, (i) => `d${i % 10}/f${i}.txt`, 'alpha\n');
    writeTree(join(dir.path, 'z-small'), { 'note.md': 'the quokka plan\n', 'more.txt': 'beta\n' });
    const roots = [makeRoot(join(dir.path, 'a-big')), makeRoot(join(dir.path, 'z-small'))];
    const index = new FolderIndex({ roots, dbFile: join(state.path, 'i.db'), log: silentLogger, gitignore: true, exclude: [] });
    const search = new ContentSearch(index, silentLogger);
    index.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
    search.start();
    await search.idle();
    assert.deepEqual(search.progress, { done: 1_502, total: 1_502, complete: true, waiting: 0, rechecking: false });
    const ids = (root: string) =>
      (index.db.prepare(`SELECT id FROM search_docs WHERE uri >= ? AND uri < ?`).all(root, `${root}\uffff`) as { id: number }[]).map((r) => r.id);
    const small = ids(roots[1]!.uri);
    const big = ids(roots[0]!.uri);
    assert.equal(small.length, 2);
    assert.equal(big.length, 1_500);
    assert.ok(Math.max(...small) < Math.min(...big), `the small folder's documents (ids ${small.join(', ')}) were indexed after the big one's (from ${Math.min(...big)})`);
    await search.close();
    index.close();
  } finally {
    dir.cleanup();
    state.cleanup();
  }
});
