// Pages during the first scan: the frontier's range check (pure, table-tested)
// and, on a real temp folder with a real FolderIndex, a page answered before
// the scan ends that equals the page of the finished index.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { ScanFrontier } from '../../src/index/scan.ts';
import { silentLogger } from '../../src/log.ts';
import type { ServerContext } from '../../src/protocol/context.ts';
import { CATCHING_UP_META_KEY, listResources } from '../../src/protocol/list.ts';
import { createPager } from '../../src/query/page.ts';
import { makeRoot } from '../../src/uri.ts';
import { tempDir, writeTree } from '../basics.ts';

describe('ScanFrontier.settled', () => {
  const open = ['file:///r/b/', 'file:///r/d/e/'];
  const cases: [from: string, to: string | null, settled: boolean, why: string][] = [
    ['file:///r/', 'file:///r/a/z', true, 'wholly before every open subtree'],
    ['file:///r/', 'file:///r/b/', false, 'reaches an open directory itself'],
    ['file:///r/', 'file:///r/b/x', false, 'reaches into an open subtree'],
    ['file:///r/b/x', 'file:///r/c', false, 'starts inside an open subtree'],
    ['file:///r/b0', 'file:///r/d/', true, 'between two open subtrees (b/ sorts before b0)'],
    ['file:///r/c', 'file:///r/d/e', true, 'up to the open directory, not into it (d/e < d/e/)'],
    ['file:///r/c', null, false, 'unbounded: reaches every later subtree'],
    ['file:///r/d/e0', null, true, 'after the last open subtree, unbounded'],
    ['file:///r/d/e/', 'file:///r/d/e/', false, 'exactly the open directory'],
  ];
  for (const [from, to, settled, why] of cases) {
    test(`[${from}, ${to ?? '∞'}]: ${settled ? 'settled' : 'open'} (${why})`, () => {
      const frontier = new ScanFrontier();
      for (const dir of open) frontier.add(dir);
      assert.equal(frontier.settled(from, to), settled);
    });
  }

  test('a closed directory no longer holds a range open', () => {
    const frontier = new ScanFrontier();
    frontier.add('file:///r/b/');
    assert.equal(frontier.settled('file:///r/', null), false);
    frontier.close('file:///r/b/');
    assert.equal(frontier.settled('file:///r/', null), true);
    assert.equal(frontier.size, 0);
  });
});

describe('resources/list during the first scan', () => {
  test('a prefix page is answered before the scan ends, and it is the page of the finished index', async () => {
    const dir = tempDir();
    try {
      // 60 folders of 100 files: several batches of 2,000 rows, walked in key order.
      const files: Record<string, string> = {};
      for (let d = 0; d < 60; d++) for (let f = 0; f < 100; f++) files[`d${String(d).padStart(2, '0')}/f${String(f).padStart(3, '0')}.txt`] = 'x';
      writeTree(dir.path, files);
      const root = makeRoot(dir.path);
      const index = new FolderIndex({ roots: [root], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
      const ctx = {
        index,
        roots: [root],
        log: silentLogger,
        pageSize: 50,
        pager: createPager(index.db),
        cursorSecret: 'k'.repeat(32),
      } as unknown as ServerContext;
      try {
        const early = [
          listResources(ctx, { prefix: `${root.uri}d00/` }).then((page) => ({ page, during: index.readiness.state === 'scanning' })),
          listResources(ctx, {}).then((page) => ({ page, during: index.readiness.state === 'scanning' })),
        ];
        // A page at the far end of the key order waits for the subtrees before it.
        const late = listResources(ctx, { prefix: `${root.uri}d59/` }).then((page) => ({ page, during: index.readiness.state === 'scanning' }));
        const answers = await Promise.all([...early, late]);
        await index.readiness.reached('scanned');
        for (const [i, { during }] of answers.slice(0, 2).entries()) assert.ok(during, `page ${i} was answered only after the scan`);
        const again = [
          await listResources(ctx, { prefix: `${root.uri}d00/` }),
          await listResources(ctx, {}),
          await listResources(ctx, { prefix: `${root.uri}d59/` }),
        ];
        for (const [i, { page }] of answers.entries()) {
          assert.deepEqual(page.resources.map((r) => r.uri), again[i]!.resources.map((r) => r.uri), `page ${i}`);
          assert.equal(page.resources.length, 50);
        }
        // Continuing with the early page's cursor gives the finished index's second page.
        const next = await listResources(ctx, { cursor: answers[1]!.page.nextCursor });
        const second = await listResources(ctx, { cursor: again[1]!.nextCursor });
        assert.deepEqual(next.resources.map((r) => r.uri), second.resources.map((r) => r.uri));
      } finally {
        await index.readiness.reached('scanned').catch(() => {});
        index.close();
      }
    } finally {
      dir.cleanup();
    }
  });
});

describe('pages waiting on the first scan are not run again at every commit', () => {
  test('a glob that matches nothing (it waits for the whole scan) runs a few times, not once a commit, and gives the finished index\'s page', async () => {
    // A red-team finding: each waiting page read up to its budget of rows after every commit; 48 of them held a ping
    // 15.8 s during a 100k scan, and tripled the scan's time.
    const dir = tempDir();
    try {
      const files: Record<string, string> = {};
      for (let d = 0; d < 150; d++) for (let f = 0; f < 100; f++) files[`d${String(d).padStart(3, '0')}/f${String(f).padStart(3, '0')}.txt`] = 'x';
      writeTree(dir.path, files);
      const root = makeRoot(dir.path);
      const index = new FolderIndex({ roots: [root], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
      const pager = createPager(index.db);
      const runs = new Map<unknown, number>();
      const counted = { ...pager, listPage: (...args: Parameters<typeof pager.listPage>) => (runs.set(args[0], (runs.get(args[0]) ?? 0) + 1), pager.listPage(...args)) };
      const ctx = { index, roots: [root], log: silentLogger, pageSize: 50, pager: counted, cursorSecret: 'k'.repeat(32) } as unknown as ServerContext;
      try {
        let commits = 0;
        const counting = (async () => {
          while (index.readiness.state === 'scanning') {
            await index.nextCommit();
            commits++;
          }
        })();
        const [none, last] = await Promise.all([
          listResources(ctx, { filter: { namePatterns: ['*zzz*'] } }),
          listResources(ctx, { filter: { uriPatterns: [`${root.uri}d149/**`] } }),
        ]);
        await counting;
        // A page that runs out of rows runs again once the index has doubled (or grown by a page): at most
        // log2(entries / page size) times, and twice more (its keys all in, the scan over). Once a commit, it ran
        // as many times as the scan committed batches: 15 here.
        const bound = 2 + Math.log2(index.scanned / ctx.pageSize);
        for (const count of runs.values()) assert.ok(count <= bound, `a page ran ${count} times over ${commits} commits (at most ${bound.toFixed(1)})`);
        const after = [await listResources(ctx, { filter: { namePatterns: ['*zzz*'] } }), await listResources(ctx, { filter: { uriPatterns: [`${root.uri}d149/**`] } })];
        assert.deepEqual(none.resources, after[0]!.resources);
        assert.deepEqual(last.resources, after[1]!.resources);
        assert.equal(last.resources.length, 50);
      } finally {
        await index.readiness.reached('scanned').catch(() => {});
        index.close();
      }
    } finally {
      dir.cleanup();
    }
  });
});

describe('resources/list before the index caught up with the disk', () => {
  test('a page says so (cold and warm), until the catch-up is over', async () => {
    const dir = tempDir();
    const state = tempDir('folder-mcp-state-');
    try {
      writeTree(dir.path, { 'a.txt': 'a', 'sub/b.txt': 'b' });
      const root = makeRoot(dir.path);
      const dbFile = join(state.path, 'i.db');
      for (const start of ['cold', 'warm']) {
        const index = new FolderIndex({ roots: [root], dbFile, log: silentLogger, gitignore: true, exclude: [] });
        const ctx = { index, roots: [root], log: silentLogger, pageSize: 50, pager: createPager(index.db), cursorSecret: 'k'.repeat(32) } as unknown as ServerContext;
        try {
          // What src/app.ts hands it: the live layer's catch-up (watcher up, what changed while no server ran applied).
          let over!: () => void;
          index.readiness.catchUp(new Promise<void>((resolve) => (over = resolve)));
          await index.readiness.reached('scanned');
          const before = await listResources(ctx, {});
          assert.deepEqual(before.resources.map((r) => r.name), [root.name, 'a.txt', 'sub', 'b.txt'], start);
          assert.deepEqual(before._meta, { [CATCHING_UP_META_KEY]: true }, `${start}: the page before the catch-up`);
          over();
          await index.readiness.reached('caught-up');
          const after = await listResources(ctx, {});
          assert.deepEqual(after.resources, before.resources, start);
          assert.equal(after._meta, undefined, `${start}: the page after the catch-up`);
        } finally {
          index.close();
        }
      }
    } finally {
      dir.cleanup();
      state.cleanup();
    }
  });
});
