// Streamable HTTP end to end: the built CLI on 127.0.0.1, real sockets, the
// v2 client pinned to 2026-07-28 and the v1 client (2025-11-25) at once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/client';
import { CLI, eraNeutral, rejectsWith, tempDir, waitFor, writeTree, type LooseResult } from '../helpers.ts';
import { collectNotes, connectHttp, rawPost, startHttp, type HttpClient, type HttpProcess } from '../http-helpers.ts';

const TIMEOUT = 30_000;
const TOKEN = 'test-token-0123456789abcdef';

describe('both eras over HTTP from one process', () => {
  let root: ReturnType<typeof tempDir>;
  let state: ReturnType<typeof tempDir>;
  let server: HttpProcess;
  let legacy: HttpClient;
  let modern: HttpClient;
  let rootUri: string;

  before(async () => {
    root = tempDir();
    state = tempDir('folder-mcp-state-');
    writeTree(root.path, {
      'src/main.ts': 'export const main = 1;\n',
      'src/util/a.ts': 'export const a = 1;\n',
      'src/notes.md': '# notes\n',
      'docs/guide.md': '# Guide\nneedle here\n',
      'sub/inner/b.md': 'b\n',
      'docs/café.md': 'x\n',
    });
    rootUri = pathToFileURL(root.path).href + '/';
    server = await startHttp([root.path, '--db', join(state.path, 'index.db'), '--page-size', '2', '--watcher', 'chokidar']);
    legacy = await connectHttp(server.url, 'legacy');
    modern = await connectHttp(server.url, 'modern');
    // The change tests below need the watcher running: its line says when it is.
    await waitFor(() => /watcher: chokidar .*ready in/.test(server.stderr()), TIMEOUT, 'the watcher to start');
  });

  after(async () => {
    await legacy?.close();
    await modern?.close();
    await server?.stop();
    root?.cleanup();
    state?.cleanup();
  });

  test('list with prefix and filter, read, metadata and a tool call give the same results on both eras', async () => {
    const requests: Array<[string, Record<string, unknown>]> = [
      ['resources/list', { prefix: `${rootUri}src/`, filter: { namePatterns: ['*.ts'] } }],
      ['resources/list', { uri: `${rootUri}src/` }],
      ['resources/read', { uri: `${rootUri}docs/guide.md` }],
      ['resources/metadata', { uri: `${rootUri}src/main.ts` }],
      ['tools/call', { name: 'find', arguments: { glob: '**/*.md' } }],
    ];
    for (const [method, params] of requests) {
      const a = eraNeutral(await legacy.request(method, params));
      const b = eraNeutral(await modern.request(method, params));
      assert.deepEqual(a, b, `${method} ${JSON.stringify(params)}`);
    }
    const page = await modern.request('resources/list', { prefix: `${rootUri}src/`, filter: { namePatterns: ['*.ts'] } });
    assert.deepEqual(
      (page.resources as LooseResult[]).map((r) => r.uri),
      [`${rootUri}src/main.ts`, `${rootUri}src/util/a.ts`],
    );
    const read = await legacy.request('resources/read', { uri: `${rootUri}docs/guide.md` });
    assert.equal((read.contents as LooseResult[])[0]!.text, '# Guide\nneedle here\n');
  });

  test('not found is -32602 on 2026-07-28 and -32002 on 2025-11-25, with data.uri', async () => {
    const uri = `${rootUri}missing.txt`;
    const m = await rejectsWith(modern.request('resources/read', { uri }), -32602, 'Resource not found');
    assert.deepEqual(m.data, { uri });
    const l = await rejectsWith(legacy.request('resources/read', { uri }), -32002, 'Resource not found');
    assert.deepEqual(l.data, { uri });
  });

  test('two modern clients listen at once: each hears what it asked for, in its own spelling', async () => {
    const other = await connectHttp(server.url, 'modern');
    try {
      const a = modern.client as Client;
      const b = other.client as Client;
      const notesA = collectNotes(modern);
      const notesB = collectNotes(other);
      // A: the collection without its slash, and list changes. B: a document in its non-encoded spelling.
      const listenA = await a.listen({ resourceSubscriptions: [`${rootUri}sub`], resourcesListChanged: true });
      const listenB = await b.listen({ resourceSubscriptions: [`${rootUri}docs/caf\u00e9.md`] });
      writeFileSync(join(root.path, 'sub/inner/b.md'), 'b changed\n');
      writeFileSync(join(root.path, 'docs/café.md'), 'changed\n');
      writeFileSync(join(root.path, 'new.txt'), 'new\n');
      await waitFor(() => notesA.updated.includes(`${rootUri}sub`), TIMEOUT, 'A: updated for the collection');
      await waitFor(() => notesA.listChanged > 0, TIMEOUT, 'A: list_changed');
      await waitFor(() => notesB.updated.includes(`${rootUri}docs/caf\u00e9.md`), TIMEOUT, 'B: updated in its spelling');
      await new Promise((r) => setTimeout(r, 300));
      assert.ok(!notesA.updated.includes(`${rootUri}docs/caf\u00e9.md`), 'A never asked for café.md');
      assert.ok(!notesB.updated.includes(`${rootUri}sub`), 'B never asked for sub');
      assert.equal(notesB.listChanged, 0, 'B never asked for list_changed');

      // A stream that ends hears nothing more; the other one still does.
      await listenA.close();
      notesA.updated.length = 0;
      writeFileSync(join(root.path, 'sub/inner/b.md'), 'b changed again\n');
      writeFileSync(join(root.path, 'docs/café.md'), 'changed again\n');
      notesB.updated.length = 0;
      await waitFor(() => notesB.updated.includes(`${rootUri}docs/caf\u00e9.md`), TIMEOUT, 'B: still hears');
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(notesA.updated, []);
      await listenB.close();
    } finally {
      await other.close();
    }
  });

  test('a 2025-era client and a 2026-07-28 client at once: each hears what it asked for from the one watcher', async () => {
    const notesL = collectNotes(legacy);
    const notesM = collectNotes(modern);
    const uri = `${rootUri}src/notes.md`;
    // The 2025 way (resources/subscribe, heard on the session's GET stream) and the 2026 way (a listen stream).
    await legacy.request('resources/subscribe', { uri });
    const listen = await (modern.client as Client).listen({ resourceSubscriptions: [uri], resourcesListChanged: true });
    try {
      writeFileSync(join(root.path, 'src/notes.md'), '# notes, changed\n');
      writeFileSync(join(root.path, 'src/added.md'), 'added\n');
      await waitFor(() => notesL.updated.includes(uri), TIMEOUT, 'legacy: updated');
      await waitFor(() => notesL.listChanged > 0, TIMEOUT, 'legacy: list_changed');
      await waitFor(() => notesM.updated.includes(uri) && notesM.listChanged > 0, TIMEOUT, 'modern: updated and list_changed');
      // One index for both: each lists what the shared watcher saw, and reads the new text.
      for (const client of [legacy, modern]) {
        const page = await client.request('resources/list', { prefix: `${rootUri}src/added` });
        assert.deepEqual((page.resources as LooseResult[]).map((r) => r.uri), [`${rootUri}src/added.md`], client.era);
        const read = await client.request('resources/read', { uri });
        assert.equal((read.contents as LooseResult[])[0]!.text, '# notes, changed\n', client.era);
      }

      // Unsubscribed, the legacy session hears no more of it; the listen stream still does.
      await legacy.request('resources/unsubscribe', { uri });
      notesL.updated.length = 0;
      notesM.updated.length = 0;
      writeFileSync(join(root.path, 'src/notes.md'), '# notes, changed again\n');
      await waitFor(() => notesM.updated.includes(uri), TIMEOUT, 'modern: still hears');
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(notesL.updated, []);
    } finally {
      await listen.close();
    }
  });

  test('2025-era sessions: an unknown Mcp-Session-Id is 404, a request with none is still answered (statelessly)', async () => {
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'resources/list', params: {} });
    const legacyHeaders = { 'mcp-protocol-version': '2025-11-25' };
    const unknown = await rawPost(server.url, { ...legacyHeaders, 'mcp-session-id': 'no-such-session' }, list);
    assert.equal(unknown.status, 404);
    assert.match(unknown.body, /Session not found/);
    const none = await rawPost(server.url, legacyHeaders, list);
    assert.equal(none.status, 200);
    assert.match(none.body, /"resources":\[/);
    // An initialize opens a session: its id comes back in the header.
    const init = await rawPost(server.url, {});
    assert.equal(init.status, 200);
    assert.match(String(init.headers['mcp-session-id']), /^[0-9a-f-]{36}$/);
  });
});

describe('Host, Origin and token rules', () => {
  let root: ReturnType<typeof tempDir>;
  let server: HttpProcess;
  let host: string;

  before(async () => {
    root = tempDir();
    writeTree(root.path, { 'a.txt': 'a\n' });
    server = await startHttp([root.path, '--db', ':memory:', '--watcher', 'none', '--allowed-host', 'mcp.example.com'], {
      FOLDER_MCP_TOKEN: TOKEN,
    });
    host = new URL(server.url).host;
  });

  after(async () => {
    await server?.stop();
    root?.cleanup();
  });

  const auth = { authorization: `Bearer ${TOKEN}` };

  test('the right token, a loopback Host and no Origin: 200', async () => {
    const res = await rawPost(server.url, { ...auth });
    assert.equal(res.status, 200, res.body);
  });

  test('a foreign Host is refused with 403, even with the token (DNS rebinding)', async () => {
    const res = await rawPost(server.url, { ...auth, host: `evil.example:${new URL(server.url).port}` });
    assert.equal(res.status, 403);
    assert.match(res.body, /Host not allowed/);
  });

  test('an --allowed-host name is accepted as Host and as Origin', async () => {
    const res = await rawPost(server.url, { ...auth, host: 'mcp.example.com', origin: 'https://mcp.example.com' });
    assert.equal(res.status, 200, res.body);
  });

  test('a foreign Origin is refused with 403, even with the token', async () => {
    for (const origin of ['https://evil.example', 'null']) {
      const res = await rawPost(server.url, { ...auth, host, origin });
      assert.equal(res.status, 403, origin);
      assert.match(res.body, /Origin not allowed/);
    }
    const local = await rawPost(server.url, { ...auth, origin: `http://localhost:3000` });
    assert.equal(local.status, 200, 'a loopback Origin passes');
  });

  test('no token, or a wrong one: 401 with WWW-Authenticate, before anything is served', async () => {
    const missing = await rawPost(server.url, {});
    assert.equal(missing.status, 401);
    assert.match(String(missing.headers['www-authenticate']), /^Bearer realm="folder-mcp"/);
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN]) {
      const wrong = await rawPost(server.url, { authorization });
      assert.equal(wrong.status, 401, authorization);
      assert.match(String(wrong.headers['www-authenticate']), /^Bearer /);
      assert.doesNotMatch(wrong.body, /protocolVersion|serverInfo/);
    }
  });

  test('a body over 1 MiB gets 413; another path 404; neither leaks a stack or a path', async () => {
    const big = await rawPost(server.url, auth, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(1024 * 1024)}"}}`);
    assert.equal(big.status, 413);
    const chunked = await rawPost(server.url, auth, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(2 * 1024 * 1024)}"}}`, { chunked: true });
    assert.equal(chunked.status, 413, 'without Content-Length too');
    const other = await rawPost(server.url.replace(/\/mcp$/, '/other'), auth);
    assert.equal(other.status, 404);
    const bad = await rawPost(server.url, auth, '{not json');
    assert.equal(bad.status, 400);
    for (const res of [big, chunked, other, bad]) assert.doesNotMatch(res.body, /at \w|\/tmp|node_modules|dist\//);
  });

  test('SDK clients of both eras connect with the token', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const conn = await connectHttp(server.url, era, TOKEN);
      const result = await conn.request('resources/list', {});
      assert.equal((result.resources as LooseResult[]).length, 2, era);
      await conn.close();
    }
  });
});

describe('start and stop', () => {
  let root: ReturnType<typeof tempDir>;

  before(() => {
    root = tempDir();
    writeTree(root.path, { 'a.txt': 'a\n' });
  });

  after(() => root?.cleanup());

  test('a non-loopback bind without a token exits 2 with one line naming the token option', async () => {
    const { spawnSync } = await import('node:child_process');
    const { CLI } = await import('../helpers.ts');
    const run = spawnSync(process.execPath, [CLI, '--http', '0.0.0.0:0', '--db', ':memory:', root.path], {
      encoding: 'utf8',
      env: { ...process.env, FOLDER_MCP_TOKEN: '' },
      timeout: TIMEOUT,
    });
    assert.equal(run.status, 2, run.stderr);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0]!, /FOLDER_MCP_TOKEN or --token-file/);
  });

  test('SIGTERM with a listen stream open and a client connected: exit 0', async () => {
    const server = await startHttp([root.path, '--db', ':memory:', '--watcher', 'none']);
    const conn = await connectHttp(server.url, 'modern');
    const listen = await (conn.client as Client).listen({ resourcesListChanged: true });
    await conn.request('resources/list', {});
    assert.equal(await server.stop('SIGTERM'), 0, server.stderr());
    assert.equal(await listen.closed, 'graceful', 'the listen stream got its closing result');
    await conn.close();
  });

  test('SIGINT: exit 0', async () => {
    const server = await startHttp([root.path, '--db', ':memory:', '--watcher', 'none']);
    const conn = await connectHttp(server.url, 'legacy');
    await conn.request('resources/list', {});
    await conn.close();
    assert.equal(await server.stop('SIGINT'), 0, server.stderr());
  });
});

describe('a cursor key shared between replicas', () => {
  let root: ReturnType<typeof tempDir>;
  let state: ReturnType<typeof tempDir>;
  const servers: HttpProcess[] = [];
  const clients: HttpClient[] = [];
  const KEY = 'shared-cursor-key-0123456789abcdef';

  before(() => {
    root = tempDir();
    state = tempDir('folder-mcp-state-');
    writeTree(root.path, { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c', 'd.txt': 'd', 'e.txt': 'e' });
  });

  after(async () => {
    for (const client of clients) await client.close();
    for (const server of servers) await server.stop();
    root?.cleanup();
    state?.cleanup();
  });

  /** A replica with its own index of the same folder. */
  async function replica(name: string, env: Record<string, string>, args: string[] = []): Promise<HttpClient> {
    const server = await startHttp([root.path, '--db', join(state.path, `${name}.db`), '--page-size', '2', '--watcher', 'none', ...args], env);
    servers.push(server);
    const client = await connectHttp(server.url, 'modern');
    clients.push(client);
    return client;
  }

  test('one key (env or file): each accepts the other\'s cursors; another key refuses them with -32602 Invalid cursor', async () => {
    const keyFile = join(state.path, 'cursor.key');
    writeFileSync(keyFile, `${KEY}\n`);
    const a = await replica('a', { FOLDER_MCP_CURSOR_KEY: KEY });
    const b = await replica('b', {}, ['--cursor-key-file', keyFile]);
    const c = await replica('c', { FOLDER_MCP_CURSOR_KEY: `${KEY}-other` });
    const first = await a.request('resources/list', {});
    const cursor = first.nextCursor as string;
    assert.ok(cursor);
    const onA = await a.request('resources/list', { cursor });
    const onB = await b.request('resources/list', { cursor });
    assert.deepEqual(eraNeutral(onB), eraNeutral(onA));
    const back = await a.request('resources/list', { cursor: onB.nextCursor as string });
    assert.ok((back.resources as LooseResult[]).length > 0);
    await rejectsWith(c.request('resources/list', { cursor }), -32602, 'Invalid cursor');
  });
});

describe('--http on a port that is taken', () => {
  const dir = tempDir();
  after(dir.cleanup);

  test('exits 2 with one line saying so, and makes no index file', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as { port: number }).port;
      const folder = join(dir.path, 'notes');
      mkdirSync(folder);
      const db = join(dir.path, 'state', 'index.db');
      const result = spawnSync(process.execPath, [CLI, '--http', `127.0.0.1:${port}`, '--db', db, folder], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(result.status, 2, result.stderr);
      // Issue 46: one line in all (no info line naming an index first), and no folder made for the index.
      const lines = result.stderr.split('\n').filter((l) => l.trim() !== '');
      assert.deepEqual(lines.length, 1, result.stderr);
      assert.match(lines[0]!, new RegExp(`^folder-mcp: cannot serve HTTP on 127\\.0\\.0\\.1:${port}: EADDRINUSE \\(the port is in use`));
      assert.equal(existsSync(db), false, 'the index file was made for a server that never served');
      assert.equal(existsSync(`${db}.lock`), false);
      assert.equal(existsSync(join(dir.path, 'state')), false, 'the index folder was made for a server that never served');
    } finally {
      taken.close();
    }
  });
});
