// SDK workaround (@modelcontextprotocol/server 2.4): tools/call results are sent as parsed, losing SEP-2093 fields.
// When it can go: test/unit/sdk-workarounds.test.ts, "tool results", fails.
// And server/discover leaves `logging` out (below).
import { Server, type JSONRPCRequest, type ServerContext } from '@modelcontextprotocol/server';

type Handler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Record<string, unknown>>;

/**
 * The SDK's `Server`, keeping the SEP-2093 fields of tool results. The SDK
 * validates a `tools/call` result with the spec schema and sends the parsed
 * copy, which drops `resourceType`, `title` and the like from resource links
 * and embedded resources. Here the result is still validated (a malformed one
 * fails as before) but the original is sent.
 */
export class FolderServer extends Server {
  protected override _wrapHandler(method: string, handler: Handler): Handler {
    if (method === 'server/discover') return super._wrapHandler(method, async (request, ctx) => withoutLogging(await handler(request, ctx)));
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
 * server/discover answers for the 2026-07-28 era, where `logging/setLevel`
 * is gone (SEP-2577: log to stderr) and log lines would go only on a
 * request's own stream, at the level its `_meta` asks. The server's lines
 * come from its background work (the index, the watcher), never from a
 * request, so on that era it sends none (src/protocol/logging.ts), and says
 * so by leaving `logging` out. `initialize` (2025) still has it.
 */
function withoutLogging(result: Record<string, unknown>): Record<string, unknown> {
  const capabilities = result.capabilities as Record<string, unknown> | undefined;
  if (capabilities?.logging === undefined) return result;
  const { logging: _logging, ...rest } = capabilities;
  return { ...result, capabilities: rest };
}
