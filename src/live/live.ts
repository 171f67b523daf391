import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WatcherKind } from '../config.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import type { Logger } from '../log.ts';
import { DEFAULT_NOTIFY_TIMINGS, ResourceNotifier, type NotifyTimings } from './notify.ts';
import type { Subscriptions } from './subscriptions.ts';
import { LiveSync } from './sync.ts';

export interface LiveOptions {
  index: FolderIndex;
  server: Server;
  subscriptions: Subscriptions;
  log: Logger;
  watcher: WatcherKind;
  timings?: NotifyTimings;
}

export interface Live {
  readonly sync: LiveSync;
  /** Starts watching and the background reconcile; resolves when both are under way and the first diff is done. */
  start(): Promise<void>;
  /** Stops the watcher first, then waits for the write in progress. */
  close(): Promise<void>;
}

/** Wires disk -> index -> notifications for one server. */
export function createLive(options: LiveOptions): Live {
  const { index, server, subscriptions, log } = options;
  const notifier = new ResourceNotifier(server, subscriptions, log, options.timings ?? DEFAULT_NOTIFY_TIMINGS);
  const stopListening = index.onChange(notifier.onCommitted);
  const sync = new LiveSync({ index, log, watcher: options.watcher });
  return {
    sync,
    start: () => sync.start(),
    async close() {
      await sync.close();
      stopListening();
      notifier.cancel();
    },
  };
}
