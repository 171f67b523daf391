import type { Stats } from 'node:fs';
import { lstat as lstatCallback, realpath as realpathCallback } from 'node:fs';
import { basename, toSlashPath } from '../fs-path.ts';
import { errnoCode } from '../errno.ts';

/**
 * How the reconciler looks at the disk: an lstat whose answer tells "there",
 * "not there" and "not allowed to look" apart, and many of them at once
 * within a bound.
 */

/** Files opened or stat'ed at once: well under any fd limit. */
export const PARALLEL_IO = 128;

/** An lstat refused for want of permission: the entry may be there (see LockedFolders). */
export const DENIED = 'denied';
/** What lstatOrDenied found: the entry, nothing there, or no permission to look. */
export type LstatResult = Stats | null | typeof DENIED;

export function isDenied(error: unknown): boolean {
  const code = errnoCode(error);
  return code === 'EACCES' || code === 'EPERM';
}

/** lstatOrNull, with a refusal for want of permission told apart from "not there". */
export function lstatOrDenied(path: string): Promise<LstatResult> {
  return new Promise((resolve) => lstatCallback(path, (error, stats) => resolve(error ? (isDenied(error) ? DENIED : null) : stats)));
}

/**
 * lstatOrDenied where names fold (Windows, macOS), for a path a look was
 * given: there an lstat finds an entry by any spelling of its name, and a
 * look at `Docs` after it was renamed `docs` found it still, so both were
 * listed (a red-team pass). A file or folder whose name is spelled otherwise
 * on disk (realpath(3) spells it as the disk does) is not there by this name.
 */
export async function lstatSpelledOrDenied(path: string): Promise<LstatResult> {
  const st = await lstatOrDenied(path);
  if (st === null || st === DENIED || !(st.isFile() || st.isDirectory())) return st;
  // macOS's realpath(3) may spell a hard-linked file by another of its names (the last one looked up).
  if (st.isFile() && st.nlink > 1) return st;
  return new Promise((resolve) =>
    // A path realpath cannot spell (a long one under Wine) is taken as the lstat found it.
    realpathCallback.native(path, (error, real) => resolve(error || basename(toSlashPath(real)) === basename(path) ? st : null)),
  );
}

/** lstatEntry (the scan's), with a refusal for want of permission told apart. */
export function lstatEntryOrDenied(path: string): Promise<Stats | null | 'deep' | typeof DENIED> {
  return new Promise((resolve) =>
    lstatCallback(path, (error, stats) => resolve(error ? (isDenied(error) ? DENIED : errnoCode(error) === 'ENAMETOOLONG' ? 'deep' : null) : stats)),
  );
}

/** Gone (or unreachable) is null: the caller treats it as not there. Callback lstat: measurably cheaper than fs/promises per call. */
export function lstatOrNull(path: string): Promise<Stats | null> {
  return new Promise((resolve) => lstatCallback(path, (error, stats) => resolve(error ? null : stats)));
}

/** `fn` over items, at most PARALLEL_IO at a time, results in order. */
export async function mapLimited<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  for (let start = 0; start < items.length; start += PARALLEL_IO) {
    const chunk = items.slice(start, start + PARALLEL_IO);
    const results = await Promise.all(chunk.map(fn));
    for (let i = 0; i < results.length; i++) out[start + i] = results[i]!;
  }
  return out;
}
