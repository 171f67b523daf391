import { foldName, foldsNames } from '../fs-path.ts';
import { parseFileUri, pathToUri, resolveUri, type Root } from '../uri.ts';
import type { EntryRow } from '../entry.ts';
import type { Store } from './store.ts';

export interface LookupContext {
  store: Store;
  roots: readonly Root[];
  followSymlinks: boolean;
  /**
   * Whether the volumes ignore case and Unicode normalization (Windows and
   * macOS by default; default: this platform's): a URI spelled otherwise
   * than the disk spells it then names the file all the same.
   */
  foldsNames?: boolean;
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
  if (direct) return direct;
  if (ctx.followSymlinks) {
    const resolved = await resolveUri(input, ctx.roots);
    return resolved ? ctx.store.get(resolved.uri) : undefined;
  }
  if (!(ctx.foldsNames ?? foldsNames())) return undefined;
  // `SRC/Main.TS` for `src/main.ts` on such a volume: realpath spells it as on disk, and the index has that
  // spelling. Only a difference of spelling is taken: a path that realpath sends elsewhere (through a link) is not
  // followed without --follow-symlinks.
  const resolved = await resolveUri(input, ctx.roots);
  if (!resolved || foldName(resolved.path) !== foldName(parsed.path)) return undefined;
  return ctx.store.get(resolved.uri);
}
