// The `find` tool: globs and/or a prefix over the index, in URI order, a page
// at a time. The same filter model and keyset pager as resources/list; the
// continuation token is a signed keyset cursor bound to the arguments.
import { z } from 'zod';
import { EntryKind } from '../entry.ts';
import { CursorError, decodeCursor, encodeCursor } from '../protocol/cursor.ts';
import { fingerprint } from '../query/filter.ts';
import { planQuery } from '../query/plan.ts';
import { toResource } from '../resource.ts';
import { scopeQuery } from './scope.ts';
import { asList, formatSize, resourceLink, stringOrList, ToolFailure, type ToolDefinition } from './tool.ts';
import { displayPath } from './paths.ts';

export const FIND_DEFAULT_LIMIT = 100;
export const FIND_MAX_LIMIT = 1000;
/** Rows one pager call may examine: a selective glob over a huge tree returns a short page and a token, not a long scan. */
const SCAN_BUDGET = 50_000;
const MAX_ROUNDS = 8;

const input = z.strictObject({
  glob: stringOrList(
    'Glob(s) on the path relative to a served folder, OR-ed: `**/*.ts`, `src/*.md`, `docs/**`. ' +
      '`*` and `?` stay within one path segment, `**` crosses folders, `{a,b}` and `[abc]` work. A glob starting with `file:` matches whole URIs.',
  ),
  name: stringOrList('Glob(s) on the file or folder name only, OR-ed: `*.test.ts`, `README*`.'),
  prefix: z.string().optional().describe('Only paths starting with this text (relative to a served folder, e.g. `src/ut`), or a URI prefix.'),
  type: z.enum(['document', 'collection', 'any']).default('any').describe('Only files (`document`), only folders (`collection`), or both.'),
  limit: z.number().int().min(1).max(FIND_MAX_LIMIT).default(FIND_DEFAULT_LIMIT).describe(`At most this many results (max ${FIND_MAX_LIMIT}).`),
  cursor: z.string().optional().describe('The `nextCursor` of a previous call with the same arguments, to continue.'),
});

const match = z.object({
  uri: z.string(),
  path: z.string(),
  type: z.enum(['document', 'collection']),
  mimeType: z.string(),
  size: z.number().optional(),
  lastModified: z.string(),
});

const output = z.object({
  matches: z.array(match),
  nextCursor: z.string().optional().describe('Pass back as `cursor` to get more; absent when there are no more.'),
});

export const findTool: ToolDefinition<z.infer<typeof input>> = {
  name: 'find',
  title: 'Find files',
  description:
    'Find files and folders in the served folders by glob, name glob and/or path prefix. Results are in path (URI) order, ' +
    `at most \`limit\` (default ${FIND_DEFAULT_LIMIT}) per call, with a \`nextCursor\` to continue. Fast: answered from the index, not the disk.`,
  input,
  output,
  async run(tc, args) {
    const { ctx } = tc;
    const query = scopeQuery({ glob: asList(args.glob), name: asList(args.name), prefix: args.prefix }, ctx.roots);
    // The type filter is part of what the cursor is bound to, beside the list filter.
    const print = `find:${args.type}:${fingerprint(query)}`;
    let after: string | null = null;
    if (args.cursor !== undefined) {
      try {
        after = decodeCursor(args.cursor, ctx.cursorSecret, print);
      } catch (error) {
        if (error instanceof CursorError) throw new ToolFailure(`${error.message}: pass the nextCursor of a call with the same arguments`);
        throw error;
      }
    }
    const plan = planQuery(query);
    const wanted = args.type === 'any' ? null : args.type === 'document' ? EntryKind.document : EntryKind.collection;
    const rows = [];
    let exhausted = false;
    // A type filter drops rows after the pager: ask again, a bounded number of times.
    for (let round = 0; round < MAX_ROUNDS && rows.length < args.limit; round++) {
      const want = args.limit - rows.length;
      const page = ctx.pager.listPage(plan, after, want, SCAN_BUDGET);
      for (const row of page.rows) if (wanted === null || row.kind === wanted) rows.push(row);
      if (page.lastScanned !== null) after = page.lastScanned;
      if (page.exhausted) {
        exhausted = true;
        break;
      }
      if (page.rows.length < want) break; // the scan budget ran out: a short page and a token
    }
    const matches = rows.map((row) => {
      const r = toResource(row, ctx.roots);
      return {
        uri: r.uri,
        path: displayPath(row, ctx.roots),
        type: r.resourceType,
        mimeType: r.mimeType,
        ...(r.size !== undefined ? { size: r.size } : {}),
        lastModified: r.annotations.lastModified,
      };
    });
    const nextCursor = !exhausted && after !== null ? encodeCursor({ key: after, fingerprint: print }, ctx.cursorSecret) : undefined;
    const lines = matches.map((m) => (m.type === 'collection' ? `${m.path}/` : `${m.path}\t${formatSize(m.size ?? 0)}`));
    const summary =
      (matches.length === 0 ? 'No matches.' : `${matches.length} match${matches.length === 1 ? '' : 'es'}:\n${lines.join('\n')}`) +
      (nextCursor ? `\nMore results: call find again with the same arguments and cursor "${nextCursor}".` : '');
    return {
      content: [{ type: 'text', text: summary }, ...rows.map((row) => resourceLink(row, ctx))],
      structuredContent: { matches, ...(nextCursor ? { nextCursor } : {}) },
    };
  },
};
