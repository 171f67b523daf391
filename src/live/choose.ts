import { readFileSync } from 'node:fs';
import type { WatcherKind } from '../config.ts';
import { startChokidarWatcher } from './watch-chokidar.ts';
import { startDirsWatcher } from './watch-dirs.ts';
import { startNoneWatcher } from './watch-none.ts';
import { startPollWatcher } from './watch-poll.ts';
import type { StartWatcher, WatcherBackend } from './watcher.ts';

export const BACKEND_STARTERS: Record<WatcherBackend, StartWatcher> = {
  chokidar: startChokidarWatcher,
  dirs: startDirsWatcher,
  poll: startPollWatcher,
  none: startNoneWatcher,
};

/**
 * Up to this many indexed entries `auto` runs chokidar, above it dirs (then poll, as the fallback).
 * Measured with bench/watch-probe.ts (npm run build, then node --import tsx bench/watch-probe-cli.ts) (2 vCPU Linux VM, Node 20, 20 files per
 * directory; time to ready / inotify watches / RSS growth):
 *
 *   entries   chokidar                   parcel
 *     1,054   0.22 s /   1,054 / +19 MiB   0.08 s /    54 / +0 MiB
 *     2,106   0.65 s /   2,106 / +33 MiB   0.11 s /   106 / +3 MiB
 *     5,264   1.07 s /   5,264 / +66 MiB   0.56 s /   264 / +1 MiB
 *    10,526   1.49 s /  10,526 / +129 MiB  0.13 s /   526 / +0 MiB
 *   105,251   9.89 s / 105,251 / +910 MiB  0.86 s / 5,251 / +29 MiB
 *
 * chokidar holds a watch per file and directory and ~9 KiB of heap per
 * entry; parcel (a backend until issue 22) a watch per directory and next to
 * no heap. chokidar is plain JS and reports every path itself; on a small
 * tree its cost does not matter (a fifth of a second, ~20 MiB), so it runs
 * there.
 *
 * Above it dirs: the same watch per directory as parcel, but no record of
 * each file. The bench trees (bench/tree.ts, 20 files per directory), medians
 * of three runs, dirs and parcel alternating (the probe hands dirs its
 * directory list, as the index does in the server):
 *
 *   entries     dirs                        parcel
 *     10,501   0.03 s /    501 / +0.5 MiB    0.34 s /    501 / +4 MiB
 *    105,001   0.21 s /  5,001 / +15 MiB     3.2 s /   5,001 / +41 MiB
 *  1,050,001   2.4 s  / 50,001 / +68 MiB    40 s   /  50,001 / +426 MiB
 */
export const AUTO_CHOKIDAR_MAX_ENTRIES = 1000;

export interface WatcherPlan {
  /** Backends to try in order: the first that starts runs, the rest are fallbacks. */
  candidates: WatcherBackend[];
  /** Why the first was chosen, for the stderr line. */
  reason: string;
}

/**
 * Which backend to run for `--watcher kind` on an index of `entries`
 * entries (counted up to one past the chokidar limit at most: past it the
 * exact number does not matter). Every plan ends in `poll`, which needs no OS watch and always
 * starts, so the server degrades instead of falling over. @parcel/watcher
 * was a backend and the fallback of both: it is gone, because its subscribe
 * blocks the main thread for good when the user's inotify instances are
 * used up (EMFILE), and its tree snapshots missed offline changes (issue 22).
 */
export function planWatchers(kind: WatcherKind, entries: number, maxUserWatches = readMaxUserWatches()): WatcherPlan {
  switch (kind) {
    case 'none':
      return { candidates: ['none'], reason: '--watcher none' };
    case 'poll':
      return { candidates: ['poll'], reason: '--watcher poll' };
    case 'chokidar':
      return { candidates: ['chokidar', 'poll'], reason: '--watcher chokidar' };
    case 'dirs':
      return { candidates: ['dirs', 'poll'], reason: '--watcher dirs' };
    case 'auto': {
      // chokidar needs a watch per entry; leave most of the per-user limit to everyone else.
      const limit = Math.min(AUTO_CHOKIDAR_MAX_ENTRIES, Math.floor(maxUserWatches / 4));
      if (entries <= limit) {
        return { candidates: ['chokidar', 'poll'], reason: `auto: ${entries} entries <= ${limit}` };
      }
      return { candidates: ['dirs', 'poll'], reason: `auto: more than ${limit} entries` };
    }
  }
}

function readMaxUserWatches(): number {
  try {
    return Number(readFileSync('/proc/sys/fs/inotify/max_user_watches', 'utf8').trim()) || Infinity;
  } catch {
    return Infinity; // not Linux: no inotify limit to respect
  }
}
