import { EntryKind } from '../entry.ts';
import { relativeTitle } from '../resource.ts';
import { findRoot, parseFileUri, pathToUri } from '../uri.ts';
import type { ServerContext } from './context.ts';
import type { Subscriptions } from './subscriptions.ts';

/**
 * The 2026-07-28 era's resource subscriptions, read off the wire. The SDK
 * answers `subscriptions/listen` itself and delivers `updated {uri}` to a
 * stream only when `uri` is, character for character, one its
 * `resourceSubscriptions` named; it does not tell the server what is
 * listened to. So the transport shows us each listen request and each
 * cancellation, and we keep them in the connection's Subscriptions: a
 * listened collection hears of changes beneath it, and a spelling other than
 * the canonical one (`café` for `caf%C3%A9`) still hears, as with
 * `resources/subscribe`.
 */
export function trackListens(ctx: Pick<ServerContext, 'index' | 'roots'>, subscriptions: Subscriptions) {
  return (message: Record<string, unknown>): void => {
    const id = message.id;
    const params = (message.params ?? {}) as Record<string, unknown>;
    if (message.method === 'subscriptions/listen' && (typeof id === 'string' || typeof id === 'number')) {
      const wanted = (params.notifications as { resourceSubscriptions?: unknown } | undefined)?.resourceSubscriptions;
      if (!Array.isArray(wanted)) return;
      for (const spelling of wanted) {
        const canonical = canonicalListenUri(ctx, spelling);
        if (canonical) subscriptions.add(canonical.uri, canonical.title, { listen: id }, spelling as string);
      }
    } else if (message.method === 'notifications/cancelled') {
      const requestId = params.requestId;
      if (typeof requestId === 'string' || typeof requestId === 'number') subscriptions.release({ listen: requestId });
    }
  };
}

/**
 * The canonical URI a listened spelling names: the indexed entry's when
 * there is one (a folder named without its trailing slash is the folder), else
 * the lexical canonical form, so that a file created later is heard of too.
 * Nothing outside the roots.
 */
function canonicalListenUri(ctx: Pick<ServerContext, 'index' | 'roots'>, spelling: unknown): { uri: string; title: string } | null {
  const parsed = parseFileUri(spelling);
  if (!parsed) return null;
  const root = findRoot(ctx.roots, parsed.path);
  if (!root) return null;
  const store = ctx.index.store;
  const asCollection = pathToUri(parsed.path, true);
  const uri =
    store.get(pathToUri(parsed.path, parsed.trailingSlash))?.uri ??
    (!parsed.trailingSlash && store.get(asCollection)?.kind === EntryKind.collection ? asCollection : undefined) ??
    pathToUri(parsed.path, parsed.trailingSlash);
  return { uri, title: relativeTitle(uri, root) };
}
