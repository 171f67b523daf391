// The `dirs` backend (src/watch/watch-dirs.ts): one fs.watch per directory.
// Real temp folders and real inotify watches; the only staged failure is an
// fs.watch that throws ENOSPC, as an exhausted inotify limit does.
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, rmSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { countInotifyWatches } from '../../bench/watch-probe.ts';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { IgnoreRules } from '../../src/index/ignore.ts';
import { BACKEND_STARTERS } from '../../src/watch/choose.ts';
import type { Live } from '../../src/sync/live.ts';
import { liveSync } from '../scan-helpers.ts';
import type { WatchDirectory } from '../../src/watch/scan-watch.ts';
import { dirsWatcher, recursiveWatcherAs, startDirsWatcher, type DirsWatcher } from '../../src/watch/watch-dirs.ts';
import type { StartWatcher, WatchSink } from '../../src/watch/watcher.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import { makeRoot, pathToUri } from '../../src/uri.ts';
import { tempDir, waitFor, writeTree } from '../basics.ts';

const TIMEOUT = 30_000;

/** A sink that records what the watcher reports. */
function recordingSink() {
  const changed = new Set<string>();
  const rescans: string[] = [];
  const fatals: Error[] = [];
  const sink: WatchSink = {
    changed: (path) => void changed.add(path),
    rescan: async (dir) => void rescans.push(dir),
    fatal: (error) => void fatals.push(error),
  };
  return { sink, changed, rescans, fatals };
}

/** A temp tree watched by `dirs` (the tree walked at start, as without an index), closed and removed after `run`. */
async function withWatcher(
  files: Record<string, string>,
  run: (ctx: { root: string; watcher: DirsWatcher; rec: ReturnType<typeof recordingSink> }) => Promise<void>,
  start: StartWatcher = startDirsWatcher,
) {
  const dir = tempDir();
  writeTree(dir.path, files);
  const roots = [makeRoot(dir.path)];
  const rec = recordingSink();
  let watcher: DirsWatcher | undefined;
  try {
    watcher = (await start({ roots, rules: new IgnoreRules(roots, { gitignore: true, exclude: [] }), sink: rec.sink, log: silentLogger })) as DirsWatcher;
    await run({ root: dir.path, watcher, rec });
  } finally {
    await watcher?.close();
    dir.cleanup();
  }
}

const reported = (rec: ReturnType<typeof recordingSink>, path: string, what: string) =>
  waitFor(() => rec.changed.has(path), TIMEOUT, what);

describe('watcher dirs', () => {
  test('a file created, changed and deleted in an existing nested directory is reported', async () => {
    await withWatcher({ 'a/b/c/keep.md': 'k\n' }, async ({ root, watcher, rec }) => {
      assert.equal(watcher.watching, 4); // the root, a, a/b, a/b/c
      const file = join(root, 'a/b/c/new.md');
      writeFileSync(file, 'one\n');
      await reported(rec, file, 'the created file');
      rec.changed.clear();
      writeFileSync(file, 'two, longer\n');
      await reported(rec, file, 'the changed file');
      rec.changed.clear();
      rmSync(file);
      await reported(rec, file, 'the deleted file');
    });
  });

  test('mkdir -p then files written at once: the new directories are watched, a later change inside is reported', async () => {
    await withWatcher({ 'x.md': 'x\n' }, async ({ root, watcher, rec }) => {
      // No sync layer here: nothing hints the nested directories, the watcher finds them itself.
      for (let i = 0; i < 5; i++) {
        mkdirSync(join(root, `n${i}/a/b/c`), { recursive: true });
        writeFileSync(join(root, `n${i}/a/b/c/first.md`), 'first\n');
      }
      await waitFor(() => [0, 1, 2, 3, 4].every((i) => watcher.isWatching(join(root, `n${i}/a/b/c`))), TIMEOUT, 'watches on n*/a/b/c');
      assert.equal(watcher.watching, 1 + 5 * 4);
      for (let i = 0; i < 5; i++) writeFileSync(join(root, `n${i}/a/b/c/later.md`), 'later\n');
      for (let i = 0; i < 5; i++) await reported(rec, join(root, `n${i}/a/b/c/later.md`), `the later change in n${i}/a/b/c`);
    });
  });

  test("a deleted or moved directory's watches are released; the moved one is watched where it went", async () => {
    await withWatcher({ 'keep/k.md': 'k\n', 'gone/a/b/f.md': 'f\n', 'moving/m/n.md': 'n\n' }, async ({ root, watcher, rec }) => {
      assert.equal(watcher.watching, 7);
      const inotifyBefore = countInotifyWatches();
      assert.equal(inotifyBefore, 7, 'one inotify watch per directory');
      rmSync(join(root, 'gone'), { recursive: true });
      await waitFor(() => watcher.watching === 4, TIMEOUT, 'the watches of gone/, gone/a, gone/a/b to be released');
      assert.equal(watcher.isWatching(join(root, 'gone/a')), false);
      await waitFor(() => countInotifyWatches() === 4, TIMEOUT, 'the inotify watches to be released');

      renameSync(join(root, 'moving'), join(root, 'moved'));
      await waitFor(() => watcher.isWatching(join(root, 'moved/m')) && !watcher.isWatching(join(root, 'moving')), TIMEOUT, 'the watch to follow the move');
      assert.equal(watcher.watching, 4);
      assert.equal(watcher.isWatching(join(root, 'moving/m')), false);
      rec.changed.clear();
      writeFileSync(join(root, 'moved/m/later.md'), 'later\n');
      await reported(rec, join(root, 'moved/m/later.md'), 'a change in the moved directory, under its new name');
      assert.equal([...rec.changed].some((p) => p.includes('/moving/')), false, 'reported under the old name');

      // Replaced by a directory of the same name: the new one is watched, and rescanned.
      rmSync(join(root, 'keep'), { recursive: true });
      mkdirSync(join(root, 'keep'));
      writeFileSync(join(root, 'keep/again.md'), 'again\n');
      // Written before the new watch existed, maybe: then it comes as a rescan of the directory.
      await waitFor(() => rec.changed.has(join(root, 'keep/again.md')) || rec.rescans.includes(join(root, 'keep')), TIMEOUT, 'the re-made directory');
      writeFileSync(join(root, 'keep/later.md'), 'later\n');
      await reported(rec, join(root, 'keep/later.md'), 'a file in the re-made directory');
      assert.equal(watcher.watching, 4);
    });
  });

  test('ignored directories (.git, node_modules, .gitignore) get no watch, at start or when made', async () => {
    const files = {
      '.gitignore': 'build/\n',
      'src/a.ts': 'a\n',
      'node_modules/pkg/index.js': 'x\n',
      '.git/objects/ab/cd': 'x\n',
      'build/out/x.js': 'x\n',
      'src/build/y.js': 'y\n',
    };
    await withWatcher(files, async ({ root, watcher, rec }) => {
      assert.equal(watcher.watching, 2); // the root and src
      assert.equal(countInotifyWatches(), 2);
      mkdirSync(join(root, 'src/node_modules/deep'), { recursive: true });
      mkdirSync(join(root, 'build/more'), { recursive: true });
      mkdirSync(join(root, 'src/ok'));
      await waitFor(() => watcher.isWatching(join(root, 'src/ok')), TIMEOUT, 'the new src/ok');
      await reported(rec, join(root, 'src/node_modules'), 'the event (the sync layer filters it)');
      assert.equal(watcher.watching, 3);
    });
  });

  test('the start list comes from `directories` when given (no walk), still pruned by the ignore rules', async () => {
    const dir = tempDir();
    writeTree(dir.path, { '.gitignore': 'skip/\n', 'a/x.md': 'x\n', 'b/y.md': 'y\n', 'skip/z.md': 'z\n' });
    const roots = [makeRoot(dir.path)];
    const rec = recordingSink();
    const listed = [dir.path, join(dir.path, 'a'), join(dir.path, 'skip'), join(dir.path, 'not-there')]; // b left out
    const told: string[] = [];
    const watcher = (await startDirsWatcher({
      roots,
      rules: new IgnoreRules(roots, { gitignore: true, exclude: [] }),
      sink: rec.sink,
      log: silentLogger,
      directories: () => listed,
      watching: (dirs) => void told.push(...dirs),
    })) as DirsWatcher;
    try {
      assert.equal(watcher.watching, 2);
      // What it said it watches (the scan's watches on those can go) is exactly what it watches.
      assert.deepEqual(told.sort(), [dir.path, join(dir.path, 'a')].sort());
      assert.ok(watcher.isWatching(join(dir.path, 'a')));
      assert.equal(watcher.isWatching(join(dir.path, 'b')), false, 'walked instead of taking the list');
      watcher.rewatch!(join(dir.path, 'b'), 'found');
      assert.ok(watcher.isWatching(join(dir.path, 'b')));
    } finally {
      await watcher.close();
      dir.cleanup();
    }
  });

  test('a start list longer than a slice: every directory watched is told, slice by slice, once', async () => {
    const dir = tempDir();
    const names = Array.from({ length: 4500 }, (_, i) => `d${i}`);
    for (const name of names) mkdirSync(join(dir.path, name));
    const roots = [makeRoot(dir.path)];
    const told: string[][] = [];
    const watcher = (await startDirsWatcher({
      roots,
      rules: new IgnoreRules(roots, { gitignore: true, exclude: [] }),
      sink: recordingSink().sink,
      log: silentLogger,
      directories: () => [dir.path, ...names.map((name) => join(dir.path, name))],
      watching: (dirs) => void told.push([...dirs]),
    })) as DirsWatcher;
    try {
      assert.ok(told.length >= 3, `told in ${told.length} slice(s)`);
      const all = told.flat();
      assert.equal(new Set(all).size, all.length, 'a directory was told twice');
      assert.equal(all.length, watcher.watching);
      assert.ok(all.every((path) => watcher.isWatching(path)));
    } finally {
      await watcher.close();
      dir.cleanup();
    }
  });

  test('out of watches (ENOSPC): a start failure before ready, sink.fatal after', async () => {
    const enospc = () => Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' });
    let allowed = 2;
    const limited: WatchDirectory = (dir, listener) => {
      if (allowed-- <= 0) throw enospc();
      return watch(dir, { persistent: false }, (event, filename) => listener(event, filename));
    };
    // Three directories, two watches allowed: the start fails, and lets go of the two it held.
    await assert.rejects(
      withWatcher({ 'a/b/x.md': 'x\n' }, async () => assert.fail('started'), dirsWatcher({ watchDirectory: limited })),
      /ENOSPC/,
    );
    assert.equal(countInotifyWatches(), 0, 'watches left behind by the failed start');

    allowed = 3;
    await withWatcher(
      { 'a/b/x.md': 'x\n' },
      async ({ root, rec }) => {
        assert.equal(rec.fatals.length, 0);
        mkdirSync(join(root, 'a/b/c'));
        await waitFor(() => rec.fatals.length > 0, TIMEOUT, 'sink.fatal');
        assert.match(rec.fatals[0]!.message, /ENOSPC/);
        mkdirSync(join(root, 'a/b/d'));
        await reported(rec, join(root, 'a/b/d'), 'the next event');
        assert.equal(rec.fatals.length, 1, 'fatal reported once');
      },
      dirsWatcher({ watchDirectory: limited }),
    );
  });

  test('one recursive watch per root (the macOS and Windows path, run here on Linux)', async () => {
    await withWatcher(
      { 'a/b/x.md': 'x\n' },
      async ({ root, watcher, rec }) => {
        assert.equal(watcher.watching, 1);
        writeFileSync(join(root, 'a/b/y.md'), 'y\n');
        await reported(rec, join(root, 'a/b/y.md'), 'a file in a nested directory');
      },
      dirsWatcher({ recursive: true }),
    );
  });

  test('recursive: a served folder removed and made again is watched afresh (a recursive watch holds the folder, not its path)', async () => {
    await withWatcher(
      { 'a/x.md': 'x\n' },
      async ({ root, watcher, rec }) => {
        rmSync(root, { recursive: true });
        await waitFor(() => rec.rescans.includes(root) && watcher.watching === 0, TIMEOUT, 'the root seen gone');
        mkdirSync(join(root, 'b'), { recursive: true });
        await waitFor(() => rec.rescans.filter((dir) => dir === root).length >= 2 && watcher.watching === 1, TIMEOUT, 'the root watched again');
        writeFileSync(join(root, 'b', 'new.md'), 'new\n');
        await reported(rec, join(root, 'b', 'new.md'), 'a file in the new folder');
      },
      recursiveWatcherAs('linux'),
    );
  });

  test('on macOS the roots are diffed again once FSEvents has surely started (nodejs/node#52601)', async () => {
    await withWatcher(
      { 'a/x.md': 'x\n' },
      async ({ root, watcher, rec }) => {
        assert.equal(watcher.backend, 'recursive');
        await waitFor(() => rec.rescans.includes(root), TIMEOUT, 'the second diff of the root');
        assert.deepEqual(rec.rescans, [root], 'once, of the root');
      },
      recursiveWatcherAs('darwin'),
    );
  });
});

describe('watcher dirs under Live', () => {
  /** A Live on a real index with the `dirs` backend (or `starter`), the watcher exposed. */
  async function withSync(
    files: Record<string, string>,
    run: (ctx: { root: string; index: FolderIndex; sync: Live; watcher: () => DirsWatcher; logs: string[] }) => Promise<void>,
    options: { starter?: StartWatcher; dbFile?: string; root?: string } = {},
  ) {
    const dir = options.root ? { path: options.root, cleanup: () => {} } : tempDir();
    writeTree(dir.path, files);
    const logs: string[] = [];
    const log = createLogger('debug', (line) => logs.push(line));
    const index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: options.dbFile ?? ':memory:', log, gitignore: true, exclude: [] });
    let watcher: DirsWatcher | undefined;
    const start = options.starter ?? startDirsWatcher;
    const capture: StartWatcher = async (s) => (watcher = (await start(s)) as DirsWatcher);
    const sync = liveSync({ index, log, watcher: 'dirs', starters: { ...BACKEND_STARTERS, dirs: capture } });
    try {
      await sync.start();
      await run({ root: dir.path, index, sync, watcher: () => watcher!, logs });
    } finally {
      await sync.close();
      index.close();
      if (!options.root) dir.cleanup();
    }
  }

  test('a directory un-ignored by a .gitignore edit is watched, with its subdirectories', async () => {
    await withSync({ '.gitignore': 'gen/\n', 'gen/sub/a.js': 'a\n', 'src/b.ts': 'b\n' }, async ({ root, index, watcher }) => {
      assert.equal(watcher().backend, 'dirs');
      assert.equal(watcher().isWatching(join(root, 'gen')), false);
      writeFileSync(join(root, '.gitignore'), '\n');
      await waitFor(() => watcher().isWatching(join(root, 'gen/sub')), TIMEOUT, 'gen/sub watched');
      assert.ok(watcher().isWatching(join(root, 'gen')));
      writeFileSync(join(root, 'gen/sub/new.js'), 'n\n');
      await waitFor(() => index.store.get(pathToUri(join(root, 'gen/sub/new.js'), false)), TIMEOUT, 'the new file indexed');
    });
  });

  test('a warm start watches the directories made while the server was down (hinted by the diff)', async () => {
    const state = tempDir('folder-mcp-state-');
    const root = tempDir();
    const dbFile = join(state.path, 'index.db');
    try {
      await withSync({ 'a/x.md': 'x\n' }, async ({ watcher }) => assert.equal(watcher().watching, 2), { dbFile, root: root.path });
      writeTree(root.path, { 'down/deep/y.md': 'y\n' });
      await withSync(
        {},
        async ({ index, watcher }) => {
          assert.equal(index.warm, true);
          await waitFor(() => watcher().isWatching(join(root.path, 'down/deep')), TIMEOUT, 'down/deep watched');
          writeFileSync(join(root.path, 'down/deep/z.md'), 'z\n');
          await waitFor(() => index.store.get(pathToUri(join(root.path, 'down/deep/z.md'), false)), TIMEOUT, 'the new file indexed');
        },
        { dbFile, root: root.path },
      );
    } finally {
      root.cleanup();
      state.cleanup();
    }
  });

  test('ENOSPC: dirs cannot start -> poll; dirs runs out later -> degrades to poll, then catches up', async () => {
    const enospc = () => Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' });
    const never: WatchDirectory = () => {
      throw enospc();
    };
    await withSync({ 'a.md': 'a\n' }, async ({ sync, logs }) => {
      assert.equal(sync.backend, 'poll');
      assert.match(logs.join(''), /warn: watcher dirs could not start \(ENOSPC.*falling back to poll/);
    }, { starter: dirsWatcher({ watchDirectory: never }) });

    let allowed = 1; // the root only
    const limited: WatchDirectory = (dir, listener) => {
      if (allowed-- <= 0) throw enospc();
      return watch(dir, { persistent: false }, (event, filename) => listener(event, filename));
    };
    await withSync({ 'a.md': 'a\n' }, async ({ root, index, sync, logs }) => {
      assert.equal(sync.backend, 'dirs');
      mkdirSync(join(root, 'new'));
      writeFileSync(join(root, 'new/b.md'), 'b\n');
      await waitFor(() => sync.backend === 'poll', TIMEOUT, 'the fallback');
      assert.match(logs.join(''), /warn: watcher dirs failed \(ENOSPC.*degrading to poll/);
      await waitFor(() => index.store.get(pathToUri(join(root, 'new/b.md'), false)), TIMEOUT, 'new/b.md indexed');
    }, { starter: dirsWatcher({ watchDirectory: limited }) });
  });

  test('closed while its start-up is still watching directories: every watch is released, and no warning', async () => {
    const dir = tempDir();
    // 6,000 directories: the start-up watches them 2,000 per turn of the event loop, so a close lands mid-way.
    for (let i = 0; i < 60; i++) for (let j = 0; j < 100; j++) mkdirSync(join(dir.path, `a${i}`, `b${j}`), { recursive: true });
    const logs: string[] = [];
    const log = createLogger('info', (line) => logs.push(line));
    const index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: ':memory:', log, gitignore: true, exclude: [] });
    try {
      await index.readiness.reached('scanned');
      const before = countInotifyWatches();
      const sync = liveSync({ index, log, watcher: 'dirs' });
      const started = sync.start();
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      assert.ok(countInotifyWatches() - before > 0, 'the start-up had begun watching');
      await sync.close();
      index.close();
      await started;
      await waitFor(() => countInotifyWatches() === before, 30_000, 'the watches to go').catch(() => {});
      assert.equal(countInotifyWatches() - before, 0, 'watches left after close');
      assert.doesNotMatch(logs.join(''), /could not start/);
    } finally {
      if (index.db.open) index.close();
      dir.cleanup();
    }
  });
});

