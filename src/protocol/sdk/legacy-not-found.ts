// SDK workaround (@modelcontextprotocol/server 2.4): resource not found is -32602 on both eras.
// When it can go: test/unit/sdk-workarounds.test.ts, "legacy not found", fails.
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { ErrorCode, RESOURCE_NOT_FOUND_MESSAGE } from '../errors.ts';

/**
 * The SDK sends every -32002 as -32602 on both eras (right for 2026-07-28,
 * SEP-2164), but 2025-11-25 and older say resource not found is -32002 with
 * `data.uri`. A legacy-era connection's transport passes its outbound
 * messages through here.
 */
export function toLegacyError(message: JSONRPCMessage): JSONRPCMessage {
  const error = (message as { error?: { code?: unknown; message?: unknown; data?: unknown } }).error;
  if (
    error === undefined ||
    error.code !== ErrorCode.InvalidParams ||
    error.message !== RESOURCE_NOT_FOUND_MESSAGE ||
    typeof error.data !== 'object' ||
    error.data === null ||
    !('uri' in error.data)
  ) {
    return message;
  }
  return { ...message, error: { ...error, code: ErrorCode.LegacyResourceNotFound } } as JSONRPCMessage;
}
