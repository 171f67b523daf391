// One writer per file across processes. PathLocks (path-locks.ts) orders the
// changes of one server; two folder-mcp processes on one folder (replicas
// behind a load balancer, two clients each starting a server, a folder
// served at two mount points) each have their own, and lost each other's
// edits (issue 44: 2 of 110 through two replicas, 8 of 213 through a bind
// mount). So every change also holds a lock file, created exclusively
// (O_CREAT | O_EXCL, as git's index.lock), in the changed file's own folder:
// whatever path a process reaches that folder by, a mount point or a
// symlinked root, it finds the same lock. Named for the file's name (folded
// where names fold), so every spelling of one file takes one lock.
//
// A holder refreshes its lock's mtime while it holds it; a lock not touched
// for LOCK_STALE_MS is a crashed holder's, and is taken over. Sooner, on
// Linux, a lock whose holder's pid is gone from the same boot and pid
// namespace (PID_SCOPE): a server killed mid-write made the next edit of that
// file wait 25 s. A dead holder's lock is removed by one taker at a time,
// under a breaker file beside it (takeOverDead). The lock files
// are never listed nor searched (index/ignore.ts). Programs that are not
// folder-mcp do not look at them: against those, the write's own checks
// (safe-write.ts) are what holds.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readlinkSync, realpathSync, statSync, unlinkSync, utimesSync, writeSync, type Stats } from 'node:fs';
import { basename, childPrefix, dirname, foldName, toSlashPath } from '../fs-path.ts';
import { errnoCode, pidRuns } from '../errno.ts';
import { kernelPathOf } from './file-facts.ts';

/** A lock file's name starts so (index/ignore.ts leaves such names out of the index). */
export const LOCK_FILE_PREFIX = '.folder-mcp-lock-';
/** A lock whose mtime is older than this is a crashed holder's, and is taken over. */
export const LOCK_STALE_MS = 30_000;
/** A holder touches its lock this often. */
const LOCK_REFRESH_MS = 5_000;
/** Waits between tries for a held lock: from the first, doubling, up to the last. */
const RETRY_FIRST_MS = 5;
const RETRY_MAX_MS = 200;

/** Where the lock of `path` is: a hidden file in its folder, named for its (folded) name. */
export function lockFileOf(path: string, folds: boolean): string {
  const name = folds ? foldName(basename(path)) : basename(path);
  return childPrefix(dirname(path)) + LOCK_FILE_PREFIX + createHash('sha256').update(name).digest('hex').slice(0, 24);
}

/** A held lock: released once. */
export interface HeldFileLock {
  release(): void;
}

/** Waited past its deadline for a lock another process holds. */
export class FileLockTimeout extends Error {
  override name = 'FileLockTimeout';
}

/**
 * Takes the lock file of each of `paths` (in one order for every process, so
 * two never wait on each other), waiting for other holders until `deadline`
 * (performance.now() time). A path whose folder does not exist needs no lock
 * (there is nothing in it to lose; the change finds the folder missing).
 */
export async function lockFiles(paths: readonly string[], deadline: number, folds: boolean): Promise<HeldFileLock> {
  const files = [...new Set(paths.map((path) => lockFileOf(path, folds)))].sort();
  const held: HeldFileLock[] = [];
  try {
    for (const file of files) {
      // Security: a folder reached through a symlink is not locked in: the change itself refuses such a path
      // (safe-write.ts), and its lock would have been made, and maybe left, wherever the link pointed.
      const folder = pinFolder(dirname(file), folds);
      if (!folder) continue;
      let lock: HeldFileLock | null;
      try {
        lock = await lockFile(folder.at + basename(file), deadline);
      } catch (error) {
        folder.close();
        throw error;
      }
      if (!lock) folder.close();
      else held.push({ release: () => (lock.release(), folder.close()) });
    }
  } catch (error) {
    for (const lock of held) lock.release();
    throw error;
  }
  return { release: () => held.forEach((lock) => lock.release()) };
}

/** A folder a lock is made in: the path its entries are reached by (`at`, ending in a separator), held until closed. */
interface LockFolder {
  at: string;
  close(): void;
}

/**
 * `dir`, when it is its own real path (no symlink on the way), held for
 * the lock's life; null otherwise (or absent: then nothing is locked in it
 * either). On Linux its entries are reached through the descriptor
 * (`/proc/self/fd/N/`), so a swap of the folder for a link after the check
 * cannot move the lock: a red-team pass swapping it 540,000 times had locks
 * made (50 files in a folder outside), touched and left there, and the ones
 * inside left for the next write to wait 30 s on. Elsewhere by its path,
 * checked just before (docs/security.md: the window left).
 */
function pinFolder(dir: string, folds: boolean): LockFolder | null {
  const byPath = () => (isRealFolder(dir, folds) ? { at: childPrefix(dir), close() {} } : null);
  if (process.platform !== 'linux') return byPath();
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = errnoCode(error);
    // Not a folder of its own (gone, a link, a file): no lock. Any other failure (no descriptors left, a folder
    // that may be entered but not listed) is judged by the path, as before: a change never goes unlocked for it.
    return code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR' ? null : byPath();
  }
  // null: no /proc (a sandbox): by the path, as elsewhere.
  const kernelName = kernelPathOf(fd);
  if (kernelName === dir) return { at: `/proc/self/fd/${fd}/`, close: () => closeSync(fd) };
  closeSync(fd);
  return kernelName === null ? byPath() : null;
}

/** Whether `dir` is its own real path (no symlink on the way), or absent (then nothing is locked in it either). */
function isRealFolder(dir: string, folds: boolean): boolean {
  let real: string;
  try {
    real = toSlashPath(realpathSync.native(dir));
  } catch {
    return false;
  }
  const here = toSlashPath(dir);
  return folds ? foldName(real) === foldName(here) : real === here;
}

async function lockFile(file: string, deadline: number): Promise<HeldFileLock | null> {
  const token = `${process.pid} ${PID_SCOPE} ${randomBytes(6).toString('hex')}\n`;
  for (let pause = RETRY_FIRST_MS; ; pause = Math.min(pause * 2, RETRY_MAX_MS)) {
    try {
      const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
      writeSync(fd, token);
      closeSync(fd);
      // A breaker left by a taker killed after it removed a dead lock and before its own end: nobody else removes it.
      removeIf(breakerOf(file), (stats) => Date.now() - stats.mtimeMs >= BREAKER_LEFT_MS);
      return held(file, token);
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') return null; // no folder: nothing to lock in it
      if (code !== 'EEXIST') throw error;
    }
    if (takeOverDead(file)) continue;
    if (performance.now() + pause > deadline) throw new FileLockTimeout('another folder-mcp process is changing it');
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * Where a pid names one process: the boot and the pid namespace, on Linux
 * (two containers on one host, or one host's two boots, reuse pids). Where
 * that cannot be read (macOS, Windows, a sandbox without /proc) there is
 * none: a host name is no proof (two machines sharing a folder can have
 * one), so such a lock, and every lock read there, is judged by its mtime only.
 */
export const PID_SCOPE = pidScope();

function pidScope(): string {
  try {
    return `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${readlinkSync('/proc/self/ns/pid')}`.replace(/\s/g, '');
  } catch {
    return `none-${randomBytes(6).toString('hex')}`;
  }
}

/**
 * Whether the holder named by a lock's text is gone: a process of this pid
 * scope that no longer runs. A lock of another scope, of an older server (no
 * scope in it), or of a pid that runs (perhaps reused: then the mtime decides)
 * is not. Pure but for the signal check.
 */
export function holderGone(text: string, scope: string = PID_SCOPE, runs: (pid: number) => boolean = pidRuns): boolean {
  const [pid, lockScope] = text.trim().split(' ');
  const n = Number(pid);
  return !scope.startsWith('none-') && lockScope === scope && Number.isInteger(n) && n > 0 && !runs(n);
}

/** Whether the lock `file`, whose text is `text`, is a dead holder's: untouched for LOCK_STALE_MS, or its holder gone. */
function isDead(file: string, text: string): boolean {
  return Date.now() - statSync(file).mtimeMs >= LOCK_STALE_MS || holderGone(text);
}

/** The breaker a taker holds while it judges a dead holder's lock and removes it: beside the lock, named after it. */
export const breakerOf = (file: string): string => `${file}-break`;
/**
 * A breaker is held for a few system calls; one seen unchanged for this
 * long, by this process's own clock, was left by a taker killed while it
 * held it, and is removed. Its mtime alone would do only where every host
 * sharing the folder has one clock: a host 5 s ahead would take every fresh
 * breaker for a dead one.
 */
export const BREAKER_STALE_MS = 5_000;
/** A breaker whose mtime is this old is a dead taker's whatever this process has seen of it (clocks a minute apart are broken anyway). */
export const BREAKER_LEFT_MS = 60_000;

/**
 * Breakers found held, by identity (device, inode, mtime), and since when
 * (performance.now()): one seen unchanged for BREAKER_STALE_MS is a dead
 * taker's. Not by path: a lock's path goes through its folder's descriptor
 * (/proc/self/fd/N/), and N names another folder once it is closed.
 */
const breakersSeen = new Map<string, number>();

/**
 * A dead holder's lock, removed so that the next try takes it. One taker at
 * a time, under the breaker: two takers that had both judged the lock dead
 * each removed it, and the second removed the lock the first had just made
 * (both then held it: 4 threads taking each of 1,000 dead locks at once,
 * 89 taken twice over 6 runs; none since). Under the breaker the lock is judged again and
 * removed with no other taker between. Only a holder too slow to be believed
 * alive (LOCK_STALE_MS without a refresh) can still lose its lock, as before.
 */
function takeOverDead(file: string): boolean {
  try {
    if (!isDead(file, readFileSync(file, 'utf8'))) return false;
  } catch (error) {
    return errnoCode(error) === 'ENOENT'; // released meanwhile: try again at once
  }
  const breaker = breakerOf(file);
  let ours: number | bigint;
  try {
    const fd = openSync(breaker, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
    try {
      ours = fstatSync(fd).ino;
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT') return true; // the folder is gone: the next try finds that out
    if (code !== 'EEXIST') throw error; // no room, no descriptors, no right: said, not waited out as a busy lock
    removeDeadBreaker(breaker);
    return false; // another taker is at it: its lock, or its breaker's end, is seen at the next try
  }
  try {
    if (!isDead(file, readFileSync(file, 'utf8'))) return false; // taken by another taker meanwhile
    unlinkSync(file);
    return true;
  } catch (error) {
    return errnoCode(error) === 'ENOENT';
  } finally {
    // Only our own: one removed as a dead taker's (we stalled past BREAKER_STALE_MS) may be another taker's now.
    removeIf(breaker, (stats) => stats.ino === ours);
  }
}

/** A breaker a taker was killed holding: seen unchanged for BREAKER_STALE_MS, or with an mtime BREAKER_LEFT_MS old. */
function removeDeadBreaker(breaker: string): void {
  let stats: Stats;
  try {
    stats = lstatSync(breaker);
  } catch {
    return; // gone meanwhile: its taker finished
  }
  const identity = `${stats.dev}:${stats.ino}:${stats.mtimeMs}`;
  const now = performance.now();
  // Those seen long ago ended with their taker (or were removed): forgotten, so the map stays small.
  for (const [old, since] of breakersSeen) if (now - since >= BREAKER_LEFT_MS) breakersSeen.delete(old);
  const since = breakersSeen.get(identity);
  if (since === undefined) breakersSeen.set(identity, now);
  const dead = (since !== undefined && now - since >= BREAKER_STALE_MS) || Date.now() - stats.mtimeMs >= BREAKER_LEFT_MS;
  if (!dead) return;
  breakersSeen.delete(identity);
  // The one judged, not one a taker has made since (another remover was first).
  removeIf(breaker, (now) => now.ino === stats.ino && now.mtimeMs === stats.mtimeMs);
}

/** Removes `path` if it is there and `is` it. */
function removeIf(path: string, is: (stats: Stats) => boolean): void {
  try {
    if (is(lstatSync(path))) unlinkSync(path);
  } catch {
    // gone already
  }
}

function held(file: string, token: string): HeldFileLock {
  const refresh = setInterval(() => {
    const now = new Date();
    try {
      utimesSync(file, now, now);
    } catch {
      // taken over (we were too slow to be believed alive) or removed: the change's own checks still hold
    }
  }, LOCK_REFRESH_MS);
  refresh.unref();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      clearInterval(refresh);
      try {
        // Only our own: a lock taken over as stale (this holder was too slow to be believed alive) is another's now.
        if (readFileSync(file, 'utf8') === token) unlinkSync(file);
      } catch {
        // already gone: nothing to give back
      }
    },
  };
}
