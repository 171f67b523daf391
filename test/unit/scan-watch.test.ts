// What changes behind a cold scan: ScanWatch on real directories, the walk's
// watches on both threads (the built dist/scan-worker.js and dist/scan-watch.js), and the live sync
// taking them instead of diffing the tree again. Linux only, like ScanWatch.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, watch as fsWatch, writeFileSync, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { scanInThread } from '../../src/index/scan-thread.ts';
import { ScanChangeRecord } from '../../src/watch/scan-changes.ts';
import { ScanWatch, mergeScanChanges } from '../../src/watch/scan-watch.ts';
import type { ScanChanges } from '../../src/watching.ts';
import { SkipReport } from '../../src/index/servable.ts';
import { BACKEND_STARTERS } from '../../src/watch/choose.ts';
import type { StartWatcher } from '../../src/watch/watcher.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot, pathToUri } from '../../src/uri.ts';
import { bigTree, diskUris, tempDir, waitFor, writeTree } from '../basics.ts';
import { withScanIndex } from '../scan-helpers.ts';

const linuxOnly = process.platform === 'linux' ? {} : { skip: 'ScanWatch runs on Linux only' };

function pathsOf(changes: ScanChanges): string[] {
  assert.ok('paths' in changes, `the record was given up: ${'unknown' in changes ? changes.unknown : ''}`);
  return [...changes.paths].sort();
}

describe('ScanWatch', linuxOnly, () => {
  test('names what changed in a watched directory until finish(), and nothing after', async () => {
    const dir = tempDir();
    try {
      writeTree(dir.path, { 'a.txt': 'a', 'sub/b.txt': 'b', 'unwatched/c.txt': 'c' });
      const watch = new ScanWatch();
      watch.watch(dir.path);
      watch.watch(join(dir.path, 'sub'));
      assert.equal(watch.watching, 2);
      writeFileSync(join(dir.path, 'a.txt'), 'changed');
      writeFileSync(join(dir.path, 'new.txt'), 'new');
      rmSync(join(dir.path, 'sub', 'b.txt'));
      writeFileSync(join(dir.path, 'unwatched', 'c.txt'), 'not watched: not named');
      // No wait: finish() itself lets the queued events in.
      const changes = await watch.finish();
      assert.deepEqual(pathsOf(changes), [join(dir.path, 'a.txt'), join(dir.path, 'new.txt'), join(dir.path, 'sub', 'b.txt')].sort());
      assert.equal(watch.watching, 0);
      writeFileSync(join(dir.path, 'later.txt'), 'after finish');
      assert.deepEqual(pathsOf(await watch.finish()), pathsOf(changes));
    } finally {
      dir.cleanup();
    }
  });

  test('a directory gone before its watch is no reason to give up (its parent names it)', async () => {
    const dir = tempDir();
    try {
      const watch = new ScanWatch();
      watch.watch(dir.path);
      watch.watch(join(dir.path, 'never-there'));
      mkdirSync(join(dir.path, 'never-there'));
      assert.deepEqual(pathsOf(await watch.finish()), [join(dir.path, 'never-there')]);
    } finally {
      dir.cleanup();
    }
  });

  test('out of watches (ENOSPC), it gives up with the reason, and closes the watches it had', async () => {
    const dir = tempDir();
    try {
      const opened: FSWatcher[] = [];
      let calls = 0;
      const watch = new ScanWatch(100, (path, listener) => {
        if (++calls === 2) throw Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' });
        const watcher = fsWatch(path, { persistent: false }, listener);
        opened.push(watcher);
        return watcher;
      });
      watch.watch(dir.path);
      watch.watch(dir.path);
      assert.equal(watch.watching, 0, 'the watch set before the failure was not closed');
      writeFileSync(join(dir.path, 'x.txt'), 'x');
      const changes = await watch.finish();
      assert.ok('unknown' in changes);
      assert.match(changes.unknown, /cannot watch .* \(ENOSPC\)/);
    } finally {
      dir.cleanup();
    }
  });

  test('more changed paths than its limit: gives up rather than hold a checkout in memory', async () => {
    const dir = tempDir();
    try {
      const watch = new ScanWatch(3);
      watch.watch(dir.path);
      for (let i = 0; i < 5; i++) writeFileSync(join(dir.path, `f${i}.txt`), 'x');
      const changes = await watch.finish();
      assert.ok('unknown' in changes);
      assert.match(changes.unknown, /more than 3 paths changed/);
    } finally {
      dir.cleanup();
    }
  });

  test('release(dirs): those directories are no longer watched (after a drain), the others still are', async () => {
    const dir = tempDir();
    try {
      writeTree(dir.path, { 'kept/a.txt': 'a', 'released/b.txt': 'b' });
      const watch = new ScanWatch();
      watch.watch(join(dir.path, 'kept'));
      watch.watch(join(dir.path, 'released'));
      // Before the drain is over: still named.
      watch.release([join(dir.path, 'released')]);
      writeFileSync(join(dir.path, 'released', 'before.txt'), 'x');
      await waitFor(() => watch.watching === 1, 30_000, 'the release');
      writeFileSync(join(dir.path, 'released', 'after.txt'), 'x');
      writeFileSync(join(dir.path, 'kept', 'after.txt'), 'x');
      assert.deepEqual(pathsOf(await watch.finish()), [join(dir.path, 'kept', 'after.txt'), join(dir.path, 'released', 'before.txt')].sort());
    } finally {
      dir.cleanup();
    }
  });

  test('more directories than its limit: gives up and closes its watches (memory), rather than watch them all', async () => {
    const dir = tempDir();
    try {
      writeTree(dir.path, { 'a/x.txt': 'x', 'b/y.txt': 'y' });
      const watch = new ScanWatch(100, undefined, 2);
      watch.watch(dir.path);
      watch.watch(join(dir.path, 'a'));
      assert.equal(watch.watching, 2);
      watch.watch(join(dir.path, 'b'));
      assert.equal(watch.watching, 0);
      const changes = await watch.finish();
      assert.ok('unknown' in changes);
      assert.match(changes.unknown, /more than 2 directories to watch/);
    } finally {
      dir.cleanup();
    }
  });

  test('mergeScanChanges: the paths of both, or the first reason either is unknown', () => {
    assert.deepEqual(mergeScanChanges({ paths: ['/a'] }, { paths: ['/b'] }), { paths: ['/a', '/b'] });
    assert.deepEqual(mergeScanChanges({ paths: ['/a'] }, { unknown: 'why' }), { unknown: 'why' });
    assert.deepEqual(mergeScanChanges({ unknown: 'first' }, { unknown: 'second' }), { unknown: 'first' });
  });
});

/** 30 folders of 100 files, and one file at the top. */
function scanTree(root: string): void {
  bigTree(root, 3000, (i) => `d${String(Math.floor(i / 100)).padStart(2, '0')}/f${i}.txt`, 'a small file\n');
  writeFileSync(join(root, 'top.txt'), 'top\n');
}

describe("the scan's watches on both threads", linuxOnly, () => {
  test('a change in a directory read by either thread is named, until finish()', async () => {
    const dir = tempDir();
    try {
      scanTree(dir.path);
      const changes = new ScanChangeRecord();
      const walk = scanInThread({
        roots: [makeRoot(dir.path)],
        ignore: { gitignore: true, exclude: [] },
        log: silentLogger,
        skips: new SkipReport(),
        dbFile: null,
        slicesHere: 1,
        observer: changes,
      });
      let batches = 0;
      let changedBehind = false;
      const d00 = join(dir.path, 'd00');
      for await (const batch of walk) {
        batches++;
        // Once the root and d00 have been read (on this thread: it walks the first slice), change both behind the walk.
        if (!changedBehind && batch.read.some((d) => d.path === d00)) {
          changedBehind = true;
          writeFileSync(join(dir.path, 'top.txt'), 'changed behind the walk\n');
          rmSync(join(dir.path, 'd00', 'f0.txt'));
        }
      }
      assert.ok(changedBehind, 'the walk never read d00');
      assert.ok(batches > 1, 'the walk took one batch: the worker did not walk');
      // After the walk, in directories the worker read.
      writeFileSync(join(dir.path, 'd29', 'late.txt'), 'late\n');
      writeFileSync(join(dir.path, 'd15', 'f1500.txt'), 'longer than before\n');
      const paths = pathsOf(await changes.finish());
      for (const expected of ['top.txt', 'd00/f0.txt', 'd29/late.txt', 'd15/f1500.txt']) {
        assert.ok(paths.includes(join(dir.path, expected)), `${expected} is not in ${paths.join(', ')}`);
      }
    } finally {
      dir.cleanup();
    }
  });
});

describe('Live after a cold scan that watched', linuxOnly, () => {
  test('what changed during the scan is indexed from the scan\'s watches, with no diff of the tree', async () => {
    // A watcher that sees nothing: whatever the index learns comes from the scan's record.
    const blind: StartWatcher = async () => ({ backend: 'dirs', close: async () => {} });
    await withScanIndex(scanTree, async ({ dir, index, logs, sync }) => {
      await index.nextCommit();
      assert.ok(index.readiness.state === 'scanning', 'the scan ended with its first batch');
      // Behind the walk (the root and d00 are read): a new file, an edit, a directory replaced by another of its name.
      writeFileSync(join(dir, 'added.txt'), 'added\n');
      writeFileSync(join(dir, 'top.txt'), 'a longer top now\n');
      rmSync(join(dir, 'd00'), { recursive: true });
      writeTree(dir, { 'd00/replaced.txt': 'in the new d00\n' });
      await index.readiness.reached('scanned');
      // After the scan, before the watcher: a directory the worker read.
      rmSync(join(dir, 'd29', 'f2999.txt'));
      await sync({ watcher: 'dirs', starters: { ...BACKEND_STARTERS, dirs: blind } }).start();
      const indexed = ((index.db.prepare('SELECT uri FROM entries ORDER BY uri').all() as { uri: string }[]).map((r) => r.uri)).sort();
      assert.deepEqual(indexed, diskUris(dir));
      assert.equal(index.store.get(pathToUri(join(dir, 'top.txt'), false))?.size, 'a longer top now\n'.length);
      const text = logs.join('');
      assert.match(text, /index checked against the disk in \d+ ms \(\d+ path\(s\) changed during the scan\)/);
      assert.doesNotMatch(text, /diffing the tree/);
    }, { scanSlicesHere: 1 });
  });

  test('a watcher that took over some of the scan\'s watches, then failed to start: the tree is diffed, and nothing is lost', async () => {
    await withScanIndex(scanTree, async ({ dir, index, logs, sync }) => {
      await index.readiness.reached('scanned');
      // Takes over the root's watch (released), then fails (not for want of watches: that is retried, see below).
      const failing: StartWatcher = async (start) => {
        start.watching?.([dir]);
        await new Promise((resolve) => setTimeout(resolve, 100));
        writeFileSync(join(dir, 'while-nobody-watched.txt'), 'x\n');
        throw Object.assign(new Error('EIO: i/o error, watch'), { code: 'EIO' });
      };
      const blind: StartWatcher = async () => ({ backend: 'poll', close: async () => {} });
      const live = sync({ watcher: 'dirs', starters: { ...BACKEND_STARTERS, dirs: failing, poll: blind } });
      await live.start();
      assert.equal(live.backend, 'poll');
      assert.ok(index.store.get(pathToUri(join(dir, 'while-nobody-watched.txt'), false)), 'the file written while nobody watched the root is not indexed');
      assert.match(logs.join(''), /cannot tell what changed behind it \(the dirs watcher failed after taking over from the scan's watches\): diffing the tree/);
    });
  });

  test('a backend out of watches while the scan\'s are held gets them released and starts; the tree is diffed', async () => {
    await withScanIndex((dir) => writeTree(dir, { 'a.txt': 'a\n', 'sub/b.txt': 'b\n' }), async ({ dir, index, logs, sync }) => {
      await index.readiness.reached('scanned');
      writeFileSync(join(dir, 'sub', 'after-the-scan.txt'), 'x\n');
      let starts = 0;
      // chokidar does not take the scan's watches over: its first start finds the inotify limit reached.
      const chokidar: StartWatcher = async () => {
        if (++starts === 1) throw Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' });
        return { backend: 'chokidar', close: async () => {} };
      };
      const live = sync({ watcher: 'chokidar', starters: { ...BACKEND_STARTERS, chokidar } });
      await live.start();
      assert.equal(live.backend, 'chokidar');
      assert.equal(starts, 2);
      assert.match(logs.join(''), /watcher chokidar ran out of watches while the scan's were held: released them, trying chokidar again/);
      assert.ok(index.store.get(pathToUri(join(dir, 'sub', 'after-the-scan.txt'), false)), 'the diff after did not run');
    });
  });

  test('without the record (no watchScan) the tree is diffed, as before', async () => {
    const blind: StartWatcher = async () => ({ backend: 'dirs', close: async () => {} });
    await withScanIndex((dir) => writeTree(dir, { 'a.txt': 'a\n' }), async ({ dir, index, logs, sync }) => {
      await index.readiness.reached('scanned');
      writeFileSync(join(dir, 'b.txt'), 'b\n');
      await sync({ watcher: 'dirs', starters: { ...BACKEND_STARTERS, dirs: blind } }).start();
      await waitFor(() => index.store.get(pathToUri(join(dir, 'b.txt'), false)), 30_000, 'b.txt from the diff');
      assert.match(logs.join(''), /index checked against the disk in \d+ ms\n/);
    }, { watchScan: false });
  });
});
