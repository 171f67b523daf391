// Opening a file the index names so that what is read is that file: reached
// without following any symlink, inside a served root, and a regular file.
// The index is a snapshot and the disk moves on: `git checkout` can turn a
// folder into a symlink to ~/.ssh, a file can become a FIFO. O_NOFOLLOW guards
// only the last path component, so every byte the server reads from a served
// folder (resources/read, the read tool, conversions, the content index) comes
// through openVerified, which checks the open descriptor itself.
import { constants, fstatSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { findRoot, type Root } from '../uri.ts';
import { ContentError } from './content-error.ts';
import { errnoCode } from '../errno.ts';
import {
  factsOf,
  kernelPathOf,
  KIND_TEXT,
  realOrNull,
  realOrNullSoon,
  refuse as refuseWith,
  statOrNull,
  type Absence,
  type FileFacts,
  type FileKind,
  type Refusal,
  type Verdict as VerdictOf,
} from './file-facts.ts';

export type Verdict = VerdictOf<'not-found' | 'unreadable'>;

/** The facts about one open attempt that judgeOpen decides on. */
export interface OpenFacts {
  /** The path the index names. URIs are real paths, so it has no symlink in it while the disk matches the index. */
  path: string;
  /** fstat of the open descriptor; null when open failed (then `openError` is its errno code). */
  opened: FileFacts | null;
  openError?: string;
  /**
   * Where the file really is: the kernel's name for the descriptor (/proc/self/fd/N), or,
   * where there is none, realpath(path). Null when it does not resolve.
   */
  locatedPath: string | null;
  /** stat of locatedPath (for the kernel's name, the fstat itself); null when unknown. */
  located: FileFacts | null;
}

const OK: Verdict = { ok: true };
const GONE_CODES = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'ENAMETOOLONG']);

function notFound(message: string): Verdict {
  return { ok: false, reason: 'not-found', message };
}

function notRegular(kind: Exclude<FileKind, 'file'>): Verdict {
  // A folder where the index had a document: the document is gone.
  if (kind === 'directory') return notFound('no longer a file');
  return { ok: false, reason: 'unreadable', message: `Cannot read resource: it is ${KIND_TEXT[kind]}, not a regular file` };
}

/**
 * May `path` be opened? Its real path must be the path itself (a component
 * that became a symlink changes it) and inside a served root. Every failure is
 * not-found: never tell a client what lies outside the roots.
 */
export function judgePath(path: string, realPath: string | null, roots: readonly Pick<Root, 'path'>[]): Verdict {
  if (realPath === null) return notFound('file vanished');
  if (realPath !== path) return notFound('the path now goes through a symlink');
  // Security: findRoot compares whole segments (no sibling-prefix trap) and fails closed on unnormalised paths.
  if (findRoot(roots as Root[], realPath) === undefined) return notFound('outside the served folders');
  return OK;
}

/** Is what was opened (or failed to open) the regular file the index names, inside a root? */
export function judgeOpen(facts: OpenFacts, roots: readonly Pick<Root, 'path'>[]): Verdict {
  if (facts.openError !== undefined && GONE_CODES.has(facts.openError)) return notFound('file vanished');
  if (facts.located === null) return notFound('file vanished');
  const where = judgePath(facts.path, facts.locatedPath, roots);
  if (!where.ok) return where;
  if (facts.opened === null) {
    // Ours, but open refused it: a socket (ENXIO), or no permission.
    if (facts.located.kind !== 'file') return notRegular(facts.located.kind);
    return { ok: false, reason: 'unreadable', message: `Cannot read resource: ${facts.openError ?? 'open failed'}` };
  }
  // Security: the descriptor must be the very file found at the path; a swap between open and the look-up shows here.
  if (facts.opened.dev !== facts.located.dev || facts.opened.ino !== facts.located.ino) {
    return notFound('the file was replaced while it was opened');
  }
  if (facts.opened.kind !== 'file') return notRegular(facts.opened.kind);
  return OK;
}

/** A verified, open regular file. The caller closes `handle`. */
export interface OpenedFile {
  handle: FileHandle;
  /** Size and mtime from fstat of the handle, at open. */
  size: number;
  mtimeMs: number;
}

/**
 * Opens the file at `path` (a path from the index) for reading, or throws a
 * ContentError: not-found when it vanished, or is no longer reached without a
 * symlink inside a served root; unreadable for a FIFO, socket or device.
 *
 * Security: O_NOFOLLOW for the last component; O_NONBLOCK so that opening a
 * FIFO returns at once instead of holding a libuv pool thread (and with it
 * every other read) until a writer comes; then the descriptor is checked, not
 * the path: on Linux by the kernel's own name for it, which a concurrent swap
 * cannot fake; elsewhere by realpath plus equal device and inode.
 */
export async function openVerified(path: string, roots: readonly Root[]): Promise<OpenedFile> {
  // Checked before opening as well, so a folder that is a symlink for good
  // never has anything outside opened (opening a FIFO or a device has effects
  // of its own). Racy alone; the check after opening is what holds.
  refuse(judgePath(path, await realOrNullSoon(path, READ_ABSENCE), roots));
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = errnoCode(error);
    const locatedPath = code !== undefined && GONE_CODES.has(code) ? null : realOrNull(path, READ_ABSENCE);
    const located = locatedPath === null ? null : await statFactsOrNull(locatedPath);
    // With the open's errno: a file another program holds (EBUSY) is read again later by the content index.
    refuse(judgeOpen({ path, opened: null, openError: code ?? (error as Error).message, locatedPath, located }, roots), code);
    throw unreadable(error); // not reached: a failed open never judges ok
  }
  try {
    return { handle, ...(await verifyDescriptor(handle, path, roots)) };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * The check after opening, on the descriptor: it must be a regular file whose
 * own location is `path`, inside a root. Throws a ContentError otherwise.
 * Exported for tests, which open through a link on purpose to exercise it.
 */
export async function verifyDescriptor(handle: FileHandle, path: string, roots: readonly Root[]): Promise<Omit<OpenedFile, 'handle'>> {
  try {
    // Synchronous, like the /proc readlink below: an fstat of an open descriptor
    // is answered from memory, and each await would be one more trip through
    // libuv's pool and the event loop, which under load is what a read waits for.
    const stats = fstatSync(handle.fd, { bigint: true });
    const opened = factsOf(stats);
    // The kernel's own name for the descriptor, which a concurrent swap cannot fake (a deleted file's, "<path> (deleted)",
    // matches no index path: vanished); without /proc, realpath stands in, checked by device and inode.
    const kernelName = kernelPathOf(handle.fd);
    const locatedPath = kernelName ?? realOrNull(path, READ_ABSENCE);
    const located = kernelName !== null ? opened : locatedPath === null ? null : await statFactsOrNull(locatedPath);
    refuse(judgeOpen({ path, opened, locatedPath, located }, roots));
    const mtimeMs = Number(stats.mtimeNs / 1_000_000n) + Number(stats.mtimeNs % 1_000_000n) / 1e6;
    return { size: Number(stats.size), mtimeMs };
  } catch (error) {
    throw error instanceof ContentError ? error : unreadable(error);
  }
}

function refuse(verdict: Verdict, code?: string): void {
  refuseWith(verdict, (refusal: Refusal<'not-found' | 'unreadable'>) => new ContentError(refusal.reason, refusal.message, code === undefined ? {} : { code }));
}

/**
 * A read's look-ups: a path that is gone, loops, or may not be looked at
 * leads nowhere (not-found: never tell a client more); any other failure
 * makes the read unreadable.
 */
const READ_ABSENCE: Absence = {
  absent: (error) => {
    const code = errnoCode(error);
    return code !== undefined && (GONE_CODES.has(code) || code === 'EACCES' || code === 'EPERM');
  },
  fail: unreadable,
};

async function statFactsOrNull(path: string): Promise<FileFacts | null> {
  const stats = await statOrNull(path, READ_ABSENCE);
  return stats === null ? null : factsOf(stats);
}

function unreadable(error: unknown): ContentError {
  const code = errnoCode(error);
  return new ContentError('unreadable', `Cannot read resource: ${code ?? (error as Error).message}`, { code });
}
