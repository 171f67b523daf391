// One writer per path. Every write tool takes its paths here before it looks
// at the disk and gives them back after the change (src/catalog/write-tools.ts):
// two edits of one file run one after the other, so the second reads what
// the first wrote. One table per process, shared by every connection and
// transport (it lives in the ServerContext), keyed by real paths, so two
// spellings of one file are one key; then, for other folder-mcp processes
// on the same folder, a lock file per changed file (file-locks.ts).
//
// A `tree` hold (a move's two ends) covers everything beneath its path too:
// an edit of `d/f.txt` and a move of `d` never overlap. Holds are granted
// all at once and in arrival order: a call never holds one path while it
// waits for another (no deadlock), and a stream of edits of one file cannot
// starve a move of its folder.
import { realpathSync } from 'node:fs';
import { basename, childPrefix, dirname, foldName, foldsNames, join, toSlashPath } from '../fs-path.ts';
import { FileLockTimeout, lockFiles, type HeldFileLock } from './file-locks.ts';

export interface PathHold {
  /** Absolute, normalised. */
  path: string;
  /** Also everything beneath `path`. */
  tree?: boolean;
}

/** A wait for a path past PathLocks' time limit: the change was not made. */
export class PathBusyError extends Error {
  override name = 'PathBusyError';
  constructor(readonly path: string, waitedMs: number, by = '') {
    super(`another change to it (or to a folder it is in)${by ? ` by ${by}` : ''} has been running for ${Math.round(waitedMs / 1000)} s; nothing was changed, try again`);
  }
}

interface Request {
  holds: { key: string; tree: boolean }[];
  grant: () => void;
  granted: boolean;
}

/** Waits longer than this for a path are refused (PathBusyError): a change is seconds at most. */
export const PATH_LOCK_WAIT_MS = 30_000;

/** Files whose last write by this server is remembered (PathLocks.noteWritten), most recent kept. */
const WRITTEN_KEPT = 1000;

export class PathLocks {
  /** Granted and waiting requests, in arrival order. */
  private readonly queue: Request[] = [];
  /** The file each of the last writes left at a path (inode and mtime): nobody else wrote it since if it is still that. */
  private readonly written = new Map<string, { ino: bigint; mtimeNs: bigint }>();

  constructor(
    private readonly waitMs = PATH_LOCK_WAIT_MS,
    /** Whose rules fold spellings into one key (lockKey); a parameter so that tests run Windows' on Linux. */
    private readonly platform: NodeJS.Platform = process.platform,
  ) {}

  /** How many requests hold or wait (for tests: the table empties when every change is over). */
  get size(): number {
    return this.queue.length;
  }

  /**
   * Runs `change` holding every path of `holds`, granted at once when no
   * earlier request overlaps them; else after those are done. Refuses with
   * PathBusyError past the wait limit.
   */
  async run<T>(holds: readonly PathHold[], change: () => Promise<T>): Promise<T> {
    const request: Request = { holds: holds.map((h) => ({ key: lockKey(h.path, this.platform), tree: h.tree === true })), grant: () => {}, granted: false };
    const granted = new Promise<void>((resolve) => (request.grant = resolve));
    this.queue.push(request);
    this.pump();
    const started = performance.now();
    if (!request.granted) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.waitMs)));
      const outcome = await Promise.race([granted, timedOut]);
      clearTimeout(timer);
      if (outcome === 'timeout' && !request.granted) {
        this.remove(request);
        throw new PathBusyError(holds[0]?.path ?? '', performance.now() - started);
      }
    }
    // Then the other processes' (file-locks.ts), within what is left of the same wait.
    let files: HeldFileLock;
    try {
      files = await lockFiles(holds.map((h) => h.path), started + this.waitMs, foldsNames(this.platform));
    } catch (error) {
      this.remove(request);
      if (error instanceof FileLockTimeout) throw new PathBusyError(holds[0]?.path ?? '', performance.now() - started, 'another folder-mcp process');
      throw error;
    }
    try {
      return await change();
    } finally {
      files.release();
      this.remove(request);
    }
  }

  /** Remembers what a write of this server left at `path`. */
  noteWritten(path: string, file: { ino: bigint; mtimeNs: bigint }): void {
    const key = lockKey(path, this.platform);
    this.written.delete(key);
    this.written.set(key, file);
    if (this.written.size > WRITTEN_KEPT) this.written.delete(this.written.keys().next().value!);
  }

  /** Is `file` what this server's last write left at `path`, untouched since (same inode and mtime)? */
  wroteLast(path: string, file: { ino: bigint; mtimeNs: bigint }): boolean {
    const last = this.written.get(lockKey(path, this.platform));
    return last !== undefined && last.ino === file.ino && last.mtimeNs === file.mtimeNs;
  }

  private remove(request: Request): void {
    const at = this.queue.indexOf(request);
    if (at >= 0) this.queue.splice(at, 1);
    this.pump();
  }

  /** Grants each waiting request that overlaps no request before it (granted or not: arrival order). */
  private pump(): void {
    for (const [i, request] of this.queue.entries()) {
      if (request.granted) continue;
      if (this.queue.slice(0, i).some((earlier) => overlaps(earlier, request))) continue;
      request.granted = true;
      request.grant();
    }
  }
}

function overlaps(a: Request, b: Request): boolean {
  return a.holds.some((x) => b.holds.some((y) => x.key === y.key || (x.tree && under(y.key, x.key)) || (y.tree && under(x.key, y.key))));
}

function under(path: string, folder: string): boolean {
  return path.startsWith(childPrefix(folder));
}

/**
 * The key of `path`: its real path, or for a path that does not exist (yet)
 * the real path of its deepest existing folder plus the rest, so that
 * spellings through a symlinked folder meet. Where volumes ignore case and
 * Unicode normalization by default (Windows, macOS), the key is folded too:
 * `Notes.txt` and `notes.txt`, or `café` composed and decomposed, are one
 * file there, so they take one lock, whether the file exists yet or not
 * (realpath spells what exists as on disk; what does not, it cannot). On a
 * case-sensitive volume of those platforms two such files share a lock: they
 * wait for each other, nothing more. Pure but for realpath.
 */
export function lockKey(path: string, platform: NodeJS.Platform = process.platform): string {
  const rest: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    try {
      const real = toSlashPath(realpathSync.native(at));
      return foldKey(rest.length === 0 ? real : join(real, ...rest.reverse()), platform);
    } catch {
      if (dirname(at) === at) return foldKey(path, platform);
      rest.push(basename(at));
    }
  }
}

function foldKey(key: string, platform: NodeJS.Platform): string {
  return foldsNames(platform) ? foldName(key) : key;
}

/**
 * Runs one job at a time, in arrival order: the text work of large edits,
 * for every client of a server (src/catalog/edit-text.ts LARGE_EDIT_BYTES).
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(job: () => Promise<T>): Promise<T> {
    const result = this.tail.then(job, job);
    this.tail = result.catch(() => {});
    return result;
  }
}
