import type { Clock } from '../clock.ts';
import type { IgnoreRules } from '../index/ignore.ts';
import type { Logger } from '../log.ts';
import type { Root } from '../uri.ts';
import type { RewatchReason, WatcherBackend } from '../watching.ts';

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
  /** A directory the backend may not be watching, for `reason` (see RewatchReason); backends without the gap ignore the hint. */
  rewatch?(dir: string, reason: RewatchReason): void;
  /** Stops watching; no sink call happens after it resolves. */
  close(): Promise<void>;
}

/** Starts a backend; resolves once it watches every root (its "ready"), rejects if it cannot start. */
export type StartWatcher = (start: WatchStart) => Promise<Watcher>;

/** Errors that mean the OS ran out of watch resources: degrade rather than retry. */
export function isResourceExhausted(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EMFILE' || code === 'ENFILE') return true;
  const message = String((error as Error | undefined)?.message ?? error);
  return /ENOSPC|EMFILE|ENFILE|inotify|too many open files|no space left/i.test(message);
}
