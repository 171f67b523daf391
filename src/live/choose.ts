import { readFileSync } from 'node:fs';
import type { WatcherKind } from '../config.ts';
import { startChokidarWatcher } from './watch-chokidar.ts';
import { startNoneWatcher } from './watch-none.ts';
import { startParcelWatcher } from './watch-parcel.ts';
import { startPollWatcher } from './watch-poll.ts';
import type { StartWatcher, WatcherBackend } from './watcher.ts';

export const BACKEND_STARTERS: Record<WatcherBackend, StartWatcher> = {
  chokidar: startChokidarWatcher,
  parcel: startParcelWatcher,
  poll: startPollWatcher,
  none: startNoneWatcher,
};

/**
 * Above this many indexed entries `auto` prefers parcel to chokidar.
 * Measured (src/live/probe.ts, 2 vCPU Linux, 20 files per directory):
 * chokidar holds one inotify watch per file and directory and ~13 KiB of JS
 * heap per entry (10k entries: 1.5 s to ready, 10,526 watches, +129 MiB;
 * 100k: 9.9 s, 105,251 watches, +910 MiB), parcel one watch per directory
 * (10k: 0.13 s, 526 watches, +0.2 MiB; 100k: 0.86 s, 5,251 watches,
 * +29 MiB). Below ~2,000 entries chokidar is ready in well under half a
 * second and costs no native code path; above it parcel wins on every count.
 */
export const AUTO_CHOKIDAR_MAX_ENTRIES = 2000;

export interface WatcherPlan {
  /** Backends to try in order: the first that starts runs, the rest are fallbacks. */
  candidates: WatcherBackend[];
  /** Why the first was chosen, for the stderr line. */
  reason: string;
}

/**
 * Which backend to run for `--watcher kind` on an index of `entries`
 * entries. Every plan ends in `poll`, which needs no OS watch and always
 * starts, so the server degrades instead of falling over.
 */
export function planWatchers(kind: WatcherKind, entries: number, maxUserWatches = readMaxUserWatches()): WatcherPlan {
  switch (kind) {
    case 'none':
      return { candidates: ['none'], reason: '--watcher none' };
    case 'poll':
      return { candidates: ['poll'], reason: '--watcher poll' };
    case 'chokidar':
      return { candidates: ['chokidar', 'poll'], reason: '--watcher chokidar' };
    case 'parcel':
      return { candidates: ['parcel', 'poll'], reason: '--watcher parcel' };
    case 'auto': {
      // chokidar needs a watch per entry; leave most of the per-user limit to everyone else.
      const limit = Math.min(AUTO_CHOKIDAR_MAX_ENTRIES, Math.floor(maxUserWatches / 4));
      if (entries <= limit) {
        return { candidates: ['chokidar', 'parcel', 'poll'], reason: `auto: ${entries} entries <= ${limit}` };
      }
      return { candidates: ['parcel', 'poll'], reason: `auto: ${entries} entries > ${limit}` };
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
