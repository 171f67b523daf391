/**
 * The same bytes, and `done` once when the stream ends, fails or is cancelled
 * by its reader; `abandon` cancels the source (the client went away).
 */
function onEnd(body: ReadableStream<Uint8Array>, done: () => void): { stream: ReadableStream<Uint8Array>; abandon: () => void } {
  const reader = body.getReader();
  const abandon = () => void reader.cancel(new Error('the client went away')).catch(() => {});
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: finished, value } = await reader.read();
        if (finished) {
          done();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        done();
        controller.error(error);
      }
    },
    cancel(reason) {
      done();
      return reader.cancel(reason);
    },
  });
  return { stream, abandon };
}

/**
 * Bytes of a notification stream (a 2026 listen, a 2025 session's GET
 * stream) that its client has not taken, past which the stream is cut once
 * its client has taken nothing for UNREAD_STALL_MS, and past
 * UNREAD_HARD_FACTOR times which it is cut at once. The SDK queues each
 * event for its stream with no backpressure: a client that stops reading
 * had every later notification kept in memory for as long as files changed
 * (a red-team pass: 5 sessions subscribed to 2,400 files each, 40 files
 * rewritten every 50 ms, RSS 166 to 467 MiB in 3 minutes). A burst (a
 * checkout touching thousands of subscribed files) may pass 1 MiB for a
 * moment; a client that goes on reading it is not cut. A 2025 client comes
 * back with Last-Event-ID; a 2026 one listens again.
 */
export const MAX_UNREAD_STREAM_BYTES = 1024 * 1024;
const UNREAD_STALL_MS = 10_000;
const UNREAD_HARD_FACTOR = 16;

/**
 * The same bytes, read from `body` as they come and queued for the client,
 * and `done` once when the stream ends, fails, is cancelled or is cut (see
 * MAX_UNREAD_STREAM_BYTES); `abandon` cancels the source and ends the stream.
 */
export function boundedOnEnd(
  body: ReadableStream<Uint8Array>,
  done: () => void,
  maxUnread: number,
  stallMs = UNREAD_STALL_MS,
): { stream: ReadableStream<Uint8Array>; abandon: () => void } {
  const reader = body.getReader();
  const hardMax = maxUnread * UNREAD_HARD_FACTOR;
  let over = false;
  let ctrl: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** When the client last took something (or waited with nothing queued). */
  let lastTaken = performance.now();
  let queuedBefore = 0;
  const end = (error: Error) => {
    if (over) return;
    over = true;
    done();
    try {
      ctrl?.error(error);
    } catch {
      // already closed
    }
    void reader.cancel(error).catch(() => {});
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        ctrl = controller;
        void (async () => {
          try {
            for (;;) {
              const { done: finished, value } = await reader.read();
              if (over) return;
              if (finished) {
                over = true;
                done();
                return controller.close();
              }
              controller.enqueue(value);
              // desiredSize is the high-water mark (0) less the bytes queued; fewer than before plus this piece: the
              // client took some meanwhile.
              const queued = -(controller.desiredSize ?? 0);
              if (queued < queuedBefore + value.byteLength) lastTaken = performance.now();
              queuedBefore = queued;
              const stalled = performance.now() - lastTaken >= stallMs;
              if (queued > hardMax || (queued > maxUnread && stalled)) {
                return end(new Error(`its client left more than ${queued > hardMax ? hardMax : maxUnread} bytes unread`));
              }
            }
          } catch (error) {
            end(error as Error);
          }
        })();
      },
      // Called when the client waits with nothing queued: it has taken everything.
      pull() {
        lastTaken = performance.now();
        queuedBefore = 0;
      },
      cancel(reason) {
        over = true;
        done();
        return reader.cancel(reason);
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 0 }),
  );
  return { stream, abandon: () => end(new Error('the client went away')) };
}

/**
 * `response`, with `done` called once its body ends, fails or is cancelled,
 * or the request is aborted; at once when it has no body. `done` must be
 * harmless twice (an abort and the end of the body can both come).
 */
export function whenAnswered(request: Request, response: Response, done: () => void, maxUnread?: number): Response {
  if (response.body === null) {
    done();
    return response;
  }
  // A notification stream is read as it comes, within maxUnread; an answer is passed on as its client takes it.
  const { stream, abandon } = maxUnread === undefined ? onEnd(response.body, done) : boundedOnEnd(response.body, done, maxUnread);
  // The client went away: the source stream is cancelled too, so the SDK forgets it at once (a 2025
  // session's GET stream was otherwise held until its next keep-alive failed, 15 s later, and the
  // client's reconnection refused meanwhile: one GET stream per session).
  request.signal.addEventListener(
    'abort',
    () => {
      done();
      abandon();
    },
    { once: true },
  );
  return new Response(stream, { status: response.status, statusText: response.statusText, headers: response.headers });
}
