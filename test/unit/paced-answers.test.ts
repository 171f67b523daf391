// src/http/paced-answers.ts: an answer goes a piece at a time as its client takes it, what it keeps in memory counted;
// past the bound, those whose clients have taken nothing for a while are cut, longest stalled first; below it none is.
// The clock is the test's (test/test-clock.ts): stall times are checked without waiting, at any load.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ANSWER_PIECE_BYTES, AnswerPacer, PRESSED_STALL_MS, type AnswerCut } from '../../src/http/paced-answers.ts';
import { AnswerBlobs } from '../../src/protocol/sdk/answer-blobs.ts';
import { TestClock } from '../test-clock.ts';

const PIECE = ANSWER_PIECE_BYTES;
/** The connection of an answer cut: not looked at here. */
const noCut = () => {};

/**
 * An answer of `bytes` bytes in one chunk, as the SDK writes a JSON answer, its end read after it (`open`: no end, as an
 * SSE answer whose call goes on); whether it was cancelled.
 */
function answer(bytes: number, fill = 7, open = false): { response: Response; cancelled: () => boolean } {
  let cancelled = false;
  let sent = false;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (sent) return open ? undefined : controller.close();
        sent = true;
        controller.enqueue(new Uint8Array(bytes).fill(fill));
      },
      cancel() {
        cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { response: new Response(body, { status: 200, headers: { 'content-type': 'application/json' } }), cancelled: () => cancelled };
}

function pacer(clock: TestClock, maxHeldBytes?: number): { pacer: AnswerPacer; cuts: AnswerCut[] } {
  const cuts: AnswerCut[] = [];
  return { pacer: new AnswerPacer({ clock, onCut: (cut) => cuts.push(cut), ...(maxHeldBytes === undefined ? {} : { maxHeldBytes }) }), cuts };
}

/** Reads `reader` to its end; how many pieces came. */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<number> {
  let pieces = 0;
  while (!(await reader.read()).done) pieces++;
  return pieces;
}

describe('paced answers', () => {
  test('pieces of at most ANSWER_PIECE_BYTES, each when the client asks; every byte in order; nothing held at the end', async () => {
    const clock = new TestClock();
    const { pacer: paced, cuts } = pacer(clock);
    const reader = paced.pace(answer(5 * PIECE + 123).response, noCut).body!.getReader();
    const pieces: number[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pieces.push(value.length);
      assert.ok(value.every((byte: number) => byte === 7));
      // A slow client, below the bound: never cut, however long it waits.
      clock.advance(600_000);
    }
    assert.deepEqual(pieces, [...Array(5).fill(PIECE), 123]);
    assert.deepEqual(cuts, []);
    assert.equal(paced.heldBytes, 0);
    assert.equal(paced.size, 0);
    assert.equal(clock.pending(), 0);
  });

  test('what is left of a chunk is copied once half of it is gone, and the chunk let go: what is held follows what is left', async () => {
    const clock = new TestClock();
    const { pacer: paced } = pacer(clock);
    const reader = paced.pace(answer(8 * PIECE).response, noCut).body!.getReader();
    const held: number[] = [];
    while (!(await reader.read()).done) held.push(paced.heldBytes / PIECE);
    // A view of the chunk keeps all of it: 7 left of 8 kept, 6 of 8, 5 of 8, then 4 (copied), 3 of 4, 2 (copied), 1, 0.
    assert.deepEqual(held, [8, 8, 8, 4, 4, 2, 1, 0]);
  });

  test('a small answer is one piece, the same bytes; a response with no body is passed as it is', async () => {
    const clock = new TestClock();
    const { pacer: paced } = pacer(clock);
    const response = paced.pace(answer(100).response, noCut);
    assert.equal(response.headers.get('content-type'), 'application/json');
    assert.equal((await response.arrayBuffer()).byteLength, 100);
    const empty = new Response(null, { status: 202 });
    assert.equal(paced.pace(empty, noCut), empty);
  });

  test('past the bound, the longest stalled answers are cut at once, the rest let go and the source cancelled; one whose client reads is not', async () => {
    const clock = new TestClock();
    const { pacer: paced, cuts } = pacer(clock, 20 * PIECE);
    // Two clients that took a first piece and nothing since, the first for longer.
    const firstSource = answer(8 * PIECE, 1, true);
    let connectionCut = 0;
    const first = paced.pace(firstSource.response, () => connectionCut++).body!.getReader();
    await first.read();
    clock.advance(1_000);
    const second = paced.pace(answer(8 * PIECE, 2).response, noCut).body!.getReader();
    await second.read();
    clock.advance(PRESSED_STALL_MS);
    // A reader, just now.
    const reading = paced.pace(answer(4 * PIECE, 3).response, noCut).body!.getReader();
    await reading.read();
    assert.equal(paced.heldBytes, 20 * PIECE);
    assert.equal(cuts.length, 0, 'at the bound, not past it');
    // A fourth answer takes the held bytes past the bound: the longest stalled goes, and that is enough.
    const fourth = paced.pace(answer(6 * PIECE, 4).response, noCut).body!.getReader();
    await fourth.read();
    assert.deepEqual(cuts, [{ bytes: 8 * PIECE, idleMs: 1_000 + PRESSED_STALL_MS }]);
    await assert.rejects(first.read(), /asked for none of it/);
    assert.equal(firstSource.cancelled(), true);
    assert.equal(connectionCut, 1, 'its connection is cut too: the Node adapter would end the response as if whole');
    assert.equal(paced.heldBytes, 18 * PIECE);
    // The others go on to their ends.
    assert.deepEqual([await drain(second), await drain(reading), await drain(fourth)], [7, 3, 5]);
    assert.equal(paced.heldBytes, 0);
    assert.equal(paced.size, 0);
  });

  test('answers that came in a burst, past the bound: cut once they have stalled, with no new answer to set the check off', async () => {
    const clock = new TestClock();
    const { pacer: paced, cuts } = pacer(clock, 10 * PIECE);
    const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
    for (let i = 0; i < 4; i++) {
      const reader = paced.pace(answer(5 * PIECE, i).response, noCut).body!.getReader();
      await reader.read();
      readers.push(reader);
      clock.advance(10);
    }
    assert.equal(paced.heldBytes, 20 * PIECE);
    assert.equal(cuts.length, 0, 'none has stalled yet');
    // The first two reach the stall time: cut, the first first; then the bound holds, and nothing is left to check.
    clock.advance(PRESSED_STALL_MS);
    assert.deepEqual(
      cuts.map((cut) => cut.idleMs),
      [PRESSED_STALL_MS, PRESSED_STALL_MS],
    );
    assert.equal(paced.heldBytes, 10 * PIECE);
    assert.equal(clock.pending(), 0);
    assert.deepEqual([await drain(readers[2]!), await drain(readers[3]!)], [4, 4]);
    assert.equal(paced.heldBytes, 0);
  });

  test('past the bound, an answer that keeps nothing (its last piece out, an SSE answer between events) is not cut: that frees nothing', async () => {
    const clock = new TestClock();
    const { pacer: paced, cuts } = pacer(clock, 4 * PIECE);
    // An SSE answer whose first event went out and whose client has not asked for more: it keeps nothing.
    let sse: ReadableStreamDefaultController<Uint8Array> | undefined;
    const open = paced
      .pace(new Response(new ReadableStream<Uint8Array>({ start: (controller) => void (sse = controller) }, { highWaterMark: 0 })), noCut)
      .body!.getReader();
    const event = open.read();
    sse!.enqueue(new Uint8Array(100));
    await event;
    clock.advance(5_000);
    const big = paced.pace(answer(8 * PIECE).response, noCut).body!.getReader();
    await big.read();
    clock.advance(PRESSED_STALL_MS);
    assert.deepEqual(
      cuts.map((cut) => cut.bytes),
      [8 * PIECE],
      'the one that keeps bytes, though it stalled later',
    );
    sse!.close();
    assert.equal((await open.read()).done, true);
  });

  test('a source that pushes (a batch of answers, queued by the SDK whether read or not) is read ahead and counted whole, also under a stream that makes bytes when read', async () => {
    /** 8 answers of 4 pieces each, pushed at once. */
    const batch = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 8; i++) controller.enqueue(new Uint8Array(4 * PIECE).fill(i));
            controller.close();
          },
        }),
      );
    /** Passes on what it reads, a chunk each time it is read (as AnswerBlobs' splice does). */
    const whenRead = (body: ReadableStream<Uint8Array>) => {
      const upstream = body.getReader();
      return new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            const { done, value } = await upstream.read();
            if (done) controller.close();
            else controller.enqueue(value);
          },
          cancel: (reason) => upstream.cancel(reason),
        },
        { highWaterMark: 0 },
      );
    };
    for (const between of [undefined, whenRead]) {
      const clock = new TestClock();
      const { pacer: paced, cuts } = pacer(clock, 16 * PIECE);
      const reader = paced.pace(batch(), noCut, between).body!.getReader();
      await reader.read();
      await new Promise((resolve) => setImmediate(resolve));
      // The whole batch is in memory whatever the pacer does: read ahead, it is counted, and past the bound it is cut.
      assert.equal(paced.heldBytes, 32 * PIECE);
      clock.advance(PRESSED_STALL_MS);
      assert.deepEqual(
        cuts.map((cut) => cut.bytes),
        [32 * PIECE],
      );
      assert.equal(paced.heldBytes, 0);
      // Below the bound, every byte comes, in order.
      const { pacer: roomy } = pacer(new TestClock());
      const bytes = new Uint8Array(await new Response(roomy.pace(batch(), noCut, between).body).arrayBuffer());
      assert.equal(bytes.length, 32 * PIECE);
      for (let i = 0; i < 8; i++) assert.equal(bytes[i * 4 * PIECE], i);
      assert.equal(roomy.heldBytes, 0);
    }
  });

  test("under AnswerBlobs' splice, an event read and not yet begun is counted: a client stalled between two events is cut", async () => {
    const clock = new TestClock();
    const { pacer: paced, cuts } = pacer(clock, 1024 * 1024);
    const blobs = AnswerBlobs.open(new Request('http://localhost/mcp', { method: 'POST' }));
    // Two SSE events, as the SDK queues them: a small one, then a large one.
    const events = new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new Uint8Array(1000).fill(1));
          controller.enqueue(new Uint8Array(4 * 1024 * 1024).fill(2));
          controller.close();
        },
      }),
    );
    const reader = paced.pace(events, noCut, (body) => blobs.splice(new Response(body)).body!).body!.getReader();
    assert.equal((await reader.read()).value?.length, 1000);
    await new Promise((resolve) => setImmediate(resolve));
    // The splice read nothing ahead of the pieces (it held the second event, uncounted, where nothing would cut it).
    assert.equal(paced.heldBytes, 4 * 1024 * 1024);
    clock.advance(PRESSED_STALL_MS);
    assert.deepEqual(
      cuts.map((cut) => cut.bytes),
      [4 * 1024 * 1024],
    );
    assert.equal(paced.heldBytes, 0);
  });

  test('a client that goes away: its answer let go, the source cancelled, nothing held', async () => {
    const clock = new TestClock();
    const { pacer: paced, cuts } = pacer(clock);
    const source = answer(4 * PIECE, 7, true);
    const reader = paced.pace(source.response, noCut).body!.getReader();
    await reader.read();
    await reader.cancel(new Error('gone'));
    assert.equal(source.cancelled(), true);
    assert.equal(paced.heldBytes, 0);
    assert.equal(paced.size, 0);
    assert.deepEqual(cuts, []);
  });
});
