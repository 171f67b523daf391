// Searches of the content index the builder writes (content-index-builder.ts):
// on the search thread when the index is a file (search-thread.ts), else on
// the calling thread, bounded between statements, within a time budget
// (--search-budget-ms). The ranking itself is search-reader.ts's and
// meaning-reader.ts's.
import type { Db } from '../index/db.ts';
import type { Logger } from '../log.ts';
import type { ListQuery } from '../query/filter.ts';
import { planQuery } from '../query/plan.ts';
import { builtScriptUrl } from '../workers.ts';
import { MeaningReader, rankSearch } from './meaning-reader.ts';
import type { SearchExpression } from './search-query.ts';
import { SearchReader, type SearchHit, type SearchOutcome, type SearchScope } from './search-reader.ts';
import { SearchThread, SearchThreadError } from './search-thread.ts';

export class ContentQuery {
  private readonly reader: SearchReader;
  private readonly meaningReader: MeaningReader;
  private readonly thread: SearchThread | null;

  constructor(
    db: Db,
    private readonly log: Logger,
    /** A search's time (--search-budget-ms). */
    readonly budgetMs: number,
    /** The search thread's script; null: search on the calling thread. */
    workerUrl: URL | null = builtScriptUrl('search-worker'),
  ) {
    this.reader = new SearchReader(db);
    this.meaningReader = new MeaningReader(db);
    // Security: queries run off the event loop when the index is a file a
    // second connection can open; an in-memory index has only this one.
    this.thread = !db.memory && workerUrl ? new SearchThread(db.file, db.driver, workerUrl) : null;
  }

  /** Ranked hits within `scope`, best first, on the calling thread with no time budget (tests, benchmarks). */
  search(expression: SearchExpression, scope: SearchScope, limit: number): SearchHit[] {
    return this.reader.search(expression, scope, limit).hits;
  }

  /**
   * Ranked hits within `query`'s scope, best first, within the budget: on the
   * search thread when there is one, else here, stopping between statements.
   * `exact` says the query has no glob residual. Throws SearchBusyError when
   * too many searches wait, or when `signal` (the request's) aborts before
   * the search thread takes it.
   */
  async query(
    expression: SearchExpression | null,
    query: ListQuery,
    exact: boolean,
    limit: number,
    budgetMs = this.budgetMs,
    vector: Float32Array | null = null,
    signal?: AbortSignal,
  ): Promise<SearchOutcome> {
    if (this.thread) {
      try {
        return await this.thread.run({ expression, vector, query, exact, limit, budgetMs }, signal);
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

  close(): void {
    this.thread?.close();
  }
}
