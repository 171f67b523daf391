// Every request the server answers, in one table: the method, whether it
// waits for the first scan, and the handler. src/server.ts registers the
// table on an SDK server; every transport and both protocol eras share it.
import type { Catalog } from '../catalog/catalog.ts';
import type { Connection } from './connection.ts';
import type { ServerContext } from './context.ts';
import { listResources, listResourceTemplates } from './list.ts';
import { readResource, resourceMetadata } from './read.ts';
import { subscribeResource, unsubscribeResource } from './subscribe.ts';

/** What a handler may use: the shared services and the client's own state. */
export interface HandlerScope {
  ctx: ServerContext;
  catalog: Catalog;
  connection: Connection;
}

type Params = Record<string, unknown>;
type Result = Promise<Record<string, unknown>>;

export interface RequestHandler {
  /**
   * Cold start: wait for the first scan (with `notifications/progress` when
   * the request has a progress token). Lists of tools, prompts and templates
   * do not need the index.
   */
  waitsForIndex: boolean;
  handle(scope: HandlerScope, params: Params): Result;
}

const handler = (waitsForIndex: boolean, handle: RequestHandler['handle']): RequestHandler => ({ waitsForIndex, handle });

export const REQUEST_HANDLERS: Readonly<Record<string, RequestHandler>> = {
  'resources/list': handler(true, ({ ctx }, p) => listResources(ctx, p)),
  'resources/templates/list': handler(false, async ({ ctx }, p) => listResourceTemplates(ctx, p)),
  'resources/read': handler(true, ({ ctx }, p) => readResource(ctx, p)),
  'resources/metadata': handler(true, ({ ctx }, p) => resourceMetadata(ctx, p)),
  'resources/subscribe': handler(true, ({ ctx, connection }, p) => subscribeResource(ctx, connection.subscriptions, p)),
  'resources/unsubscribe': handler(false, ({ ctx, connection }, p) => unsubscribeResource(ctx, connection.subscriptions, p)),
  'tools/list': handler(false, ({ catalog }, p) => catalog.listTools(p)),
  'tools/call': handler(true, ({ catalog }, p) => catalog.callTool(p) as Result),
  'prompts/list': handler(false, ({ catalog }, p) => catalog.listPrompts(p)),
  'prompts/get': handler(true, ({ catalog }, p) => catalog.getPrompt(p)),
  'completion/complete': handler(false, ({ catalog }, p) => catalog.complete(p)),
};
