import type { AsyncSubscription } from '@parcel/watcher';
import { isResourceExhausted, type StartWatcher } from './watcher.ts';

/**
 * @parcel/watcher: a native recursive watch (on Linux one inotify watch per
 * directory, none per file), started in C++ without a JS tree walk. Its
 * `ignore` option only prunes what can never be served (.git, node_modules);
 * every event still goes through IgnoreRules in the sync layer, which also
 * tracks `.gitignore` edits that parcel's static option could not.
 */
export const startParcelWatcher: StartWatcher = async ({ roots, sink, log }) => {
  // Loaded here, not at import: a missing or broken native binary is a start
  // failure that `auto` falls back from, not a crash at start-up.
  const parcel = (await import('@parcel/watcher')).default;
  let closed = false;
  const subscriptions: AsyncSubscription[] = [];
  try {
    for (const root of roots) {
      subscriptions.push(
        await parcel.subscribe(
          root.path,
          (error, events) => {
            if (closed) return;
            if (error) {
              if (isResourceExhausted(error)) return sink.fatal(error);
              // Parcel reports dropped events (queue overflow) this way: the
              // only safe answer is to look at the disk again.
              log.warn(`watcher (parcel): ${error.message}; rescanning ${root.path}`);
              void sink.rescan(root.path);
              return;
            }
            for (const event of events) sink.changed(event.path);
          },
          { ignore: ['**/.git', '**/node_modules'] },
        ),
      );
    }
  } catch (error) {
    closed = true;
    await Promise.allSettled(subscriptions.map((s) => s.unsubscribe()));
    throw error;
  }
  return {
    backend: 'parcel',
    async close() {
      closed = true;
      await Promise.allSettled(subscriptions.map((s) => s.unsubscribe()));
    },
  };
};
