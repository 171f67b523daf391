import { EntryKind } from '../entry.ts';
import { relativeTitle } from '../resource.ts';
import type { TurnBudget } from '../turns.ts';
import { findRoot, parseFileUri, pathToUri } from '../uri.ts';
import type { ServerContext } from './context.ts';
import { ErrorCode } from './errors.ts';
import type { Subscriptions } from './subscriptions.ts';
import { errorResponse, PROTOCOL_VERSION_META_KEY, type ErrorResponse } from './wire.ts';

/**
 * Most URIs one `subscriptions/listen` may name. Every URI a stream names is
 * matched by the SDK against every event published, and each change
 * publishes one event per listened spelling it concerns: without a bound,
 * one request of 30,000 spellings of the root (`file:///r/1/../`, inside the
 * 1 MiB body) cost 2 s of CPU per change with one stream and 38.7 s with
 * four, and 50 such streams held 1.3 GB. A larger listen is refused whole.
 */
export const MAX_LISTEN_URIS = 1000;

const MODERN_REVISION = '2026-07-28';

/**
 * On stdio, MAX_LISTEN_URIS is also the most one connection's open listens
 * may name together: the SDK matches each change against every stream's
 * list, so K streams of 1,000 cost K times one, and one client's 40 held a
 * ping 11.7 s after an `rm -rf` of the folder they named (100: 71.8 s; a
 * red-team finding). Over HTTP each stream is its own client's
 * (HttpListeners), bounded per stream.
 *
 * The 2026-07-28 era's resource subscriptions, read off the wire. The SDK
 * answers `subscriptions/listen` itself and delivers `updated {uri}` to a
 * stream only when `uri` is, character for character, one its
 * `resourceSubscriptions` named; it does not tell the server what is
 * listened to. So the transport shows us each listen request (before the
 * SDK sees it) and each cancellation, and we keep them in the connection's
 * Subscriptions: a listened collection hears of changes beneath it, and a
 * spelling other than the canonical one (`café` for `caf%C3%A9`) still
 * hears, as with `resources/subscribe`.
 *
 * Bounded: a listen naming more than MAX_LISTEN_URIS is refused (the
 * returned error is sent instead of passing the request on); the spellings
 * that name one resource fold to the first of them, and URIs outside the
 * roots are dropped, in the request itself, so the SDK's own filter holds
 * at most one spelling per resource and each change is published once per
 * resource. Nothing is kept for a listen the SDK will refuse for its era (no
 * 2026-07-28 envelope: a 2025 session answers "Method not found").
 */
export function trackListens(ctx: Pick<ServerContext, 'index' | 'roots'>, subscriptions: Subscriptions) {
  const canonical = canonicalListenUris(ctx);
  return (message: Record<string, unknown>): ErrorResponse | undefined => {
    const listen = listenRequest(message);
    if (listen && 'refused' in listen) return listen.refused;
    if (listen) {
      const held = subscriptions.listened({ listen: listen.id });
      if (held + listen.wanted.length > MAX_LISTEN_URIS) {
        return errorResponse(
          listen.id,
          ErrorCode.InvalidParams,
          `Too many resourceSubscriptions on this connection: ${held} named by its open listen streams and ${listen.wanted.length} asked exceeds maximum of ${MAX_LISTEN_URIS} (listen to a folder: it hears of everything beneath it)`,
        );
      }
      // An id used again replaces its stream's filter in the SDK: the URIs of the one it replaces go.
      subscriptions.release({ listen: listen.id });
      foldListen(canonical, subscriptions, listen, 0, listen.wanted.length);
    } else releaseOnCancel(message, subscriptions);
    return undefined;
  };
}

/** URIs folded at a time by trackListensInTurns (about half a millisecond). */
const FOLD_SLICE = 25;

/**
 * trackListens for a server of many clients (HTTP): the URIs of a listen are
 * folded a slice at a time within the server's TurnBudget, so that 50
 * listens of 1,000 URIs arriving together do not hold every other client's
 * request. Resolves once the request is folded: the caller passes it on to
 * the SDK after.
 */
export function trackListensInTurns(ctx: Pick<ServerContext, 'index' | 'roots'>, subscriptions: Subscriptions, turns: TurnBudget) {
  const canonical = canonicalListenUris(ctx);
  return async (message: Record<string, unknown>): Promise<ErrorResponse | undefined> => {
    const listen = listenRequest(message);
    if (listen && 'refused' in listen) return listen.refused;
    if (!listen) {
      releaseOnCancel(message, subscriptions);
      return undefined;
    }
    for (let from = 0; from < listen.wanted.length; from += FOLD_SLICE) {
      await turns.slice();
      foldListen(canonical, subscriptions, listen, from, Math.min(from + FOLD_SLICE, listen.wanted.length));
    }
    return undefined;
  };
}

interface ListenRequest {
  id: string | number;
  wanted: string[];
  notifications: { resourceSubscriptions?: unknown };
  /** Canonical URIs folded so far, and the spellings kept. */
  seen: Set<string>;
  folded: string[];
}

/** A listen worth tracking (or refused for its size); undefined for anything else, which the SDK answers as it will. */
function listenRequest(message: Record<string, unknown>): ListenRequest | { refused: ErrorResponse } | undefined {
  const id = message.id;
  const params = (message.params ?? {}) as Record<string, unknown>;
  if (message.method !== 'subscriptions/listen' || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
  if (!carriesModernEnvelope(params)) return undefined;
  const notifications = params.notifications as { resourceSubscriptions?: unknown } | undefined;
  const wanted = notifications?.resourceSubscriptions;
  // Not a list of strings: the SDK refuses it (-32602); nothing to keep.
  if (!Array.isArray(wanted) || !wanted.every((u) => typeof u === 'string')) return undefined;
  if (wanted.length > MAX_LISTEN_URIS) {
    return {
      refused: errorResponse(
        id,
        ErrorCode.InvalidParams,
        `Too many resourceSubscriptions: ${wanted.length} exceeds maximum of ${MAX_LISTEN_URIS} (open several listen streams, or listen to a folder: it hears of everything beneath it)`,
      ),
    };
  }
  return { id, wanted: wanted as string[], notifications: notifications!, seen: new Set(), folded: [] };
}

/** Folds wanted[from, to) into the connection's subscriptions, and the request's list to the spellings kept so far. */
function foldListen(canonicalOf: Canonicalizer, subscriptions: Subscriptions, listen: ListenRequest, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    const spelling = listen.wanted[i]!;
    const canonical = canonicalOf(spelling);
    if (!canonical || listen.seen.has(canonical.uri)) continue;
    listen.seen.add(canonical.uri);
    listen.folded.push(spelling);
    subscriptions.add(canonical.uri, canonical.title, { listen: listen.id }, spelling);
  }
  // In place: the SDK reads the same object after us (stdio transport, HTTP parsed body).
  listen.notifications.resourceSubscriptions = listen.folded;
}

function releaseOnCancel(message: Record<string, unknown>, subscriptions: Subscriptions): void {
  if (message.method !== 'notifications/cancelled') return;
  const requestId = ((message.params ?? {}) as Record<string, unknown>).requestId;
  if (typeof requestId === 'string' || typeof requestId === 'number') subscriptions.release({ listen: requestId });
}

/**
 * A 2026-07-28 request: its `_meta` names the protocol revision the SDK
 * serves listens on (it serves nothing else one, and exports no list of
 * such revisions: a new one is added here when the SDK serves it). Any
 * revision sorting after it counted, `2999-01-01` too, which the SDK refuses.
 */
function carriesModernEnvelope(params: Record<string, unknown>): boolean {
  const meta = params._meta;
  if (typeof meta !== 'object' || meta === null) return false;
  return (meta as Record<string, unknown>)[PROTOCOL_VERSION_META_KEY] === MODERN_REVISION;
}

type Canonicalizer = (spelling: string) => { uri: string; title: string } | null;

/** Spellings remembered by canonicalListenUris at most; past it the memory starts over. */
const CANONICAL_CACHE_MAX = 20_000;

/**
 * canonicalListenUri, remembered while the index is unchanged: many clients
 * listen to the same files (in bench attack 7, 50 listens of 1,000 URIs name
 * 1,500 files, and folding them was 0.7 s of CPU, two thirds of it parsing
 * the URI and looking it up in the index, once per spelling per listen).
 * Any write to the index forgets it all: a spelling's answer depends on what
 * is indexed (a name without its trailing slash is the folder when there is
 * one).
 */
function canonicalListenUris(ctx: Pick<ServerContext, 'index' | 'roots'>): Canonicalizer {
  const known = new Map<string, { uri: string; title: string } | null>();
  let at = -1;
  return (spelling) => {
    const writes = ctx.index.writes;
    if (writes !== at || known.size >= CANONICAL_CACHE_MAX) {
      known.clear();
      at = writes;
    }
    let canonical = known.get(spelling);
    if (canonical === undefined) {
      canonical = canonicalListenUri(ctx, spelling);
      known.set(spelling, canonical);
    }
    return canonical;
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
