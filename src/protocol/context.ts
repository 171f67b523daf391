import type { TurnChain } from '../turns.ts';
import type { CursorSecret } from './cursor.ts';
import type { Alternative } from '../content/formats.ts';
import type { FileContent } from '../content/read.ts';
import type { PathLocks, SerialQueue } from '../content/path-locks.ts';
import type { ReadBudget } from '../content/read-budget.ts';
import type { EntryRow } from '../entry.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import type { Logger } from '../log.ts';
import type { Pager } from '../query/page.ts';
import type { Root } from '../uri.ts';

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
  /** Signs cursors, so a tampered one is refused (persisted: cursors survive restarts; another set of folders, another key: cursorKeyFor). */
  cursorSecret: CursorSecret;
  /**
   * `--write`: the write tools, the largest file they write (`--max-write-bytes`),
   * the one table of paths being changed, for every client (one writer per path),
   * and the queue of large edits' text work (one at a time); null when read-only.
   */
  writes: { maxBytes: number; locks: PathLocks; largeEdits: SerialQueue } | null;
  /**
   * Brings the index up to date with these absolute paths now, on the live
   * sync's serial write queue, rather than when the watcher reports them;
   * resolves once committed (and `updated`/`list_changed` are on their way).
   */
  refresh(paths: readonly string[]): Promise<void>;
  /** Format alternatives of a document, after its primary content. */
  /** `signal`: the read's request (Formats.convert: a conversion still waiting is dropped once every read of it is cancelled). */
  convert(entry: EntryRow, content: FileContent, signal?: AbortSignal): Promise<Alternative[]>;
  /** The bytes of files being read at once, for every client together (src/content/read-budget.ts). */
  readBudget: ReadBudget;
  /** Large answers of reads, a turn of the event loop each, one after another (src/protocol/read.ts). */
  largeAnswers: TurnChain;
}
