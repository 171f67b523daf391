import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResponse } from '@modelcontextprotocol/server';
import { isJsonRpcMessage, leadingRequestId, lifecycleStep, malformedReply, readLine, type Era } from '../../src/protocol/wire.ts';
import { MAX_REQUEST_LINE_BYTES } from '../../src/protocol/sdk/stdio-transport.ts';
import { CLI, tempDir, waitFor, writeTree } from '../helpers.ts';

const ID_MESSAGE = 'Invalid Request: id must be a string or an integer';

describe('malformedReply', () => {
  const rows: Array<{ line: string; expected: ReturnType<typeof malformedReply> }> = [
    { line: '', expected: undefined },
    { line: '{"jsonrpc":"2.0","id":1,"method":"ping"}', expected: undefined },
    { line: '{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"prefix":"x"}}', expected: undefined },
    { line: '{"jsonrpc":"2.0","method":"notifications/initialized"}', expected: undefined },
    { line: '{"jsonrpc":"2.0","id":"a","result":{}}', expected: undefined },
    { line: '{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}', expected: undefined },
    { line: 'not json', expected: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } } },
    { line: '{"jsonrpc":"2.0","id":1,"method":"resources/list"', expected: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } } },
    {
      line: '{"jsonrpc":"2.0","id":2,"method":"resources/list","params":[]}',
      expected: { jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Invalid params: params must be an object' } },
    },
    {
      line: '{"jsonrpc":"2.0","id":"s","method":"resources/read","params":"file:///x"}',
      expected: { jsonrpc: '2.0', id: 's', error: { code: -32602, message: 'Invalid params: params must be an object' } },
    },
    {
      line: '{"jsonrpc":"2.0","id":3,"method":"resources/list","params":null}',
      expected: { jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'Invalid params: params must be an object' } },
    },
    { line: '{"jsonrpc":"2.0","id":4}', expected: { jsonrpc: '2.0', id: 4, error: { code: -32600, message: 'Invalid Request' } } },
    { line: '{"jsonrpc":"1.0","id":5,"method":"ping"}', expected: { jsonrpc: '2.0', id: 5, error: { code: -32600, message: 'Invalid Request' } } },
    { line: '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', expected: { jsonrpc: '2.0', id: null, error: { code: -32600, message: ID_MESSAGE } } },
    // What the SDK drops without a word (each held one of the 16 places in flight for good): each answered now.
    { line: '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', expected: { jsonrpc: '2.0', id: 1.5, error: { code: -32600, message: ID_MESSAGE } } },
    { line: '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}', expected: { jsonrpc: '2.0', id: 9007199254740992, error: { code: -32600, message: ID_MESSAGE } } },
    { line: '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":null}}', expected: { jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Invalid params: _meta must be an object' } } },
    { line: '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":[]}}', expected: { jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Invalid params: _meta must be an object' } } },
    {
      line: '{"jsonrpc":"2.0","id":8,"method":"ping","params":{"_meta":{"progressToken":1.5}}}',
      expected: { jsonrpc: '2.0', id: 8, error: { code: -32602, message: 'Invalid params: _meta.progressToken must be a string or an integer' } },
    },
    {
      line: '{"jsonrpc":"2.0","id":8,"method":"ping","params":{"_meta":{"progressToken":null}}}',
      expected: { jsonrpc: '2.0', id: 8, error: { code: -32602, message: 'Invalid params: _meta.progressToken must be a string or an integer' } },
    },
    { line: '{"jsonrpc":"2.0","id":9,"method":"ping","result":{}}', expected: { jsonrpc: '2.0', id: 9, error: { code: -32600, message: 'Invalid Request: a request has no "result"' } } },
    { line: '{"jsonrpc":"2.0","id":9,"method":"ping","x":1,"y":2}', expected: { jsonrpc: '2.0', id: 9, error: { code: -32600, message: 'Invalid Request: a request has no "x", "y"' } } },
    { line: '{"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":null}}', expected: null },
    { line: '{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}', expected: undefined },
    { line: '[1,2]', expected: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } } },
    { line: '42', expected: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } } },
    { line: '{"jsonrpc":"2.0","method":"notifications/x","params":[]}', expected: null },
    { line: '{"jsonrpc":"2.0","id":6,"result":5}', expected: null },
  ];
  for (const { line, expected } of rows) {
    test(line || '(blank)', () => assert.deepEqual(malformedReply(line), expected));
  }
  test('readLine hands a well-formed line on parsed (the transport parses each line once)', () => {
    for (const { line, expected } of rows) {
      const read = readLine(line);
      if (line === '') assert.equal(read, undefined);
      else if (expected === undefined) assert.deepEqual(read, { message: JSON.parse(line) });
      else assert.deepEqual(read, { reply: expected });
    }
  });
});

describe('isJsonRpcMessage takes what the SDK takes, and nothing else', () => {
  const sdkTakes = (message: unknown) => isJSONRPCRequest(message) || isJSONRPCNotification(message) || isJSONRPCResponse(message);
  const request = { jsonrpc: '2.0', id: 1, method: 'resources/list' };
  const messages: unknown[] = [
    request,
    { ...request, id: 'a' },
    { ...request, id: 0 },
    { ...request, id: -7 },
    { ...request, id: 1.5 },
    { ...request, id: 2 ** 53 },
    { ...request, id: 2 ** 53 - 1 },
    { ...request, id: null },
    { ...request, id: true },
    { ...request, params: {} },
    { ...request, params: [] },
    { ...request, params: null },
    { ...request, params: { cursor: 'x', _meta: {} } },
    { ...request, params: { _meta: null } },
    { ...request, params: { _meta: 'x' } },
    { ...request, params: { _meta: { progressToken: 'p', other: 1 } } },
    { ...request, params: { _meta: { progressToken: 3 } } },
    { ...request, params: { _meta: { progressToken: 1.5 } } },
    { ...request, params: { _meta: { progressToken: {} } } },
    { ...request, params: { _meta: { progressToken: true } } },
    { ...request, params: { _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't' } } } },
    { ...request, params: { _meta: { 'io.modelcontextprotocol/related-task': null } } },
    { ...request, params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } },
    { ...request, result: {} },
    { ...request, error: { code: 1, message: 'x' } },
    { ...request, extra: 1 },
    { ...request, jsonrpc: '1.0' },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', method: 'notifications/initialized', id: 1.5 },
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
    { jsonrpc: '2.0', method: 'notifications/x', params: { _meta: null } },
    { jsonrpc: '2.0', method: 'notifications/x', params: [] },
    { jsonrpc: '2.0', method: 'notifications/x', other: 1 },
    { jsonrpc: '2.0', id: 1, result: {} },
    { jsonrpc: '2.0', id: 1, result: { _meta: {} } },
    { jsonrpc: '2.0', id: 1, result: { _meta: null } },
    { jsonrpc: '2.0', id: 1, result: [] },
    { jsonrpc: '2.0', id: 1, result: 5 },
    { jsonrpc: '2.0', id: 1.5, result: {} },
    { jsonrpc: '2.0', result: {} },
    { jsonrpc: '2.0', id: 1, result: {}, extra: 1 },
    { jsonrpc: '2.0', id: 1, error: { code: 1, message: 'x' } },
    { jsonrpc: '2.0', id: 1, error: { code: 1, message: 'x', data: [1] } },
    { jsonrpc: '2.0', error: { code: 1, message: 'x' } },
    { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'x' } },
    { jsonrpc: '2.0', id: 1, error: { code: 1 } },
    { jsonrpc: '2.0', id: 1, error: { code: 1, message: 'x', extra: 1 } },
    { jsonrpc: '2.0', id: 1, error: 'x' },
    { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } },
    { jsonrpc: '2.0', id: 1 },
    [request],
    'x',
    null,
  ];
  for (const message of messages) {
    test(JSON.stringify(message), () => assert.equal(isJsonRpcMessage(message), sdkTakes(message)));
  }
});

describe('leadingRequestId', () => {
  const rows: Array<[string, string | number | null]> = [
    ['{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{', 7],
    ['{"id":"abc","jsonrpc":"2.0"', 'abc'],
    ['{"jsonrpc":"2.0","method":"tools/call","id":-3,', -3],
    [' { "jsonrpc" : "2.0" , "id" : "q\\"x" ,', 'q"x'],
    ['{"jsonrpc":"2.0","method":"x","params":{"id":9', null],
    ['{"params":{"id":9},"id":1', null],
    ['garbage', null],
    ['{"jsonrpc":"2.0","id":{"a":1}', null],
  ];
  for (const [head, id] of rows) test(head, () => assert.equal(leadingRequestId(head), id));
});

describe('lifecycleStep', () => {
  const request = (method: string, meta?: Record<string, unknown>) => ({
    jsonrpc: '2.0',
    id: 1,
    method,
    params: meta ? { _meta: meta } : {},
  });
  const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
  const rows: Array<{ era: Era; message: Record<string, unknown>; next: Era; refused: boolean; why: string }> = [
    {
      era: 'opening',
      message: { ...request('initialize'), params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } },
      next: 'legacy',
      refused: false,
      why: 'initialize opens the legacy era',
    },
    { era: 'opening', message: request('ping'), next: 'opening', refused: false, why: 'ping is allowed before initialize' },
    { era: 'opening', message: request('resources/list'), next: 'opening', refused: true, why: 'a request before initialize' },
    { era: 'opening', message: request('resources/list', envelope), next: 'modern', refused: false, why: 'the envelope opens the modern era' },
    { era: 'opening', message: request('server/discover', envelope), next: 'opening', refused: false, why: 'the probe settles nothing' },
    { era: 'opening', message: request('server/discover'), next: 'opening', refused: false, why: 'a bare probe too' },
    { era: 'legacy', message: request('initialize'), next: 'legacy', refused: true, why: 'a second initialize' },
    { era: 'legacy', message: request('resources/list'), next: 'legacy', refused: false, why: 'after initialize' },
    { era: 'legacy', message: request('resources/list', envelope), next: 'legacy', refused: false, why: 'no era change after the handshake' },
    { era: 'modern', message: request('initialize'), next: 'modern', refused: false, why: 'the SDK answers a late initialize' },
    { era: 'opening', message: { jsonrpc: '2.0', method: 'notifications/initialized' }, next: 'opening', refused: false, why: 'notifications pass' },
  ];
  const initialize = (params: unknown) => ({ jsonrpc: '2.0', id: 1, method: 'initialize', ...(params === undefined ? {} : { params }) });
  const good = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } };
  const badParams: Array<[string, unknown]> = [
    ['no params', undefined],
    ['a protocolVersion that is a number', { ...good, protocolVersion: 5 }],
    ['no capabilities', { protocolVersion: '2025-11-25', clientInfo: good.clientInfo }],
    ['no clientInfo', { protocolVersion: '2025-11-25', capabilities: {} }],
    ['a clientInfo with no version', { ...good, clientInfo: { name: 't' } }],
  ];
  for (const [why, params] of badParams) {
    test(`initialize with ${why}: -32602, and the era stays open`, () => {
      const step = lifecycleStep('opening', initialize(params));
      assert.equal(step.era, 'opening');
      assert.equal(step.refuse?.error.code, -32602);
    });
  }
  test('initialize with every param it needs opens the legacy era', () => assert.deepEqual(lifecycleStep('opening', initialize(good)), { era: 'legacy' }));
  for (const row of rows) {
    test(row.why, () => {
      const step = lifecycleStep(row.era, row.message);
      assert.equal(step.era, row.next);
      assert.equal(step.refuse !== undefined, row.refused);
      if (step.refuse) assert.equal(step.refuse.error.code, -32600);
    });
  }
});

/** A server on stdio driven line by line, answers collected by id. */
class RawServer {
  readonly child: ChildProcessWithoutNullStreams;
  readonly answers = new Map<unknown, { error?: { code: number; message: string; data?: unknown }; result?: Record<string, unknown> }>();
  readonly nonJson: string[] = [];
  stderr = '';
  exit: number | null | undefined = undefined;

  constructor(args: string[]) {
    this.child = spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.child.on('exit', (code) => (this.exit = code));
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      try {
        const message = JSON.parse(line) as { id: unknown };
        if ('id' in message) this.answers.set(message.id, message as never);
      } catch {
        this.nonJson.push(line);
      }
    });
  }

  send(message: Record<string, unknown> | string): void {
    this.child.stdin.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
  }

  async answer(id: unknown) {
    return (await waitFor(() => this.answers.get(id), 60_000, `the answer to ${String(id)}`))!;
  }

  initialize(id: number, protocolVersion = '2025-11-25'): void {
    this.send({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 't', version: '0' } } });
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  rssKiB(): number {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}

describe('the stdio wire', () => {
  /** The `_meta` envelope of a 2026-07-28 request. */
  const modern = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 't', version: '0' },
  };
  let root: ReturnType<typeof tempDir>;
  const args = () => [root.path, '--db', ':memory:', '--watcher', 'none'];
  before(() => {
    root = tempDir();
    writeTree(root.path, { 'a.txt': 'a' });
  });
  after(() => root.cleanup());

  test('malformed lines each get an answer, and the server keeps serving', async () => {
    const server = new RawServer(args());
    try {
      server.initialize(1);
      server.send('{"jsonrpc":"2.0","id":2,"method":"resources/list","params":[]}');
      server.send('this is not json');
      server.send('{"jsonrpc":"2.0","id":3}');
      server.send({ jsonrpc: '2.0', id: 4, method: 'resources/list', params: {} });
      assert.equal((await server.answer(2)).error!.code, -32602);
      assert.equal((await server.answer(null)).error?.code, -32700);
      assert.equal((await server.answer(3)).error!.code, -32600);
      assert.ok((await server.answer(4)).result, 'a good request after the bad ones is answered');
      assert.deepEqual(server.nonJson, [], 'stdout carries JSON-RPC only');
    } finally {
      server.kill();
    }
  });

  test('the 2025 lifecycle: only ping before initialize, and initialize once', async () => {
    const server = new RawServer(args());
    try {
      server.send({ jsonrpc: '2.0', id: 1, method: 'resources/list', params: {} });
      server.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
      const early = await server.answer(1);
      assert.equal(early.error?.code, -32600);
      assert.match(early.error.message, /before initialize/);
      assert.ok((await server.answer(2)).result, 'ping before initialize is answered');
      server.initialize(3);
      assert.equal((await server.answer(3)).result?.protocolVersion, '2025-11-25');
      server.initialize(4);
      assert.equal((await server.answer(4)).error?.code, -32600, 'a second initialize is refused');
      server.send({ jsonrpc: '2.0', id: 5, method: 'resources/list', params: {} });
      assert.ok((await server.answer(5)).result);
    } finally {
      server.kill();
    }
  });

  test('not found is -32002 on 2025-11-25 and 2025-06-18, -32602 on 2026-07-28, with data.uri on each', async () => {
    const uri = pathToFileURL(root.path).href + '/nope.txt';
    for (const version of ['2025-11-25', '2025-06-18']) {
      const server = new RawServer(args());
      try {
        server.initialize(1, version);
        assert.equal((await server.answer(1)).result?.protocolVersion, version);
        server.send({ jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri } });
        assert.deepEqual((await server.answer(2)).error, { code: -32002, message: 'Resource not found', data: { uri } }, version);
      } finally {
        server.kill();
      }
    }
    const server = new RawServer(args());
    try {
      server.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: modern } });
      assert.ok((await server.answer(1)).result, 'discover answered');
      server.send({ jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri, _meta: modern } });
      assert.deepEqual((await server.answer(2)).error, { code: -32602, message: 'Resource not found', data: { uri } });
    } finally {
      server.kill();
    }
  });

  test('2026-07-28 has no ping (SEP-2575 removed it): -32601, and the next request is served', async () => {
    const server = new RawServer(args());
    try {
      server.send({ jsonrpc: '2.0', id: 1, method: 'resources/list', params: { _meta: modern } });
      assert.ok((await server.answer(1)).result, 'the envelope opened the 2026 era');
      server.send({ jsonrpc: '2.0', id: 2, method: 'ping', params: { _meta: modern } });
      assert.equal((await server.answer(2)).error?.code, -32601);
      server.send({ jsonrpc: '2.0', id: 3, method: 'server/discover', params: { _meta: modern } });
      assert.ok((await server.answer(3)).result, 'server/discover, what a 2026 client checks a server with, is answered');
    } finally {
      server.kill();
    }
  });

  test('a line over the limit is answered with its id and skipped, memory stays bounded, the next line is served', async () => {
    const server = new RawServer(args());
    try {
      server.initialize(1);
      await server.answer(1);
      const before = server.rssKiB();
      // 128 MiB in one line, sent in 1 MiB chunks: never buffered whole. The bound below sits 32 MiB from both
      // sides: a server still starting (its scan, its threads) grew by 55 MiB here once on Node 24 with 64 MiB and
      // a 48 MiB bound, and a buffering transport holds at least the 128 MiB.
      const head = '{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"find","arguments":{"glob":"';
      const chunk = 'x'.repeat(1024 * 1024);
      server.child.stdin.write(head);
      for (let i = 0; i < 128; i++) {
        if (!server.child.stdin.write(chunk)) await new Promise((r) => server.child.stdin.once('drain', r));
      }
      const peakWhileOpen = server.rssKiB();
      server.child.stdin.write('"}}}\n');
      const oversize = await server.answer(77);
      assert.equal(oversize.error?.code, -32600);
      assert.match(oversize.error.message, new RegExp(`${MAX_REQUEST_LINE_BYTES}-byte line limit`));
      server.send({ jsonrpc: '2.0', id: 78, method: 'resources/list', params: {} });
      assert.ok((await server.answer(78)).result, 'the next request is served');
      // A buffering transport would hold the 128 MiB line (and rescan it per chunk).
      assert.ok(peakWhileOpen - before < 96 * 1024, `RSS grew by ${peakWhileOpen - before} KiB while the long line came in`);
      assert.equal(server.exit, undefined, 'still running');
    } finally {
      server.kill();
    }
  });

  test('when stdin closes the server says so and exits 0', async () => {
    const server = new RawServer([...args(), '--log-level', 'debug']);
    server.initialize(1);
    await server.answer(1);
    server.child.stdin.end();
    await waitFor(() => server.exit !== undefined, 30_000, 'the server to exit');
    assert.equal(server.exit, 0);
    assert.match(server.stderr, /stdin closed/);
  });
});
