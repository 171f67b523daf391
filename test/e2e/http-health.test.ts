// /healthz and /readyz over real sockets, in process (a real App, a real
// scan): no token needed, Host still checked, 503 with Retry-After before the
// first scan is over and while the server drains, and nothing about the
// folders in any body.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { waitFor } from '../helpers.ts';
import { rawRequest, serveInProcess, startInProcess, type RawResponse } from '../http-helpers.ts';

const TOKEN = 'health-test-token-0123456789';

/** Nothing an unauthenticated caller could learn of the folders: no path, no file name, no count. */
function assertRevealsNothing(response: RawResponse, root: string): void {
  assert.doesNotMatch(response.body, /[/\\]|a\.txt|b\.txt|sub|\d/, `a probe's body says a state only: ${response.body}`);
  assert.ok(!response.body.includes(root));
}

describe('/healthz and /readyz with a token set', () => {
  const served = serveInProcess({}, {}, { token: TOKEN });
  const url = (path: string) => `http://127.0.0.1:${served.port}${path}`;

  test('answer without the token (once the first scan is over), while /mcp still asks for it', async () => {
    await served.app.services().index.readiness.reached('scanned');
    const health = await rawRequest(url('/healthz'), 'GET');
    assert.equal(health.status, 200);
    assert.deepEqual(JSON.parse(health.body), { status: 'ok' });
    assert.equal(health.headers['cache-control'], 'no-store');
    assertRevealsNothing(health, served.root.path);
    const ready = await rawRequest(url('/readyz'), 'GET');
    assert.equal(ready.status, 200);
    assert.deepEqual(JSON.parse(ready.body), { status: 'ok' });
    assertRevealsNothing(ready, served.root.path);
    // A query string changes nothing.
    assert.equal((await rawRequest(url('/readyz?verbose=1'), 'GET')).status, 200);
    assert.equal((await rawRequest(url('/mcp'), 'GET')).status, 401);
    // A wrong token on a probe is not looked at.
    assert.equal((await rawRequest(url('/healthz'), 'GET', { authorization: 'Bearer wrong-token-wrong-token' })).status, 200);
  });

  test('HEAD answers the same status with no body; other methods are 405', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const head = await rawRequest(url(path), 'HEAD');
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const refused = await rawRequest(url(path), method);
        assert.equal(refused.status, 405, `${method} ${path}`);
        assert.equal(refused.headers.allow, 'GET, HEAD');
      }
    }
  });

  test('a foreign Host or Origin is refused (403), as for /mcp', async () => {
    for (const path of ['/healthz', '/readyz']) {
      assert.equal((await rawRequest(url(path), 'GET', { host: 'evil.example' })).status, 403);
      assert.equal((await rawRequest(url(path), 'GET', { origin: 'http://evil.example' })).status, 403);
      assert.equal((await rawRequest(url(path), 'GET', { host: `localhost:${served.port}` })).status, 200);
    }
  });

  test('two Host lines are a 400 (RFC 9112), whichever comes first: Node would keep the first', async () => {
    await served.app.services().index.readiness.reached('scanned');
    const statusOf = (head: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(served.port, '127.0.0.1');
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => (text += chunk));
        socket.on('end', () => resolve(text.split('\r\n')[0] ?? ''));
        socket.on('error', reject);
        socket.end(`${head}\r\nConnection: close\r\n\r\n`);
      });
    const local = `Host: 127.0.0.1:${served.port}`;
    for (const path of ['/healthz', '/mcp']) {
      assert.match(await statusOf(`GET ${path} HTTP/1.1\r\n${local}\r\nHost: evil.example`), / 400 /, path);
      assert.match(await statusOf(`GET ${path} HTTP/1.1\r\nHost: evil.example\r\n${local}`), / 40[03] /, path);
      assert.match(await statusOf(`GET ${path} HTTP/1.1\r\n${local}\r\n${local}`), / 400 /, path);
    }
    // One Host line, as every client sends: /healthz answers (/mcp asks for the token).
    assert.match(await statusOf(`GET /healthz HTTP/1.1\r\n${local}`), / 200 /);
  });
});

describe('/readyz follows the first scan', () => {
  test('503 with Retry-After while the first scan runs, 200 once it is over; /healthz is 200 throughout', async () => {
    // Large enough that the scan is far from over when the first probe is answered (some 10,000 entries:
    // hundreds of milliseconds on a quiet machine, against a probe's round trip of about one).
    const tree: Record<string, string> = {};
    for (let d = 0; d < 50; d++) for (let f = 0; f < 200; f++) tree[`d${d}/f${f}.txt`] = '';
    const served = await startInProcess({}, tree);
    try {
      const index = served.app.services().index;
      const url = (path: string) => `http://127.0.0.1:${served.port}${path}`;
      // serveHttp returned in the turn that started the scan: it cannot be over yet.
      assert.equal(index.readiness.state !== 'scanning', false);
      const early = await rawRequest(url('/readyz'), 'GET');
      assert.equal(early.status, 503, 'the first probe came while the scan of 10,000 files ran');
      assert.deepEqual(JSON.parse(early.body), { status: 'starting' });
      assert.equal(early.headers['retry-after'], '1');
      assertRevealsNothing(early, served.root.path);
      assert.equal((await rawRequest(url('/healthz'), 'GET')).status, 200, 'alive while not ready');
      // Never 200 before the scan is over: each answer is checked against the index as it was when the probe left.
      let last: RawResponse = early;
      await waitFor(
        async () => {
          const scanOverBefore = index.readiness.state !== 'scanning';
          last = await rawRequest(url('/readyz'), 'GET');
          if (last.status === 200) assert.ok(index.readiness.state !== 'scanning', '200 only once the scan is over');
          if (scanOverBefore) assert.equal(last.status, 200, 'ready once the scan is over');
          return last.status === 200;
        },
        60_000,
        '/readyz turning 200',
      );
      assert.deepEqual(JSON.parse(last.body), { status: 'ok' });
      assert.equal(last.headers['retry-after'], undefined);
    } finally {
      await served.close();
    }
  });
});

describe('/readyz while the server drains', () => {
  test('503 (stopping) with Retry-After and Connection: close, while /healthz still answers 200', async () => {
    const served = await startInProcess({ drainMs: 60_000 });
    let closed: Promise<void> | undefined;
    // A connection that has sent nothing holds the drain open (it may carry a request not read yet).
    const holder = connect(served.port, '127.0.0.1');
    const connected = new Promise<void>((resolve) => holder.once('connect', resolve));
    try {
      await served.app.services().index.readiness.reached('scanned');
      await connected;
      const url = (path: string) => `http://127.0.0.1:${served.port}${path}`;
      assert.equal((await rawRequest(url('/readyz'), 'GET')).status, 200);
      closed = served.endpoint.close();
      const draining = await rawRequest(url('/readyz'), 'GET');
      assert.equal(draining.status, 503);
      assert.deepEqual(JSON.parse(draining.body), { status: 'stopping' });
      assert.equal(draining.headers['retry-after'], '5');
      assert.equal(draining.headers.connection, 'close');
      assertRevealsNothing(draining, served.root.path);
      const health = await rawRequest(url('/healthz'), 'GET');
      assert.equal(health.status, 200);
      // /mcp is refused meanwhile, as before.
      assert.equal((await rawRequest(url('/mcp'), 'GET')).status, 503);
    } finally {
      holder.destroy();
      await closed;
      await served.close();
    }
  });
});
