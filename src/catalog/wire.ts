// Registers the catalog's handlers on the SDK Server (called from server.ts).
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { waitForIndex } from '../live/progress.ts';
import { FILTERING } from '../protocol/capabilities.ts';
import type { ServerContext } from '../protocol/context.ts';
import * as schemas from '../protocol/schemas.ts';
import { createCatalog } from './catalog.ts';

/** Capabilities the catalog needs (SDK clients strip `filtering`; server.ts repeats it under experimental). */
export const CATALOG_CAPABILITIES = {
  tools: { listChanged: false, filtering: FILTERING.tools },
  prompts: { listChanged: false, filtering: FILTERING.prompts },
  completions: {},
};

export function wireCatalog(server: Server, ctx: ServerContext): void {
  const catalog = createCatalog(ctx);
  server.setRequestHandler(schemas.ListToolsRequest, (request) => catalog.listTools(request.params));
  // The SDK's Server re-parses tools/call results with the spec schema, which
  // drops the SEP-2093 fields of embedded resources and resource links
  // (`resource.annotations`, `resourceType`, `title`, `size`...). Registering
  // on the base Protocol keeps them; the results still parse with the SDK's
  // CallToolResultSchema (test/tools.e2e.test.ts checks both).
  const register = Protocol.prototype.setRequestHandler as (this: Server, schema: unknown, handler: unknown) => void;
  register.call(server, schemas.CallToolRequest, async (request: { params?: unknown }, extra: never) => {
    await waitForIndex(ctx.index, extra);
    return catalog.callTool(request.params);
  });
  server.setRequestHandler(schemas.ListPromptsRequest, (request) => catalog.listPrompts(request.params));
  server.setRequestHandler(schemas.GetPromptRequest, async (request, extra) => {
    await waitForIndex(ctx.index, extra);
    return catalog.getPrompt(request.params) as never;
  });
  server.setRequestHandler(schemas.CompleteRequest, (request) => catalog.complete(request.params) as never);
}
