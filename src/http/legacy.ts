import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { RESOURCE_NOT_FOUND_MESSAGE } from '../protocol/errors.ts';
import { toLegacyError } from '../protocol/sdk/legacy-not-found.ts';

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

function rewriteSseLines(): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let carry = '';
  const line = (text: string) => (text.startsWith('data:') ? `data: ${rewriteJson(text.slice('data:'.length).trimStart())}` : text);
  return new TransformStream({
    transform(chunk, controller) {
      carry += decoder.decode(chunk, { stream: true });
      const cut = carry.lastIndexOf('\n');
      if (cut === -1) return;
      const complete = carry.slice(0, cut);
      carry = carry.slice(cut + 1);
      controller.enqueue(encoder.encode(`${complete.split('\n').map(line).join('\n')}\n`));
    },
    flush(controller) {
      carry += decoder.decode();
      if (carry !== '') controller.enqueue(encoder.encode(line(carry)));
    },
  });
}
