// Warm starts from the watcher's snapshot (src/live/snapshot.ts): what changed
// while the server was down is found by asking parcel, not by a stat walk,
// and the index ends equal to the disk either way.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { snapshotFile } from '../../src/live/snapshot.ts';
import { diskUris, tempDir, waitFor, writeTree } from '../helpers.ts';
import { connectWithNotes, listingDiff, listingEqualsDisk } from '../live-helpers.ts';

const TIMEOUT = 30_000;

describe('warm start from the watcher snapshot', () => {
  let root: ReturnType<typeof tempDir>;
  let state: ReturnType<typeof tempDir>;
  let db: string;
  let args: string[];
  before(() => {
    root = tempDir();
    state = tempDir('folder-mcp-state-');
    db = join(state.path, 'index.db');
    args = ['--db', db, '--watcher', 'parcel', root.path];
  });
  after(() => {
    root.cleanup();
    state.cleanup();
  });

  /** Serves until the snapshot is kept, then stops. */
  async function serveUntilSnapshot(): Promise<string> {
    const conn = await connectWithNotes(args);
    try {
      await waitFor(() => existsSync(snapshotFile(db, root.path)), TIMEOUT, 'the snapshot to be kept');
      return conn.stderr();
    } finally {
      await conn.close();
    }
  }

  async function restartAndCheck(): Promise<string> {
    const conn = await connectWithNotes(args);
    try {
      await waitFor(() => /index checked against the disk/.test(conn.stderr()), TIMEOUT, 'the catch-up');
      await waitFor(() => listingEqualsDisk(conn, () => diskUris(root.path)), TIMEOUT, 'the index equal to the disk').catch(async (error) => {
        throw new Error(`${(error as Error).message}: ${await listingDiff(conn, () => diskUris(root.path))}`);
      });
      const uri = pathToFileURL(join(root.path, 'edit.md')).href;
      const meta = await conn.request('resources/metadata', { uri });
      assert.equal((meta.resource as { size: number }).size, 'a much longer body now\n'.length);
      assert.doesNotMatch(conn.stderr(), /indexed \d+ entries/, 'warm: no cold scan');
      return conn.stderr();
    } finally {
      await conn.close();
    }
  }

  test('changes made while the server was down are found from the snapshot', async () => {
    writeTree(root.path, { 'keep.md': 'keep\n', 'edit.md': 'short\n', 'gone.md': 'bye\n', 'dir/old.ts': 'old\n', 'dir/sub/deep.md': 'd\n' });
    const first = await serveUntilSnapshot();
    assert.match(first, /indexed \d+ entries/);
    // Nothing but the kept snapshot is left beside the index (no .next, no partial file).
    assert.deepEqual(readdirSync(state.path).filter((name) => name.includes('.snapshot')), [snapshotFile(db, root.path).slice(state.path.length + 1)]);

    // While the server is down: add, modify (size and mtime), delete, delete a folder, add a nested one.
    writeFileSync(join(root.path, 'added.md'), 'new\n');
    writeFileSync(join(root.path, 'edit.md'), 'a much longer body now\n');
    rmSync(join(root.path, 'gone.md'));
    rmSync(join(root.path, 'dir'), { recursive: true });
    writeTree(root.path, { 'newdir/inner/x.ts': 'x\n' });

    const second = await restartAndCheck();
    const m = /index checked against the disk in \d+ ms \((\d+) path\(s\) changed since the watcher's snapshot\)/.exec(second);
    assert.ok(m, `the catch-up came from the snapshot:\n${second}`);
    assert.ok(Number(m[1]) >= 5, `at least the five changes were reported, got ${m?.[1]}`);
  });

  test('without a usable snapshot the roots are diffed, with the same result', async () => {
    writeFileSync(join(root.path, 'edit.md'), 'short\n');
    await serveUntilSnapshot();
    writeFileSync(join(root.path, 'edit.md'), 'a much longer body now\n');
    writeFileSync(join(root.path, 'added-2.md'), 'new\n');
    // Corrupt, as after a disk error: the start diffs instead.
    writeFileSync(snapshotFile(db, root.path), 'not a snapshot');
    const third = await restartAndCheck();
    assert.match(third, /index checked against the disk in \d+ ms\n/);
    assert.doesNotMatch(third, /since the watcher's snapshot/);
  });

  test('a change made while the server ran and undone while it was down (no change to parcel) is caught up too', async () => {
    writeFileSync(join(root.path, 'edit.md'), 'short\n');
    writeFileSync(join(root.path, 'comes-back.md'), 'here\n');
    rmSync(snapshotFile(db, root.path), { force: true }); // the last test's corrupt one: wait for a new one
    await serveUntilSnapshot();
    // The snapshot is kept; while this server runs, one file comes and one goes...
    const conn = await connectWithNotes(args);
    try {
      await waitFor(() => /index checked against the disk/.test(conn.stderr()), TIMEOUT, 'the catch-up');
      writeTree(root.path, { 'made-while-running/x.md': 'x\n' });
      rmSync(join(root.path, 'comes-back.md'));
      await waitFor(() => listingEqualsDisk(conn, () => diskUris(root.path)), TIMEOUT, 'the running server to see both');
    } finally {
      await conn.close();
    }
    // ...and while it is down, both are undone: against the snapshot nothing changed.
    rmSync(join(root.path, 'made-while-running'), { recursive: true });
    writeFileSync(join(root.path, 'comes-back.md'), 'here\n');
    writeFileSync(join(root.path, 'edit.md'), 'a much longer body now\n');
    const after = await restartAndCheck();
    assert.match(after, /changed since the watcher's snapshot/);
  });
});
