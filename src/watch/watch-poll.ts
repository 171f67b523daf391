import { realClock, type ClockTimer } from '../clock.ts';
import type { StartWatcher } from './watcher.ts';

/** Shortest pause between two polls, unless `--poll-interval` says otherwise. */
export const POLL_MIN_INTERVAL_MS = 2000;
/** A poll pauses at least this many times as long as the last diff took, so polling a huge tree takes at most ~10% of a CPU. */
const POLL_DUTY_FACTOR = 10;

/**
 * Polling: a periodic reconcile of every root against the index (readdir +
 * lstat, compare mtime/size). Costs no watch at all, so it always works; the
 * price is latency (a couple of seconds) and a periodic walk of the tree.
 */
export const startPollWatcher: StartWatcher = async ({ roots, sink, pollIntervalMs = POLL_MIN_INTERVAL_MS, clock = realClock }) => {
  let closed = false;
  let timer: ClockTimer | undefined;
  let running: Promise<void> = Promise.resolve();
  const schedule = (delay: number) => {
    if (closed) return;
    timer = clock.setTimeout(
      () => {
        const started = clock.now();
        running = (async () => {
          for (const root of roots) {
            if (closed) return;
            await sink.rescan(root.path);
          }
        })();
        void running.finally(() => schedule(Math.max(pollIntervalMs, POLL_DUTY_FACTOR * (clock.now() - started))));
      },
      delay,
      { background: true },
    );
  };
  schedule(pollIntervalMs);
  return {
    backend: 'poll',
    async close() {
      closed = true;
      clock.clearTimeout(timer);
      await running.catch(() => {});
    },
  };
};
