// An index file written by one SQLite driver opens, warm, with the other
// (src/sqlite.ts): the built server on this Node and on another one whose
// driver differs (FOLDER_MCP_OTHER_NODE; .ci/run sets it to Node 24 for the
// Node 20 run, so better-sqlite3's file is opened by node:sqlite and back).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { connect, listAll, tempDir, waitFor, writeTree, type Connected } from '../helpers.ts';

const OTHER_NODE = process.env.FOLDER_MCP_OTHER_NODE;

/** The driver a server's start-up line names. */
function driverOf(conn: Connected): string {
  const found = /SQLite: (node:sqlite|better-sqlite3) /.exec(conn.stderr());
  assert.ok(found, `no driver named in:\n${conn.stderr()}`);
  return found[1]!;
}

async function searchFinds(conn: Connected, query: string): Promise<string[]> {
  const hits = await waitFor(async () => {
    const result = await conn.request('tools/call', { name: 'search', arguments: { query } });
    const { results } = result.structuredContent as { results: { path: string }[] };
    return results.length > 0 ? results.map((r) => r.path) : undefined;
  }, 60_000, `search to find ${query}`);
  return hits ?? [];
}

describe('one index file, both drivers', { skip: OTHER_NODE ? false : 'FOLDER_MCP_OTHER_NODE names no second Node (.ci/run sets it)' }, () => {
  const dir = tempDir();
  after(dir.cleanup);
  const root = join(dir.path, 'tree');
  const db = join(dir.path, 'index.db');
  writeTree(root, { 'a.txt': 'alpha\n', 'docs/b.md': '# B\nA pelican on the pier.\n' });
  const uris = async (conn: Connected) => (await listAll(conn, 'resources/list', 'resources')).items.map((r) => r.uri as string);

  test('written by this Node\'s driver, served warm by the other, changed there, and served warm back here', async () => {
    const first = await connect([root, '--db', db]);
    let firstUris: string[];
    let firstDriver: string;
    try {
      firstUris = await uris(first);
      assert.deepEqual(await searchFinds(first, 'pelican'), ['docs/b.md']);
      firstDriver = driverOf(first);
      await waitFor(() => /indexed \d+ entries/.test(first.stderr()), 30_000, 'the cold scan to end');
    } finally {
      await first.close();
    }

    const other = await connect([root, '--db', db], { node: OTHER_NODE! });
    try {
      assert.notEqual(driverOf(other), firstDriver, 'FOLDER_MCP_OTHER_NODE runs the same driver: nothing crosses');
      assert.deepEqual(await uris(other), firstUris);
      assert.deepEqual(await searchFinds(other, 'pelican'), ['docs/b.md'], 'the content index written by the first driver');
      assert.doesNotMatch(other.stderr(), /indexed \d+ entries|unusable|rebuild/, 'the other driver did not open the index warm');
      writeTree(root, { 'docs/c.md': 'A walrus on the beach.\n' });
      await waitFor(async () => ((await uris(other)).includes(pathToFileURL(join(root, 'docs', 'c.md')).href) ? true : undefined), 30_000, 'c.md listed');
      assert.deepEqual(await searchFinds(other, 'walrus'), ['docs/c.md']);
    } finally {
      await other.close();
    }

    const again = await connect([root, '--db', db]);
    try {
      assert.equal(driverOf(again), firstDriver);
      assert.ok((await uris(again)).includes(pathToFileURL(join(root, 'docs', 'c.md')).href));
      assert.deepEqual(await searchFinds(again, 'walrus'), ['docs/c.md'], 'the content index written by the other driver');
      assert.doesNotMatch(again.stderr(), /indexed \d+ entries|unusable|rebuild/);
    } finally {
      await again.close();
    }
  });
});
