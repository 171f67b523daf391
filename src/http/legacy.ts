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
  if (type.startsWith('application/json')) return new Response(rewriteJson(await response.text()), init);
  return response;
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
