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
 * `response`, with `done` called once its body ends, fails or is cancelled,
 * or the request is aborted; at once when it has no body. `done` must be
 * harmless twice (an abort and the end of the body can both come).
 */
export function whenAnswered(request: Request, response: Response, done: () => void): Response {
  if (response.body === null) {
    done();
    return response;
  }
  const { stream, abandon } = onEnd(response.body, done);
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
