import type { Server } from '@modelcontextprotocol/server';
import { randomBytes } from 'node:crypto';
import type { Catalog } from './catalog/catalog.ts';
import { ContentSearch, contentIndexUnfollowed } from './search/content-search.ts';
import { defaultEmbedApi, EmbedProvider } from './search/embed-provider.ts';
import type { Config } from './config.ts';
import { ReadBudget } from './content/read-budget.ts';
import { PathLocks, SerialQueue } from './content/path-locks.ts';
import { createConvert } from './content/formats.ts';
import { getMeta } from './index/db.ts';
import { FolderIndex } from './index/folder-index.ts';
import { acquireDbLock } from './index/lock.ts';
import { takeSpareIndex } from './index/spare-index.ts';
import { indexFolderExcludes, indexFolders } from './index/location.ts';
import { HintBus } from './replicas/bus.ts';
import { Live } from './sync/live.ts';
import { notifyConnection } from './protocol/notify.ts';
import { ScanChangeRecord } from './watch/scan-changes.ts';
import { superviseWatcher } from './watch/supervisor.ts';
import type { Logger, RelayingLogger } from './log.ts';
import { Connection } from './protocol/connection.ts';
import { cursorKeyFor } from './protocol/cursor.ts';
import { CATALOG_METHODS } from './protocol/handlers.ts';
import type { ServerContext } from './protocol/context.ts';
import { trackListens } from './protocol/listen.ts';
import { relayLogLine } from './protocol/logging.ts';
import type { RequestObserver } from './protocol/observe.ts';
import type { Era, ErrorResponse } from './protocol/wire.ts';
import { createPager } from './query/page.ts';
import { createServer, type HandlerServices, type ServerInfo } from './server.ts';
import { chooseDriver } from './sqlite.ts';
import { inspectDbFile } from './index/db-file.ts';
import { Foreground, TurnChain } from './turns.ts';
import type { Root } from './uri.ts';

/** What every client shares: built once per process, on the first request that needs it. */
export interface Services extends HandlerServices {
  readonly ctx: ServerContext;
  readonly catalog: Catalog;
  readonly index: FolderIndex;
  readonly live: Live;
  /** The content index of the search tool; null with --no-search. */
  readonly search: ContentSearch | null;
}

/** One client of the process: its state, and what a transport needs to serve it. */
export interface ClientSession {
  readonly connection: Connection;
  /** The factory the SDK's serving entry calls (once per instance it builds). */
  createServer(): Server;
  /**
   * Every well-formed inbound message, seen before the SDK: starts the
   * services, follows listen streams. An error returned is the answer to
   * send instead of passing the message on (a listen over its bound).
   */
  onInbound(message: Record<string, unknown>, era?: Era): ErrorResponse | undefined;
  /** An answer starts going out (stdio): start-up work waits until it is out (src/turns.ts Foreground). */
  answering(): void;
  /**
   * The answer to request `id` was written (stdio). An answer to a listen is
   * its end (the SDK's refusal, or its close): what it was tracked for goes.
   * Only a cancel released it: 300 listens the SDK refused kept 376 MiB of
   * URIs no stream heard (a red-team finding).
   */
  answered(id: string | number): void;
  /** The client went away: its subscriptions and notifications end. */
  close(): void;
}

export interface App {
  /** The shared services, started now if they were not yet (index, watcher, content index). */
  services(): Services;
  /** True once services() has run. */
  readonly started: boolean;
  /** Hears of every request's outcome and time, on every transport (the metrics); undefined: nobody listens. */
  readonly observe: RequestObserver | undefined;
  openSession(): ClientSession;
  /**
   * Serves this set of folders from now on (a client's roots, which it may
   * change: src/client-roots.ts). The running services close; requests wait
   * until the move is done, then start the services on the new set; each
   * client then hears list_changed. An empty set answers every request with
   * an error that says so. Calls are taken in order.
   */
  place(roots: readonly Root[], dbFile: string): Promise<void>;
  close(): Promise<void>;
}

/** Where the services run: the folders and the index file. */
interface Place {
  readonly roots: readonly Root[];
  readonly dbFile: string;
}

/** Messages that do not start the services: the 2026-07-28 probe, which a v2 client sends to a throw-away process. */
const PROBES = new Set(['server/discover', 'ping']);

/**
 * The composition root: one set of services (index, watcher, conversions,
 * content search, catalog) for the process, and a session per client.
 * Start-up is cheap: nothing opens the index until a message other than a
 * probe arrives (a v2 client probes with `server/discover` on a process it
 * then kills, before it starts the one it keeps). Nothing here touches the
 * process (argv, stdio, exit): cli.ts does, and tests can build an App.
 */
export function createApp(
  config: Config,
  roots: readonly Root[],
  /** null: no folders yet, requests wait for the first place() (the client's roots). */
  dbFile: string | null,
  log: RelayingLogger,
  info: ServerInfo,
  observe?: RequestObserver,
): App {
  let services: (Services & { close(): Promise<void> }) | undefined;
  // One for the process, whatever folders it serves: client requests go before start-up work (src/turns.ts).
  const foreground = new Foreground();
  const sessions = new Set<ClientSession & { attach(index: FolderIndex): void }>();
  let place: Place | null = dbFile === null ? null : { roots, dbFile };
  // While there is no place yet, or a move is under way: requests wait for it to open.
  let gate: { opened: Promise<void>; open(): void } | undefined = place === null ? openable() : undefined;
  let moves = Promise.resolve();

  // A failed start (the index cannot be opened) is told once, and each request then answers with that error.
  let startFailure: Error | undefined;
  const start = (): Services => {
    if (services) return services;
    if (startFailure) throw startFailure;
    if (place === null || place.roots.length === 0) throw new Error(NO_ROOTS);
    try {
      services = startServices(config, place.roots, place.dbFile, log, foreground);
    } catch (error) {
      startFailure = new Error(`the server cannot start: ${(error as Error).message}`);
      log.error(startFailure.message);
      throw startFailure;
    }
    for (const session of sessions) session.attach(services.index);
    return services;
  };

  return {
    services: start,
    get started() {
      return services !== undefined;
    },
    observe,
    openSession() {
      const connection = new Connection();
      let detach = () => {};
      // The server's log lines, as MCP log messages to this client (at the level it asked for).
      const stopRelay = log.listen((level, message) => relayLogLine(connection, level, message));
      let listens: ((message: Record<string, unknown>) => ErrorResponse | undefined) | undefined;
      const session = {
        connection,
        createServer: () => createServer(() => (gate ? gate.opened.then(start) : start()), connection, info, observe),
        onInbound(message: Record<string, unknown>, era?: Era) {
          foreground.arrived();
          if (typeof message.method !== 'string' || PROBES.has(message.method) || gate) return undefined;
          let ctx;
          try {
            ({ ctx } = start());
          } catch {
            return undefined; // logged once by start(); the request itself answers with the error
          }
          // A 2025-era connection has no listen streams: the SDK answers "Method not found", so nothing is kept.
          if (era === 'legacy') return undefined;
          listens ??= trackListens(ctx, connection.subscriptions);
          return listens(message);
        },
        answering() {
          foreground.answering();
        },
        answered(id: string | number) {
          foreground.answered();
          connection.subscriptions.release({ listen: id });
        },
        // The index's committed changes, as this client's notifications; on a move to other folders, the new index's.
        attach(index: FolderIndex) {
          detach();
          detach = notifyConnection(index, connection, log);
        },
        close() {
          detach();
          stopRelay();
          connection.close();
          sessions.delete(session);
        },
      };
      sessions.add(session);
      if (services) session.attach(services.index);
      return session;
    },
    place(roots: readonly Root[], dbFile: string) {
      const move = async () => {
        const moving = place !== null;
        gate ??= openable();
        const opening = gate;
        try {
          // New requests wait at the gate; those under way finish on the services they started on (an edit's
          // result must not say it failed when its change is on disk: its index closed under it did).
          await foreground.whenIdle(PLACE_DRAIN_MS);
          const running = services;
          services = undefined;
          startFailure = undefined;
          await running?.close().catch((error: unknown) => log.error(`closing the services of the previous folders: ${(error as Error).message}`));
        } finally {
          place = { roots, dbFile };
          gate = undefined;
          opening.open();
        }
        // What a client listed is gone or moved: it lists again.
        if (moving) for (const session of sessions) session.connection.server?.sendResourceListChanged().catch(() => {});
      };
      moves = moves.then(move, move);
      return moves;
    },
    async close() {
      for (const session of sessions) session.close();
      await moves.catch(() => {});
      await services?.close();
    },
  };
}

/** How long a move of the served folders waits for the requests under way before it closes their services. */
const PLACE_DRAIN_MS = 10_000;

/** What every request answers while the client's roots name no folder that can be served. */
export const NO_ROOTS =
  "no folder to serve: the client's roots name none that can be read (open a folder in the client, or give folders on folder-mcp's command line)";

function openable(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * A warm index of up to this many entries answers its first requests only
 * once it has caught up with the disk (the watcher started, what changed
 * while the server was down applied), waiting WARM_WAIT_MS at most. A
 * client that starts a server per request (the Inspector CLI, a script)
 * closes it right after the answer: served at once from the index as it
 * was, it never saw a file added between two calls, and the catch-up, cut
 * short each time, never reached the index file. On a small folder the
 * catch-up takes tens of milliseconds after the watcher is up (27 ms for 200
 * files); a larger one is served at once and catches up in the background.
 */
export const WARM_WAIT_MAX_ENTRIES = 10_000;
export const WARM_WAIT_MS = 2000;

function startServices(config: Config, roots: readonly Root[], requestedDb: string, log: Logger, foreground: Foreground): Services & { close(): Promise<void> } {
  // One server per index file: a second one (Claude Desktop and Claude Code on one folder) takes a spare of the
  // default place (src/index/spare-index.ts), or indexes in memory.
  // A pid alone in the lock, of a running program that is not folder-mcp: ours all the same in our own cache folder,
  // or beside an index of ours (a server before the lock's mark died, and its pid was reused).
  const barePidIsOurs = () => config.db === undefined || inspectDbFile(requestedDb, chooseDriver(config.sqliteDriver)).kind === 'index';
  let lock = requestedDb === ':memory:' ? null : acquireDbLock(requestedDb, undefined, undefined, barePidIsOurs);
  let dbFile = requestedDb;
  if (lock && !lock.acquired) {
    const inUse = lock.foreign
      ? `${requestedDb}.lock is not a lock of folder-mcp's`
      : `the index ${requestedDb} is in use by another folder-mcp${Number.isNaN(lock.heldBy) ? '' : ` (pid ${lock.heldBy})`}`;
    // In the default place, the next index file free (a --db names one file: the user's, not ours to add to).
    const spare = config.db === undefined && !lock.foreign ? takeSpareIndex(requestedDb, chooseDriver(config.sqliteDriver), log) : null;
    if (spare) {
      log.info(`${inUse}; this one uses ${spare.dbFile}`);
      ({ dbFile, lock } = spare);
    } else {
      log.warn(`${inUse}; this one keeps its index in memory (pass --db to give it a file of its own)`);
      dbFile = ':memory:';
    }
  }
  // The live sync takes what changed behind a cold scan from its watches instead of diffing the tree again (Linux only).
  const scanChanges = process.platform === 'linux' ? new ScanChangeRecord() : undefined;
  let index: FolderIndex;
  try {
    index = new FolderIndex({
      roots,
      dbFile,
      log,
      gitignore: config.gitignore,
      // Never the index folders (other sets of folders' indexes, their text included), when a root holds them.
      exclude: [...config.exclude, ...indexFolderExcludes(roots.map((r) => r.path), config.indexFolders ?? indexFolders())],
      ...(scanChanges ? { scanObserver: scanChanges } : {}),
      dbInOwnCache: config.db === undefined && dbFile !== ':memory:',
      sqliteDriver: chooseDriver(config.sqliteDriver),
      foreground,
    });
  } catch (error) {
    // No index, no server: the lock must not outlive this attempt.
    scanChanges?.close();
    if (lock?.acquired) lock.release();
    throw error;
  }
  const convert = createConvert(index, log);
  const ctx: ServerContext = {
    index,
    roots,
    log,
    pageSize: config.pageSize,
    maxReadBytes: config.maxReadBytes,
    followSymlinks: config.followSymlinks,
    pager: createPager(index.db),
    // A shared key (replicas behind one load balancer) wins; else the index's own, always written with the schema.
    cursorSecret: cursorKeyFor(config.cursorKey ?? getMeta(index.db, 'cursor_secret') ?? randomBytes(32).toString('hex'), roots.map((root) => root.path)),
    convert: convert.convert,
    readBudget: new ReadBudget(),
    largeAnswers: new TurnChain(),
    writes: config.write ? { maxBytes: config.maxWriteBytes, locks: new PathLocks(), largeEdits: new SerialQueue() } : null,
    // A tool's own change: into the index, and (--bus) announced to the other replicas whatever came as hints.
    refresh: async (paths) => {
      await live.refresh(paths);
      bus?.announce(paths);
    },
  };
  // The same conversions (converters, budgets, conversion process) as a read, up to the size a read converts.
  const search = config.search
    ? new ContentSearch(index, log, undefined, {
        budgetMs: config.searchBudgetMs,
        waitMs: config.searchWaitMs,
        converter: convert.formats,
        maxConvertBytes: config.maxReadBytes,
        ...(config.embed && {
          embedder: new EmbedProvider({
            url: config.embed.url,
            model: config.embed.model,
            api: config.embed.api ?? defaultEmbedApi(config.embed.url),
            timeoutMs: config.embed.timeoutMs,
            ...(config.embed.key !== undefined && { key: config.embed.key }),
          }),
        }),
      })
    : null;
  if (!search) contentIndexUnfollowed(index.db);
  const catalog = lazyCatalog(async () => (await import('./catalog/catalog.ts')).createCatalog(ctx, search));
  // The watcher is made here, the one place that knows both watch/ and sync/ (src/watching.ts).
  const watch = superviseWatcher({ index, log, watcher: config.watcher, pollIntervalMs: config.pollIntervalMs, ...(scanChanges ? { scanChanges } : {}) });
  const live = new Live({ index, log, watch, ...(scanChanges ? { scanChanges } : {}) });
  const bus = config.bus === undefined ? null : startHintBus(config.bus, config.replicaId ?? randomBytes(8).toString('hex'), roots, index, live, log);
  // In the background: requests wait on index.readiness themselves (src/server.ts).
  const started = live.start();
  index.readiness.catchUp(started);
  if (index.warm && index.store.countUpTo(WARM_WAIT_MAX_ENTRIES + 1) <= WARM_WAIT_MAX_ENTRIES) {
    index.readiness.holdRequests(WARM_WAIT_MS);
  }
  // Content index for the search tool: built in the background after the first scan and, after a cold
  // scan, once the index has caught up with the disk (the watcher up, what changed behind the scan
  // checked). Side by side, the two held their memory at once: at 1M files the check is a diff of the
  // whole tree, and it peaked at 342 MiB after, 355-429 MiB with the build beside it (docs/benchmarks.md).
  // A warm start builds at once: its content index, when the last run completed it, answers meanwhile.
  search?.start();
  // A failed catch-up is over for index.readiness too, and still surfaces as it did: passed on, unhandled.
  void started.finally(() => {});
  return {
    ctx,
    catalog,
    index,
    live,
    search,
    async close() {
      // The bus and the watcher first: no hint or event may write after the database closes.
      await bus?.close();
      await live.close();
      await search?.close();
      await convert.close();
      index.close();
      if (lock?.acquired) lock.release();
    },
  };
}

/**
 * `--bus`: this replica's end of the hint bus (src/replicas/bus.ts), its Redis
 * client loaded now and only now (ioredis is not part of a start without
 * --bus). Failing to load it is logged; the replica serves on without.
 */
function startHintBus(
  url: string,
  origin: string,
  roots: readonly Root[],
  index: FolderIndex,
  live: Live,
  log: Logger,
): { announce(paths: readonly string[]): void; close(): Promise<void> } {
  let bus: HintBus | undefined;
  let closed = false;
  const loading = import('./replicas/redis-transport.ts').then(async ({ openRedisTransport, loadRedis }) => [openRedisTransport, await loadRedis()] as const).then(
    ([openRedisTransport, Client]) => {
      if (closed) return;
      bus = new HintBus({
        origin,
        roots,
        log,
        onChange: (listener) => index.onChange(listener),
        hint: (paths) => live.hint(paths),
        hintTree: (dir) => live.hintTree(dir),
        open: (deliver) => openRedisTransport(Client, url, log, deliver),
      });
    },
    (error: unknown) => log.error(`bus: cannot load the Redis client (ioredis): ${(error as Error).message}; serving without the bus`),
  );
  return {
    announce: (paths) => bus?.announce(paths),
    async close() {
      closed = true;
      await loading;
      await bus?.close();
    },
  };
}

/**
 * The catalog (tools, prompts, completions, the mcp://groups resources),
 * loaded on its first request. Lazy because start-up does not need it: its
 * modules (the tools' zod schemas, find, tree, read, prompts) and the JSON
 * Schemas tools/list sends cost a client's first resources/list page time
 * it would otherwise spend waiting. A failed load fails each catalog request
 * with its error (the module loader keeps it), not the server.
 */
export function lazyCatalog(load: () => Promise<Catalog>): Catalog {
  let loading: Promise<Catalog> | undefined;
  const catalog = () => (loading ??= load());
  // Each method of the list: load, then call the loaded catalog's.
  const forward = (method: (typeof CATALOG_METHODS)[number]) => async (...args: unknown[]) => {
    const loaded = await catalog();
    return (loaded[method] as (...args: unknown[]) => unknown).apply(loaded, args);
  };
  return Object.fromEntries(CATALOG_METHODS.map((method) => [method, forward(method)])) as unknown as Catalog;
}
