// The content index's build: after the first scan, every document the index
// keeps (document-texts.ts) is read or converted and written to the content
// tables (content-store.ts), in batches that yield to the event loop
// (conversions run in a conversion process of their own), the served folders
// with the fewest documents first; then it is kept current from
// FolderIndex.onChange. A warm start on an index whose build once finished
// answers from it at once and only re-checks. The content tables are dropped
// with every other when src/index/db.ts rebuilds, so they never outlive the
// entries they describe.
import { ENTRY_COLUMNS, getMeta, setMeta, type Db } from '../index/db.ts';
import { succ } from '../keys.ts';
import { EntryKind, type EntryRow, type IndexChange } from '../entry.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import type { Logger } from '../log.ts';
import { BuildProgress } from './build-progress.ts';
import type { ContentStore, IndexedText } from './content-store.ts';
import { HELD, type DocumentTexts } from './document-texts.ts';

/** Text written per transaction, so that one batch blocks the event loop for tens of milliseconds at most. */
const BATCH_BYTES = 2 * 1024 * 1024;
const BATCH_FILES = 100;
/** How often a long first build says how far it got on stderr (as the scan does). */
const BUILD_PROGRESS_LOG_MS = 2000;
/**
 * Rows one statement of the build's start-up checks (orphans, the count of
 * documents to check) covers before it yields to the event loop. On a warm
 * start the build begins at once, beside the client's first requests: in one
 * statement each, the checks held those back (100,000 files with a complete
 * content index: 45-95 ms each).
 */
const CHECK_SLICE_ROWS = 1000;
// Reads in flight. They share libuv's 4-thread pool with every other file
// operation of the server: more would make a resources/read wait behind the
// build, for little gain (20,000 small files: 8 -> 2.1 s, 32 -> 1.9 s).
const READ_CONCURRENCY = 8;
/** A document that could not be read for now is tried again after this, then twice as long each time, up to the most. */
const HELD_RETRY_MS = 5_000;
const HELD_RETRY_MAX_MS = 5 * 60_000;

/** The `meta` row that says a content build once walked every document (kept across restarts, not across a cold scan). */
const BUILD_COMPLETE_KEY = 'search_complete';

/**
 * For a server that runs without the content index (--no-search) on an index
 * file that has one: what it changes is not followed into the content index,
 * so the next server with search must not take that build for complete.
 */
export function contentIndexUnfollowed(db: Db): void {
  setMeta(db, BUILD_COMPLETE_KEY, '0');
}

/** An entry the build looks at, with the state of its document row (nulls: none). */
type Candidate = EntryRow & { docId: number | null; docMtime: number | null; docSize: number | null };

/** The served folders in the order the build takes them, and where it got to. */
interface Walk {
  order: { root: number; lo: string; hi: string }[];
  folder: number;
  after: string;
}

/** Changes from the watcher not yet applied: removals first, then the documents written. */
class PendingChanges {
  private readonly upserts = new Set<string>();
  private readonly removals: string[] = [];
  private wake: (() => void) | null = null;

  add(change: IndexChange): void {
    for (const uri of change.removed) {
      this.removals.push(uri);
      this.upserts.delete(uri);
    }
    for (const row of change.upserted) if (row.kind === EntryKind.document) this.upserts.add(row.uri);
    this.wakeUp();
  }

  get empty(): boolean {
    return this.upserts.size === 0 && this.removals.length === 0;
  }

  get upsertCount(): number {
    return this.upserts.size;
  }

  get hasUpserts(): boolean {
    return this.upserts.size > 0;
  }

  /** A document to read again (ContentIndexBuilder.tryLater). */
  retry(uri: string): void {
    this.upserts.add(uri);
    this.wakeUp();
  }

  takeRemovals(): string[] {
    return this.removals.splice(0);
  }

  /** Up to `max` written documents, which leave the set now (not when their rows are written). */
  takeUpserts(max: number): string[] {
    const uris = [...this.upserts].slice(0, max);
    for (const uri of uris) this.upserts.delete(uri);
    return uris;
  }

  /** Resolves at the next change, or at wakeUp(). */
  async next(): Promise<void> {
    await new Promise<void>((resolve) => (this.wake = resolve));
    this.wake = null;
  }

  wakeUp(): void {
    this.wake?.();
  }
}

export class ContentIndexBuilder {
  private readonly db: Db;
  private readonly stmts;
  /** How far the build got; searches wait on it. */
  readonly progress = new BuildProgress();
  private readonly changes = new PendingChanges();
  private readonly stop = new AbortController();
  private readonly stopped = new Promise<void>((resolve) => this.stop.signal.addEventListener('abort', () => resolve(), { once: true }));
  private unsubscribe: (() => void) | null = null;
  private worker: Promise<void> | null = null;
  /** Set while applyPending runs, so that a conversion inside it does not start it again. */
  private applying = false;
  /** True once every document has been checked since start (progress.complete may come first: a warm start). */
  private walked = false;
  /** Documents that could not be read for now, and their retry (tryLater). */
  private readonly held = new Map<string, { tries: number; timer: NodeJS.Timeout }>();
  /** Documents taken from the pending changes whose rows are not written yet. */
  private inFlight = 0;

  constructor(
    private readonly index: FolderIndex,
    private readonly log: Logger,
    private readonly store: ContentStore,
    private readonly texts: DocumentTexts,
  ) {
    const db = index.db;
    this.db = db;
    db.function('folder_mcp_searchable', { deterministic: true }, (mime: unknown, ext: unknown, size: unknown) =>
      typeof mime === 'string' && typeof ext === 'string' && typeof size === 'number' && this.texts.how({ mime, ext, size }) !== null ? 1 : 0,
    );
    this.stmts = {
      // Per served folder, so that the build can take the small ones first.
      countCandidatesIn: db.prepare(
        `SELECT root, count(*) AS rows, max(uri) AS last,
                total(CASE WHEN kind = ${EntryKind.document} THEN folder_mcp_searchable(mime, ext, size) ELSE 0 END) AS n
         FROM (SELECT uri, kind, mime, ext, size, root FROM entries WHERE uri > ? ORDER BY uri LIMIT ${CHECK_SLICE_ROWS}) GROUP BY root`,
      ),
      // One served folder's documents: its URI range, and its own rows only (a folder served inside it is walked on its own).
      nextCandidates: db.prepare(
        `SELECT e.uri, e.parent, e.root, e.name, e.ext, e.kind, e.size, e.mtime, e.mime, d.id AS docId, d.mtime AS docMtime, d.size AS docSize
         FROM entries e LEFT JOIN search_docs d ON d.uri = e.uri
         WHERE e.uri > ? AND e.uri < ? AND e.root = ? AND e.kind = ${EntryKind.document} ORDER BY e.uri LIMIT ?`,
      ),
      entry: db.prepare(`SELECT ${ENTRY_COLUMNS} FROM entries WHERE uri = ?`),
    };
  }

  /**
   * Starts the background build and live updates. After a cold scan the
   * build waits until the index has caught up with the disk (its readiness
   * `caught-up`): side by side, at 1M files, the two held their memory at
   * once. A warm index builds at once, answering from the last run's content
   * index meanwhile (`rechecking`).
   */
  start(): void {
    if (this.worker) return;
    this.unsubscribe = this.index.onChange((change) => {
      if (!this.closed) this.changes.add(change);
    });
    this.worker = this.run().catch((error: unknown) => {
      if (!this.closed) this.log.error(`content index stopped: ${(error as Error).message}`);
    });
  }

  /** Documents known to have changed whose new text is not written yet. */
  get waiting(): number {
    return this.changes.upsertCount + this.inFlight;
  }

  /** A warm start that answers from the last run's index while it still compares it with the disk. */
  get rechecking(): boolean {
    // Until the catch-up, what changed since the last run is not known.
    return this.progress.complete && (this.index.readiness.state !== 'caught-up' || !this.walked);
  }

  /**
   * Resolves when every document has been checked (the first build, or a
   * warm start's re-check) and no change is waiting or being applied (for
   * tests and benchmarks): a batch leaves the pending set when its reads
   * start, not when its rows are written.
   */
  async idle(): Promise<void> {
    while (!this.closed && (!this.walked || this.applying || !this.changes.empty)) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async close(): Promise<void> {
    this.stop.abort();
    for (const { timer } of this.held.values()) clearTimeout(timer);
    this.held.clear();
    this.progress.close();
    this.unsubscribe?.();
    this.changes.wakeUp();
    await this.worker;
  }

  private get closed(): boolean {
    return this.stop.signal.aborted;
  }

  private async run(): Promise<void> {
    const { readiness } = this.index;
    // Closing during the first scan (or the catch-up) must not wait for the whole of it.
    await Promise.race([readiness.reached('scanned'), this.stopped]);
    if (!this.index.warm) await Promise.race([readiness.reached('caught-up'), this.stopped]);
    if (this.closed) return;
    // After the client's first requests (a warm start answers them from the content index as it was).
    await this.index.foreground.turn(true);
    const started = performance.now();
    await this.removeOrphans();
    const counted = await this.countCandidates();
    if (counted === null) return;
    // A warm start on an index whose content build once finished answers from it at once: the walk below
    // only re-checks (each document's mtime and size), and what changed meanwhile comes from the index's
    // own changes (the warm check against the disk), which go first. A cold scan starts over.
    const warm = this.index.warm && getMeta(this.db, BUILD_COMPLETE_KEY) === '1';
    if (!warm) setMeta(this.db, BUILD_COMPLETE_KEY, '0');
    this.progress.setTotal(counted.total, warm);
    const walk: Walk = { order: counted.order, folder: 0, after: counted.order[0]?.lo ?? '' };
    let lastLog = started;
    for (;;) {
      if (this.closed) return;
      if (!this.walked && performance.now() - lastLog >= BUILD_PROGRESS_LOG_MS) {
        lastLog = performance.now();
        const { done, total } = this.progress.current;
        const seconds = (lastLog - started) / 1000;
        this.log.info(`content index: ${done} of ${total} documents checked in ${Math.round(seconds)} s (${Math.round(done / seconds)} documents/s)`);
      }
      await this.applyPending();
      if (this.closed) return;
      if (!this.walked) {
        if (!(await this.walkOn(walk, started))) continue;
      } else if (this.changes.empty) {
        await this.changes.next();
      }
      await this.pause(!this.walked);
    }
  }

  /**
   * The walk's next step: a batch of the current folder's documents, or the
   * next folder, or the end of the build (false for these two: nothing read).
   * The served folders one after another, the fewest documents first: a word
   * in a small folder served beside a big one is found within seconds, not
   * after the big one's build.
   */
  private async walkOn(walk: Walk, started: number): Promise<boolean> {
    const range = walk.order[walk.folder];
    const rows = range ? (this.stmts.nextCandidates.all(walk.after, range.hi, range.root, BATCH_FILES * 4) as Candidate[]) : [];
    if (rows.length === 0 && range && ++walk.folder < walk.order.length) {
      walk.after = walk.order[walk.folder]!.lo;
      return false;
    }
    if (rows.length === 0) {
      this.walked = true;
      setMeta(this.db, BUILD_COMPLETE_KEY, '1');
      this.progress.markComplete();
      const size = this.store.indexBytes();
      this.log.info(
        `content index: ${this.progress.current.done} documents checked in ${Math.round(performance.now() - started)} ms` +
          (size !== null ? ` (${Math.round(size / 1024)} KiB)` : ''),
      );
      return false;
    }
    walk.after = rows.at(-1)!.uri;
    await this.indexRows(rows, true);
    return true;
  }

  /**
   * Between two pieces of work. The walk (`walking`: the first build, a warm
   * start's re-check) is start-up work, and waits for the client's requests
   * (src/turns.ts Foreground); a change from the watcher or a tool is applied
   * at once, so that a search right after a write finds it.
   */
  private pause(walking: boolean): Promise<void> {
    return walking ? this.index.foreground.turn() : new Promise((resolve) => setImmediate(resolve));
  }

  /** Changes from the watcher: removals first, then the documents written. */
  private async applyPending(): Promise<void> {
    this.applying = true;
    try {
      await this.applyPendingNow();
    } finally {
      this.applying = false;
    }
  }

  private async applyPendingNow(): Promise<void> {
    const removals = this.changes.takeRemovals();
    if (removals.length > 0) this.store.removeUris(removals);
    while (this.changes.hasUpserts && !this.closed) {
      const rows: Candidate[] = [];
      const gone: string[] = [];
      for (const uri of this.changes.takeUpserts(BATCH_FILES)) {
        const row = this.stmts.entry.get(uri) as EntryRow | undefined;
        if (!row) gone.push(uri);
        else {
          const doc = this.store.doc(uri);
          rows.push({ ...row, docId: doc?.id ?? null, docMtime: doc?.mtime ?? null, docSize: doc?.size ?? null });
        }
      }
      if (gone.length > 0) this.store.removeUris(gone);
      for (const uri of gone) this.forgetHeld(uri);
      this.inFlight = rows.length;
      try {
        await this.indexRows(rows, false);
      } finally {
        this.inFlight = 0;
      }
      await this.pause(false);
    }
  }

  /** Reads (or converts) what is new or changed among `rows` and writes it; `counting`: the walk's rows, counted in its progress. */
  private async indexRows(rows: Candidate[], counting: boolean): Promise<void> {
    const stale: Candidate[] = [];
    const converted: Candidate[] = [];
    const dropped: number[] = [];
    for (const row of rows) {
      const how = this.texts.how(row);
      if (how === null) {
        if (row.docId !== null) dropped.push(row.docId);
        this.forgetHeld(row.uri);
        continue;
      }
      if (row.docId !== null && row.docMtime === row.mtime && row.docSize === row.size) {
        if (counting) this.progress.checked();
        continue;
      }
      (how === 'convert' ? converted : stale).push(row);
    }
    if (dropped.length > 0) this.store.removeDocs(dropped);
    await this.readTexts(stale, counting);
    await this.convertAll(converted, counting);
  }

  /**
   * A document that could not be read for now (HELD): nothing is recorded
   * for it (a warm start tries it again), and it is tried again here after
   * HELD_RETRY_MS, doubling up to HELD_RETRY_MAX_MS: a lock going away (on
   * Windows) or a permission given back (chmod) tells no watcher.
   */
  private tryLater(uri: string, counting: boolean): void {
    if (counting) this.progress.checked();
    const tries = (this.held.get(uri)?.tries ?? 0) + 1;
    clearTimeout(this.held.get(uri)?.timer);
    const timer = setTimeout(() => {
      if (!this.closed) this.changes.retry(uri);
    }, Math.min(HELD_RETRY_MS * 2 ** (tries - 1), HELD_RETRY_MAX_MS));
    timer.unref();
    this.held.set(uri, { tries, timer });
  }

  /** A document read, gone or no longer indexed: no retry for it. */
  private forgetHeld(uri: string): void {
    clearTimeout(this.held.get(uri)?.timer);
    this.held.delete(uri);
  }

  /** Text files, READ_CONCURRENCY reads at a time, written in transactions of bounded size. */
  private async readTexts(rows: Candidate[], counting: boolean): Promise<void> {
    let batch: { file: Candidate; text: IndexedText | undefined }[] = [];
    let bytes = 0;
    const flush = () => {
      if (batch.length === 0 || this.closed) return;
      this.store.writeAll(batch);
      if (counting) this.progress.checked(batch.length);
      batch = [];
      bytes = 0;
    };
    for (let i = 0; i < rows.length && !this.closed; i += READ_CONCURRENCY) {
      const group = rows.slice(i, i + READ_CONCURRENCY);
      await this.pause(counting);
      const texts = await Promise.all(group.map((row) => this.texts.read(row)));
      if (this.closed) return;
      group.forEach((row, j) => {
        const text = texts[j];
        if (text === HELD) return this.tryLater(row.uri, counting);
        this.forgetHeld(row.uri);
        batch.push({ file: row, text: text === undefined ? undefined : { text, form: null, places: [] } });
        bytes += row.size;
      });
      if (bytes >= BATCH_BYTES || batch.length >= BATCH_FILES) {
        flush();
        await this.pause(counting);
      }
    }
    flush();
  }

  /** Converted documents, one at a time: they queue for one conversion process, and each may take seconds. */
  private async convertAll(rows: Candidate[], counting: boolean): Promise<void> {
    for (const row of rows) {
      if (this.closed) return;
      const text = await this.texts.convert(row);
      if (this.closed) return;
      if (text === HELD) this.tryLater(row.uri, counting);
      else {
        this.forgetHeld(row.uri);
        this.store.writeAll([{ file: row, text }]);
        if (counting) this.progress.checked();
      }
      // A file edited meanwhile waits for one conversion, not for the whole build.
      if (!this.applying && !this.changes.empty) await this.applyPending();
      await this.pause(counting);
    }
  }

  /** Documents indexed in an earlier run whose entries are gone (changed while the server was down), a slice of ids at a time. */
  private async removeOrphans(): Promise<void> {
    const last = this.store.lastDocId();
    for (let after = 0; after < last && !this.closed; after += CHECK_SLICE_ROWS) {
      this.store.removeOrphansIn(after, after + CHECK_SLICE_ROWS);
      await this.index.foreground.turn();
    }
  }

  /**
   * Documents the build checks (for its progress), a slice of entries at a
   * time, and the served folders in the order the build takes them: fewest
   * documents first. Null once closed.
   */
  private async countCandidates(): Promise<{ total: number; order: Walk['order'] } | null> {
    const perRoot = new Map<number, number>();
    let after = '';
    for (;;) {
      if (this.closed) return null;
      const groups = this.stmts.countCandidatesIn.all(after) as { root: number; rows: number; last: string; n: number }[];
      let rows = 0;
      for (const g of groups) {
        perRoot.set(g.root, (perRoot.get(g.root) ?? 0) + g.n);
        rows += g.rows;
        if (g.last > after) after = g.last;
      }
      if (rows < CHECK_SLICE_ROWS) break;
      await this.index.foreground.turn();
    }
    const order = this.index.roots
      .map((root, i) => ({ root: i, lo: root.uri, hi: succ(root.uri)!, n: perRoot.get(i) ?? 0 }))
      .sort((a, b) => a.n - b.n || a.root - b.root);
    return { total: [...perRoot.values()].reduce((a, b) => a + b, 0), order };
  }
}
