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
}

/** What one committed write batch changed: rows written, and URIs removed (a collection URI removes its subtree). */
export interface IndexChange {
  upserted: readonly EntryRow[];
  removed: readonly string[];
}
