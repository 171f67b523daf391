import type { FileContent } from '../content/read.ts';
import type { EntryRow } from '../index/entry.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import type { ContentSearch } from '../catalog/content-search.ts';
import type { Logger } from '../log.ts';
import type { Pager } from '../query/page.ts';
import type { Root } from '../uri.ts';

/** A format alternative of a document (SEP-2093): same uri, another representation. */
export type Alternative = { mimeType: string; size: number } & ({ text: string } | { blob: string });

/**
 * The services every request handler shares, whatever the connection or
 * transport: built once per process (src/app.ts). What belongs to one client
 * (its subscriptions) lives in a Connection instead.
 */
export interface ServerContext {
  index: FolderIndex;
  roots: readonly Root[];
  log: Logger;
  pageSize: number;
  maxReadBytes: number;
  followSymlinks: boolean;
  /** Keyset pages over the index (statements prepared once). */
  pager: Pager;
  /** Signs cursors, so a tampered one is refused (persisted: cursors survive restarts). */
  cursorSecret: string;
  /** The full-text content index behind the `search` tool; null with --no-search. */
  search?: ContentSearch | null;
  /** Format alternatives of a document, after its primary content. */
  convert(entry: EntryRow, content: FileContent): Promise<Alternative[]>;
}
