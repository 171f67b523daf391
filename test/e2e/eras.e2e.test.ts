// Both protocol eras from one binary: what differs (how a client connects,
// listen streams, error codes, cache hints) and what must not (results).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { CLI, connect, diskUris, eraNeutral, serveTree, tempTree, waitFor, type Connected, type LooseResult } from '../helpers.ts';
import { connectWithNotes, type Notes } from '../live-helpers.ts';

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '0' },
};

describe('one binary, both eras', () => {
  const tree = tempTree({
    'src/main.ts': 'export const main = 1;\n',
    'src/util/a.ts': 'export const a = 1;\n',
    'docs/guide.md': '# Guide\nneedle here\n',
    'nb/x.ipynb': JSON.stringify({ cells: [{ cell_type: 'markdown', source: ['# Title'] }], metadata: {}, nbformat: 4, nbformat_minor: 5 }),
  });
  // One server per era on the same tree, each with its own index.
  const servers = {
    legacy: tree.serve(({ root, state }) => [root, '--db', join(state, 'legacy.db'), '--page-size', '2'], { era: 'legacy' }),
    modern: tree.serve(({ root, state }) => [root, '--db', join(state, 'modern.db'), '--page-size', '2'], { era: 'modern' }),
  };
  let legacy: Connected;
  let modern: Connected;
  let rootUri: string;
  before(() => {
    ({ rootUri } = tree);
    legacy = servers.legacy.conn;
    modern = servers.modern.conn;
  });

  test('an auto-mode v2 client lands on 2026-07-28 without falling back', async () => {
    const conn = await connect([tree.root, '--db', ':memory:'], { era: 'auto' });
    try {
      assert.equal((conn.client as Client).getProtocolEra(), 'modern');
      const result = await conn.request('resources/list', {});
      assert.ok(Array.isArray(result.resources));
    } finally {
      await conn.close();
    }
  });

  test('lists, reads, metadata, templates, tools and prompts give the same results on both eras', async () => {
    const requests: Array<[string, Record<string, unknown>]> = [
      ['resources/list', { prefix: `${rootUri}src/`, filter: { namePatterns: ['*.ts'] } }],
      ['resources/list', { uri: `${rootUri}src/` }],
      ['resources/list', { filters: { uri_paths: [`${rootUri}docs`] } }],
      ['resources/read', { uri: `${rootUri}nb/x.ipynb` }],
      ['resources/read', { uri: `${rootUri}src/` }],
      ['resources/metadata', { uri: `${rootUri}docs/guide.md` }],
      ['resources/templates/list', {}],
      ['tools/list', {}],
      ['prompts/list', {}],
      ['tools/call', { name: 'find', arguments: { glob: '**/*.ts' } }],
      ['tools/call', { name: 'mcp://tools/files/tree', arguments: {} }],
      ['completion/complete', { ref: { type: 'ref/resource', uri: `${rootUri}{+path}` }, argument: { name: 'path', value: 'sr' } }],
    ];
    for (const [method, params] of requests) {
      const a = eraNeutral(await legacy.request(method, params));
      const b = eraNeutral(await modern.request(method, params));
      // Cursors are signed per index; compare what they lead to instead.
      delete a.nextCursor;
      delete b.nextCursor;
      assert.deepEqual(b, a, `${method} ${JSON.stringify(params)}`);
    }
  });

  test('a cursor pages the same on both eras', async () => {
    const walk = async (conn: Connected) => {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await conn.request('resources/list', { prefix: rootUri, ...(cursor ? { cursor } : {}) });
        seen.push(...(page.resources as LooseResult[]).map((r) => r.uri as string));
        cursor = page.nextCursor as string | undefined;
      } while (cursor);
      return seen;
    };
    const expected = diskUris(tree.root);
    assert.deepEqual(await walk(legacy), expected);
    assert.deepEqual(await walk(modern), expected);
  });

  test('2026-07-28 results carry true cache hints; 2025 results carry none', async () => {
    const list = await modern.request('resources/list', {});
    assert.equal(list.ttlMs, 0);
    assert.equal(list.cacheScope, 'private');
    const read = await modern.request('resources/read', { uri: `${rootUri}docs/guide.md` });
    assert.equal(read.ttlMs, 0);
    const tools = await modern.request('tools/list', {});
    assert.equal(tools.ttlMs, 300_000);
    assert.equal(tools.cacheScope, 'private');
    const legacyList = await legacy.request('resources/list', {});
    assert.equal('ttlMs' in legacyList, false);
  });

  test('capabilities, filtering included, reach both eras', async () => {
    for (const conn of [legacy, modern]) {
      const caps = (conn.client as { getServerCapabilities(): Record<string, Record<string, unknown>> }).getServerCapabilities();
      assert.equal(caps.resources?.subscribe, true, conn.era);
      assert.equal(caps.resources?.listChanged, true, conn.era);
      assert.deepEqual((caps.experimental?.filtering as LooseResult).resources, { supported: ['namePatterns', 'uriPatterns'] }, conn.era);
      assert.deepEqual(caps.experimental?.['resources/metadata'], {}, conn.era);
    }
  });

  test('logging is declared where it is sent: by initialize (2025), not by server/discover (2026-07-28 has no setLevel)', () => {
    const capabilitiesOf = (conn: typeof legacy) => (conn.client as { getServerCapabilities(): Record<string, unknown> }).getServerCapabilities();
    assert.deepEqual(capabilitiesOf(legacy).logging, {});
    assert.equal('logging' in capabilitiesOf(modern), false);
  });
});

describe('start-up under a probing client', () => {
  const tree = tempTree({ 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });

  /** Spawns the CLI and sends raw lines; resolves answers by id. */
  function raw(args: string[]) {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const answers = new Map<unknown, LooseResult>();
    let stderr = '';
    let buffer = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
        const message = JSON.parse(buffer.slice(0, nl)) as LooseResult;
        buffer = buffer.slice(nl + 1);
        if ('id' in message) answers.set(message.id, message);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return {
      child,
      stderr: () => stderr,
      send: (message: LooseResult) => child.stdin.write(`${JSON.stringify(message)}\n`),
      answer: (id: unknown) => waitFor(() => answers.get(id), 60_000, `answer ${String(id)}`),
    };
  }

  test('a server/discover probe is answered without opening the index', async () => {
    const db = join(tree.state, 'probe.db');
    const probe = raw([tree.root, '--db', db]);
    try {
      probe.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } });
      const answer = await probe.answer(1);
      assert.ok(answer?.result, 'discover answered');
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(existsSync(db), false, 'the probe created the index file');
      assert.doesNotMatch(probe.stderr(), /indexed|watcher/);
    } finally {
      probe.child.kill('SIGKILL');
    }
  });
  // A process killed mid-scan, and the next one on the same --db: test/e2e/live-start.e2e.test.ts (crash safety).
});

describe('live updates on 2026-07-28 listen streams (--watcher chokidar)', () => {
  const TIMEOUT = 30_000;
  const tree = serveTree(
    { 'sub/a.md': 'a\n', 'sub/inner/b.md': 'b\n', 'other/c.md': 'c\n', 'docs/café.md': 'x\n' },
    ({ root }) => ['--db', ':memory:', '--watcher', 'chokidar', root],
    { era: 'modern', connect: connectWithNotes },
  );
  let conn: Connected & { notes: Notes };
  let rootUri: string;

  before(async () => {
    ({ conn, rootUri } = tree);
    await conn.request('resources/list', {});
    await waitFor(() => conn.stderr().includes('watcher: chokidar'), TIMEOUT, 'the watcher to start');
  });

  test('list_changed reaches a stream that asked for it', async () => {
    conn.notes.reset();
    writeFileSync(join(tree.root, 'new.txt'), 'n');
    await waitFor(() => conn.notes.listChanged > 0, TIMEOUT, 'list_changed');
  });

  test('a listened document and collection hear of changes, in the spelling the client used', async () => {
    await conn.subscribe(`${rootUri}sub`); // the collection, without its slash
    await conn.subscribe(`${rootUri}other/c.md`);
    await conn.subscribe(`${rootUri}docs/caf\u00e9.md`); // not percent-encoded
    conn.notes.reset();
    writeFileSync(join(tree.root, 'sub/inner/b.md'), 'b changed\n');
    await waitFor(() => conn.notes.updated.some((n) => n.uri === `${rootUri}sub`), TIMEOUT, 'updated for the collection');
    // `title` goes out on the wire on both eras (test/e2e/stdio-transport.test.ts); the v2 client drops it from what it hands on.
    writeFileSync(join(tree.root, 'docs/café.md'), 'changed\n');
    await waitFor(() => conn.notes.updated.some((n) => n.uri === `${rootUri}docs/caf\u00e9.md`), TIMEOUT, 'updated for the other spelling');

    // Closing a stream ends what only it asked for.
    await conn.unsubscribe(`${rootUri}sub`);
    conn.notes.reset();
    writeFileSync(join(tree.root, 'sub/a.md'), 'a changed\n');
    writeFileSync(join(tree.root, 'other/c.md'), 'c changed\n');
    await waitFor(() => conn.notes.updated.some((n) => n.uri === `${rootUri}other/c.md`), TIMEOUT, 'updated for the document');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(conn.notes.updated.filter((n) => n.uri === `${rootUri}sub`), []);
  });
});
