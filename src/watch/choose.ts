import type { WatcherKind } from '../config.ts';
import { startChokidarWatcher } from './watch-chokidar.ts';
import { startDirsWatcher, startRecursiveWatcher } from './watch-dirs.ts';
import { startNoneWatcher } from './watch-none.ts';
import { startPollWatcher } from './watch-poll.ts';
import type { WatcherBackend } from '../watching.ts';
import type { StartWatcher } from './watcher.ts';

export const BACKEND_STARTERS: Record<WatcherBackend, StartWatcher> = {
  chokidar: startChokidarWatcher,
  dirs: startDirsWatcher,
  recursive: startRecursiveWatcher,
  poll: startPollWatcher,
  none: startNoneWatcher,
};

/**
 * `auto` runs `dirs`, at every size. Measured with bench/watch-probe.ts
 * (npm run build, then node --import tsx bench/watch-probe-cli.ts) (2 vCPU
 * Linux VM, Node 20, 20 files per directory; time to ready / inotify
 * watches / RSS growth):
 *
 *   entries   chokidar                   dirs
 *     1,054   0.22 s /   1,054 / +19 MiB   (a root and 54 folders: milliseconds)
 *    10,526   1.49 s /  10,526 / +129 MiB  0.03 s /    501 / +0.5 MiB
 *   105,251   9.89 s / 105,251 / +910 MiB  0.21 s /  5,001 / +15 MiB
 * 1,050,001   -                            2.4 s  / 50,001 / +68 MiB
 *
 * chokidar holds a watch per file and directory and ~9 KiB of heap per
 * entry; dirs a watch per directory and no record of each file. Until issue
 * 22 `auto` ran chokidar up to 1,000 entries, where its cost did not matter;
 * then the fuzzer (test/fuzz.ts, seed 2) found it never reporting a file
 * written in a folder renamed after the served folder was made again, which
 * dirs and poll report. It stays for whoever asks for it (`--watcher
 * chokidar`), behind the same re-list rule and safety diff.
 */
export interface WatcherPlan {
  /** Backends to try in order: the first that starts runs, the rest are fallbacks. */
  candidates: WatcherBackend[];
  /** Why the first was chosen, for the stderr line. */
  reason: string;
}

/**
 * Which backend to run for `--watcher kind`. Every plan ends in `poll`,
 * which needs no OS watch and always starts, so the server degrades instead
 * of falling over. @parcel/watcher was a backend and the fallback of both:
 * it is gone, because its subscribe blocks the main thread for good when
 * the user's inotify instances are used up (EMFILE), and its tree snapshots
 * missed offline changes (issue 22).
 */
export function planWatchers(kind: WatcherKind): WatcherPlan {
  switch (kind) {
    case 'none':
      return { candidates: ['none'], reason: '--watcher none' };
    case 'poll':
      return { candidates: ['poll'], reason: '--watcher poll' };
    case 'chokidar':
      return { candidates: ['chokidar', 'poll'], reason: '--watcher chokidar' };
    case 'dirs':
      return { candidates: ['dirs', 'poll'], reason: '--watcher dirs' };
    case 'recursive':
      return { candidates: ['recursive', 'poll'], reason: '--watcher recursive' };
    case 'auto':
      return { candidates: ['dirs', 'poll'], reason: 'auto' };
  }
}
