// The one filter model of the four list methods (docs/listing.md): wire
// params in, a validated and normalised ListQuery out. Pure; the protocol layer
// turns FilterError into JSON-RPC -32602 with the message as it is.
import { createHash } from 'node:crypto';
import { canonicalUriText, parseFileUri, pathToUri } from '../uri.ts';
import { compileGlob, GlobSyntaxError, mapGlobLiterals, MAX_PATTERN_LENGTH, shownPattern } from './glob.ts';
import { Lru } from './lru.ts';

export type ListMethod = 'resources/list' | 'resources/templates/list' | 'tools/list' | 'prompts/list';

/** SEP-2564: at most this many patterns per field (we apply it to uri_paths too). */
export const MAX_PATTERNS = 100;

/**
 * A list request's filter, normalised: absent criteria are undefined (never an
 * empty array), arrays are deduplicated and sorted, URI-ish text is canonical.
 */
export interface ListQuery {
  method: ListMethod;
  cursor?: string;
  /** sep-list-prefix: plain string prefix of `uri` (`uriTemplate` for templates), canonical. */
  prefix?: string;
  /** SEP-1292 `filters.uri_paths`, canonical, OR-ed. */
  uriPaths?: string[];
  /** SEP-2564 `filter.namePatterns`: globs on `name`, OR-ed, as sent. */
  namePatterns?: string[];
  /** SEP-2564 `filter.uriPatterns`: globs on `uri`, OR-ed, literal text canonical. */
  uriPatterns?: string[];
  /** resources/list only: the collection whose direct children to list, raw (the caller resolves it). */
  uri?: string;
}

/** An invalid list request; `message` is the exact SEP-2564 / JSON-RPC text. */
export class FilterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FilterError';
  }
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const invalid = (what: string) => new FilterError(`Invalid params: ${what}`);

export function parseListParams(params: unknown, method: ListMethod): ListQuery {
  // Shapes first: a wrong type is not a glob and cannot be counted.
  if (params !== undefined && params !== null && !isObject(params)) throw invalid('params must be an object');
  const p: Json = params ?? {};
  const cursor = optionalString(p.cursor, 'cursor');
  const prefix = optionalString(p.prefix, 'prefix');
  const uri = optionalString(p.uri, 'uri');
  if (uri !== undefined && method !== 'resources/list') throw invalid(`uri is not accepted by ${method}`);
  const filters = optionalObject(p.filters, 'filters');
  const filter = optionalObject(p.filter, 'filter');
  const uriPaths = optionalStrings(filters?.uri_paths, 'filters.uri_paths');
  const namePatterns = optionalStrings(filter?.namePatterns, 'filter.namePatterns');
  const uriPatterns = optionalStrings(filter?.uriPatterns, 'filter.uriPatterns');

  // SEP-2564 order: syntax, then counts (cursor/filter consistency is the cursor's step).
  const canonicalUriPatterns = [];
  for (const pattern of namePatterns ?? []) checkPattern('namePatterns', pattern);
  for (const pattern of uriPatterns ?? []) canonicalUriPatterns.push(checkPattern('uriPatterns', pattern));
  for (const list of [namePatterns, uriPatterns]) {
    if (list && list.length > MAX_PATTERNS) {
      throw new FilterError(`Too many patterns: ${list.length} exceeds maximum of ${MAX_PATTERNS}`);
    }
  }
  if (uriPaths && uriPaths.length > MAX_PATTERNS) {
    throw new FilterError(`Too many uri_paths: ${uriPaths.length} exceeds maximum of ${MAX_PATTERNS}`);
  }

  const query: ListQuery = { method };
  if (cursor !== undefined) query.cursor = cursor;
  // '' is a prefix of everything: the same as no prefix, and the same fingerprint.
  if (prefix) query.prefix = canonicalUriText(prefix);
  if (uriPaths) query.uriPaths = sortedSet(uriPaths.map(canonicalUriText));
  if (namePatterns) query.namePatterns = sortedSet(namePatterns);
  if (uriPatterns) query.uriPatterns = sortedSet(canonicalUriPatterns);
  if (uri !== undefined) query.uri = uri;
  return query;
}

/**
 * A short stable hash of everything in the query but the cursor. A cursor
 * carries it, so a page request whose filter differs from the first is caught.
 */
export function fingerprint(query: ListQuery): string {
  const canonical = JSON.stringify([
    query.method,
    query.prefix ?? null,
    query.uriPaths ?? null,
    query.namePatterns ?? null,
    query.uriPatterns ?? null,
    query.uri === undefined ? null : collectionKey(query.uri),
  ]);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
}

/**
 * `uri` stays raw in the query (its lookup tells a document from a missing
 * path), but `.../café`, `.../caf%C3%A9/` and `.../x/../café` name one
 * collection, so they are one filter. Unparsable: as sent (it names nothing).
 */
function collectionKey(uri: string): string {
  const parsed = parseFileUri(uri);
  return parsed ? pathToUri(parsed.path, true) : uri;
}

type PatternField = 'namePatterns' | 'uriPatterns';

/**
 * The verdict on each pattern seen lately: a client pages with the same
 * filter, and checking a URI glob (compiling it, then respelling its
 * literals) costs tens of microseconds. A string is the pattern as the
 * query keeps it; an error is the syntax error's detail. Only patterns of
 * at most 256 characters are kept (their canonical spelling at most six
 * times that: é is %C3%A9), so the memo holds under a megabyte.
 */
const patternVerdicts = new Lru<string, { pattern: string } | { detail: string }>(256);

/**
 * Checks a pattern's syntax; returns it as the query keeps it. Clients may
 * spell a URI literal `café` or `caf%c3%a9`; the index holds `caf%C3%A9`.
 */
function checkPattern(field: PatternField, pattern: string): string {
  // Security: only patterns within the limit are kept; a longer one fails at once, and a
  // megabyte of it must not stay in memory as a key.
  const key = pattern.length <= MAX_PATTERN_LENGTH ? `${field}\u0000${pattern}` : undefined;
  let verdict = key === undefined ? undefined : patternVerdicts.get(key);
  if (verdict === undefined) {
    try {
      compileGlob(pattern);
      verdict = { pattern: field === 'uriPatterns' ? mapGlobLiterals(pattern, canonicalUriText) : pattern };
    } catch (error) {
      if (!(error instanceof GlobSyntaxError)) throw error;
      verdict = { detail: error.detail };
    }
    if (key !== undefined) patternVerdicts.set(key, verdict);
  }
  if ('detail' in verdict) throw new FilterError(`Invalid pattern in ${field}: '${shownPattern(pattern)}' — ${verdict.detail}`);
  return verdict.pattern;
}

// null is read as absent: some clients serialise unset optionals as null.
function optionalString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(`${name} must be a string`);
  return value;
}

function optionalObject(value: unknown, name: string): Json | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw invalid(`${name} must be an object`);
  return value;
}

/** An empty array is absent. */
function optionalStrings(value: unknown, name: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw invalid(`${name} must be an array of strings`);
  value.forEach((item, i) => {
    if (typeof item !== 'string') throw invalid(`${name}[${i}] must be a string`);
  });
  return value.length === 0 ? undefined : (value as string[]);
}

function sortedSet(values: readonly string[]): string[] {
  // Default sort is UTF-16 code-unit order: the same order as the index for ASCII.
  return [...new Set(values)].sort();
}
