// The spare index files of the default place. One server uses an index file
// at a time (lock.ts); a server that finds the first in use by another
// (Claude Desktop and Claude Code on one folder) takes the next free spare
// beside it, kept between runs as the first is: it starts warm too, and its
// search runs on its own thread (an index in memory searched on the main
// thread, and held the whole index, text included, in the process's heap).
import { lstatSync, statfsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { describeError } from '../errno.ts';
import type { Logger } from '../log.ts';
import type { SqliteDriverName } from '../sqlite.ts';
import { dbFileProblem } from './db-file.ts';
import { acquireDbLock, type LockResult } from './lock.ts';

/** How many index files the default place has for one set of folders: `<key>.db`, then `<key>-2.db` and `<key>-3.db`. */
export const DEFAULT_INDEX_FILES = 3;

/** Free space a spare leaves beyond twice the first file's size: a spare grows to about the first's size. */
const SPARE_FREE_MARGIN_BYTES = 64 * 1024 * 1024;

/** The `n`th (from 2) index file of the default place whose first is `dbFile` (`<key>.db` -> `<key>-n.db`). */
export function spareIndexPath(dbFile: string, n: number): string {
  return dbFile.replace(/(\.db)?$/, `-${n}.db`);
}

/**
 * The next spare of the default place whose first is `first` that no server
 * holds, with its lock; null when each is held or unusable (then the index
 * is kept in memory, as before spares). A spare is passed over, with a
 * warning, when the start-up check would refuse it, when it is not a plain
 * file (a symlink: to the first file, two servers wrote one index), when
 * taking its lock fails, or when its folder lacks room for a copy of the
 * first file (a spare filling a disk stopped the first server's updates).
 */
export function takeSpareIndex(first: string, driver: SqliteDriverName, log: Logger): { dbFile: string; lock: LockResult & { acquired: true } } | null {
  const room = roomFor(first);
  if (room !== null) {
    log.warn(`no spare index file beside ${first}: ${room}`);
    return null;
  }
  for (let n = 2; n <= DEFAULT_INDEX_FILES; n++) {
    const dbFile = spareIndexPath(first, n);
    const why = notPlain(dbFile) ?? dbFileProblem(dbFile, true, driver);
    if (why !== null) {
      log.warn(`the spare index file ${dbFile} is passed over: ${why}`);
      continue;
    }
    try {
      // Our own cache folder: a pid alone in its lock is a server of ours whose pid was reused.
      const lock = acquireDbLock(dbFile, undefined, undefined, () => true);
      if (lock.acquired) return { dbFile, lock };
    } catch (error) {
      log.warn(`the spare index file ${dbFile} is passed over: its lock cannot be taken (${describeError(error)})`);
    }
  }
  return null;
}

/** Why a spare at `path` may not be opened as a file of ours: a symlink or anything but a regular file; null when none is there. */
function notPlain(path: string): string | null {
  for (const file of [path, `${path}.lock`]) {
    try {
      const found = lstatSync(file);
      if (!found.isFile()) return `${file} is not a regular file`;
    } catch {
      // none there
    }
  }
  return null;
}

/** Why the folder of `first` has no room for a spare: less free than twice the first file (and its WAL) and a margin; null when it has. */
function roomFor(first: string): string | null {
  let used = 0;
  for (const file of [first, `${first}-wal`]) {
    try {
      used += statSync(file).size;
    } catch {
      // none yet
    }
  }
  try {
    const disk = statfsSync(dirname(first));
    const free = disk.bavail * disk.bsize;
    const needed = 2 * used + SPARE_FREE_MARGIN_BYTES;
    return free >= needed ? null : `${Math.floor(free / 2 ** 20)} MiB free, ${Math.ceil(needed / 2 ** 20)} MiB wanted`;
  } catch {
    return null; // no free-space figure here: the spare is tried
  }
}
