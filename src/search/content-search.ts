// Full-text index of the text documents (SQLite FTS5, bm25), beside the
// entries table: text files as they are, and documents a converter takes (PDF,
// .docx, notebooks) as the text a read shows of them, with where their pages or
// cells start. Built in the background after the first scan, in batches that
// yield to the event loop (conversions run in a conversion process of their
// own), and kept current from FolderIndex.onChange. Its tables are dropped
// with every other when src/index/db.ts rebuilds, so they never outlive the
// entries they describe.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Place } from '../content/converters/types.ts';
import type { SearchText } from '../content/formats.ts';
import { textKind } from '../content/mime.ts';
import { readFileContent, readSmallText, type FileContent } from '../content/read.ts';
import { ENTRY_COLUMNS, getMeta, setMeta, type Db } from '../index/db.ts';
import { succ } from '../keys.ts';
import { EntryKind, type EntryRow } from '../entry.ts';
import type { FolderIndex, IndexChange } from '../index/folder-index.ts';
import { DEFAULT_SEARCH_BUDGET_MS, DEFAULT_SEARCH_WAIT_MS } from '../config.ts';
import type { Logger } from '../log.ts';
import type { ListQuery } from '../query/filter.ts';
import { planQuery } from '../query/plan.ts';
import { uriToPath } from '../uri.ts';
import type { SearchExpression } from './search-query.ts';
import { SearchReader, type SearchHit, type SearchOutcome, type SearchScope } from './search-reader.ts';
import { builtScriptUrl } from '../workers.ts';
import { SearchThread, SearchThreadError } from './search-thread.ts';
import type { EmbedProvider } from './embed-provider.ts';
import { Embeddings } from './embeddings.ts';
import { MeaningReader, rankSearch } from './meaning-reader.ts';

export { locate, type SearchHit, type SearchOutcome, type SearchScope } from './search-reader.ts';

/** Files larger than this are not indexed (their text is rarely what a search wants, and it would bloat the index). */
export const SEARCH_MAX_FILE_BYTES = 1024 * 1024;
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
const CHECK_SLICE_ROWS = 5000;
// Reads in flight. They share libuv's 4-thread pool with every other file
// operation of the server: more would make a resources/read wait behind the
// build, for little gain (20,000 small files: 8 -> 2.1 s, 32 -> 1.9 s).
const READ_CONCURRENCY = 8;
/**
 * A search that arrives while the first build runs waits for it (at most
 * --search-wait-ms) when the folder has at most this many documents to index.
 * A search's own time is bounded by --search-budget-ms: past it no further
 * statement starts and the result says it was cut short; one statement is
 * bounded by the query limits of search-query.ts, and on the search thread a
 * runaway one is killed.
 */
export const SEARCH_WAIT_MAX_FILES = 1000;

/** MIME types whose files are read as text and searched: the known text types (content/mime.ts: textKind). */
export function isTextMime(mimeType: string): boolean {
  return textKind(mimeType) === 'text';
}

/** Turns documents into the text the index keeps (content/formats.ts's Formats), when conversions are on. */
export interface SearchConverter {
  /** True when the document is converted rather than read as text (decided by name and type). */
  hasSearchText(doc: { ext: string; mime: string }): boolean;
  searchText(entry: EntryRow, content: FileContent): Promise<SearchText>;
}

export interface SearchProgress {
  /** Documents checked (read or converted, or found up to date) since the build started. */
  done: number;
  /** Documents to check in this build (text files and documents with a converted text). */
  total: number;
  /** True once the first build finished; later edits are indexed as they come. */
  complete: boolean;
}

interface DocState {
  id: number;
  mtime: number;
  size: number;
}

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

export class ContentSearch {
  private readonly db: Db;
  private closed = false;
  private markClosed: () => void = () => {};
  private readonly closedSignal = new Promise<void>((resolve) => (this.markClosed = resolve));
  private progressState: SearchProgress = { done: 0, total: 0, complete: false };
  private readonly pendingUpserts = new Set<string>();
  private readonly pendingRemovals: string[] = [];
  private wake: (() => void) | null = null;
  private unsubscribe: (() => void) | null = null;
  private worker: Promise<void> | null = null;
  private readonly stmts;
  private readonly reader: SearchReader;
  private readonly meaningReader: MeaningReader;
  /** Meaning search's background embedding, when a provider is configured (--embed-url). */
  readonly meaning: Embeddings | null;
  private readonly written: (() => void) | undefined;
  private readonly thread: SearchThread | null;
  private readonly budgetMs: number;
  private readonly waitMs: number;
  private readonly converter: SearchConverter | undefined;
  private readonly maxConvertBytes: number;
  /** Set while applyPending runs, so that a conversion inside it does not start it again. */
  private applying = false;
  /** True once progress.total is the count of this build (on a warm start, a few moments after start()). */
  private counted = false;
  /** True once every document has been checked since start (progress.complete may come first: a warm start). */
  private walked = false;
  private readonly completeWaiters = new Set<{ maxDocs: number; done: () => void }>();

  constructor(
    private readonly index: FolderIndex,
    private readonly log: Logger,
    private readonly maxFileBytes = SEARCH_MAX_FILE_BYTES,
    options: {
      workerUrl?: URL | null;
      budgetMs?: number;
      /** How long a search waits for a small folder's first build (--search-wait-ms). */
      waitMs?: number;
      /** Converts PDF, Office documents and notebooks to their text; without it they are left out (notebooks are then read as JSON text). */
      converter?: SearchConverter;
      /** Largest document converted: what a read converts (--max-read-bytes). */
      maxConvertBytes?: number;
      /** The embedding provider of meaning search (--embed-url); without it nothing is embedded and no text leaves the process. */
      embedder?: EmbedProvider;
    } = {},
  ) {
    this.budgetMs = options.budgetMs ?? DEFAULT_SEARCH_BUDGET_MS;
    this.waitMs = options.waitMs ?? DEFAULT_SEARCH_WAIT_MS;
    this.converter = options.converter;
    this.maxConvertBytes = options.maxConvertBytes ?? Number.MAX_SAFE_INTEGER;
    this.db = index.db;
    this.reader = new SearchReader(this.db);
    this.meaningReader = new MeaningReader(this.db);
    this.meaning = options.embedder ? new Embeddings(this.db, options.embedder, log) : null;
    const meaning = this.meaning;
    this.written = meaning ? () => meaning.changed() : undefined;
    // Security: queries run off the event loop when the index is a file a
    // second connection can open; an in-memory index has only this one.
    const workerUrl = options.workerUrl === undefined ? builtScriptUrl('search-worker') : options.workerUrl;
    this.thread = !this.db.memory && workerUrl ? new SearchThread(this.db.file, this.db.driver, workerUrl) : null;
    this.db.function('folder_mcp_searchable', { deterministic: true }, (mime: unknown, ext: unknown, size: unknown) =>
      typeof mime === 'string' && typeof ext === 'string' && typeof size === 'number' && this.howIndexed({ mime, ext, size }) !== null ? 1 : 0,
    );
    const db = this.db;
    // FTS5 rowid constraints are bound through CAST: both drivers bind JS
    // numbers as REAL, and FTS5 silently ignores `rowid = ?` with a REAL value
    // when the query also has a MATCH (every matching row comes back).
    this.stmts = {
      doc: db.prepare(`SELECT id, mtime, size FROM search_docs WHERE uri = ?`),
      insertDoc: db.prepare(`INSERT INTO search_docs (uri, mtime, size, text, form, places) VALUES (?, ?, ?, ?, ?, ?)`),
      updateDoc: db.prepare(`UPDATE search_docs SET mtime = ?, size = ?, text = ?, form = ?, places = ? WHERE id = ?`),
      deleteDoc: db.prepare(`DELETE FROM search_docs WHERE id = ?`),
      // Meaning search's rows go with their document (whether or not this server embeds: a later one may).
      deleteChunks: db.prepare(`DELETE FROM search_chunks WHERE doc = ?`),
      deleteEmbedded: db.prepare(`DELETE FROM search_embedded WHERE doc = ?`),
      insertText: db.prepare(`INSERT INTO search_fts (rowid, body) VALUES (CAST(? AS INTEGER), ?)`),
      deleteText: db.prepare(`DELETE FROM search_fts WHERE rowid = CAST(? AS INTEGER)`),
      docsInRange: db.prepare(`SELECT id FROM search_docs WHERE uri >= ? AND uri < ?`),
      lastDocId: db.prepare(`SELECT max(id) AS n FROM search_docs`),
      orphansIn: db.prepare(
        `SELECT d.id FROM search_docs d WHERE d.id > ? AND d.id <= ? AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.uri = d.uri)`,
      ),
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
   * Starts the background build (after the first scan, and once
   * `startAfter` has settled, fulfilled or not, when given) and live updates.
   */
  start(startAfter?: Promise<unknown>): void {
    if (this.worker) return;
    this.unsubscribe = this.index.onChange((change) => this.enqueue(change));
    this.meaning?.start();
    this.worker = this.run(startAfter?.then(() => {}, () => {})).catch((error: unknown) => {
      if (!this.closed) this.log.error(`content index stopped: ${(error as Error).message}`);
    });
  }

  get progress(): SearchProgress {
    return { ...this.progressState };
  }

  /**
   * Resolves when every document has been checked (the first build, or a
   * warm start's re-check) and no change is waiting or being applied (for
   * tests and benchmarks): a batch leaves the pending set when its reads
   * start, not when its rows are written.
   */
  async idle(): Promise<void> {
    while (!this.closed && (!this.walked || this.applying || this.pendingUpserts.size > 0 || this.pendingRemovals.length > 0)) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /**
   * Resolves true once the first build is complete, or false after
   * `timeoutMs` (or on close), or as soon as the build has counted more than
   * `maxDocs` documents to check: not worth the wait.
   */
  whenComplete(timeoutMs: number, maxDocs = Infinity): Promise<boolean> {
    if (this.progressState.complete) return Promise.resolve(true);
    if (this.closed || (this.counted && this.progressState.total > maxDocs)) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = {
        maxDocs,
        done: () => {
          clearTimeout(timer);
          this.completeWaiters.delete(waiter);
          resolve(this.progressState.complete);
        },
      };
      const timer = setTimeout(waiter.done, timeoutMs);
      this.completeWaiters.add(waiter);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of [...this.completeWaiters]) waiter.done();
    this.thread?.close();
    this.markClosed();
    this.unsubscribe?.();
    this.wake?.();
    await this.worker;
    await this.meaning?.close();
  }

  get searchBudgetMs(): number {
    return this.budgetMs;
  }

  /** How long an early search on a small folder waits for the first build (--search-wait-ms), and for its embeddings. */
  get searchWaitMs(): number {
    return this.waitMs;
  }

  /** Waits for the first build to complete, as a search sent during it does: at most --search-wait-ms, and only for a small folder. */
  whenSmallBuildComplete(): Promise<boolean> {
    return this.whenComplete(this.waitMs, SEARCH_WAIT_MAX_FILES);
  }

  /** Ranked hits within `scope`, best first, on the calling thread with no time budget (tests, benchmarks). */
  search(expression: SearchExpression, scope: SearchScope, limit: number): SearchHit[] {
    return this.reader.search(expression, scope, limit).hits;
  }

  /**
   * Ranked hits within `query`'s scope, best first, within the budget: on the
   * search thread when there is one, else here, stopping between statements.
   * `exact` says the query has no glob residual. Throws SearchBusyError when
   * too many searches wait.
   */
  async query(
    expression: SearchExpression | null,
    query: ListQuery,
    exact: boolean,
    limit: number,
    budgetMs = this.budgetMs,
    vector: Float32Array | null = null,
  ): Promise<SearchOutcome> {
    if (this.thread) {
      try {
        return await this.thread.run({ expression, vector, query, exact, limit, budgetMs });
      } catch (error) {
        if (!(error instanceof SearchThreadError)) throw error;
        // The next search starts a fresh thread; this one is answered here, bounded between statements.
        this.log.warn(`${error.message}; this search runs on the main thread`);
      }
    }
    const plan = planQuery(query);
    const scope = { ranges: plan.ranges, residual: plan.residual, exact };
    return rankSearch(this.reader, this.meaningReader, { expression, vector, scope, limit, deadline: performance.now() + budgetMs });
  }

  private enqueue(change: IndexChange): void {
    if (this.closed) return;
    for (const uri of change.removed) {
      this.pendingRemovals.push(uri);
      this.pendingUpserts.delete(uri);
    }
    for (const row of change.upserted) if (row.kind === EntryKind.document) this.pendingUpserts.add(row.uri);
    this.wake?.();
  }

  private async run(startAfter?: Promise<unknown>): Promise<void> {
    // Closing during the first scan must not wait for the whole scan.
    await Promise.race([this.index.ready, this.closedSignal]);
    if (startAfter) await Promise.race([startAfter, this.closedSignal]);
    if (this.closed) return;
    const started = performance.now();
    await this.removeOrphans();
    const counted = await this.countCandidates();
    if (counted === null) return;
    const { total, order } = counted;
    this.progressState.total = total;
    this.counted = true;
    // A warm start on an index whose content build once finished answers from it at once: the walk below
    // only re-checks (each document's mtime and size), and what changed meanwhile comes from the index's
    // own changes (the warm check against the disk), which go first. A cold scan starts over.
    if (this.index.warm && getMeta(this.db, BUILD_COMPLETE_KEY) === '1') this.markComplete();
    else setMeta(this.db, BUILD_COMPLETE_KEY, '0');
    for (const waiter of [...this.completeWaiters]) if (total > waiter.maxDocs) waiter.done();
    // The served folders one after another, the fewest documents first: a word in a small folder served
    // beside a big one is found within seconds, not after the big one's build.
    let folder = 0;
    let after = order[0]?.lo ?? '';
    let lastLog = started;
    for (;;) {
      if (this.closed) return;
      if (!this.walked && performance.now() - lastLog >= BUILD_PROGRESS_LOG_MS) {
        lastLog = performance.now();
        const { done } = this.progressState;
        const seconds = (lastLog - started) / 1000;
        this.log.info(`content index: ${done} of ${total} documents checked in ${Math.round(seconds)} s (${Math.round(done / seconds)} documents/s)`);
      }
      await this.applyPending();
      if (this.closed) return;
      if (!this.walked) {
        const range = order[folder];
        const rows = range ? (this.stmts.nextCandidates.all(after, range.hi, range.root, BATCH_FILES * 4) as Candidate[]) : [];
        if (rows.length === 0 && range && ++folder < order.length) {
          after = order[folder]!.lo;
          continue;
        }
        if (rows.length === 0) {
          this.walked = true;
          setMeta(this.db, BUILD_COMPLETE_KEY, '1');
          this.markComplete();
          const size = this.indexBytes();
          this.log.info(
            `content index: ${this.progressState.done} documents checked in ${Math.round(performance.now() - started)} ms` +
              (size !== null ? ` (${Math.round(size / 1024)} KiB)` : ''),
          );
          continue;
        }
        after = rows.at(-1)!.uri;
        await this.indexRows(rows, true);
      } else if (this.pendingUpserts.size === 0 && this.pendingRemovals.length === 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
      }
      await yieldToLoop();
    }
  }

  private markComplete(): void {
    this.progressState.complete = true;
    for (const waiter of [...this.completeWaiters]) waiter.done();
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
    if (this.pendingRemovals.length > 0) {
      const removals = this.pendingRemovals.splice(0);
      this.db.transaction(() => {
        for (const uri of removals) this.removeUri(uri);
      })();
    }
    while (this.pendingUpserts.size > 0 && !this.closed) {
      const uris = [...this.pendingUpserts].slice(0, BATCH_FILES);
      for (const uri of uris) this.pendingUpserts.delete(uri);
      const rows: Candidate[] = [];
      const gone: string[] = [];
      for (const uri of uris) {
        const row = this.stmts.entry.get(uri) as EntryRow | undefined;
        if (!row) gone.push(uri);
        else {
          const doc = this.stmts.doc.get(uri) as DocState | undefined;
          rows.push({ ...row, docId: doc?.id ?? null, docMtime: doc?.mtime ?? null, docSize: doc?.size ?? null });
        }
      }
      if (gone.length > 0) this.db.transaction(() => gone.forEach((uri) => this.removeUri(uri)))();
      await this.indexRows(rows, false);
      await yieldToLoop();
    }
  }

  /** Reads (or converts) what is new or changed among `rows` and writes it, in transactions of bounded size. */
  private async indexRows(rows: Candidate[], counting: boolean): Promise<void> {
    const stale: Candidate[] = [];
    const converted: Candidate[] = [];
    const dropped: number[] = [];
    for (const row of rows) {
      const how = this.howIndexed(row);
      if (how === null) {
        if (row.docId !== null) dropped.push(row.docId);
        continue;
      }
      if (row.docId !== null && row.docMtime === row.mtime && row.docSize === row.size) {
        if (counting) this.progressState.done++;
        continue;
      }
      (how === 'convert' ? converted : stale).push(row);
    }
    if (dropped.length > 0) this.db.transaction(() => dropped.forEach((id) => this.removeDoc(id)))();
    let batch: { row: Candidate; text: IndexedText | undefined }[] = [];
    let bytes = 0;
    const flush = () => {
      if (batch.length === 0 || this.closed) return;
      const items = batch;
      this.db.transaction(() => {
        for (const item of items) this.writeDoc(item.row, item.text);
      })();
      if (counting) this.progressState.done += items.length;
      batch = [];
      bytes = 0;
    };
    for (let i = 0; i < stale.length && !this.closed; i += READ_CONCURRENCY) {
      const group = stale.slice(i, i + READ_CONCURRENCY);
      const texts = await Promise.all(group.map((row) => this.readText(row)));
      if (this.closed) return;
      group.forEach((row, j) => {
        const text = texts[j];
        batch.push({ row, text: text === undefined ? undefined : { text, form: null, places: [] } });
        bytes += row.size;
      });
      if (bytes >= BATCH_BYTES || batch.length >= BATCH_FILES) {
        flush();
        await yieldToLoop();
      }
    }
    flush();
    // One conversion at a time: they queue for one conversion process, and each may take seconds.
    for (const row of converted) {
      if (this.closed) return;
      const text = await this.convertedText(row);
      if (this.closed) return;
      this.db.transaction(() => this.writeDoc(row, text))();
      if (counting) this.progressState.done++;
      // A file edited meanwhile waits for one conversion, not for the whole build.
      if (!this.applying && (this.pendingUpserts.size > 0 || this.pendingRemovals.length > 0)) await this.applyPending();
      await yieldToLoop();
    }
  }

  /** How a document is indexed: converted (a converter takes it), read as text, or not at all. */
  private howIndexed(doc: { mime: string; ext: string; size: number }): 'convert' | 'text' | null {
    if (this.converter?.hasSearchText(doc)) return doc.size <= this.maxConvertBytes ? 'convert' : null;
    return doc.size <= this.maxFileBytes && isTextMime(doc.mime) ? 'text' : null;
  }

  private async readText(row: EntryRow): Promise<string | undefined> {
    try {
      return await readSmallText(uriToPath(row.uri), this.maxFileBytes, this.index.roots);
    } catch {
      // Vanished, grew past the cap, or unreadable since it was indexed: no
      // text now; the watcher's next event for it brings it back.
      return undefined;
    }
  }

  /** The text a read shows of a converted document; undefined when there is none (logged at debug: nobody asked for this file). */
  private async convertedText(row: EntryRow): Promise<IndexedText | undefined> {
    let content: FileContent;
    try {
      content = await readFileContent(uriToPath(row.uri), this.maxConvertBytes, this.index.roots);
    } catch {
      return undefined; // as readText
    }
    const result = await this.converter!.searchText(row, content);
    if ('skipped' in result) {
      this.log.debug(`content index: ${row.uri} skipped: ${result.skipped}`);
      return undefined;
    }
    return { text: result.text, form: result.mimeType, places: result.places };
  }

  private writeDoc(row: Candidate, text: IndexedText | undefined): void {
    // The row may have changed under us while the file was read: re-read our own state.
    const doc = this.stmts.doc.get(row.uri) as DocState | undefined;
    const hasText = text !== undefined ? 1 : 0;
    const form = text?.form ?? null;
    const places = text && text.places.length > 0 ? JSON.stringify(text.places.map((p) => (p.name === undefined ? [p.offset, p.unit, p.number] : [p.offset, p.unit, p.number, p.name]))) : null;
    let id: number;
    if (doc) {
      this.stmts.deleteText.run(doc.id);
      this.stmts.updateDoc.run(row.mtime, row.size, hasText, form, places, doc.id);
      id = doc.id;
    } else {
      id = Number(this.stmts.insertDoc.run(row.uri, row.mtime, row.size, hasText, form, places).lastInsertRowid);
    }
    if (text !== undefined) this.stmts.insertText.run(id, text.text);
    else {
      this.stmts.deleteChunks.run(id);
      this.stmts.deleteEmbedded.run(id);
    }
    this.written?.();
  }

  private removeUri(uri: string): void {
    if (!uri.endsWith('/')) {
      const doc = this.stmts.doc.get(uri) as DocState | undefined;
      if (doc) this.removeDoc(doc.id);
      return;
    }
    // A collection URI ends in '/', so succ() is never null here.
    for (const { id } of this.stmts.docsInRange.all(uri, succ(uri)!) as { id: number }[]) this.removeDoc(id);
  }

  private removeDoc(id: number): void {
    this.stmts.deleteText.run(id);
    this.stmts.deleteDoc.run(id);
    this.stmts.deleteChunks.run(id);
    this.stmts.deleteEmbedded.run(id);
    this.written?.();
  }

  /** Documents indexed in an earlier run whose entries are gone (changed while the server was down), a slice of ids at a time. */
  private async removeOrphans(): Promise<void> {
    const last = (this.stmts.lastDocId.get() as { n: number | null }).n ?? 0;
    for (let after = 0; after < last && !this.closed; after += CHECK_SLICE_ROWS) {
      const ids = this.stmts.orphansIn.all(after, after + CHECK_SLICE_ROWS) as { id: number }[];
      if (ids.length > 0) this.db.transaction(() => ids.forEach(({ id }) => this.removeDoc(id)))();
      await yieldToLoop();
    }
  }

  /**
   * Documents the build checks (for its progress), a slice of entries at a
   * time, and the served folders in the order the build takes them: fewest
   * documents first. Null once closed.
   */
  private async countCandidates(): Promise<{ total: number; order: { root: number; lo: string; hi: string }[] } | null> {
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
      await yieldToLoop();
    }
    const order = this.index.roots
      .map((root, i) => ({ root: i, lo: root.uri, hi: succ(root.uri)!, n: perRoot.get(i) ?? 0 }))
      .sort((a, b) => a.n - b.n || a.root - b.root);
    return { total: [...perRoot.values()].reduce((a, b) => a + b, 0), order };
  }

  /** Bytes of the search tables, when SQLite's dbstat table is compiled in. */
  indexBytes(): number | null {
    try {
      const row = this.db
        .prepare(`SELECT sum(pgsize) AS n FROM dbstat WHERE name = 'search_docs' OR name LIKE 'search_fts%' OR name LIKE 'sqlite_autoindex_search_docs%'`)
        .get() as { n: number | null };
      return row.n ?? 0;
    } catch {
      return null;
    }
  }
}


/** What the index keeps of one document: its text, the MIME type of the converted form (null: the file's own text), the places in it. */
interface IndexedText {
  text: string;
  form: string | null;
  places: Place[];
}

type Candidate = EntryRow & { docId: number | null; docMtime: number | null; docSize: number | null };
