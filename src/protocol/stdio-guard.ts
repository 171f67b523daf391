import { ErrorCode, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * The SDK's stdio transport drops a line it cannot parse as a JSON-RPC message
 * (bad JSON, `"params": []`, a request without a method) and only reports it
 * locally, so the client waits forever for an answer. This stream sits in
 * front of it: well-formed lines pass through untouched; for a malformed one
 * we answer ourselves, as JSON-RPC 2.0 asks (-32700 for bad JSON, -32602 for
 * params that are not an object, -32600 otherwise; id null when the request's
 * own id cannot be read), and the server keeps serving.
 */
export function guardMalformedMessages(reply: (line: string) => void): Transform {
  let pending = '';
  return new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      pending += chunk.toString('utf8');
      let newline = pending.indexOf('\n');
      let out = '';
      while (newline !== -1) {
        const line = pending.slice(0, newline + 1);
        pending = pending.slice(newline + 1);
        const error = malformedReply(line.trim());
        if (error === undefined) out += line;
        else if (error !== null) reply(`${JSON.stringify(error)}\n`);
        newline = pending.indexOf('\n');
      }
      done(null, out === '' ? undefined : out);
    },
    flush(done: TransformCallback) {
      done(null, pending === '' ? undefined : pending);
    },
  });
}

type ErrorResponse = { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string } };

/** undefined: the line is fine (or blank); null: malformed but not a request, nothing to answer; else the answer. */
export function malformedReply(line: string): ErrorResponse | null | undefined {
  if (line === '') return undefined;
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return { jsonrpc: '2.0', id: null, error: { code: ErrorCode.ParseError, message: 'Parse error' } };
  }
  if (JSONRPCMessageSchema.safeParse(message).success) return undefined;
  const object = typeof message === 'object' && message !== null && !Array.isArray(message) ? (message as Record<string, unknown>) : {};
  const id = typeof object.id === 'string' || typeof object.id === 'number' ? object.id : null;
  // Malformed notifications and responses get no answer: there is no request to answer.
  if ('result' in object || 'error' in object || ('method' in object && !('id' in object))) return null;
  if (typeof object.method === 'string' && 'params' in object) {
    const params = object.params;
    if (typeof params !== 'object' || params === null || Array.isArray(params)) {
      return { jsonrpc: '2.0', id, error: { code: ErrorCode.InvalidParams, message: 'Invalid params: params must be an object' } };
    }
  }
  return { jsonrpc: '2.0', id, error: { code: ErrorCode.InvalidRequest, message: 'Invalid Request' } };
}
