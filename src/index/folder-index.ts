import type { Logger } from '../log.ts';
import type { Root } from '../uri.ts';
import { getMeta, openDb, setMeta, type Db } from './db.ts';
import { IgnoreRules, type IgnoreOptions } from './ignore.ts';
import { scanRoots } from './scan.ts';
import type { EntryRow } from './entry.ts';
import { Store } from './store.ts';

/** What one committed write batch changed: rows written, and URIs removed (a collection URI removes its subtree). */
export interface IndexChange {
  upserted: readonly EntryRow[];
  removed: readonly string[];
}

export type IndexChangeListener = (change: IndexChange) => void;

export interface FolderIndexOptions extends IgnoreOptions {
  roots: readonly Root[];
  dbFile: string;
  log: Logger;
}

/**
 * The index of the served folders: the database, the ignore rules, and the
 * first scan. Requests wait on `ready`; a warm index (complete from an earlier
 * run with the same roots) is ready at once.
 */
export class FolderIndex {
  readonly db: Db;
  readonly store: Store;
  readonly rules: IgnoreRules;
  readonly warm: boolean;
  readonly ready: Promise<void>;
  /** Entries indexed so far by the running scan (for progress reports). */
  scanned = 0;
  private closed = false;
  private readonly listeners = new Set<IndexChangeListener>();

  constructor(readonly options: FolderIndexOptions) {
    const opened = openDb(options.dbFile, options.log);
    this.db = opened.db;
    this.store = new Store(this.db);
    this.rules = new IgnoreRules(options.roots, options);
    const rootsKey = JSON.stringify(options.roots.map((r) => r.path));
    this.warm = opened.warm && getMeta(this.db, 'roots') === rootsKey;
    this.ready = this.warm ? Promise.resolve() : this.coldScan(rootsKey);
    // A failed scan is reported to every waiting request; this keeps it from
    // also being an unhandled rejection when nothing is waiting.
    this.ready.catch(() => {});
  }

  get roots(): readonly Root[] {
    return this.options.roots;
  }

  private async coldScan(rootsKey: string): Promise<void> {
    const { log } = this.options;
    const started = performance.now();
    this.db.exec(`DELETE FROM meta WHERE key = 'scan_completed'; DELETE FROM entries;`);
    setMeta(this.db, 'roots', rootsKey);
    for await (const batch of scanRoots({ roots: this.roots, rules: this.rules, log })) {
      if (this.closed) throw new Error('index closed during the scan');
      this.store.upsertMany(batch);
      this.scanned += batch.length;
    }
    // Written last: a server killed mid-scan finds no mark and starts cold again.
    setMeta(this.db, 'scan_completed', new Date().toISOString());
    log.info(`indexed ${this.scanned} entries in ${Math.round(performance.now() - started)} ms`);
  }

  /**
   * Calls `listener` after each committed batch of changes made after the
   * first scan (watcher events, reconcile). Returns the unsubscribe function.
   */
  onChange(listener: IndexChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Writes one batch in a transaction, then tells the listeners. */
  apply(change: IndexChange): void {
    if (this.closed || (change.upserted.length === 0 && change.removed.length === 0)) return;
    this.db.transaction(() => {
      for (const uri of change.removed) this.store.deleteTree(uri);
      this.store.upsertMany(change.upserted);
    })();
    for (const listener of this.listeners) listener(change);
  }

  close(): void {
    this.closed = true;
    if (this.db.open) this.db.close();
  }
}
