/** The same bytes, and `done` once when the stream ends, fails or is cancelled by its reader. */
function onEnd(body: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
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
  request.signal.addEventListener('abort', done, { once: true });
  return new Response(onEnd(response.body, done), { status: response.status, statusText: response.statusText, headers: response.headers });
}
