// A whole-tree walk that meets a folder made unreadable with no event seen
// for it: the folder's row stays, its entries stay listed as last seen, and
// once it is readable again the listing catches up with what changed in it
// meanwhile. Two walks no event starts: the poll watcher's (the same diff of
// a whole root, Reconciler.tree, as the 60 s safety diff of the other
// backends, which no option shortens; `--poll-interval` is the user-facing
// one that paces this one), and the warm start's verifying walk after the
// folder was locked while the server was down (the default watcher).
// Real folders, the real server, run as a user the modes apply to (as root,
// nobody: root reads a folder of mode 000); waits are for events.
import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToUri } from '../../src/uri.ts';
import { connect, diskUris, listAll, shareWith, tempDir, unprivilegedUser, unreadableFoldersSkip, waitFor, type Connected } from '../helpers.ts';
import { listingDiff, listingEqualsDisk } from '../live-helpers.ts';

/** A ceiling for what a loaded machine needs, far under the 60 s periodic diff. */
const TIMEOUT = 30_000;
const linux = process.platform === 'linux';
const user = unprivilegedUser();

/** Every listed URI with its size (folders: none). */
async function listing(conn: Connected): Promise<Map<string, number | undefined>> {
  const { items } = await listAll(conn, 'resources/list', 'resources');
  return new Map(items.map((item) => [item.uri as string, item.size as number | undefined]));
}

/** The listed entries at or under the folder `uri`. */
function under(list: Map<string, number | undefined>, uri: string): [string, number | undefined][] {
  return [...list].filter(([u]) => u.startsWith(uri)).sort(([a], [b]) => (a < b ? -1 : 1));
}

/**
 * A served tree with `locked/` holding a file, a subfolder and a folder
 * beneath that; the server runs as `user`, its index in `dir`.
 */
function lockableTree(prefix: string) {
  const dir = tempDir(prefix);
  const root = join(dir.path, 'tree');
  const locked = join(root, 'locked');
  const servers: Connected[] = [];
  before(() => {
    shareWith(dir.path, user);
    mkdirSync(join(locked, 'sub/deep'), { recursive: true });
    mkdirSync(join(root, 'open'));
    writeFileSync(join(locked, 'a.txt'), 'a\n');
    writeFileSync(join(locked, 'sub/b.txt'), 'b\n');
    writeFileSync(join(locked, 'sub/deep/c.txt'), 'c\n');
    writeFileSync(join(root, 'open/o.txt'), 'o\n');
  });
  after(async () => {
    chmodSync(locked, 0o755);
    for (const conn of servers) await conn.close();
    dir.cleanup();
  });
  const start = async (args: string[]) => {
    const conn = await connect([...args, '--db', join(dir.path, 'index.db'), '--no-search', root], user ? { user } : {});
    servers.push(conn);
    await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the start-up catch-up');
    return conn;
  };
  /** Changes inside `locked` the server cannot see (the test runs as root, or owns it): a file grown, one added, one removed. */
  const changeInside = () => {
    appendFileSync(join(locked, 'a.txt'), 'grown\n');
    writeFileSync(join(locked, 'sub/new.txt'), 'new\n');
    rmSync(join(locked, 'sub/deep/c.txt'));
  };
  return { root, locked, start, changeInside, lockedUri: pathToUri(locked, true) };
}

/** The warnings that `dir` cannot be read (not the watcher's, that it cannot be watched): one per lock, however many walks meet it. */
function warningsAbout(conn: Connected, dir: string): string[] {
  return conn.stderr().split('\n').filter((line) => line.startsWith('folder-mcp warn: ') && / directory /.test(line) && line.includes(dir));
}

/** Waits for the listing to equal the disk, saying what differs if it does not. */
async function catchesUp(conn: Connected, root: string, what: string): Promise<void> {
  try {
    await waitFor(() => listingEqualsDisk(conn, () => diskUris(root)), TIMEOUT, what);
  } catch (error) {
    throw new Error(`${(error as Error).message}: ${await listingDiff(conn, () => diskUris(root))}\n${conn.stderr()}`);
  }
}

for (const mode of [0o000, 0o444] as const) {
  const shown = mode === 0 ? '000' : 'r--';
  describe(`the poll walk meets a folder made ${shown} (no event for it)`, { skip: linux ? unreadableFoldersSkip() : 'the watchers are tested on Linux' }, () => {
    const tree = lockableTree('folder-mcp-walk-locked-');

    test('its row and entries stay as last seen through later walks; once readable, the listing is the disk', async () => {
      const conn = await tree.start(['--watcher', 'poll', '--poll-interval', '200']);
      const seen = under(await listing(conn), tree.lockedUri);
      assert.equal(seen.length, 6, `locked/, a.txt, sub/, sub/b.txt, sub/deep/, sub/deep/c.txt: ${JSON.stringify(seen)}`);
      chmodSync(tree.locked, mode);
      tree.changeInside();
      // Files made after the lock, one after the other: the walk that lists the second started after the first
      // was listed, so after the lock, and read locked/ after the root (the tree is written in one transaction).
      for (const name of ['later1.txt', 'later2.txt']) {
        writeFileSync(join(tree.root, 'open', name), `${name}\n`);
        await waitFor(async () => (await listing(conn)).has(pathToUri(join(tree.root, 'open', name), false)), TIMEOUT, `a walk to list open/${name}`);
      }
      assert.deepEqual(under(await listing(conn), tree.lockedUri), seen, 'locked/ and everything in it listed as last seen');
      assert.ok(!conn.stderr().includes(`directory ${tree.locked} is readable again`), conn.stderr());
      // Said once (the walks meet it every 200 ms here, every 2 s by default), not at each walk.
      assert.equal(warningsAbout(conn, tree.locked).length, 1, conn.stderr());
      assert.ok(conn.stderr().includes(`cannot read directory ${tree.locked}`), conn.stderr());
      chmodSync(tree.locked, 0o755); // moves its ctime only
      await catchesUp(conn, tree.root, 'the listing to equal the disk once locked/ is readable');
      const now = new Map(under(await listing(conn), tree.lockedUri));
      assert.equal(now.get(pathToUri(join(tree.locked, 'a.txt'), false)), 8, 'a.txt at its new size');
    });
  });
}

describe('the warm start walk meets a folder locked while the server was down (--watcher dirs)', { skip: linux ? unreadableFoldersSkip() : 'the watchers are tested on Linux' }, () => {
  const tree = lockableTree('folder-mcp-warm-locked-');

  test('its row and entries stay as last seen; once readable, the listing is the disk', async () => {
    let conn = await tree.start(['--watcher', 'dirs']);
    const seen = under(await listing(conn), tree.lockedUri);
    assert.equal(seen.length, 6, JSON.stringify(seen));
    await conn.close();
    // Behind the server's back: no watcher runs, the warm start's walk is the only look.
    chmodSync(tree.locked, 0o000);
    tree.changeInside();
    conn = await tree.start(['--watcher', 'dirs']);
    // The verifying walk is done once 'index checked against the disk' is logged (start waits for it).
    assert.deepEqual(under(await listing(conn), tree.lockedUri), seen, 'locked/ and everything in it listed as last seen');
    assert.ok(conn.stderr().includes(`cannot read directory ${tree.locked}`), conn.stderr());
    assert.equal(warningsAbout(conn, tree.locked).length, 1, conn.stderr());
    chmodSync(tree.locked, 0o755);
    await catchesUp(conn, tree.root, 'the listing to equal the disk once locked/ is readable');
    assert.equal(new Map(under(await listing(conn), tree.lockedUri)).get(pathToUri(join(tree.locked, 'a.txt'), false)), 8);
  });
});
