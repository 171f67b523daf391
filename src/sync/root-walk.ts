import { EntryKind, type EntryColumns, type EntryRow } from '../entry.ts';
import { describeError } from '../errno.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import { scanInThread } from '../index/scan-thread.ts';
import { escapeName } from '../index/servable.ts';
import type { Logger } from '../log.ts';
import { uriToPath, type Root } from '../uri.ts';
import { indexedChildren } from './indexed.ts';
import type { LockedFolders } from './locked-folders.ts';
import { sameIdentity, type PendingChange } from './pending-change.ts';

/**
 * Diffs a whole root against the index, from the cold scan's walk (on its
 * worker thread once one is up: half the CPU of the async walk, and off
 * the main thread, which only compares each directory's entries with the
 * index's children of it and writes the difference). The post-scan check,
 * the periodic safety check and every poll diff a whole root.
 */
export class RootWalk {
  constructor(
    private readonly index: FolderIndex,
    private readonly log: Logger,
    private readonly locked: LockedFolders,
    private readonly signal: AbortSignal,
  ) {}

  /** Walks `root` into `change` and commits it; false once aborted (nothing more to do). */
  async walk(change: PendingChange, root: Root, rootIndex: number): Promise<boolean> {
    const { rules, options, roots } = this.index;
    const walk = scanInThread({
      roots,
      onlyRoot: rootIndex,
      ignore: { gitignore: options.gitignore, exclude: options.exclude },
      log: walkLog(this.log),
      skips: change.skips,
      dbFile: null,
      ...(options.scanSlicesHere ? { slicesHere: options.scanSlicesHere } : {}),
    });
    try {
      for await (const { rows, read } of walk) {
        if (this.signal.aborted) return false;
        let next = 0;
        // The root's own row leads the first batch; every directory's rows precede its entry in `read`.
        if (rows.parent[0] === null) {
          const row = rowAt(rows, next++);
          const known = this.index.store.get(row.uri);
          // Re-made since the index was written (rm -rf, mkdir): a backend holding a watch of the old one watches afresh.
          if (known && !sameIdentity(known, row)) change.rewatch(root.path, 'replaced');
          change.consider(row, root.path, known ?? null);
        }
        for (const dir of read) {
          // A whole root's diff (the start's check, the periodic one, a poll) is background work: requests go first.
          await this.index.foreground.turn();
          if (this.signal.aborted) return false;
          const first = next;
          while (next < rows.uri.length && rows.parent[next] === dir.uri) next++;
          rules.setDirRules(dir.path, dir.gitignore);
          if (dir.failed === 'gone') change.removeIfIndexed(dir.uri);
          // Unreadable: keep what the index knows rather than pretend it is empty.
          else if (dir.failed === 'unreadable') await this.locked.mark(dir.path, null);
          else {
            this.locked.unlocked(dir.path);
            this.diffListed(change, dir.uri, rows, first, next);
          }
        }
        if (change.full) await change.flush();
      }
    } catch (error) {
      // The root went away mid-walk, or the walk's thread failed: what was compared so far is
      // written below, and the next check (periodic, or the next poll) covers the rest.
      this.log.warn(`cannot walk ${escapeName(root.path)}: ${describeError(error)}`);
    }
    await change.flush();
    return true;
  }

  /** One directory as walked (rows[first..end) of a batch) against its children in the index. */
  private diffListed(change: PendingChange, dirUri: string, rows: EntryColumns, first: number, end: number): void {
    const indexed = indexedChildren(this.index.store, dirUri);
    for (let i = first; i < end; i++) {
      const row = rowAt(rows, i);
      const known = indexed.get(row.uri);
      indexed.delete(row.uri);
      // The walk has sniffed what needed it: no path is needed here. Its rows carry no link count: a
      // document new or changed is looked up by identity (one index lookup), as a hard link's other
      // names, in folders nobody re-lists, may have been written through it (fuzzer seed 3075).
      const changed = change.consider(row, '', known ?? null);
      if (changed && row.kind === EntryKind.document && row.ino !== 0) change.links.noteFound(row);
      if (row.kind === EntryKind.collection) change.rewatchIfNew(uriToPath(row.uri), known, row, 'found');
    }
    // In the index, not on disk (or ignored now): a collection takes its subtree with it.
    for (const uri of indexed.keys()) change.remove(uri);
  }
}

/** The scan's warning for a folder it cannot read or search (src/index/scan.ts). */
const SCAN_UNREADABLE_WARNING = /^skipping (unreadable|unsearchable) directory /;

/**
 * The log of a walk of a whole root: the scan's warning for an unreadable
 * folder goes to debug, since LockedFolders.mark says it once per lock (the
 * walk said it again each time it ran: every 2 s with the poll watcher, every
 * periodic diff with the others, for as long as the folder stayed locked).
 */
function walkLog(log: Logger): Logger {
  return {
    error: (message) => log.error(message),
    warn: (message) => (SCAN_UNREADABLE_WARNING.test(message) ? log.debug(message) : log.warn(message)),
    info: (message) => log.info(message),
    debug: (message) => log.debug(message),
  };
}

/** Row `i` of a batch's columns, as a row. */
function rowAt(c: EntryColumns, i: number): EntryRow {
  return {
    uri: c.uri[i]!,
    parent: c.parent[i] ?? null,
    root: c.root[i]!,
    name: c.name[i]!,
    ext: c.ext[i]!,
    kind: c.kind[i] as EntryRow['kind'],
    size: c.size[i]!,
    mtime: c.mtime[i]!,
    mime: c.mime[i]!,
    ino: c.ino[i]!,
    dev: c.dev[i]!,
  };
}
