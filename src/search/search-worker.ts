import { parentPort, workerData } from 'node:worker_threads';
import type { ListQuery } from '../query/filter.ts';
import { planQuery } from '../query/plan.ts';
import { openDatabase, type SqliteDriverName } from '../sqlite.ts';
import { MeaningReader, rankSearch } from './meaning-reader.ts';
import { SearchReader, type SearchOutcome } from './search-reader.ts';
import type { SearchExpression } from './search-query.ts';

/**
 * Entry point of the search thread (see search-thread.ts): full-text queries
 * on the thread's own read-only connection, so that a broad one costs this
 * thread, never the event loop that answers every other request. The scope
 * travels as its ListQuery and is planned here (a glob residual is a closure).
 */
export interface SearchJob {
  id: number;
  /** The text query; null for a search by meaning alone. */
  expression: SearchExpression | null;
  /** The query's unit vector for a search by meaning (or hybrid); absent for text alone. */
  vector?: Float32Array | null;
  query: ListQuery;
  exact: boolean;
  limit: number;
  /** Milliseconds from the job's arrival after which no further statement starts. */
  budgetMs: number;
}

export type SearchReply = { id: number; ok: true; outcome: SearchOutcome } | { id: number; ok: false; message: string };

/** Loading vectors between searches, at most this long before the thread looks at its messages again. */
const LOAD_SLICE_MS = 50;

const port = parentPort;
if (port) {
  const { dbFile, sqliteDriver } = workerData as { dbFile: string; sqliteDriver: SqliteDriverName };
  // WAL: readers never block the writer (the content index keeps building) and see committed data only.
  const db = openDatabase(dbFile, sqliteDriver, { readOnly: true });
  const reader = new SearchReader(db);
  // This thread's own connection: it may keep the vectors between searches (data_version says when they changed).
  const meaning = new MeaningReader(db, true);
  port.on('message', (job: SearchJob) => {
    const deadline = performance.now() + job.budgetMs;
    let reply: SearchReply;
    try {
      const plan = planQuery(job.query);
      const scope = { ranges: plan.ranges, residual: plan.residual, exact: job.exact };
      const outcome = rankSearch(reader, meaning, { expression: job.expression, vector: job.vector ?? null, scope, limit: job.limit, deadline });
      reply = { id: job.id, ok: true, outcome };
    } catch (error) {
      reply = { id: job.id, ok: false, message: (error as Error).message };
    }
    port.postMessage(reply);
    if (job.vector && !loading) {
      loading = true;
      setImmediate(loadMore);
    }
  });
  // The rest of the vectors, when a search by meaning found them not all loaded: a slice at a time, so that a search arriving meanwhile waits for one slice at most.
  let loading = false;
  const loadMore = () => {
    loading = !meaning.continueLoading(LOAD_SLICE_MS);
    if (loading) setImmediate(loadMore);
  };
}
