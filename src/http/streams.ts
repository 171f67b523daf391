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
 * stream) that its client has not taken, past which the stream is cut.
 * The SDK queues each event for its stream with no backpressure: a client
 * that stops reading had every later notification kept in memory for as
 * long as files changed (a red-team pass: 5 sessions subscribed to 2,400
 * files each, 40 files rewritten every 50 ms, RSS 166 to 467 MiB in 3
 * minutes). Notifications are small: 1 MiB is thousands a client did not
 * read. A 2025 client comes back with Last-Event-ID; a 2026 one listens
 * again.
 */
export const MAX_UNREAD_STREAM_BYTES = 1024 * 1024;

/**
 * The same bytes, read from `body` as they come and queued for the client,
 * and `done` once when the stream ends, fails, is cancelled or is cut: past
 * `maxUnread` queued bytes the stream fails and `body` is cancelled.
 */
export function boundedOnEnd(
  body: ReadableStream<Uint8Array>,
  done: () => void,
  maxUnread: number,
): { stream: ReadableStream<Uint8Array>; abandon: () => void } {
  const reader = body.getReader();
  let over = false;
  const abandon = () => {
    over = true;
    void reader.cancel(new Error('the client went away')).catch(() => {});
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
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
              // desiredSize is the high-water mark (0) less the bytes queued.
              if (-(controller.desiredSize ?? 0) > maxUnread) {
                over = true;
                done();
                const error = new Error(`its client left more than ${maxUnread} bytes unread`);
                controller.error(error);
                return void reader.cancel(error).catch(() => {});
              }
            }
          } catch (error) {
            if (over) return;
            over = true;
            done();
            controller.error(error);
          }
        })();
      },
      cancel(reason) {
        over = true;
        done();
        return reader.cancel(reason);
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 0 }),
  );
  return { stream, abandon };
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
