// The index file: never where it is served, readable by its owner only, and
// two servers on one file both keep working (issue 11, item 8).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { CLI, connect, tempTree, waitFor, type Connected, type LooseResult } from '../helpers.ts';

describe('the index file', () => {
  // Each test starts the servers it is about.
  const tree = tempTree({ 'a.txt': 'alpha\n', 'sub/b.txt': 'beta\n' });

  test('a --db through a symlinked folder that resolves inside a served folder is refused', () => {
    symlinkSync(join(tree.root, 'sub'), join(tree.state, 'innocent'));
    const result = spawnSync(process.execPath, [CLI, tree.root, '--db', join(tree.state, 'innocent', 'index.db')], { encoding: 'utf8', input: '' });
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /is inside a served folder/);
    assert.equal(existsSync(join(tree.root, 'sub', 'index.db')), false);
  });

  test('the default index and its folder are readable by the owner only', async () => {
    const cache = join(tree.state, 'cache');
    const conn = await connect([tree.root, '--watcher', 'none'], { env: { XDG_CACHE_HOME: cache } });
    try {
      await conn.request('resources/list', {});
      const dir = join(cache, 'folder-mcp');
      assert.equal(statSync(dir).mode & 0o777, 0o700);
      const files = readdirSync(dir).filter((f) => /\.db(-wal|-shm)?$/.test(f));
      assert.ok(files.some((f) => f.endsWith('.db-wal')), `WAL file present: ${files.join(', ')}`);
      for (const f of files) assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, f);
    } finally {
      await conn.close();
    }
  });

  test("servers on one folder's default index: the next take the spare files, start warm from them, and the one past the last keeps its index in memory", async () => {
    const env = { XDG_CACHE_HOME: join(tree.state, 'spare-cache') };
    const args = [tree.root, '--watcher', 'none'];
    const uris = async (conn: Connected) => ((await conn.request('resources/list', {})).resources as LooseResult[]).map((r) => r.uri).sort();
    const scanned = (conn: Connected) => waitFor(() => /indexed \d+ entries/.test(conn.stderr()), 30_000, 'the cold scan to end');
    const running: Connected[] = [];
    const start = async () => {
      const conn = await connect(args, { env });
      running.push(conn);
      return conn;
    };
    try {
      const first = await start();
      const listed = await uris(first);
      await scanned(first);
      const spares: Connected[] = [];
      for (const n of [2, 3]) {
        const conn = await start();
        assert.deepEqual(await uris(conn), listed);
        assert.match(conn.stderr(), new RegExp(`in use by another folder-mcp \\(pid ${first.pid}\\); this one uses \\S+-${n}\\.db`));
        const found = (await conn.request('tools/call', { name: 'search', arguments: { query: 'beta' } })).structuredContent as { results: LooseResult[] };
        assert.equal(found.results.length, 1);
        await scanned(conn);
        spares.push(conn);
      }
      const files = readdirSync(join(env.XDG_CACHE_HOME, 'folder-mcp'));
      for (const n of [2, 3]) assert.ok(files.some((f) => f.endsWith(`-${n}.db`)), files.join(', '));
      const past = await start();
      assert.deepEqual(await uris(past), listed);
      assert.match(past.stderr(), /this one keeps its index in memory/);
      // The second stops; the next server takes its file, warm.
      await spares[0]!.close();
      running.splice(running.indexOf(spares[0]!), 1);
      const again = await start();
      assert.deepEqual(await uris(again), listed);
      assert.match(again.stderr(), /this one uses \S+-2\.db/);
      await waitFor(() => /index checked against the disk/.test(again.stderr()), 30_000, 'the catch-up');
      assert.doesNotMatch(again.stderr(), /indexed \d+ entries/, 'warm: no cold scan');
    } finally {
      for (const conn of running) await conn.close();
    }
  });

  test('two servers on one --db: the second keeps its index in memory, and both follow changes', async () => {
    const db = join(tree.state, 'shared.db');
    const search = async (conn: Connected, word: string) =>
      ((await conn.request('tools/call', { name: 'search', arguments: { query: word } })).structuredContent as { results: LooseResult[] }).results.length;
    const first = await connect([tree.root, '--db', db, '--watcher', 'chokidar']);
    let second: Connected | undefined;
    try {
      await first.request('resources/list', {});
      second = await connect([tree.root, '--db', db, '--watcher', 'chokidar']);
      await second.request('resources/list', {});
      await waitFor(() => /in use by another folder-mcp/.test(second!.stderr()), 30_000, 'the second server to say so');
      writeFileSync(join(tree.root, 'new.txt'), 'zebracorn\n');
      for (const conn of [first, second]) await waitFor(async () => (await search(conn, 'zebracorn')) === 1, 30_000, 'search to see the new file');
      assert.doesNotMatch(first.stderr() + second.stderr(), /database is locked/);
    } finally {
      await second?.close();
      await first.close();
    }
    mkdirSync(join(tree.state, 'x'), { recursive: true });
  });
});
