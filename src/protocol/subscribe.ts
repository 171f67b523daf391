import { lookupEntry } from '../index/lookup.ts';
import { toResource } from '../resource.ts';
import { findEntry, uriParam } from './read.ts';
import type { ServerContext } from './context.ts';
import { parseFileUri, pathToUri } from '../uri.ts';
import type { Subscriptions } from './subscriptions.ts';

/**
 * `resources/subscribe`: any document or collection the index has, named as
 * read names it (canonicalised, symlinks per --follow-symlinks). Stored under
 * its canonical URI, which is the URI `updated` carries. Unknown: -32002.
 * Subscribing twice is one subscription.
 */
export async function subscribeResource(
  ctx: ServerContext,
  subscriptions: Subscriptions,
  params: unknown,
): Promise<Record<string, never>> {
  const entry = await findEntry(ctx, uriParam(params));
  subscriptions.add(entry.uri, toResource(entry, ctx.roots).title);
  return {};
}

/**
 * `resources/unsubscribe`: harmless for a URI never subscribed. The resource
 * may be gone by now, so the URI is also matched lexically, in both its
 * document and collection spellings.
 */
export async function unsubscribeResource(
  ctx: ServerContext,
  subscriptions: Subscriptions,
  params: unknown,
): Promise<Record<string, never>> {
  const uri = uriParam(params);
  const parsed = parseFileUri(uri);
  if (parsed) {
    if (!parsed.trailingSlash) subscriptions.delete(pathToUri(parsed.path, false));
    subscriptions.delete(pathToUri(parsed.path, true));
  }
  if (ctx.index.readiness.state !== 'scanning') {
    const entry = await lookupEntry(uri, { store: ctx.index.store, roots: ctx.roots, followSymlinks: ctx.followSymlinks });
    if (entry) subscriptions.delete(entry.uri);
  }
  return {};
}
