// Filter -> access plan: key ranges on the URI primary key (from prefix,
// uri_paths and the literal heads of uriPatterns), an optional extension set
// (for the (ext, uri) index), and a residual check for what ranges cannot say.
// Also the same predicate for in-memory lists (tools, prompts, templates).
//
// Ranges compare by JS string (UTF-16 unit) order. Canonical URIs are ASCII,
// where that equals SQLite BINARY (byte) order; see src/index/db.ts.
import { succ } from '../keys.ts';
import { canonicalUriText } from '../uri.ts';
import { compileGlob, MatchCache, type CompiledGlob } from './glob.ts';
import type { ListQuery } from './filter.ts';
import { Lru } from './lru.ts';

/** `uri >= lo AND (hi IS NULL OR uri < hi)`. */
export interface KeyRange {
  lo: string;
  hi: string | null;
}

export interface Plan {
  /** Sorted, disjoint, merged; empty means the result is empty (run no query). */
  ranges: KeyRange[];
  /** When set, every match has one of these `ext` values (sorted). */
  exts: string[] | null;
  /** When set, every match has one of these names (sorted): literal namePatterns, for the (name, uri) index. */
  names: string[] | null;
  /** When set, only direct children of this collection URI match. */
  parent?: string;
  /** Rows inside the ranges (and exts, parent) match iff this holds. */
  residual: (row: { uri: string; name: string }) => boolean;
  /**
   * The matching work `residual` has done so far, in glob steps (absent: the
   * residual is free). The pager charges it, so a page of 100 long patterns
   * stops after a few rows, not after the budget's thousands.
   */
  residualWork?: () => number;
}

export interface PlanOptions {
  /** The canonical URI of the collection named by `query.uri`, resolved by the caller. */
  parent?: string;
}

export const ALL_KEYS: KeyRange = { lo: '', hi: null };


export function prefixRange(prefix: string): KeyRange {
  return { lo: prefix, hi: succ(prefix) };
}

const PATH_SEPARATORS = ['#', '/', '?']; // sorted, so the ranges below come out sorted

/** SEP-1292: `p` itself, or `p` followed by '/', '?' or '#' (a `p` ending in one is a plain prefix). */
export function uriPathRanges(p: string): KeyRange[] {
  if (PATH_SEPARATORS.includes(p.slice(-1))) return [prefixRange(p)];
  // p + '\0' is the smallest string after p: [p, p\0) holds p alone.
  return [{ lo: p, hi: p + '\u0000' }, ...PATH_SEPARATORS.map((sep) => prefixRange(p + sep))];
}

export function matchesUriPath(uri: string, p: string): boolean {
  if (!uri.startsWith(p)) return false;
  if (uri.length === p.length || PATH_SEPARATORS.includes(p.slice(-1))) return true;
  return PATH_SEPARATORS.includes(uri.charAt(p.length));
}

const below = (a: string | null, b: string | null) => a !== null && (b === null || a < b);

/** Sorted, disjoint union; empty ranges dropped, touching ones merged. */
export function unionRanges(ranges: readonly KeyRange[]): KeyRange[] {
  const sorted = ranges.filter((r) => r.hi === null || r.lo < r.hi).sort((a, b) => (a.lo < b.lo ? -1 : a.lo > b.lo ? 1 : 0));
  const out: KeyRange[] = [];
  for (const r of sorted) {
    const last = out.at(-1);
    if (last && !below(last.hi, r.lo)) {
      if (below(last.hi, r.hi)) last.hi = r.hi;
    } else out.push({ ...r });
  }
  return out;
}

/** Intersection of two sorted, disjoint range lists. */
export function intersectRanges(a: readonly KeyRange[], b: readonly KeyRange[]): KeyRange[] {
  const out: KeyRange[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    const lo = x.lo > y.lo ? x.lo : y.lo;
    const hi = below(x.hi, y.hi) ? x.hi : y.hi;
    if (hi === null || lo < hi) out.push({ lo, hi });
    if (below(x.hi, y.hi)) i++;
    else j++;
  }
  return out;
}

interface Compiled {
  name: CompiledGlob[] | null;
  uri: CompiledGlob[] | null;
}

const NO_GLOBS: Compiled = { name: null, uri: null };

// Queries are immutable once parsed; compile their globs once, not per row.
const compiledByQuery = new WeakMap<ListQuery, Compiled>();

/**
 * And by the patterns they come from: every page of a walk parses its params
 * into a new query with the same patterns. Kept only for a few globs each
 * answered by string methods (a compiled glob holds its parsed atoms, a few
 * KB at 256 characters, so 32 entries hold 2 MB at most): an automaton's
 * cache of state sets grows with use (a full MatchCache room holds a few
 * MB), so those are compiled per request, and each request's cache dies
 * with it. A kept matcher's work meter only counts up (the pager charges
 * differences), so pages can share it.
 */
const compiledByPatterns = new Lru<string, Compiled>(32);
const MAX_KEPT_GLOBS = 8;

function compiled(query: ListQuery): Compiled {
  let c = compiledByQuery.get(query);
  if (c) return c;
  const count = (query.namePatterns?.length ?? 0) + (query.uriPatterns?.length ?? 0);
  if (count === 0) c = NO_GLOBS;
  else {
    const key = count <= MAX_KEPT_GLOBS ? JSON.stringify([query.namePatterns ?? null, query.uriPatterns ?? null]) : undefined;
    c = key === undefined ? undefined : compiledByPatterns.get(key);
    if (!c) {
      // Normalised uriPatterns may outgrow the wire limit (é -> %C3%A9); they were checked before.
      // One cache room for all the query's globs bounds their memory together.
      const cache = new MatchCache();
      const compile = (ps: string[] | undefined) => ps?.map((p) => compileGlob(p, { maxLength: Infinity, cache })) ?? null;
      c = { name: compile(query.namePatterns), uri: compile(query.uriPatterns) };
      const automaton = [...(c.name ?? []), ...(c.uri ?? [])].some((g) => g.automaton);
      if (key !== undefined && !automaton) compiledByPatterns.set(key, c);
    }
  }
  compiledByQuery.set(query, c);
  return c;
}

function globsHold(c: Compiled, item: { uri: string; name: string }): boolean {
  if (c.name && !c.name.some((g) => g.match(item.name))) return false;
  if (c.uri && !c.uri.some((g) => g.match(item.uri))) return false;
  return true;
}

/** Union of the globs' extension sets, or null when any glob's is unknown. */
function extensionSet(globs: CompiledGlob[] | null): Set<string> | null {
  if (!globs) return null;
  const set = new Set<string>();
  for (const g of globs) {
    if (!g.extensions) return null;
    for (const e of g.extensions) set.add(e);
  }
  return set;
}

export function planQuery(query: ListQuery, opts: PlanOptions = {}): Plan {
  if (query.uri !== undefined && opts.parent === undefined) {
    throw new TypeError('planQuery: query.uri must be resolved to opts.parent by the caller');
  }
  const c = compiled(query);
  let ranges: KeyRange[] = [ALL_KEYS];
  if (query.prefix !== undefined) ranges = intersectRanges(ranges, [prefixRange(query.prefix)]);
  if (query.uriPaths) ranges = intersectRanges(ranges, unionRanges(query.uriPaths.flatMap(uriPathRanges)));
  if (c.uri) ranges = intersectRanges(ranges, unionRanges(c.uri.map((g) => prefixRange(g.literalHead))));
  // Direct children of P all start with P (a collection URI ends in '/').
  if (opts.parent !== undefined) ranges = intersectRanges(ranges, [prefixRange(opts.parent)]);

  let exts: string[] | null = null;
  for (const set of [extensionSet(c.name), extensionSet(c.uri)]) {
    if (set) exts = exts ? exts.filter((e) => set.has(e)) : [...set].sort();
  }
  if (exts && exts.length === 0) ranges = [];
  // namePatterns without wildcards (`Makefile`, `{package,tsconfig}.json`) name their rows exactly.
  let names: string[] | null = null;
  if (c.name && c.name.every((g) => g.literals !== null)) names = [...new Set(c.name.flatMap((g) => g.literals!))].sort();

  // Prefix, uri_paths and parent are exact in the ranges (and the executor
  // applies the ranges on every access path); the globs are not.
  const residual = c.name || c.uri ? (row: { uri: string; name: string }) => globsHold(c, row) : () => true;
  const plan: Plan = { ranges, exts, names, residual };
  const globs = [...(c.name ?? []), ...(c.uri ?? [])];
  if (globs.length > 0) plan.residualWork = () => globs.reduce((n, g) => n + g.work, 0);
  if (opts.parent !== undefined) plan.parent = opts.parent;
  return plan;
}

/**
 * The whole filter as one predicate, for lists held in memory and as the
 * reference the plan is tested against. `query.uri` needs `opts.parent` and
 * `item.parent`.
 */
export function matchesQuery(
  query: ListQuery,
  item: { uri: string; name: string; parent?: string | null },
  opts: PlanOptions = {},
): boolean {
  if (query.uri !== undefined && (opts.parent === undefined || item.parent !== opts.parent)) return false;
  if (query.prefix !== undefined && !item.uri.startsWith(query.prefix)) return false;
  if (query.uriPaths && !query.uriPaths.some((p) => matchesUriPath(item.uri, p))) return false;
  return globsHold(compiled(query), item);
}

/**
 * Templates: prefix and uri_paths also hold when they start with the
 * template's literal head (the text before its first `{`), since the template
 * can expand to URIs under them. Globs apply to the template text.
 */
export function matchesTemplate(query: ListQuery, t: { uriTemplate: string; name: string }): boolean {
  const brace = t.uriTemplate.indexOf('{');
  const head = brace < 0 ? null : t.uriTemplate.slice(0, brace);
  // Filters come spelled as URIs spell them (canonicalUriText: a literal `{` is `%7B`): so is the template's text.
  const text = canonicalUriText(t.uriTemplate);
  const reaches = (p: string) => head !== null && p.startsWith(head);
  if (query.prefix !== undefined && !text.startsWith(query.prefix) && !reaches(query.prefix)) return false;
  if (query.uriPaths && !query.uriPaths.some((p) => matchesUriPath(text, p) || reaches(p))) return false;
  return globsHold(compiled(query), { uri: text, name: t.name });
}
