import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../log.ts';
import { chooseDriver, isSqliteError, openDatabase, type Database, type SqliteDriverName } from '../sqlite.ts';
import { APP_MARK, inspectDbFile } from './db-file.ts';

export type Db = Database;

/**
 * Bump when the schema or the meaning of a column changes: an index file with
 * another version is rebuilt from the disk, never migrated in place.
 */
export const SCHEMA_VERSION = 8;

/**
 * Bytes a page of a new index file (SQLite's default is 4,096). A row of
 * `entries` is about 250 bytes with its two keys of a URI, so 4 KiB pages
 * hold few rows and split often. Inserting the bench's 100k rows in
 * 2,000-row transactions (the two scan indexes kept) took 784 ms of CPU with
 * 4 KiB pages and 540 with 16 KiB on better-sqlite3, 674 and 526 on
 * node:sqlite; reading them back by keyset pages took as long (medians of 6
 * and 5 alternating runs; 32 and 64 KiB were slower). The whole index at
 * 100k, content index included, grew 0.4% (154.5 MB). An existing file keeps
 * the size it was made with (openExisting).
 */
export const PAGE_SIZE = 16384;

// Keyset order: `uri` is TEXT with BINARY collation, and canonical URIs are
// ASCII, so SQLite order == JS string order == byte order. Every ordering in the
// project relies on this one fact (see src/uri.ts).
const SCHEMA = `
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE entries (
  uri    TEXT PRIMARY KEY,        -- canonical file URI; collections end in '/'
  parent TEXT,                    -- URI of the containing collection; NULL for a root
  root   INTEGER NOT NULL,        -- position of the served root in the roots list
  name   TEXT NOT NULL,           -- basename (a root: its folder name), decoded
  ext    TEXT NOT NULL,           -- text after the last '.' of name ('' when none), case kept
  kind   INTEGER NOT NULL,        -- 0 = document, 1 = collection
  size   INTEGER NOT NULL,        -- bytes (0 for collections)
  mtime  REAL NOT NULL,           -- modification time, ms since the epoch
  mime   TEXT NOT NULL,           -- primary MIME type
  ino    INTEGER NOT NULL,        -- inode number: with dev, the entry's identity on disk
  dev    INTEGER NOT NULL         -- device number
) WITHOUT ROWID;

-- The content index behind the search tool (src/search/content-search.ts).
CREATE TABLE search_docs (
  id    INTEGER PRIMARY KEY,     -- rowid of the document's row in search_fts
  uri   TEXT NOT NULL UNIQUE,
  mtime REAL NOT NULL,           -- entries.mtime when the text was read
  size  INTEGER NOT NULL,        -- entries.size when the text was read
  text  INTEGER NOT NULL,        -- 1: text is in search_fts; 0: not text, nothing indexed
  form  TEXT,                    -- MIME type of the converted text indexed (a format alternative); NULL: the file's own text
  places TEXT                    -- JSON [[offset, "page" | "cell", number], ...] where pages or cells start in that text
);
-- prefix = '3': three-letter prefix queries (word*) come from an index, not a scan of the vocabulary.
CREATE VIRTUAL TABLE search_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2', prefix = '3');

-- Meaning search (src/search/embeddings.ts, opt-in): each document's text in search_fts cut into
-- chunks (src/search/chunks.ts) and the model's vector of each; the model and dimension are in meta.
CREATE TABLE search_chunks (
  id         INTEGER PRIMARY KEY,
  doc        INTEGER NOT NULL,  -- search_docs.id (removed with it)
  start      INTEGER NOT NULL,  -- offset of the chunk in the document's indexed text
  length     INTEGER NOT NULL,  -- its length (UTF-16 code units)
  line_start INTEGER NOT NULL,  -- 1-based lines it covers
  line_end   INTEGER NOT NULL,
  place      TEXT,              -- JSON [unit, number, name?]: the page, cell, sheet or slide it is in
  hash       TEXT NOT NULL,     -- of its text: a chunk is embedded again only when this changes
  scale      REAL NOT NULL,     -- vector = bytes * scale
  vec        BLOB NOT NULL      -- the vector, one signed byte per dimension (src/search/vectors.ts)
);
CREATE INDEX search_chunks_by_doc ON search_chunks (doc);
-- Documents whose chunks are current: embedded from the text of (mtime, size).
CREATE TABLE search_embedded (
  doc   INTEGER PRIMARY KEY,
  mtime REAL NOT NULL,
  size  INTEGER NOT NULL
);

-- Format conversions, cached by the file's (mtime, size) (src/content/formats.ts).
CREATE TABLE conversions (
  uri       TEXT NOT NULL,     -- document URI
  converter TEXT NOT NULL,     -- Converter.id (versioned)
  mtime     REAL NOT NULL,     -- of the file converted, ms since the epoch
  size      INTEGER NOT NULL,  -- of the file converted, bytes
  mime      TEXT NOT NULL,     -- of the alternative
  text      TEXT,              -- the alternative as text, or
  blob      BLOB,              -- the alternative as bytes, or
  error     TEXT,              -- why it was left out
  PRIMARY KEY (uri, converter)
);
`;

/**
 * Secondary indexes of `entries`, apart from the schema. A cold scan inserts
 * rows in key order, so some are cheap to keep as rows come and some are
 * not; measured at 100k entries (2,000-row transactions, 2 vCPU), inserting
 * took 418 ms with no secondary index, and each index added:
 *
 *   index               kept row by row   built at the end
 *   entries_by_parent   +133 ms           186 ms
 *   entries_by_ext       +57 ms           130 ms
 *   entries_by_name     +880 ms           134 ms
 *   entries_by_mtime    +666 ms           138 ms
 *
 * Keys by parent or extension land in a few hot spots of their B-trees
 * (the parents on the walk's path, the extensions in use); names and times
 * land anywhere. So the scan keeps the first two as it inserts (on the main
 * thread, which waits for the walk most of the time) and builds the other
 * two once at the end, where the build is the scan's serial tail.
 */
export const SCAN_INDEXES: Record<string, string> = {
  entries_by_parent: 'entries (parent, uri)',
  entries_by_ext: 'entries (ext, uri)',
};
export const BULK_INDEXES: Record<string, string> = {
  entries_by_name: 'entries (name, uri)',
  // The recent-changes prompt walks it backwards: its cost is the rows it returns.
  entries_by_mtime: 'entries (mtime)',
  // The other names of a hard-linked file written through one of them (Reconciler.paths). At 105k entries,
  // measured on a loaded 2-core machine: built in 1.4-2.1 s of a 26-40 s cold scan, +12.9 MiB (93.2 -> 106.1).
  entries_by_ino: 'entries (ino)',
};
export const SECONDARY_INDEXES: Record<string, string> = { ...SCAN_INDEXES, ...BULK_INDEXES };

/** The columns of `entries`, in EntryRow's order: every SELECT of whole rows uses this. */
export const ENTRY_COLUMNS = 'uri, parent, root, name, ext, kind, size, mtime, mime, ino, dev';

export function createSecondaryIndexes(db: Db, indexes: Record<string, string> = SECONDARY_INDEXES): void {
  for (const [name, on] of Object.entries(indexes)) db.exec(`CREATE INDEX IF NOT EXISTS ${name} ON ${on}`);
}

/**
 * Builds the secondary indexes not kept during the scan (BULK_INDEXES) on a
 * connection of its own (the cold scan's worker thread, once every batch is
 * committed: see scan-thread.ts), then checkpoints the WAL. The main thread
 * meanwhile answers pages from the primary key (WAL readers never wait for a
 * writer); it writes nothing until the scan is over.
 */
export function buildSecondaryIndexes(file: string, driver: SqliteDriverName): void {
  const db = openDatabase(file, driver);
  try {
    db.pragma('synchronous = OFF');
    // The sorts spill to temporary files past a small cache, not to memory: the
    // main connection already caches the table, and at 100k entries this kept
    // the server's peak RSS at 195 MiB instead of 284 (the build took as long).
    db.pragma('temp_store = FILE');
    db.pragma('cache_size = -2048');
    createSecondaryIndexes(db, BULK_INDEXES);
    // Under synchronous=NORMAL a checkpoint fsyncs: what the scan wrote is durable before 'scan_completed' is.
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

export function dropSecondaryIndexes(db: Db, indexes: Record<string, string>): void {
  for (const name of Object.keys(indexes)) db.exec(`DROP INDEX IF EXISTS ${name}`);
}


export interface OpenedDb {
  db: Db;
  /** True when the file held a current index from an earlier run. */
  warm: boolean;
}

/** An index of ours written by another schema version: rebuilt, never migrated. */
class SchemaVersionError extends Error {
  override name = 'SchemaVersionError';
}

/**
 * Opens (or creates) the index database. An index of ours with another
 * schema version, or one SQLite finds corrupt, is deleted and rebuilt with
 * a warning: the index is a cache of the disk, so nothing is lost. Only a
 * file this program made is ever deleted (`rebuildAnything`: the file is in
 * our own cache folder, so whatever is there is ours); any other failure
 * (the native module, a full disk, a file that is not ours) is thrown as it
 * is. cli.ts has checked the path at start-up (src/index/db-file.ts).
 */
export function openDb(file: string, log: Logger, rebuildAnything = false, driver: SqliteDriverName = chooseDriver()): OpenedDb {
  if (file !== ':memory:') {
    // Security: SQLite would open any database and a new schema would drop its tables.
    const found = inspectDbFile(file, driver);
    if (found.kind === 'refuse' && !rebuildAnything) throw new Error(`index file ${file} ${found.reason}: not touching it`);
    // Readable by the owner only: the index holds the text of every served file and the cursor key.
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    if (found.kind === 'refuse') {
      log.warn(`index at ${file} ${found.reason}; it is in folder-mcp's own cache folder, so it is rebuilt`);
      removeDbFiles(file);
    }
    makePrivate(file);
  }
  try {
    return openExisting(file, driver);
  } catch (error) {
    const unusable = isSqliteError(error) || error instanceof SchemaVersionError;
    if (!unusable || file === ':memory:') throw error;
    if (!rebuildAnything && inspectDbFile(file, driver).kind !== 'index') {
      throw new Error(`index file ${file} cannot be opened (${error.message}) and is not known to be a folder-mcp index: not touching it`);
    }
    log.warn(`index at ${file} is unusable (${error.message}); rebuilding it`);
    removeDbFiles(file);
    makePrivate(file);
    return openExisting(file, driver);
  }
}

/**
 * Creates the file 0600 before SQLite opens it (SQLite gives the -wal and
 * -shm files the database file's mode), or narrows an existing file of ours
 * to 0600.
 */
function makePrivate(file: string): void {
  try {
    closeSync(openSync(file, 'wx', 0o600));
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      const stats = statSync(path);
      if ((stats.mode & 0o077) !== 0 && stats.uid === process.getuid?.()) chmodSync(path, 0o600);
    } catch {
      // not there
    }
  }
}

function openExisting(file: string, driver: SqliteDriverName): OpenedDb {
  const db = openDatabase(file, driver);
  try {
    // Only a new file takes it (a page size is fixed once the first table is written, and WAL keeps it).
    db.pragma(`page_size = ${PAGE_SIZE}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('temp_store = MEMORY');
    // 16 MiB of page cache for the main connection (each thread's connection has its own: the scan
    // worker's index build 2 MiB, the search thread SQLite's default, about 2 MiB). At 1M files the cache is
    // full from the scan on, and its peak is the whole-tree diff after the scan: 64 MiB peaked at
    // 342 MiB, 32 MiB at 311, scan and check in the same time side by side (docs/benchmarks.md). On Node 24
    // a warm start at 1M then peaked at 356-358 MiB with 32 MiB, 322-326 with 16 and 311-323 with 8, its
    // catch-up in the same time; 8 MiB looked slower for a warm 100k listing on Node 24 (by about 9%, within
    // the noise), 16 did not. The rest comes from the operating system's cache of the file.
    db.pragma('cache_size = -16384');
    const version = db.pragma('user_version') as number;
    if (version === SCHEMA_VERSION && scanCompleted(db)) return { db, warm: true };
    if (version !== 0 && version !== SCHEMA_VERSION) {
      throw new SchemaVersionError(`schema version ${version}, expected ${SCHEMA_VERSION}`);
    }
    resetSchema(db);
    return { db, warm: false };
  } catch (error) {
    db.close();
    throw error;
  }
}

function scanCompleted(db: Db): boolean {
  const row = db.prepare(`SELECT value FROM meta WHERE key = 'scan_completed'`).get() as
    | { value: string }
    | undefined;
  return row !== undefined;
}

function resetSchema(db: Db): void {
  db.transaction(() => {
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
      .all() as { name: string }[];
    for (const { name } of tables) db.exec(`DROP TABLE IF EXISTS "${name}"`);
    db.exec(SCHEMA);
    createSecondaryIndexes(db);
    db.prepare(`INSERT INTO meta (key, value) VALUES ('cursor_secret', ?)`).run(
      randomBytes(32).toString('hex'),
    );
    // What tells a later start-up (and a --db typo) that this file is ours to rebuild: src/index/db-file.ts.
    db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?)`).run(APP_MARK.key, APP_MARK.value);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  })();
}

function removeDbFiles(file: string): void {
  if (file === ':memory:') return;
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
}

export function getMeta(db: Db, key: string): string | undefined {
  const row = db.prepare(`SELECT value FROM meta WHERE key = ?`).get(key) as
    | { value: string }
    | undefined;
  return row?.value;
}

export function setMeta(db: Db, key: string, value: string): void {
  db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(key, value);
}
