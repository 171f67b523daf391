// The stdio transport's back-pressure and its end (issue 23, items 11 and 14),
// on real Node streams: a client that sends without reading our answers, and
// one whose last line has no newline.
import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { MAX_REQUESTS_IN_FLIGHT, StdioTransport } from '../../src/protocol/sdk/stdio-transport.ts';
import { nestedDeeperThan } from '../../src/protocol/wire.ts';
import { waitFor } from '../basics.ts';

const ping = (id: number) => `${JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' })}\n`;

/** stdout of a client that reads everything at once: what was written, as it came. */
function readingOutput() {
  const written: string[] = [];
  const output = new Writable({
    write(chunk: Buffer, _e, cb) {
      written.push(chunk.toString());
      cb();
    },
  });
  return { output, written };
}

/** The whole lines in what was written (a message may be written in more than one chunk). */
const linesOf = (chunks: string[]) => chunks.join('').split('\n').slice(0, -1);

/** stdout of a client that reads nothing until `read()` is called: its buffer fills, then writes wait. */
function stalledOutput() {
  const chunks: string[] = [];
  let release: (() => void) | null = null;
  let reading = false;
  const output = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString());
      if (reading) callback();
      else release = callback;
    },
  });
  return {
    output,
    lines: () => linesOf(chunks),
    read() {
      reading = true;
      release?.();
    },
  };
}

describe('stdio back-pressure', () => {
  test('stdin is not read past MAX_REQUESTS_IN_FLIGHT while answers cannot be written; all are answered once they can', async () => {
    const input = new PassThrough();
    const out = stalledOutput();
    const transport = new StdioTransport(input, out.output);
    let received = 0;
    // The server: answers each request on the next turn, with a large result.
    transport.onmessage = (message) => {
      received++;
      const { id } = message as { id: number };
      setImmediate(() => void transport.send({ jsonrpc: '2.0', id, result: { pad: 'x'.repeat(2048) } }).catch(() => {}));
    };
    await transport.start();
    const total = 2000;
    // In pieces of 200 lines, as a pipe delivers them (a 64 KiB chunk holds hundreds of requests).
    for (let i = 0; i < total; i += 200) input.write(Array.from({ length: 200 }, (_, k) => ping(i + k)).join(''));
    await waitFor(() => received >= MAX_REQUESTS_IN_FLIGHT, 30_000, 'the first requests');
    // Give the loop many turns: nothing more is read while the output is stuck.
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    assert.ok(received <= MAX_REQUESTS_IN_FLIGHT, `read ${received} requests while none could be answered`);
    out.read();
    await waitFor(() => out.lines().length >= total, 30_000, 'every answer');
    assert.equal(received, total);
    await transport.close();
  });
});

describe('an answer going out', () => {
  test('is told as it starts (onAnswering) and again once the client has taken it (onAnswered), not when it is built', async () => {
    // Start-up work waits while an answer goes out (src/turns.ts Foreground): a large page goes as the client reads.
    const input = new PassThrough();
    const out = stalledOutput();
    const told: string[] = [];
    const transport = new StdioTransport(input, out.output, { onAnswering: (id) => told.push(`answering ${id}`), onAnswered: (id) => told.push(`answered ${id}`) });
    transport.onmessage = (message) => void transport.send({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { pad: 'x'.repeat(4096) } });
    await transport.start();
    input.write(ping(7));
    await waitFor(() => told.length > 0, 30_000, 'the answer starting out');
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(told, ['answering 7'], 'the client has read nothing yet');
    out.read();
    await waitFor(() => told.length > 1, 30_000, 'the answer out');
    assert.deepEqual(told, ['answering 7', 'answered 7']);
    // A notification is no answer: neither is told.
    await transport.send({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' });
    assert.deepEqual(told, ['answering 7', 'answered 7']);
    await transport.close();
  });
});

describe('requests that will never be answered do not hold places in flight', () => {
  const line = (message: Record<string, unknown>) => `${JSON.stringify(message)}\n`;

  test('a request the client cancelled leaves its place once its handler ends: 30 cancelled, then a request passes', async () => {
    const input = new PassThrough();
    const { output } = readingOutput();
    const transport = new StdioTransport(input, output);
    const received: unknown[] = [];
    // The server: never answers (a cancelled request gets no answer: the SDK sends nothing); a cancelled handler ends.
    transport.onmessage = (message) => {
      const { id, method, params } = message as { id?: number; method?: string; params?: { requestId?: number } };
      received.push(id);
      if (method === 'notifications/cancelled') transport.settled(params!.requestId!);
    };
    await transport.start();
    input.write(line({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }));
    for (let id = 1; id <= 30; id++) {
      input.write(ping(id));
      input.write(line({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }));
    }
    input.write(ping(31));
    // Held for good, the 16th cancelled place paused stdin, and nothing past it was read.
    await waitFor(() => received.includes(31), 30_000, 'the request after 30 cancelled ones');
    await transport.close();
  });

  test('a cancelled request whose handler still runs keeps its place: cancelling bounds no work', async () => {
    const input = new PassThrough();
    const { output } = readingOutput();
    const transport = new StdioTransport(input, output);
    const received: unknown[] = [];
    transport.onmessage = (message) => void received.push((message as { id?: unknown }).id);
    await transport.start();
    for (let id = 1; id <= MAX_REQUESTS_IN_FLIGHT; id++) {
      input.write(ping(id));
      input.write(line({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }));
    }
    input.write(ping(100));
    await waitFor(() => received.includes(MAX_REQUESTS_IN_FLIGHT), 30_000, 'the first requests');
    for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(received.includes(100), false, 'held while 16 cancelled handlers run');
    for (let id = 1; id <= MAX_REQUESTS_IN_FLIGHT; id++) transport.settled(id);
    await waitFor(() => received.includes(100), 30_000, 'the request once they ended');
    await transport.close();
  });

  test('a request the SDK would drop is answered here and never passed on (16 of them stopped the server)', async () => {
    const input = new PassThrough();
    const { output, written } = readingOutput();
    const transport = new StdioTransport(input, output);
    const received: unknown[] = [];
    transport.onmessage = (message) => void received.push((message as { id?: unknown }).id);
    await transport.start();
    input.write(line({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }));
    for (let i = 1; i <= 20; i++) input.write(line({ jsonrpc: '2.0', id: i + 0.5, method: 'ping' }));
    for (let i = 21; i <= 40; i++) input.write(line({ jsonrpc: '2.0', id: i, method: 'ping', params: { _meta: null } }));
    input.write(ping(41));
    await waitFor(() => received.includes(41) && linesOf(written).length >= 40, 30_000, 'the answers and the request after them');
    assert.deepEqual(received, [0, 41]);
    const codes = linesOf(written).map((text) => (JSON.parse(text) as { error: { code: number } }).error.code);
    assert.deepEqual(codes, [...Array(20).fill(-32600), ...Array(20).fill(-32602)]);
    await transport.close();
  });
});

describe('an answer too long to be one string', () => {
  test('is an internal error for its id, and the transport goes on (a search answer of 630 MB was never sent, nor reported)', async () => {
    const input = new PassThrough();
    const { output, written } = readingOutput();
    const transport = new StdioTransport(input, output);
    await transport.start();
    // What JSON.stringify throws past V8's longest string, without making one.
    await transport.send({ jsonrpc: '2.0', id: 7, result: { toJSON: () => { throw new RangeError('Invalid string length'); } } } as never);
    await transport.send({ jsonrpc: '2.0', id: 8, result: {} });
    const lines = linesOf(written).map((line) => JSON.parse(line) as { id: number; error?: { code: number; message: string } });
    assert.equal(lines[0]!.id, 7);
    assert.equal(lines[0]!.error?.code, -32603);
    assert.match(lines[0]!.error!.message, /too large to send \(Invalid string length\)/);
    assert.deepEqual(lines[1], { jsonrpc: '2.0', id: 8, result: {} });
    await transport.close();
  });
});

describe('the end of stdin', () => {
  test('a last line without its newline is answered, and the connection ends after the answer', async () => {
    const input = new PassThrough();
    const { output, written } = readingOutput();
    let ended = '';
    const transport = new StdioTransport(input, output, { onEnd: (reason) => (ended = reason) });
    transport.onmessage = (message) => {
      const { id } = message as { id: number };
      setTimeout(() => void transport.send({ jsonrpc: '2.0', id, result: {} }), 20);
    };
    await transport.start();
    input.end(ping(1).trim()); // no newline
    await waitFor(() => ended !== '', 30_000, 'the end');
    assert.deepEqual(linesOf(written).map((l) => JSON.parse(l).id), [1]);
    assert.equal(ended, 'stdin closed');
  });

  test('stdin ends while stdout is stuck (a client that closed stdin and reads nothing): the connection still ends after the grace', async () => {
    const input = new PassThrough();
    const out = stalledOutput();
    let ended = '';
    const transport = new StdioTransport(input, out.output, { endGraceMs: 200, onEnd: (reason) => (ended = reason) });
    transport.onmessage = (message) => {
      const { id } = message as { id: number };
      setImmediate(() => void transport.send({ jsonrpc: '2.0', id, result: { pad: 'x'.repeat(4096) } }).catch(() => {}));
    };
    await transport.start();
    input.end(Array.from({ length: 40 }, (_, i) => ping(i)).join(''));
    // Never read: the answers fill the output, the transport pauses stdin, and stdin's end comes while paused.
    await waitFor(() => ended !== '', 30_000, 'the end of the connection');
    assert.equal(ended, 'stdin closed');
  });

  test('JSON nested deeper than the bound is refused before it is parsed', () => {
    assert.equal(nestedDeeperThan('['.repeat(64) + ']'.repeat(64), 64), false);
    assert.equal(nestedDeeperThan('['.repeat(65) + ']'.repeat(65), 64), true);
    assert.equal(nestedDeeperThan(`{"a":"${'['.repeat(500)}"}`, 64), false, 'brackets inside a string');
    assert.equal(nestedDeeperThan(`{"a":"\\"${'{'.repeat(100)}`, 64), false, 'an escaped quote keeps the string open');
  });
});
