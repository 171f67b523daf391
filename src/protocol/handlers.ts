// Every request the server answers, in one table: the method, whether it
// waits for the first scan, and the handler. src/server.ts registers the
// table on an SDK server; every transport and both protocol eras share it.
import type { HoldAnswer } from './answer-holds.ts';
import type { AnswerBlobs } from './sdk/answer-blobs.ts';
import type { Connection } from './connection.ts';
import type { ServerContext } from './context.ts';
import { listResources, listResourceTemplates } from './list.ts';
import { setLogLevel } from './logging.ts';
import type { ProgressSink } from './progress.ts';
import { isReservedUri, readResource, resourceMetadata } from './read.ts';
import { subscribeResource, unsubscribeResource } from './subscribe.ts';

type Params = Record<string, unknown>;
type Result = Promise<Record<string, unknown>>;

/**
 * What the catalog (src/catalog: tools, prompts, completions, the reserved
 * mcp://groups/* resources) answers. Declared here, implemented there, so the
 * protocol layer does not import the floor above it.
 */
export interface CatalogHandlers {
  listTools(params: unknown): Result;
  /**
   * `progress`: the request's, when it sent a progress token (a tool that
   * waits says how far it got); `holdAnswer`: see HandlerScope.
   */
  callTool(params: unknown, progress?: ProgressSink, holdAnswer?: HoldAnswer, signal?: AbortSignal): Result;
  listPrompts(params: unknown): Result;
  getPrompt(params: unknown): Result;
  complete(params: unknown): Result;
  readReserved(uri: string): Result;
  reservedMetadata(uri: string): Result;
}

/** Every method of CatalogHandlers, once: what a wrapper of the catalog (app.ts: lazyCatalog) is made from. */
export const CATALOG_METHODS = ['listTools', 'callTool', 'listPrompts', 'getPrompt', 'complete', 'readReserved', 'reservedMetadata'] as const;
// A method added to CatalogHandlers and not to the list above fails to compile here.
const everyCatalogMethod: Exclude<keyof CatalogHandlers, (typeof CATALOG_METHODS)[number]> extends never ? true : never = true;
void everyCatalogMethod;

/** What a handler may use: the shared services and the client's own state. */
export interface HandlerScope {
  ctx: ServerContext;
  catalog: CatalogHandlers;
  connection: Connection;
  /** Present when the request sent a progress token. */
  progress?: ProgressSink;
  /** Over HTTP: large binary contents are written as the answer is sent (src/protocol/sdk/answer-blobs.ts). */
  blobs?: AnswerBlobs;
  /**
   * On stdio: keeps a share of the read budget until this request's answer
   * is written (src/protocol/answer-holds.ts). Absent, a share goes back
   * when the handler returns.
   */
  holdAnswer?: HoldAnswer;
  /**
   * Aborts when the client cancels the request (`notifications/cancelled`):
   * its answer is dropped, and work still waiting its turn (a search queued
   * for the search thread, a conversion queued for the conversion process)
   * is not started. Work under way runs to its bounds.
   */
  signal?: AbortSignal;
}


export interface RequestHandler {
  /**
   * Cold start: `index` waits for the first scan (with `notifications/progress`
   * when the request has a progress token); `keys` waits inside the handler
   * for the keys it needs only (resources/list: early pages), with the same
   * progress; `nothing`: lists of tools, prompts and templates do not need the
   * index.
   */
  waitsFor: 'index' | 'keys' | 'nothing';
  handle(scope: HandlerScope, params: Params): Result;
}

const handler = (waitsFor: RequestHandler['waitsFor'], handle: RequestHandler['handle']): RequestHandler => ({ waitsFor, handle });

export const REQUEST_HANDLERS: Readonly<Record<string, RequestHandler>> = {
  'resources/list': handler('keys', ({ ctx }, p) => listResources(ctx, p)),
  'resources/templates/list': handler('nothing', async ({ ctx }, p) => listResourceTemplates(ctx, p)),
  // Reserved mcp: URIs are dispatched first: never a file.
  'resources/read': handler('index', ({ ctx, catalog, blobs, holdAnswer, signal }, p) =>
    isReservedUri(p.uri) ? catalog.readReserved(p.uri) : readResource(ctx, p, blobs, holdAnswer, signal),
  ),
  'resources/metadata': handler('index', ({ ctx, catalog }, p) =>
    isReservedUri(p.uri) ? catalog.reservedMetadata(p.uri) : resourceMetadata(ctx, p),
  ),
  'resources/subscribe': handler('index', ({ ctx, connection }, p) => subscribeResource(ctx, connection.subscriptions, p)),
  'resources/unsubscribe': handler('nothing', ({ ctx, connection }, p) => unsubscribeResource(ctx, connection.subscriptions, p)),
  'tools/list': handler('nothing', ({ catalog }, p) => catalog.listTools(p)),
  'tools/call': handler('index', ({ catalog, progress, holdAnswer, signal }, p) => catalog.callTool(p, progress, holdAnswer, signal)),
  'prompts/list': handler('nothing', ({ catalog }, p) => catalog.listPrompts(p)),
  'prompts/get': handler('index', ({ catalog }, p) => catalog.getPrompt(p)),
  'completion/complete': handler('nothing', ({ catalog }, p) => catalog.complete(p)),
  // Ours, not the SDK's built-in one: the level belongs to the Connection, which relays log lines (app.ts).
  'logging/setLevel': handler('nothing', async ({ connection }, p) => setLogLevel(connection, p)),
};
