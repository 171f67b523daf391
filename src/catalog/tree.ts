// The `tree` tool: a bounded outline of a collection, depth-first in URI order.
// Never the whole tree: a depth cap and an entry cap, and for every folder
// whose children were not all shown, how many were left out.
import { echo } from '../protocol/errors.ts';
import { z } from 'zod';
import { EntryKind, type EntryRow } from '../entry.ts';
import type { ServerContext } from '../protocol/context.ts';
import { listingName } from '../content/collection.ts';
import { displayPath, resolveTarget } from './paths.ts';
import { formatSize, resourceLink, ToolFailure, type ToolDefinition } from './tool.ts';

export const TREE_DEFAULT_DEPTH = 2;
export const TREE_MAX_DEPTH = 10;
export const TREE_DEFAULT_ENTRIES = 200;
export const TREE_MAX_ENTRIES = 2000;

const input = z.strictObject({
  uri: z
    .string()
    .optional()
    .describe('The folder to outline: a file:// URI or a path relative to a served folder. Default: every served folder.'),
  depth: z.number().int().min(1).max(TREE_MAX_DEPTH).default(TREE_DEFAULT_DEPTH).describe('Levels below the folder to show.'),
  maxEntries: z
    .number()
    .int()
    .min(1)
    .max(TREE_MAX_ENTRIES)
    .default(TREE_DEFAULT_ENTRIES)
    .describe(`At most this many entries in all (max ${TREE_MAX_ENTRIES}).`),
});

const node = z.object({
  uri: z.string(),
  path: z.string(),
  depth: z.number().describe('1 = a direct child of the outlined folder (0 = the folder itself)'),
  type: z.enum(['document', 'collection']),
  size: z.number().optional(),
  children: z.number().optional().describe('folders: how many direct children it has'),
  hidden: z.number().optional().describe('folders: how many of those children are not in this outline (depth or entry cap)'),
});

const output = z.object({
  entries: z.array(node),
  truncated: z.boolean().describe('true when the entry cap stopped the outline before the depth limit'),
});

export const treeTool: ToolDefinition<z.infer<typeof input>> = {
  name: 'tree',
  title: 'Outline a folder',
  description:
    `A bounded outline of a folder (default: the served folders): ${TREE_DEFAULT_DEPTH} levels and ${TREE_DEFAULT_ENTRIES} entries by default, ` +
    'with the number of entries left out of every folder that was cut. Use it to get oriented, then find or read.',
  input,
  output,
  async run(tc, args) {
    const { ctx } = tc;
    let tops: EntryRow[];
    if (args.uri === undefined) {
      tops = ctx.roots.map((root) => ctx.index.store.get(root.uri)).filter((row): row is EntryRow => row !== undefined);
    } else {
      const entry = await resolveTarget(ctx, args.uri);
      if (!entry) throw new ToolFailure(`Not found: ${String(echo(args.uri))} (not a folder in the served folders)`);
      if (entry.kind !== EntryKind.collection) throw new ToolFailure(`${String(echo(args.uri))} is a file, not a folder: use read`);
      tops = [entry];
    }
    const outline = new Outline(ctx, args.maxEntries, args.depth);
    for (const top of tops) outline.visit(top, 0);
    const text = outline.lines.join('\n') + (outline.truncated ? `\n(cut at ${args.maxEntries} entries: outline a subfolder, or raise maxEntries)` : '');
    return {
      content: [{ type: 'text', text }, ...tops.map((row) => resourceLink(row, ctx))],
      structuredContent: { entries: outline.entries, truncated: outline.truncated },
    };
  },
};

class Outline {
  readonly entries: z.infer<typeof node>[] = [];
  readonly lines: string[] = [];
  truncated = false;

  constructor(
    private readonly ctx: ServerContext,
    private readonly maxEntries: number,
    private readonly maxDepth: number,
  ) {}

  /** A top line names the entry as read accepts it; below, its name: one line each, controls escaped. */
  private nameOf(row: EntryRow, depth: number): string {
    return depth === 0 ? displayPath(row, this.ctx.roots) : listingName(row.name);
  }

  /** Adds `row` at `depth`, then (depth allowing) its children while the cap allows. */
  visit(row: EntryRow, depth: number): void {
    const indent = '  '.repeat(depth);
    if (row.kind === EntryKind.document) {
      this.entries.push({ uri: row.uri, path: displayPath(row, this.ctx.roots), depth, type: 'document', size: row.size });
      this.lines.push(`${indent}${this.nameOf(row, depth)}  ${formatSize(row.size)}`);
      return;
    }
    const store = this.ctx.index.store;
    const count = store.countChildren(row.uri);
    const item: z.infer<typeof node> = { uri: row.uri, path: displayPath(row, this.ctx.roots), depth, type: 'collection', children: count };
    this.entries.push(item);
    const line = this.lines.push(`${indent}${this.nameOf(row, depth)}/`) - 1;
    let shown = 0;
    if (depth < this.maxDepth) {
      // Only as many children as the cap can still take: never more than that from the index.
      const room = this.maxEntries - this.entries.length;
      const children = room > 0 ? store.children(row.uri, '', room) : [];
      for (const child of children) {
        if (this.entries.length >= this.maxEntries) break;
        this.visit(child, depth + 1);
        shown++;
      }
      if (shown < count) this.truncated = true;
    }
    const hidden = count - shown;
    if (hidden > 0) {
      item.hidden = hidden;
      this.lines[line] += `  (${hidden} of ${count} entries not shown)`;
    }
  }
}
