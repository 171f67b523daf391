// SDK workaround (@modelcontextprotocol/server 2.4): a 2025-era GET stream sends nothing until its first keep-alive.
// When it can go: test/unit/sdk-workarounds.test.ts, "GET stream priming", fails.
import type { JSONRPCMessage } from '@modelcontextprotocol/server';

/**
 * A session's GET stream, opened with a priming event (an id to resume from,
 * and `retry:`), as the SDK opens its POST streams: the SDK sends nothing on
 * it until the first keep-alive, 15 s later, and until then the client had
 * not even its headers. `storeEvent` gives the priming event its id (the
 * session's event store, under the stream's id).
 */
export async function primeGetStream(
  response: Response,
  storeEvent: (message: JSONRPCMessage) => Promise<string>,
  retryMs: number,
): Promise<Response> {
  if (!isEventStream(response)) return response;
  const id = await storeEvent({} as JSONRPCMessage);
  return startWith(response, `id: ${id}\nretry: ${retryMs}\ndata: \n\n`);
}

/**
 * A GET stream resumed with Last-Event-ID, opened with an SSE comment: the
 * SDK replays what the client missed (often nothing) and then, like a new
 * stream, sends nothing until its keep-alive, so the client waited 15 s for
 * the headers. A comment and not a new priming event: an id sent before the
 * replayed events would let a client that drops again resume past them.
 */
export function openResumedStream(response: Response): Response {
  return isEventStream(response) ? startWith(response, ': resumed\n\n') : response;
}

function isEventStream(response: Response): response is Response & { body: ReadableStream<Uint8Array> } {
  return (response.headers.get('content-type') ?? '').startsWith('text/event-stream') && response.body !== null;
}

/** The same stream with `text` first, so its headers go out at once; a cancel reaches the SDK's stream. */
function startWith(response: Response & { body: ReadableStream<Uint8Array> }, text: string): Response {
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
