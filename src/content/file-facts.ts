// What the verified open (safe-open.ts) and the safe writes (safe-write.ts)
// learn of a path from the file system, in one vocabulary: the kind of an
// entry, its identity, a verdict and its refusal, and the look-ups that
// return null when the path leads nowhere. Which failures count as "nowhere"
// differs between a read and a write, and is security policy: each caller
// names it (an `Absence`) instead of each module keeping its own copy of the
// same try/catch.
import { lstatSync, readlinkSync, realpathSync, statSync, type BigIntStats } from 'node:fs';
import { lstat, realpath, stat } from 'node:fs/promises';
import { toSlashPath } from '../fs-path.ts';

export type FileKind = 'file' | 'directory' | 'FIFO' | 'socket' | 'character device' | 'block device' | 'symlink' | 'unknown';

/** A kind as a message says it: "it is a FIFO (named pipe), not a regular file". */
export const KIND_TEXT: Record<FileKind, string> = {
  file: 'a file',
  directory: 'a folder',
  FIFO: 'a FIFO (named pipe)',
  socket: 'a socket',
  'character device': 'a character device',
  'block device': 'a block device',
  symlink: 'a symlink',
  unknown: 'not a regular file',
};

type StatsLike = Pick<BigIntStats, 'isFile' | 'isDirectory' | 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice' | 'isSymbolicLink'>;

export function kindOf(stats: StatsLike): FileKind {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isFIFO()) return 'FIFO';
  if (stats.isSocket()) return 'socket';
  if (stats.isCharacterDevice()) return 'character device';
  if (stats.isBlockDevice()) return 'block device';
  if (stats.isSymbolicLink()) return 'symlink';
  return 'unknown';
}

/** What a decision needs from a stat: identity and kind. */
export interface FileFacts {
  dev: bigint;
  ino: bigint;
  kind: FileKind;
}

export function factsOf(stats: BigIntStats): FileFacts {
  return { dev: stats.dev, ino: stats.ino, kind: kindOf(stats) };
}

/** A judgement's no, with the reason the caller's error carries. */
export interface Refusal<Reason extends string> {
  ok: false;
  reason: Reason;
  message: string;
}

/** A judgement: yes (with what the yes found, `Found`) or a refusal. */
export type Verdict<Reason extends string, Found extends object = object> = ({ ok: true } & Found) | Refusal<Reason>;

/** Throws the caller's error for a refusal; a yes (or no judgement, null) passes. */
export function refuse<Reason extends string>(verdict: { ok: true } | Refusal<Reason> | null, toError: (refusal: Refusal<Reason>) => Error): void {
  if (verdict !== null && !verdict.ok) throw toError(verdict);
}

/** How a look-up's failure is read: the errors that mean the path leads nowhere (null), and what the others are thrown as. */
export interface Absence {
  absent(error: unknown): boolean;
  /** Default: the error itself. */
  fail?(error: unknown): Error;
}

function lookOrNull<T>(look: () => T, absence: Absence): T | null {
  try {
    return look();
  } catch (error) {
    if (absence.absent(error)) return null;
    throw absence.fail ? absence.fail(error) : error;
  }
}

async function lookOrNullAsync<T>(look: () => Promise<T>, absence: Absence): Promise<T | null> {
  try {
    return await look();
  } catch (error) {
    if (absence.absent(error)) return null;
    throw absence.fail ? absence.fail(error) : error;
  }
}

/**
 * realpath(3) itself, synchronously: one system call over cached directory entries, not one lstat per component.
 * As a slash path (src/fs-path.ts), so that it compares with the index's paths on Windows too.
 */
export function realOrNull(path: string, absence: Absence): string | null {
  return lookOrNull(() => toSlashPath(realpathSync.native(path)), absence);
}

/**
 * Paths longer than this are resolved off the main thread (realOrNullSoon).
 * The kernel walks every component: a file 2,000 folders deep cost about
 * 1.4 ms, and the content index reading 1,700 of them after one rename held
 * the main thread 2.4 s (a red-team pass). Shorter ones take microseconds,
 * less than a trip through libuv's pool.
 */
export const DEEP_PATH_CHARS = 1_024;

/** realOrNull; for a path over DEEP_PATH_CHARS, on libuv's pool (realpath(3) still, not a walk). */
export async function realOrNullSoon(path: string, absence: Absence): Promise<string | null> {
  if (path.length <= DEEP_PATH_CHARS) return realOrNull(path, absence);
  return lookOrNullAsync(async () => toSlashPath(await realpath(path)), absence);
}

/** stat, synchronously. */
export function statSyncOrNull(path: string, absence: Absence): BigIntStats | null {
  return lookOrNull(() => statSync(path, { bigint: true }), absence);
}

export function statOrNull(path: string, absence: Absence): Promise<BigIntStats | null> {
  return lookOrNullAsync(() => stat(path, { bigint: true }), absence);
}

export function lstatSyncOrNull(path: string, absence: Absence): BigIntStats | null {
  return lookOrNull(() => lstatSync(path, { bigint: true }), absence);
}

export function lstatOrNull(path: string, absence: Absence): Promise<BigIntStats | null> {
  return lookOrNullAsync(() => lstat(path, { bigint: true }), absence);
}

/**
 * The kernel's path of an open descriptor (Linux: the /proc/self/fd link), or
 * null where there is no such thing (no /proc: macOS, BSD). Synchronous on
 * purpose: /proc is in memory and answers in microseconds, far less than a
 * round trip through libuv's pool. A deleted file reads as "<path> (deleted)".
 */
export function kernelPathOf(fd: number): string | null {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}
