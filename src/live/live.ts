import type { WatcherKind } from '../config.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import type { Logger } from '../log.ts';
import { DEFAULT_NOTIFY_TIMINGS, ResourceNotifier, type NotifyTimings } from './notify.ts';
import type { Connection } from '../protocol/connection.ts';
import { LiveSync } from './sync.ts';

export interface LiveOptions {
  index: FolderIndex;
  log: Logger;
  watcher: WatcherKind;
  pollIntervalMs?: number;
  timings?: NotifyTimings;
}

export interface Live {
  readonly sync: LiveSync;
  /** Notifications of every committed change go to this connection until the returned function is called. */
  attach(connection: Connection): () => void;
  /** Starts watching and the background reconcile; resolves when both are under way and the first diff is done. */
  start(): Promise<void>;
  /** Stops the watcher first, then waits for the write in progress. */
  close(): Promise<void>;
  /** Looks at these absolute paths on the serial write queue; resolves once what they show is committed. */
  refresh(paths: readonly string[]): Promise<void>;
  /** Another replica's hint: these absolute paths may have changed (LiveSync.hint). */
  hint(paths: Iterable<string>): void;
  /** Another replica's hint that much changed under `dir` (LiveSync.hintTree). */
  hintTree(dir: string): Promise<void>;
}

/** Wires disk -> index (one watcher for the process) -> notifications for each attached connection. */
export function createLive(options: LiveOptions): Live {
  const { index, log } = options;
  const notifiers = new Set<ResourceNotifier>();
  const stopListening = index.onChange((change) => {
    for (const notifier of notifiers) notifier.onCommitted(change);
  });
  const sync = new LiveSync({
    index,
    log,
    watcher: options.watcher,
    pollIntervalMs: options.pollIntervalMs,
  });
  return {
    sync,
    attach(connection) {
      const notifier = new ResourceNotifier(connection, log, options.timings ?? DEFAULT_NOTIFY_TIMINGS);
      notifiers.add(notifier);
      return () => {
        notifier.cancel();
        notifiers.delete(notifier);
      };
    },
    start: () => sync.start(),
    refresh: (paths) => sync.refresh(paths),
    hint: (paths) => sync.hint(paths),
    hintTree: (dir) => sync.hintTree(dir),
    async close() {
      await sync.close();
      stopListening();
      for (const notifier of notifiers) notifier.cancel();
      notifiers.clear();
    },
  };
}
