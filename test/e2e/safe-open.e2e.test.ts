// A folder that changes under the server (issue 11, items 1 and 2): a folder
// swapped for a symlink to an outside folder, a file replaced by a FIFO. The
// real server over stdio, real links and FIFOs, every watcher backend and a
// warm start. The oracle: no response ever carries the outside content, and
// a FIFO never stalls the server.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { connect, tempDir, waitFor, type Connected, type LooseResult } from '../helpers.ts';
import { listedUris } from '../live-helpers.ts';

const SECRET = 'OUTSIDE-SECRET-7f3a';
const CANARY = 'FOLDER_MCP_CANARY_VALUE_91c2';
const TIMEOUT = 30_000;

/** A served root with `sub/s.txt` and `proc/environ` indexed, and an outside folder holding the secret. */
function makeFolders() {
  const dir = tempDir();
  const base = realpathSync(dir.path);
  const root = join(base, 'root');
  const outside = join(base, 'outside');
  mkdirSync(join(root, 'sub'), { recursive: true });
  mkdirSync(join(root, 'proc'));
  mkdirSync(outside);
  writeFileSync(join(root, 'sub/s.txt'), 'inside\n');
  writeFileSync(join(root, 'proc/environ'), 'inside environ\n');
  writeFileSync(join(root, 'top.txt'), 'top\n');
  writeFileSync(join(outside, 's.txt'), `${SECRET}\n`);
  // The names here need no encoding: the root's URI plus the relative path.
  const uriOf = (rel: string) => `${pathToFileURL(root).href}/${rel}`;
  /** `sub` becomes a link to the outside folder, `proc` a link to /proc/self (the server's own environment). */
  const swap = () => {
    // Links made first and renamed into place: each swap is one atomic rename, as fast as a checkout's.
    symlinkSync(outside, join(root, '.sub.new'));
    symlinkSync('/proc/self', join(root, '.proc.new'));
    renameSync(join(root, 'sub'), join(base, 'sub.old'));
    renameSync(join(root, '.sub.new'), join(root, 'sub'));
    renameSync(join(root, 'proc'), join(base, 'proc.old'));
    renameSync(join(root, '.proc.new'), join(root, 'proc'));
  };
  return { dir, base, root, outside, uriOf, swap };
}

/** Every way a client can get file content, each answer (or error) as text. */
async function readEverything(conn: Connected, uriOf: (rel: string) => string): Promise<string> {
  const answers: string[] = [];
  const attempt = async (run: () => Promise<unknown>) => {
    try {
      answers.push(JSON.stringify(await run()));
    } catch (error) {
      answers.push(`error: ${(error as Error).message}`);
    }
  };
  for (const rel of ['sub/s.txt', 'proc/environ']) {
    await attempt(() => conn.request('resources/read', { uri: uriOf(rel) }));
    await attempt(() => conn.client.callTool({ name: 'read', arguments: { uri: rel } }));
    await attempt(() => conn.client.callTool({ name: 'read', arguments: { uri: uriOf(rel) } }));
  }
  for (const rel of ['', 'sub/', 'proc/']) {
    await attempt(() => conn.request('resources/read', { uri: uriOf(rel) }));
    await attempt(() => conn.client.callTool({ name: 'read', arguments: { uri: uriOf(rel) } }));
  }
  await attempt(() => conn.client.callTool({ name: 'search', arguments: { query: '7f3a' } }));
  return answers.join('\n');
}

function assertNothingOutside(answers: string, when: string): void {
  assert.ok(!answers.includes(SECRET), `${when}: the outside file's content was served:\n${answers.slice(0, 2000)}`);
  assert.ok(!answers.includes(CANARY), `${when}: the server's environment was served`);
}

/** Listed URIs beneath the swapped folders: none once the swap is applied (not even a name the links lead to). */
async function beneathSwapped(conn: Connected, uriOf: (rel: string) => string): Promise<string[]> {
  return (await listedUris(conn)).filter((uri) => uri.startsWith(uriOf('sub/')) || uri.startsWith(uriOf('proc/')));
}

/** The index no longer names anything the swap replaced: the watcher (or the start-up diff) has applied it. */
async function swapApplied(conn: Connected, uriOf: (rel: string) => string): Promise<boolean> {
  return (await beneathSwapped(conn, uriOf)).length === 0;
}

/**
 * Reads everything, again and again, while the index catches up with the
 * swap (until `swapApplied`, when `catchesUp`) and for `afterMs` more: the
 * window where the index and the disk disagree, then the settled state.
 */
async function readWhileCatchingUp(conn: Connected, uriOf: (rel: string) => string, when: string, catchesUp: boolean, afterMs = 300): Promise<void> {
  const deadline = Date.now() + TIMEOUT;
  while (catchesUp && !(await swapApplied(conn, uriOf))) {
    assertNothingOutside(await readEverything(conn, uriOf), `${when}, before the index caught up`);
    if (Date.now() > deadline) {
      const listed = await beneathSwapped(conn, uriOf);
      throw new Error(`${when}: the index still names ${listed.join(', ')} after ${TIMEOUT} ms; the server's stderr:\n${conn.stderr()}`);
    }
  }
  const until = Date.now() + afterMs;
  do assertNothingOutside(await readEverything(conn, uriOf), catchesUp ? `${when}, after the index caught up` : when);
  while (Date.now() < until);
  // And nothing came back meanwhile (a path beneath a swapped folder, looked at through its link).
  if (catchesUp) assert.deepEqual(await beneathSwapped(conn, uriOf), [], `${when}: listed again beneath a swapped folder`);
}

async function start(args: string[]): Promise<Connected> {
  return connect(args, { env: { FOLDER_MCP_TEST_CANARY: CANARY } });
}

/** The index is ready and serves the inside content. */
async function ready(conn: Connected, uriOf: (rel: string) => string): Promise<void> {
  const result = await conn.request('resources/read', { uri: uriOf('sub/s.txt') });
  assert.equal((result.contents as LooseResult[])[0]!.text, 'inside\n');
}

describe('a folder swapped for a symlink never leads a read outside', () => {
  for (const watcher of ['none', 'poll', 'chokidar', 'dirs']) {
    test(`--watcher ${watcher}: at once after the swap and while the watcher catches up`, async () => {
      const f = makeFolders();
      // Poll every 200 ms, not the default 2 s: what matters is what a poll does with the swap, not how long it waits.
      const poll = watcher === 'poll' ? ['--poll-interval', '200'] : [];
      const conn = await start(['--db', ':memory:', '--watcher', watcher, ...poll, f.root]);
      try {
        await ready(conn, f.uriOf);
        if (watcher !== 'none') await waitFor(() => conn.stderr().includes(`watcher: ${watcher}`), TIMEOUT, 'the watcher');
        f.swap();
        // At once: the index still names sub/s.txt; the disk no longer matches it.
        assertNothingOutside(await readEverything(conn, f.uriOf), 'at once');
        // And while the watcher sees the swap, and after (none never does: its index keeps naming the old paths).
        await readWhileCatchingUp(conn, f.uriOf, 'after the swap', watcher !== 'none');
      } finally {
        await conn.close();
        f.dir.cleanup();
      }
    });
  }

  test('warm start: the index from before the swap is served at once, and still nothing outside is read', async () => {
    const f = makeFolders();
    const db = join(f.base, 'index.db');
    const first = await start(['--db', db, '--watcher', 'none', f.root]);
    try {
      await ready(first, f.uriOf);
      // The content index holds the inside text; let it finish so the warm start has it too.
      await waitFor(async () => JSON.stringify(await first.client.callTool({ name: 'search', arguments: { query: 'inside' } })).includes('s.txt'), TIMEOUT, 'the content index');
    } finally {
      await first.close();
    }
    f.swap();
    const second = await start(['--db', db, '--watcher', 'dirs', f.root]);
    try {
      assertNothingOutside(await readEverything(second, f.uriOf), 'warm start, at once');
      await readWhileCatchingUp(second, f.uriOf, 'warm start', true);
    } finally {
      await second.close();
      f.dir.cleanup();
    }
  });
});

describe('a special file never blocks the server', () => {
  let f: ReturnType<typeof makeFolders>;
  let conn: Connected;
  before(async () => {
    f = makeFolders();
    writeFileSync(join(f.root, 'pipe.txt'), 'a file for now\n');
    conn = await start(['--db', ':memory:', '--watcher', 'none', '--no-search', f.root]);
    await ready(conn, f.uriOf);
    // After the start-up catch-up (which would see the swap, and drop the FIFO), so the index still names a file.
    await waitFor(() => conn.stderr().includes('index checked against the disk'), TIMEOUT, 'the catch-up');
    rmSync(join(f.root, 'pipe.txt'));
    execFileSync('mkfifo', [join(f.root, 'pipe.txt')]);
  });
  after(async () => {
    await conn.close();
    f.dir.cleanup();
  });

  test('reads of a file replaced by a FIFO fail with a clear error, and reads of other files go on meanwhile', async () => {
    // More concurrent FIFO reads than libuv has pool threads (4): a blocking open would take them all.
    const fifoReads = Array.from({ length: 6 }, () => conn.request('resources/read', { uri: f.uriOf('pipe.txt') }).then(
      () => 'served',
      (error: Error) => error.message,
    ));
    const toolRead = conn.client.callTool({ name: 'read', arguments: { uri: 'pipe.txt' } });
    const other = conn.request('resources/read', { uri: f.uriOf('top.txt') });
    assert.equal(((await other).contents as LooseResult[])[0]!.text, 'top\n');
    for (const message of await Promise.all(fifoReads)) assert.match(message, /FIFO/);
    const tool = await toolRead;
    assert.equal(tool.isError, true);
    assert.match(JSON.stringify(tool.content), /FIFO/);
    // The collection read skips it and still serves its siblings.
    const collection = await conn.request('resources/read', { uri: f.uriOf('') });
    assert.ok((collection.contents as LooseResult[]).some((item) => item.text === 'top\n'));
  });
});

describe('the read tool on a file that grows while it is read', () => {
  test('never fails with "grew past the read limit": a window reads the file as it was opened', async () => {
    const f = makeFolders();
    const path = join(f.root, 'growing.bin');
    // Binary and just under the limit: the window path reads it whole, which is where growth used to fail.
    writeFileSync(path, Buffer.alloc(4000, 0));
    const conn = await start(['--db', ':memory:', '--watcher', 'none', '--no-search', '--max-read-bytes', '4096', f.root]);
    const writer = spawn(process.execPath, [
      '-e',
      `const fs=require('fs');const p=${JSON.stringify(path)};for(;;){fs.truncateSync(p,4000);for(let i=0;i<40;i++)fs.appendFileSync(p,Buffer.alloc(8,1));}`,
    ]);
    try {
      await ready(conn, f.uriOf);
      const failures: string[] = [];
      for (let i = 0; i < 200; i++) {
        const result = await conn.client.callTool({ name: 'read', arguments: { uri: 'growing.bin', length: 100 } });
        if (result.isError) failures.push(JSON.stringify(result.content));
      }
      assert.deepEqual(failures.filter((text) => /grew|try again/.test(text)), []);
    } finally {
      writer.kill();
      await conn.close();
      f.dir.cleanup();
    }
  });
});
