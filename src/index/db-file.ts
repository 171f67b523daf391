// May folder-mcp use this path as its index file? Decided once at start-up,
// before anything is served, so that a typo on the command line never
// destroys a file: the index is a cache the server deletes and rebuilds at
// will, so it may only ever delete and rebuild a file that it made.
import { accessSync, closeSync, constants, lstatSync, mkdirSync, openSync, readSync, rmdirSync, statSync, unlinkSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describeError, isNoEntry } from '../errno.ts';
import { isOurLock, readLock } from './lock.ts';
import { chooseDriver, openDatabase, type Database, type SqliteDriverName } from '../sqlite.ts';

/** The first 16 bytes of every SQLite 3 database file. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** The `meta` row that marks a database as a folder-mcp index (written with the schema, see db.ts). */
export const APP_MARK = { key: 'app', value: 'folder-mcp' } as const;

/**
 * What the file at `path` is, as an index: absent or empty (a new index may
 * be made there), a folder-mcp index (possibly of another schema version,
 * which is rebuilt), or something to refuse, with why.
 */
export type DbFileKind =
  | { kind: 'absent' | 'empty' | 'index' }
  /** `anywhere`: refused in folder-mcp's own cache folder too, where other files are rebuilt. */
  | { kind: 'refuse'; reason: string; anywhere?: true };

export function inspectDbFile(path: string, driver: SqliteDriverName = chooseDriver()): DbFileKind {
  let stats: Stats;
  try {
    stats = statSync(path);
  } catch (error) {
    if (isNoEntry(error)) {
      // A dangling symlink names a file that SQLite would create somewhere else.
      if (isSymlink(path)) return { kind: 'refuse', reason: 'is a symbolic link to nothing' };
      return { kind: 'absent' };
    }
    return { kind: 'refuse', reason: `cannot be examined (${describeError(error)})` };
  }
  if (stats.isDirectory()) return { kind: 'refuse', reason: 'is a folder, not a file', anywhere: true };
  if (!stats.isFile()) return { kind: 'refuse', reason: 'is not a regular file', anywhere: true };
  // Security: another name of the file may be a served one (an empty `served/empty.txt` hard-linked as the --db
  // became the index, and was served with the cursor key and the text of every file) or another program's.
  if (stats.nlink > 1) return { kind: 'refuse', reason: `has ${stats.nlink - 1} other name(s) (hard links), which would show the index`, anywhere: true };
  if (stats.size === 0) return { kind: 'empty' };
  let head: Buffer;
  try {
    head = headOf(path, SQLITE_HEADER.length);
  } catch (error) {
    return { kind: 'refuse', reason: `cannot be read (${describeError(error)})` };
  }
  if (!head.equals(SQLITE_HEADER)) return { kind: 'refuse', reason: 'is not an SQLite database, so not a folder-mcp index' };
  const owner = whose(path, driver);
  switch (owner) {
    case 'ours':
      return { kind: 'index' };
    case 'blank':
      return { kind: 'empty' };
    case 'theirs':
      return { kind: 'refuse', reason: 'is an SQLite database that folder-mcp did not make' };
    default:
      // Not "someone else's": a hot journal beside it can be what stops a read-only look.
      return { kind: 'refuse', reason: `cannot be read as an SQLite database to see whose it is (${owner.message})` };
  }
}

/**
 * A folder-mcp index has a `meta` table with our mark, or (an index written
 * before the mark existed) a `meta` table holding `cursor_secret` beside an
 * `entries` table. A blank database (no table, index, view or trigger, and
 * user_version and application_id 0) holds nothing to lose: it is what a
 * server killed before its schema was committed leaves (the header is
 * written when WAL mode is set, the schema a moment later), and is made an
 * index like an empty file. Read-only: nothing is written to a file not
 * known to be ours.
 */
function whose(path: string, driver: SqliteDriverName): 'ours' | 'blank' | 'theirs' | Error {
  let db: Database | undefined;
  try {
    db = openDatabase(path, driver, { readOnly: true });
    const schema = db.prepare(`SELECT type, name FROM sqlite_master`).all() as { type: string; name: string }[];
    if (schema.length === 0) {
      const blank = db.pragma('user_version') === 0 && db.pragma('application_id') === 0;
      return blank ? 'blank' : 'theirs';
    }
    const tables = new Set(schema.filter((s) => s.type === 'table').map((t) => t.name));
    if (!tables.has('meta')) return 'theirs';
    const keys = new Map((db.prepare(`SELECT key, value FROM meta`).all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
    return keys.get(APP_MARK.key) === APP_MARK.value || (keys.has('cursor_secret') && tables.has('entries')) ? 'ours' : 'theirs';
  } catch (error) {
    // Unreadable as a database (corrupt, locked, encrypted, a hot journal beside it): nothing says it is ours.
    return error instanceof Error ? error : new Error(String(error));
  } finally {
    db?.close();
  }
}

/** The first eight bytes of a rollback journal. */
const JOURNAL_MAGIC = Buffer.from('d9d505f920a163d7', 'hex');
/** The first four bytes of a write-ahead log, big-endian (two checksum byte orders). */
const WAL_MAGIC = new Set([0x377f0682, 0x377f0683]);
/** The first field of a WAL index (-shm), in the byte order of the machine that wrote it. */
const SHM_VERSION = 3007000;

/**
 * A file beside an index at `path` that the server would overwrite or
 * delete, and that is not the index's own, in words; null when there is
 * none. The lock, `<path>.lock`, is taken over when its process is gone,
 * and SQLite takes the files named `<path>-wal` and `<path>-shm` as its own
 * and rewrites them: `--db Cargo` in a Rust project would have deleted
 * Cargo.lock, and `--db notes` a file named notes-wal. A file of those
 * names that its first bytes show to be what the server would make (a lock
 * of ours, lock.ts isOurLock, and not a running program's pid file; SQLite's
 * headers) is not refused, nor an empty one. Beside an index of
 * ours (`ourIndex`) SQLite's files are that index's, whatever state a killed
 * server left them in (a -shm it had only begun), so only the lock is
 * looked at. SQLite also takes `<path>-journal` (deleted beside an empty
 * database, played back as a hot journal beside another).
 */
export function foreignFileBeside(path: string, ourIndex = false): string | null {
  const lock = `${path}.lock`;
  // Beside an index of ours, a pid alone is a lock a server before the mark left, whoever has that pid now.
  const ourLock = (head: Buffer, size: number) => size <= 32 && (ourIndex ? readLock(head.toString('latin1')) !== null : isOurLockText(head.toString('latin1')));
  if (!isOwnFile(lock, ourLock)) return `${lock} is there and is not a folder-mcp lock`;
  if (ourIndex) return null;
  const journal = `${path}-journal`;
  if (!isOwnFile(journal, isJournalHead)) return `${journal} is there and is not SQLite's rollback journal`;
  const wal = `${path}-wal`;
  if (!isOwnFile(wal, (head) => head.length >= 4 && WAL_MAGIC.has(head.readUInt32BE(0)))) return `${wal} is there and is not SQLite's write-ahead log`;
  const shm = `${path}-shm`;
  if (!isOwnFile(shm, (head) => head.length >= 4 && (head.readUInt32LE(0) === SHM_VERSION || head.readUInt32BE(0) === SHM_VERSION))) {
    return `${shm} is there and is not SQLite's shared-memory file`;
  }
  return null;
}

/** The names SQLite and the lock give an index's files: each must be the server's own user's. */
const SIDE_FILES = ['', '-wal', '-shm', '-journal', '.lock'] as const;

/**
 * Whether other users could read an index at `path` (the text of every
 * served file, and the cursor key) through a file they own: one of its files
 * made by another user first (SQLite writes into an existing -wal as into
 * its own, and the index is then made 0600 only where it is ours), or a
 * folder every user may write, where one can make such a file at any time
 * (`--db /tmp/idx.db`). Pure: `uid` is the server's user, `files` the
 * index's files that exist, with their owners, and `folder` the folder they
 * are in, with its mode. Not asked on Windows, which has no uid.
 */
export function sharedPlaceProblem(uid: number, folder: { path: string; mode: number }, files: readonly { path: string; uid: number }[]): string | null {
  const foreign = files.find((file) => file.uid !== uid);
  if (foreign) return `${foreign.path} belongs to another user (uid ${foreign.uid}), who could read the index (the text of every served file) through it; remove it, or give another path`;
  if ((folder.mode & 0o002) !== 0) {
    return `its folder ${folder.path} can be written by every user, any of whom could make the index's -wal file there first and read the index (the text of every served file) through it; give a folder only you can write (a folder not there yet is made so: --db ${folder.path}/<a new folder>/index.db)`;
  }
  return null;
}

/** sharedPlaceProblem on the disk as it is now (null on Windows, or where nothing can be looked at). */
function sharedPlaceOf(path: string): string | null {
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  const folder = dirname(resolve(path));
  let mode: number;
  try {
    mode = statSync(folder).mode;
  } catch {
    return null; // not there yet: made by the server, 0700
  }
  const files: { path: string; uid: number }[] = [];
  for (const suffix of SIDE_FILES) {
    try {
      files.push({ path: `${path}${suffix}`, uid: lstatSync(`${path}${suffix}`).uid });
    } catch {
      // not there
    }
  }
  return sharedPlaceProblem(uid, { path: folder, mode }, files);
}

/**
 * A rollback journal's first bytes: its magic, or (SQLite writes the header
 * with the magic zeroed until the journal is synced) eight zero bytes before
 * a sector size and a page size that are powers of two from 512 to 65536. A
 * server killed while making a new index leaves the second beside an empty
 * file, and every start after it was refused. Pure.
 */
export function isJournalHead(head: Buffer): boolean {
  if (head.length >= 8 && head.subarray(0, 8).equals(JOURNAL_MAGIC)) return true;
  if (head.length < 28 || !head.subarray(0, 8).equals(Buffer.alloc(8))) return false;
  const sizeLike = (n: number) => n >= 512 && n <= 65536 && (n & (n - 1)) === 0;
  return sizeLike(head.readUInt32BE(20)) && sizeLike(head.readUInt32BE(24));
}

function isOurLockText(text: string): boolean {
  const lock = readLock(text);
  return lock !== null && isOurLock(lock);
}

/** Absent, empty, or a regular file whose first bytes pass `looksOurs` (never a link, a folder or a FIFO). */
function isOwnFile(path: string, looksOurs: (head: Buffer, size: number) => boolean): boolean {
  let stats: Stats;
  try {
    stats = lstatSync(path);
  } catch (error) {
    return isNoEntry(error);
  }
  if (!stats.isFile()) return false;
  if (stats.size === 0) return true;
  try {
    return looksOurs(headOf(path, 32), stats.size);
  } catch {
    return false;
  }
}

/** The first `length` bytes of the file at `path` (fewer when it is shorter). */
function headOf(path: string, length: number): Buffer {
  const head = Buffer.alloc(length);
  // O_NONBLOCK: a file swapped for a FIFO since it was looked at does not hang start-up.
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    return head.subarray(0, readSync(fd, head, 0, length, 0));
  } finally {
    closeSync(fd);
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Whether a new index file can be made at `path`: its folder is made if
 * missing (private), and a probe file is created there and removed at once,
 * so that the server writes nothing at start-up yet an unwritable place is
 * known before anything is served. Returns why not, or null.
 */
export function cannotCreate(path: string): string | null {
  const dir = dirname(path);
  const probe = `${path}.${process.pid}.probe`;
  let made: string | undefined;
  try {
    made = mkdirSync(dir, { recursive: true, mode: 0o700 });
    closeSync(openSync(probe, 'wx', 0o600));
    unlinkSync(probe);
    return null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return `cannot be created (${code ?? (error as Error).message} in ${dir})`;
  } finally {
    // The folders the probe made go again: the index makes them when it is opened, and a start that goes no
    // further (a port in use) leaves nothing behind (issue 46).
    // Folder by folder, deepest first, and only while empty: another server starting at once may have put its
    // index there meanwhile.
    for (let at = dir; made !== undefined && at.length >= made.length; at = dirname(at)) {
      try {
        rmdirSync(at);
      } catch {
        break;
      }
    }
  }
}

function cannotWrite(path: string): string | null {
  try {
    accessSync(path, constants.W_OK);
    return null;
  } catch (error) {
    return `is not writable (${describeError(error)})`;
  }
}

/**
 * The start-up check of the index path: null when the server may use it, or
 * the one line to print before exiting with 2. `ownedLocation`: the default
 * place in our own cache folder, where whatever is there is ours to rebuild
 * (a corrupt index included); a path given with --db must prove it.
 */
export function dbFileProblem(path: string, ownedLocation: boolean, driver: SqliteDriverName = chooseDriver()): string | null {
  if (path === ':memory:') return null;
  const what = ownedLocation ? `the index file ${path}` : `--db ${path}`;
  const found = inspectDbFile(path, driver);
  switch (found.kind) {
    case 'absent':
    case 'empty':
    case 'index': {
      // SQLite writes the file and, beside it, its -wal and -shm files.
      const why = cannotCreate(path) ?? (found.kind === 'absent' ? null : cannotWrite(path));
      if (why !== null) return `${what} ${why}${ownedLocation ? '; give a writable place with --db PATH (or --db :memory:)' : ''}`;
      // Our own cache folder holds nothing but indexes and what comes with them.
      const beside = ownedLocation ? null : foreignFileBeside(path, found.kind === 'index');
      if (beside !== null) return `${what}: ${beside}; refusing to overwrite it: give another path, or remove it yourself`;
      const shared = sharedPlaceOf(path);
      return shared === null ? null : `${what}: ${shared}`;
    }
    case 'refuse':
      // Our own cache folder: a file there that is no index of ours (corrupt, or an old format) is rebuilt.
      if (ownedLocation && !found.anywhere) return null;
      return `${what} ${found.reason}; refusing to overwrite it: give another path, or remove it yourself`;
  }
}
