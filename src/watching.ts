// What watch/ (the backends and the supervisor that runs one) and sync/
// (Live, which keeps the index equal to the disk) say to each other. It is
// declared here, below both, so that neither room imports the other: the
// composition root (app.ts) builds the supervisor and hands Live a factory
// for it (issue 47: sync/ below protocol/, beside watch/, not above it).
//
//   watch -> sync: a path may have changed, a subtree may have, diff every root (WatchHooks);
//   sync -> watch: start, watch this directory again, which backend runs, close (WatcherControl).
//
// Types only, and the list of backend names.

/** The concrete backends `--watcher` can name (besides `auto`). */
export const WATCHER_BACKENDS = ['chokidar', 'dirs', 'recursive', 'poll', 'none'] as const;
export type WatcherBackend = (typeof WATCHER_BACKENDS)[number];

/**
 * Why a reconcile found a directory the backend may not be watching:
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
 */
export type RewatchReason = 'unignored' | 'nested' | 'found' | 'replaced';

/**
 * What Live hands the watcher it is given: where the running backend
 * reports (only *which path may have changed*: Live stats it and decides),
 * and how a fallback catches up.
 */
export interface WatchHooks {
  /** `path` (absolute) may have been created, changed or removed. */
  changed(path: string): void;
  /** Everything under `dir` may have changed (events were lost, or polling): reconcile it with the disk. */
  rescan(dir: string): Promise<void>;
  /** Diffs every root (after a fallback: whatever changed while no backend ran); resolves to how long it took. */
  diffRoots(): Promise<number>;
  /** Live's lifetime: once aborted, no backend starts or takes over from a failed one. */
  signal: AbortSignal;
}

/** What Live asks of its watcher (watch/supervisor.ts's WatcherSupervisor, which degrades on its own). */
export interface WatcherControl {
  /** The running backend, if any. */
  readonly backend: WatcherBackend | undefined;
  /** Times a running backend failed and the next took over, and times a backend could not start and the next was tried. */
  readonly fallbacks: { readonly failed: number; readonly notStarted: number };
  /** Starts the first backend of its plan that starts; false when none did. */
  start(): Promise<boolean>;
  /** Asks the running backend to watch `dir` again. */
  rewatch(dir: string, reason: RewatchReason): void;
  close(): Promise<void>;
}

/**
 * What changed in the scanned directories between their reading and the
 * moment the scan's watches were closed: the paths events named, or why
 * that is not known (then the tree is diffed, as without a record).
 */
export type ScanChanges = { paths: string[] } | { unknown: string };

/**
 * The cold scan's record of what changed behind it (watch/scan-changes.ts's
 * ScanChangeRecord), as Live uses it: taken once the watcher is up, closed
 * unused otherwise.
 */
export interface ScanChangesTaker {
  /** What changed since each directory was read; null when it was taken, dropped or closed already. */
  take(): Promise<ScanChanges> | null;
  close(): void;
}
