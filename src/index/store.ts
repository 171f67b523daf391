import { succ } from '../keys.ts';
import { ENTRY_COLUMNS, type Db } from './db.ts';
import { EntryKind, type EntryColumns, type EntryRow } from '../entry.ts';

const COLUMNS = ENTRY_COLUMNS;
const DOCUMENT = EntryKind.document;
const COLLECTION = EntryKind.collection;

/**
 * Writes and point reads of the index. Statements are prepared once; writes
 * go in one transaction per batch (transactions are
 * synchronous, so callers do their awaiting before calling in).
 */
export class Store {
  private readonly getStmt;
  private readonly upsertStmt;
  private readonly deleteStmt;
  private readonly deleteRangeStmt;
  private readonly countStmt;
  private readonly countUpToStmt;
  private readonly childrenStmt;
  private readonly countChildrenStmt;
  private readonly subfoldersStmt;
  private readonly countSubfoldersStmt;
  private readonly recentStmt;
  private readonly collectionsStmt;
  private readonly sameFileStmt;
  private readonly linkedOutsideStmt;
  readonly upsertMany: (rows: readonly EntryRow[]) => void;
  /** The cold scan's insert, from columns (see EntryColumns); positional binding costs a quarter less than named. */
  readonly insertScanned: (rows: EntryColumns) => void;
  readonly deleteMany: (uris: readonly string[]) => void;

  constructor(readonly db: Db) {
    this.getStmt = db.prepare(`SELECT ${COLUMNS} FROM entries WHERE uri = ?`);
    this.upsertStmt = db.prepare(
      `INSERT INTO entries (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (uri) DO UPDATE SET parent = excluded.parent, root = excluded.root, name = excluded.name,
         ext = excluded.ext, kind = excluded.kind, size = excluded.size, mtime = excluded.mtime, mime = excluded.mime,
         ino = excluded.ino, dev = excluded.dev`,
    );
    this.deleteStmt = db.prepare(`DELETE FROM entries WHERE uri = ?`);
    // Keyset range, never LIKE: a collection and everything under it share its URI as a prefix.
    this.deleteRangeStmt = db.prepare(`DELETE FROM entries WHERE uri >= ? AND uri < ?`);
    this.countStmt = db.prepare(`SELECT count(*) AS n FROM entries`);
    this.countUpToStmt = db.prepare(`SELECT count(*) AS n FROM (SELECT 1 FROM entries LIMIT ?)`);
    this.childrenStmt = db.prepare(
      `SELECT ${COLUMNS} FROM entries WHERE parent = ? AND uri > ? ORDER BY uri LIMIT ?`,
    );
    this.countChildrenStmt = db.prepare(`SELECT count(*) AS n FROM entries WHERE parent = ?`);
    // (parent, uri) index: the folders among a folder's children.
    this.subfoldersStmt = db.prepare(`SELECT ${COLUMNS} FROM entries WHERE parent = ? AND kind = ${COLLECTION} ORDER BY uri LIMIT ?`);
    this.countSubfoldersStmt = db.prepare(`SELECT count(*) AS n FROM entries WHERE parent = ? AND kind = ${COLLECTION}`);
    // entries_by_mtime walked backwards: the cost is the rows returned.
    this.recentStmt = db.prepare(`SELECT ${COLUMNS} FROM entries WHERE mtime >= ? AND kind = ${DOCUMENT} ORDER BY mtime DESC LIMIT ?`);
    // The primary key walked in order; a page stops after `limit` collections.
    this.collectionsStmt = db.prepareRows(`SELECT uri FROM entries WHERE kind = ${COLLECTION} AND uri > ? ORDER BY uri LIMIT ?`);
    // entries_by_ino: the other names of a hard-linked file (see Reconciler.paths).
    this.sameFileStmt = db.prepareRows(`SELECT uri FROM entries WHERE ino = ? AND dev = ? AND kind = ${DOCUMENT} LIMIT ?`);
    // One lookup in entries_by_ino per document of the range; a file of one link finds only itself, in the range.
    this.linkedOutsideStmt = db.prepareRows(
      `SELECT DISTINCT o.uri FROM entries r JOIN entries o ON o.ino = r.ino AND o.dev = r.dev AND o.kind = ${DOCUMENT}
       WHERE r.uri >= ? AND r.uri < ? AND r.kind = ${DOCUMENT} AND r.ino != 0 AND (o.uri < ? OR o.uri >= ?) LIMIT ?`,
    );
    this.upsertMany = db.transaction((rows: readonly EntryRow[]) => {
      // Positional: node:sqlite refuses a named-parameter object with keys the statement does not name.
      for (const r of rows) this.upsertStmt.run(r.uri, r.parent, r.root, r.name, r.ext, r.kind, r.size, r.mtime, r.mime, r.ino, r.dev);
    });
    const insertStmt = db.prepare(`INSERT OR REPLACE INTO entries (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.insertScanned = db.transaction((c: EntryColumns) => {
      for (let i = 0; i < c.uri.length; i++) {
        insertStmt.run(c.uri[i], c.parent[i], c.root[i], c.name[i], c.ext[i], c.kind[i], c.size[i], c.mtime[i], c.mime[i], c.ino[i], c.dev[i]);
      }
    });
    this.deleteMany = db.transaction((uris: readonly string[]) => {
      for (const uri of uris) this.deleteStmt.run(uri);
    });
  }

  get(uri: string): EntryRow | undefined {
    return this.getStmt.get(uri) as EntryRow | undefined;
  }

  /** Deletes `uri` and, for a collection URI (ending in '/'), everything beneath it. */
  deleteTree(uri: string): number {
    if (!uri.endsWith('/')) return this.deleteStmt.run(uri).changes;
    // A collection URI ends in '/', so succ() is never null here.
    return this.deleteRangeStmt.run(uri, succ(uri)!).changes;
  }

  count(): number {
    return (this.countStmt.get() as { n: number }).n;
  }

  /** count(), but it stops at `limit`: the cost is at most `limit` rows, not the whole index. */
  countUpTo(limit: number): number {
    return (this.countUpToStmt.get(limit) as { n: number }).n;
  }

  countChildren(parentUri: string): number {
    return (this.countChildrenStmt.get(parentUri) as { n: number }).n;
  }

  /** The first `limit` folders directly in a collection, in URI order. */
  subfolders(parentUri: string, limit: number): EntryRow[] {
    return this.subfoldersStmt.all(parentUri, limit) as EntryRow[];
  }

  countSubfolders(parentUri: string): number {
    return (this.countSubfoldersStmt.get(parentUri) as { n: number }).n;
  }

  /** Documents modified at or after `since` (ms since the epoch), newest first. */
  recentDocuments(since: number, limit: number): EntryRow[] {
    return this.recentStmt.all(since, limit) as EntryRow[];
  }

  /** URIs of collections (every root and folder) in URI order, after `afterUri`. */
  collectionUris(afterUri: string, limit: number): string[] {
    return this.collectionsStmt.all(afterUri, limit).map((row) => row[0] as string);
  }

  /** URIs of documents indexed with this identity (inode, device): the names of one file, hard links among them. */
  sameFile(ino: number, dev: number, limit: number): string[] {
    return this.sameFileStmt.all(ino, dev, limit).map((row) => row[0] as string);
  }

  /**
   * URIs of documents outside `uri` (a document, or a collection and
   * everything beneath it) indexed with the identity of a document inside
   * it: the other hard-linked names of the files it holds.
   */
  linkedOutside(uri: string, limit: number): string[] {
    // A collection's range is its prefix; a document's is its URI alone (no URI holds a NUL).
    const end = uri.endsWith('/') ? succ(uri)! : `${uri}\0`;
    return this.linkedOutsideStmt.all(uri, end, uri, end, limit).map((row) => row[0] as string);
  }

  /** Direct children of a collection in URI order, after `afterUri`. */
  children(parentUri: string, afterUri: string, limit: number): EntryRow[] {
    return this.childrenStmt.all(parentUri, afterUri, limit) as EntryRow[];
  }
}

