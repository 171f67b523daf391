// The SQLite executor of a Plan: keyset pages in URI order. Keyset, not
// OFFSET: a page resumes after the last key examined, so its cost is
// O(log N + rows scanned) and concurrent writes neither skip nor repeat rows.
// Range bounds, never LIKE.
import type { Statement } from 'better-sqlite3';
import { ENTRY_COLUMNS, type Db } from '../index/db.ts';
import type { EntryRow } from '../entry.ts';
import type { KeyRange, Plan } from './plan.ts';

export type { EntryRow };

export interface PageResult {
  /** Matching rows, ascending URI, at most `limit`. */
  rows: EntryRow[];
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

const COLUMNS = ENTRY_COLUMNS;
const FIRST_CHUNK_MAX = 256;
/** Glob steps worth about one row read from SQLite (measured: tens of ns a step, a microsecond or two a row). */
export const STEPS_PER_ROW = 32;
const CHUNK_MAX = 1024;

// One lower bound only: given both `uri > ?` and `uri >= ?`, SQLite seeks on
// one and filters on the other, which could scan from the range start on every
// page. So the pager folds the cursor into the lower bound (`key + '\0'` is
// the smallest string after `key`).
function selectSql(access: Access, bounded: boolean): string {
  const eq = access === 'pk' ? '' : `${access} = ? AND `;
  const hi = bounded ? ' AND uri < ?' : '';
  return `SELECT ${COLUMNS} FROM entries WHERE ${eq}uri >= ?${hi} ORDER BY uri LIMIT ?`;
}

function accessOf(plan: Plan): Access {
  // Most selective first: one parent, then a few exact names, then extensions.
  if (plan.parent !== undefined) return 'parent';
  if (plan.names) return 'name';
  return plan.exts !== null ? 'ext' : 'pk';
}

/** The equality values of each source of one range: one per ext, else one unconstrained. */
function sourceKeys(plan: Plan): (string | undefined)[] {
  const access = accessOf(plan);
  if (access === 'parent') return [plan.parent];
  if (access === 'ext') return plan.exts!;
  if (access === 'name') return plan.names!;
  return [undefined];
}

/** One key-ordered SQL stream, read in growing chunks with .all() (never a live iterator). */
class Source {
  private buf: EntryRow[] = [];
  private pos = 0;
  private done = false;

  constructor(
    private readonly stmt: Statement,
    private readonly eq: string | undefined,
    private lower: string,
    private readonly hi: string | null,
    private chunk: number,
  ) {}

  peek(): EntryRow | undefined {
    if (this.pos === this.buf.length && !this.done) this.fill();
    return this.buf[this.pos];
  }

  take(): void {
    this.pos++;
  }

  private fill(): void {
    const args: (string | number)[] = [];
    if (this.eq !== undefined) args.push(this.eq);
    args.push(this.lower);
    if (this.hi !== null) args.push(this.hi);
    args.push(this.chunk);
    this.buf = this.stmt.all(...args) as EntryRow[];
    this.pos = 0;
    this.done = this.buf.length < this.chunk;
    const last = this.buf.at(-1);
    if (last) this.lower = last.uri + '\u0000';
    this.chunk = Math.min(this.chunk * 2, CHUNK_MAX);
  }
}

export function createPager(db: Db): Pager {
  const statements = new Map<string, Statement>();
  for (const access of ['pk', 'ext', 'name', 'parent'] as const) {
    for (const bounded of [false, true]) statements.set(`${access}:${bounded}`, db.prepare(selectSql(access, bounded)));
  }

  function listPage(plan: Plan, afterKey: string | null, limit: number, budget: number): PageResult {
    if (!(limit >= 1) || !(budget >= 1)) throw new RangeError('listPage needs limit >= 1 and budget >= 1');
    const access = accessOf(plan);
    const keys = sourceKeys(plan);
    const start = afterKey === null ? '' : afterKey + '\u0000';
    const ranges = clipRanges(plan.ranges, start);
    const firstChunk = Math.min(Math.max(limit + 1, 16), FIRST_CHUNK_MAX);

    // Ranges are disjoint and sorted, so they are read one after another; within
    // a range the per-ext sources interleave and are merged by key.
    let ri = -1;
    let sources: Source[] = [];
    const openNext = () => {
      const r = ranges[++ri]!;
      const stmt = statements.get(`${access}:${r.hi !== null}`)!;
      sources = keys.map((eq) => new Source(stmt, eq, r.lo, r.hi, firstChunk));
    };
    const head = (): { row: EntryRow; source: Source } | undefined => {
      for (;;) {
        let best: { row: EntryRow; source: Source } | undefined;
        for (const source of sources) {
          const row = source.peek();
          if (row && (!best || row.uri < best.row.uri)) best = { row, source };
        }
        if (best) return best;
        if (ri + 1 >= ranges.length) return undefined;
        openNext();
      }
    };

    const rows: EntryRow[] = [];
    let lastScanned: string | null = null;
    const work = plan.residualWork ?? (() => 0);
    const work0 = work();
    let scanned = 0;
    while (rows.length < limit && scanned + (work() - work0) / STEPS_PER_ROW < budget) {
      const next = head();
      if (!next) return { rows, lastScanned, exhausted: true };
      next.source.take();
      scanned++;
      lastScanned = next.row.uri;
      if (plan.residual(next.row)) rows.push(next.row);
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
