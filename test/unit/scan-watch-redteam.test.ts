// Red-team cases for the cold scan's watches (ScanWatch, ScanChangeRecord,
// the hand-over to the dirs watcher): changes at awkward moments that must be
// in the index once Live.start() resolves. Real folders, real watchers.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { ScanWatch } from '../../src/watch/scan-watch.ts';
import { BACKEND_STARTERS } from '../../src/watch/choose.ts';
import { ScanChangeRecord } from '../../src/watch/scan-changes.ts';
import { startDirsWatcher } from '../../src/watch/watch-dirs.ts';
import type { StartWatcher } from '../../src/watch/watcher.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { bigTree, diskUris, tempDir, waitFor, writeTree } from '../basics.ts';
import { liveSync, withScanIndex } from '../scan-helpers.ts';
import { countInotifyWatches } from '../../bench/watch-probe.ts';

const linuxOnly = process.platform === 'linux' ? {} : { skip: 'ScanWatch runs on Linux only' };

function indexedUris(index: FolderIndex): string[] {
  return ((index.db.prepare('SELECT uri FROM entries ORDER BY uri').all() as { uri: string }[]).map((r) => r.uri)).sort();
}

/** 30 folders of 100 files, and one file at the top. */
function scanTree(root: string): void {
  bigTree(root, 3000, (i) => `d${String(Math.floor(i / 100)).padStart(2, '0')}/f${i}.txt`, 'a small file\n');
  writeFileSync(join(root, 'top.txt'), 'top\n');
}

describe('red team: the cold scan\'s watches', { ...linuxOnly }, () => {
  test('the root replaced (rm -rf, mkdir) after the scan read it: what the new root holds is indexed', async () => {
    const served = (dir: string) => join(dir, 'served');
    await withScanIndex(
      (dir) => writeTree(served(dir), { 'a.txt': 'a\n', 'sub/b.txt': 'b\n' }),
      async ({ dir, index, logs, sync }) => {
        const root = served(dir);
        await index.readiness.reached('scanned');
        rmSync(root, { recursive: true });
        mkdirSync(root);
        writeTree(root, { 'new.txt': 'in the new root\n' });
        // The catch-up itself finds it, whatever the scan's watch on the old root took in before it closed:
        // the root is of another identity, or (its inode number reused) its mtime moved.
        await sync({ watcher: 'dirs' }).start();
        assert.deepEqual(indexedUris(index), diskUris(root), logs.join(''));
      },
      { roots: (dir) => [served(dir)] },
    );
  });

  test('a directory replaced during the dirs watcher\'s start (its parent handed over, it not yet watched): its new entries are indexed', async () => {
    await withScanIndex((dir) => writeTree(dir, { 'top.txt': 'top\n', 'sub/old.txt': 'old\n' }), async ({ dir, index, logs, sync }) => {
      await index.readiness.reached('scanned');
      const sub = join(dir, 'sub');
      // The real dirs backend; its list of directories holds, after the root, 2000 that are not there
      // (one start slice: the root is handed over), then, once the scan's watch on the root is surely
      // released, `sub` is replaced just before the backend gets to it.
      const racing: StartWatcher = (start) =>
        startDirsWatcher({
          ...start,
          directories: function* () {
            for (let i = 0; i < 2000; i++) yield join(dir, `not-there-${i}`);
            const handedOver = performance.now();
            for (let i = 0; performance.now() - handedOver < 100; i++) yield join(dir, `not-there-either-${i}`);
            rmSync(sub, { recursive: true });
            mkdirSync(sub);
            writeFileSync(join(sub, 'new.txt'), 'in the new sub\n');
            yield sub;
          },
        });
      const live = sync({ watcher: 'dirs', starters: { ...BACKEND_STARTERS, dirs: racing } });
      await live.start();
      assert.equal(live.backend, 'dirs');
      // Well before the 60 s safety diff, which would hide the loss.
      await waitFor(() => JSON.stringify(indexedUris(index)) === JSON.stringify(diskUris(dir)), 30_000, 'the index to equal the disk').catch(() => {});
      assert.deepEqual(indexedUris(index), diskUris(dir), logs.join(''));
    });
  });
});

function threads(): number {
  return Number(/Threads:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
}

describe('red team: nothing left behind', linuxOnly, () => {
  // The record's owner closes it: Live, or (no live sync) whoever made it, as app.ts does.
  const cases: [string, (dir: string, index: FolderIndex, scanChanges: ScanChangeRecord) => Promise<void>][] = [
    ['the index closed once ready, no live sync', async (_dir, _index, scanChanges) => scanChanges.close()],
    ['the index closed mid-scan (the worker walking)', async (_dir, _index, scanChanges) => scanChanges.close()],
    ['a live sync started and closed', async (_dir, index, scanChanges) => {
      const sync = liveSync({ index, log: silentLogger, watcher: 'dirs', scanChanges });
      await sync.start();
      await sync.close();
    }],
    ['a live sync closed while its watcher started', async (_dir, index, scanChanges) => {
      const slow: StartWatcher = async (start) => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        return startDirsWatcher(start);
      };
      const sync = liveSync({ index, log: silentLogger, watcher: 'dirs', starters: { ...BACKEND_STARTERS, dirs: slow }, scanChanges });
      const started = sync.start();
      await new Promise((resolve) => setTimeout(resolve, 10));
      await sync.close();
      await started;
    }],
    ['a live sync closed while it took the scan\'s changes', async (_dir, index, scanChanges) => {
      const sync = liveSync({ index, log: silentLogger, watcher: 'dirs', scanChanges });
      const started = sync.start();
      await new Promise((resolve) => setTimeout(resolve, 5));
      await sync.close();
      await started;
    }],
  ];
  for (const [name, act] of cases) {
    test(name, async () => {
      const dir = tempDir();
      const scanChanges = new ScanChangeRecord();
      const before = countInotifyWatches();
      const threadsBefore = threads();
      let index: FolderIndex | undefined;
      try {
        scanTree(dir.path);
        index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [], scanObserver: scanChanges, scanSlicesHere: 1 });
        if (name.includes('mid-scan')) {
          await index.nextCommit();
          await index.nextCommit();
          assert.ok(index.readiness.state === 'scanning');
        } else {
          await index.readiness.reached('scanned');
          assert.ok(countInotifyWatches() > before + 20, 'the scan watched');
          assert.ok(threads() > threadsBefore, 'the worker is up');
        }
        await act(dir.path, index, scanChanges);
        index.close();
        await index.readiness.reached('scanned').catch(() => {});
        await waitFor(() => countInotifyWatches() === before, 30_000, `the watches to go (${countInotifyWatches()} left, ${before} before)`);
        await waitFor(() => threads() <= threadsBefore, 30_000, `the worker to end (${threads()} threads, ${threadsBefore} before)`);
      } finally {
        scanChanges.close();
        index?.close();
        dir.cleanup();
      }
    });
  }
});

/** Run a cold scan that watched, change the tree behind it and after it, start a real watcher, and compare with the disk. */
async function coldStart(
  backend: 'dirs' | 'chokidar',
  setup: (root: string) => void,
  behindTheWalk: (root: string) => void,
  afterTheScan: (root: string) => void,
  afterTheStart: (root: string) => void,
  skip: (name: string, isDir: boolean) => boolean = () => false,
  roots: (root: string) => string[] = (root) => [root],
): Promise<void> {
  await withScanIndex(
    setup,
    async ({ dir, index, logs, sync }) => {
      await index.nextCommit();
      assert.ok(index.readiness.state === 'scanning', 'the scan ended with its first batch');
      behindTheWalk(dir);
      await index.readiness.reached('scanned');
      afterTheScan(dir);
      const live = sync({ watcher: backend });
      await live.start();
      assert.equal(live.backend, backend);
      const expected = roots(dir).flatMap((r) => diskUris(r, skip)).sort();
      await waitFor(() => JSON.stringify(indexedUris(index)) === JSON.stringify(expected), 30_000, 'the index to equal the disk').catch(() => {});
      assert.deepEqual(indexedUris(index), expected, `after the start\n${logs.join('')}`);
      assert.doesNotMatch(logs.join(''), /diffing the tree/);
      afterTheStart(dir);
      const expectedLater = roots(dir).flatMap((r) => diskUris(r, skip)).sort();
      await waitFor(() => JSON.stringify(indexedUris(index)) === JSON.stringify(expectedLater), 30_000, 'the index to equal the disk').catch(() => {});
      assert.deepEqual(indexedUris(index), expectedLater, `after changes once started\n${logs.join('')}`);
    },
    { roots, scanSlicesHere: 1 },
  );
}

describe('red team: changes behind and after the walk, real watchers', linuxOnly, () => {
  for (const backend of ['dirs', 'chokidar'] as const) {
    test(`${backend}: new nested trees, a directory moved in from outside, renames`, async () => {
      await coldStart(
        backend,
        (top) => {
          mkdirSync(join(top, 'root'));
          scanTree(join(top, 'root'));
          writeTree(top, { 'outside/a/b/c.txt': 'c\n', 'outside2/x/y.txt': 'y\n' });
        },
        (top) => {
          const root = join(top, 'root');
          writeTree(root, { 'd00/x/y/z/f.txt': 'f\n', 'n1/n2/n3.txt': 'n\n' });
          renameSync(join(top, 'outside'), join(root, 'd00', 'moved'));
          renameSync(join(root, 'd01'), join(root, 'd01-renamed'));
          renameSync(join(root, 'd28'), join(root, 'd00', 'd28-moved-under-d00'));
        },
        (top) => {
          const root = join(top, 'root');
          writeTree(root, { 'd29/p/q/r.txt': 'r\n' });
          renameSync(join(top, 'outside2'), join(root, 'd15', 'moved2'));
          renameSync(join(root, 'd20'), join(root, 'd21', 'd20-under-d21'));
          writeFileSync(join(root, 'd22', 'f2200.txt'), 'longer than before, longer\n');
        },
        (top) => {
          const root = join(top, 'root');
          writeTree(root, {
            'd00/x/y/z/late.txt': 'late\n',
            'd00/moved/a/late.txt': 'late\n',
            'd29/p/q/late.txt': 'late\n',
            'd15/moved2/x/late.txt': 'late\n',
            'd21/d20-under-d21/late.txt': 'late\n',
            'd00/d28-moved-under-d00/late.txt': 'late\n',
            'd01-renamed/late.txt': 'late\n',
          });
        },
        () => false,
        (top) => [join(top, 'root')],
      );
    });
  }

  test('dirs: .gitignore created, removed and edited behind the walk and after it', async () => {
    await coldStart(
      'dirs',
      (root) => {
        scanTree(root);
        writeTree(root, { '.gitignore': 'd07/\n', 'd10/.gitignore': 'f1000.txt\n' });
      },
      (root) => {
        writeFileSync(join(root, '.gitignore'), 'd05/\n'); // d07 un-ignored, d05 ignored
      },
      (root) => {
        writeFileSync(join(root, 'd10', '.gitignore'), 'f1001.txt\n');
      },
      (root) => {
        writeFileSync(join(root, 'd05', 'still-ignored.txt'), 'x\n');
        writeFileSync(join(root, 'd07', 'seen.txt'), 'x\n');
      },
      (name, isDir) => (isDir && name === 'd05') || name === 'f1001.txt',
    );
  });

  test('dirs: two roots, each changed behind the walk and after it', async () => {
    await coldStart(
      'dirs',
      (top) => {
        scanTree(join(top, 'a'));
        scanTree(join(top, 'b'));
      },
      (top) => {
        writeTree(top, { 'a/new/x.txt': 'x\n', 'b/new/x.txt': 'x\n' });
        rmSync(join(top, 'a', 'd00'), { recursive: true });
        writeTree(top, { 'a/d00/again.txt': 'again\n' });
      },
      (top) => {
        rmSync(join(top, 'b', 'd29'), { recursive: true });
        writeTree(top, { 'b/d29/again.txt': 'again\n', 'a/d29/late.txt': 'late\n' });
      },
      (top) => {
        writeTree(top, { 'a/new/y.txt': 'y\n', 'b/d29/z.txt': 'z\n' });
      },
      () => false,
      (top) => [join(top, 'a'), join(top, 'b')],
    );
  });

  test('dirs: names with a newline and names that are not UTF-8', async () => {
    await coldStart(
      'dirs',
      (root) => scanTree(root),
      (root) => {
        writeTree(root, { 'line\nbreak/in\nside.txt': 'x\n' });
        writeFileSync(Buffer.concat([Buffer.from(join(root, 'd00') + '/'), Buffer.from([0x62, 0xff, 0x2e, 0x74])]), 'bad\n');
        mkdirSync(Buffer.concat([Buffer.from(root + '/'), Buffer.from([0x64, 0xfe])]));
      },
      (root) => {
        renameSync(join(root, 'd29'), Buffer.concat([Buffer.from(root + '/'), Buffer.from([0x7a, 0xfe])]));
        renameSync(join(root, 'd27'), join(root, 'd27\nrenamed'));
        writeTree(root, { 'd28/new\nline.txt': 'x\n' });
      },
      (root) => {
        writeTree(root, { 'line\nbreak/late\n.txt': 'x\n' });
      },
      (name) => Buffer.from(name).includes(0xfffd) || name.includes('\uFFFD'),
    );
  });
});

describe('red team: a burst past inotify\'s queue', { ...linuxOnly }, () => {
  // The thread holding the scan's watches can be busy for a while: the worker builds the
  // secondary indexes synchronously (about 0.3 s at 100k entries, seconds at 1M) while it
  // holds the watches on most of the tree. Here the test itself keeps the thread busy.
  test('more events than inotify queues while the thread is busy: the record gives up instead of naming only some', async () => {
    const dir = tempDir();
    try {
      const count = 17_000; // over the default max_queued_events (16384), under SCAN_WATCH_MAX_PATHS (20,000)
      bigTree(dir.path, count, (i) => `f${i}`);
      const watch = new ScanWatch();
      watch.watch(dir.path);
      for (let i = 0; i < count; i++) unlinkSync(join(dir.path, `f${i}`));
      const changes = await watch.finish();
      if ('paths' in changes) assert.equal(changes.paths.length, count, 'some removals were lost, and the record did not say so');
    } finally {
      dir.cleanup();
    }
  });
});
