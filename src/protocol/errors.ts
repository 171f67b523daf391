/** JSON-RPC 2.0 error codes, and MCP's. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Resource not found on 2025-11-25 and older; 2026-07-28 says -32602 with `data.uri` (SEP-2164). */
  LegacyResourceNotFound: -32002,
  /** Implementation-defined server error (-32000 to -32099): busy, retry later. */
  ServerBusy: -32000,
} as const;

export const RESOURCE_NOT_FOUND_MESSAGE = 'Resource not found';

/** What an error message or `data` echoes of client input, at most: a 100 KB URI is not repeated whole. */
export const MAX_ECHO_CHARS = 512;

/** Client input as an error may repeat it: strings over MAX_ECHO_CHARS are cut, with the length said. */
export function echo(value: unknown): unknown {
  if (typeof value !== 'string' || value.length <= MAX_ECHO_CHARS) return value;
  return `${value.slice(0, MAX_ECHO_CHARS)}… (${value.length} characters)`;
}

/**
 * A JSON-RPC error with its message exactly as the specs word it (the
 * SEP-2564 messages are matched by clients). The SDK sends a thrown error's
 * numeric `code`, `message` and `data` as they are.
 */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/**
 * Not found, and outside the roots, look the same. Thrown as the 2026-07-28
 * code (-32602, `data.uri`); a legacy-era connection rewrites it to -32002 on
 * the way out (src/protocol/sdk/legacy-not-found.ts), because the SDK maps every -32002 to
 * -32602 on both eras.
 */
export function resourceNotFound(uri: unknown): ProtocolError {
  return new ProtocolError(ErrorCode.InvalidParams, RESOURCE_NOT_FOUND_MESSAGE, { uri: echo(uri) });
}

export function invalidParams(message: string, data?: unknown): ProtocolError {
  return new ProtocolError(ErrorCode.InvalidParams, message, data);
}

export function internalError(message: string, data?: unknown): ProtocolError {
  return new ProtocolError(ErrorCode.InternalError, message, data);
}
