// Each workaround in src/protocol/sdk/ exists because the SDK behaves a
// certain way. These tests pin that behaviour on the plain SDK: when one
// fails after an SDK upgrade, the SDK changed, and the workaround it names
// may go (then delete the workaround and its test here). Each also shows the
// workaround doing its job, for contrast. In process: the SDK's Server on an
// in-memory transport, spoken to in raw JSON-RPC. The two larger
// replacements there (stdio-transport.ts, answer-blobs.ts) are not pinned
// here: each says at its head why it is there.
import { InMemoryTransport, ProtocolError, Server, WebStandardStreamableHTTPServerTransport, type JSONRPCMessage } from '@modelcontextprotocol/server';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrorCode, RESOURCE_NOT_FOUND_MESSAGE } from '../../src/protocol/errors.ts';
import { BoundedEventStore } from '../../src/http/event-store.ts';
import { openResumedStream, primeGetStream } from '../../src/protocol/sdk/get-stream-priming.ts';
import { toLegacyError } from '../../src/protocol/sdk/legacy-not-found.ts';
import { LOOSE_PARAMS } from '../../src/protocol/sdk/loose-params.ts';
import { FolderServer } from '../../src/protocol/sdk/tool-results.ts';

type Reply = { id?: number; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };

/** A server on one end of an in-memory pair, initialized on the 2025-11-25 era; `ask` sends a request and resolves to its reply. */
async function talkTo(server: Server): Promise<{ ask(method: string, params?: Record<string, unknown>): Promise<Reply>; close(): Promise<void> }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const waiting = new Map<number, (reply: Reply) => void>();
  clientSide.onmessage = (message) => {
    const reply = message as Reply;
    if (reply.id !== undefined) waiting.get(reply.id)?.(reply);
  };
  await clientSide.start();
  await server.connect(serverSide);
  let next = 1;
  const ask = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Reply>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      void clientSide.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage);
    });
  const init = await ask('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'canary', version: '0' } });
  assert.equal(init.error, undefined, JSON.stringify(init.error));
  await clientSide.send({ jsonrpc: '2.0', method: 'notifications/initialized' } as JSONRPCMessage);
  return { ask, close: () => server.close() };
}

const INFO = { name: 'canary', version: '0' };

describe('the SDK behaviours src/protocol/sdk/ works around', () => {
  test('loose params: the two-argument setRequestHandler strips params the spec does not name (LOOSE_PARAMS keeps them)', async () => {
    const plain = new Server(INFO, { capabilities: { resources: {} } });
    let seen: Record<string, unknown> | undefined;
    plain.setRequestHandler('resources/list', async (request) => {
      seen = request.params as Record<string, unknown>;
      return { resources: [] };
    });
    const a = await talkTo(plain);
    await a.ask('resources/list', { prefix: 'file:///p/', cursor: 'c' });
    await a.close();
    assert.equal(seen?.cursor, 'c');
    assert.equal(seen?.prefix, undefined, 'the SDK now passes `prefix` through: LOOSE_PARAMS may go');

    const loose = new Server(INFO, { capabilities: { resources: {} } });
    loose.setRequestHandler('resources/list', { params: LOOSE_PARAMS }, async (params) => {
      seen = params as Record<string, unknown>;
      return { resources: [] };
    });
    const b = await talkTo(loose);
    await b.ask('resources/list', { prefix: 'file:///p/' });
    await b.close();
    assert.equal(seen?.prefix, 'file:///p/');
  });

  test('tool results: tools/call is sent as the spec schema parsed it, without resourceType (FolderServer sends the original)', async () => {
    const link = { type: 'resource_link', uri: 'file:///p/a.md', name: 'a.md', resourceType: 'document' };
    const withTool = (server: Server) => {
      server.setRequestHandler('tools/list', async () => ({ tools: [{ name: 't', inputSchema: { type: 'object' as const } }] }));
      server.setRequestHandler('tools/call', async () => ({ content: [link] }) as never);
      return server;
    };
    const plain = await talkTo(withTool(new Server(INFO, { capabilities: { tools: {} } })));
    const stripped = (await plain.ask('tools/call', { name: 't', arguments: {} })).result?.content as Record<string, unknown>[];
    await plain.close();
    assert.equal(stripped[0]?.uri, link.uri);
    assert.equal(stripped[0]?.resourceType, undefined, 'the SDK now keeps resourceType: FolderServer may go');

    const ours = await talkTo(withTool(new FolderServer(INFO, { capabilities: { tools: {} } })));
    const kept = (await ours.ask('tools/call', { name: 't', arguments: {} })).result?.content as Record<string, unknown>[];
    await ours.close();
    assert.equal(kept[0]?.resourceType, 'document');
  });

  test('legacy not found: a -32002 thrown by a handler reaches a 2025-11-25 client as -32602 (toLegacyError makes it -32002)', async () => {
    const server = new Server(INFO, { capabilities: { resources: {} } });
    server.setRequestHandler('resources/read', async (request) => {
      throw new ProtocolError(ErrorCode.LegacyResourceNotFound, RESOURCE_NOT_FOUND_MESSAGE, { uri: request.params.uri });
    });
    const a = await talkTo(server);
    const reply = await a.ask('resources/read', { uri: 'file:///p/nope' });
    await a.close();
    assert.equal(reply.error?.code, ErrorCode.InvalidParams, 'the SDK now keeps -32002 on the legacy era: toLegacyError may go');
    const translated = toLegacyError({ jsonrpc: '2.0', id: 1, error: reply.error! } as JSONRPCMessage) as Reply;
    assert.equal(translated.error?.code, ErrorCode.LegacyResourceNotFound);
    assert.deepEqual(translated.error?.data, { uri: 'file:///p/nope' });
  });

  test('GET stream priming: a 2025-era GET stream sends nothing at first (primeGetStream puts an id and retry first)', async () => {
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => 'session-1' });
    const server = new Server(INFO, { capabilities: { resources: {} } });
    await server.connect(transport);
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: INFO } };
    await (await transport.handleRequest(new Request('http://127.0.0.1/mcp', { method: 'POST', headers, body: JSON.stringify(init) }))).text();
    const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
    await (await transport.handleRequest(new Request('http://127.0.0.1/mcp', { method: 'POST', headers: { ...headers, 'mcp-session-id': 'session-1' }, body: JSON.stringify(initialized) }))).text();
    const get = await transport.handleRequest(
      new Request('http://127.0.0.1/mcp', { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'session-1', 'mcp-protocol-version': '2025-11-25' } }),
    );
    assert.match(get.headers.get('content-type') ?? '', /text\/event-stream/);
    const reader = get.body!.getReader();
    // A slow machine can only make this more likely to pass: it asserts that nothing came, not that something did.
    const first = await Promise.race([reader.read(), new Promise<'nothing'>((r) => setTimeout(() => r('nothing'), 300))]);
    assert.equal(first, 'nothing', 'the SDK now primes its GET stream: primeGetStream may go');
    await reader.cancel();
    await server.close();

    const silent = new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(': later\n\n')) }), {
      headers: { 'content-type': 'text/event-stream' },
    });
    const primed = await primeGetStream(silent, async () => 'ev-1', 3000);
    const primedReader = primed.body!.getReader();
    assert.equal(new TextDecoder().decode((await primedReader.read()).value), 'id: ev-1\nretry: 3000\ndata: \n\n');
    assert.equal(new TextDecoder().decode((await primedReader.read()).value), ': later\n\n');
    await primedReader.cancel();
    const json = new Response('{}', { headers: { 'content-type': 'application/json' } });
    assert.equal(await primeGetStream(json, async () => 'x', 1), json, 'not a stream: untouched');
  });

  test('resumed GET stream: a GET with Last-Event-ID and nothing to replay sends nothing at first (openResumedStream puts a comment first)', async () => {
    const events = new BoundedEventStore();
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => 'session-1', eventStore: events });
    const server = new Server(INFO, { capabilities: { resources: {} } });
    await server.connect(transport);
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: INFO } };
    await (await transport.handleRequest(new Request('http://127.0.0.1/mcp', { method: 'POST', headers, body: JSON.stringify(init) }))).text();
    const lastEventId = await events.storeEvent('_GET_stream', {} as JSONRPCMessage);
    const get = await transport.handleRequest(
      new Request('http://127.0.0.1/mcp', {
        method: 'GET',
        headers: { accept: 'text/event-stream', 'mcp-session-id': 'session-1', 'mcp-protocol-version': '2025-11-25', 'last-event-id': lastEventId },
      }),
    );
    assert.match(get.headers.get('content-type') ?? '', /text\/event-stream/);
    const reader = get.body!.getReader();
    // As above: a slow machine can only make this more likely to pass.
    const first = await Promise.race([reader.read(), new Promise<'nothing'>((r) => setTimeout(() => r('nothing'), 300))]);
    assert.equal(first, 'nothing', 'the SDK now opens a resumed stream at once: openResumedStream may go');
    await reader.cancel();
    await server.close();

    let cancelled: unknown;
    const source = new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('id: 2\ndata: {}\n\n')), cancel: (reason) => void (cancelled = reason) });
    const resumed = openResumedStream(new Response(source, { headers: { 'content-type': 'text/event-stream' } }));
    const resumedReader = resumed.body!.getReader();
    assert.equal(new TextDecoder().decode((await resumedReader.read()).value), ': resumed\n\n');
    assert.equal(new TextDecoder().decode((await resumedReader.read()).value), 'id: 2\ndata: {}\n\n');
    await resumedReader.cancel('gone');
    assert.equal(cancelled, 'gone', 'a cancel reaches the SDK stream');
    const json = new Response('{}', { headers: { 'content-type': 'application/json' } });
    assert.equal(openResumedStream(json), json, 'not a stream: untouched');
  });
});
