// The query side of meaning search: the nearest chunks to a query vector by
// cosine, best chunk per file. On the search thread the vectors are kept in
// memory (vector-store.ts: a SIMD scan of them all, then an exact re-rank of
// the best); elsewhere (the main thread's fallback) an exact scan of
// search_chunks a page at a time (bounded memory, stopping between pages past
// the deadline). And hybrid ranking, the reciprocal rank fusion of the text
// and meaning rankings. Runs on any connection to the index, as SearchReader does.
import type { Db } from '../index/db.ts';
import type { EntryRow } from '../entry.ts';
import { PLACE_UNITS, type Place } from '../content/converters/types.ts';
import type { SearchExpression } from './search-query.ts';
import type { SearchHit, SearchOutcome, SearchReader, SearchScope } from './search-reader.ts';
import { cosineInt8, fuseRanks } from './vectors.ts';
import { VectorStore, type StoredChunk } from './vector-store.ts';

export const SEARCH_MODES = ['text', 'meaning', 'hybrid'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

/** Chunks read per statement of the scan. */
const SCAN_PAGE = 4096;
/** Chunks loaded into memory per transaction (~1.6 MB of 768-dimension vectors read at once). */
const LOAD_PAGE = 2048;
/** Files each ranking brings to a hybrid fusion, at least: a file ranked lower in both is unlikely to make the top. */
const FUSE_POOL = 50;
const SNIPPET_CHARS = 240;

interface Best {
  chunk: number;
  uri: string;
  score: number;
}

interface KeptVectors {
  store: VectorStore;
  /** The model they were embedded with (meta embed_model). */
  model: string | null;
  /** The highest chunk id loaded. */
  after: number;
  complete: boolean;
  /** PRAGMA data_version when they were last brought up to the index. */
  version: number | bigint;
}

export class MeaningReader {
  private readonly stmts;
  /** The vectors in memory (`cache`), with how far they follow the index. */
  private kept: KeptVectors | null = null;

  /**
   * `cache`: keep every vector in memory between searches (the search
   * thread's read-only connection), in a VectorStore kept in step with the
   * index: PRAGMA data_version says when another connection committed, the
   * chunks written since come by id (ids only grow: embeddings.ts), and a
   * count says when some were removed. Loading 100k chunks takes seconds on
   * a loaded machine: it goes a page at a time, within each search's budget
   * (a search before it ends is answered from what is loaded and says it was
   * cut short) and between searches (continueLoading).
   */
  constructor(
    private readonly db: Db,
    private readonly cache = false,
  ) {
    this.stmts = {
      // No join in the scan: a page is chunk rows alone, and the scope is a set of documents found once.
      page: db.prepare(`SELECT id, doc, vec FROM search_chunks WHERE id > ? ORDER BY id LIMIT ${SCAN_PAGE}`),
      loadPage: db.prepareRows(`SELECT id, doc, vec FROM search_chunks WHERE id > ? ORDER BY id LIMIT ${LOAD_PAGE}`),
      loadDoc: db.prepareRows(`SELECT id, doc, vec FROM search_chunks WHERE doc = ? AND id > ? ORDER BY id`),
      count: db.prepare(`SELECT count(*) AS n FROM search_chunks`),
      chunkDocs: db.prepareRows(`SELECT DISTINCT doc FROM search_chunks`),
      meta: db.prepare(`SELECT value FROM meta WHERE key = ?`),
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
    if (this.cache) return this.searchKept(unitQuery, scope, allowed, limit, deadline);
    const best = new Map<number, { chunk: number; score: number }>();
    let truncated = false;
    for (let after = 0; ; ) {
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
    const ranked = [...best].sort((x, y) => y[1].score - x[1].score).map(([doc, b]) => ({ doc, ...b }));
    return { hits: this.hitsOf(ranked, scope, limit), truncated };
  }

  /**
   * Loads vectors for up to `ms` (a search thread between searches), so that
   * the first searches after start do not each pay for it. True when there
   * is nothing more to load.
   */
  continueLoading(ms: number): boolean {
    if (!this.kept || this.kept.complete) return true;
    return this.sync(performance.now() + ms);
  }

  /** The vectors in memory (for benchmarks): chunks and bytes held, and whether the load is complete. */
  get memory(): { chunks: number; bytes: number; complete: boolean } | null {
    return this.kept ? { chunks: this.kept.store.size, bytes: this.kept.store.bytes, complete: this.kept.complete } : null;
  }

  private searchKept(unitQuery: Float32Array, scope: SearchScope, allowed: Set<number> | null, limit: number, deadline: number): SearchOutcome {
    const complete = this.sync(deadline);
    const store = this.kept?.store;
    if (!store || store.dimension !== unitQuery.length) return { hits: [], truncated: !complete };
    const admit = allowed === null ? null : (doc: number) => allowed.has(doc);
    // A glob residual may turn down many of the nearest documents: ask again for more, four times as many each time.
    for (let k = limit; ; k *= 4) {
      const nearest = store.nearest(unitQuery, scope.exact ? k : k * 2, admit);
      const hits = this.hitsOf(nearest, scope, limit);
      if (hits.length >= limit || nearest.length < (scope.exact ? k : k * 2) || performance.now() > deadline) {
        return { hits, truncated: !complete || (hits.length < limit && nearest.length >= k && performance.now() > deadline) };
      }
    }
  }

  private hitsOf(ranked: readonly { doc: number; chunk: number; score: number }[], scope: SearchScope, limit: number): SearchHit[] {
    const hits: SearchHit[] = [];
    for (const b of ranked) {
      if (hits.length >= limit) break;
      const uri = (this.stmts.uri.get(b.doc) as { uri: string } | undefined)?.uri;
      const row = uri === undefined ? undefined : (this.stmts.entry.get(uri) as EntryRow | undefined);
      if (!row || !scope.residual(row)) continue;
      const hit = this.hitOf({ ...b, uri: row.uri }, row);
      if (hit) hits.push(hit);
    }
    return hits;
  }

  /**
   * Brings the kept vectors up to the index, a page at a time until
   * `deadline`; true when they are. Each page is read in one transaction and
   * holds whole documents (a page that ends inside one reads the rest of
   * it), so that a document met again later was written again: its new
   * chunks replace the old.
   */
  private sync(deadline: number): boolean {
    const version = this.db.pragma('data_version') as number | bigint;
    const kept = this.kept;
    if (kept?.complete && kept.version === version) return true;
    for (;;) {
      const done = this.db.transaction(() => this.syncPage(version))();
      if (done) return true;
      if (performance.now() > deadline) return false;
    }
  }

  /** One page of sync(), inside its transaction: true when the kept vectors are current. */
  private syncPage(version: number | bigint): boolean {
    const model = (this.stmts.meta.get('embed_model') as { value: string } | undefined)?.value ?? null;
    const dimension = Number((this.stmts.meta.get('embed_dimension') as { value: string } | undefined)?.value);
    if (!Number.isInteger(dimension) || dimension <= 0) {
      this.kept = null;
      return true;
    }
    let kept = this.kept;
    // Another model or dimension: embeddings.ts started over, and so does this.
    if (!kept || kept.model !== model || kept.store.dimension !== dimension) {
      kept = this.kept = { store: new VectorStore(dimension), model, after: 0, complete: false, version };
    }
    const rows = this.stmts.loadPage.all(kept.after);
    if (rows.length === LOAD_PAGE) {
      const last = rows.at(-1)!;
      rows.push(...this.stmts.loadDoc.all(last[1], last[0]));
    }
    for (let i = 0; i < rows.length; ) {
      const doc = Number(rows[i]![1]);
      const chunks: StoredChunk[] = [];
      for (; i < rows.length && Number(rows[i]![1]) === doc; i++) {
        const vec = rows[i]![2] as Uint8Array;
        chunks.push({ id: Number(rows[i]![0]), bytes: new Int8Array(vec.buffer, vec.byteOffset, vec.byteLength) });
      }
      kept.store.put(doc, chunks);
      kept.after = chunks.at(-1)!.id;
    }
    if (rows.length >= LOAD_PAGE) return false;
    // Every chunk written since is in; fewer in the index than here means documents were removed.
    const count = (this.stmts.count.get() as { n: number }).n;
    if (count !== kept.store.size) {
      const present = new Set(this.stmts.chunkDocs.all().map((r) => Number(r[0])));
      for (const doc of [...kept.store.docs()]) if (!present.has(doc)) kept.store.remove(doc);
    }
    kept.complete = true;
    kept.version = version;
    return true;
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
