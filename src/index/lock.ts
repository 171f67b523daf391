// One server per index file. Two processes scanning into one database would
// undo each other's work (a cold scan starts by emptying the table), so the
// first takes `<db>.lock` (`folder-mcp <pid>`, created exclusively) and a
// second, while that process lives, takes a spare file of the default place
// (spare-index.ts) or keeps its index in memory. A lock left by a process
// that died is taken over.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, linkSync, mkdirSync, openSync, readFileSync, readSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { isNoEntry, pidRuns } from '../errno.ts';

/** Not acquired: held by `heldBy` (NaN: not known), or (`foreign`) the file of the lock's name is not a lock of ours. */
export type LockResult = { acquired: true; release(): void } | { acquired: false; heldBy: number; foreign?: true };

/** Whether `pid` is a live folder-mcp: it exists, and where /proc tells, runs our CLI (a zombie or a reused pid does not). */
function alive(pid: number): boolean {
  if (!pidRuns(pid)) return false;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('folder-mcp') || cmdline.includes('cli.js');
  } catch {
    return true; // no /proc: trust the signal check
  }
}

/**
 * Takes `<dbFile>.lock`. `barePidIsOurs`: asked only of a lock holding a pid
 * alone that a running program other than folder-mcp has, whether it is
 * ours all the same (a server before the mark died and its pid was reused):
 * in folder-mcp's own cache folder, or beside an index of ours, it is.
 */
export function acquireDbLock(
  dbFile: string,
  isAlive: (pid: number) => boolean = alive,
  runs: (pid: number) => boolean = pidRuns,
  barePidIsOurs: () => boolean = () => false,
): LockResult {
  const path = `${dbFile}.lock`;
  mkdirSync(dirname(dbFile), { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
    if (publish(path, `${LOCK_MARK}${process.pid}`)) {
      return {
        acquired: true,
        release() {
          try {
            const text = readLockFile(path);
            if (text !== null && readLock(text)?.pid === process.pid) unlinkSync(path);
          } catch {
            // already gone
          }
        },
      };
    }
    let text: string | null;
    try {
      text = readLockFile(path);
    } catch {
      continue; // released meanwhile: try again
    }
    // A folder, a FIFO (whose read waited for a writer: the start hung), a device: no lock of ours.
    if (text === null) return { acquired: false, heldBy: NaN, foreign: true };
    // Not a lock of ours (a project's Cargo.lock, for --db Cargo; a running program's pid file): never deleted. The
    // start-up check refuses such a path (db-file.ts); one that appears afterwards leaves this server's index in memory.
    const lock = readLock(text);
    if (lock === null || !(isOurLock(lock, isAlive, runs) || barePidIsOurs())) return { acquired: false, heldBy: NaN, foreign: true };
    const holder = lock.pid;
    if (holder > 0 && holder !== process.pid && isAlive(holder)) return { acquired: false, heldBy: holder };
    // Stale: its process is gone (or died before writing its pid). Another server taking it over now waits its turn.
    if (!removeStale(path, text, runs)) sleep(TAKEOVER_WAIT_MS);
  }
  return { acquired: false, heldBy: NaN };
}

/**
 * Makes the file `path` holding `text`, unless there is one: false then.
 * Whole at once, by a hard link to a file written beside it: made empty and
 * written after, a lock could be read in between, judged stale (no pid) and
 * removed by a server taking it over, and two servers held it (a review
 * finding). Where a file system has no hard links, made and written.
 */
function publish(path: string, text: string): boolean {
  const written = `${path}.${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    writeFileSync(written, text, { flag: 'wx', mode: 0o600 });
  } catch {
    // Made but not written (a full disk): not left behind.
    removeQuietly(written);
    return publishInPlace(path, text);
  }
  try {
    linkSync(written, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    return publishInPlace(path, text);
  } finally {
    unlinkSync(written);
  }
}

function publishInPlace(path: string, text: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(fd, text);
  } catch (error) {
    // Ours, made empty: not left to look like a lock whose server died before writing its pid.
    closeSync(fd);
    removeQuietly(path);
    throw error;
  }
  closeSync(fd);
  return true;
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone, or not ours to remove
  }
}

/** Tries to take the lock, or to take a stale one over, this often before the index is kept in memory. */
const TAKE_ATTEMPTS = 50;
/** How long a server waits while another takes a stale lock over. */
const TAKEOVER_WAIT_MS = 20;
/** A takeover's guard this old is left over from a process that died during one (it takes milliseconds). */
const GUARD_STALE_MS = 10_000;

/**
 * Removes the stale lock at `path` if it still holds `staleText`, while
 * holding `<path>.takeover` (made exclusively, our pid in it). Two servers
 * that both read the stale lock each removed whatever was there when they
 * got to it: one removed the lock the other had just made, and both went on
 * to write one index (a red-team finding: 3 in 20 trials of three starts at
 * once; 1 in 40 crash-restarts of real servers). False when another server
 * is taking it over.
 */
function removeStale(path: string, staleText: string, runs: (pid: number) => boolean): boolean {
  const guard = `${path}.takeover`;
  if (!publish(guard, `${LOCK_MARK}${process.pid}`)) {
    removeDeadGuard(guard, runs);
    return false;
  }
  try {
    if (readLockFile(path) === staleText) unlinkSync(path);
  } catch (error) {
    // Gone meanwhile, or not ours to remove (a folder we may not write): the next attempt tells.
    if (!isNoEntry(error) && (error as NodeJS.ErrnoException).code !== 'EACCES' && (error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
  } finally {
    removeIfThere(guard);
  }
  return true;
}

/** Longest text a lock of ours can hold (the mark and a pid); a longer file is no lock of ours. */
const MAX_LOCK_BYTES = 64;

/**
 * The text of the lock file at `path`, or null when it is not a regular file
 * of at most MAX_LOCK_BYTES. Opened without blocking and judged by what was
 * opened: a FIFO put there held the start for good. Throws when there is none.
 */
function readLockFile(path: string): string | null {
  const fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const file = fstatSync(fd);
    if (!file.isFile() || file.size > MAX_LOCK_BYTES) return null;
    const text = Buffer.alloc(MAX_LOCK_BYTES);
    return text.subarray(0, readSync(fd, text, 0, MAX_LOCK_BYTES, 0)).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function removeIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (!isNoEntry(error)) throw error;
  }
}

/**
 * A guard whose process is gone, or older than any takeover takes, is
 * removed (one not yet written has no pid: only its age tells). Two servers
 * finding one such guard at once may yet both get past it; that takes a
 * server dying within the few milliseconds of a takeover first.
 */
function removeDeadGuard(guard: string, runs: (pid: number) => boolean): void {
  try {
    const text = readLockFile(guard);
    // Not a file: not ours to remove (the attempts run out, and the index is kept in memory).
    if (text === null) return;
    const holder = readLock(text)?.pid ?? 0;
    // Our own pid in it: left by a process before this one that had it (pid 1 in a container started again).
    const dead = holder > 0 && (holder === process.pid || !runs(holder));
    if (dead || Date.now() - statSync(guard).mtimeMs > GUARD_STALE_MS) unlinkSync(guard);
  } catch (error) {
    if (!isNoEntry(error)) throw error;
  }
}

/** Blocks this thread for `ms` (start-up only: the lock is taken before anything is served). */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** What a lock holds from this version on: the mark, then the pid. */
const LOCK_MARK = 'folder-mcp ';

/**
 * A lock's text: `folder-mcp <pid>`, or, as servers before the mark wrote
 * it, the pid alone, or nothing (a process that died between creating it and
 * writing); null when it is no such text.
 */
export function readLock(text: string): { pid: number; marked: boolean } | null {
  const found = /^(folder-mcp )?(\d{0,10})$/.exec(text.trim());
  return found && text.length <= 32 ? { pid: Number(found[2]), marked: found[1] !== undefined } : null;
}

/**
 * Whether a lock is one of ours to judge and, its process gone, take over.
 * A marked one is. A pid alone is what any program's pid file holds too:
 * `--db run/mydaemon` deleted a running daemon's `run/mydaemon.lock`. So it
 * is ours unless a process that is not folder-mcp runs with that pid (where
 * /proc cannot tell, every live process counts as folder-mcp, and its lock
 * is left alone as held).
 */
export function isOurLock(lock: { pid: number; marked: boolean }, isAlive: (pid: number) => boolean = alive, runs: (pid: number) => boolean = pidRuns): boolean {
  return lock.marked || lock.pid === 0 || !runs(lock.pid) || isAlive(lock.pid);
}
