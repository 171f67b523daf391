// The Windows lane: run by Node.js for Windows (node.exe) under Wine, by
// `npm run test:windows` (scripts/test-windows.mjs), never by npm test. The
// real v2 SDK client spawns `node.exe dist/cli.js FOLDER` over stdio pipes,
// both Windows processes, and uses the server as Claude Desktop on Windows
// would: a folder given as `C:\...`, URIs `file:///C:/...`, reads, search,
// a PDF's text alternative, the write tools with Windows paths, and the
// watcher (ReadDirectoryChangesW, recursive) seen in resources/list and in
// `updated`. Each test waits for the event it needs, never a fixed sleep.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import assert from 'node:assert/strict';
import { chmodSync, closeSync, constants, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { waitFor } from '../basics.ts';
import { makePdf } from '../fixtures.ts';

const Loose = z.looseObject({});
type Loose = Record<string, unknown>;
/** The repository: the lane runs from it (scripts/test-windows.mjs sets the working folder). */
const CLI = resolve('dist', 'cli.js');
const WAIT_MS = 60_000;

if (process.platform !== 'win32') throw new Error('the Windows lane runs on Node.js for Windows: npm run test:windows');

interface Served {
  client: Client;
  folder: string;
  /** The folder's URI as the server spells it: `file:///C:/...`. */
  uri: string;
  close(): Promise<void>;
}

async function serve(folder: string, extra: string[] = []): Promise<Served> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, ...extra, folder], stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'folder-mcp-windows-lane', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(transport).catch((error: Error) => {
    error.message += `; the server's stderr:\n${stderr}`;
    throw error;
  });
  const real = realpathSync.native(folder);
  const uri = `file:///${real.replaceAll('\\', '/').replace(/^[a-z]:/, (d) => d.toUpperCase())}/`;
  return { client, folder, uri, close: () => client.close() };
}

function request(client: Client, method: string, params: Loose = {}): Promise<Loose> {
  return client.request({ method, params } as never, Loose as never) as Promise<Loose>;
}

async function listUris(client: Client, params: Loose = {}): Promise<string[]> {
  const uris: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await request(client, 'resources/list', { ...params, ...(cursor && { cursor }) });
    for (const item of page.resources as Array<{ uri: string }>) uris.push(item.uri);
    cursor = page.nextCursor as string | undefined;
  } while (cursor);
  return uris;
}

async function callTool(client: Client, name: string, args: Loose): Promise<{ text: string; structured: Loose; isError: boolean }> {
  const result = await request(client, 'tools/call', { name, arguments: args });
  const text = (result.content as Array<{ type: string; text?: string; resource?: { text?: string } }>).map((c) => c.text ?? c.resource?.text ?? '').join('\n');
  return { text, structured: (result.structuredContent ?? {}) as Loose, isError: result.isError === true };
}

/** Waits for `check` (the watcher's event has reached the index): test/basics.ts waitFor, with the lane's ceiling. */
const eventually = (what: string, check: () => Promise<boolean>) => waitFor(check, WAIT_MS, what);

describe('Windows: node.exe dist/cli.js C:\\...', () => {
  let dir: string;
  let served: Served;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'folder-mcp-win-'));
    mkdirSync(join(dir, 'src', 'deep'), { recursive: true });
    writeFileSync(join(dir, 'README.md'), '# Windows lane\nThe quick brown zebrafish.\n');
    writeFileSync(join(dir, 'src', 'main.ts'), 'export const answer = 42;\n');
    writeFileSync(join(dir, 'src', 'deep', 'notes.txt'), 'line one\nline two\n');
    writeFileSync(join(dir, 'report.pdf'), makePdf(['Quarterly figures for the aardvark']));
    served = await serve(dir, ['--write', '--db', ':memory:']);
  });
  after(async () => {
    await served?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('lists every file and folder under file:///C:/... URIs, in URI order', async () => {
    const uris = await listUris(served.client);
    assert.match(served.uri, /^file:\/\/\/[A-Z]:\//);
    assert.deepEqual(uris, [
      served.uri,
      `${served.uri}README.md`,
      `${served.uri}report.pdf`,
      `${served.uri}src/`,
      `${served.uri}src/deep/`,
      `${served.uri}src/deep/notes.txt`,
      `${served.uri}src/main.ts`,
    ]);
    const prefixed = await listUris(served.client, { prefix: `${served.uri}src/` });
    assert.equal(prefixed.length, 4);
  });

  test('reads a file by its URI, by a lower-case drive letter, and not outside the folder', async () => {
    const read = await request(served.client, 'resources/read', { uri: `${served.uri}src/main.ts` });
    assert.equal((read.contents as Array<{ text: string }>)[0]!.text, 'export const answer = 42;\n');
    const lower = served.uri.replace(/^file:\/\/\/([A-Z]):/, (_, d: string) => `file:///${d.toLowerCase()}:`);
    const again = await request(served.client, 'resources/read', { uri: `${lower}src/main.ts` });
    assert.equal((again.contents as Array<{ uri: string }>)[0]!.uri, `${served.uri}src/main.ts`);
    await assert.rejects(request(served.client, 'resources/read', { uri: `${served.uri}..%5C..%5Cwindows%5Cwin.ini` }));
    await assert.rejects(request(served.client, 'resources/read', { uri: `${served.uri}README.md:secret` }));
  });

  test('another case reaches the file as it is spelled on disk: one URI, and a write makes no second name', async () => {
    const read = await request(served.client, 'resources/read', { uri: `${served.uri}SRC/Main.TS` });
    assert.equal((read.contents as Array<{ uri: string }>)[0]!.uri, `${served.uri}src/main.ts`);
    const written = await callTool(served.client, 'write', { path: 'SRC\\MAIN.TS', content: 'export const answer = 43;\n' });
    assert.equal(written.isError, false, written.text);
    assert.deepEqual(readdirSync(join(dir, 'src')).filter((name) => name.toLowerCase() === 'main.ts'), ['main.ts']);
    assert.equal(readFileSync(join(dir, 'src', 'main.ts'), 'utf8'), 'export const answer = 43;\n');
    await eventually('one entry for the file, spelled as on disk', async () => {
      const uris = (await listUris(served.client)).filter((u) => u.toLowerCase().endsWith('/src/main.ts'));
      return uris.length === 1 && uris[0] === `${served.uri}src/main.ts`;
    });
  });

  test('a PDF has its text as a format alternative', async () => {
    const read = await request(served.client, 'resources/read', { uri: `${served.uri}report.pdf` });
    const contents = read.contents as Array<{ mimeType: string; text?: string }>;
    assert.equal(contents[0]!.mimeType, 'application/pdf');
    assert.ok(contents.some((c) => c.mimeType === 'text/plain' && c.text?.includes('aardvark')), JSON.stringify(contents.map((c) => c.mimeType)));
  });

  test('search finds text by content; the read tool takes a Windows path', async () => {
    await eventually('search finds zebrafish', async () => (await callTool(served.client, 'search', { query: 'zebrafish' })).text.includes('README.md'));
    const byPath = await callTool(served.client, 'read', { uri: join(dir, 'src', 'deep', 'notes.txt') });
    assert.equal(byPath.isError, false, byPath.text);
    assert.match(byPath.text, /line two/);
  });

  test('write, edit, mkdir and move with Windows paths; each change is on disk and in the listing', async () => {
    const written = await callTool(served.client, 'write', { path: join(dir, 'src', 'new.txt'), content: 'alpha\r\nbeta\r\n' });
    assert.equal(written.isError, false, written.text);
    assert.equal(readFileSync(join(dir, 'src', 'new.txt'), 'utf8'), 'alpha\r\nbeta\r\n');
    const edited = await callTool(served.client, 'edit', { path: 'src\\new.txt', edits: [{ old_text: 'beta', new_text: 'gamma' }] });
    assert.equal(edited.isError, false, edited.text);
    assert.equal(readFileSync(join(dir, 'src', 'new.txt'), 'utf8'), 'alpha\r\ngamma\r\n');
    const made = await callTool(served.client, 'mkdir', { path: 'src/made/inner' });
    assert.equal(made.isError, false, made.text);
    const moved = await callTool(served.client, 'move', { from: join(dir, 'src', 'new.txt'), to: 'src\\made\\inner\\moved.txt' });
    assert.equal(moved.isError, false, moved.text);
    assert.equal(readFileSync(join(dir, 'src', 'made', 'inner', 'moved.txt'), 'utf8'), 'alpha\r\ngamma\r\n');
    await eventually('the move is listed', async () => {
      const uris = await listUris(served.client);
      return uris.includes(`${served.uri}src/made/inner/moved.txt`) && !uris.includes(`${served.uri}src/new.txt`);
    });
    const outside = await callTool(served.client, 'write', { path: 'C:\\Windows\\folder-mcp-was-here.txt', content: 'x' });
    assert.equal(outside.isError, true);
    const stream = await callTool(served.client, 'write', { path: 'README.md:hidden', content: 'x' });
    assert.equal(stream.isError, true, stream.text);
  });

  test('a file another program holds open: the write is tried again, then one clear error; nothing changed, no temp file left', async () => {
    const held = join(dir, 'src', 'held.txt');
    writeFileSync(held, 'before\n');
    const fd = openSync(held, 'r');
    try {
      const written = await callTool(served.client, 'write', { path: 'src/held.txt', content: 'after\n' });
      assert.equal(written.isError, true, written.text);
      assert.match(written.text, /another program holds it open \((EPERM|EBUSY|EACCES)/);
    } finally {
      closeSync(fd);
    }
    assert.equal(readFileSync(held, 'utf8'), 'before\n');
    assert.deepEqual(readdirSync(join(dir, 'src')).filter((name) => name.endsWith('.tmp')), []);
    const again = await callTool(served.client, 'write', { path: 'src/held.txt', content: 'after\n' });
    assert.equal(again.isError, false, again.text);
    assert.equal(readFileSync(held, 'utf8'), 'after\n');
  });

  test('a move of a file held open without FILE_SHARE_DELETE (as Word holds a .docx): one clear error, one name, and it moves once let go', async () => {
    const held = join(dir, 'src', 'report.docx');
    writeFileSync(held, 'numbers\n');
    mkdirSync(join(dir, 'src', 'archive'), { recursive: true });
    // libuv's UV_FS_O_EXLOCK: share mode 0. A link could still be made to it, and then neither name removed.
    const fd = openSync(held, constants.O_RDONLY | ((constants as { UV_FS_O_EXLOCK?: number }).UV_FS_O_EXLOCK ?? 0x10000000));
    try {
      const moved = await callTool(served.client, 'move', { from: 'src\\report.docx', to: 'src\\archive\\report.docx' });
      assert.equal(moved.isError, true, moved.text);
      assert.match(moved.text, /another program holds it open \((EPERM|EBUSY|EACCES)/);
    } finally {
      closeSync(fd);
    }
    assert.deepEqual(readdirSync(join(dir, 'src', 'archive')), [], 'no second name');
    assert.equal(statSync(held).nlink, 1);
    const again = await callTool(served.client, 'move', { from: 'src\\report.docx', to: 'src\\archive\\report.docx' });
    assert.equal(again.isError, false, again.text);
    assert.equal(readFileSync(join(dir, 'src', 'archive', 'report.docx'), 'utf8'), 'numbers\n');
  });

  // Wine's MoveFileEx keeps the old spelling in a rename that only changes the case (the server then goes by a
  // temporary name), so another program's such rename cannot be made here: NTFS makes it in one.
  test('a move that only changes the case renames the file and the folder in place', async () => {
    mkdirSync(join(dir, 'src', 'Cased'), { recursive: true });
    writeFileSync(join(dir, 'src', 'Cased', 'readme.md'), 'r\n');
    const file = await callTool(served.client, 'move', { from: 'src/Cased/readme.md', to: 'src/Cased/README.md' });
    assert.equal(file.isError, false, file.text);
    assert.deepEqual(readdirSync(join(dir, 'src', 'Cased')), ['README.md']);
    const folder = await callTool(served.client, 'move', { from: 'src\\Cased', to: 'src\\cased' });
    assert.equal(folder.isError, false, folder.text);
    assert.equal(readdirSync(join(dir, 'src')).includes('cased'), true);
    assert.equal(readFileSync(join(dir, 'src', 'cased', 'README.md'), 'utf8'), 'r\n');
    // One name listed, as the disk spells it (an lstat finds `Cased` still: the look checks the spelling).
    await eventually('only the new spelling listed', async () => {
      const uris = await listUris(served.client);
      return uris.includes(`${served.uri}src/cased/README.md`) && !uris.some((uri) => uri.startsWith(`${served.uri}src/Cased/`));
    });
  });

  test('a file held open while the content index reads it is searchable once let go', async () => {
    const held = join(dir, 'src', 'held-at-index.txt');
    writeFileSync(held, 'quokkaheld\n');
    const fd = openSync(held, constants.O_RDONLY | ((constants as { UV_FS_O_EXLOCK?: number }).UV_FS_O_EXLOCK ?? 0x10000000));
    try {
      // Written after it: once this is found, the index has been at the held one (recorded as "no text" before).
      writeFileSync(join(dir, 'src', 'control-at-index.txt'), 'quokkacontrol\n');
      await eventually('the control found', async () => (await callTool(served.client, 'search', { query: 'quokkacontrol' })).text.includes('control-at-index.txt'));
    } finally {
      closeSync(fd);
    }
    // No watcher hears a lock go: the content index tries again by itself.
    await eventually('the held file found', async () => (await callTool(served.client, 'search', { query: 'quokkaheld' })).text.includes('held-at-index.txt'));
  });

  test('a read-only file: refused without force; with force replaced, and still read-only', async () => {
    const file = join(dir, 'src', 'locked.txt');
    writeFileSync(file, 'v1\n');
    chmodSync(file, 0o444);
    const refused = await callTool(served.client, 'write', { path: 'src/locked.txt', content: 'v2\n' });
    assert.equal(refused.isError, true);
    assert.match(refused.text, /read-only/);
    const forced = await callTool(served.client, 'write', { path: 'src/locked.txt', content: 'v2\n', force: true });
    assert.equal(forced.isError, false, forced.text);
    assert.equal(readFileSync(file, 'utf8'), 'v2\n');
    assert.equal(statSync(file).mode & 0o200, 0, 'still read-only');
    chmodSync(file, 0o666);
  });

  test('the watcher: a file added, renamed and deleted by another program shows in resources/list', async () => {
    writeFileSync(join(dir, 'src', 'deep', 'added.md'), 'added\n');
    await eventually('added.md listed', async () => (await listUris(served.client)).includes(`${served.uri}src/deep/added.md`));
    renameSync(join(dir, 'src', 'deep', 'added.md'), join(dir, 'src', 'deep', 'renamed.md'));
    await eventually('the rename listed', async () => {
      const uris = await listUris(served.client);
      return uris.includes(`${served.uri}src/deep/renamed.md`) && !uris.includes(`${served.uri}src/deep/added.md`);
    });
    unlinkSync(join(dir, 'src', 'deep', 'renamed.md'));
    await eventually('the delete listed', async () => !(await listUris(served.client)).includes(`${served.uri}src/deep/renamed.md`));
  });

  test('subscribe: a change by another program sends updated for the file', async () => {
    const uri = `${served.uri}src/deep/notes.txt`;
    const updated = new Promise<string>((resolvePromise) => {
      served.client.setNotificationHandler('notifications/resources/updated' as never, ((n: { params: { uri: string } }) => {
        if (n.params.uri === uri) resolvePromise(n.params.uri);
      }) as never);
    });
    const listen = await served.client.listen({ resourceSubscriptions: [uri] });
    try {
      writeFileSync(join(dir, 'src', 'deep', 'notes.txt'), 'line one\nline two\nline three\n');
      assert.equal(await updated, uri);
    } finally {
      await listen.close();
    }
  });
});

describe('Windows: the .mcpb, unpacked and started as Claude Desktop on Windows starts it', { skip: process.env.FOLDER_MCP_BUNDLE ? false : 'FOLDER_MCP_BUNDLE: set by npm run test:windows' }, () => {
  let dir: string;
  let home: string;
  let client: Client;
  let uri: string;
  before(async () => {
    const { getMcpConfigForManifest } = await import('@anthropic-ai/mcpb');
    const unpacked = process.env.FOLDER_MCP_BUNDLE!;
    dir = mkdtempSync(join(tmpdir(), 'folder-mcp-win-bundle-'));
    home = mkdtempSync(join(tmpdir(), 'folder-mcp-win-home-'));
    writeFileSync(join(dir, 'notes.md'), '# Notes\nThe marmalade recipe.\n');
    writeFileSync(join(dir, 'q3.pdf'), makePdf(['Quarterly report of the pangolin']));
    // The manifest's mcp_config with ${__dirname} and the picked folder substituted by the mcpb library's own code.
    const manifest = JSON.parse(readFileSync(join(unpacked, 'manifest.json'), 'utf8'));
    const config = await getMcpConfigForManifest({ manifest, extensionPath: unpacked, systemDirs: { HOME: home }, userConfig: { folders: [dir] }, pathSeparator: '\\' });
    assert.ok(config);
    // `${__dirname}/dist/cli.js`: the library joins with '/', and node.exe takes the mixed separators as Windows does.
    assert.deepEqual(config.args, [`${unpacked}/dist/cli.js`, '--', dir]);
    // No NODE_OPTIONS: a size of the young generation there would turn off the server's own hold of it (src/heap.ts).
    assert.equal(config.env?.NODE_OPTIONS, undefined);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: config.args ?? [],
      cwd: home,
      env: { ...(process.env as Record<string, string>), ...config.env, LOCALAPPDATA: home, NODE_PATH: '' },
      stderr: 'pipe',
    });
    client = new Client({ name: 'claude-desktop-stand-in', version: '0.0.0' });
    await client.connect(transport);
    uri = `file:///${realpathSync.native(dir).replaceAll('\\', '/').replace(/^[a-z]:/, (d) => d.toUpperCase())}/`;
  });
  after(async () => {
    await client?.close();
    for (const path of [dir, home]) rmSync(path, { recursive: true, force: true });
  });

  test('lists the picked folder and reads its PDF as text, with the index in %LOCALAPPDATA%', async () => {
    assert.deepEqual(await listUris(client), [uri, `${uri}notes.md`, `${uri}q3.pdf`]);
    const read = await request(client, 'resources/read', { uri: `${uri}q3.pdf` });
    assert.ok((read.contents as Array<{ text?: string }>).some((c) => c.text?.includes('pangolin')));
    await eventually('search finds marmalade', async () => (await callTool(client, 'search', { query: 'marmalade' })).text.includes('notes.md'));
    assert.ok(readdirSync(join(home, 'folder-mcp')).some((name) => name.endsWith('.db')), 'the index under %LOCALAPPDATA%\\folder-mcp');
  });
});
