import { parseFileUri, pathToUri, resolveUri, type Root } from '../uri.ts';
import type { EntryRow } from '../entry.ts';
import type { Store } from './store.ts';

export interface LookupContext {
  store: Store;
  roots: readonly Root[];
  followSymlinks: boolean;
}

/**
 * Finds the indexed entry a client URI names, or undefined. Security: the
 * index holds only real paths inside the roots that the ignore rules admit,
 * so membership is containment; a URI outside, through a link out of a root,
 * ignored, or missing all look the same to the caller.
 */
export async function lookupEntry(input: unknown, ctx: LookupContext): Promise<EntryRow | undefined> {
  const parsed = parseFileUri(input);
  if (!parsed) return undefined;
  // `file:///r/src` and `file:///r/src/` both name the collection; a trailing
  // slash never names a document.
  const direct =
    ctx.store.get(pathToUri(parsed.path, parsed.trailingSlash)) ??
    (parsed.trailingSlash ? undefined : ctx.store.get(pathToUri(parsed.path, true)));
  if (direct || !ctx.followSymlinks) return direct;
  const resolved = await resolveUri(input, ctx.roots);
  return resolved ? ctx.store.get(resolved.uri) : undefined;
}
