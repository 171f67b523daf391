import { childPrefix, outermostDirs } from '../fs-path.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import type { Logger } from '../log.ts';
import type { RewatchReason } from '../watching.ts';
import { LockedFolders } from './locked-folders.ts';
import { NamedPaths, type PathCheck } from './path-check.ts';
import { PendingChange, type ReconcileReport } from './pending-change.ts';
import type { RelistPace } from './relist-pace.ts';
import { RootWalk } from './root-walk.ts';
import { TreeDiff } from './tree-diff.ts';

/**
 * Brings the index in line with the disk, one path or one subtree at a time,
 * writing only through FolderIndex.apply. Every decision comes from an lstat
 * made now, never from what a watcher said happened: so events may be lost,
 * duplicated or reordered (renames, atomic saves, bursts) and the index still
 * ends equal to the disk once the last change has been looked at.
 *
 * This class orders the jobs, each in its own module: the named paths
 * (path-check.ts), the diff of a subtree (tree-diff.ts) or a whole root
 * (root-walk.ts), the folders that cannot be read (locked-folders.ts), and
 * the other names of hard-linked files (hard-links.ts). Each public call is
 * one task: it makes its own PendingChange, which the jobs add to and commit,
 * and resolves to its report (directories to watch again, and to look at
 * again later), which the caller hands on.
 */
export class Reconciler {
  /** Rows written and URIs removed so far, over the Reconciler's life (to tell whether a diff found anything). */
  written = 0;
  private readonly locked: LockedFolders;
  private readonly named: NamedPaths;
  private readonly diff: TreeDiff;

  constructor(
    private readonly index: FolderIndex,
    log: Logger,
    /** Live's lifetime: once aborted, a walk or batch under way stops between steps, and writes nothing more. */
    private readonly signal: AbortSignal,
    /**
     * How often a wide folder is listed again when events move its mtime (none: at every batch). Its `later`
     * lists the folder on Live's queue (relist()), not a look: the look that deferred the relist committed
     * the folder's new mtime, so a later look found nothing moved (the review of the first version lost a
     * file no event named that way).
     */
    private readonly pace?: RelistPace,
  ) {
    this.locked = new LockedFolders(log);
    this.named = new NamedPaths(index, log, this.locked, signal);
    this.diff = new TreeDiff(index, log, this.locked, new RootWalk(index, log, this.locked, signal), signal);
  }

  /**
   * Looks at each path (absolute) as it is now, and at the directory that
   * holds it. A directory is compared with its row: of another identity
   * (inode, device) it is walked whole; of the same identity with its mtime
   * moved (entries made, removed or renamed in it, whether or not an event
   * named them) it is listed again (relist). New directories, and
   * directories whose `.gitignore` changed, are walked.
   */
  paths(paths: Iterable<string>): Promise<ReconcileReport> {
    return this.task((change) => this.pathsInto(change, paths, true));
  }

  /** Diffs the directory `dir` (a root or inside one) and everything beneath it against the index. */
  tree(dir: string): Promise<ReconcileReport> {
    return this.task((change) => this.treeInto(change, dir));
  }

  /** Lists the indexed directory `dir` again (see TreeDiff.relist), and walks what is new beneath it. */
  relist(dir: string): Promise<ReconcileReport> {
    return this.task((change) => this.relistInto(change, dir));
  }

  /** Whether some folder is recorded unreadable (recheckLocked has work). */
  get hasLocked(): boolean {
    return this.locked.any;
  }

  /** Folders found unreadable elsewhere (the cold scan): recorded as locked. */
  noteLocked(dirs: readonly string[]): Promise<void> {
    return this.locked.note(dirs);
  }

  /**
   * The locked folders whose ctime moved (a chmod, a chown) or that are gone:
   * each is looked at again, and walked whole if it is readable now. Cheap
   * (one lstat per locked folder): the sync layer calls it every second.
   */
  recheckLocked(): Promise<ReconcileReport> {
    return this.task(async (change) => {
      const moved = await this.locked.due();
      if (moved.length > 0) await this.pathsInto(change, moved, true);
    });
  }

  /** One task: its own pending change, committed by the jobs as they go; its count and report once done. */
  private async task(run: (change: PendingChange) => Promise<void>): Promise<ReconcileReport> {
    const change = new PendingChange(this.index, this.signal);
    try {
      await run(change);
    } finally {
      this.written += change.written;
    }
    return change.report;
  }

  private async pathsInto(change: PendingChange, paths: Iterable<string>, otherNames: boolean): Promise<void> {
    const check = await this.named.look(change, paths, otherNames);
    if (!check) return;
    if (check.linked.size > 0 && !this.signal.aborted) await this.pathsInto(change, check.linked, false);
    if (!(await this.relistChanged(change, check))) return;
    if (!(await this.walkTrees(change, check))) return;
    change.reportSkips();
  }

  private async treeInto(change: PendingChange, dir: string, newDirsAre?: RewatchReason): Promise<void> {
    const end = await this.diff.tree(change, dir, newDirsAre);
    if (end === 'not-a-directory') return this.pathsInto(change, [dir], true);
    if (end === 'nothing') return;
    await this.otherNames(change);
    change.reportSkips();
  }

  private async relistInto(change: PendingChange, dir: string): Promise<void> {
    const started = performance.now();
    const walkWhole = await this.diff.relist(change, dir);
    this.pace?.took(dir, performance.now() - started);
    if (!walkWhole) return;
    await this.otherNames(change);
    for (const tree of outermostDirs(walkWhole)) {
      if (this.signal.aborted) return;
      await this.treeInto(change, tree, 'found');
    }
    change.reportSkips();
  }

  /** Lists again each directory whose entries changed, unless a walk after covers it; false once aborted. */
  private async relistChanged(change: PendingChange, check: PathCheck): Promise<boolean> {
    for (const dir of check.relists) {
      if (this.signal.aborted) return false;
      if ([...check.trees].some((tree) => dir === tree || dir.startsWith(childPrefix(tree)))) continue;
      if (this.pace?.defer(dir)) continue;
      await this.relistInto(change, dir);
    }
    return true;
  }

  /** Walks the outermost of the directories found new, replaced or with new rules; false once aborted. */
  private async walkTrees(change: PendingChange, check: PathCheck): Promise<boolean> {
    for (const dir of outermostDirs(check.trees)) {
      if (this.signal.aborted) return false;
      if (!check.ignoreEdits.has(dir)) change.rewatch(dir, check.replaced.has(dir) ? 'replaced' : 'found');
      // A directory that just appeared may hold directories created before the watcher saw it.
      await this.treeInto(change, dir, check.ignoreEdits.has(dir) ? 'unignored' : 'nested');
      change.recheckLater(dir);
    }
    return true;
  }

  /**
   * The other indexed names of the hard-linked files the change found new or
   * changed, or whose rows it removed, looked at (see LinkedNames.take). The
   * names found are looked at again too: one lstat'ed before a write through
   * another name, with that name's event (or walk) handled before this one
   * was committed, would keep the size from before.
   */
  private async otherNames(change: PendingChange): Promise<void> {
    const others = change.links.take(this.index.store);
    if (others.size > 0 && !this.signal.aborted) await this.pathsInto(change, others, false);
  }
}
