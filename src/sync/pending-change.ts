import type { EntryRow } from '../entry.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import { sniffMime } from '../index/scan.ts';
import { SkipReport } from '../index/servable.ts';
import type { RewatchReason } from '../watching.ts';
import { LinkedNames } from './hard-links.ts';
import { PARALLEL_IO } from './look.ts';

/** Rows (and removals) per committed transaction. */
const BATCH = 2000;

/**
 * What one reconcile call asks of the rest of the sync layer once it
 * returns; Live hands it on.
 */
export interface ReconcileReport {
  /** Directories a walk found that the watcher may have missed, in the order found (see Watcher.rewatch). */
  readonly rewatch: ReadonlyArray<{ readonly dir: string; readonly reason: RewatchReason }>;
  /**
   * Directories walked because they had just appeared. Watchers read a new
   * directory and then watch it; a file created in between is reported by
   * nobody, and this walk may have run before it existed too. So each is
   * looked at once more a little later, when the watch surely exists
   * (Rechecks.newDirectory).
   */
  readonly recheck: readonly string[];
}

/**
 * What one reconcile task has found and not yet committed: rows to write,
 * URIs to remove, the content sniffs they wait for, the names skipped, the
 * hard links to follow, and the report for Live. Each task makes its own
 * (Reconciler's public calls), and every job of the task adds to it, so two
 * tasks never commit each other's rows, whatever the write queue does.
 */
export class PendingChange {
  /** Rows written and URIs removed by this change's commits. */
  written = 0;
  /** Entries seen but not servable since the last report (the scan skips the same ones). */
  skips = new SkipReport();
  readonly links = new LinkedNames();
  private upserted: EntryRow[] = [];
  private removed: string[] = [];
  private sniffs: Promise<void>[] = [];
  private readonly rewatches: Array<{ dir: string; reason: RewatchReason }> = [];
  private readonly rechecks: string[] = [];

  constructor(
    private readonly index: FolderIndex,
    /** Live's lifetime: once aborted, a commit writes nothing. */
    private readonly signal: AbortSignal,
  ) {}

  /** Queues `row` unless the index already has it as it is (then false); `known` skips the lookup when the caller has it. */
  consider(row: EntryRow, path: string, known: EntryRow | null | undefined = undefined): boolean {
    const existing = known === undefined ? this.index.store.get(row.uri) : (known ?? undefined);
    if (
      existing &&
      existing.mtime === row.mtime &&
      existing.size === row.size &&
      sameIdentity(existing, row) &&
      existing.kind === row.kind &&
      existing.parent === row.parent &&
      existing.root === row.root
    ) {
      return false;
    }
    if (row.mime === '') this.sniffs.push(sniffMime(path, row));
    this.upserted.push(row);
    return true;
  }

  /** Queues the removal of `uri` (a collection takes its subtree with it). */
  remove(uri: string): void {
    this.removed.push(uri);
  }

  removeIfIndexed(uri: string): void {
    if (this.index.store.get(uri)) this.removed.push(uri);
  }

  /** Whether enough is queued for one transaction. */
  get full(): boolean {
    return this.upserted.length + this.removed.length >= BATCH;
  }

  /** Keeps the files open for sniffing under PARALLEL_IO (a sniff that hits EMFILE would call text binary). */
  async limitSniffs(): Promise<void> {
    if (this.sniffs.length < PARALLEL_IO) return;
    const sniffs = this.sniffs;
    this.sniffs = [];
    await Promise.all(sniffs);
  }

  /** Commits what is queued as one transaction (after the content sniffs it needs). */
  async flush(): Promise<void> {
    if (this.sniffs.length > 0) {
      const sniffs = this.sniffs;
      this.sniffs = [];
      await Promise.all(sniffs);
    }
    const change = { upserted: this.upserted, removed: this.removed };
    this.upserted = [];
    this.removed = [];
    if (this.signal.aborted) return;
    this.links.noteRemoved(this.index.store, change.removed);
    if (this.index.apply(change)) this.written += change.upserted.length + change.removed.length;
  }

  /** One warning per walk at most (and none for skips already reported): see SkipWarnings. */
  reportSkips(): void {
    if (this.skips.total === 0) return;
    const skips = this.skips;
    this.skips = new SkipReport();
    this.index.skipWarnings.report(skips, 'rescan');
  }

  /** `dir` may be unwatched: the report asks the watcher to watch it (again). */
  rewatch(dir: string, reason: RewatchReason): void {
    this.rewatches.push({ dir, reason });
  }

  /** A walked directory new to the index (as `reason`) or of another identity than the indexed one is rewatched. */
  rewatchIfNew(path: string, known: EntryRow | undefined, row: EntryRow, reason: RewatchReason): void {
    if (!known) this.rewatch(path, reason);
    else if (!sameIdentity(known, row)) this.rewatch(path, 'replaced');
  }

  /** `dir` was walked because it had just appeared: the report asks for it to be looked at again later. */
  recheckLater(dir: string): void {
    this.rechecks.push(dir);
  }

  get report(): ReconcileReport {
    return { rewatch: this.rewatches, recheck: this.rechecks };
  }
}

/** Whether two rows of one path name the same file on disk (inode and device). */
export function sameIdentity(a: Pick<EntryRow, 'ino' | 'dev'>, b: Pick<EntryRow, 'ino' | 'dev'>): boolean {
  return a.ino === b.ino && a.dev === b.dev;
}
