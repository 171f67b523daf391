// Warm starts check the index against the disk with a walk (issue 22): what
// changed while no server ran is found however it was made, including the
// changes the old parcel snapshots missed (and kept missing on every later
// run): a folder replaced by a file of its name, a file by an empty folder,
// a file grown with its mtime put back.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { diskUris, tempDir, waitFor, writeTree, type LooseResult } from '../helpers.ts';
import { connectWithNotes, listingDiff, listingEqualsDisk } from '../live-helpers.ts';

const TIMEOUT = 30_000;

describe('warm start: the index checked against the disk', () => {
  let root: ReturnType<typeof tempDir>;
  let state: ReturnType<typeof tempDir>;
  let args: string[];
  before(() => {
    root = tempDir();
    state = tempDir('folder-mcp-state-');
    args = ['--db', join(state.path, 'index.db'), root.path];
  });
  after(() => {
    root.cleanup();
    state.cleanup();
  });

  /** A server until it has caught up with the disk and lists what is there; `check` runs before it stops. */
  async function serve(check: (conn: Awaited<ReturnType<typeof connectWithNotes>>) => Promise<void> = async () => {}): Promise<string> {
    const conn = await connectWithNotes(args);
    try {
      await waitFor(() => /index checked against the disk/.test(conn.stderr()), TIMEOUT, 'the catch-up');
      await waitFor(() => listingEqualsDisk(conn, () => diskUris(root.path)), TIMEOUT, 'the index equal to the disk').catch(async (error) => {
        throw new Error(`${(error as Error).message}: ${await listingDiff(conn, () => diskUris(root.path))}`);
      });
      await check(conn);
      return conn.stderr();
    } finally {
      await conn.close();
    }
  }

  const metadata = async (conn: { request(m: string, p: Record<string, unknown>): Promise<LooseResult> }, rel: string, dir = false) =>
    (await conn.request('resources/metadata', { uri: pathToFileURL(join(root.path, rel)).href + (dir ? '/' : '') })).resource as LooseResult;

  test('added, edited, deleted files and folders while no server ran', async () => {
    writeTree(root.path, { 'keep.md': 'keep\n', 'edit.md': 'short\n', 'gone.md': 'bye\n', 'dir/old.ts': 'old\n', 'dir/sub/deep.md': 'd\n' });
    assert.match(await serve(), /indexed \d+ entries/);
    writeFileSync(join(root.path, 'added.md'), 'new\n');
    writeFileSync(join(root.path, 'edit.md'), 'a much longer body now\n');
    rmSync(join(root.path, 'gone.md'));
    rmSync(join(root.path, 'dir'), { recursive: true });
    writeTree(root.path, { 'newdir/inner/x.ts': 'x\n' });
    const second = await serve(async (conn) => assert.equal((await metadata(conn, 'edit.md')).size, 'a much longer body now\n'.length));
    assert.doesNotMatch(second, /indexed \d+ entries/, 'warm: no cold scan');
    // Nothing but the index itself is kept beside it: no record of the tree to go stale.
    assert.deepEqual(readdirSync(state.path).filter((n) => !/^index\.db(-wal|-shm)?$/.test(n)), []);
  });

  test('a folder replaced by a file of its name, a file by an empty folder, a file grown with its mtime put back', async () => {
    writeTree(root.path, { 'docs/old/a.md': 'a\n', 'notes.txt': 'short', 'swap.md': 'was a file\n' });
    await serve();
    rmSync(join(root.path, 'docs/old'), { recursive: true });
    writeFileSync(join(root.path, 'docs/old'), 'now a file\n');
    rmSync(join(root.path, 'swap.md'));
    mkdirSync(join(root.path, 'swap.md'));
    const before = statSync(join(root.path, 'notes.txt'));
    writeFileSync(join(root.path, 'notes.txt'), 'a body that is much longer than before\n');
    utimesSync(join(root.path, 'notes.txt'), before.atime, before.mtime); // as cp -a or touch -r leave it
    await serve(async (conn) => {
      assert.equal((await metadata(conn, 'docs/old')).resourceType, 'document');
      assert.equal((await metadata(conn, 'swap.md', true)).resourceType, 'collection');
      assert.equal((await metadata(conn, 'notes.txt')).size, 'a body that is much longer than before\n'.length);
    });
    // And the next start agrees (the old snapshots kept the error on every later run).
    await serve(async (conn) => assert.equal((await metadata(conn, 'notes.txt')).size, 'a body that is much longer than before\n'.length));
  });

  test('made while one server ran and removed while none did', async () => {
    await serve(async () => {
      writeTree(root.path, { 'made-while-running/x.md': 'x\n' });
    });
    // The listing above was taken before the write; wait for this server to have it, then stop.
    await serve();
    rmSync(join(root.path, 'made-while-running'), { recursive: true });
    await serve();
  });
});
