// src/http/event-store.ts: what a 2025-era session keeps for Last-Event-ID replay, bounded in events and in
// bytes; a message too large to keep is sent and not replayable, and a resumption that needs it fails clearly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { BoundedEventStore, estimateChars, EVENT_OVERHEAD_BYTES, MAX_REPLAY_BYTES, MAX_REPLAY_MESSAGE_BYTES } from '../../src/http/event-store.ts';

const note = (n: number, text = ''): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `${n}${text}` } });
const read = (id: number, blobChars: number): JSONRPCMessage =>
  ({ jsonrpc: '2.0', id, result: { contents: [{ uri: 'file:///srv/big.bin', mimeType: 'application/octet-stream', blob: 'A'.repeat(blobChars) }] } }) as JSONRPCMessage;

async function replay(store: BoundedEventStore, after: string): Promise<string[]> {
  const sent: string[] = [];
  await store.replayEventsAfter(after, { send: async (id, message) => void sent.push(id, JSON.stringify(message)) });
  return sent.filter((_, i) => i % 2 === 0);
}

test('the estimate is about the JSON length, and stops counting past the limit', () => {
  for (const message of [note(1), read(2, 10_000), { jsonrpc: '2.0', id: 3, result: { resources: Array.from({ length: 50 }, (_, i) => ({ uri: `file:///r/${i}`, name: `${i}`, size: i })) } }]) {
    const exact = JSON.stringify(message).length;
    const estimate = estimateChars(message, Infinity);
    assert.ok(estimate >= exact * 0.8 && estimate <= exact * 1.5, `estimate ${estimate} for JSON of ${exact}`);
  }
  // A huge array or object is counted until the limit, not to its end.
  const huge = Array.from({ length: 200_000 }, () => 'x'.repeat(10));
  const estimate = estimateChars(huge, 1000);
  assert.ok(estimate > 1000 && estimate < 1100, `estimate ${estimate}`);
  const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]));
  const wideEstimate = estimateChars(wide, 1000);
  assert.ok(wideEstimate > 1000 && wideEstimate < 1100, `estimate ${wideEstimate}`);
});

test('at most MAX events are kept: a client away longer is told to start over', async () => {
  const store = new BoundedEventStore(5);
  const ids: string[] = [];
  for (let n = 0; n < 8; n++) ids.push(await store.storeEvent('s', note(n)));
  assert.equal(store.size, 5);
  await assert.rejects(replay(store, ids[1]!), /no longer kept/);
  assert.deepEqual(await replay(store, ids[4]!), ids.slice(5));
});

test('what is kept is bounded in bytes, as the JSON the client gets: the oldest go first', async () => {
  const store = new BoundedEventStore(1000);
  const ids: string[] = [];
  // 60 answers of ~10,000 characters, each two-byte (UTF-8: 3 bytes a character): 1.8 MB in all, over the bound many times.
  for (let n = 0; n < 60; n++) ids.push(await store.storeEvent('s', { ...read(n, 0), result: { contents: [{ uri: 'file:///r/t.txt', text: '—'.repeat(10_000) }] } } as JSONRPCMessage));
  assert.ok(store.keptBytes <= MAX_REPLAY_BYTES, `${store.keptBytes} bytes kept`);
  const one = Buffer.byteLength(JSON.stringify(read(0, 0))) + 30_000;
  assert.equal(store.size, Math.floor(MAX_REPLAY_BYTES / (one + EVENT_OVERHEAD_BYTES)), 'as many as fit, counted exactly');
  // What is kept still replays, newest last, as it was sent.
  const kept = ids.slice(ids.length - store.size);
  assert.deepEqual(await replay(store, kept[0]!), kept.slice(1));
  const replayed: JSONRPCMessage[] = [];
  await store.replayEventsAfter(kept.at(-2)!, { send: async (_, message) => void replayed.push(message) });
  assert.deepEqual(replayed, [{ jsonrpc: '2.0', id: 59, result: { contents: [{ uri: 'file:///r/t.txt', text: '—'.repeat(10_000) }] } }]);
});

test('a message over the per-message bound is sent, not kept: a resumption that needs it fails, one after it works', async () => {
  const store = new BoundedEventStore();
  const before = await store.storeEvent('post-1', note(0));
  const big = await store.storeEvent('post-1', read(1, 4 * 1024 * 1024));
  const after = await store.storeEvent('post-1', note(2));
  const later = await store.storeEvent('post-1', note(3));
  // The 4 MiB answer counts for nothing: 40 of them held 383 MiB in a session before the bound.
  assert.ok(store.keptBytes < MAX_REPLAY_MESSAGE_BYTES, `${store.keptBytes} bytes kept`);
  await assert.rejects(replay(store, before), new RegExp(`event ${big} was too large to keep for replay`));
  assert.deepEqual(await replay(store, after), [later]);
  // Another stream's events are not its concern.
  const other = await store.storeEvent('get', note(4));
  await store.storeEvent('get', note(5, 'x'));
  assert.equal((await replay(store, other)).length, 1);
});
