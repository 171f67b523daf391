import type { AsyncSubscription, SubscribeCallback } from '@parcel/watcher';
import { existsSync } from 'node:fs';
import { isPathInside } from '../uri.ts';
import { isResourceExhausted, outermostDirs, type StartWatcher } from './watcher.ts';

/** Only what can never be served is pruned natively; IgnoreRules judge the rest. */
const PARCEL_IGNORE = ['**/.git', '**/node_modules'];
/** Extra subscriptions kept at most; beyond it the roots are subscribed afresh. */
const MAX_EXTRA_SUBSCRIPTIONS = 256;
/** Nested-directory hints are gathered this long before subscribing. */
const EXTRA_DELAY_MS = 50;

/**
 * @parcel/watcher: a native recursive watch (on Linux one inotify watch per
 * directory, none per file), started in C++ without a JS tree walk. Its
 * `ignore` option only prunes what can never be served (.git, node_modules);
 * every event still goes through IgnoreRules in the sync layer, which also
 * tracks `.gitignore` edits that parcel's static option could not.
 *
 * Gap (parcel 2.6, inotify): a directory created inside a directory that has
 * just appeared (`mkdir -p a/b`, `git checkout`, an unpacked archive) is often
 * never watched, so later changes in it would go unseen. The sync layer says
 * which directories those may be (`rewatch(dir, 'nested')`); each gets an
 * extra subscription (measured: changes in it are then seen every time, and a
 * duplicate watch of a directory parcel did watch is harmless), followed by
 * a rescan of it for whatever changed before that subscription existed.
 */
export const startParcelWatcher: StartWatcher = async ({ roots, sink, log }) => {
  // Loaded here, not at import: a missing or broken native binary is a start
  // failure that `auto` falls back from, not a crash at start-up.
  const parcel = (await import('@parcel/watcher')).default;
  let closed = false;
  const mains = new Map<string, AsyncSubscription>();
  const extras = new Map<string, AsyncSubscription>();
  let hinted = new Set<string>();
  let hintTimer: NodeJS.Timeout | undefined;
  let adding: Promise<void> = Promise.resolve();

  const callbackFor =
    (dir: string, extra: boolean): SubscribeCallback =>
    (error, events) => {
      if (closed) return;
      if (error) {
        if (isResourceExhausted(error)) return sink.fatal(error);
        if (extra) return dropExtra(dir); // its directory went away: the root's watch covers the rest
        // Parcel reports dropped events (queue overflow) this way: the only
        // safe answer is to look at the disk again.
        log.warn(`watcher (parcel): ${error.message}; rescanning ${dir}`);
        void sink.rescan(dir);
        return;
      }
      for (const event of events) sink.changed(event.path);
    };

  const dropExtra = (dir: string) => {
    const sub = extras.get(dir);
    extras.delete(dir);
    void sub?.unsubscribe().catch(() => {});
  };

  const subscribeRoots = async () => {
    for (const root of roots) {
      mains.set(root.path, await parcel.subscribe(root.path, callbackFor(root.path, false), { ignore: PARCEL_IGNORE }));
    }
  };

  const addExtras = async () => {
    const dirs = outermostDirs(hinted).filter((dir) => ![...extras.keys()].some((e) => isPathInside(e, dir)));
    hinted = new Set();
    for (const dir of [...extras.keys()]) if (!existsSync(dir)) dropExtra(dir);
    if (dirs.length === 0 || closed) return;
    if (extras.size + dirs.length > MAX_EXTRA_SUBSCRIPTIONS) {
      // Too many patches: one fresh recursive watch per root sees every directory that exists now.
      log.info(`watcher (parcel): resubscribing ${roots.length} root(s) to pick up ${dirs.length} new directories`);
      await Promise.allSettled([...extras.values(), ...mains.values()].map((s) => s.unsubscribe()));
      extras.clear();
      mains.clear();
      await subscribeRoots();
      for (const root of roots) await sink.rescan(root.path);
      return;
    }
    for (const dir of dirs) {
      try {
        extras.set(dir, await parcel.subscribe(dir, callbackFor(dir, true), { ignore: PARCEL_IGNORE }));
      } catch (error) {
        if (isResourceExhausted(error)) return sink.fatal(error as Error);
        // Gone already: nothing to watch, and its removal was reported by its parent's watch.
      }
    }
    for (const dir of dirs) if (extras.has(dir)) await sink.rescan(dir);
  };

  try {
    await subscribeRoots();
  } catch (error) {
    closed = true;
    await Promise.allSettled([...mains.values()].map((s) => s.unsubscribe()));
    throw error;
  }
  return {
    backend: 'parcel',
    rewatch(dir, reason) {
      // Parcel never skipped ignored directories (its own ignore list is static), so only 'nested' matters.
      if (closed || reason !== 'nested') return;
      hinted.add(dir);
      if (hintTimer !== undefined) return;
      hintTimer = setTimeout(() => {
        hintTimer = undefined;
        adding = adding.then(addExtras).catch((error: unknown) => {
          if (!closed) log.warn(`watcher (parcel): could not watch new directories: ${(error as Error).message}`);
        });
      }, EXTRA_DELAY_MS);
    },
    async close() {
      closed = true;
      clearTimeout(hintTimer);
      await adding;
      await Promise.allSettled([...extras.values(), ...mains.values()].map((s) => s.unsubscribe()));
    },
  };
};
