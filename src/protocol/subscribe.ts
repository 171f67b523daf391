import { lookupEntry } from '../index/lookup.ts';
import { toResource } from '../resource.ts';
import { findEntry, uriParam } from './read.ts';
import type { ServerContext } from './context.ts';
import { parseFileUri, pathToUri } from '../uri.ts';
import type { Subscriptions } from './subscriptions.ts';
import { invalidParams } from './errors.ts';
import { MAX_LISTEN_URIS } from './listen.ts';

/**
 * URIs one client may hold through `resources/subscribe`, as one listen
 * stream may name (MAX_LISTEN_URIS): each costs about 1.7 KB, and 20
 * sessions that each subscribed to 2,000 files took 65 MiB, with nothing to
 * stop 1,000 sessions on a large tree (a red-team finding). A folder hears of
 * everything beneath it.
 */
export const MAX_SUBSCRIBED_URIS = MAX_LISTEN_URIS;

/**
 * `resources/subscribe`: any document or collection the index has, named as
 * read names it (canonicalised, symlinks per --follow-symlinks). Stored under
 * its canonical URI, which is the URI `updated` carries. Unknown: -32002.
 * Subscribing twice is one subscription; past MAX_SUBSCRIBED_URIS, -32602.
 */
export async function subscribeResource(
  ctx: ServerContext,
  subscriptions: Subscriptions,
  params: unknown,
): Promise<Record<string, never>> {
  const entry = await findEntry(ctx, uriParam(params));
  const held = subscriptions.heldBy('subscribe');
  if (!held.has(entry.uri) && held.size >= MAX_SUBSCRIBED_URIS) {
    throw invalidParams(`Too many subscriptions: at most ${MAX_SUBSCRIBED_URIS} URIs (subscribe to a folder: it hears of everything beneath it)`, { uri: entry.uri });
  }
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
