import { randomBytes } from 'node:crypto';
import { ContentSearch } from './catalog/content-search.ts';
import type { Config } from './config.ts';
import { createConvert } from './content/formats.ts';
import { getMeta } from './index/db.ts';
import { FolderIndex } from './index/folder-index.ts';
import { createPager } from './query/page.ts';
import { createLive, type Live } from './live/live.ts';
import { Subscriptions } from './live/subscriptions.ts';
import type { Logger } from './log.ts';
import type { ServerContext } from './protocol/context.ts';
import { createServer, type ServerInfo } from './server.ts';
import type { Root } from './uri.ts';

export interface App {
  server: ReturnType<typeof createServer>;
  index: FolderIndex;
  live: Live;
  close(): Promise<void>;
}

/**
 * Assembles index and server for resolved roots. Nothing here touches the
 * process (argv, stdio, exit): cli.ts does, and tests can build an App directly.
 */
export function createApp(config: Config, roots: readonly Root[], dbFile: string, log: Logger, info: ServerInfo): App {
  const index = new FolderIndex({
    roots,
    dbFile,
    log,
    gitignore: config.gitignore,
    exclude: config.exclude,
  });
  const ctx: ServerContext = {
    index,
    roots,
    log,
    pageSize: config.pageSize,
    maxReadBytes: config.maxReadBytes,
    followSymlinks: config.followSymlinks,
    pager: createPager(index.db),
    // Always written with the schema; the fallback only keeps cursors signed.
    cursorSecret: getMeta(index.db, 'cursor_secret') ?? randomBytes(32).toString('hex'),
    convert: createConvert(index, log),
    subscriptions: new Subscriptions(),
    search: config.search ? new ContentSearch(index, log) : null,
  };
  const server = createServer(ctx, info);
  const live = createLive({ index, server, subscriptions: ctx.subscriptions, log, watcher: config.watcher });
  // In the background: initialize is answered at once; requests wait on index.ready themselves.
  void live.start();
  // Content index for the search tool: built after the first scan, in the background.
  ctx.search?.start();
  return {
    server,
    index,
    live,
    async close() {
      // Watcher first: no event may write after the database closes.
      await live.close();
      await ctx.search?.close();
      await server.close();
      index.close();
    },
  };
}
