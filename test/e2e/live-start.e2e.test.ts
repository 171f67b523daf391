// Start-up and shutdown of the live index: warm restarts, SIGKILL, progress, clean exits.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { bigTree, CLI, connect, diskUris, tempDir, tempTree, waitFor, writeTree } from '../helpers.ts';
import { connectWithNotes, listingDiff, listingEqualsDisk, listedUris } from '../live-helpers.ts';

const TIMEOUT = 30_000;
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

/** A tree of `files` small files, 100 per folder. */
function smallFiles(root: string, files: number): void {
  bigTree(root, files, (i) => `d${Math.floor(i / 100)}/f${i}.txt`, 'a small file\n');
}

describe('warm start', () => {
  const tree = tempTree({});

  test('a restart serves the persisted index and reconciles what changed while the server was down', async () => {
    writeTree(tree.root, { 'keep.md': 'keep\n', 'edit.md': 'short\n', 'gone.md': 'bye\n', 'dir/old.ts': 'old\n' });
    const db = join(tree.state, 'index.db');
    const args = ['--db', db, '--watcher', 'chokidar', tree.root];
    const first = await connectWithNotes(args);
    await waitFor(() => listingEqualsDisk(first, () => diskUris(tree.root)), TIMEOUT, 'the first index');
    // Early pages answer before the scan ends: closed now, the scan would be cut short and the index left cold.
    await waitFor(() => /indexed \d+ entries/.test(first.stderr()), TIMEOUT, 'the cold scan to end');
    await first.close();

    // While the server is down: add, modify (size and mtime), delete, delete a folder.
    writeFileSync(join(tree.root, 'added.md'), 'new\n');
    writeFileSync(join(tree.root, 'edit.md'), 'a much longer body now\n');
    rmSync(join(tree.root, 'gone.md'));
    rmSync(join(tree.root, 'dir'), { recursive: true });
    writeTree(tree.root, { 'newdir/inner/x.ts': 'x\n' });

    const second = await connectWithNotes(args);
    try {
      await waitFor(
        () => listingEqualsDisk(second, () => diskUris(tree.root)),
        TIMEOUT,
        'the reconciled index',
      ).catch(async (error) => {
        throw new Error(`${(error as Error).message}: ${await listingDiff(second, () => diskUris(tree.root))}`);
      });
      const uri = pathToFileURL(join(tree.root, 'edit.md')).href;
      const meta = await second.request('resources/metadata', { uri });
      assert.equal((meta.resource as { size: number }).size, 'a much longer body now\n'.length);
      await waitFor(() => second.notes.listChanged > 0, TIMEOUT, 'list_changed after the reconcile');
      // Warm: no cold scan ran.
      assert.doesNotMatch(second.stderr(), /indexed \d+ entries/);
      assert.match(second.stderr(), /index checked against the disk/);
    } finally {
      await second.close();
    }
  });
});

describe('warm start, one server per request', () => {
  const tree = tempTree({ 'a.md': 'a\n', 'sub/b.md': 'b\n' });

  test("a small folder's first answers wait for the catch-up: a file added between two one-shot clients is found at once", async () => {
    const db = join(tree.state, 'index.db');
    const args = ['--db', db, tree.root];
    const first = await connect(args);
    await first.request('resources/list', {});
    await waitFor(() => /indexed \d+ entries/.test(first.stderr()), TIMEOUT, 'the cold scan to end');
    await first.close();
    for (const name of ['added-1.md', 'added-2.md']) {
      // As the Inspector CLI does: start, ask once as soon as initialized, stop.
      writeFileSync(join(tree.root, 'sub', name), 'new\n');
      const conn = await connect(args);
      try {
        const found = await conn.request('tools/call', { name: 'find', arguments: { glob: `**/${name}` } });
        assert.match(JSON.stringify(found.content), new RegExp(`1 match:\\\\nsub/${name}`));
        const listed = (await conn.request('resources/list', {})).resources as { uri: string }[];
        assert.ok(listed.some((r) => r.uri.endsWith(`/sub/${name}`)), `${name} listed`);
        assert.doesNotMatch(conn.stderr(), /indexed \d+ entries/, 'warm: no cold scan');
      } finally {
        await conn.close();
      }
    }
  });
});

describe('crash safety', () => {
  // Big enough that a scan outlasts the kill trigger and the progress request many times over
  // (each test checks that rather than assuming it), small enough to write quickly.
  const tree = tempTree((root) => smallFiles(root, 10_000));

  test('a server killed (SIGKILL) during its first scan starts consistent next time', async () => {
    const db = join(tree.state, 'index.db');
    const child = spawn(process.execPath, [CLI, '--db', db, '--watcher', 'none', tree.root], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.stdin.write(`${JSON.stringify(INIT)}\n`);
    // Kill as soon as the scan has written something, long before 10,000 entries are in.
    await waitFor(() => existsSync(`${db}-wal`) || /indexed/.test(stderr), TIMEOUT, 'the scan to start writing');
    child.kill('SIGKILL');
    await exited;
    const killedMidScan = !/indexed \d+ entries/.test(stderr);
    writeFileSync(join(tree.root, 'after-kill.txt'), 'late\n');

    const conn = await connectWithNotes(['--db', db, '--watcher', 'none', tree.root]);
    try {
      const uris = await listedUris(conn);
      assert.deepEqual(uris, diskUris(tree.root));
      assert.ok(killedMidScan, 'the first run finished its scan before the kill: the tree is too small for this test');
      // The first run never marked its scan complete, so this one scanned cold, from scratch
      // (10,000 files, 100 folders, the root and the file written after the kill). Pages come
      // during the scan, so the listing may be whole before the scan's last word is logged.
      await waitFor(() => /indexed 10102 entries/.test(conn.stderr()), TIMEOUT, 'the cold scan to end').catch(() => {
        assert.match(conn.stderr(), /indexed 10102 entries/);
      });
      assert.doesNotMatch(conn.stderr(), /in use by another/, "the dead process's lock was taken over: this is the --db file, not memory");
    } finally {
      await conn.close();
    }
  });

  test('a server killed (SIGKILL) while applying a burst starts consistent next time', async () => {
    const db = join(tree.state, 'index.db'); // complete now: the previous test's restart finished its scan
    const child = spawn(process.execPath, [CLI, '--db', db, '--watcher', 'dirs', tree.root], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.stdin.write(`${JSON.stringify(INIT)}\n`);
    await waitFor(() => stderr.includes('watcher: dirs'), TIMEOUT, 'the watcher to start');
    const burst = join(tree.root, 'burst');
    mkdirSync(burst);
    for (let i = 0; i < 3000; i++) {
      writeFileSync(join(burst, `b${i}.txt`), `${i}\n`);
      if (i === 1500) child.kill('SIGKILL'); // while batches of the first half are being written
    }
    rmSync(join(tree.root, 'd0'), { recursive: true }); // and a deletion the dead server never saw
    await exited;

    const conn = await connectWithNotes(['--db', db, '--watcher', 'none', tree.root]);
    try {
      await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the start-up diff');
      assert.doesNotMatch(conn.stderr(), /indexed \d+ entries/, 'the index should have been warm');
      assert.deepEqual(await listedUris(conn), diskUris(tree.root));
    } finally {
      await conn.close();
    }
  });

  test('a request with a progress token hears how the cold scan goes', async () => {
    const db = join(tree.state, 'progress.db');
    const conn = await connectWithNotes(['--db', db, '--watcher', 'none', tree.root]);
    try {
      const progress: number[] = [];
      // initialize was answered at once, long before 10,000 entries are indexed (checked, not assumed).
      const scanDoneBeforeRequest = /indexed \d+ entries/.test(conn.stderr());
      const result = await conn.request('resources/list', {}, { onprogress: (p) => progress.push(p.progress), timeout: TIMEOUT });
      assert.ok(Array.isArray((result as { resources?: unknown }).resources));
      assert.equal(scanDoneBeforeRequest, false, 'the scan ended before the request: the tree is too small for this test');
      assert.ok(progress.length > 0, 'no progress notification');
      assert.deepEqual([...progress].sort((a, b) => a - b), progress, 'progress went backwards');
    } finally {
      await conn.close();
    }
  });
});

describe('shutdown', () => {
  const tree = tempTree({ 'a.md': 'a\n', 'b/c.md': 'c\n' });

  for (const how of ['stdin closes', 'SIGTERM'] as const) {
    for (const backend of ['chokidar', 'dirs', 'poll'] as const) {
      test(`${how} (--watcher ${backend}): exits 0, stdout is JSON-RPC only, the database closes cleanly`, async () => {
        const db = join(tree.state, `${backend}-${how.replace(' ', '-')}.db`);
        const child = spawn(process.execPath, [CLI, '--db', db, '--watcher', backend, tree.root], {
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
        child.stdin.write(`${JSON.stringify(INIT)}\n`);
        await waitFor(() => stderr.includes(`watcher: ${backend}`), TIMEOUT, 'the watcher to start');
        // A change in flight while shutting down must not write after the close.
        writeFileSync(join(tree.root, `late-${backend}.md`), 'late\n');
        if (how === 'SIGTERM') child.kill('SIGTERM');
        else child.stdin.end();
        const code = await waitFor(() => exited.then((c) => ({ c })), TIMEOUT, 'the server to exit');
        assert.equal(code.c, 0, stderr);
        for (const line of stdout.split('\n').filter(Boolean)) assert.equal(JSON.parse(line).jsonrpc, '2.0');
        assert.doesNotMatch(stderr, /error|failed|warn/i);
        // A clean close checkpoints and removes the WAL: the next open is warm.
        assert.equal(existsSync(`${db}-wal`), false, 'WAL left behind');
      });
    }
  }
});

describe('--watcher auto', () => {
  // dirs at every size (src/watch/choose.ts): chokidar no longer runs on small trees.
  for (const files of [5, 1500]) {
    test(`${files} files: runs dirs, says so, and sees changes`, async () => {
      const root = tempDir();
      try {
        smallFiles(root.path, files);
        const conn = await connectWithNotes(['--db', ':memory:', root.path]);
        try {
          await waitFor(() => /watcher: \w+ \(auto\)/.test(conn.stderr()), TIMEOUT, 'the watcher line');
          assert.match(conn.stderr(), /watcher: dirs \(auto\), ready in/);
          writeFileSync(join(root.path, 'd0', 'new.txt'), 'new\n');
          await waitFor(() => listingEqualsDisk(conn, () => diskUris(root.path)), TIMEOUT, 'the new file');
        } finally {
          await conn.close();
        }
      } finally {
        root.cleanup();
      }
    });
  }
});
