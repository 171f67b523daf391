/** Kinds of entry, as stored in `entries.kind`. */
export const EntryKind = { document: 0, collection: 1 } as const;
export type EntryKind = (typeof EntryKind)[keyof typeof EntryKind];

/** One row of `entries`: what list, metadata and children queries need. */
export interface EntryRow {
  uri: string;
  parent: string | null;
  root: number;
  name: string;
  ext: string;
  kind: EntryKind;
  size: number;
  mtime: number;
  mime: string;
  /**
   * The entry's identity on disk: inode and device numbers (as doubles: exact
   * below 2^53, and two identities that round alike are rare enough that the
   * mtime and size still tell them apart). A directory of another identity
   * under the same name (swapped in, re-made) is walked whole; see Reconciler.
   */
  ino: number;
  dev: number;
}

/**
 * Rows as columns: how the cold scan's batches cross from its worker thread
 * (a structured clone of arrays and typed arrays costs less than half that of
 * as many small objects, measured at 100k rows: 115 ms against 277 ms).
 */
export interface EntryColumns {
  uri: string[];
  parent: (string | null)[];
  root: Uint16Array;
  name: string[];
  ext: string[];
  kind: Uint8Array;
  size: Float64Array;
  mtime: Float64Array;
  mime: string[];
  ino: Float64Array;
  dev: Float64Array;
}

export function toColumns(rows: readonly EntryRow[]): EntryColumns {
  const n = rows.length;
  const columns: EntryColumns = {
    uri: new Array(n),
    parent: new Array(n),
    root: new Uint16Array(n),
    name: new Array(n),
    ext: new Array(n),
    kind: new Uint8Array(n),
    size: new Float64Array(n),
    mtime: new Float64Array(n),
    mime: new Array(n),
    ino: new Float64Array(n),
    dev: new Float64Array(n),
  };
  for (let i = 0; i < n; i++) {
    const row = rows[i]!;
    columns.uri[i] = row.uri;
    columns.parent[i] = row.parent;
    columns.root[i] = row.root;
    columns.name[i] = row.name;
    columns.ext[i] = row.ext;
    columns.kind[i] = row.kind;
    columns.size[i] = row.size;
    columns.mtime[i] = row.mtime;
    columns.mime[i] = row.mime;
    columns.ino[i] = row.ino;
    columns.dev[i] = row.dev;
  }
  return columns;
}

/** What one committed write batch changed: rows written, and URIs removed (a collection URI removes its subtree). */
export interface IndexChange {
  upserted: readonly EntryRow[];
  removed: readonly string[];
}
