// User search text -> an FTS5 MATCH expression. Users (and models) type words
// and "quoted phrases"; FTS5 syntax (AND, OR, NOT, NEAR, -, *, :, ^, parens)
// is never passed through: every term is quoted, so it is searched as text and
// can never be an FTS5 syntax error. One extension: a bare word ending in `*`
// is a prefix search (`pars*`).

export class SearchQueryError extends Error {
  override name = 'SearchQueryError';
}

export interface SearchExpression {
  /** The MATCH expression: quoted terms, implicitly AND-ed. */
  match: string;
  /** The terms as understood, for the result. */
  terms: string[];
}

export const MAX_QUERY_LENGTH = 1000;
/**
 * Bounds on what one query may cost (the query runs on the server's main
 * thread): a prefix term expands to every indexed word it starts, so a
 * one-letter prefix matches a good part of the vocabulary and a few of them
 * AND-ed together took seconds on 5,000 files (tens of seconds on 100,000).
 * Prefixes need three token characters, at most four of them per query.
 */
export const MAX_TERMS = 16;
export const MIN_PREFIX_CHARS = 3;
export const MAX_PREFIX_TERMS = 4;
/** What unicode61 keeps as token characters; a term without any names no token and matches nothing. */
const TOKEN_CHAR = /[\p{L}\p{N}\p{Co}]/u;
/**
 * The token a prefix term's `*` applies to: FTS5 splits a quoted term at every
 * other character into a phrase whose last token alone is the prefix, so
 * `the-a*` is the phrase `the`, then `a*` (one letter, and not from the
 * prefix index: 132 ms a snippet on 20,000 files, each hit one).
 */
const LAST_TOKEN = /[\p{L}\p{N}\p{Co}]+$/u;

export function parseSearchQuery(query: string): SearchExpression {
  if (query.length > MAX_QUERY_LENGTH) throw new SearchQueryError(`Query is longer than ${MAX_QUERY_LENGTH} characters`);
  // Control characters separate words, as spaces do: SQLite would end a quoted term at a NUL
  // ("unterminated string"), and no indexed word holds one.
  const text = query.replace(/[\u0000-\u001f\u007f]/g, ' ');
  const quotes = (text.match(/"/g) ?? []).length;
  if (quotes % 2 !== 0) {
    throw new SearchQueryError('Unbalanced quote in query: close the phrase with a second " (or remove the quote)');
  }
  const parts: { text: string; phrase: boolean; prefix: boolean }[] = [];
  const re = /"([^"]*)"|(\S+?)(?="|\s|$)/g;
  for (const m of text.matchAll(re)) {
    if (m[1] !== undefined) parts.push({ text: m[1], phrase: true, prefix: false });
    else {
      const word = m[2]!;
      const prefix = word.length > 1 && word.endsWith('*') && TOKEN_CHAR.test(word.slice(-2, -1));
      parts.push({ text: prefix ? word.slice(0, -1) : word, phrase: false, prefix });
    }
  }
  const kept = parts.filter((p) => TOKEN_CHAR.test(p.text));
  if (kept.length === 0) throw new SearchQueryError('Query has no words to search for (punctuation alone matches nothing)');
  if (kept.length > MAX_TERMS) throw new SearchQueryError(`Query has more than ${MAX_TERMS} terms`);
  const prefixes = kept.filter((p) => p.prefix);
  const short = prefixes.find((p) => [...(LAST_TOKEN.exec(p.text)?.[0] ?? '')].length < MIN_PREFIX_CHARS);
  if (short) {
    throw new SearchQueryError(
      `Prefix search ${short.text}* is too short: a prefix needs at least ${MIN_PREFIX_CHARS} letters or digits before the *, after any other character (or search the whole word)`,
    );
  }
  if (prefixes.length > MAX_PREFIX_TERMS) throw new SearchQueryError(`Query has more than ${MAX_PREFIX_TERMS} prefix (word*) terms`);
  const match = kept.map((p) => `"${p.text.replace(/"/g, '""')}"${p.prefix ? '*' : ''}`).join(' ');
  return { match, terms: kept.map((p) => (p.phrase ? `"${p.text}"` : p.prefix ? `${p.text}*` : p.text)) };
}
