// The pure checks in front of the HTTP endpoint, as tables.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseCliArgs, parseHttpListen, UsageError } from '../../src/config.ts';
import { allowedHostsFor, bearerToken, checkRequest, ExpectedToken, guardPolicy, headersOf, isLoopbackHost, type GuardPolicy } from '../../src/http/guard.ts';
import { rewriteJson, toLegacyResponse } from '../../src/protocol/sdk/legacy-not-found-http.ts';
import { loadSecrets } from '../../src/http/secrets.ts';
import { tempDir } from '../basics.ts';

const TOKEN = 'tok-0123456789abcdef';
const open: GuardPolicy = { allowedHosts: allowedHostsFor('127.0.0.1', ['mcp.example.com']), token: undefined };
const locked: GuardPolicy = guardPolicy(open.allowedHosts, TOKEN);

describe('checkRequest', () => {
  const cases: Array<[string, GuardPolicy, { host?: string; hostLines?: number; origin?: string; authorization?: string; authorizationLines?: number }, number | null]> = [
    ['loopback Host with port', open, { host: '127.0.0.1:8080' }, null],
    ['localhost', open, { host: 'localhost:1' }, null],
    ['IPv6 loopback', open, { host: '[::1]:8080' }, null],
    ['allowed proxy name', open, { host: 'mcp.example.com' }, null],
    ['allowed name, other case', open, { host: 'MCP.Example.com' }, null],
    ['foreign Host', open, { host: 'evil.example:8080' }, 403],
    ['rebinding name ending in an allowed one', open, { host: 'mcp.example.com.evil.example' }, 403],
    ['no Host', open, {}, 403],
    ['garbage Host', open, { host: 'a b' }, 403],
    ['loopback Origin', open, { host: '127.0.0.1', origin: 'http://localhost:3000' }, null],
    ['allowed Origin', open, { host: '127.0.0.1', origin: 'https://mcp.example.com' }, null],
    ['foreign Origin', open, { host: '127.0.0.1', origin: 'https://evil.example' }, 403],
    ['opaque Origin null', open, { host: '127.0.0.1', origin: 'null' }, 403],
    ['token not asked', open, { host: '127.0.0.1', authorization: 'Bearer whatever' }, null],
    ['token missing', locked, { host: '127.0.0.1' }, 401],
    ['token right', locked, { host: '127.0.0.1', authorization: `Bearer ${TOKEN}` }, null],
    ['scheme case-insensitive', locked, { host: '127.0.0.1', authorization: `bearer ${TOKEN}` }, null],
    ['token wrong', locked, { host: '127.0.0.1', authorization: `Bearer ${TOKEN}x` }, 401],
    ['token prefix', locked, { host: '127.0.0.1', authorization: `Bearer ${TOKEN.slice(0, 8)}` }, 401],
    ['Basic scheme', locked, { host: '127.0.0.1', authorization: `Basic ${TOKEN}` }, 401],
    ['bare token', locked, { host: '127.0.0.1', authorization: TOKEN }, 401],
    ['Host checked before the token', locked, { host: 'evil.example', authorization: `Bearer ${TOKEN}` }, 403],
    ['Origin checked before the token', locked, { host: '127.0.0.1', origin: 'https://evil.example', authorization: `Bearer ${TOKEN}` }, 403],
    ['two Host lines, the first allowed', open, { host: '127.0.0.1', hostLines: 2 }, 400],
    ['two Host lines, with the token', locked, { host: '127.0.0.1', hostLines: 2, authorization: `Bearer ${TOKEN}` }, 400],
    ['one Host line, counted', open, { host: '127.0.0.1', hostLines: 1 }, null],
    ['two Authorization lines, the first right', locked, { host: '127.0.0.1', authorization: `Bearer ${TOKEN}`, authorizationLines: 2 }, 400],
    ['one Authorization line, counted', locked, { host: '127.0.0.1', authorization: `Bearer ${TOKEN}`, authorizationLines: 1 }, null],
    ['two Authorization lines, no token asked', open, { host: '127.0.0.1', authorizationLines: 2 }, null],
  ];
  for (const [name, policy, headers, status] of cases) {
    test(name, () => {
      const refusal = checkRequest(policy, { host: headers.host, hostLines: headers.hostLines, origin: headers.origin, authorization: headers.authorization, authorizationLines: headers.authorizationLines });
      assert.equal(refusal?.status ?? null, status);
      if (status === 401) assert.match(refusal!.headers['www-authenticate']!, /^Bearer realm="folder-mcp"/);
    });
  }
});

test('headersOf: the Host lines counted in any case, the headers as Node parsed them', () => {
  const headers = { host: 'a', origin: 'http://a', authorization: 'Bearer x' };
  assert.deepEqual(headersOf({ headers, rawHeaders: ['Host', 'a', 'HOST', 'b', 'Origin', 'http://a'] }), { ...headers, hostLines: 2, authorizationLines: 0 });
  assert.equal(headersOf({ headers, rawHeaders: ['Authorization', 'Bearer a', 'authorization', 'Bearer b'] }).authorizationLines, 2);
  assert.equal(headersOf({ headers, rawHeaders: ['host', 'a', 'X-Host', 'b'] }).hostLines, 1);
  assert.equal(headersOf({ headers: {}, rawHeaders: [] }).hostLines, 0);
  assert.equal(headersOf({ headers: { origin: ['http://a', 'http://b'] }, rawHeaders: [] }).origin, 'http://a, http://b');
});

test('bearerToken and ExpectedToken', () => {
  assert.equal(bearerToken(`Bearer ${TOKEN}`), TOKEN);
  assert.equal(bearerToken(`Bearer  ${TOKEN} `), TOKEN);
  assert.equal(bearerToken('Bearer a b'), undefined);
  assert.equal(bearerToken('Bearer'), undefined);
  assert.equal(bearerToken(undefined), undefined);
  const ours = new ExpectedToken(TOKEN);
  assert.equal(ours.matches(TOKEN), true);
  assert.equal(ours.matches(`${TOKEN}x`), false);
  assert.equal(ours.matches(''), false);
  // Each policy holds its own token's hash: two endpoints of one process, two tokens, neither takes the other's.
  const other = new ExpectedToken('other-token');
  assert.equal(other.matches(TOKEN), false);
  assert.equal(other.matches('other-token'), true);
  assert.equal(ours.matches(TOKEN), true);
  assert.equal(ours.matches('other-token'), false);
  assert.equal(guardPolicy([], undefined).token, undefined);
});

test('isLoopbackHost', () => {
  for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) assert.equal(isLoopbackHost(host), true, host);
  for (const host of ['0.0.0.0', '::', '192.168.1.5', '10.0.0.1', 'example.com', '128.0.0.1', '::ffff:10.0.0.1']) {
    assert.equal(isLoopbackHost(host), false, host);
  }
});

test('allowedHostsFor: loopback names, a specific bound address, never a wildcard', () => {
  assert.deepEqual(allowedHostsFor('127.0.0.1').sort(), ['127.0.0.1', '[::1]', 'localhost']);
  assert.ok(allowedHostsFor('192.168.1.5').includes('192.168.1.5'));
  assert.ok(allowedHostsFor('fd00::5').includes('[fd00::5]'));
  assert.deepEqual(allowedHostsFor('0.0.0.0').sort(), ['127.0.0.1', '[::1]', 'localhost']);
  assert.ok(allowedHostsFor('::', ['Proxy.Example']).includes('proxy.example'));
});

test('--http [HOST:]PORT and the options that need it', () => {
  assert.deepEqual(parseHttpListen('8080'), { host: '127.0.0.1', port: 8080 });
  assert.deepEqual(parseHttpListen('0'), { host: '127.0.0.1', port: 0 });
  assert.deepEqual(parseHttpListen('0.0.0.0:80'), { host: '0.0.0.0', port: 80 });
  assert.deepEqual(parseHttpListen('[::1]:3000'), { host: '::1', port: 3000 });
  assert.deepEqual(parseHttpListen('localhost:3000'), { host: 'localhost', port: 3000 });
  for (const bad of ['', 'x', ':80', '1.2.3.4:', '70000', 'a:b:80', 'http://x:80']) assert.throws(() => parseHttpListen(bad), UsageError, bad);
  const run = parseCliArgs(['--http', '9000', '--allowed-host', 'MCP.example.com', '--token-file', '/t', '/srv']);
  assert.equal(run.kind, 'run');
  if (run.kind === 'run') {
    assert.deepEqual(run.config.http, { host: '127.0.0.1', port: 9000 });
    assert.deepEqual(run.config.allowedHosts, ['mcp.example.com']);
  }
  assert.throws(() => parseCliArgs(['--token-file', '/t', '/srv']), /applies to --http and --metrics only/);
  assert.throws(() => parseCliArgs(['--http', '1', '--allowed-host', 'https://x', '/srv']), UsageError);
});

test('loadSecrets: a file wins over the environment; short or unsendable secrets are usage errors', () => {
  const dir = tempDir();
  try {
    const file = join(dir.path, 'token');
    writeFileSync(file, `${TOKEN}-file\n`);
    const http = { host: '127.0.0.1', port: 0 };
    assert.deepEqual(loadSecrets({ http }, { FOLDER_MCP_TOKEN: TOKEN }), { token: TOKEN, cursorKey: undefined });
    assert.equal(loadSecrets({ http, tokenFile: file }, { FOLDER_MCP_TOKEN: TOKEN }).token, `${TOKEN}-file`);
    assert.equal(loadSecrets({}, { FOLDER_MCP_TOKEN: TOKEN }).token, undefined, 'stdio has no token');
    assert.equal(loadSecrets({ cursorKeyFile: file }, {}).cursorKey, `${TOKEN}-file`);
    assert.equal(loadSecrets({}, { FOLDER_MCP_CURSOR_KEY: `  ${TOKEN} ` }).cursorKey, TOKEN);
    assert.throws(() => loadSecrets({ http }, { FOLDER_MCP_TOKEN: 'short' }), /at least 16/);
    assert.throws(() => loadSecrets({ http }, { FOLDER_MCP_TOKEN: 'has spaces in the middle' }), /may only hold/);
    assert.throws(() => loadSecrets({}, { FOLDER_MCP_CURSOR_KEY: 'short' }), /at least 16/);
    assert.throws(() => loadSecrets({ http, tokenFile: join(dir.path, 'missing') }, {}), /cannot read --token-file/);
    // Given by mistake (red-team findings): /dev/zero was read until memory ran out, a FIFO held the start for good.
    assert.throws(() => loadSecrets({ http, tokenFile: dir.path }, {}), /cannot read --token-file .*: (not a regular file|EISDIR)/);
    writeFileSync(join(dir.path, 'huge'), 'k'.repeat(5000));
    assert.throws(() => loadSecrets({ cursorKeyFile: join(dir.path, 'huge') }, {}), /cannot read --cursor-key-file .*huge: larger than 4096 bytes/);
    writeFileSync(join(dir.path, 'just'), `${'k'.repeat(4095)}\n`);
    assert.equal(loadSecrets({ cursorKeyFile: join(dir.path, 'just') }, {}).cursorKey, 'k'.repeat(4095));
    if (process.platform !== 'win32') {
      assert.throws(() => loadSecrets({ http, tokenFile: '/dev/zero' }, {}), /cannot read --token-file \/dev\/zero: not a regular file/);
      execFileSync('mkfifo', [join(dir.path, 'fifo')]);
      assert.throws(() => loadSecrets({ http, tokenFile: join(dir.path, 'fifo') }, {}), /not a regular file/);
    }
  } finally {
    dir.cleanup();
  }
});

test('legacy answers: not found becomes -32002, everything else passes as it was', () => {
  const notFound = { jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'Resource not found', data: { uri: 'file:///x' } } };
  assert.deepEqual(JSON.parse(rewriteJson(JSON.stringify(notFound))), { ...notFound, error: { ...notFound.error, code: -32002 } });
  const other = JSON.stringify({ jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'Invalid cursor' } });
  assert.equal(rewriteJson(other), other);
  const result = JSON.stringify({ jsonrpc: '2.0', id: 3, result: { contents: [{ text: 'Resource not found' }] } });
  assert.equal(rewriteJson(result), result);
  assert.equal(rewriteJson('{broken Resource not found'), '{broken Resource not found');
});

/** A Response whose body arrives in chunks of `size` bytes. */
function chunked(text: string, size: number, type = 'application/json'): Response {
  const bytes = new TextEncoder().encode(text);
  return new Response(
    new ReadableStream({
      start(controller) {
        for (let at = 0; at < bytes.length; at += size) controller.enqueue(bytes.subarray(at, at + size));
        controller.close();
      },
    }),
    { headers: { 'content-type': type } },
  );
}

test('legacy JSON answers are searched as bytes: a not-found split over chunks is found, a large answer passes byte for byte', async () => {
  const notFound = JSON.stringify([
    { jsonrpc: '2.0', id: 1, result: { contents: [] } },
    { jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Resource not found', data: { uri: 'file:///x' } } },
  ]);
  for (const size of [1, 3, 7, 64, 1 << 20]) {
    const rewritten = JSON.parse(await (await toLegacyResponse(chunked(notFound, size))).text()) as { error?: { code: number } }[];
    assert.equal(rewritten[1]?.error?.code, -32002, `chunks of ${size}`);
  }
  const large = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { contents: [{ blob: 'QUJD'.repeat(2_000_000) }] } });
  assert.equal(await (await toLegacyResponse(chunked(large, 65_536))).text(), large);
});

test('legacy SSE answers are rewritten line by line as bytes: a not-found event split anywhere is found, other events pass byte for byte', async () => {
  const notFound = { jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Resource not found', data: { uri: 'file:///café' } } };
  const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1, message: 'Resource not found is only text here' } };
  const event = (message: unknown, id: string) => `event: message\nid: ${id}\ndata: ${JSON.stringify(message)}\n\n`;
  // Cut every byte or five, a 2 KB event already spans hundreds of chunks (an 80 KB one took a minute on a loaded machine).
  for (const [size, blobBytes] of [[1, 2_000], [5, 2_000], [64, 80_000], [4096, 80_000], [1 << 20, 80_000]] as const) {
    const large = { jsonrpc: '2.0', id: 1, result: { contents: [{ blob: 'QUJD'.repeat(blobBytes / 4), text: 'é' }] } };
    const stream = event(large, 'a') + event(progress, 'b') + event(notFound, 'c');
    const text = await (await toLegacyResponse(chunked(stream, size, 'text/event-stream'))).text();
    const events = text.split('\n\n').filter(Boolean);
    assert.equal(events.length, 3, `chunks of ${size}`);
    assert.equal(`${events[0]}\n\n`, event(large, 'a'), `chunks of ${size}: the large event as it was`);
    assert.deepEqual(JSON.parse(events[1]!.split('data: ')[1]!), progress, `chunks of ${size}`);
    assert.deepEqual(JSON.parse(events[2]!.split('data: ')[1]!), { ...notFound, error: { ...notFound.error, code: -32002 } }, `chunks of ${size}`);
  }
});
