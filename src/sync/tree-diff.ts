import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from '../fs-path.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import { isAlwaysExcluded } from '../index/ignore.ts';
import { entryRow, rootRow } from '../index/scan.ts';
import { escapeName, invalidPathText, readServableDir, type DirListing } from '../index/servable.ts';
import type { Logger } from '../log.ts';
import { findRoot, pathToUri } from '../uri.ts';
import type { RewatchReason } from '../watching.ts';
import { describeError, errnoCode, isNoEntry } from '../errno.ts';
import { highestUnindexedAncestor, indexedChildren, rootGone } from './indexed.ts';
import type { LockedFolders } from './locked-folders.ts';
import { DENIED, isDenied, lstatEntryOrDenied, lstatOrNull, mapLimited } from './look.ts';
import { sameIdentity, type PendingChange } from './pending-change.ts';
import type { RootWalk } from './root-walk.ts';

/** Directories diffed at once (memory: this many directory listings). */
const PARALLEL_DIRS = 8;

/**
 * How a tree diff ended, for the Reconciler's next step: nothing more to do
 * (no root holds it, or aborted), the path is to be looked at instead (not
 * a directory now, or ignored), or diffed and committed (the hard links it
 * found are followed next).
 */
export type TreeDiffEnd = 'nothing' | 'not-a-directory' | 'diffed';

/**
 * A subtree against the index, directory by directory: each directory's
 * entries compared with the index's children of it by type, size, mtime and
 * identity. Memory is bounded by one directory's width, not by the size of
 * the tree. A whole root is diffed from the scan's walk instead (RootWalk).
 */
export class TreeDiff {
  constructor(
    private readonly index: FolderIndex,
    private readonly log: Logger,
    private readonly locked: LockedFolders,
    private readonly rootWalk: RootWalk,
    /** Live's lifetime: once aborted, a walk under way stops between steps. */
    private readonly signal: AbortSignal,
  ) {}

  /** Diffs the directory `dir` (a root or inside one) and everything beneath it into `change`, and commits it. */
  async tree(change: PendingChange, dir: string, newDirsAre?: RewatchReason): Promise<TreeDiffEnd> {
    const { store, rules, roots } = this.index;
    const root = findRoot(roots, dir);
    if (!root) return 'nothing';
    const rootIndex = roots.indexOf(root);
    const st = await lstatOrNull(dir);
    if (dir === root.path) {
      if (!st?.isDirectory()) {
        rootGone(store, change, root, this.log);
        await change.flush();
        // The other names of its files outside it are looked at next, as after any removal.
        return 'diffed';
      }
      if (newDirsAre === undefined) return (await this.rootWalk.walk(change, root, rootIndex)) ? 'diffed' : 'nothing';
      change.consider(rootRow(root, rootIndex, st), dir);
    } else {
      const parentUri = pathToUri(dirname(dir), true);
      if (!store.get(parentUri)) return this.tree(change, highestUnindexedAncestor(store, dirname(dir), root), newDirsAre);
      if (!st?.isDirectory() || rules.isIgnored(dir, true)) {
        // Gone, ignored now, or a file: the path check handles every case.
        await change.flush();
        return 'not-a-directory';
      }
      change.removeIfIndexed(pathToUri(dir, false));
      change.consider(entryRow(dir, basename(dir), true, st, parentUri, rootIndex), dir);
    }
    await this.diffDirectories(change, dir, rootIndex, newDirsAre);
    await change.flush();
    return 'diffed';
  }

  /**
   * Lists the indexed directory `dir` again, of the same identity as the
   * index knows it, and compares each entry with the index by type, size,
   * mtime and identity, and commits what differs. Beneath it, a directory
   * whose own mtime moved (entries added, removed or renamed in it) is listed
   * again the same way; one unchanged is left alone: what changes inside it
   * without changing it (a file written) is its own watch's to report.
   * Resolves to the directories beneath it that are new or of another
   * identity, to be walked whole (tree); undefined when no root holds it.
   */
  async relist(change: PendingChange, dir: string): Promise<string[] | undefined> {
    const { roots } = this.index;
    const root = findRoot(roots, dir);
    if (!root) return undefined;
    const walkWhole: string[] = [];
    await this.diffDirectories(change, dir, roots.indexOf(root), 'found', walkWhole);
    await change.flush();
    return walkWhole;
  }

  /**
   * Diffs `dir` and the directories diffDirectory queues beneath it (all of
   * them, or with `walkWhole` only those whose mtime moved: see relist).
   */
  private async diffDirectories(change: PendingChange, dir: string, rootIndex: number, newDirsAre: RewatchReason | undefined, walkWhole?: string[]): Promise<void> {
    const pending = [dir];
    while (pending.length > 0) {
      if (this.signal.aborted) return;
      // A few directories at once: each is a readdir and a few lstats, mostly waiting on the thread pool.
      const round = pending.splice(-PARALLEL_DIRS);
      await Promise.all(round.map((d) => this.diffDirectory(change, d, rootIndex, pending, newDirsAre, walkWhole)));
      if (change.full) await change.flush();
    }
  }

  private async diffDirectory(
    change: PendingChange,
    dir: string,
    rootIndex: number,
    pending: string[],
    newDirsAre: RewatchReason | undefined,
    /**
     * Given (relist): only subdirectories whose mtime moved join `pending`,
     * and those new or of another identity go here; otherwise every
     * subdirectory joins `pending`.
     */
    walkWhole?: string[],
  ): Promise<void> {
    const { rules } = this.index;
    const dirUri = pathToUri(dir, true);
    let listing: DirListing;
    try {
      // The scan's reader: the same names are skipped here as there, siblings kept.
      listing = await readServableDir(dir);
    } catch (error) {
      if (isNoEntry(error)) change.removeIfIndexed(dirUri);
      else if (errnoCode(error) === 'ENAMETOOLONG') change.skips.add('deep', escapeName(dir));
      // Unreadable: keep what the index knows rather than pretend it is empty.
      else if (isDenied(error)) await this.locked.mark(dir, error);
      else this.log.warn(`cannot read directory ${escapeName(dir)}: ${describeError(error)}`);
      return;
    }
    for (const name of listing.invalidNames) change.skips.add('name', invalidPathText(dir, name));
    const dirents = listing.entries;
    if (dirents.some((d) => d.name === '.gitignore' && d.isFile())) {
      const text = await readFile(join(dir, '.gitignore'), 'utf8').catch(() => null);
      rules.setDirRules(dir, text);
    } else {
      rules.setDirRules(dir, null);
    }
    const kept = dirents.filter(
      (d) =>
        (d.isFile() || d.isDirectory()) &&
        !isAlwaysExcluded(d.name) &&
        !rules.isIgnored(join(dir, d.name), d.isDirectory()),
    );
    const stats = await mapLimited(kept, (d) => lstatEntryOrDenied(join(dir, d.name)));
    // Listable but not searchable (read without execute), or made so since the read: its entries are unknown.
    if (stats.includes(DENIED)) {
      await this.locked.mark(dir, null);
      return;
    }
    this.locked.unlocked(dir);
    // Not a folder any more (swapped for a link to another folder, removed): what was read may be
    // another folder's. Its row goes; what it is now comes from the event on its parent.
    if (!(await lstatOrNull(dir))?.isDirectory()) {
      change.removeIfIndexed(dirUri);
      return;
    }
    const indexed = indexedChildren(this.index.store, dirUri);
    for (let i = 0; i < kept.length; i++) {
      const st = stats[i];
      const path = join(dir, kept[i]!.name);
      if (st === 'deep') {
        change.skips.add('deep', escapeName(path));
        continue;
      }
      if (!st || st === DENIED || !(st.isFile() || st.isDirectory())) continue; // vanished since readdir
      const row = entryRow(path, kept[i]!.name, st.isDirectory(), st, dirUri, rootIndex);
      const known = indexed.get(row.uri);
      indexed.delete(row.uri);
      if (change.consider(row, path, known ?? null) && st.isFile() && st.nlink > 1) change.links.noteFound(row);
      await change.limitSniffs();
      if (st.isDirectory()) {
        change.rewatchIfNew(path, known, row, newDirsAre ?? 'found');
        if (walkWhole === undefined) pending.push(path);
        else if (!known || known.kind !== row.kind || !sameIdentity(known, row)) walkWhole.push(path);
        else if (known.mtime !== row.mtime) pending.push(path);
      }
    }
    // In the index, not on disk (or ignored now): a collection takes its subtree with it.
    for (const uri of indexed.keys()) change.remove(uri);
  }
}
