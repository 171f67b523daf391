// TEMPORARY: replaced by the filter-model wiring.
import { toResource } from '../resource.ts';
import type { ServerContext } from './context.ts';
import { invalidParams } from './errors.ts';

export async function listResources(ctx: ServerContext, params: unknown) {
  await ctx.index.ready;
  const cursor = (params as { cursor?: unknown } | undefined)?.cursor;
  let after = '';
  if (cursor !== undefined) {
    if (typeof cursor !== 'string') throw invalidParams('Invalid cursor');
    try {
      after = Buffer.from(cursor, 'base64url').toString();
    } catch {
      throw invalidParams('Invalid cursor');
    }
    if (!after.startsWith('file:')) throw invalidParams('Invalid cursor');
  }
  const rows = ctx.index.db
    .prepare('SELECT * FROM entries WHERE uri > ? ORDER BY uri LIMIT ?')
    .all(after, ctx.pageSize + 1) as never[];
  const page = rows.slice(0, ctx.pageSize);
  const last = (page.at(-1) as { uri: string } | undefined)?.uri;
  return {
    resources: page.map((row) => toResource(row, ctx.roots)),
    ...(rows.length > ctx.pageSize && last ? { nextCursor: Buffer.from(last).toString('base64url') } : {}),
  };
}

export async function listResourceTemplates(ctx: ServerContext, _params: unknown) {
  return {
    resourceTemplates: ctx.roots.map((root) => ({
      uriTemplate: `${root.uri}{+path}`,
      name: root.name,
      title: `Files under ${root.path}`,
      description: `Any file or folder under ${root.path}; path is relative to the folder.`,
    })),
  };
}
