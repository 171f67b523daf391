import type { Logger } from '../log.ts';
import type { Root } from '../uri.ts';
import { chooseDriver, type SqliteDriverName } from '../sqlite.ts';
import { BULK_INDEXES, SCAN_INDEXES, createSecondaryIndexes, dropSecondaryIndexes, getMeta, openDb, setMeta, type Db } from './db.ts';
import { IgnoreRules, type IgnoreOptions } from './ignore.ts';
import { Readiness } from './readiness.ts';
import { ScanFrontier } from './scan.ts';
import type { ScanObserver } from './scan-observer.ts';
import { scanInThread } from './scan-thread.ts';
import { SkipReport, SkipWarnings } from './servable.ts';
import { EntryKind, type EntryRow, type IndexChange } from '../entry.ts';
import { Store } from './store.ts';
import { Foreground, oneEachTurn } from '../turns.ts';

export type { IndexChange } from '../entry.ts';

/** A batch as committed: `listChanged` says whether the set of resources changed (an entry appeared or vanished). */
export interface CommittedChange extends IndexChange {
  listChanged: boolean;
  /**
   * Of `upserted`, collections whose only change is their own mtime: an entry
   * made or removed in them that is not listed (ignored, or not servable).
   * Nothing a client sees changed: no `updated` for them (issue 34).
   */
  mtimeOnly?: ReadonlySet<string>;
}

export type IndexChangeListener = (change: CommittedChange) => void;

/** How often a long cold scan says how far it got on stderr. */
const SCAN_PROGRESS_LOG_MS = 2000;
/** Unreadable folders the cold scan remembers for the sync layer (see unreadableAtScan). */
const MAX_UNREADABLE_KEPT = 10_000;

export interface FolderIndexOptions extends IgnoreOptions {
  roots: readonly Root[];
  dbFile: string;
  log: Logger;
  /** See ScanThreadOptions.slicesHere (tests). */
  scanSlicesHere?: number;
  /**
   * Told of each directory a cold scan reads, just before it reads it (on
   * whichever thread walks). The live layer watches them, so that what
   * changes behind the scan is known and the tree need not be diffed again
   * once a watcher is up (src/watch/scan-changes.ts); its owner closes it.
   */
  scanObserver?: ScanObserver;
  /** The index file is at its default place in our own cache folder: whatever is there is ours to rebuild (see openDb). */
  dbInOwnCache?: boolean;
  /** The SQLite driver (see src/sqlite.ts); default: node:sqlite where the runtime has it, else better-sqlite3. */
  sqliteDriver?: SqliteDriverName;
  /** Client requests before background work, for everything that works on this index (src/turns.ts); default: its own. */
  foreground?: Foreground;
}

/**
 * The index of the served folders: the database, the ignore rules, and the
 * first scan. Where it is in its start-up is `readiness`: a warm index
 * (complete from an earlier run with the same roots) is `scanned` at once.
 */
export class FolderIndex {
  readonly db: Db;
  readonly store: Store;
  readonly rules: IgnoreRules;
  readonly warm: boolean;
  /** The scan, then the catch-up with the disk: requests wait on it (src/server.ts), and so does background work. */
  readonly readiness = new Readiness();
  /** Background work on this index (catch-up, watcher start, content index) awaits its turns here; requests say when they run. */
  readonly foreground: Foreground;
  /** Warns about entries that cannot be served (bad names, too-deep paths): once per walk, not per entry. */
  readonly skipWarnings: SkipWarnings;
  /**
   * Folders the cold scan found there but unreadable (EACCES): the sync
   * layer watches them for their permission to come back
   * (LockedFolders, src/sync/locked-folders.ts).
   */
  readonly unreadableAtScan: string[] = [];
  /** Entries indexed so far by the running scan (for progress reports). */
  scanned = 0;
  /** How long the cold scan took (0 for a warm index): what a diff of the tree costs, about. */
  scanMs = 0;
  private closed = false;
  private readonly listeners = new Set<IndexChangeListener>();
  /** During the cold scan: the subtrees not yet all committed. */
  private readonly frontier = new ScanFrontier();
  private committedWaiters: (() => void)[] = [];
  private writeCount = 0;

  constructor(readonly options: FolderIndexOptions) {
    this.foreground = options.foreground ?? new Foreground();
    const opened = openDb(options.dbFile, options.log, options.dbInOwnCache ?? false, options.sqliteDriver ?? chooseDriver());
    this.db = opened.db;
    this.store = new Store(this.db);
    this.rules = new IgnoreRules(options.roots, options);
    this.skipWarnings = new SkipWarnings(options.log);
    const rootsKey = JSON.stringify(options.roots.map((r) => r.path));
    this.warm = opened.warm && getMeta(this.db, 'roots') === rootsKey;
    if (this.warm) this.readiness.scanned();
    else {
      this.coldScan(rootsKey).then(
        () => this.readiness.scanned(),
        (error: unknown) => this.readiness.failed(error),
      );
      const over = () => this.wakeWaiters();
      this.readiness.reached('scanned').then(over, over);
    }
  }

  /**
   * Grows with every write to the entries (a scan batch, a committed change):
   * what was derived from them while it stays the same still holds.
   */
  get writes(): number {
    return this.writeCount;
  }

  get roots(): readonly Root[] {
    return this.options.roots;
  }

  /**
   * True when the index already holds every entry with a key in [from, to]
   * (to null: unbounded), whether or not the first scan is over: the scan
   * commits in key order, and a range that no unfinished subtree touches is
   * complete. A page whose keys are settled is the page the finished index
   * would give.
   *
   * Not part of `readiness`: that says where the whole index is, this where
   * one key range is, and it changes with every batch the scan commits
   * (`nextCommit`).
   */
  settled(from: string, to: string | null): boolean {
    return this.readiness.state !== 'scanning' || this.frontier.settled(from, to);
  }

  /** Resolves after the scan's next committed batch, or once the scan is over (done or failed). */
  nextCommit(): Promise<void> {
    if (this.readiness.state !== 'scanning') return Promise.resolve();
    return new Promise((resolve) => this.committedWaiters.push(resolve));
  }

  /** One waiter a turn of the event loop: each may run a page again, and a client's other requests are read between two. */
  private wakeWaiters(): void {
    const waiters = this.committedWaiters;
    this.committedWaiters = [];
    const wake = (i: number): void => {
      waiters[i]!();
      if (i + 1 < waiters.length) setImmediate(() => wake(i + 1));
    };
    if (waiters.length > 0) wake(0);
  }

  private async coldScan(rootsKey: string): Promise<void> {
    const { log } = this.options;
    const started = performance.now();
    this.db.exec(`DELETE FROM meta WHERE key = 'scan_completed'; DELETE FROM entries;`);
    setMeta(this.db, 'roots', rootsKey);
    // Bulk load: no fsync, and only the secondary indexes that are cheap to
    // keep row by row (SCAN_INDEXES; the rest are built once the table is full).
    // Nothing is trusted until 'scan_completed' is written, and before that a
    // checkpoint under synchronous=NORMAL fsyncs the WAL and the database file
    // (fsync makes every earlier write to the file durable, including those
    // of the unsynced checkpoints): a crash mid-scan means a cold start.
    dropSecondaryIndexes(this.db, BULK_INDEXES);
    createSecondaryIndexes(this.db, SCAN_INDEXES);
    this.db.pragma('synchronous = OFF');
    let lastLog = started;
    const skips = new SkipReport();
    const { gitignore, exclude } = this.options;
    for (const root of this.roots) this.frontier.add(root.uri);
    const dbFile = this.db.memory ? null : { path: this.db.file, driver: this.db.driver };
    const slicesHere = this.options.scanSlicesHere;
    const observer = this.options.scanObserver;
    const batches = scanInThread({ roots: this.roots, ignore: { gitignore, exclude }, log, skips, dbFile, ...(slicesHere ? { slicesHere } : {}), ...(observer ? { observer } : {}) });
    // A turn of the event loop after each batch: the walk's thread runs ahead, and batches already waiting came
    // one after the other in microtasks, nothing read between them (a ping waited 0.6-0.9 s behind a second of
    // commits of 100k long names, a red-team finding).
    for await (const batch of oneEachTurn(batches)) {
      if (this.closed) throw new Error('index closed during the scan');
      // Directories found by this batch hold entries still to come; those
      // read by it are complete once the batch is committed.
      for (const uri of batch.opened) this.frontier.add(uri);
      this.store.insertScanned(batch.rows);
      this.writeCount++;
      for (const dir of batch.read) {
        this.rules.setDirRules(dir.path, dir.gitignore);
        if (dir.failed === 'unreadable' && this.unreadableAtScan.length < MAX_UNREADABLE_KEPT) this.unreadableAtScan.push(dir.path);
        this.frontier.close(dir.uri);
      }
      this.scanned += batch.rows.uri.length;
      this.wakeWaiters();
      if (performance.now() - lastLog >= SCAN_PROGRESS_LOG_MS) {
        lastLog = performance.now();
        const seconds = (lastLog - started) / 1000;
        log.info(`scanning: ${this.scanned} entries so far in ${Math.round(seconds)} s (${Math.round(this.scanned / seconds)} entries/s)`);
      }
    }
    this.skipWarnings.report(skips, 'scan');
    // Built by the scan's worker thread already when it walked (then a no-op).
    createSecondaryIndexes(this.db);
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    // Written last: a server killed mid-scan finds no mark and starts cold again.
    setMeta(this.db, 'scan_completed', new Date().toISOString());
    this.scanMs = Math.round(performance.now() - started);
    log.info(`indexed ${this.scanned} entries in ${this.scanMs} ms`);
  }

  /**
   * Calls `listener` after each committed batch of changes made after the
   * first scan (watcher events, reconcile). Returns the unsubscribe function.
   */
  onChange(listener: IndexChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Writes one batch in a transaction (removals first, then upserts), then
   * tells the listeners. Returns what was committed, or undefined when
   * nothing was (empty batch, or the index is closed).
   */
  apply(change: IndexChange): CommittedChange | undefined {
    if (this.closed || (change.upserted.length === 0 && change.removed.length === 0)) return undefined;
    const committed = this.db.transaction((): CommittedChange => {
      let listChanged = false;
      for (const uri of change.removed) if (this.store.deleteTree(uri) > 0) listChanged = true;
      const upserted = this.withParents(change.upserted);
      const mtimeOnly = new Set<string>();
      for (const row of upserted) {
        if (listChanged && row.kind !== EntryKind.collection) continue;
        const known = this.store.get(row.uri);
        if (!known) listChanged = true;
        else if (row.kind === EntryKind.collection && known.kind === row.kind && known.parent === row.parent && known.ino === row.ino && known.dev === row.dev) {
          mtimeOnly.add(row.uri);
        }
      }
      this.store.upsertMany(upserted);
      return { upserted, removed: change.removed, listChanged, ...(mtimeOnly.size > 0 ? { mtimeOnly } : {}) };
    })();
    this.writeCount++;
    for (const listener of this.listeners) {
      try {
        listener(committed);
      } catch (error) {
        // A listener's bug must not undo or block a committed write.
        this.options.log.error(`index change listener failed: ${(error as Error).stack ?? String(error)}`);
      }
    }
    return committed;
  }

  /**
   * `rows` less those whose parent collection is neither indexed (after this
   * change's removals) nor among them: a row written under a folder already
   * removed would be listed for good, and nothing would look at it again.
   * It happens when a folder is swapped for a link: a path beneath it, looked
   * at through the link, names the link's target's entry.
   */
  private withParents(rows: readonly EntryRow[]): readonly EntryRow[] {
    // Siblings share a parent: one lookup each.
    const indexed = new Set<string>();
    const isIndexed = (uri: string): boolean => {
      if (indexed.has(uri)) return true;
      if (this.store.get(uri) === undefined) return false;
      indexed.add(uri);
      return true;
    };
    if (rows.every((row) => row.parent === null || isIndexed(row.parent))) return rows;
    // A parent sorts before its children (its URI is a prefix of theirs): one pass in URI order.
    const kept: EntryRow[] = [];
    const collections = new Set<string>();
    for (const row of [...rows].sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0))) {
      if (row.parent !== null && !collections.has(row.parent) && !isIndexed(row.parent)) continue;
      kept.push(row);
      if (row.kind === EntryKind.collection) collections.add(row.uri);
    }
    if (kept.length < rows.length) this.options.log.debug(`index: ${rows.length - kept.length} row(s) not written, their folder is gone`);
    return kept;
  }

  close(): void {
    this.closed = true;
    if (this.db.open) this.db.close();
  }
}
