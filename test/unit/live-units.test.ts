// In-process tests of the live layer: backend choice, degrading when a
// watcher runs out of OS resources, which subscriptions a change concerns.
// Real temp folders, real SQLite, real watchers; only the failure is staged.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FolderIndex } from '../../src/index/folder-index.ts';
import type { EntryRow } from '../../src/entry.ts';
import { BACKEND_STARTERS, planWatchers } from '../../src/watch/choose.ts';
import { Subscriptions } from '../../src/protocol/subscriptions.ts';
import type { Live } from '../../src/sync/live.ts';
import { liveSync } from '../scan-helpers.ts';
import { Rechecks } from '../../src/sync/rechecks.ts';
import { WriteQueue } from '../../src/sync/write-queue.ts';
import type { WatcherBackend } from '../../src/watching.ts';
import type { StartWatcher, WatchSink } from '../../src/watch/watcher.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import { makeRoot, pathToUri } from '../../src/uri.ts';
import { tempDir, waitFor, writeTree } from '../basics.ts';
import { TestClock } from '../test-clock.ts';

describe('Rechecks: the periodic safety diff', () => {
  // On a clock the test moves: the 60 s floor and the 100x duty factor are checked without waiting a minute.
  let clock = new TestClock();
  const run = async (backend: WatcherBackend, body: (r: Rechecks, diffs: () => number, stop: AbortController, logged: string[]) => Promise<void>) => {
    clock = new TestClock();
    const stop = new AbortController();
    const logged: string[] = [];
    let diffs = 0;
    let written = 0;
    const rechecks = new Rechecks({
      queue: new WriteQueue({ ready: () => Promise.resolve(), signal: stop.signal, log: silentLogger }),
      tree: () => Promise.resolve(),
      // Each diff takes "1,000 ms" and finds 2 changes no event brought.
      diffRoots: () => {
        diffs++;
        written += 2;
        return Promise.resolve(1000);
      },
      written: () => written,
      backend: () => backend,
      signal: stop.signal,
      log: createLogger('info', (line) => logged.push(line)),
      clock,
    });
    try {
      await body(rechecks, () => diffs, stop, logged);
    } finally {
      rechecks.close();
    }
  };
  /** Lets the diff's promise and the rescheduling after it run. */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  /** No diff until 1 ms before `ms` from now, and one more at `ms`. */
  const oneDiffAt = async (ms: number, diffs: () => number) => {
    const before = diffs();
    clock.advance(ms - 1);
    await settle();
    assert.equal(diffs(), before, `no diff before ${ms} ms`);
    clock.advance(1);
    await settle();
    assert.equal(diffs(), before + 1, `a diff at ${ms} ms`);
  };

  test('the first diff runs 60 s after a quick start-up check, the next 100 times the last diff later, and what it found is logged', async () => {
    await run('dirs', async (rechecks, diffs, _stop, logged) => {
      rechecks.scheduleSafetyDiff(50);
      await oneDiffAt(60_000, diffs);
      assert.match(logged.join('\n'), /periodic check applied 2 change\(s\)/);
      // The diff took 1,000 ms: the next is 100 s later, not 60.
      await oneDiffAt(100_000, diffs);
      assert.equal(rechecks.scheduled, 1, 'another diff is scheduled');
    });
  });

  test('a slow start-up check spaces the first diff by 100 times its duration', async () => {
    await run('chokidar', async (rechecks, diffs) => {
      rechecks.scheduleSafetyDiff(2000);
      await oneDiffAt(200_000, diffs);
    });
  });

  test('poll (which diffs all the time) and none (a static index) schedule none; a closed Live stops the next', async () => {
    for (const backend of ['poll', 'none'] as const) {
      await run(backend, async (rechecks, diffs) => {
        rechecks.scheduleSafetyDiff(10);
        assert.equal(rechecks.scheduled, 0);
        clock.advance(600_000);
        await settle();
        assert.equal(diffs(), 0);
      });
    }
    await run('dirs', async (rechecks, diffs, stop) => {
      rechecks.scheduleSafetyDiff(10);
      clock.advance(60_000);
      await settle();
      assert.equal(diffs(), 1);
      stop.abort();
      clock.advance(600_000);
      await settle();
      assert.equal(diffs(), 1, 'no diff after the abort');
    });
  });
});

describe('planWatchers', () => {
  const cases: Array<[Parameters<typeof planWatchers>, string[]]> = [
    // Every plan degrades to poll, which no OS limit can stop (EMFILE, ENOSPC).
    [['auto'], ['dirs', 'poll']],
    [['chokidar'], ['chokidar', 'poll']],
    [['dirs'], ['dirs', 'poll']],
    [['poll'], ['poll']],
    [['none'], ['none']],
  ];
  for (const [args, candidates] of cases) {
    test(`${args.join(' ')} -> ${candidates.join(', ')}`, () => {
      assert.deepEqual(planWatchers(...args).candidates, candidates);
    });
  }
});

describe('Subscriptions.affectedBy', () => {
  const subs = new Subscriptions();
  // `file:///r/new`: a folder listened to before it was made, so kept as spelled (no trailing slash).
  for (const uri of ['file:///r/', 'file:///r/src/', 'file:///r/src/a.ts', 'file:///r/docs/x.md', 'file:///r/src-other/', 'file:///r/new']) {
    subs.add(uri, uri);
  }
  const row = (uri: string) => ({ uri }) as EntryRow;
  const cases: Array<[string, { upserted?: string[]; removed?: string[] }, string[]]> = [
    ['a changed document and its ancestors', { upserted: ['file:///r/src/a.ts'] }, ['file:///r/', 'file:///r/src/', 'file:///r/src/a.ts']],
    ['a new file deep down tells each subscribed ancestor', { upserted: ['file:///r/src/x/y/z.ts'] }, ['file:///r/', 'file:///r/src/']],
    ['a sibling with a shared prefix is not inside', { upserted: ['file:///r/src-other/q.ts'] }, ['file:///r/', 'file:///r/src-other/']],
    ['a removed collection takes subscribed descendants', { removed: ['file:///r/src/'] }, ['file:///r/', 'file:///r/src/', 'file:///r/src/a.ts']],
    ['a removed document', { removed: ['file:///r/docs/x.md'] }, ['file:///r/', 'file:///r/docs/x.md']],
    ['outside every subscription', { upserted: ['file:///elsewhere/a'] }, []],
    ['a folder named without its slash, made later, and a file in it', { upserted: ['file:///r/new/', 'file:///r/new/f.txt'] }, ['file:///r/', 'file:///r/new']],
    ['that folder removed', { removed: ['file:///r/new/'] }, ['file:///r/', 'file:///r/new']],
    ['a removed folder whose name another begins with takes nothing of the other', { removed: ['file:///r/ne/'] }, ['file:///r/']],
  ];
  for (const [name, change, expected] of cases) {
    test(name, () => {
      const hit = subs.affectedBy({ upserted: (change.upserted ?? []).map(row), removed: change.removed ?? [] });
      assert.deepEqual([...hit].sort(), expected.sort());
    });
  }
});

describe('Subscriptions.affectedBy, removed folders against many subscriptions', () => {
  test('as a prefix test of each subscription against each removed folder says, in one pass', () => {
    const subs = new Subscriptions();
    const all: string[] = [];
    for (let d = 0; d < 50; d++) for (let f = 0; f < 20; f++) all.push(`file:///r/d${d}/s${f % 3}/f${f}.txt`, `file:///r/d${d}/s${f % 3}/`);
    for (const uri of all) subs.add(uri, uri);
    // A few removed folders (matched one by one), and more than FEW_FOLDERS (one walk up from each subscription).
    const few = ['file:///r/d1/', 'file:///r/d2/s1/', 'file:///r/d30/s2/', 'file:///r/d4', 'file:///r/d4/s0/f0.txt'];
    const many = [...few, ...Array.from({ length: 10 }, (_, i) => `file:///r/d${10 + i}/s${i % 3}/`), 'file:///r/zz/'];
    for (const removed of [few, many]) {
      const hit = subs.affectedBy({ upserted: [], removed });
      // Beneath a removed folder, or (as for any change) the removed URI itself or a folder holding it.
      const expected = all.filter((sub) => removed.some((uri) => (uri.endsWith('/') && sub.startsWith(uri)) || sub === uri || (sub.endsWith('/') && uri.startsWith(sub))));
      assert.deepEqual([...hit].sort(), [...new Set(expected)].sort(), `${removed.length} removed`);
    }
  });
});

describe('Live degrades when a watcher runs out of watches', () => {
  const enospc = () => Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' });

  async function withSync(
    starters: Partial<typeof BACKEND_STARTERS>,
    run: (ctx: { root: string; index: FolderIndex; sync: Live; logs: string[] }) => Promise<void>,
    watcher: 'chokidar' | 'dirs' = 'chokidar',
  ) {
    const dir = tempDir();
    writeTree(dir.path, { 'a.md': 'a\n' });
    const logs: string[] = [];
    const log = createLogger('debug', (line) => logs.push(line));
    const index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: ':memory:', log, gitignore: true, exclude: [] });
    const sync = liveSync({ index, log, watcher, starters: { ...BACKEND_STARTERS, ...starters } });
    try {
      await sync.start();
      await run({ root: dir.path, index, sync, logs });
    } finally {
      await sync.close();
      index.close();
      dir.cleanup();
    }
  }

  test('a backend that cannot start (ENOSPC) falls back to the next, with a warning', async () => {
    const failing: StartWatcher = async () => {
      throw enospc();
    };
    await withSync({ chokidar: failing }, async ({ root, index, sync, logs }) => {
      assert.equal(sync.backend, 'poll');
      assert.match(logs.join(''), /warn: watcher chokidar could not start \(ENOSPC.*falling back to poll/);
      writeFileSync(join(root, 'b.md'), 'b\n');
      await waitFor(() => index.store.get(pathToUri(join(root, 'b.md'), false)), 30_000, 'polling to see b.md');
    });
  });

  test('inotify instances used up (EMFILE from fs.watch): dirs degrades to poll, one warning, and changes are still seen', async () => {
    // Before issue 22 the next candidate was @parcel/watcher, whose subscribe then blocked the main thread for good.
    const emfile: StartWatcher = async () => {
      throw Object.assign(new Error('EMFILE: too many open files, watch'), { code: 'EMFILE' });
    };
    await withSync(
      { dirs: emfile },
      async ({ root, index, sync, logs }) => {
        assert.equal(sync.backend, 'poll');
        assert.equal(logs.join('').match(/warn: /g)?.length, 1, logs.join(''));
        assert.match(logs.join(''), /warn: watcher dirs could not start \(EMFILE.*falling back to poll/);
        writeFileSync(join(root, 'c.md'), 'c\n');
        await waitFor(() => index.store.get(pathToUri(join(root, 'c.md'), false)), 30_000, 'polling to see c.md');
      },
      'dirs',
    );
  });

  test('a running backend that hits ENOSPC is replaced, and what changed meanwhile is caught up', async () => {
    let sink: WatchSink | undefined;
    let closed = false;
    const flaky: StartWatcher = async (start) => {
      sink = start.sink;
      return { backend: 'chokidar', close: async () => void (closed = true) };
    };
    await withSync({ chokidar: flaky }, async ({ root, index, sync, logs }) => {
      assert.equal(sync.backend, 'chokidar');
      // The change happens while the broken watcher sees nothing.
      writeFileSync(join(root, 'missed.md'), 'missed\n');
      sink!.fatal(enospc());
      await waitFor(() => sync.backend === 'poll', 30_000, 'the fallback');
      assert.ok(closed, 'the failed watcher was not closed');
      assert.match(logs.join(''), /warn: watcher chokidar failed \(ENOSPC.*degrading to poll/);
      await waitFor(() => index.store.get(pathToUri(join(root, 'missed.md'), false)), 30_000, 'the catch-up diff');
    });
  });
});

describe("Live.hint: another replica's paths", () => {
  test('resolves once they have been looked at: what the look found is in the index by then (the bus sends none of it back out)', async () => {
    const dir = tempDir();
    writeTree(dir.path, { 'a.md': 'a\n' });
    const index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
    // A watcher that reports nothing: only the hint makes anyone look.
    const staged: StartWatcher = async () => ({ backend: 'chokidar', close: async () => {} });
    const sync = liveSync({ index, log: silentLogger, watcher: 'chokidar', starters: { ...BACKEND_STARTERS, chokidar: staged } });
    try {
      await sync.start();
      const b = join(dir.path, 'b.md');
      writeFileSync(b, 'from another replica\n');
      await sync.hint([b]);
      assert.equal(index.store.get(pathToUri(b, false))?.size, 21, 'looked at, and committed, before hint() resolved');
      await sync.hint([join(dir.path, 'a.md')]); // unchanged: resolves all the same
    } finally {
      await sync.close();
      index.close();
      dir.cleanup();
    }
  });
});

describe('Live looks at reported paths again', () => {
  test('the rest of a write seen half done by a trailing flush is indexed without another event, and the looks again stop', async () => {
    const dir = tempDir();
    writeTree(dir.path, { 'a.md': 'a\n' });
    const index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
    let sink: WatchSink | undefined;
    const staged: StartWatcher = async (start) => {
      sink = start.sink;
      return { backend: 'chokidar', close: async () => {} };
    };
    const sync = liveSync({ index, log: silentLogger, watcher: 'chokidar', starters: { ...BACKEND_STARTERS, chokidar: staged } });
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      await sync.start();
      const a = join(dir.path, 'a.md');
      const b = join(dir.path, 'b.md');
      writeFileSync(a, 'a changed\n');
      sink!.changed(a); // after a quiet spell: applied at once (the leading edge)
      await sleep(20);
      writeFileSync(b, '');
      sink!.changed(b); // within the spell: a trailing flush, which finds b empty
      await waitFor(() => index.store.get(pathToUri(b, false))?.size === 0, 30_000, 'b.md indexed empty');
      writeFileSync(b, 'b written later\n'); // never reported, as chokidar drops it
      await waitFor(() => index.store.get(pathToUri(b, false))?.size === 16, 30_000, 'the rest of the write, from a look again');
      // Past the look-agains one event asks for (150 ms and 1 s after it), with room for a loaded machine's late timers.
      await sleep(4000);
      const looked = sync.pathsLookedAt;
      await sleep(2500);
      assert.equal(sync.pathsLookedAt, looked, 'looks again that go on without new events');
    } finally {
      await sync.close();
      index.close();
      dir.cleanup();
    }
  });
});

