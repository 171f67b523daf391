// Every workaround for the MCP SDK (@modelcontextprotocol/server 2.4) in one
// place. Each says what the SDK does, why we differ, and how to tell when an
// SDK upgrade makes it unnecessary.
import { Server, type JSONRPCMessage, type JSONRPCRequest, type ServerContext } from '@modelcontextprotocol/server';
import { ErrorCode, RESOURCE_NOT_FOUND_MESSAGE } from './errors.ts';

/**
 * A Standard Schema that accepts any params object as it is. The two-argument
 * `setRequestHandler(method, handler)` parses params with the spec schema,
 * which strips the proposals' params (`prefix`, `filter`, `filters`, `uri` on
 * lists) and turns a bad param into -32603; with this schema in the
 * three-argument form the handler sees every param and validates them itself
 * (-32602 with the SEP-2564 messages).
 */
export const LOOSE_PARAMS = {
  '~standard': {
    version: 1 as const,
    vendor: 'folder-mcp',
    validate: (value: unknown) => ({ value: (value ?? {}) as Record<string, unknown> }),
  },
};

type Handler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Record<string, unknown>>;

/**
 * The SDK's `Server`, keeping the SEP-2093 fields of tool results. The SDK
 * validates a `tools/call` result with the spec schema and sends the parsed
 * copy, which drops `resourceType`, `title` and the like from resource links
 * and embedded resources. Here the result is still validated (a malformed one
 * fails as before) but the original is sent. test/tools.e2e.test.ts checks
 * `resourceType` on a resource link: if the SDK stops stripping, this can go.
 */
export class FolderServer extends Server {
  protected override _wrapHandler(method: string, handler: Handler): Handler {
    if (method !== 'tools/call') return super._wrapHandler(method, handler);
    const originals = new WeakMap<JSONRPCRequest, Record<string, unknown>>();
    const validated = super._wrapHandler(method, async (request, ctx) => {
      const result = await handler(request, ctx);
      originals.set(request, result);
      return result;
    });
    return async (request, ctx) => {
      const checked = await validated(request, ctx);
      return originals.get(request) ?? checked;
    };
  }
}

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
