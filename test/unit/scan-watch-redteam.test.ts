// Red-team cases for the cold scan's watches (ScanWatch, ScanChangeRecord,
// the hand-over to the dirs watcher): changes at awkward moments that must be
// in the index once LiveSync.start() resolves. Real folders, real watchers.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, test } from 'node:test';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { defaultScanWorkerUrl } from '../../src/index/scan-thread.ts';
import { BACKEND_STARTERS } from '../../src/live/choose.ts';
import { LiveSync } from '../../src/live/sync.ts';
import { startDirsWatcher } from '../../src/live/watch-dirs.ts';
import type { StartWatcher } from '../../src/live/watcher.ts';
import { createLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { bigTree, diskUris, tempDir, writeTree } from '../helpers.ts';

const linuxOnly = process.platform === 'linux' ? {} : { skip: 'ScanWatch runs on Linux only' };
const needsWorker = defaultScanWorkerUrl() === null ? { skip: 'no built worker (npm test builds it)' } : {};

function indexedUris(index: FolderIndex): string[] {
  return (index.db.prepare('SELECT uri FROM entries ORDER BY uri').pluck().all() as string[]).sort();
}

/** 30 folders of 100 files, and one file at the top. */
function scanTree(root: string): void {
  bigTree(root, 3000, (i) => `d${String(Math.floor(i / 100)).padStart(2, '0')}/f${i}.txt`, 'a small file\n');
  writeFileSync(join(root, 'top.txt'), 'top\n');
}

describe('red team: the cold scan\'s watches', { ...linuxOnly }, () => {
  test('the root replaced (rm -rf, mkdir) after the scan read it: what the new root holds is indexed', async () => {
    const dir = tempDir();
    const root = join(dir.path, 'served');
    const logs: string[] = [];
    const log = createLogger('debug', (line) => logs.push(line));
    let index: FolderIndex | undefined;
    let sync: LiveSync | undefined;
    try {
      mkdirSync(root);
      writeTree(root, { 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });
      index = new FolderIndex({ roots: [makeRoot(root)], dbFile: ':memory:', log, gitignore: true, exclude: [], watchScan: true });
      await index.ready;
      rmSync(root, { recursive: true });
      mkdirSync(root);
      writeTree(root, { 'new.txt': 'in the new root\n' });
      sync = new LiveSync({ index, log, watcher: 'dirs' });
      await sync.start();
      // Whatever the watcher reported meanwhile is applied too.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.deepEqual(indexedUris(index), diskUris(root), logs.join(''));
    } finally {
      await sync?.close();
      index?.close();
      dir.cleanup();
    }
  });

  test('a directory replaced during the dirs watcher\'s start (its parent handed over, it not yet watched): its new entries are indexed', async () => {
    const dir = tempDir();
    const logs: string[] = [];
    const log = createLogger('debug', (line) => logs.push(line));
    let index: FolderIndex | undefined;
    let sync: LiveSync | undefined;
    try {
      writeTree(dir.path, { 'top.txt': 'top\n', 'sub/old.txt': 'old\n' });
      index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: ':memory:', log, gitignore: true, exclude: [], watchScan: true });
      await index.ready;
      const sub = join(dir.path, 'sub');
      // The real dirs backend; its list of directories holds, after the root, 2000 that are not there
      // (one start slice: the root is handed over), then, once the scan's watch on the root is surely
      // released, `sub` is replaced just before the backend gets to it.
      const racing: StartWatcher = (start) =>
        startDirsWatcher({
          ...start,
          directories: function* () {
            for (let i = 0; i < 2000; i++) yield join(dir.path, `not-there-${i}`);
            const handedOver = performance.now();
            for (let i = 0; performance.now() - handedOver < 100; i++) yield join(dir.path, `not-there-either-${i}`);
            rmSync(sub, { recursive: true });
            mkdirSync(sub);
            writeFileSync(join(sub, 'new.txt'), 'in the new sub\n');
            yield sub;
          },
        });
      sync = new LiveSync({ index, log, watcher: 'dirs', starters: { ...BACKEND_STARTERS, dirs: racing } });
      await sync.start();
      assert.equal(sync.backend, 'dirs');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.deepEqual(indexedUris(index), diskUris(dir.path), logs.join(''));
    } finally {
      await sync?.close();
      index?.close();
      dir.cleanup();
    }
  });
});
