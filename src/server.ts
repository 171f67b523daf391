import type { RequestId, Server } from '@modelcontextprotocol/server';
import { answerBlobsOf } from './protocol/sdk/answer-blobs.ts';
import { CACHE_HINTS, SERVER_CAPABILITIES } from './protocol/capabilities.ts';
import type { Connection } from './protocol/connection.ts';
import type { ServerContext } from './protocol/context.ts';
import type { HoldAnswer } from './protocol/answer-holds.ts';
import { REQUEST_HANDLERS, type CatalogHandlers } from './protocol/handlers.ts';
import { progressSink, waitForIndex, whileScanning, type WaitExtra } from './protocol/progress.ts';
import { LOOSE_PARAMS } from './protocol/sdk/loose-params.ts';
import { ObservedServer, type RequestObserver } from './protocol/observe.ts';

/** What a server instance's handlers need of the shared services (src/app.ts builds them). */
export interface HandlerServices {
  ctx: ServerContext;
  catalog: CatalogHandlers;
}

export interface ServerInfo {
  name: string;
  version: string;
  /** `--write`: the write tools are listed, and the instructions say so (not sent as serverInfo). */
  write?: boolean;
}

/** What the server says of itself in `instructions`: read-only unless started with --write. */
export function instructionsFor(write: boolean): string {
  return (
    'Files and folders of the served project as MCP resources: every file a document, every directory a collection. ' +
    'List with resources/list (params: prefix, filters.uri_paths, filter.namePatterns/uriPatterns, uri for the children of a collection). ' +
    'Tools find, search, read and tree reach the same files; group discovery at mcp://groups/tools, mcp://groups/prompts, mcp://groups/resources. ' +
    (write
      ? 'Writable (--write): tools write, edit, mkdir and move change files in the served folders (no tool deletes), and the index follows at once.'
      : 'Read-only: no tool changes a file (the server was not started with --write).')
  );
}

/**
 * Builds one SDK server instance for one connection: capabilities and the
 * handler table, nothing else. Cheap (the SDK builds one per HTTP request,
 * and one for a stdio probe): the shared services are built once, by the
 * first request that needs them (`services`). `observe` hears of every
 * request's outcome and time (the metrics).
 */
export function createServer(services: () => HandlerServices | Promise<HandlerServices>, connection: Connection, info: ServerInfo, observe?: RequestObserver): Server {
  const { write = false, ...identity } = info;
  const server = new ObservedServer(observe, identity, { capabilities: SERVER_CAPABILITIES, instructions: instructionsFor(write), cacheHints: CACHE_HINTS });
  server.settled = (id) => connection.handlerSettled?.(id);
  for (const [method, handler] of Object.entries(REQUEST_HANDLERS)) {
    // Three-argument form with loose params: the proposals' params reach the handler (src/protocol/sdk/loose-params.ts).
    server.setRequestHandler(method, { params: LOOSE_PARAMS }, async (params, request) => {
      const { ctx, catalog } = await services();
      // Start-up work waits while a request runs (src/turns.ts Foreground).
      const leave = ctx.index.foreground.enter();
      try {
        const extra = {
          _meta: request.mcpReq._meta as { progressToken?: string | number },
          sendNotification: (notification: Parameters<WaitExtra['sendNotification']>[0]) => request.mcpReq.notify(notification),
        };
        const progress = progressSink(extra);
        const blobs = answerBlobsOf(request.http?.req);
        const signal = request.mcpReq.signal;
        const holdAnswer = answerHolder(connection, request.mcpReq.id, signal);
        const scope = { ctx, catalog, connection, signal, ...(progress ? { progress } : {}), ...(blobs ? { blobs } : {}), ...(holdAnswer ? { holdAnswer } : {}) };
        const handle = () => handler.handle(scope, params as Record<string, unknown>);
        // The one place requests wait for the index (the table says what each needs): handlers and tools do not wait again.
        if (handler.waitsFor === 'nothing') return await handle();
        const { readiness } = ctx.index;
        const held = readiness.held;
        if (held) {
          // The request waits for the catch-up: it is foreground work now (otherwise a chatty client starves it past WARM_WAIT_MS).
          const done = ctx.index.foreground.urge();
          try {
            await held;
          } finally {
            done();
          }
        }
        if (readiness.state !== 'scanning') return await handle();
        if (handler.waitsFor === 'keys') return await whileScanning(ctx.index, extra, handle);
        await waitForIndex(ctx.index, extra);
        return await handle();
      } finally {
        leave();
      }
    });
  }
  connection.server = server;
  return server;
}

/**
 * A request's HoldAnswer, where the transport tells when answers are written
 * (stdio). A cancelled request's answer is never sent: its shares go back
 * on the abort.
 */
function answerHolder(connection: Connection, id: RequestId, signal: AbortSignal): HoldAnswer | undefined {
  const holds = connection.answerHolds;
  if (holds === undefined) return undefined;
  return (release) => {
    holds.hold(id, release);
    if (signal.aborted) holds.answered(id);
    else signal.addEventListener('abort', () => holds.answered(id), { once: true });
  };
}
