import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { EXPERIMENTAL, FILTERING } from './protocol/capabilities.ts';
import type { ServerContext } from './protocol/context.ts';
import { listResources, listResourceTemplates } from './protocol/list.ts';
import { waitForIndex } from './live/progress.ts';
import { subscribeResource, unsubscribeResource } from './live/subscribe.ts';
import { readResource, resourceMetadata } from './protocol/read.ts';
import * as schemas from './protocol/schemas.ts';
import { CATALOG_CAPABILITIES, wireCatalog } from './catalog/wire.ts';

export interface ServerInfo {
  name: string;
  version: string;
}

/**
 * Builds the MCP server: capabilities and handler wiring, nothing else. The
 * low-level `Server` (not `McpServer`, which ignores list params and cursors)
 * with loose request schemas, so the handlers see every param.
 */
export function createServer(ctx: ServerContext, info: ServerInfo): Server {
  const server = new Server(info, {
    capabilities: {
      resources: { subscribe: true, listChanged: true, filtering: FILTERING.resources } as Record<string, unknown>,
      experimental: EXPERIMENTAL,
      ...CATALOG_CAPABILITIES,
    },
    instructions:
      'Files and folders of the served project as MCP resources: every file a document, every directory a collection. ' +
      'List with resources/list (params: prefix, filters.uri_paths, filter.namePatterns/uriPatterns, uri for the children of a collection). ' +
      'Tools find, search, read and tree reach the same files; group discovery at mcp://groups/tools, mcp://groups/prompts, mcp://groups/resources.',
  });
  // Cold start: wait for the first scan here, with notifications/progress when the request has a progress token.
  server.setRequestHandler(schemas.ListResourcesRequest, async (request, extra) => {
    await waitForIndex(ctx.index, extra);
    return listResources(ctx, request.params);
  });
  server.setRequestHandler(schemas.ListResourceTemplatesRequest, (request) =>
    listResourceTemplates(ctx, request.params),
  );
  server.setRequestHandler(schemas.ReadResourceRequest, async (request, extra) => {
    await waitForIndex(ctx.index, extra);
    return readResource(ctx, request.params);
  });
  server.setRequestHandler(schemas.ResourceMetadataRequest, (request) => resourceMetadata(ctx, request.params));
  server.setRequestHandler(schemas.SubscribeRequest, (request) => subscribeResource(ctx, ctx.subscriptions, request.params));
  server.setRequestHandler(schemas.UnsubscribeRequest, (request) =>
    unsubscribeResource(ctx, ctx.subscriptions, request.params),
  );
  wireCatalog(server, ctx);
  return server;
}
