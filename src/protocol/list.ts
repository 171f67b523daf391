import { EntryKind } from '../entry.ts';
import { FilterError, fingerprint, parseListParams, type ListMethod, type ListQuery } from '../query/filter.ts';
import { matchesTemplate, planQuery, type Plan } from '../query/plan.ts';
import type { PageResult } from '../query/page.ts';
import { toListItem, type ListItem } from '../resource.ts';
import type { ServerContext } from './context.ts';
import { CursorError, decodeCursor, encodeCursor } from './cursor.ts';
import { echo, invalidParams } from './errors.ts';
import { findEntry } from './read.ts';

/**
 * Rows a page may examine before it returns early (a short page with a
 * cursor): a selective glob over a wide range costs bounded time per request.
 */
export const SCAN_BUDGET_PER_ITEM = 50;
export const MIN_SCAN_BUDGET = 10_000;

/** Parses list params with the one filter model; bad input is -32602 with the SEP-2564 message. */
export function parseQuery(params: unknown, method: ListMethod): ListQuery {
  try {
    return parseListParams(params, method);
  } catch (error) {
    if (error instanceof FilterError) throw invalidParams(error.message);
    throw error;
  }
}

/** The key after which a page starts: the cursor's, checked against this request's filter. */
export function cursorKey(ctx: ServerContext, query: ListQuery, print: string): string | null {
  if (query.cursor === undefined) return null;
  try {
    return decodeCursor(query.cursor, ctx.cursorSecret, print);
  } catch (error) {
    if (error instanceof CursorError) throw invalidParams(error.message);
    throw error;
  }
}

/**
 * `resources/list` with the filters of docs/listing.md, answered from the
 * index by key ranges and keyset pages. During the first scan a page is
 * answered as soon as the scan has committed every key it covers (the scan
 * walks in key order: FolderIndex.settled), so it is the page the finished
 * index would give, never a partial one; `uri` (a collection's children)
 * still waits for the whole scan.
 */
export async function listResources(
  ctx: ServerContext,
  params: unknown,
): Promise<ListResult> {
  const query = parseQuery(params, 'resources/list');
  const print = fingerprint(query);
  const afterKey = cursorKey(ctx, query, print);
  let parent: string | undefined;
  if (query.uri !== undefined) {
    // A 'keys' handler waits for what it needs (src/server.ts): the collection named must be indexed to be found.
    await ctx.index.readiness.reached('scanned');
    const entry = await findEntry(ctx, query.uri);
    if (entry.kind !== EntryKind.collection) {
      throw invalidParams(`Invalid params: uri is not a collection: ${String(echo(query.uri))}`);
    }
    parent = entry.uri;
  }
  const plan = planQuery(query, parent === undefined ? {} : { parent });
  const budget = Math.max(MIN_SCAN_BUDGET, ctx.pageSize * SCAN_BUDGET_PER_ITEM);
  let page = ctx.pager.listPage(plan, afterKey, ctx.pageSize, budget);
  let ranAt = ctx.index.scanned;
  while (ctx.index.readiness.state === 'scanning' && !pageSettled(ctx, plan, afterKey, page)) {
    do {
      await ctx.index.nextCommit();
    } while (!worthAnotherRun(ctx, plan, afterKey, page, ranAt));
    page = ctx.pager.listPage(plan, afterKey, ctx.pageSize, budget);
    ranAt = ctx.index.scanned;
  }
  // Over (a page waited until the end, or came after it): a failed scan fails the request.
  if (ctx.index.readiness.state !== 'scanning') await ctx.index.readiness.reached('scanned');
  const result: ListResult = {
    resources: page.rows.map(toListItem),
  };
  if (!page.exhausted && page.lastScanned !== null) {
    result.nextCursor = encodeCursor({ key: page.lastScanned, fingerprint: print }, ctx.cursorSecret);
  }
  // Answered before the index caught up with the disk (a warm start's last-run index, or what the first scan saw):
  // said so, as search says its index is partial. What the catch-up then finds comes as list_changed.
  if (ctx.index.readiness.state !== 'caught-up') result._meta = { [CATCHING_UP_META_KEY]: true };
  return result;
}

/**
 * On a `resources/list` answer given before the index caught up with the
 * disk: a file changed while no server ran (or during the first scan) may be
 * missing, or listed as it was (docs/listing.md).
 */
export const CATCHING_UP_META_KEY = 'folder-mcp/catching-up';

// A type, not an interface: the handler's Result is a record.
type ListResult = {
  resources: ListItem[];
  nextCursor?: string;
  _meta?: Record<string, unknown>;
};

/**
 * Whether a page waiting on the first scan may come out otherwise if run
 * again now. Each run reads up to the page's budget of rows, and a run after
 * every commit, for each page waiting, held everything else: 48 pages with
 * globs matching nothing (each waits for the whole scan) held a ping 15.8 s
 * during a 100k scan, and tripled the scan's time (a red-team finding). A
 * page that filled, or ran out of budget, covers keys that more rows can
 * only narrow: run again once they are all in. One that ran out of rows:
 * once the index has doubled since its last run (or grown by a page, if
 * that is more), or its keys are all in. Either way, once the scan is over.
 */
function worthAnotherRun(ctx: ServerContext, plan: Plan, afterKey: string | null, page: PageResult, ranAt: number): boolean {
  if (ctx.index.readiness.state !== 'scanning' || pageSettled(ctx, plan, afterKey, page)) return true;
  return page.exhausted && ctx.index.scanned >= ranAt + Math.max(ctx.pageSize, ranAt);
}

/** True when every key the page covers is in the index for good: from the cursor (or the first range) to its last key examined, or to the last range's end when nothing is left. */
function pageSettled(ctx: ServerContext, plan: Plan, afterKey: string | null, page: PageResult): boolean {
  if (plan.ranges.length === 0) return true;
  const from = afterKey ?? plan.ranges[0]!.lo;
  const to = page.exhausted || page.lastScanned === null ? plan.ranges.at(-1)!.hi : page.lastScanned;
  return ctx.index.settled(from, to);
}

/**
 * One page of a small list held in memory (templates, tools, prompts), with
 * the same filter model and the same keyset cursors as resources/list.
 */
export function pageInMemory<T>(
  ctx: ServerContext,
  items: readonly T[],
  query: ListQuery,
  keyOf: (item: T) => string,
  matches: (item: T) => boolean,
): { items: T[]; nextCursor?: string } {
  const print = fingerprint(query);
  const afterKey = cursorKey(ctx, query, print);
  const sorted = [...items].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
  const candidates = sorted.filter((item) => (afterKey === null || keyOf(item) > afterKey) && matches(item));
  const page = candidates.slice(0, ctx.pageSize);
  if (candidates.length <= page.length) return { items: page };
  return { items: page, nextCursor: encodeCursor({ key: keyOf(page.at(-1)!), fingerprint: print }, ctx.cursorSecret) };
}

export interface ResourceTemplate {
  uriTemplate: string;
  name: string;
  title: string;
  description: string;
}

/** One `<root-uri>{+path}` template per root. */
export function resourceTemplates(ctx: ServerContext): ResourceTemplate[] {
  return ctx.roots.map((root) => ({
    uriTemplate: `${root.uri}{+path}`,
    name: root.name,
    title: `Files under ${root.name}`,
    description: `Any file or folder under ${root.path}; path is relative to that folder.`,
  }));
}

export async function listResourceTemplates(
  ctx: ServerContext,
  params: unknown,
): Promise<{ resourceTemplates: ResourceTemplate[]; nextCursor?: string }> {
  const query = parseQuery(params, 'resources/templates/list');
  const page = pageInMemory(ctx, resourceTemplates(ctx), query, (t) => t.uriTemplate, (t) => matchesTemplate(query, t));
  return { resourceTemplates: page.items, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
}
