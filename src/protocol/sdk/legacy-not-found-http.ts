// SDK workaround (@modelcontextprotocol/server 2.4): resource not found is -32602 on both eras. The HTTP side of
// ./legacy-not-found.ts (the stdio side is ./stdio-transport.ts): 2025-era answers of the stateless leg and of sessions.
// When it can go: test/unit/sdk-workarounds.test.ts, "legacy not found", fails.
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { RESOURCE_NOT_FOUND_MESSAGE } from '../errors.ts';
import { toLegacyError } from './legacy-not-found.ts';

/**
 * A 2025-era HTTP answer with not-found as that era says it (-32002, not the
 * SDK's -32602 for both eras; src/protocol/sdk/legacy-not-found.ts), as the stdio transport
 * does for a legacy connection. The SDK's stateless legacy leg answers a
 * request as JSON or as an SSE stream (progress first, then the result): the
 * stream is rewritten line by line as it passes, never buffered whole.
 */
export async function toLegacyResponse(response: Response): Promise<Response> {
  if (response.body === null) return response;
  const type = response.headers.get('content-type') ?? '';
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  const init = { status: response.status, statusText: response.statusText, headers };
  if (type.startsWith('text/event-stream')) return new Response(response.body.pipeThrough(rewriteSseLines()), init);
  if (type.startsWith('application/json')) return new Response(await rewriteJsonBody(response.body), init);
  return response;
}

const MARKER = Buffer.from(RESOURCE_NOT_FOUND_MESSAGE);

/**
 * The JSON answer, rewritten only when it holds a not-found error: its bytes
 * are searched for the message (across chunk edges) without being decoded,
 * so a batch of large reads (8 x 4 MiB of base64, 45 MB) is passed on as it
 * came instead of decoded, searched and encoded again on the event loop.
 */
async function rewriteJsonBody(body: ReadableStream<Uint8Array>): Promise<Uint8Array | string> {
  const chunks: Buffer[] = [];
  let found = false;
  let tail = Buffer.alloc(0);
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    chunks.push(bytes);
    if (!found) {
      // The message whole in this chunk, or begun in the bytes before it (`tail`: the last length - 1 of them).
      found = bytes.includes(MARKER) || Buffer.concat([tail, bytes.subarray(0, MARKER.length - 1)]).includes(MARKER);
      const keep = MARKER.length - 1;
      tail = Buffer.from(bytes.length >= keep ? bytes.subarray(bytes.length - keep) : Buffer.concat([tail, bytes]).subarray(-keep));
    }
  }
  const whole = Buffer.concat(chunks);
  return found ? rewriteJson(whole.toString('utf8')) : whole;
}

/** A JSON-RPC message (or batch) as text, with a not-found error given the legacy code; anything else as it was. */
export function rewriteJson(text: string): string {
  if (!text.includes(RESOURCE_NOT_FOUND_MESSAGE)) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  const out = Array.isArray(value) ? value.map((m) => toLegacyError(m as JSONRPCMessage)) : toLegacyError(value as JSONRPCMessage);
  return JSON.stringify(out);
}

/**
 * The SSE stream, rewritten line by line as it passes, on bytes: only a run
 * of whole lines that holds the not-found message is decoded, rewritten and
 * encoded again. A 4 MiB read is a 5.6 MB event; decoding and encoding every
 * one of them took more CPU than the SDK's own JSON.stringify of it.
 */
function rewriteSseLines(): TransformStream<Uint8Array, Uint8Array> {
  /** The chunks of a line not yet ended (an event cut between chunks), joined when its end comes. */
  let carry: Buffer[] = [];
  const rewritten = (lines: Buffer): Buffer => (lines.includes(MARKER) ? Buffer.from(lines.toString('utf8').split('\n').map(rewriteLine).join('\n')) : lines);
  return new TransformStream({
    transform(chunk, controller) {
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      const end = bytes.lastIndexOf(0x0a) + 1;
      if (end === 0) return void carry.push(bytes);
      const lines = carry.length === 0 ? bytes.subarray(0, end) : Buffer.concat([...carry, bytes.subarray(0, end)]);
      carry = end < bytes.length ? [bytes.subarray(end)] : [];
      controller.enqueue(rewritten(lines));
    },
    flush(controller) {
      if (carry.length > 0) controller.enqueue(rewritten(Buffer.concat(carry)));
    },
  });
}

function rewriteLine(text: string): string {
  return text.startsWith('data:') ? `data: ${rewriteJson(text.slice('data:'.length).trimStart())}` : text;
}
