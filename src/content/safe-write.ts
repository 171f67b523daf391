// Changing a served folder so that what is changed is what the tool named:
// inside a served root, reached through no symlink, never a FIFO, socket,
// device or a file with another name elsewhere (a hard link). The write tools
// (src/catalog/write-tools.ts) change the disk only through this module.
//
// Node has no openat(2)/renameat(2), so a directory is pinned by an open
// descriptor instead: on Linux every later step names its entries through
// /proc/self/fd/N/<name>, which the kernel resolves from the directory the
// descriptor holds, whatever became of its path since (a folder swapped for
// a symlink between two system calls changes nothing). Where there is no
// /proc the path itself is used, checked by realpath plus device and inode
// before and after each step. On both, the pinned directory is looked at
// again after the temp file is written and after the rename: a folder that
// moved meanwhile aborts the write (the temp file is removed) or, in the
// nanoseconds after the last check, makes it fail loudly.
import { randomBytes } from 'node:crypto';
import { constants, fstatSync, renameSync, type BigIntStats } from 'node:fs';
import { chmod, link, mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, below, childPrefix, dirname, foldName, foldsNames, HOST_FLAVOUR, type Flavour } from '../fs-path.ts';
import { findRoot, isForbiddenWin32Segment, type Root } from '../uri.ts';
import { errnoCode } from '../errno.ts';
import { LOCK_FILE_PREFIX } from './file-locks.ts';
import {
  kernelPathOf,
  KIND_TEXT,
  kindOf,
  lstatOrNull as lstatOrNullAs,
  lstatSyncOrNull,
  realOrNull as realOrNullAs,
  refuse as refuseWith,
  statSyncOrNull,
  type Absence,
  type FileKind,
  type Refusal as RefusalOf,
  type Verdict as VerdictOf,
} from './file-facts.ts';

/** Path segments a write never creates, changes or passes through, whatever the ignore rules say. */
export const NEVER_WRITTEN = new Set(['.git', 'node_modules']);
/** A new file's mode (before nothing: the temp file is created 0600 and set to this, or to the replaced file's mode). */
export const NEW_FILE_MODE = 0o644;
/** A new folder's mode, less the process umask (mkdir(2) applies it). */
export const NEW_DIR_MODE = 0o777;

/**
 * `not-kept`: the file was written, and another program's version of it, written at that moment, could not be kept.
 * `not-checked`: the file was written, and whether another program wrote to the old one at that moment could not be
 * checked (the held descriptor could not be read).
 */
export type WriteReason = 'not-found' | 'refused' | 'exists' | 'too-large' | 'changed' | 'not-kept' | 'not-checked';

/** A write the module will not do; `reason` says why. The catalog turns it into a tool error. */
export class WriteError extends Error {
  override name = 'WriteError';
  constructor(
    readonly reason: WriteReason,
    message: string,
  ) {
    super(message);
  }
}

/** Steps a test can act at (swap a folder, make a FIFO) to prove the checks after them hold. */
export interface WriteHooks {
  /** After the parent folder is pinned and the target looked at, before the temp file is created. */
  afterCheck?(): void | Promise<void>;
  /** After the temp file is written and synced, before it is renamed into place. */
  beforeRename?(): void | Promise<void>;
  /** After the last look at the target, right before the rename: where a write by another program is not seen before it. */
  afterLastLook?(): void | Promise<void>;
}

export type Refusal = RefusalOf<WriteReason>;
export type Verdict = VerdictOf<WriteReason, { root: Root }>;

/**
 * May `path` (absolute) be created, replaced or moved? Lexical and pure: it
 * must be normalised, inside a served root and not the root itself, and no
 * segment below the root may be one of NEVER_WRITTEN or a lock file's name
 * (LOCK_FILE_PREFIX). Outside is not-found,
 * as for reads: never tell a client what lies outside the roots.
 */
export function judgeTarget(path: string, roots: readonly Root[], flavour: Flavour = HOST_FLAVOUR): Verdict {
  const root = findRoot(roots, path);
  if (root === undefined) return { ok: false, reason: 'not-found', message: 'not in the served folders' };
  if (path === root.path) return { ok: false, reason: 'refused', message: 'it is a served folder itself' };
  const segments = below(root.path, path).split('/');
  const never = segments.find((segment) => NEVER_WRITTEN.has(segment));
  if (never !== undefined) return { ok: false, reason: 'refused', message: `writes never go into ${never}/` };
  // A name of folder-mcp's own lock files: never listed, and removed as a dead writer's lock once 30 s old (a red-team
  // pass moved notes.txt to one; the next edit of the file it named waited 30 s, then deleted it).
  const lockName = segments.find((segment) => segment.toLowerCase().startsWith(LOCK_FILE_PREFIX));
  if (lockName !== undefined) return { ok: false, reason: 'refused', message: `${JSON.stringify(lockName)} is a name folder-mcp keeps for its lock files` };
  // Security: Windows would write `a.txt:s` into a hidden stream of a.txt, `a.txt.` as a.txt, `nul.txt` nowhere.
  const bad = flavour === 'win32' ? segments.find(isForbiddenWin32Segment) : undefined;
  if (bad !== undefined) {
    return { ok: false, reason: 'refused', message: `${JSON.stringify(bad)} is not a Windows file name (a stream, a device, a trailing dot or space, or one of <>:"|?*)` };
  }
  return { ok: true, root };
}

function check(verdict: Verdict, prefix = ''): Root {
  if (!verdict.ok) throw new WriteError(verdict.reason, prefix + verdict.message);
  return verdict.root;
}

function refuse(refusal: Refusal | null, prefix = ''): void {
  refuseWith(refusal, (no) => new WriteError(no.reason, prefix + no.message));
}

/** A kind in a write's refusal: "it is a FIFO (named pipe), not a regular file"; either sort of device is "a device". */
function kindText(kind: FileKind): string {
  return kind === 'character device' || kind === 'block device' ? 'a device' : KIND_TEXT[kind];
}

/** What an existing target must be for a write to replace it: a regular file with no other name. Pure. */
export function judgeReplace(existing: { kind: FileKind; nlink: number }): Refusal | null {
  if (existing.kind !== 'file') return { ok: false, reason: 'refused', message: `it is ${kindText(existing.kind)}, not a regular file` };
  // Security: another name of this file may be outside the served folders; a
  // replace would leave it the old bytes, an in-place write would change it there.
  if (existing.nlink > 1) return { ok: false, reason: 'refused', message: `it has ${existing.nlink} hard links (names); files with more than one are not written` };
  return null;
}

/** A directory held open, and how to name its entries so that they are found in it and nowhere else. */
class PinnedDir {
  private constructor(
    readonly handle: FileHandle,
    readonly path: string,
    private readonly identity: { dev: bigint; ino: bigint },
    /** Whether /proc/self/fd names the descriptor (Linux). */
    private readonly viaProc: boolean,
  ) {}

  /**
   * Opens the directory `path` (absolute, normalised) and checks that it is
   * one: reached through no symlink, inside a root. Throws a not-found
   * WriteError otherwise.
   */
  static async open(path: string, roots: readonly Root[]): Promise<PinnedDir> {
    if (findRoot(roots, path) === undefined) throw new WriteError('not-found', 'not in the served folders');
    // Racy alone, but it keeps a folder that is a symlink for good from being opened at all.
    if (realOrNull(path) !== path) throw new WriteError('not-found', 'its folder does not exist, or is reached through a symlink');
    let handle: FileHandle;
    try {
      // Windows has no O_DIRECTORY or O_NOFOLLOW (undefined: 0 here); libuv opens a folder there with
      // FILE_FLAG_BACKUP_SEMANTICS, and the fstat below checks it is one.
      handle = await open(path, constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0));
    } catch (error) {
      throw new WriteError('not-found', `its folder cannot be opened (${errnoCode(error) ?? 'error'})`);
    }
    try {
      const stats = fstatSync(handle.fd, { bigint: true });
      const kernelName = kernelPathOf(handle.fd);
      const dir = new PinnedDir(handle, path, { dev: stats.dev, ino: stats.ino }, kernelName !== null);
      if (!stats.isDirectory()) throw new WriteError('not-found', 'its folder is not a folder');
      dir.verify();
      return dir;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** The name to give system calls for `name` inside this directory. */
  at(name: string): string {
    return this.viaProc ? `/proc/self/fd/${this.handle.fd}/${name}` : childPrefix(this.path) + name;
  }

  /**
   * Is the held directory still the one at `path`, inside a root? Its own
   * name (the kernel's, on Linux) must be `path`, and `path` must still
   * resolve, through no symlink, to it. Throws a `changed` WriteError.
   */
  verify(): void {
    const kernelName = this.viaProc ? kernelPathOf(this.handle.fd) : null;
    if (this.viaProc && kernelName !== this.path) throw changed();
    if (realOrNull(this.path) !== this.path) throw changed();
    // Where there is no /proc this is what holds: the path's directory must be the held one.
    // stat, not lstat: realpath has just said the path has no symlink in it.
    const atPath = statSyncOrNull(this.path, ANY_FAILURE);
    if (atPath === null || atPath.dev !== this.identity.dev || atPath.ino !== this.identity.ino) throw changed();
  }

  /** verify() after the change is made: the message says it was. */
  verifyAfter(): void {
    try {
      this.verify();
    } catch {
      throw new WriteError('changed', 'its folder was moved or replaced during the change, which was made in the folder as it was held (now elsewhere)');
    }
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

function changed(): WriteError {
  return new WriteError('changed', 'its folder was moved or replaced while it was written; nothing was changed');
}

/**
 * Security: a folder's look-ups fail closed: whatever stops realpath or stat
 * (gone, a loop, no permission) counts as not there, and the write is
 * refused as not-found or changed.
 */
const ANY_FAILURE: Absence = { absent: () => true };
/** An entry's lstat: only a missing name is "not there" (a new file); any other failure aborts the write. */
const NO_ENTRY: Absence = { absent: (error) => errnoCode(error) === 'ENOENT' };

function realOrNull(path: string): string | null {
  return realOrNullAs(path, ANY_FAILURE);
}

function lstatOrNull(path: string): Promise<BigIntStats | null> {
  return lstatOrNullAs(path, NO_ENTRY);
}


/** What the target was when an edit read it: its identity and state, to refuse a write over a file changed since. */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

/**
 * The file an edit read, as it read it: a write with this `expect` replaces
 * the file only if it is still that file, unchanged (by identity, size,
 * mtime and ctime, and by its bytes, looked at right before the rename),
 * and after the rename looks through `handle` (held open on the old file
 * since the read) for a write that landed in between.
 */
export interface ExpectedFile {
  identity: FileIdentity;
  /** Open on the file that was read; the caller closes it after the write. */
  handle: FileHandle;
  /** The bytes that were read. */
  content: Uint8Array;
  /** The file was as this server's own last write left it: nobody else is writing it, so its old file is looked at once, not watched. */
  ownWrite?: boolean;
}

/**
 * What an outside write in the rename window became (see writeFileSafely):
 * `appended`: the other program appended to the old file; its bytes were
 * appended to the new one, after the edit. `kept`: it changed the old file
 * otherwise; its version was saved beside the file as `keptPath`.
 */
/**
 * What another program wrote to the old file meanwhile, and where it went.
 * `tooLarge`: kept beside rather than appended, because with it the file
 * would pass --max-write-bytes (or the old file itself does).
 */
export type OutsideWrite = { kind: 'appended'; bytes: number } | { kind: 'kept'; keptPath: string; bytes: number; tooLarge?: boolean };

export interface WriteOptions {
  /** Refuse when the target exists (atomically: the temp file is linked to the name, which fails if it is taken). */
  createOnly?: boolean;
  /** Largest content accepted, in bytes. */
  maxBytes: number;
  /** The target must still be this file, as read (an edit's read), or the write is refused as `changed`. */
  expect?: ExpectedFile;
  /** Replace a file whose owner has no write permission (mode 0444), as `force` asks. */
  force?: boolean;
  hooks?: WriteHooks;
}

export interface WriteOutcome {
  created: boolean;
  /** An edit only: a write by another program that landed on the old file between the last look and the rename. */
  outside?: OutsideWrite;
  /** The file the write put at the name (before any rescued append): PathLocks.noteWritten. */
  written: { ino: bigint; mtimeNs: bigint };
  /** The temp file's path (gone after the write): the index is told to look at it too. */
  tempPath: string;
}

/**
 * Creates or replaces the regular file at `path` (absolute, normalised) with
 * `data`, atomically: a temp file in the same folder (O_EXCL, 0600), written,
 * given the kept mode, fsynced, renamed over the target; then the folder is
 * fsynced. Throws a WriteError when it may not (see judgeTarget,
 * judgeReplace), or when the folder changed meanwhile.
 */
export async function writeFileSafely(path: string, data: Uint8Array, roots: readonly Root[], options: WriteOptions): Promise<WriteOutcome> {
  check(judgeTarget(path, roots));
  if (data.byteLength > options.maxBytes) {
    throw new WriteError('too-large', `${data.byteLength} bytes is more than the limit of ${options.maxBytes} (--max-write-bytes)`);
  }
  const name = basename(path);
  const dir = await PinnedDir.open(dirname(path), roots);
  const tempName = newTempName();
  const tempPath = childPrefix(dir.path) + tempName;
  let tempCreated = false;
  try {
    const existing = await lstatOrNull(dir.at(name));
    if (existing) {
      refuse(judgeReplace({ kind: kindOf(existing), nlink: Number(existing.nlink) }));
      refuseOtherName(dir, name);
      if (options.createOnly) throw new WriteError('exists', 'it already exists (create_only)');
      refuse(judgeReadOnly(Number(existing.mode), options.force === true));
    }
    if (options.expect) checkIdentity(existing, options.expect.identity);
    // Security: the kept mode includes setuid, setgid and sticky; the owner is kept too (chown below), else setuid would
    // move to whoever runs the server.
    const mode = existing ? Number(existing.mode) & 0o7777 : NEW_FILE_MODE;
    await options.hooks?.afterCheck?.();
    // On Linux the descriptor already holds the folder; without /proc this narrows the window the path is trusted.
    dir.verify();
    const handle = await open(dir.at(tempName), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    tempCreated = true;
    let temp: BigIntStats;
    try {
      temp = fstatSync(handle.fd, { bigint: true });
      await handle.writeFile(data);
      if (POSIX_FILES) {
        if (existing) await keepOwner(handle, existing, temp);
        // After chown, which clears setuid and setgid.
        await handle.chmod(mode);
        const kept = Number(fstatSync(handle.fd, { bigint: true }).mode) & 0o7777;
        if (kept !== mode) {
          throw new WriteError('refused', `its mode ${octal(mode)} cannot be kept (the new file would be ${octal(kept)}); nothing was changed`);
        }
      }
      await handle.sync();
      temp = fstatSync(handle.fd, { bigint: true });
    } finally {
      await handle.close();
    }
    await options.hooks?.beforeRename?.();
    dir.verify();
    // The temp name must still be our file: renamed into place, anything else put there would take the target's name.
    const ours = await lstatOrNull(dir.at(tempName));
    if (!ours || !ours.isFile() || ours.ino !== temp.ino || ours.dev !== temp.dev) {
      throw new WriteError('changed', 'its temp file was replaced while it was written; nothing was changed');
    }
    // The expected bytes first (the slow look), then the stat looks, then the rename at once: as late as it can be.
    if (options.expect) await checkContent(options.expect);
    // Looked at again right before the rename: a swap since the first look refuses here. Synchronous, as the
    // rename after it on POSIX: nothing runs between the two (no turn of the event loop, no wait for libuv's pool,
    // which under load took about a millisecond, and an editor's save, a temp file renamed over the name, landed
    // there and was lost; the window is now the microseconds of two system calls).
    const now = lstatSyncOrNull(dir.at(name), NO_ENTRY);
    if (existing && !now) throw new WriteError('changed', 'it was removed while it was written; nothing was changed');
    if (now) {
      refuse(judgeReplace({ kind: kindOf(now), nlink: Number(now.nlink) }));
      if (existing && (now.ino !== existing.ino || now.dev !== existing.dev)) throw new WriteError('changed', 'it was replaced while it was written; nothing was changed');
    }
    if (options.expect) {
      checkIdentity(now, options.expect.identity);
      checkIdentity(fstatSync(options.expect.handle.fd, { bigint: true }), options.expect.identity);
    }
    if (options.hooks?.afterLastLook) await options.hooks.afterLastLook();
    // Windows refuses a rename onto a file that any handle holds open, ours too: the edit's handle closes here,
    // after its last look. No other program can write to the old file after the rename there either: while one
    // holds it open the rename fails (renameOverRetrying), so there is nothing to rescue.
    if (!POSIX_FILES && options.expect) await options.expect.handle.close();
    if (options.createOnly) {
      // link(2) fails with EEXIST if the name was taken meanwhile: create-only without a window.
      try {
        await link(dir.at(tempName), dir.at(name));
      } catch (error) {
        if (errnoCode(error) === 'EEXIST') throw new WriteError('exists', 'it already exists (create_only)');
        throw error;
      }
      await unlink(dir.at(tempName));
    } else {
      // Windows: a read-only file (kept only with force) refuses to be renamed onto; its attribute goes for the
      // rename and comes back on the new file, as a POSIX write keeps the mode.
      const readOnly = !POSIX_FILES && existing !== null && (Number(existing.mode) & 0o200) === 0;
      if (POSIX_FILES) renameSync(dir.at(tempName), dir.at(name));
      else {
        if (readOnly) await chmod(dir.at(name), 0o666);
        try {
          await renameOverRetrying(dir.at(tempName), dir.at(name));
        } finally {
          if (readOnly) await chmod(dir.at(name), 0o444).catch(() => {});
        }
      }
    }
    tempCreated = false;
    await syncDirectory(dir.handle);
    dir.verifyAfter();
    let outside: OutsideWrite | undefined;
    try {
      outside = options.expect && POSIX_FILES ? await rescueOutsideWrite(dir, name, temp, options.expect, { mode, uid: existing?.uid, gid: existing?.gid }, options.maxBytes) : undefined;
    } catch (error) {
      // The new file is in place: whatever failed here, saying "nothing was changed" would be false. And only a
      // failure to keep says that another program wrote: one while looking says it could not be known.
      const why = (failure: unknown) => errnoCode(failure) ?? (failure as Error).message;
      if (error instanceof KeepFailed) {
        throw new WriteError('not-kept', `another program wrote to it at the same moment, and its version could not be kept beside it (${why(error.cause)})`);
      }
      throw new WriteError('not-checked', `whether another program wrote to the old file at the same moment could not be checked (${why(error)})`);
    }
    return { created: existing === null, tempPath, written: { ino: temp.ino, mtimeNs: temp.mtimeNs }, ...(outside ? { outside } : {}) };
  } finally {
    if (tempCreated) await unlink(dir.at(tempName)).catch(() => {});
    await dir.close();
  }
}

/** A file whose owner may not write it is left alone unless the caller says `force`, as a careful editor asks first. Pure. */
export function judgeReadOnly(mode: number, force: boolean): Refusal | null {
  if (force || (mode & 0o200) !== 0) return null;
  return { ok: false, reason: 'refused', message: `it is read-only (mode ${octal(mode & 0o7777)}: its owner may not write it); pass force: true to replace it anyway` };
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}

/**
 * Gives the temp file the replaced file's owner and group. As root any
 * owner can be given; otherwise chown(2) lets a process give a group it is
 * in, and nothing else: refused then, rather than a file that changed hands.
 */
async function keepOwner(handle: FileHandle, existing: BigIntStats, temp: BigIntStats): Promise<void> {
  if (existing.uid === temp.uid && existing.gid === temp.gid) return;
  try {
    await handle.chown(Number(existing.uid), Number(existing.gid));
  } catch (error) {
    const code = errnoCode(error);
    if (code !== 'EPERM' && code !== 'EINVAL') throw error;
    throw new WriteError(
      'refused',
      `it belongs to ${existing.uid}:${existing.gid} (user:group) and this server, running as ${temp.uid}:${temp.gid}, cannot give the new file that owner; nothing was changed`,
    );
  }
}

function checkIdentity(now: BigIntStats | null, expect: FileIdentity): void {
  if (
    !now ||
    now.dev !== expect.dev ||
    now.ino !== expect.ino ||
    now.size !== expect.size ||
    now.mtimeNs !== expect.mtimeNs ||
    now.ctimeNs !== expect.ctimeNs
  ) {
    throw new WriteError('changed', 'it changed after it was read for this edit (another program wrote it); nothing was changed; read it again');
  }
}

/** The bytes of the held file now, at most `limit` of them. */
/** `length` bytes of the file behind `handle` from `position` (fewer at its end). */
async function bytesAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const bytes = Buffer.alloc(length);
  let read = 0;
  while (read < length) {
    const { bytesRead } = await handle.read(bytes, read, length - read, position + read);
    if (bytesRead === 0) break;
    read += bytesRead;
  }
  return bytes.subarray(0, read);
}

async function bytesOf(handle: FileHandle, limit: number): Promise<Buffer> {
  return bytesAt(handle, 0, Math.min(Number(fstatSync(handle.fd, { bigint: true }).size), limit));
}

/** A write that keeps size and mtime (same length, same clock tick) still changes the bytes: compared too. */
async function checkContent(expect: ExpectedFile): Promise<void> {
  const now = await bytesOf(expect.handle, expect.content.byteLength + 1);
  if (!now.equals(expect.content)) {
    throw new WriteError('changed', 'it changed after it was read for this edit (another program wrote it); nothing was changed; read it again');
  }
}

/**
 * A file modified this recently before the read (by another than this
 * server's last write) is being written to: its old file is watched a while
 * after the rename.
 */
const HOT_NS = 2_000_000_000n;
/**
 * How long the old file of a hot file is watched after the rename: a
 * program that opened it by path just before the rename writes to it a
 * moment later (its open and its write are two system calls, and two turns
 * of its event loop in Node's fs.promises). Past this, a write to the old
 * file is one through a descriptor held across the rename (docs/tools.md).
 */
export const OUTSIDE_GRACE_MS = 50;
const GRACE_STEP_MS = 5;

/** Keeping another program's write failed: the write was found, then lost. */
class KeepFailed extends Error {
  override name = 'KeepFailed';
}

/** `work`, a step of keeping another program's write: its failure is a KeepFailed, told from one while looking. */
function keeping<T>(work: Promise<T>): Promise<T> {
  return work.catch((error: unknown) => {
    throw new KeepFailed('could not keep', { cause: error });
  });
}

/**
 * After the rename: did another program write to the old file (held open
 * since the read) between the last look and the rename, or just after it
 * through a descriptor it opened before? Such a write went to the file the
 * rename replaced, and would be lost. An append (the old file is what was
 * read plus more) is appended to the new file, after the edit, as the other
 * program meant; anything else is saved beside the file
 * (`<name>.folder-mcp-kept-<hex>`), and the caller is told either way.
 */
async function rescueOutsideWrite(
  dir: PinnedDir,
  name: string,
  temp: BigIntStats,
  expect: ExpectedFile,
  owner: KeptOwner,
  maxBytes: number,
): Promise<OutsideWrite | undefined> {
  const original = Buffer.from(expect.content.buffer, expect.content.byteOffset, expect.content.byteLength);
  let copied = original.byteLength;
  let appended = 0;
  const hot = !expect.ownWrite && BigInt(Date.now()) * 1_000_000n - expect.identity.mtimeNs < HOT_NS;
  const first = fstatSync(expect.handle.fd, { bigint: true });
  // The usual case, cheaply: same size and mtime, and (a same-tick write of the same length is told by its bytes only) same bytes.
  if (!hot && first.size === BigInt(copied) && first.mtimeNs === expect.identity.mtimeNs && (await bytesOf(expect.handle, copied + 1)).equals(original)) {
    return undefined;
  }
  const deadline = performance.now() + (hot ? OUTSIDE_GRACE_MS : 0);
  for (;;) {
    // Security: the other program decides how large the old file is. Only what was read, and then a tail that
    // fits --max-write-bytes, is ever in memory; past that the old file is copied beside in chunks (issue 44:
    // grown to 1 GiB after the rename, it was read whole and appended whole, 1,124 MiB of RSS).
    const size = Number(fstatSync(expect.handle.fd, { bigint: true }).size);
    const head = await bytesOf(expect.handle, original.byteLength);
    if (size < copied || !head.equals(original)) {
      return keeping(keepBeside(dir, name, expect.handle, size, owner, size > maxBytes));
    }
    if (size > copied) {
      if (Number(temp.size) + appended + (size - copied) > maxBytes) return keeping(keepBeside(dir, name, expect.handle, size, owner, true));
      const tail = await keeping(bytesAt(expect.handle, copied, size - copied));
      if (!(await keeping(appendToNew(dir, name, temp, tail)))) return keeping(keepBeside(dir, name, expect.handle, size, owner));
      appended += tail.byteLength;
      copied += tail.byteLength;
    }
    if (performance.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, GRACE_STEP_MS));
  }
  return appended > 0 ? { kind: 'appended', bytes: appended } : undefined;
}

/** Appends `tail` to the file now at `name`, if it is still the one the rename put there. */
async function appendToNew(dir: PinnedDir, name: string, temp: BigIntStats, tail: Buffer): Promise<boolean> {
  let handle: FileHandle;
  try {
    handle = await open(dir.at(name), constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW);
  } catch {
    return false;
  }
  try {
    const stats = fstatSync(handle.fd, { bigint: true });
    if (stats.ino !== temp.ino || stats.dev !== temp.dev) return false;
    await handle.write(tail);
    await handle.sync();
    return true;
  } finally {
    await handle.close();
  }
}

/** Gives a kept copy its owner, group and permission bits (POSIX only; an owner that cannot be given stays the server's). */
async function giveKeptOwner(handle: FileHandle, owner: KeptOwner): Promise<void> {
  if (!POSIX_FILES) return;
  if (owner.uid !== undefined && owner.gid !== undefined) await handle.chown(Number(owner.uid), Number(owner.gid)).catch(() => {});
  await handle.chmod(owner.mode & 0o777);
}

/** Whose a kept copy is: the file's own owner, group and permission bits (no setuid, setgid or sticky). */
interface KeptOwner {
  mode: number;
  uid: bigint | undefined;
  gid: bigint | undefined;
}

/**
 * The longest names a kept copy's is cut to, tried in turn while its folder
 * answers ENAMETOOLONG: 255 bytes (Linux, macOS) or UTF-16 units (Windows)
 * for most file systems, 143 for eCryptfs, and then the tag alone, for a
 * path near macOS's 1,024-byte PATH_MAX.
 */
const KEPT_NAME_LIMITS = [255, 143, 0] as const;

/**
 * The name of a kept copy of `name`: `<name>.folder-mcp-kept-<tag>`, its
 * name cut (at a character) so that the whole fits `nameMax` UTF-8 bytes
 * (which are never fewer than its UTF-16 units), or the tag alone when no
 * part of the name fits. Before, a name over about 230 bytes had no kept
 * copy (ENAMETOOLONG) and the other program's version was lost. Pure.
 */
export function keptNameFor(name: string, tag: string, nameMax: number = KEPT_NAME_LIMITS[0]): string {
  const suffix = `.folder-mcp-kept-${tag}`;
  const room = nameMax - Buffer.byteLength(suffix);
  let stem = name;
  while (stem && Buffer.byteLength(stem) > room) {
    // A surrogate pair goes whole: half of one is no character.
    const pair = stem.length >= 2 && (stem.charCodeAt(stem.length - 1) & 0xfc00) === 0xdc00 && (stem.charCodeAt(stem.length - 2) & 0xfc00) === 0xd800;
    stem = stem.slice(0, pair ? -2 : -1);
  }
  return stem + suffix;
}

/** Creates a kept copy of `name`, new and private, under the longest of its names (KEPT_NAME_LIMITS) its folder takes. */
async function createKept(dir: PinnedDir, name: string): Promise<{ handle: FileHandle; keptName: string }> {
  const tag = randomBytes(4).toString('hex');
  const names = [...new Set(KEPT_NAME_LIMITS.map((limit) => keptNameFor(name, tag, limit)))];
  const create = (keptName: string) => open(dir.at(keptName), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
  for (const keptName of names.slice(0, -1)) {
    try {
      return { handle: await create(keptName), keptName };
    } catch (error) {
      if (errnoCode(error) !== 'ENAMETOOLONG') throw error;
    }
  }
  const last = names.at(-1)!;
  return { handle: await create(last), keptName: last };
}

/** How much of an old file is in memory at once while it is copied beside (keepBeside). */
const COPY_CHUNK_BYTES = 1024 * 1024;

/**
 * Saves what another program left in the old file beside the new one: its
 * first `size` bytes (what there was when it was looked at), copied from the
 * held descriptor a chunk at a time, never whole in memory. The copy is the
 * file's owner's, with its group and permission bits (created 0600 first, so
 * nobody else reads it meanwhile): a copy owned by the server would be one
 * the file's owner may not read or remove (issue 44: root:root 0640 beside a
 * file of 4242:4343). Where the owner cannot be given (a server not run as
 * root, for another user's file), the copy stays the server's, with the
 * file's permission bits. `tooLarge`: kept because appending it would pass
 * --max-write-bytes, which the caller is told.
 */
async function keepBeside(dir: PinnedDir, name: string, old: FileHandle, size: number, owner: KeptOwner, tooLarge = false): Promise<OutsideWrite> {
  const { handle, keptName } = await createKept(dir, name);
  let copied = 0;
  try {
    await giveKeptOwner(handle, owner);
    const chunk = Buffer.alloc(Math.min(COPY_CHUNK_BYTES, Math.max(1, size)));
    while (copied < size) {
      const { bytesRead } = await old.read(chunk, 0, Math.min(chunk.length, size - copied), copied);
      if (bytesRead === 0) break;
      await handle.write(chunk, 0, bytesRead, copied);
      copied += bytesRead;
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  await syncDirectory(dir.handle);
  return { kind: 'kept', keptPath: childPrefix(dir.path) + keptName, bytes: copied, ...(tooLarge ? { tooLarge } : {}) };
}

/** The identity to pass in `expect` for the file behind an open handle. */
export function identityOf(handle: FileHandle): FileIdentity & { nlink: number; mode: number } {
  const stats = fstatSync(handle.fd, { bigint: true });
  return { dev: stats.dev, ino: stats.ino, size: stats.size, mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs, nlink: Number(stats.nlink), mode: Number(stats.mode) };
}

/**
 * Creates the folder `path` and, with `parents`, every missing folder above
 * it, each one inside the folder pinned before it. An existing folder is no
 * error. Resolves to the folders created, outermost first.
 */
export async function makeDirectory(path: string, roots: readonly Root[], parents: boolean, hooks?: WriteHooks): Promise<string[]> {
  const root = check(judgeTarget(path, roots));
  const segments = below(root.path, path).split('/');
  const created: string[] = [];
  let dir = await PinnedDir.open(root.path, roots);
  try {
    for (const [i, segment] of segments.entries()) {
      const childPath = childPrefix(dir.path) + segment;
      const last = i === segments.length - 1;
      const existing = await lstatOrNull(dir.at(segment));
      if (existing && kindOf(existing) === 'symlink') {
        // As for a write through a symlinked folder: not found, whatever it points at.
        throw new WriteError('not-found', `${last ? 'it' : 'a folder on its path'} is a symlink`);
      }
      if (existing && kindOf(existing) !== 'directory') {
        throw new WriteError(last ? 'exists' : 'refused', `${last ? 'it' : 'a folder on its path'} exists as ${kindText(kindOf(existing))}`);
      }
      if (!existing) {
        if (!last && !parents) throw new WriteError('not-found', 'its parent folder does not exist (pass parents: true to create it)');
        await hooks?.afterCheck?.();
        dir.verify();
        try {
          await mkdir(dir.at(segment), NEW_DIR_MODE);
          created.push(childPath);
        } catch (error) {
          if (errnoCode(error) !== 'EEXIST') throw error; // made meanwhile: opened and checked below like any other
        }
        await syncDirectory(dir.handle);
      }
      const next = await PinnedDir.open(childPath, roots);
      await dir.close();
      dir = next;
    }
    return created;
  } finally {
    await dir.close();
  }
}

export interface MoveOptions {
  /** Replace an existing file at the destination (files only: a folder never replaces anything). */
  overwrite?: boolean;
  /** With overwrite: replace a read-only file too. */
  force?: boolean;
  hooks?: WriteHooks;
}

/**
 * Renames the file or folder `from` to `to` (both absolute, normalised,
 * inside the served folders; their folders must exist). A folder moves whole,
 * with what is inside it: one rename, nothing inside is opened. Resolves to
 * what moved.
 */
export async function moveSafely(from: string, to: string, roots: readonly Root[], options: MoveOptions = {}): Promise<{ kind: 'file' | 'directory'; replaced: boolean }> {
  check(judgeTarget(from, roots));
  // The tool names the source in its error: a problem of the destination says so.
  check(judgeTarget(to, roots), 'the destination: ');
  if (to === from) throw new WriteError('refused', 'the source and the destination are the same');
  if (to.startsWith(`${from}/`)) throw new WriteError('refused', 'a folder cannot move into itself');
  refuse(judgeMoveSource(from, roots));
  const source = await PinnedDir.open(dirname(from), roots);
  let target: PinnedDir | undefined;
  try {
    try {
      target = await PinnedDir.open(dirname(to), roots);
    } catch (error) {
      if (error instanceof WriteError) throw new WriteError(error.reason, `the destination: ${error.message}`);
      throw error;
    }
    const fromName = basename(from);
    const toName = basename(to);
    // Only the name's case or normalization changes (where names fold): the file at `to` is the one moving.
    const respelled = foldsNames() && dirname(from) === dirname(to) && foldName(fromName) === foldName(toName);
    const moving = await lstatOrNull(source.at(fromName));
    if (!moving) throw new WriteError('not-found', 'it does not exist');
    const kind = kindOf(moving);
    if (kind !== 'file' && kind !== 'directory') throw new WriteError('refused', `it is ${kindText(kind)}; only files and folders move`);
    refuseOtherName(source, fromName);
    const judgeDestination = async () => {
      const existing = await lstatOrNull(target!.at(toName));
      if (!existing || (respelled && existing.ino === moving.ino && existing.dev === moving.dev)) return false;
      if (!options.overwrite) throw new WriteError('exists', 'the destination exists (pass overwrite: true to replace a file)');
      if (kind !== 'file') throw new WriteError('refused', 'a folder never replaces anything');
      refuse(judgeReplace({ kind: kindOf(existing), nlink: Number(existing.nlink) }), 'the destination: ');
      refuseOtherName(target!, toName, 'the destination: ');
      refuse(judgeReadOnly(Number(existing.mode), options.force === true), 'the destination: ');
      return true;
    };
    const replaced = await judgeDestination();
    await options.hooks?.afterCheck?.();
    source.verify();
    target.verify();
    const again = await lstatOrNull(source.at(fromName));
    if (!again || again.ino !== moving.ino || again.dev !== moving.dev) throw new WriteError('changed', 'it was replaced while it was moved; nothing was changed');
    await judgeDestination();
    if (kind === 'file' && !options.overwrite && !respelled) {
      // Windows: a program holding the file open without FILE_SHARE_DELETE (Word, and most programs) lets a link
      // be made, then keeps the old name from going, and the new one too: the move failed with two names left.
      // A rename of the file to its own name asks for the same access: it fails while the file is held (retried).
      if (!POSIX_FILES) await renameOverRetrying(source.at(fromName), source.at(fromName));
      // link(2) refuses a taken name atomically; then the old name goes.
      try {
        await link(source.at(fromName), target.at(toName));
      } catch (error) {
        const code = errnoCode(error);
        if (code === 'EEXIST') throw new WriteError('exists', 'the destination exists (pass overwrite: true to replace a file)');
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw moveError(error);
        await renameChecked(source.at(fromName), target.at(toName)); // a file system without hard links
      }
      // Only the name that still is the file moved: a file put there meanwhile stays.
      const left = await lstatOrNull(source.at(fromName));
      if (left && left.ino === moving.ino && left.dev === moving.dev) await unlinkOldName(source.at(fromName), target.at(toName), moving);
    } else if (respelled) {
      await respell(source, fromName, toName);
    } else {
      await renameChecked(source.at(fromName), target.at(toName));
    }
    await syncDirectory(source.handle);
    if (target.path !== source.path) await syncDirectory(target.handle);
    source.verifyAfter();
    target.verifyAfter();
    return { kind, replaced };
  } finally {
    await target?.close();
    await source.close();
  }
}

/**
 * A move must not carry a served folder along (nor move one): its index
 * and its clients would follow a folder that is no longer where the
 * command line put it. Pure.
 */
export function judgeMoveSource(from: string, roots: readonly Root[]): Refusal | null {
  const served = roots.find((root) => root.path === from || root.path.startsWith(`${from}/`));
  if (!served) return null;
  if (served.path === from) return { ok: false, reason: 'refused', message: 'it is a served folder itself' };
  return { ok: false, reason: 'refused', message: `it holds another served folder (${served.path}), which would move with it` };
}

/**
 * The old name of a file moved by link(2), once the new one is made. When
 * it cannot go (held open since the check above, on Windows: retried), the
 * new name goes again and nothing moved; when that fails too, the error
 * names both.
 */
async function unlinkOldName(from: string, to: string, moving: BigIntStats): Promise<void> {
  try {
    await retriedWhileHeld(() => unlink(from));
  } catch (error) {
    const made = await lstatOrNull(to);
    if (made && made.ino === moving.ino && made.dev === moving.dev) {
      try {
        await retriedWhileHeld(() => unlink(to));
      } catch {
        throw new WriteError('changed', `${error instanceof Error ? error.message : String(error)}; the file now also has the new name, which could not be removed either: remove one of the two once it is let go`);
      }
    }
    throw error instanceof WriteError ? error : moveError(error);
  }
}

/**
 * Renames `fromName` to `toName`, the same name but for its case or
 * normalization (where names fold). NTFS and APFS take that in one rename;
 * a file system that keeps the old spelling (Wine's drives) gets it by way
 * of a temporary name, and the old name back if the second rename fails.
 */
async function respell(dir: PinnedDir, fromName: string, toName: string): Promise<void> {
  await renameChecked(dir.at(fromName), dir.at(toName));
  if (basename(realOrNull(dir.at(toName)) ?? toName) === toName) return;
  const temp = newTempName();
  await renameChecked(dir.at(fromName), dir.at(temp));
  try {
    await renameChecked(dir.at(temp), dir.at(toName));
  } catch (error) {
    await rename(dir.at(temp), dir.at(fromName)).catch(() => {});
    throw error;
  }
}

/** A name for a file made on the way to another (a write's new content, a respelling's step): hidden, random. */
function newTempName(): string {
  return `.folder-mcp-${randomBytes(8).toString('hex')}.tmp`;
}

async function renameChecked(from: string, to: string): Promise<void> {
  try {
    await renameOverRetrying(from, to);
  } catch (error) {
    throw error instanceof WriteError ? error : moveError(error);
  }
}

/**
 * Where names fold (Windows, macOS), an existing entry may be reached by a
 * name that is not its own: an 8.3 short name (`GIT~1` for `.git`,
 * `LONGFI~1.TXT`). The checks on a path's segments (NEVER_WRITTEN, a served
 * folder moved) read the name given, so an entry is written, replaced or
 * moved only by its own name, up to case and normalization; otherwise the
 * change is refused, naming it.
 */
function refuseOtherName(dir: PinnedDir, name: string, prefix = ''): void {
  if (!foldsNames()) return;
  const real = realOrNull(dir.at(name));
  if (real === null) return; // gone meanwhile: the steps after this find that
  refuse(judgeOwnName(name, basename(real)), prefix);
}

/** Is `name` the entry's own name `own` (what realpath spells), up to case and normalization? Pure. */
export function judgeOwnName(name: string, own: string): Refusal | null {
  if (foldName(own) === foldName(name)) return null;
  return { ok: false, reason: 'refused', message: `${JSON.stringify(name)} is another name of ${JSON.stringify(own)} (an 8.3 short name, or a link); give its own name` };
}

/**
 * POSIX file semantics: owners and mode bits, and a rename that replaces a
 * file others hold open. Windows keeps no POSIX owner (fchown does nothing)
 * and of the mode bits only "read-only", so a write there keeps neither and
 * checks neither; and it refuses to rename onto an open file.
 */
const POSIX_FILES = process.platform !== 'win32';

/**
 * On Windows a rename onto a file that another program holds open (an
 * editor, a virus scanner, the search indexer) fails with EPERM, EBUSY or
 * EACCES for as long as it is held. Tried again with a growing pause, as
 * graceful-fs does, for at most RENAME_RETRY_MS in all; then one clear
 * error, and the caller removes its temp file. Elsewhere a rename is tried once.
 */
export const RENAME_RETRY_MS = 2_000;

async function renameOverRetrying(from: string, to: string): Promise<void> {
  return retriedWhileHeld(() => rename(from, to));
}

/** `change` (a rename or an unlink), tried again while another program holds the file open on Windows: see renameOverRetrying. */
async function retriedWhileHeld(change: () => Promise<void>): Promise<void> {
  const started = performance.now();
  for (let pause = 10; ; pause = Math.min(pause * 2, 250)) {
    try {
      return await change();
    } catch (error) {
      const code = errnoCode(error);
      if (POSIX_FILES || (code !== 'EPERM' && code !== 'EBUSY' && code !== 'EACCES')) throw error;
      if (performance.now() - started + pause > RENAME_RETRY_MS) {
        throw new WriteError('changed', `another program holds it open (${code}, for ${RENAME_RETRY_MS / 1000} s of retries); nothing was changed`);
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/**
 * fsync of a folder, so the new name survives a crash. Windows cannot flush a
 * folder opened for reading (FlushFileBuffers needs write access): NTFS
 * journals the rename itself.
 */
async function syncDirectory(handle: FileHandle): Promise<void> {
  if (POSIX_FILES) await handle.sync();
}

function moveError(error: unknown): Error {
  const code = errnoCode(error);
  if (code === 'EXDEV') return new WriteError('refused', 'the source and the destination are on different file systems');
  if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'EISDIR' || code === 'ENOTDIR') {
    return new WriteError('exists', 'the destination exists');
  }
  return error as Error;
}

/**
 * How many trailing segments of `path` do not exist (0 when it does): how a
 * relative path with several served folders picks its folder
 * (src/catalog/paths.ts resolveWritePath). A path reached through a symlink
 * counts as missing, as for a write: what lies behind a link (maybe outside)
 * never sways the choice.
 */
export function missingSegments(path: string): number {
  let missing = 0;
  for (let at = path; dirname(at) !== at; at = dirname(at), missing++) {
    if (realOrNull(at) === at) return missing;
  }
  return missing;
}
