// The query side of the content index: ranked candidates, then an entry and a
// snippet per hit. Runs on any connection to the index (the search thread's
// own read-only one, or the main one), and stops between statements once its
// deadline has passed, saying so: one broad query must not hold anything up.
import type { Db } from '../index/db.ts';
import type { EntryRow } from '../entry.ts';
import type { KeyRange } from '../query/plan.ts';
import type { SearchExpression } from './search-query.ts';
import { PLACE_UNITS, placeAt, type Place } from '../content/converters/types.ts';

/** Ranked candidates looked at per search, at most (a scoped search with a very common word may miss the rest). */
const MAX_CANDIDATES = 20_000;
/** Extra top-ranked candidates for an unscoped search, for entries removed but not yet dropped from the content index. */
const FIRST_TIER_SLACK = 20;
const SCOPED_FIRST_TIER = 2000;

export interface SearchHit {
  row: EntryRow;
  score: number;
  line: number;
  /** The line of the first highlighted match, trimmed. */
  text: string;
  /** FTS5 snippet around the best match, matches in «», on one line. */
  snippet: string;
  /** The MIME type of the converted text searched (a format alternative: a PDF's text); absent for a text file's own text. */
  form?: string;
  /** The page (PDF), cell (notebook), sheet (workbook, with its name) or slide the match is in. */
  place?: Omit<Place, 'offset'>;
  /** A hit by meaning: the last line of the passage that matched (`line` is its first). */
  lineEnd?: number;
}

export interface SearchScope {
  ranges: KeyRange[];
  /** True when the ranges say everything (no glob residual): then the top N by rank need no filtering. */
  exact: boolean;
  residual: (row: { uri: string; name: string }) => boolean;
}

export interface SearchOutcome {
  hits: SearchHit[];
  /** True when the deadline passed first: `hits` are what was found by then. */
  truncated: boolean;
}

interface Candidate {
  id: number;
  uri: string;
  score: number;
  form: string | null;
  places: string | null;
}

export class SearchReader {
  private readonly stmts;

  constructor(private readonly db: Db) {
    // FTS5 rowid constraints are bound through CAST: both drivers bind JS
    // numbers as REAL, and FTS5 silently ignores `rowid = ?` with a REAL value
    // when the query also has a MATCH (every matching row comes back).
    this.stmts = {
      entry: db.prepare(`SELECT uri, parent, root, name, ext, kind, size, mtime, mime FROM entries WHERE uri = ?`),
      ranked: db.prepare(
        `SELECT d.id AS id, d.uri AS uri, f.rank AS score, d.form AS form, d.places AS places
         FROM (SELECT rowid, rank FROM search_fts WHERE search_fts MATCH ? ORDER BY rank LIMIT ?) f
         JOIN search_docs d ON d.id = f.rowid ORDER BY f.rank`,
      ),
      snippet: db.prepare(
        `SELECT snippet(search_fts, 0, char(1), char(2), '…', 16) AS snippet, body FROM search_fts WHERE search_fts MATCH ? AND rowid = CAST(? AS INTEGER)`,
      ),
    };
  }

  /**
   * Ranked hits within `scope`, best first. Past `deadline` (a
   * performance.now() time) no further statement starts; a statement already
   * running finishes first, so the caller bounds each one (search-query.ts).
   */
  search(expression: SearchExpression, scope: SearchScope, limit: number, deadline = Infinity): SearchOutcome {
    if (scope.ranges.length === 0) return { hits: [], truncated: false };
    const single = scope.ranges.length === 1 ? scope.ranges[0]! : null;
    const everything = scope.exact && single !== null && single.lo === '' && single.hi === null;
    // FTS5 sorts by rank itself and keeps only the top N, which is many times
    // cheaper than sorting every match by bm25() in SQL (6,000 matches: 7 ms
    // against 80). A scoped search first looks at the global top 2,000 and
    // only when that is not enough pays for the full sort inside its range.
    const first = everything ? limit + FIRST_TIER_SLACK : SCOPED_FIRST_TIER;
    const ranked = this.stmts.ranked.all(expression.match, first) as Candidate[];
    const tier1 = this.collect(expression, scope, ranked, limit, deadline);
    if (tier1.truncated || tier1.hits.length >= limit || ranked.length < first) return tier1;
    if (performance.now() > deadline) return { hits: tier1.hits, truncated: true };
    let all: Candidate[];
    if (single) {
      const hi = single.hi === null ? '' : ' AND d.uri < ?';
      const args: (string | number)[] = [expression.match, single.lo, ...(single.hi === null ? [] : [single.hi]), MAX_CANDIDATES];
      all = this.db
        .prepare(
          `SELECT d.id AS id, d.uri AS uri, bm25(search_fts) AS score, d.form AS form, d.places AS places FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid
           WHERE search_fts MATCH ? AND d.uri >= ?${hi} ORDER BY score LIMIT ?`,
        )
        .all(...args) as Candidate[];
    } else {
      all = this.stmts.ranked.all(expression.match, MAX_CANDIDATES) as Candidate[];
    }
    const tier2 = this.collect(expression, scope, all, limit, deadline);
    // The second tier ranks everything in scope: when it was cut short, what the first found may rank higher.
    return tier2.truncated && tier2.hits.length < tier1.hits.length ? { hits: tier1.hits, truncated: true } : tier2;
  }

  private collect(expression: SearchExpression, scope: SearchScope, candidates: Candidate[], limit: number, deadline: number): SearchOutcome {
    const hits: SearchHit[] = [];
    for (const c of candidates) {
      if (hits.length >= limit) break;
      if (!scope.ranges.some((r) => c.uri >= r.lo && (r.hi === null || c.uri < r.hi))) continue;
      // Each snippet re-runs the MATCH: with a broad query that is the expensive part.
      if (performance.now() > deadline) return { hits, truncated: true };
      // The entry may have gone since the text was indexed (a removal not yet applied here).
      const row = this.stmts.entry.get(c.uri) as EntryRow | undefined;
      if (!row || !scope.residual(row)) continue;
      const found = this.stmts.snippet.get(expression.match, c.id) as { snippet: string; body: string } | undefined;
      if (!found) continue;
      const { offset, ...at } = locateMatch(found.snippet, found.body);
      const place = c.places === null ? undefined : placeAt(parsePlaces(c.places), offset);
      hits.push({
        row,
        score: -c.score,
        ...at,
        ...(c.form !== null ? { form: c.form } : {}),
        ...(place ? { place: { unit: place.unit, number: place.number, ...(place.name !== undefined ? { name: place.name } : {}) } } : {}),
      });
    }
    return { hits, truncated: false };
  }
}

/**
 * Line number and line text of the snippet's first highlight. The snippet's
 * text between markers is verbatim body text, so finding it in the body
 * places it; a case-insensitive search for the highlighted word is the fallback.
 */
export function locate(snippet: string, body: string): { line: number; text: string; snippet: string } {
  const { offset: _offset, ...at } = locateMatch(snippet, body);
  return at;
}

/** locate, with the match's offset in the body (for its page or cell). */
function locateMatch(snippet: string, body: string): { line: number; text: string; snippet: string; offset: number } {
  const start = snippet.indexOf('\u0001');
  const end = snippet.indexOf('\u0002', start);
  let offset = -1;
  if (start >= 0 && end > start) {
    // The text before the word places it; all of it can be a megabyte (boundSnippet), so its last PLACING_CHARS.
    // Not much fewer: sheets of one header, and separator rows FTS5 does not count as tokens, repeat a long way.
    const before = snippet.slice(0, start).replace(/^\u2026/, '').slice(-PLACING_CHARS);
    const word = snippet.slice(start + 1, end);
    const at = body.indexOf(before + word);
    offset = at >= 0 ? at + before.length : body.toLowerCase().indexOf(word.toLowerCase());
  }
  if (offset < 0) offset = 0;
  const lineStart = body.lastIndexOf('\n', offset - 1) + 1;
  let lineEnd = body.indexOf('\n', offset);
  if (lineEnd < 0) lineEnd = body.length;
  let line = 1;
  for (let i = body.indexOf('\n'); i >= 0 && i < offset; i = body.indexOf('\n', i + 1)) line++;
  let text = body.slice(lineStart, lineEnd).trim();
  if (text.length > 240) text = `${text.slice(0, 240)}…`;
  return {
    offset,
    line,
    text,
    snippet: boundSnippet(snippet.replace(/\s+/g, ' ').trim()).replace(/\u0001/g, '«').replace(/\u0002/g, '»'),
  };
}

/** Characters before a snippet's first highlight that place it in the body. */
const PLACING_CHARS = 4096;
/** Characters of a snippet kept before its first highlight, and in all. */
const SNIPPET_BEFORE = 80;
const SNIPPET_CHARS = 320;

/**
 * A snippet (its highlights marked \u0001 ... \u0002) cut to SNIPPET_CHARS
 * around its first highlight, never through a character, a highlight cut
 * open closed again, and `…` where text was cut. FTS5's snippet() bounds the
 * tokens it shows, not the characters between them: a Markdown table's
 * `|---|` lines, or a run of control characters, came back as a megabyte a
 * hit, and 30 such hits were a 189 MB answer (a red-team finding). Pure.
 */
export function boundSnippet(snippet: string): string {
  if (snippet.length <= SNIPPET_CHARS) return snippet;
  const lowSurrogate = (at: number) => (snippet.charCodeAt(at) & 0xfc00) === 0xdc00;
  let from = Math.max(0, snippet.indexOf('\u0001') - SNIPPET_BEFORE);
  if (from > 0 && lowSurrogate(from)) from++;
  let to = Math.min(snippet.length, from + SNIPPET_CHARS);
  if (to < snippet.length && lowSurrogate(to)) to--;
  let cut = snippet.slice(from, to);
  if (cut.lastIndexOf('\u0001') > cut.lastIndexOf('\u0002')) cut += '\u0002';
  return `${from > 0 && !cut.startsWith('…') ? '…' : ''}${cut}${to < snippet.length && !cut.endsWith('…') ? '…' : ''}`;
}

/** search_docs.places: [[offset, unit, number, name?], ...] as the content index wrote it; malformed entries are dropped. */
export function parsePlaces(json: string): Place[] {
  try {
    const raw = JSON.parse(json) as unknown;
    if (!Array.isArray(raw)) return [];
    return raw
      .filter(
        (p): p is [number, Place['unit'], number, string?] =>
          Array.isArray(p) &&
          typeof p[0] === 'number' &&
          (PLACE_UNITS as readonly unknown[]).includes(p[1]) &&
          typeof p[2] === 'number' &&
          (p[3] === undefined || typeof p[3] === 'string'),
      )
      .map(([offset, unit, number, name]) => ({ offset, unit, number, ...(name !== undefined ? { name } : {}) }));
  } catch {
    return [];
  }
}
