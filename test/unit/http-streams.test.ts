// src/http/streams.ts: a notification stream is read as it comes and cut past what its client leaves unread; one
// that is read passes every byte on, and says once that it ended.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundedOnEnd } from '../../src/http/streams.ts';
import { waitFor } from '../helpers.ts';

/** A source of `chunks` pieces of `size` bytes, as the SDK's stream of one event after another; whether it was cancelled. */
function source(chunks: number, size: number, everyMs = 0): { body: ReadableStream<Uint8Array>; cancelled: () => unknown; sent: () => number } {
  let sent = 0;
  let reason: unknown;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (everyMs > 0) await new Promise((resolve) => setTimeout(resolve, everyMs));
      if (sent === chunks) return controller.close();
      controller.enqueue(new Uint8Array(size).fill(sent++ % 251));
    },
    cancel(why) {
      reason = why ?? 'cancelled';
    },
  });
  return { body, cancelled: () => reason, sent: () => sent };
}

test('a client that reads gets every byte, in order, and the end is said once', async () => {
  const { body } = source(64, 32 * 1024);
  let ended = 0;
  const { stream } = boundedOnEnd(body, () => ended++, 256 * 1024);
  const bytes = Buffer.from(await new Response(stream).arrayBuffer());
  assert.equal(bytes.length, 64 * 32 * 1024);
  for (let i = 0; i < 64; i++) assert.equal(bytes[i * 32 * 1024], i % 251);
  assert.equal(ended, 1);
});

test('a client that reads nothing: past the bound and the stall time the stream fails, the source is cancelled, the end is said once', async () => {
  // Events as files change: one every 5 ms.
  const { body, cancelled, sent } = source(100, 16 * 1024, 5);
  let ended = 0;
  // 256 KiB, and 50 ms without taking anything.
  const { stream } = boundedOnEnd(body, () => ended++, 256 * 1024, 50);
  await waitFor(() => cancelled() !== undefined, 30_000, 'the source to be cancelled');
  assert.match(String(cancelled()), /left more than 262144 bytes unread/);
  assert.ok(sent() < 100, `${sent()} pieces taken: it went on reading the source`);
  assert.equal(ended, 1);
  // A late reader finds the stream failed, not a truncated answer that looks whole.
  const reader = stream.getReader();
  await assert.rejects(async () => {
    for (;;) if ((await reader.read()).done) break;
  }, /left more than 262144 bytes unread/);
});

test('past sixteen times the bound, the stream is cut at once, stalled or not', async () => {
  const { body, cancelled, sent } = source(1_000, 16 * 1024);
  const { stream } = boundedOnEnd(body, () => {}, 16 * 1024, 60_000);
  await waitFor(() => cancelled() !== undefined, 30_000, 'the source to be cancelled');
  assert.match(String(cancelled()), /left more than 262144 bytes unread/);
  assert.ok(sent() <= 16 + 2, `${sent()} pieces taken`);
  void stream.cancel().catch(() => {});
});

test('a burst over the bound that the client goes on reading is not cut (a checkout touching many subscribed files)', async () => {
  const { body, cancelled } = source(64, 16 * 1024);
  let ended = 0;
  // 256 KiB, and a stall time (5 s) the burst's own making never reaches, on a machine however busy: the 1 MiB burst
  // is queued at once, and the client reads it a piece every few ms.
  const { stream } = boundedOnEnd(body, () => ended++, 256 * 1024, 5_000);
  await new Promise((resolve) => setImmediate(resolve));
  const reader = stream.getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  assert.equal(bytes, 64 * 16 * 1024);
  assert.equal(cancelled(), undefined);
  assert.equal(ended, 1);
});

test('abandoned (the client went away): the source is cancelled and the stream ends, once', async () => {
  const { body, cancelled } = source(1_000_000, 16);
  let ended = 0;
  const { stream, abandon } = boundedOnEnd(body, () => ended++, 1024 * 1024);
  abandon();
  await waitFor(() => cancelled() !== undefined, 30_000, 'the source to be cancelled');
  await assert.rejects(stream.getReader().read(), /the client went away/);
  assert.equal(ended, 1);
});
