// How often a wide folder is listed again (src/sync/relist-pace.ts).
import assert from 'node:assert/strict';
import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { silentLogger } from '../../src/log.ts';
import { Reconciler } from '../../src/sync/reconcile.ts';
import { RelistPace, WIDE_RELIST_MS } from '../../src/sync/relist-pace.ts';
import { makeRoot } from '../../src/uri.ts';
import { tempDir, waitFor, writeTree } from '../basics.ts';

test('a relist that took long makes the next wait, and the folder is looked at again once the wait is over', async () => {
  const looked: string[] = [];
  const pace = new RelistPace((dir) => looked.push(dir), new AbortController().signal);
  assert.equal(pace.defer('/w/wide'), false, 'nothing known: listed at once');
  pace.took('/w/narrow', WIDE_RELIST_MS - 1);
  assert.equal(pace.defer('/w/narrow'), false, 'a quick relist paces nothing');
  pace.took('/w/wide', WIDE_RELIST_MS);
  assert.equal(pace.defer('/w/wide'), true);
  assert.equal(pace.defer('/w/wide'), true, 'asked again while it waits');
  await waitFor(() => looked.length > 0, 30_000, 'the look after the wait');
  assert.deepEqual(looked, ['/w/wide'], 'one look, however often it was deferred');
  assert.equal(pace.defer('/w/wide'), false, 'the wait is over: listed');
});

test('once Live has ended, nothing is looked at', async () => {
  const looked: string[] = [];
  const lifetime = new AbortController();
  const pace = new RelistPace((dir) => looked.push(dir), lifetime.signal);
  pace.took('/w/wide', WIDE_RELIST_MS);
  assert.equal(pace.defer('/w/wide'), true);
  lifetime.abort();
  // The wait is 9 x WIDE_RELIST_MS: past it, with nothing looked at.
  await waitFor(() => pace.defer('/w/wide') === false, 30_000, 'the wait to end');
  // The scheduled look was due when the wait ended: a timer due then has run by the next one.
  await new Promise((resolve) => setTimeout(resolve, 1));
  assert.deepEqual(looked, []);
});

test('a wide folder\'s deferred relist runs when the wait is over, and finds what no event named', async () => {
  const dir = tempDir();
  const root = join(dir.path, 'served');
  writeTree(root, { 'wide/a.txt': 'a' });
  const index = new FolderIndex({ roots: [makeRoot(root)], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
  const lifetime = new AbortController();
  try {
    await index.readiness.reached('scanned');
    // As Live wires it: the later relist on the reconciler itself (Live runs it on its queue).
    const pace: RelistPace = new RelistPace((later) => void reconciler.relist(later), lifetime.signal);
    const reconciler = new Reconciler(index, silentLogger, lifetime.signal, pace);
    const wide = join(root, 'wide');
    const listed = () => (index.db.prepare('SELECT uri FROM entries').all() as { uri: string }[]).map((row) => row.uri.split('/').pop()).sort();
    // As if its last relist had taken WIDE_RELIST_MS: the next waits nine times as long.
    pace.took(wide, WIDE_RELIST_MS);
    writeFileSync(join(wide, 'c.txt'), 'c');
    writeFileSync(join(wide, 'd.txt'), 'd');
    utimesSync(wide, new Date(), new Date(Date.now() + 2000));
    await reconciler.paths([join(wide, 'c.txt')]); // an event names c.txt only: the folder's relist waits
    assert.equal(listed().includes('c.txt'), true, 'the path an event named, at once');
    assert.equal(listed().includes('d.txt'), false, 'the relist waits');
    // The look that deferred it committed the folder's new mtime: a later look would find nothing moved.
    await waitFor(() => listed().includes('d.txt'), 30_000, 'd.txt, found by the relist after the wait');
  } finally {
    lifetime.abort();
    index.close();
    dir.cleanup();
  }
});
