// The content index's tables (src/index/db.ts): a document's row in
// search_docs, its text in search_fts, and meaning search's rows that go with
// it. Writes in transactions and point reads, as index/store.ts is for the
// entries; what to write and when is the builder's (content-index-builder.ts).
import type { Place } from '../content/converters/types.ts';
import type { Db } from '../index/db.ts';
import { succ } from '../keys.ts';

/** What the index keeps of one document: its text, the MIME type of the converted form (null: the file's own text), the places in it. */
export interface IndexedText {
  text: string;
  form: string | null;
  places: Place[];
}

/** A document's row: what (mtime, size) its text was read at. */
export interface DocState {
  id: number;
  mtime: number;
  size: number;
}

/** A document to write: its URI and the (mtime, size) of the file its text comes from. */
export interface DocFile {
  uri: string;
  mtime: number;
  size: number;
}

export class ContentStore {
  private readonly stmts;

  /** `written` is told of every document written or removed (meaning search embeds what changed). */
  constructor(
    private readonly db: Db,
    private readonly written?: () => void,
  ) {
    // FTS5 rowid constraints are bound through CAST: both drivers bind JS
    // numbers as REAL, and FTS5 silently ignores `rowid = ?` with a REAL value
    // when the query also has a MATCH (every matching row comes back).
    this.stmts = {
      doc: db.prepare(`SELECT id, mtime, size FROM search_docs WHERE uri = ?`),
      insertDoc: db.prepare(`INSERT INTO search_docs (uri, mtime, size, text, form, places) VALUES (?, ?, ?, ?, ?, ?)`),
      updateDoc: db.prepare(`UPDATE search_docs SET mtime = ?, size = ?, text = ?, form = ?, places = ? WHERE id = ?`),
      deleteDoc: db.prepare(`DELETE FROM search_docs WHERE id = ?`),
      // Meaning search's rows go with their document (whether or not this server embeds: a later one may).
      deleteChunks: db.prepare(`DELETE FROM search_chunks WHERE doc = ?`),
      deleteEmbedded: db.prepare(`DELETE FROM search_embedded WHERE doc = ?`),
      insertText: db.prepare(`INSERT INTO search_fts (rowid, body) VALUES (CAST(? AS INTEGER), ?)`),
      deleteText: db.prepare(`DELETE FROM search_fts WHERE rowid = CAST(? AS INTEGER)`),
      docsInRange: db.prepare(`SELECT id FROM search_docs WHERE uri >= ? AND uri < ?`),
      lastDocId: db.prepare(`SELECT max(id) AS n FROM search_docs`),
      orphansIn: db.prepare(
        `SELECT d.id FROM search_docs d WHERE d.id > ? AND d.id <= ? AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.uri = d.uri)`,
      ),
    };
  }

  /** The document's row, if it has one. */
  doc(uri: string): DocState | undefined {
    return this.stmts.doc.get(uri) as DocState | undefined;
  }

  /** Writes each document's text (undefined: not text, nothing indexed) in one transaction. */
  writeAll(items: { file: DocFile; text: IndexedText | undefined }[]): void {
    this.db.transaction(() => {
      for (const { file, text } of items) this.write(file, text);
    })();
  }

  /** Removes the documents at these URIs (a collection's URI: every document under it) in one transaction. */
  removeUris(uris: string[]): void {
    this.db.transaction(() => {
      for (const uri of uris) this.removeUri(uri);
    })();
  }

  /** Removes these documents by id in one transaction. */
  removeDocs(ids: number[]): void {
    this.db.transaction(() => {
      for (const id of ids) this.removeDoc(id);
    })();
  }

  /** The largest document id (0 when none): the end of the orphan check's slices. */
  lastDocId(): number {
    return (this.stmts.lastDocId.get() as { n: number | null }).n ?? 0;
  }

  /** Removes the documents with ids in (after, upto] whose entries are gone. */
  removeOrphansIn(after: number, upto: number): void {
    const ids = this.stmts.orphansIn.all(after, upto) as { id: number }[];
    if (ids.length > 0) this.removeDocs(ids.map(({ id }) => id));
  }

  /** Bytes of the search tables, when SQLite's dbstat table is compiled in. */
  indexBytes(): number | null {
    try {
      const row = this.db
        .prepare(`SELECT sum(pgsize) AS n FROM dbstat WHERE name = 'search_docs' OR name LIKE 'search_fts%' OR name LIKE 'sqlite_autoindex_search_docs%'`)
        .get() as { n: number | null };
      return row.n ?? 0;
    } catch {
      return null;
    }
  }

  private write(file: DocFile, text: IndexedText | undefined): void {
    // The row may have changed under us while the file was read: re-read our own state.
    const doc = this.doc(file.uri);
    const hasText = text !== undefined ? 1 : 0;
    const form = text?.form ?? null;
    const places = text && text.places.length > 0 ? JSON.stringify(text.places.map((p) => (p.name === undefined ? [p.offset, p.unit, p.number] : [p.offset, p.unit, p.number, p.name]))) : null;
    let id: number;
    if (doc) {
      this.stmts.deleteText.run(doc.id);
      this.stmts.updateDoc.run(file.mtime, file.size, hasText, form, places, doc.id);
      id = doc.id;
    } else {
      id = Number(this.stmts.insertDoc.run(file.uri, file.mtime, file.size, hasText, form, places).lastInsertRowid);
    }
    if (text !== undefined) this.stmts.insertText.run(id, text.text);
    else {
      this.stmts.deleteChunks.run(id);
      this.stmts.deleteEmbedded.run(id);
    }
    this.written?.();
  }

  private removeUri(uri: string): void {
    if (!uri.endsWith('/')) {
      const doc = this.doc(uri);
      if (doc) this.removeDoc(doc.id);
      return;
    }
    // A collection URI ends in '/', so succ() is never null here.
    for (const { id } of this.stmts.docsInRange.all(uri, succ(uri)!) as { id: number }[]) this.removeDoc(id);
  }

  private removeDoc(id: number): void {
    this.stmts.deleteText.run(id);
    this.stmts.deleteDoc.run(id);
    this.stmts.deleteChunks.run(id);
    this.stmts.deleteEmbedded.run(id);
    this.written?.();
  }
}
