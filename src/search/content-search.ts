// The content index behind the search tool (SQLite FTS5, bm25), beside the
// entries table: text files as they are, and documents a converter takes (PDF,
// Office documents, notebooks) as the text a read shows of them, with where
// their pages, cells, sheets or slides start. ContentSearch composes its
// parts for the rest of the server, which imports the content index from
// here: the background build that writes it (content-index-builder.ts, with
// document-texts.ts for what is indexed and content-store.ts for its tables),
// the searches that read it (content-query.ts), and meaning search's
// embedding of it (embeddings.ts, with --embed-url).
import type { FolderIndex } from '../index/folder-index.ts';
import { DEFAULT_SEARCH_BUDGET_MS, DEFAULT_SEARCH_WAIT_MS } from '../config.ts';
import type { Logger } from '../log.ts';
import type { ListQuery } from '../query/filter.ts';
import type { SearchExpression } from './search-query.ts';
import type { SearchHit, SearchOutcome, SearchScope } from './search-reader.ts';
import type { SearchProgress } from './build-progress.ts';
import { ContentIndexBuilder } from './content-index-builder.ts';
import { ContentQuery } from './content-query.ts';
import { ContentStore } from './content-store.ts';
import { DocumentTexts, SEARCH_MAX_FILE_BYTES, type SearchConverter } from './document-texts.ts';
import type { EmbedProvider } from './embed-provider.ts';
import { Embeddings } from './embeddings.ts';

export { locate, type SearchHit, type SearchOutcome, type SearchScope } from './search-reader.ts';
export type { SearchProgress } from './build-progress.ts';
export { contentIndexUnfollowed } from './content-index-builder.ts';
export { isTextMime, SEARCH_MAX_FILE_BYTES, type SearchConverter } from './document-texts.ts';

/**
 * A search that arrives while the first build runs waits for it (at most
 * --search-wait-ms) when at most this many documents are left to index.
 * A search's own time is bounded by --search-budget-ms: past it no further
 * statement starts and the result says it was cut short; one statement is
 * bounded by the query limits of search-query.ts, and on the search thread a
 * runaway one is killed.
 */
export const SEARCH_WAIT_MAX_FILES = 2000;

export interface ContentSearchOptions {
  /** The search thread's script (default: the built search-worker.js); null: search on the calling thread. */
  workerUrl?: URL | null;
  /** A search's time (--search-budget-ms). */
  budgetMs?: number;
  /** How long a search waits for a small folder's first build (--search-wait-ms). */
  waitMs?: number;
  /** Converts PDF, Office documents and notebooks to their text; without it they are left out (notebooks are then read as JSON text). */
  converter?: SearchConverter;
  /** Largest document converted: what a read converts (--max-read-bytes). */
  maxConvertBytes?: number;
  /** The embedding provider of meaning search (--embed-url); without it nothing is embedded and no text leaves the process. */
  embedder?: EmbedProvider;
}

export class ContentSearch {
  /** Meaning search's background embedding, when a provider is configured (--embed-url). */
  readonly meaning: Embeddings | null;
  private readonly builder: ContentIndexBuilder;
  private readonly queries: ContentQuery;
  private readonly store: ContentStore;
  private readonly waitMs: number;

  constructor(index: FolderIndex, log: Logger, maxFileBytes = SEARCH_MAX_FILE_BYTES, options: ContentSearchOptions = {}) {
    this.waitMs = options.waitMs ?? DEFAULT_SEARCH_WAIT_MS;
    const meaning = options.embedder ? new Embeddings(index.db, options.embedder, log) : null;
    this.meaning = meaning;
    this.store = new ContentStore(index.db, meaning ? () => meaning.changed() : undefined);
    const texts = new DocumentTexts(index.roots, log, maxFileBytes, options.converter, options.maxConvertBytes ?? Number.MAX_SAFE_INTEGER);
    this.builder = new ContentIndexBuilder(index, log, this.store, texts);
    this.queries = new ContentQuery(index.db, log, options.budgetMs ?? DEFAULT_SEARCH_BUDGET_MS, options.workerUrl);
  }

  /**
   * Starts the background build, live updates and the embedding. A cold
   * build waits until the index has caught up with the disk (its readiness
   * `caught-up`), and until then, and until a warm start's re-check of every
   * document is done, `progress.rechecking` is true (ContentIndexBuilder.start).
   */
  start(): void {
    this.builder.start();
    this.meaning?.start();
  }

  get progress(): SearchProgress {
    return { ...this.builder.progress.current, waiting: this.builder.waiting, rechecking: this.builder.rechecking };
  }

  /**
   * Resolves when every document has been checked (the first build, or a
   * warm start's re-check) and no change is waiting or being applied (for
   * tests and benchmarks).
   */
  idle(): Promise<void> {
    return this.builder.idle();
  }

  /**
   * Resolves true once the first build is complete, or false after
   * `timeoutMs` (or on close), or as soon as the build has counted more than
   * `maxDocs` documents to check: not worth the wait.
   */
  whenComplete(timeoutMs: number, maxDocs = Infinity): Promise<boolean> {
    return this.builder.progress.whenComplete(timeoutMs, maxDocs);
  }

  /** Waits for the first build to complete, as a search sent during it does: at most --search-wait-ms, and only for a small folder. */
  whenSmallBuildComplete(): Promise<boolean> {
    return this.whenComplete(this.waitMs, SEARCH_WAIT_MAX_FILES);
  }

  async close(): Promise<void> {
    this.queries.close();
    await this.builder.close();
    await this.meaning?.close();
  }

  get searchBudgetMs(): number {
    return this.queries.budgetMs;
  }

  /** How long an early search on a small folder waits for the first build (--search-wait-ms), and for its embeddings. */
  get searchWaitMs(): number {
    return this.waitMs;
  }

  /** Ranked hits within `scope`, best first, on the calling thread with no time budget (tests, benchmarks). */
  search(expression: SearchExpression, scope: SearchScope, limit: number): SearchHit[] {
    return this.queries.search(expression, scope, limit);
  }

  /**
   * Ranked hits within `query`'s scope, best first, within the budget (ContentQuery.query). Throws SearchBusyError
   * when too many searches wait, or when `signal` (the request's) aborts before the search starts.
   */
  query(
    expression: SearchExpression | null,
    query: ListQuery,
    exact: boolean,
    limit: number,
    budgetMs?: number,
    vector: Float32Array | null = null,
    signal?: AbortSignal,
  ): Promise<SearchOutcome> {
    return this.queries.query(expression, query, exact, limit, budgetMs, vector, signal);
  }

  /** Bytes of the search tables, when SQLite's dbstat table is compiled in. */
  indexBytes(): number | null {
    return this.store.indexBytes();
  }
}
