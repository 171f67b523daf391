// Pure checks on raw JSON-RPC lines, shared by the stdio transport and its
// tests: what to answer for a malformed line, and the 2025 lifecycle gate.
import { nestedDeeperThan } from '../json-depth.ts';
import { ErrorCode } from './errors.ts';

export type RequestId = string | number;
export type ErrorResponse = { jsonrpc: '2.0'; id: RequestId | null; error: { code: number; message: string } };

export function errorResponse(id: RequestId | null, code: number, message: string): ErrorResponse {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An id as the SDK takes one: a string, or an integer JavaScript holds exactly (JSON-RPC: no fractional parts). */
function isId(value: unknown): value is RequestId {
  return typeof value === 'string' || Number.isSafeInteger(value);
}

/** Of a message the SDK would drop, the id an answer can echo: any string or finite number it carried, else null. */
function echoedId(value: unknown): RequestId | null {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) ? value : null;
}

const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';

/** Why the SDK's schema refuses a request's or notification's params (BaseRequestParamsSchema); undefined when it takes them. */
function paramsProblem(message: Record<string, unknown>): string | undefined {
  if (!('params' in message)) return undefined;
  const params = message.params;
  if (!isObject(params)) return 'params must be an object';
  if (!('_meta' in params)) return undefined;
  const meta = params._meta;
  if (!isObject(meta)) return '_meta must be an object';
  if ('progressToken' in meta && !isId(meta.progressToken)) return '_meta.progressToken must be a string or an integer';
  const task = meta[RELATED_TASK_META_KEY];
  if (RELATED_TASK_META_KEY in meta && !(isObject(task) && typeof task.taskId === 'string')) return `_meta["${RELATED_TASK_META_KEY}"] must be an object with a taskId`;
  return undefined;
}

/** The keys a request (or a notification, without the id) may have. */
const REQUEST_KEYS: readonly string[] = ['jsonrpc', 'id', 'method', 'params'];

/** Every key is one of `keys` (the SDK's envelope schemas are strict: a message with another key is dropped). */
function onlyKeys(message: Record<string, unknown>, keys: readonly string[]): boolean {
  return Object.keys(message).every((key) => keys.includes(key));
}

/**
 * A JSON-RPC 2.0 message exactly as the SDK accepts it (its JSONRPCMessageSchema: a
 * request, a notification, a result or an error; test/e2e/stdio-transport.test.ts
 * holds the two side by side). The SDK drops anything else without a word, and a
 * request it dropped was never answered: its client waited for good, and it held
 * one of the 16 places of requests in flight (16 such requests stopped the server).
 */
export function isJsonRpcMessage(message: unknown): message is Record<string, unknown> {
  if (!isObject(message) || message.jsonrpc !== '2.0') return false;
  if (typeof message.method === 'string') {
    if (!onlyKeys(message, REQUEST_KEYS) || paramsProblem(message) !== undefined) return false;
    return !('id' in message) || isId(message.id);
  }
  if ('result' in message) return onlyKeys(message, ['jsonrpc', 'id', 'result']) && isId(message.id) && isObject(message.result) && isMetaFine(message.result);
  if (!('error' in message) || !onlyKeys(message, ['jsonrpc', 'id', 'error']) || ('id' in message && !isId(message.id))) return false;
  const error = message.error;
  return isObject(error) && Number.isSafeInteger(error.code) && typeof error.message === 'string';
}

/** A result's `_meta`, when it has one, is an object (ResultSchema). */
function isMetaFine(result: Record<string, unknown>): boolean {
  return !('_meta' in result) || isObject(result._meta);
}

/** What a line read off the wire is: a message to pass on, or the answer to send instead (null: none). */
export type LineRead = { message: Record<string, unknown> } | { reply: ErrorResponse | null };

/**
 * Parses one line, once. The SDK drops a line it cannot parse as a JSON-RPC
 * message and only reports it locally, so the client would wait forever:
 * such a line gets the answer JSON-RPC 2.0 asks for instead (-32700 bad
 * JSON, -32602 params the SDK refuses, -32600 otherwise; id null when the
 * request's own cannot be read), or none for a malformed notification or
 * response. undefined: a blank line.
 */
export function readLine(line: string): LineRead | undefined {
  if (line === '') return undefined;
  if (nestedDeeperThan(line, MAX_JSON_DEPTH)) {
    return { reply: errorResponse(leadingRequestId(line), ErrorCode.InvalidRequest, `Invalid Request: JSON nested deeper than ${MAX_JSON_DEPTH} levels`) };
  }
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return { reply: errorResponse(null, ErrorCode.ParseError, 'Parse error') };
  }
  if (isJsonRpcMessage(message)) return { message };
  const object = isObject(message) ? message : {};
  // A request is what has a method and an id; malformed notifications and responses get no answer: there is no request to answer.
  if (typeof object.method !== 'string' || !('id' in object)) {
    return { reply: 'result' in object || 'error' in object || 'method' in object ? null : errorResponse(echoedId(object.id), ErrorCode.InvalidRequest, 'Invalid Request') };
  }
  const id = echoedId(object.id);
  if (!isId(object.id)) return { reply: errorResponse(id, ErrorCode.InvalidRequest, 'Invalid Request: id must be a string or an integer') };
  if (object.jsonrpc !== '2.0') return { reply: errorResponse(id, ErrorCode.InvalidRequest, 'Invalid Request') };
  const problem = paramsProblem(object);
  if (problem !== undefined) return { reply: errorResponse(id, ErrorCode.InvalidParams, `Invalid params: ${problem}`) };
  const others = Object.keys(object).filter((key) => !REQUEST_KEYS.includes(key));
  return { reply: errorResponse(id, ErrorCode.InvalidRequest, `Invalid Request: a request has no ${others.map((key) => JSON.stringify(key)).join(', ')}`) };
}

/**
 * Deepest JSON a message may nest. JSON.parse copes with any depth, but the
 * SDK's validation recurses: a body of 5,000 nested brackets overflowed the
 * stack (an internal error for every such request). No MCP message needs
 * more than a few levels; tool arguments a few more.
 */
export const MAX_JSON_DEPTH = 64;

export { nestedDeeperThan };

/**
 * What to answer for a line (see readLine). undefined: the line is fine (or
 * blank); null: malformed but not a request, nothing to answer.
 */
export function malformedReply(line: string): ErrorResponse | null | undefined {
  const read = readLine(line);
  return read === undefined || 'message' in read ? undefined : read.reply;
}

/**
 * The id of a request too long to parse, read from its first bytes when it
 * stands at the top level before `params` (as every SDK writes it); else null.
 */
export function leadingRequestId(head: string): RequestId | null {
  const match = /^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"(?:[^"\\]|\\.)*"\s*,)*\s*"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?)/.exec(head);
  if (!match) return null;
  try {
    const id: unknown = JSON.parse(match[1]!);
    return isId(id) ? id : null;
  } catch {
    return null;
  }
}

/**
 * Why `initialize`'s params are not what InitializeRequest asks for (a
 * protocolVersion, capabilities, clientInfo with a name and a version);
 * undefined when they are. The SDK's own check answered -32603 with a
 * many-line schema dump, as if the server had failed.
 */
function initializeProblem(params: unknown): string | undefined {
  if (!isObject(params)) return 'initialize needs params: protocolVersion, capabilities and clientInfo';
  if (typeof params.protocolVersion !== 'string') return 'protocolVersion must be a string';
  if (!isObject(params.capabilities)) return 'capabilities must be an object';
  const client = params.clientInfo;
  if (!isObject(client) || typeof client.name !== 'string' || typeof client.version !== 'string') return 'clientInfo must be an object with a name and a version';
  return undefined;
}

/** Which protocol era a stdio connection settled on, as its opening messages tell. */
export type Era = 'opening' | 'legacy' | 'modern';

export const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';

/** Requests the 2025 lifecycle allows before `initialize` (plus the 2026 probe, which decides nothing). */
const BEFORE_INITIALIZE = new Set(['initialize', 'ping', 'server/discover']);

export interface LifecycleStep {
  era: Era;
  /** When set, the request is answered with this and not passed on. */
  refuse?: ErrorResponse;
}

/**
 * The connection's lifecycle, one inbound message at a time (pure). A
 * request (other than the server/discover probe) carrying the 2026-07-28
 * `_meta` envelope settles the modern era;
 * `initialize` settles the legacy one. On the legacy path the 2025 lifecycle
 * holds: nothing but ping before `initialize`, and `initialize` once. The
 * modern era has no handshake, so nothing is refused there (the SDK answers
 * a late `initialize` itself).
 */
export function lifecycleStep(era: Era, message: Record<string, unknown>): LifecycleStep {
  const method = message.method;
  if (typeof method !== 'string' || !isId(message.id)) return { era };
  if (era === 'modern') return { era };
  const meta = isObject(message.params) && isObject(message.params._meta) ? message.params._meta : undefined;
  // A server/discover probe settles nothing: the client may still fall back to initialize on this connection.
  if (era === 'opening' && method !== 'server/discover' && meta !== undefined && typeof meta[PROTOCOL_VERSION_META_KEY] === 'string') {
    return { era: 'modern' };
  }
  if (method === 'initialize') {
    if (era === 'legacy') return { era, refuse: errorResponse(message.id, ErrorCode.InvalidRequest, 'Invalid Request: the server is already initialized') };
    const problem = initializeProblem(message.params);
    if (problem !== undefined) return { era, refuse: errorResponse(message.id, ErrorCode.InvalidParams, `Invalid params: ${problem}`) };
    return { era: 'legacy' };
  }
  if (era === 'opening' && !BEFORE_INITIALIZE.has(method)) {
    return {
      era,
      refuse: errorResponse(message.id, ErrorCode.InvalidRequest, `Invalid Request: ${method} before initialize (send initialize first, or the 2026-07-28 _meta envelope)`),
    };
  }
  return { era };
}
