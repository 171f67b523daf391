// With no folder on the command line, folder-mcp serves the client's roots
// (MCP 2025-11-25), as the reference filesystem server does: asked after
// `initialized`, followed on `notifications/roots/list_changed`. A client
// without roots, or of the 2026-07-28 era (which has none), gets one clear
// line and exit 2; folders on the command line always win. Through the real
// v2 SDK Client, in process and, for the exit code and auto mode, through
// the built binary.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, test } from 'node:test';
import { Client, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { NO_ROOTS } from '../../src/app.ts';
import { folderOf, MAX_CLIENT_ROOTS } from '../../src/client-roots.ts';
import { prepareLaunch } from '../../src/launch.ts';
import { waitFor } from '../basics.ts';
import { CLI } from '../helpers.ts';
import { startInProcess, type InProcessServer } from '../in-process.ts';

type Item = { uri: string };
type Listed = { resources: Item[]; nextCursor?: string };

/** A client of 2025-11-25 that offers roots, and changes them when told. */
class RootsClient {
  readonly client: Client;
  roots: string[];
  asked = 0;
  listChanged = 0;

  constructor(roots: string[], options: { offerRoots?: boolean } = {}) {
    this.roots = roots;
    this.client = new Client({ name: 'roots-test', version: '0' }, { capabilities: options.offerRoots === false ? {} : { roots: { listChanged: true } } });
    if (options.offerRoots !== false) {
      this.client.setRequestHandler('roots/list', async () => {
        this.asked++;
        return { roots: this.roots.map((path) => ({ uri: pathToFileURL(path).href, name: path })) };
      });
    }
    this.client.setNotificationHandler('notifications/resources/list_changed', () => {
      this.listChanged++;
    });
  }

  connect(transport: Transport): Promise<void> {
    return this.client.connect(transport);
  }

  async setRoots(roots: string[]): Promise<void> {
    this.roots = roots;
    await this.client.sendRootsListChanged();
  }

  /** Every URI listed, all pages. */
  async uris(): Promise<string[]> {
    const uris: string[] = [];
    let cursor: string | undefined;
    do {
      const page = (await this.client.request({ method: 'resources/list', params: cursor ? { cursor } : {} })) as unknown as Listed;
      uris.push(...page.resources.map((r) => r.uri));
      cursor = page.nextCursor;
    } while (cursor);
    return uris.sort();
  }
}

describe('no folder on the command line: the client roots are served', () => {
  const base = mkdtempSync(join(tmpdir(), 'fmcp-client-roots-'));
  const folder = (name: string, files: string[]) => {
    const path = join(base, name);
    mkdirSync(path);
    for (const file of files) writeFileSync(join(path, file), `${file}\n`);
    return path;
  };
  const alpha = folder('alpha', ['a1.txt', 'a2.txt']);
  const beta = folder('beta', ['b1.txt']);
  const cache = join(base, 'cache');
  const env = { XDG_CACHE_HOME: cache };
  const fileUri = (dir: string, name: string) => `${pathToFileURL(dir).href}/${name}`;
  const servers: InProcessServer[] = [];
  const serve = (args: string[] = []) => {
    const server = startInProcess(['--watcher', 'none', ...args], env);
    servers.push(server);
    return server;
  };
  after(async () => {
    for (const server of servers) await server.close();
    rmSync(base, { recursive: true, force: true });
  });

  test('serves the roots roots/list names, and follows roots/list_changed: a root added, then one dropped', async () => {
    const server = serve();
    const client = new RootsClient([alpha]);
    await client.connect(server.transport);
    // The first request waits for the roots: asked once the client said initialized.
    assert.deepEqual(await client.uris(), [`${pathToFileURL(alpha).href}/`, fileUri(alpha, 'a1.txt'), fileUri(alpha, 'a2.txt')]);
    assert.equal(client.asked, 1);

    await client.setRoots([alpha, beta]);
    await waitFor(() => client.listChanged >= 1, 30_000, 'list_changed after a root was added');
    const both = await client.uris();
    assert.ok(both.includes(fileUri(beta, 'b1.txt')), both.join('\n'));
    assert.ok(both.includes(fileUri(alpha, 'a1.txt')));

    await client.setRoots([beta]);
    await waitFor(() => client.listChanged >= 2, 30_000, 'list_changed after a root was dropped');
    assert.deepEqual(await client.uris(), [`${pathToFileURL(beta).href}/`, fileUri(beta, 'b1.txt')]);
    // Reads follow too: the dropped root's files are no longer served.
    await assert.rejects(client.client.request({ method: 'resources/read', params: { uri: fileUri(alpha, 'a1.txt') } }));
    const read = (await client.client.request({ method: 'resources/read', params: { uri: fileUri(beta, 'b1.txt') } })) as unknown as { contents: { text: string }[] };
    assert.equal(read.contents[0]?.text, 'b1.txt\n');
    assert.match(server.stderr(), /serving the client's roots: .*beta/);
    await client.client.close();
  });

  test("a set of roots is indexed in the file a command line naming those folders would use (a later start is warm)", async () => {
    const server = serve();
    const client = new RootsClient([beta]);
    await client.connect(server.transport);
    await client.uris();
    await client.client.close();
    const logged = /serving the client's roots: .* \(index: (\S+)\)/.exec(server.stderr())?.[1];
    const launch = prepareLaunch([beta], { ...process.env, ...env }, '0');
    assert.ok(launch.kind === 'serve' && launch.dbFile?.startsWith(cache), JSON.stringify(launch));
    assert.equal(logged, launch.dbFile);
  });

  test('roots that are no folder here are left out, each with a warning; none left answers every request with a clear error', async () => {
    const server = serve();
    const client = new RootsClient([join(base, 'missing'), join(alpha, 'a1.txt')]);
    await client.connect(server.transport);
    await assert.rejects(client.uris(), (error: Error) => error.message.includes(NO_ROOTS));
    assert.match(server.stderr(), /root file:.*missing is left out: no such folder/);
    assert.match(server.stderr(), /root file:.*a1\.txt is left out: not a folder/);
    // The client opens a folder: served from then on.
    await client.setRoots([alpha]);
    await waitFor(() => client.listChanged >= 1, 30_000, 'list_changed once a root can be served');
    assert.equal((await client.uris()).length, 3);
    await client.client.close();
  });

  test('roots followed across 20 changes: each roots/list answer is a response, not a request in flight (the transport would stop reading after 16)', async () => {
    const server = serve();
    const client = new RootsClient([alpha]);
    await client.connect(server.transport);
    await client.uris();
    for (let i = 1; i <= 20; i++) {
      await client.setRoots(i % 2 ? [beta] : [alpha]);
      await waitFor(() => client.listChanged >= i, 10_000, `list_changed after change ${i}`);
    }
    assert.ok(client.asked >= 21);
    await client.client.request({ method: 'ping' }, { timeout: 5000 });
    await client.client.close();
  });

  test('20 requests sent before the client has answered roots/list are all served from its roots', async () => {
    const server = serve();
    const client = new RootsClient([alpha]);
    await client.connect(server.transport);
    const pages = await Promise.all(Array.from({ length: 20 }, () => client.client.request({ method: 'resources/list', params: {} }, { timeout: 10_000 }) as unknown as Promise<Listed>));
    for (const page of pages) assert.ok(page.resources.some((r) => r.uri === fileUri(alpha, 'a1.txt')));
    await client.client.close();
  });

  test('a root of another scheme beside a folder: the folder is served, the other left out (the SDK schema would fail the whole answer)', async () => {
    const server = serve();
    const client = new RootsClient([alpha]);
    client.client.setRequestHandler('roots/list', async () => {
      client.asked++;
      return { roots: [{ uri: 'vscode-vfs://github/o/r' }, { uri: pathToFileURL(alpha).href }] } as never;
    });
    await client.connect(server.transport);
    assert.ok((await client.uris()).includes(fileUri(alpha, 'a1.txt')));
    assert.match(server.stderr(), /root vscode-vfs:\/\/github\/o\/r is left out: only file: roots name a folder/);
    await client.client.close();
  });

  test('a roots/list that fails after the first keeps the roots served so far', async () => {
    const server = serve();
    const client = new RootsClient([alpha]);
    await client.connect(server.transport);
    await client.uris();
    client.client.setRequestHandler('roots/list', async () => {
      client.asked++;
      throw new Error('the workspace is closing');
    });
    await client.client.sendRootsListChanged();
    await waitFor(() => /roots\/list failed: .*the roots served so far stay/.test(server.stderr()), 30_000, 'the failed roots/list');
    assert.ok((await client.uris()).includes(fileUri(alpha, 'a1.txt')));
    await client.client.close();
  });

  test('an edit under way while the roots change finishes on its own folders, and says so (--write)', async () => {
    const server = serve(['--write']);
    const client = new RootsClient([alpha]);
    await client.connect(server.transport);
    await client.uris();
    for (let round = 0; round < 5; round++) {
      writeFileSync(join(alpha, 'a2.txt'), 'slot:\n');
      const edit = client.client.request({ method: 'tools/call', params: { name: 'edit', arguments: { path: fileUri(alpha, 'a2.txt'), edits: [{ old_text: 'slot:', new_text: 'slot:x' }] } } });
      await client.setRoots(round % 2 ? [alpha] : [alpha, beta]);
      const result = (await edit) as unknown as { isError?: boolean; content: { text: string }[] };
      assert.notEqual(result.isError, true, result.content.map((c) => c.text).join('\n'));
      assert.equal(readFileSync(join(alpha, 'a2.txt'), 'utf8'), 'slot:x\n');
      await waitFor(() => client.listChanged >= round + 1, 30_000, `list_changed ${round + 1}`);
    }
    await client.client.close();
  });

  test('a root that holds the index folder does not serve it: other sets of folders\' indexes stay private', async () => {
    // An index of another set of roots (alpha's, from the tests above, or made here) in the cache folder.
    const first = serve();
    const other = new RootsClient([alpha]);
    await other.connect(first.transport);
    await other.uris();
    await other.client.close();
    const server = serve();
    const client = new RootsClient([base]);
    await client.connect(server.transport);
    const uris = await client.uris();
    assert.ok(uris.includes(fileUri(alpha, 'a1.txt')));
    const indexFolder = `${pathToFileURL(join(cache, 'folder-mcp')).href}/`;
    assert.deepEqual(uris.filter((uri) => uri.startsWith(indexFolder)), []);
    assert.ok(uris.includes(`${pathToFileURL(cache).href}/`), 'the cache folder itself is served, not the index folder in it');
    await client.client.close();
  });

  test(`at most ${MAX_CLIENT_ROOTS} roots are served; the rest are left out with a warning`, async () => {
    const many = Array.from({ length: MAX_CLIENT_ROOTS + 5 }, (_, i) => folder(`many-${i}`, []));
    const server = serve(['--no-search']);
    const client = new RootsClient(many);
    await client.connect(server.transport);
    const rootsListed = (await client.uris()).filter((uri) => /\/many-\d+\/$/.test(uri));
    assert.equal(rootsListed.length, MAX_CLIENT_ROOTS);
    assert.match(server.stderr(), new RegExp(`the client named ${MAX_CLIENT_ROOTS + 5} roots: the first ${MAX_CLIENT_ROOTS} are served`));
    await client.client.close();
  });

  test('folders on the command line win: roots/list is never asked', async () => {
    const server = startInProcess(['--watcher', 'none', '--db', ':memory:', alpha], env);
    servers.push(server);
    const client = new RootsClient([beta]);
    await client.connect(server.transport);
    const uris = await client.uris();
    assert.ok(uris.includes(fileUri(alpha, 'a1.txt')));
    assert.ok(!uris.some((uri) => uri.startsWith(pathToFileURL(beta).href)));
    await client.setRoots([alpha, beta]);
    await client.client.request({ method: 'ping' });
    assert.equal(client.asked, 0);
    await client.client.close();
  });

  test('a client that offers no roots gets one clear error, and the server ends with exit code 2', async () => {
    const server = serve();
    const client = new RootsClient([], { offerRoots: false });
    await assert.rejects(client.connect(server.transport), /this client does not offer roots/);
    await waitFor(() => server.exitCode() === 2, 30_000, 'the refusal');
    assert.equal(server.stderr().match(/folder-mcp: no folder given, and this client does not offer roots/g)?.length, 1);
  });

  test('a client pinned to 2026-07-28 (no roots in that era) is told to use initialize or give folders', async () => {
    const server = serve();
    const client = new Client({ name: 'modern', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await assert.rejects(client.connect(server.transport));
    await server.close();
  });

  test('the built binary: a client without roots gets one line on stderr and exit code 2', async () => {
    const child = spawn(process.execPath, [CLI, '--watcher', 'none'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'no-roots', version: '0' } } })}\n`);
    assert.equal(await exited, 2);
    const answer = JSON.parse(stdout.trim()) as { id: number; error: { message: string } };
    assert.equal(answer.id, 1);
    assert.match(answer.error.message, /does not offer roots/);
    assert.deepEqual(stderr.split('\n').filter((line) => line.startsWith('folder-mcp: ')), [
      'folder-mcp: no folder given, and this client does not offer roots (its initialize has no roots capability): give the folders to serve on the command line',
    ]);
  });

  test('the built binary with an auto-mode v2 client: the probe is answered as a 2025-only server, and the client falls back to initialize and roots', async () => {
    const auto = new Client({ name: 'auto', version: '0' }, { capabilities: { roots: { listChanged: true } }, versionNegotiation: { mode: 'auto' } });
    auto.setRequestHandler('roots/list', async () => ({ roots: [{ uri: pathToFileURL(alpha).href }] }));
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, '--watcher', 'none'], env: { ...(process.env as Record<string, string>), ...env }, stderr: 'pipe' });
    await auto.connect(transport);
    try {
      assert.equal(auto.getProtocolEra(), 'legacy');
      const page = (await auto.request({ method: 'resources/list', params: {} })) as unknown as Listed;
      assert.ok(page.resources.some((r) => r.uri === fileUri(alpha, 'a1.txt')));
    } finally {
      await auto.close();
    }
  });
});

describe('folderOf: a root URI as a local folder (pure)', () => {
  const cases: Array<[unknown, RegExp | string]> = [
    ['file:///home/me/proj', '/home/me/proj'],
    ['file:///home/me/with%20space', '/home/me/with space'],
    ['https://example.com/x', /only file: roots name a folder, not https:/],
    ['not a uri', /not a URI/],
    [42, /not a string/],
    ['file:///a%2Fb', /must not include encoded \/ characters/],
  ];
  for (const [uri, expected] of cases) {
    test(`${String(uri)}`, () => {
      const found = folderOf(uri);
      if (typeof expected === 'string') assert.deepEqual(found, { folder: expected });
      else assert.match('problem' in found ? found.problem : `folder ${found.folder}`, expected);
    });
  }
});
