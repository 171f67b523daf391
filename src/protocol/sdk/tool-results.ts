// SDK workaround (@modelcontextprotocol/server 2.4): tools/call results are sent as parsed, losing SEP-2093 fields.
// When it can go: test/unit/sdk-workarounds.test.ts, "tool results", fails.
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
