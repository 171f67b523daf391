// The HTTP endpoint in process (real sockets on 127.0.0.1, a real App): what
// a listen stream or a 2025-era session holds is released however it ends.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { HttpEndpoint } from '../../src/http/serve.ts';
import { waitFor } from '../helpers.ts';
import { connectHttp, rawPost, serveInProcess } from '../http-helpers.ts';
import { TestClock } from '../test-clock.ts';
import { DEFAULT_SESSION_LIMITS, sweepEveryMs } from '../../src/http/sessions.ts';
import type { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';

describe('listen streams and sessions over HTTP, in process', () => {
  // The default idle and gone times, on a clock the tests move: no sweep runs unless a test advances it.
  const clock = new TestClock();
  const { idleMs, goneMs } = DEFAULT_SESSION_LIMITS;
  // Moved on by a time limit and one sweep's period, the clock has swept once with every session past that limit.
  const sweepMs = sweepEveryMs(DEFAULT_SESSION_LIMITS);
  const served = serveInProcess({ clock });
  let endpoint: HttpEndpoint;
  let rootUri: string;
  before(() => ({ endpoint, rootUri } = served));

  test('closing a listen, or the client going away, releases what the stream named', async () => {
    const conn = await connectHttp(endpoint.url, 'modern');
    const client = conn.client as Client;
    const one = await client.listen({ resourceSubscriptions: [`${rootUri}a.txt`, `${rootUri}sub`] });
    const two = await client.listen({ resourceSubscriptions: [`${rootUri}a.txt`] });
    assert.deepEqual(endpoint.listeners.size, { streams: 2, uris: 2 });
    await one.close();
    await waitFor(() => endpoint.listeners.size.streams === 1, 30_000, 'the first stream released');
    assert.deepEqual(endpoint.listeners.size, { streams: 1, uris: 1 }, 'a.txt is still held by the second stream');
    // No close of the listen itself: the client just goes.
    await conn.close();
    await waitFor(() => endpoint.listeners.size.streams === 0, 30_000, 'the second stream released on disconnect');
    assert.deepEqual(endpoint.listeners.size, { streams: 0, uris: 0 });
    void two;
  });

  test('a 2025-era session lives while its client does, whatever the idle time, and goes on DELETE', async () => {
    const conn = await connectHttp(endpoint.url, 'legacy');
    await conn.request('resources/subscribe', { uri: `${rootUri}a.txt` });
    assert.equal(endpoint.sessions.size, 1);
    await waitFor(() => endpoint.sessions.busy === 1, 30_000, 'the session\'s GET stream open');
    // Past the idle time and the gone time, and a sweep: its GET stream is open, so it is not idle.
    clock.advance(idleMs + goneMs + sweepMs);
    assert.equal(endpoint.sessions.size, 1);
    const page = await conn.request('resources/list', {});
    assert.ok((page.resources as unknown[]).length > 0);
    await ((conn.client as V1Client).transport as V1Transport).terminateSession();
    assert.equal(endpoint.sessions.size, 0);
    await conn.close();
  });

  test('many connect / listen / disconnect cycles leave nothing behind', async () => {
    for (let i = 0; i < 60; i++) {
      const conn = await connectHttp(endpoint.url, i % 2 ? 'modern' : 'legacy');
      if (conn.era === 'modern') await (conn.client as Client).listen({ resourceSubscriptions: [`${rootUri}sub/`], resourcesListChanged: true });
      else await conn.request('resources/subscribe', { uri: `${rootUri}a.txt` });
      // Half the 2025-era clients end their session; the rest just go, as most clients do.
      if (i % 4 === 0) await ((conn.client as V1Client).transport as V1Transport).terminateSession();
      await conn.close();
    }
    await waitFor(() => endpoint.listeners.size.streams === 0, 30_000, 'every stream released');
    assert.deepEqual(endpoint.listeners.size, { streams: 0, uris: 0 });
    // The clients that just went: once nothing of theirs is open, the idle time closes their sessions.
    await waitFor(() => endpoint.sessions.busy === 0, 30_000, 'every GET stream ended');
    clock.advance(idleMs + sweepMs);
    assert.equal(endpoint.sessions.size, 0, 'every session closed (ended, or idle once its client went)');
  });
});

describe('2025-era sessions whose client went away', () => {
  const clock = new TestClock();
  const served = serveInProcess({ clock });

  test('a session whose GET stream ended closes soon; one that never had a stream waits out the idle time', async () => {
    const init = await rawPost(served.endpoint.url, {});
    const quiet = String(init.headers['mcp-session-id']);
    const conn = await connectHttp(served.endpoint.url, 'legacy');
    await conn.request('resources/subscribe', { uri: `${served.rootUri}a.txt` });
    assert.equal(served.endpoint.sessions.size, 2);
    // The client goes without DELETE, as most do: its GET stream ends with it.
    await conn.close();
    await waitFor(() => served.endpoint.sessions.busy === 0, 30_000, 'the gone client\'s GET stream ended');
    clock.advance(DEFAULT_SESSION_LIMITS.goneMs + sweepEveryMs(DEFAULT_SESSION_LIMITS));
    assert.equal(served.endpoint.sessions.size, 1, 'the gone client\'s session closed');
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'resources/list', params: {} });
    const still = await rawPost(served.endpoint.url, { 'mcp-session-id': quiet, 'mcp-protocol-version': '2025-11-25' }, list);
    assert.equal(still.status, 200, 'the session without a stream is still there (10 min idle)');
  });
});

describe('2025-era sessions past the cap', () => {
  const clock = new TestClock();
  const served = serveInProcess({ maxSessions: 2, clock });

  test('a new session evicts the longest-idle one; when none is idle it is refused with 503', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const init = await rawPost(served.endpoint.url, {});
      assert.equal(init.status, 200);
      ids.push(String(init.headers['mcp-session-id']));
      clock.advance(1); // each idle a moment less than the one before
    }
    assert.equal(served.endpoint.sessions.size, 2);
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'resources/list', params: {} });
    const headers = (id: string) => ({ 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' });
    assert.equal((await rawPost(served.endpoint.url, headers(ids[0]!), list)).status, 404, 'the first, idlest, was evicted');
    assert.equal((await rawPost(served.endpoint.url, headers(ids[2]!), list)).status, 200);

    // Two clients with their GET streams open: neither is idle, so a third is refused, and told when to retry.
    const a = await connectHttp(served.endpoint.url, 'legacy');
    const b = await connectHttp(served.endpoint.url, 'legacy');
    try {
      // Both GET streams open (each client opens its own after initialize; under load that comes later).
      await waitFor(() => served.endpoint.sessions.busy === 2, 30_000, 'two sessions with their GET streams open');
      const refused = await rawPost(served.endpoint.url, {});
      assert.equal(refused.status, 503);
      assert.equal(refused.headers['retry-after'], '5');
      assert.match(refused.body, /2 sessions are open/);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
