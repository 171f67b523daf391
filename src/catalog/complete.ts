// completion/complete: the `path` of each root's resource template, and the
// prompt arguments that take a URI or path. Answered from the index by a key
// range on (parent, uri): the next path segment only, at most 100 values, with
// the total and hasMore.
import type { Db } from '../index/db.ts';
import { EntryKind } from '../entry.ts';
import type { ServerContext } from '../protocol/context.ts';
import { echo, invalidParams } from '../protocol/errors.ts';
import { succ } from '../keys.ts';
import { canonicalUriText, type Root } from '../uri.ts';
import { encodeRelative, encodeSegment } from './paths.ts';
import { findPrompt, WINDOW_SUGGESTIONS } from './prompts.ts';

export const MAX_COMPLETIONS = 100;
/**
 * `total` counts at most this many: past it the count says "at least"
 * (hasMore). A count is a scan of the range, and a folder's children may be
 * 100,000: uncapped, 300 completions at once held another client's requests
 * for a second each (issue 44). Capped, one completion reads at most this
 * many index entries, whatever the folder.
 */
export const MAX_COUNTED = 1000;

export interface Completion {
  values: string[];
  total: number;
  hasMore: boolean;
}

interface Candidate {
  uri: string;
  name: string;
  kind: number;
}

export class PathCompleter {
  private readonly list;
  private readonly count;

  constructor(
    db: Db,
    private readonly roots: readonly Root[],
  ) {
    // (parent, uri) is entries_by_parent: an index range, whatever the folder's size.
    const where = `parent = ? AND uri >= ? AND (? IS NULL OR uri < ?)`;
    this.list = db.prepare(`SELECT uri, name, kind FROM entries WHERE ${where} ORDER BY uri LIMIT ${MAX_COMPLETIONS}`);
    this.count = db.prepare(`SELECT count(*) AS n FROM (SELECT 1 FROM entries WHERE ${where} LIMIT ${MAX_COUNTED})`);
  }

  /** Children of `parentUri` whose URI starts with `lo`. */
  private children(parentUri: string, lo: string): { rows: Candidate[]; total: number } {
    const hi = succ(lo);
    const rows = this.list.all(parentUri, lo, hi, hi) as Candidate[];
    const total = rows.length < MAX_COMPLETIONS ? rows.length : (this.count.get(parentUri, lo, hi, hi) as { n: number }).n;
    return { rows, total };
  }

  /** A path relative to a root: `src/ut` -> `src/util/`, `src/utils.ts`. */
  relative(value: string, roots: readonly Root[] = this.roots): Completion {
    const slash = value.lastIndexOf('/');
    const dir = value.slice(0, slash + 1);
    const partial = value.slice(slash + 1);
    const values = new Set<string>();
    let total = 0;
    for (const root of roots) {
      const parentUri = root.uri + encodeRelative(dir);
      const { rows, total: n } = this.children(parentUri, parentUri + encodeSegment(partial));
      total += n;
      for (const row of rows) values.add(dir + row.name + (row.kind === EntryKind.collection ? '/' : ''));
    }
    return finish([...values], total);
  }

  /** A partial file URI: the URIs of the next segment; the roots themselves for a prefix of one. */
  uri(value: string): Completion {
    // An escape being typed (`caf%`, `caf%C`) is the start of one, not a `%` of the name: canonicalUriText would
    // spell it `%25`, and nothing would start with that (a review finding: two characters of every three typed).
    const typing = /%[0-9A-Fa-f]?$/.exec(value)?.[0] ?? '';
    const canonical = canonicalUriText(value.slice(0, value.length - typing.length)) + typing.toUpperCase();
    const roots = this.roots.filter((r) => r.uri.startsWith(canonical) && r.uri !== canonical);
    if (roots.length > 0) return finish(roots.map((r) => r.uri), roots.length);
    const slash = canonical.lastIndexOf('/');
    const parentUri = canonical.slice(0, slash + 1);
    if (!this.roots.some((r) => parentUri.startsWith(r.uri))) return finish([], 0);
    const { rows, total } = this.children(parentUri, canonical);
    return finish(
      rows.map((r) => r.uri),
      total,
    );
  }
}

function finish(values: string[], total: number, sort = true): Completion {
  const sorted = (sort ? values.sort() : values).slice(0, MAX_COMPLETIONS);
  return { values: sorted, total: Math.max(total, sorted.length), hasMore: total > sorted.length };
}

export async function complete(ctx: ServerContext, completer: PathCompleter, params: unknown): Promise<{ completion: Completion }> {
  const p = (params ?? {}) as { ref?: { type?: unknown; uri?: unknown; name?: unknown }; argument?: { name?: unknown; value?: unknown } };
  const ref = p.ref;
  const arg = p.argument;
  if (typeof ref !== 'object' || ref === null || typeof arg !== 'object' || arg === null) {
    throw invalidParams('Invalid params: ref and argument are required');
  }
  if (typeof arg.name !== 'string' || typeof arg.value !== 'string') {
    throw invalidParams('Invalid params: argument.name and argument.value must be strings');
  }
  const value = arg.value;
  await ctx.index.readiness.reached('scanned');
  if (ref.type === 'ref/resource') {
    const root = ctx.roots.find((r) => `${r.uri}{+path}` === ref.uri);
    if (!root) throw invalidParams(`Unknown resource template: ${String(echo(ref.uri))}`);
    if (arg.name !== 'path') return { completion: finish([], 0) };
    return { completion: completer.relative(value.replace(/^\/+/, ''), [root]) };
  }
  if (ref.type === 'ref/prompt') {
    const prompt = findPrompt(ref.name);
    if (!prompt) throw invalidParams(`Unknown prompt: ${String(echo(ref.name))}`);
    if (prompt.name === 'recent-changes' && arg.name === 'window') {
      const values = WINDOW_SUGGESTIONS.filter((w) => w.startsWith(value.trim()));
      return { completion: finish(values, values.length, false) };
    }
    if ((prompt.name === 'explain' && arg.name === 'uri') || (prompt.name === 'recent-changes' && arg.name === 'scope')) {
      // A value that starts like a URI completes URIs; anything else, relative paths.
      const asUri = /^file:/i.test(value);
      return { completion: asUri ? completer.uri(value) : completer.relative(value.replace(/^\.?\/+/, '')) };
    }
    return { completion: finish([], 0) };
  }
  throw invalidParams(`Invalid params: unknown ref type ${String(echo(ref.type))}`);
}
