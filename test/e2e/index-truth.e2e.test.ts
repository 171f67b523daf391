// Issue 34: what an independent fuzzer found the index holding apart from
// the disk, each as a test that failed before the fix. Real temp folders,
// real watchers, the real server; waits are for events, never for time.
import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, linkSync, mkdirSync, renameSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BACKEND_STARTERS } from '../../src/watch/choose.ts';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { liveSync } from '../scan-helpers.ts';
import { ScanChangeRecord } from '../../src/watch/scan-changes.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot, pathToUri } from '../../src/uri.ts';
import { connect, diskUris, serveTree, shareWith, tempDir, unprivilegedUser, unreadableFoldersSkip, waitFor, type Connected } from '../helpers.ts';
import { connectWithNotes, listingDiff, listingEqualsDisk, type Notes } from '../live-helpers.ts';

/** A ceiling for what a loaded machine needs, far under the 60 s periodic diff that would hide a miss. */
const TIMEOUT = 30_000;
const linux = process.platform === 'linux';

for (const backend of ['dirs', 'chokidar', 'poll'] as const) {
  describe(`hard links (--watcher ${backend})`, { skip: linux ? false : 'the watchers are tested on Linux' }, () => {
    // Made before the server starts: the scan indexes every name, and no event names the other names later.
    const tree = serveTree(
      (root) => {
        mkdirSync(join(root, 'd'));
        writeFileSync(join(root, 'a.txt'), 'hello\n');
        linkSync(join(root, 'a.txt'), join(root, 'b.txt'));
        linkSync(join(root, 'a.txt'), join(root, 'd/c.txt'));
      },
      ({ root }) => ['--db', ':memory:', '--watcher', backend, '--poll-interval', '200', '--no-search', root],
      { connect: connectWithNotes },
    );
    let conn: Connected & { notes: Notes };
    const size = async (rel: string) => ((await conn.request('resources/metadata', { uri: tree.uriOf(rel) })).resource as { size?: number }).size;
    before(async () => {
      ({ conn } = tree);
      await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the start-up catch-up');
    });

    test('a write through one name re-lists every other name at the new size, and updated fires for each', async () => {
      for (const rel of ['b.txt', 'd/c.txt']) await conn.subscribe(tree.uriOf(rel));
      conn.notes.reset();
      appendFileSync(join(tree.root, 'a.txt'), '12345');
      for (const rel of ['a.txt', 'b.txt', 'd/c.txt']) {
        await waitFor(async () => (await size(rel)) === 11, TIMEOUT, `${rel} listed at its new size`);
      }
      for (const rel of ['b.txt', 'd/c.txt']) {
        await waitFor(() => conn.notes.updated.some((n) => n.uri === tree.uriOf(rel)), TIMEOUT, `updated for ${rel}`);
      }
    });
  });
}

const user = unprivilegedUser();

for (const backend of ['dirs', 'chokidar'] as const) {
  describe(`a folder unreadable while it changes (--watcher ${backend})`, { skip: linux ? unreadableFoldersSkip() : 'the watchers are tested on Linux' }, () => {
    // The server runs as a user the modes apply to (as root, nobody: root reads a folder of mode 000).
    const dir = tempDir('folder-mcp-locked-');
    const root = join(dir.path, 'tree');
    const args = ['--db', join(dir.path, 'index.db'), '--watcher', backend, '--no-search', root];
    const servers: Connected[] = [];
    const start = async () => {
      const conn = await connect(args, user ? { user } : {});
      servers.push(conn);
      await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the start-up catch-up');
      return conn;
    };
    before(() => {
      shareWith(dir.path, user);
      mkdirSync(join(root, 'd1/x'), { recursive: true });
      mkdirSync(join(root, 'y'));
      writeFileSync(join(root, 'd1/x/b.txt'), 'b\n');
      writeFileSync(join(root, 'y/a.txt'), 'a\n');
    });
    after(async () => {
      chmodSync(join(root, 'd1'), 0o755);
      for (const conn of servers) await conn.close();
      dir.cleanup();
    });

    test('what changed in it is listed once it is readable again, across a restart too', async () => {
      const disk = () => diskUris(root);
      let conn = await start();
      // Locked, then d1/x and y swapped through a third name: whenever the server looks, d1 cannot be read.
      chmodSync(join(root, 'd1'), 0o000);
      renameSync(join(root, 'd1/x'), join(root, 'swap'));
      renameSync(join(root, 'y'), join(root, 'd1/x'));
      renameSync(join(root, 'swap'), join(root, 'y'));
      // d1's mtime moved: the server lists it again, and cannot.
      await waitFor(() => conn.stderr().includes(`cannot read directory ${join(root, 'd1')}`), TIMEOUT, 'the server to meet the lock');
      const metadata = await conn.request('resources/metadata', { uri: pathToUri(join(root, 'd1'), true) });
      assert.ok(metadata.resource, 'the locked folder is still listed');
      // Restarted while locked (its warm start cannot read d1 either), so nothing but the permission changes after.
      await conn.close();
      conn = await start();
      chmodSync(join(root, 'd1'), 0o755); // moves d1's ctime only: no entry in it changes
      try {
        await waitFor(() => listingEqualsDisk(conn, disk), TIMEOUT, 'the listing to equal the disk once d1 is readable');
      } catch (error) {
        throw new Error(`${(error as Error).message}: ${await listingDiff(conn, disk)}\n${conn.stderr()}`);
      }
    });
  });
}

for (const backend of ['dirs', 'chokidar'] as const) {
  describe(`a hard link written through a name in an unreadable folder (--watcher ${backend})`, { skip: linux ? unreadableFoldersSkip() : 'the watchers are tested on Linux' }, () => {
    // Found by the project's fuzzer (seed 1069, dirs): d/c.txt and e/c.txt are one file, d is locked
    // when the server starts, and the file grows through d/c.txt. No event names e/c.txt; once d is
    // readable again, the server finds d/c.txt, and must look at its other names too.
    const dir = tempDir('folder-mcp-locked-link-');
    const root = join(dir.path, 'tree');
    const servers: Connected[] = [];
    before(() => {
      shareWith(dir.path, user);
      mkdirSync(join(root, 'd'), { recursive: true });
      mkdirSync(join(root, 'e'));
      writeFileSync(join(root, 'd/c.txt'), 'hello\n');
      linkSync(join(root, 'd/c.txt'), join(root, 'e/c.txt'));
      chmodSync(join(root, 'd'), 0o000);
    });
    after(async () => {
      chmodSync(join(root, 'd'), 0o755);
      for (const conn of servers) await conn.close();
      dir.cleanup();
    });

    test('once the folder is readable, the other name is listed at the new size', async () => {
      const conn = await connect(['--db', join(dir.path, 'index.db'), '--watcher', backend, '--no-search', root], user ? { user } : {});
      servers.push(conn);
      await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the start-up catch-up');
      const size = async () => ((await conn.request('resources/metadata', { uri: pathToUri(join(root, 'e/c.txt'), false) })).resource as { size?: number }).size;
      assert.equal(await size(), 6);
      appendFileSync(join(root, 'd/c.txt'), '123'); // as root, through the name the server cannot see
      chmodSync(join(root, 'd'), 0o755);
      await waitFor(async () => (await size()) === 9, TIMEOUT, 'e/c.txt listed at its new size');
      const disk = () => diskUris(root);
      await waitFor(() => listingEqualsDisk(conn, disk), TIMEOUT, 'the listing to equal the disk');
    });
  });
}

describe('a hard link truncated through its name in a folder made unreadable after the link (--watcher dirs)', { skip: linux ? unreadableFoldersSkip() : 'the watchers are tested on Linux' }, () => {
  // Issue 44 (the independent fuzzer, dirs): d1/d linked as d2/hl_c.md, d2 made 000, the file truncated to 0
  // through d2/hl_c.md with its mtime put back. d1/d stayed listed at its old size until the periodic diff: the
  // event in d2 cannot be looked at, but the index knows the inode of d2/hl_c.md, so its other names can be.
  const dir = tempDir('folder-mcp-locked-truncate-');
  const root = join(dir.path, 'tree');
  const servers: Connected[] = [];
  before(() => {
    shareWith(dir.path, user);
    mkdirSync(join(root, 'd1'), { recursive: true });
    mkdirSync(join(root, 'd2'));
  });
  after(async () => {
    chmodSync(join(root, 'd2'), 0o755);
    for (const conn of servers) await conn.close();
    dir.cleanup();
  });

  test('the other name is listed at the new size while the folder stays unreadable', async () => {
    const conn = await connect(['--db', join(dir.path, 'index.db'), '--watcher', 'dirs', '--no-search', root], user ? { user } : {});
    servers.push(conn);
    await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the start-up catch-up');
    const size = async (rel: string) => ((await conn.request('resources/metadata', { uri: pathToUri(join(root, rel), false) })).resource as { size?: number } | undefined)?.size;
    writeFileSync(join(root, 'd1/d'), 'x'.repeat(1889));
    await waitFor(async () => (await size('d1/d').catch(() => undefined)) === 1889, TIMEOUT, 'd1/d listed');
    linkSync(join(root, 'd1/d'), join(root, 'd2/hl_c.md'));
    await waitFor(async () => (await size('d2/hl_c.md').catch(() => undefined)) === 1889, TIMEOUT, 'd2/hl_c.md listed');
    chmodSync(join(root, 'd2'), 0o000);
    const before = statSync(join(root, 'd1/d'));
    truncateSync(join(root, 'd2/hl_c.md'), 0); // as root, through the name the server cannot look at now
    utimesSync(join(root, 'd2/hl_c.md'), before.atime, before.mtime);
    await waitFor(async () => (await size('d1/d')) === 0, TIMEOUT, 'd1/d listed at its new size (0)');
  });
});

describe('a folder listable but not searchable (mode r--)', { skip: linux ? unreadableFoldersSkip() : 'the watchers are tested on Linux' }, () => {
  // Its names can be read, nothing else: no entry in it can be stat'ed or read. The index records it as an
  // unreadable folder (its row, its entries unknown: as last seen, none at a cold start), not as an empty one,
  // and lists it again once its mode changes. As empty, giving it back its x bit moved its ctime only, and
  // nothing listed it again until the 60 s safety diff.
  const dir = tempDir('folder-mcp-unsearchable-');
  const root = join(dir.path, 'tree');
  const servers: Connected[] = [];
  before(() => {
    shareWith(dir.path, user);
    mkdirSync(join(root, 'open'), { recursive: true });
    mkdirSync(join(root, 'shut/inner'), { recursive: true });
    writeFileSync(join(root, 'open/a.txt'), 'a\n');
    writeFileSync(join(root, 'shut/b.txt'), 'b\n');
    writeFileSync(join(root, 'shut/inner/c.txt'), 'c\n');
  });
  after(async () => {
    for (const folder of ['shut', 'open']) chmodSync(join(root, folder), 0o755);
    for (const conn of servers) await conn.close();
    dir.cleanup();
  });

  test('r-- at a cold start: the folder listed, nothing in it; all of it once it is searchable again', async () => {
    chmodSync(join(root, 'shut'), 0o444);
    const conn = await connect(['--db', join(dir.path, 'cold.db'), '--watcher', 'dirs', '--no-search', root], user ? { user } : {});
    servers.push(conn);
    await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the start-up catch-up');
    assert.match(conn.stderr(), /skipping unsearchable directory .*shut/);
    const listed = (await conn.request('resources/list', {})).resources as { uri: string }[];
    const under = (rel: string) => listed.filter((r) => r.uri.startsWith(pathToUri(join(root, rel), true)));
    assert.deepEqual(under('shut').map((r) => r.uri), [pathToUri(join(root, 'shut'), true)], 'the folder, and nothing in it');
    assert.equal(under('open').length, 2);
    chmodSync(join(root, 'shut'), 0o755); // its ctime moves, nothing in it does
    try {
      await waitFor(() => listingEqualsDisk(conn, () => diskUris(root)), TIMEOUT, 'the listing to equal the disk once shut is searchable');
    } catch (error) {
      throw new Error(`${(error as Error).message}: ${await listingDiff(conn, () => diskUris(root))}\n${conn.stderr()}`);
    }
  });

  test('made r-- while served: what it held stays listed as last seen, and changes made meanwhile show once it is searchable', async () => {
    const conn = await connect(['--db', join(dir.path, 'live.db'), '--watcher', 'dirs', '--no-search', root], user ? { user } : {});
    servers.push(conn);
    await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the start-up catch-up');
    chmodSync(join(root, 'open'), 0o444);
    writeFileSync(join(root, 'open/new.txt'), 'new\n'); // root writes it; the server cannot stat it
    await waitFor(() => conn.stderr().includes(`cannot read directory ${join(root, 'open')}`), TIMEOUT, 'the server to meet the lock');
    const kept = await conn.request('resources/metadata', { uri: pathToUri(join(root, 'open/a.txt'), false) });
    assert.ok(kept.resource, 'what it held is still listed');
    chmodSync(join(root, 'open'), 0o755);
    try {
      await waitFor(() => listingEqualsDisk(conn, () => diskUris(root)), TIMEOUT, 'the listing to equal the disk once open is searchable again');
    } catch (error) {
      throw new Error(`${(error as Error).message}: ${await listingDiff(conn, () => diskUris(root))}\n${conn.stderr()}`);
    }
  });
});

describe('--watcher none: no look at the disk after the start-up catch-up', () => {
  test('a folder found new at start-up is not walked again later (and the scan watches are released)', async () => {
    const dir = tempDir();
    writeFileSync(join(dir.path, 'a.md'), 'a\n');
    const scanChanges = linux ? new ScanChangeRecord() : undefined;
    const index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [], ...(scanChanges ? { scanObserver: scanChanges } : {}) });
    const sync = liveSync({ index, log: silentLogger, watcher: 'none', starters: BACKEND_STARTERS, ...(scanChanges ? { scanChanges } : {}) });
    try {
      await sync.start();
      assert.equal(scanChanges?.take() ?? null, null, 'the scan watches were taken and closed');
      // A folder that appears in a look the server makes (as the post-scan catch-up, or its own write) ...
      mkdirSync(join(dir.path, 'made'));
      await sync.refresh([join(dir.path, 'made')]);
      assert.ok(index.store.get(pathToUri(join(dir.path, 'made'), true)), 'the folder looked at is indexed');
      // ... is not looked at again: what is made in it later stays out, as everything after start-up does.
      assert.equal(sync.scheduledLooks, 0, 'no look at the disk is scheduled');
    } finally {
      await sync.close();
      index.close();
      dir.cleanup();
    }
  });
});

describe('a change to an ignored file only: no updated for the collection that holds it', { skip: linux ? false : 'the watchers are tested on Linux' }, () => {
  const tree = serveTree(
    { '.gitignore': '*.log\n', 'sub/a.md': 'a\n', 'other/b.md': 'b\n' },
    ({ root }) => ['--db', ':memory:', '--watcher', 'dirs', '--no-search', root],
    { connect: connectWithNotes },
  );
  let conn: Connected & { notes: Notes };
  before(async () => {
    ({ conn } = tree);
    await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the start-up catch-up');
  });

  test('sub/x.log made (sub/ mtime moves): sub/ gets no updated; a listed file made after does get list_changed', async () => {
    await conn.subscribe(tree.uriOf('sub/'));
    conn.notes.reset();
    writeFileSync(join(tree.root, 'sub/x.log'), 'ignored\n');
    // A listed change after it: its list_changed (200 ms quiet) comes after any updated of the same or an
    // earlier commit (100 ms quiet), on the same stream.
    writeFileSync(join(tree.root, 'other/c.md'), 'c\n');
    await waitFor(() => conn.notes.listChanged > 0, TIMEOUT, 'list_changed for other/c.md');
    assert.deepEqual(conn.notes.updated.filter((n) => n.uri === tree.uriOf('sub/')), [], 'no updated for sub/');
    // And a listed change in sub/ still tells it.
    writeFileSync(join(tree.root, 'sub/d.md'), 'd\n');
    await waitFor(() => conn.notes.updated.some((n) => n.uri === tree.uriOf('sub/')), TIMEOUT, 'updated for sub/ after sub/d.md');
  });
});
