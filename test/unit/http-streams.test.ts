// src/http/streams.ts: a notification stream is read as it comes and cut past what its client leaves unread; one
// that is read passes every byte on, and says once that it ended.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundedOnEnd } from '../../src/http/streams.ts';
import { waitFor } from '../helpers.ts';

/** A source of `chunks` pieces of `size` bytes, as the SDK's stream of one event after another; whether it was cancelled. */
function source(chunks: number, size: number): { body: ReadableStream<Uint8Array>; cancelled: () => unknown; sent: () => number } {
  let sent = 0;
  let reason: unknown;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
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

test('a client that reads nothing: past the bound the stream fails, the source is cancelled, the end is said once', async () => {
  const { body, cancelled, sent } = source(1_000, 16 * 1024);
  let ended = 0;
  const { stream } = boundedOnEnd(body, () => ended++, 256 * 1024);
  await waitFor(() => cancelled() !== undefined, 30_000, 'the source to be cancelled');
  assert.match(String(cancelled()), /left more than 262144 bytes unread/);
  // It stopped reading the source once over: what it took is the bound and a piece, not all 1,000.
  assert.ok(sent() <= 256 / 16 + 2, `${sent()} pieces taken`);
  assert.equal(ended, 1);
  // A late reader finds the stream failed, not a truncated answer that looks whole.
  const reader = stream.getReader();
  await assert.rejects(async () => {
    for (;;) if ((await reader.read()).done) break;
  }, /left more than 262144 bytes unread/);
});
