import type { Clock } from '../clock.ts';
import { dirname } from '../fs-path.ts';
import type { IgnoreRules } from '../index/ignore.ts';
import type { Logger } from '../log.ts';
import type { Root } from '../uri.ts';

/** The concrete backends `--watcher` can name (besides `auto`). */
export const WATCHER_BACKENDS = ['chokidar', 'dirs', 'recursive', 'poll', 'none'] as const;
export type WatcherBackend = (typeof WATCHER_BACKENDS)[number];

/**
 * Where a backend reports. Backends only say *which path may have changed*;
 * the sync layer stats the path and decides what it is now, so an event's
 * kind (add, change, unlink, rename) never has to be trusted or ordered.
 */
export interface WatchSink {
  /** `path` (absolute) may have been created, changed or removed. */
  changed(path: string): void;
  /** Everything under `dir` may have changed (events were lost, or polling): reconcile it with the disk. */
  rescan(dir: string): Promise<void>;
  /**
   * The backend cannot go on (e.g. ENOSPC: inotify watch limit). The caller
   * closes it and degrades to the next backend.
   */
  fatal(error: Error): void;
}

export interface WatchStart {
  roots: readonly Root[];
  /** The scan's ignore rules: every event is filtered through them, whatever the backend's own filter did. */
  rules: IgnoreRules;
  sink: WatchSink;
  log: Logger;
  /** The poll backend's shortest pause between two polls (`--poll-interval`). */
  pollIntervalMs?: number;
  /** The time the poll backend's pauses go by (default the real one). */
  clock?: Clock;
  /**
   * Every served directory the index holds (absolute paths, parents before
   * their children), for a backend that watches directory by directory
   * (`dirs`): the scan's walk is its baseline, so it need not walk again.
   * Read once, at start.
   */
  directories?: () => Iterable<string>;
  /** Aborted once the caller has closed: a start still under way gives up (and releases what it set up). */
  signal?: AbortSignal;
  /**
   * Told during the start, a slice at a time, of directories the backend
   * watches now (`dirs`): the cold scan's own watches on them can go, instead
   * of two full sets of watches at once (see ScanWatch).
   */
  watching?: (dirs: readonly string[]) => void;
  /** Awaited between two pieces of the start (`dirs`): client requests go first (src/turns.ts Foreground). */
  turn?: () => Promise<void>;
}

/** A running watcher. */
export interface Watcher {
  readonly backend: WatcherBackend;
  /**
   * A directory the backend may not be watching:
   * - `unignored`: it was skipped as ignored and is served now (a `.gitignore` line went away);
   * - `nested`: it was found by walking a directory that had just appeared,
   *   so it may have been created before the backend watched its parent;
   * - `replaced`: a directory of another identity (inode, device) than the
   *   one indexed under its name: re-made, swapped with another, a build
   *   output moved into place; a backend whose watch of the old one lingers
   *   (chokidar) must watch afresh;
   * - `found`: any other directory new to the index (it appeared while the
   *   server was down or during the scan, or its event was lost): a backend
   *   that took its list from the index (`dirs`) has no watch on it, those
   *   that walked the disk at start do.
   * Backends without the gap ignore the hint.
   */
  rewatch?(dir: string, reason: RewatchReason): void;
  /** Stops watching; no sink call happens after it resolves. */
  close(): Promise<void>;
}

export type RewatchReason = 'unignored' | 'nested' | 'found' | 'replaced';

/** Starts a backend; resolves once it watches every root (its "ready"), rejects if it cannot start. */
export type StartWatcher = (start: WatchStart) => Promise<Watcher>;

/** Errors that mean the OS ran out of watch resources: degrade rather than retry. */
export function isResourceExhausted(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EMFILE' || code === 'ENFILE') return true;
  const message = String((error as Error | undefined)?.message ?? error);
  return /ENOSPC|EMFILE|ENFILE|inotify|too many open files|no space left/i.test(message);
}

/** The directories of `dirs` that are not inside another one of them. */
export function outermostDirs(dirs: Iterable<string>): string[] {
  const all = new Set(dirs);
  return [...all].filter((dir) => {
    for (let prev = dir, up = dirname(dir); up !== prev; prev = up, up = dirname(up)) if (all.has(up)) return false;
    return true;
  });
}
