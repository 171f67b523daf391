// The SQLite executor of a Plan: keyset pages in URI order. Keyset, not
// OFFSET: a page resumes after the last key examined, so its cost is
// O(log N + rows scanned) and concurrent writes neither skip nor repeat rows.
// Range bounds, never LIKE.
import type { Db } from '../index/db.ts';
import type { RowsStatement } from '../sqlite.ts';
import type { EntryKind, EntryRow } from '../entry.ts';
import type { KeyRange, Plan } from './plan.ts';

export type { EntryRow };

/**
 * What a listing needs of an entry: everything but `parent` and `ext`, which
 * only choose rows (in SQL). Two long strings fewer per row.
 */
export type ListedRow = Omit<EntryRow, 'parent' | 'ext' | 'ino' | 'dev'>;

export interface PageResult {
  /** Matching rows, ascending URI, at most `limit`. */
  rows: ListedRow[];
  /** The last key examined (matched or not); resume after it. Null when nothing was examined. */
  lastScanned: string | null;
  /** True when no candidate row remains after `lastScanned`. */
  exhausted: boolean;
}

export interface Pager {
  /**
   * Up to `limit` matches after `afterKey` (null: from the start), examining at
   * most `budget` rows' worth (a row costs 1, plus the residual's matching
   * work at STEPS_PER_ROW; at least one row is examined): a selective or
   * costly residual yields a short page, not a long scan.
   */
  listPage(plan: Plan, afterKey: string | null, limit: number, budget: number): PageResult;
}

type Access = 'pk' | 'ext' | 'name' | 'parent';

// Rows come back as arrays (prepareRows, src/sqlite.ts) in this column order
// and become objects here: the driver builds a row object key by key, which
// costs about as much again as reading the columns (measured at 100k: 204 µs
// for 100 rows as objects, 116 µs as arrays), while an object literal built
// from the array costs next to nothing.
const COLUMNS = 'uri, root, name, kind, size, mtime, mime';
type RawRow = [string, number, string, EntryKind, number, number, string];
const listedRow = (r: RawRow): ListedRow => ({ uri: r[0], root: r[1], name: r[2], kind: r[3], size: r[4], mtime: r[5], mime: r[6] });

/** Glob steps worth about one row read from SQLite (measured: tens of ns a step, a microsecond or two a row). */
export const STEPS_PER_ROW = 32;
/**
 * Rows one query reads at most. A source's first query asks for what the
 * page can still use (its share of `limit + 1`, within the budget), so an
 * exact plan reads its page in one query and no more; later queries double.
 */
const CHUNK_MIN = 16;
const CHUNK_MAX = 4096;

// One lower bound only: given both `uri > ?` and `uri >= ?`, SQLite seeks on
// one and filters on the other, which could scan from the range start on every
// page. So the pager folds the cursor into the lower bound (`key + '\0'` is
// the smallest string after `key`).
function selectSql(access: Access, bounded: boolean): string {
  const eq = access === 'pk' ? '' : `${access} = ? AND `;
  const hi = bounded ? ' AND uri < ?' : '';
  return `SELECT ${COLUMNS} FROM entries WHERE ${eq}uri >= ?${hi} ORDER BY uri LIMIT ?`;
}

/**
 * Index look-ups a page may open: one source, so one query at least, per
 * name or extension per range. Past it the plan scans the primary key and
 * its residual checks the names (the budget bounds that scan; it bounds no
 * look-up that finds nothing). 100 uri_paths and 100 patterns of 64 names
 * each were 2.56 million queries in one page: 18 s with the server's one
 * thread held (a red-team finding).
 */
export const MAX_LOOKUPS = 1024;

function accessOf(plan: Plan): Access {
  // Most selective first: one parent, then a few exact names, then extensions.
  if (plan.parent !== undefined) return 'parent';
  const ranges = Math.max(1, plan.ranges.length);
  if (plan.names && plan.names.length * ranges <= MAX_LOOKUPS) return 'name';
  return plan.exts !== null && plan.exts.length * ranges <= MAX_LOOKUPS ? 'ext' : 'pk';
}

/** The equality values of each source of one range: one per ext, else one unconstrained. */
function sourceKeys(plan: Plan): (string | undefined)[] {
  const access = accessOf(plan);
  if (access === 'parent') return [plan.parent];
  if (access === 'ext') return plan.exts!;
  if (access === 'name') return plan.names!;
  return [undefined];
}

/** One key-ordered SQL stream, read in chunks with .all() (never a live iterator). */
class Source {
  private buf: ListedRow[] = [];
  private pos = 0;
  private done = false;

  constructor(
    private readonly stmt: RowsStatement,
    private readonly eq: string | undefined,
    private lower: string,
    private readonly hi: string | null,
    private chunk: number,
  ) {}

  peek(): ListedRow | undefined {
    if (this.pos === this.buf.length && !this.done) this.fill();
    return this.buf[this.pos];
  }

  take(): ListedRow {
    return this.buf[this.pos++]!;
  }

  private fill(): void {
    const args: (string | number)[] = [];
    if (this.eq !== undefined) args.push(this.eq);
    args.push(this.lower);
    if (this.hi !== null) args.push(this.hi);
    args.push(this.chunk);
    const raw = this.stmt.all(...args) as unknown as RawRow[];
    this.buf = raw.map(listedRow);
    this.pos = 0;
    this.done = raw.length < this.chunk;
    const last = raw.at(-1);
    if (last) this.lower = last[0] + '\u0000';
    this.chunk = Math.min(this.chunk * 2, CHUNK_MAX);
  }
}

export function createPager(db: Db): Pager {
  const statements = new Map<string, RowsStatement>();
  for (const access of ['pk', 'ext', 'name', 'parent'] as const) {
    for (const bounded of [false, true]) statements.set(`${access}:${bounded}`, db.prepareRows(selectSql(access, bounded)));
  }

  function listPage(plan: Plan, afterKey: string | null, limit: number, budget: number): PageResult {
    if (!(limit >= 1) || !(budget >= 1)) throw new RangeError('listPage needs limit >= 1 and budget >= 1');
    const access = accessOf(plan);
    const keys = sourceKeys(plan);
    const start = afterKey === null ? '' : afterKey + '\u0000';
    const ranges = clipRanges(plan.ranges, start);
    // What the page can use: its rows, within the budget, plus one to tell whether more remain.
    const wanted = Math.min(limit, Math.ceil(budget)) + 1;
    const firstChunk = Math.min(Math.max(Math.ceil(wanted / keys.length), CHUNK_MIN), CHUNK_MAX);

    // Ranges are disjoint and sorted, so they are read one after another; within
    // a range the per-ext sources interleave and are merged by key.
    let ri = -1;
    let sources: Source[] = [];
    const openNext = () => {
      const r = ranges[++ri]!;
      const stmt = statements.get(`${access}:${r.hi !== null}`)!;
      sources = keys.map((eq) => new Source(stmt, eq, r.lo, r.hi, firstChunk));
    };
    /** The source whose next row has the smallest key, or undefined when every range is read. */
    const head = (): Source | undefined => {
      for (;;) {
        let best: Source | undefined;
        let bestUri = '';
        for (const source of sources) {
          const row = source.peek();
          if (row && (best === undefined || row.uri < bestUri)) {
            best = source;
            bestUri = row.uri;
          }
        }
        if (best) return best;
        if (ri + 1 >= ranges.length) return undefined;
        openNext();
      }
    };

    const rows: ListedRow[] = [];
    let lastScanned: string | null = null;
    const work = plan.residualWork ?? (() => 0);
    const work0 = work();
    let scanned = 0;
    while (rows.length < limit && scanned + (work() - work0) / STEPS_PER_ROW < budget) {
      const next = head();
      if (!next) return { rows, lastScanned, exhausted: true };
      const row = next.take();
      scanned++;
      lastScanned = row.uri;
      if (plan.residual(row)) rows.push(row);
    }
    // A peek, so the last page says so instead of handing out a cursor to nothing.
    return { rows, lastScanned, exhausted: head() === undefined };
  }

  return { listPage };
}

/** Drops what lies before `start` and raises lower bounds to it. */
function clipRanges(ranges: readonly KeyRange[], start: string): KeyRange[] {
  const out: KeyRange[] = [];
  for (const r of ranges) {
    const lo = r.lo > start ? r.lo : start;
    if (r.hi === null || lo < r.hi) out.push({ lo, hi: r.hi });
  }
  return out;
}

/** EXPLAIN QUERY PLAN details of the statements listPage would run for `plan` (deduplicated). */
export function explainPlan(db: Db, plan: Plan): string[] {
  const access = accessOf(plan);
  const details = new Set<string>();
  for (const r of plan.ranges) {
    const stmt = db.prepare(`EXPLAIN QUERY PLAN ${selectSql(access, r.hi !== null)}`);
    for (const eq of sourceKeys(plan)) {
      const args: (string | number)[] = [];
      if (eq !== undefined) args.push(eq);
      args.push(r.lo);
      if (r.hi !== null) args.push(r.hi);
      args.push(1);
      for (const row of stmt.all(...args) as { detail: string }[]) details.add(row.detail);
    }
  }
  return [...details];
}
