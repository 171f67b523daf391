// The HTTP endpoint in process (real sockets on 127.0.0.1, a real App): what
// a listen stream holds is released however the stream ends.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/client';
import { createApp, type App } from '../../src/app.ts';
import { parseCliArgs } from '../../src/config.ts';
import { allowedHostsFor } from '../../src/http/guard.ts';
import { serveHttp, type HttpEndpoint } from '../../src/http/serve.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { tempDir, waitFor, writeTree } from '../helpers.ts';
import { connectHttp } from '../http-helpers.ts';

describe('listen streams over HTTP, in process', () => {
  let root: ReturnType<typeof tempDir>;
  let app: App;
  let endpoint: HttpEndpoint;
  let rootUri: string;

  before(async () => {
    root = tempDir();
    writeTree(root.path, { 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });
    rootUri = pathToFileURL(root.path).href + '/';
    const parsed = parseCliArgs([root.path, '--watcher', 'none']);
    assert.equal(parsed.kind, 'run');
    if (parsed.kind !== 'run') return;
    app = createApp(parsed.config, [makeRoot(root.path)], ':memory:', silentLogger, { name: 'folder-mcp', version: '0' });
    endpoint = await serveHttp({
      app,
      info: { name: 'folder-mcp', version: '0' },
      listen: { host: '127.0.0.1', port: 0 },
      policy: { allowedHosts: allowedHostsFor('127.0.0.1'), token: undefined },
      log: silentLogger,
    });
  });

  after(async () => {
    await endpoint?.close();
    await app?.close();
    root?.cleanup();
  });

  test('closing a listen, or the client going away, releases what the stream named', async () => {
    const conn = await connectHttp(endpoint.url, 'modern');
    const client = conn.client as Client;
    const one = await client.listen({ resourceSubscriptions: [`${rootUri}a.txt`, `${rootUri}sub`] });
    const two = await client.listen({ resourceSubscriptions: [`${rootUri}a.txt`] });
    assert.deepEqual(endpoint.listeners.size, { streams: 2, uris: 2 });
    await one.close();
    await waitFor(() => endpoint.listeners.size.streams === 1, 5_000, 'the first stream released');
    assert.deepEqual(endpoint.listeners.size, { streams: 1, uris: 1 }, 'a.txt is still held by the second stream');
    // No close of the listen itself: the client just goes.
    await conn.close();
    await waitFor(() => endpoint.listeners.size.streams === 0, 5_000, 'the second stream released on disconnect');
    assert.deepEqual(endpoint.listeners.size, { streams: 0, uris: 0 });
    void two;
  });

  test('many connect / listen / disconnect cycles leave nothing behind', async () => {
    for (let i = 0; i < 50; i++) {
      const conn = await connectHttp(endpoint.url, i % 2 ? 'modern' : 'legacy');
      if (conn.era === 'modern') await (conn.client as Client).listen({ resourceSubscriptions: [`${rootUri}sub/`], resourcesListChanged: true });
      else await conn.request('resources/subscribe', { uri: `${rootUri}a.txt` });
      await conn.close();
    }
    await waitFor(() => endpoint.listeners.size.streams === 0, 5_000, 'every stream released');
    assert.deepEqual(endpoint.listeners.size, { streams: 0, uris: 0 });
  });
});
