// The query side of meaning search: the nearest chunks to a query vector by
// cosine, an exact scan of search_chunks a page at a time (bounded memory,
// stopping between pages past the deadline), best chunk per file; and hybrid
// ranking, the reciprocal rank fusion of the text and meaning rankings. Runs
// on any connection to the index, as SearchReader does.
import type { Db } from '../index/db.ts';
import type { EntryRow } from '../entry.ts';
import { PLACE_UNITS, type Place } from '../content/converters/types.ts';
import type { SearchExpression } from './search-query.ts';
import type { SearchHit, SearchOutcome, SearchReader, SearchScope } from './search-reader.ts';
import { cosineInt8, fuseRanks } from './vectors.ts';

export const SEARCH_MODES = ['text', 'meaning', 'hybrid'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

/** Chunks read per statement of the scan. */
const SCAN_PAGE = 4096;
/** Files each ranking brings to a hybrid fusion, at least: a file ranked lower in both is unlikely to make the top. */
const FUSE_POOL = 50;
const SNIPPET_CHARS = 240;

interface Best {
  chunk: number;
  uri: string;
  score: number;
}

/** Every stored vector, packed, as the scan reads them: chunk i is bytes [i * dimension, (i + 1) * dimension). */
interface Packed {
  version: number | bigint;
  dimension: number;
  count: number;
  chunks: Float64Array;
  docs: Float64Array;
  bytes: Int8Array;
}

export class MeaningReader {
  private readonly stmts;
  private packed: Packed | null = null;

  /**
   * `cache`: keep every vector in memory between searches (the search
   * thread's read-only connection: PRAGMA data_version tells it when the
   * writer committed, and the next search reloads). One typed array
   * instead of a row object and a buffer per chunk per search: at 100k
   * chunks of 768 dimensions, 77 MB held, and the scan is arithmetic only.
   */
  constructor(
    private readonly db: Db,
    private readonly cache = false,
  ) {
    this.stmts = {
      // No join in the scan: a page is chunk rows alone, and the scope is a set of documents found once.
      page: db.prepare(`SELECT id, doc, vec FROM search_chunks WHERE id > ? ORDER BY id LIMIT ${SCAN_PAGE}`),
      docsIn: db.prepare(`SELECT id FROM search_docs WHERE uri >= ? AND uri < ?`),
      docsFrom: db.prepare(`SELECT id FROM search_docs WHERE uri >= ?`),
      uri: db.prepare(`SELECT uri FROM search_docs WHERE id = ?`),
      chunk: db.prepare(
        `SELECT c.start AS start, c.length AS length, c.line_start AS lineStart, c.line_end AS lineEnd, c.place AS place, d.form AS form, f.body AS body
         FROM search_chunks c JOIN search_docs d ON d.id = c.doc JOIN search_fts f ON f.rowid = c.doc WHERE c.id = ?`,
      ),
      entry: db.prepare(`SELECT uri, parent, root, name, ext, kind, size, mtime, mime FROM entries WHERE uri = ?`),
    };
  }

  /** Files within `scope` whose best chunk is nearest `unitQuery`, best first, each with that chunk as its hit. */
  search(unitQuery: Float32Array, scope: SearchScope, limit: number, deadline = Infinity): SearchOutcome {
    if (scope.ranges.length === 0) return { hits: [], truncated: false };
    const single = scope.ranges.length === 1 ? scope.ranges[0]! : null;
    const everything = single !== null && single.lo === '' && single.hi === null;
    let allowed: Set<number> | null = null;
    if (!everything) {
      allowed = new Set();
      for (const g of scope.ranges) {
        const rows = (g.hi === null ? this.stmts.docsFrom.all(g.lo) : this.stmts.docsIn.all(g.lo, g.hi)) as { id: number }[];
        for (const { id } of rows) allowed.add(id);
      }
    }
    const best = new Map<number, { chunk: number; score: number }>();
    let truncated = false;
    const packed = this.cache ? this.load(unitQuery.length) : null;
    if (packed) {
      const dim = packed.dimension;
      for (let i = 0; i < packed.count; i++) {
        const doc = packed.docs[i]!;
        if (allowed !== null && !allowed.has(doc)) continue;
        const score = cosineInt8(unitQuery, packed.bytes.subarray(i * dim, (i + 1) * dim));
        const had = best.get(doc);
        if (!had || score > had.score) best.set(doc, { chunk: packed.chunks[i]!, score });
      }
    }
    for (let after = 0; !packed; ) {
      if (performance.now() > deadline) {
        truncated = true;
        break;
      }
      const rows = this.stmts.page.all(after) as { id: number; doc: number; vec: Uint8Array }[];
      for (const r of rows) {
        if (allowed !== null && !allowed.has(r.doc)) continue;
        if (r.vec.byteLength !== unitQuery.length) continue;
        const score = cosineInt8(unitQuery, new Int8Array(r.vec.buffer, r.vec.byteOffset, r.vec.byteLength));
        const had = best.get(r.doc);
        if (!had || score > had.score) best.set(r.doc, { chunk: r.id, score });
      }
      if (rows.length < SCAN_PAGE) break;
      after = rows.at(-1)!.id;
    }
    const hits: SearchHit[] = [];
    for (const [doc, b] of [...best].sort((x, y) => y[1].score - x[1].score)) {
      if (hits.length >= limit) break;
      const uri = (this.stmts.uri.get(doc) as { uri: string } | undefined)?.uri;
      const row = uri === undefined ? undefined : (this.stmts.entry.get(uri) as EntryRow | undefined);
      if (!row || !scope.residual(row)) continue;
      const hit = this.hitOf({ ...b, uri: row.uri }, row);
      if (hit) hits.push(hit);
    }
    return { hits, truncated };
  }

  /** The packed vectors of `dimension`, reloaded when another connection has committed since the last load. */
  private load(dimension: number): Packed | null {
    const version = this.db.pragma('data_version') as number | bigint;
    if (this.packed && this.packed.version === version && this.packed.dimension === dimension) return this.packed;
    this.packed = null;
    const chunks: number[] = [];
    const docs: number[] = [];
    let bytes = new Int8Array(dimension * 1024);
    let count = 0;
    for (let after = 0; ; ) {
      const rows = this.stmts.page.all(after) as { id: number; doc: number; vec: Uint8Array }[];
      for (const r of rows) {
        if (r.vec.byteLength !== dimension) continue;
        if ((count + 1) * dimension > bytes.length) {
          const grown = new Int8Array(bytes.length * 2);
          grown.set(bytes);
          bytes = grown;
        }
        bytes.set(new Int8Array(r.vec.buffer, r.vec.byteOffset, dimension), count * dimension);
        chunks.push(r.id);
        docs.push(r.doc);
        count++;
      }
      if (rows.length < SCAN_PAGE) break;
      after = rows.at(-1)!.id;
    }
    this.packed = { version, dimension, count, chunks: Float64Array.from(chunks), docs: Float64Array.from(docs), bytes: bytes.slice(0, count * dimension) };
    return this.packed;
  }

  private hitOf(b: Best, row: EntryRow): SearchHit | undefined {
    const c = this.stmts.chunk.get(b.chunk) as
      | { start: number; length: number; lineStart: number; lineEnd: number; place: string | null; form: string | null; body: string }
      | undefined;
    if (!c) return undefined;
    const text = c.body.slice(c.start, c.start + c.length);
    const first = text.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
    const flat = text.replace(/\s+/g, ' ').trim();
    const place = parsePlace(c.place);
    return {
      row,
      score: b.score,
      line: c.lineStart,
      lineEnd: c.lineEnd,
      text: first.length > SNIPPET_CHARS ? `${first.slice(0, SNIPPET_CHARS)}…` : first,
      snippet: flat.length > SNIPPET_CHARS ? `${flat.slice(0, SNIPPET_CHARS)}…` : flat,
      ...(c.form !== null ? { form: c.form } : {}),
      ...(place ? { place } : {}),
    };
  }
}

/** What one search asks of the readers: the text expression (null: meaning alone), the query vector (null: text alone). */
export interface RankRequest {
  expression: SearchExpression | null;
  vector: Float32Array | null;
  scope: SearchScope;
  limit: number;
  deadline: number;
}

/**
 * Text ranking, meaning ranking, or both fused (reciprocal rank fusion, one
 * result per file: its text hit, which shows the words matched, else its best
 * chunk). A fused hit's score is its fusion score.
 */
export function rankSearch(text: SearchReader, meaning: MeaningReader, req: RankRequest): SearchOutcome {
  const { expression, vector, scope, limit, deadline } = req;
  if (!vector) return expression ? text.search(expression, scope, limit, deadline) : { hits: [], truncated: false };
  if (!expression) return meaning.search(vector, scope, limit, deadline);
  const pool = Math.max(limit, FUSE_POOL);
  const byText = text.search(expression, scope, pool, deadline);
  const byMeaning = meaning.search(vector, scope, pool, deadline);
  const hitOf = new Map<string, SearchHit>();
  for (const h of [...byMeaning.hits, ...byText.hits]) hitOf.set(h.row.uri, h);
  const fused = fuseRanks([byText.hits.map((h) => h.row.uri), byMeaning.hits.map((h) => h.row.uri)]);
  return {
    hits: fused.slice(0, limit).map(({ key, score }) => ({ ...hitOf.get(key)!, score })),
    truncated: byText.truncated || byMeaning.truncated,
  };
}

function parsePlace(json: string | null): Omit<Place, 'offset'> | undefined {
  if (json === null) return undefined;
  try {
    const p = JSON.parse(json) as unknown;
    if (!Array.isArray(p) || !(PLACE_UNITS as readonly unknown[]).includes(p[0]) || typeof p[1] !== 'number') return undefined;
    return { unit: p[0] as Place['unit'], number: p[1], ...(typeof p[2] === 'string' ? { name: p[2] } : {}) };
  } catch {
    return undefined;
  }
}
