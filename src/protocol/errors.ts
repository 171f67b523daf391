import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';

/** MCP's resource-not-found code (spec 2025-06-18, "Error Handling"). */
export const RESOURCE_NOT_FOUND = -32002;

/**
 * A JSON-RPC error with its message exactly as the specs word it. The SDK's
 * McpError prefixes "MCP error <code>: " to the message, which would break the
 * SEP-2564 messages clients match on; the SDK sends any thrown error's
 * `code`, `message` and `data` as they are.
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

export function resourceNotFound(uri: unknown): ProtocolError {
  return new ProtocolError(RESOURCE_NOT_FOUND, 'Resource not found', { uri });
}

export function invalidParams(message: string, data?: unknown): ProtocolError {
  return new ProtocolError(ErrorCode.InvalidParams, message, data);
}

export function internalError(message: string, data?: unknown): ProtocolError {
  return new ProtocolError(ErrorCode.InternalError, message, data);
}
