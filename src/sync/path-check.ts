import type { Stats } from 'node:fs';
import type { EntryRow } from '../entry.ts';
import { basename, dirname, foldsNames } from '../fs-path.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import { entryRow, rootRow } from '../index/scan.ts';
import { findRoot, pathToUri, type Root } from '../uri.ts';
import { addOtherNames } from './hard-links.ts';
import { highestUnindexedAncestor, rootGone } from './indexed.ts';
import type { LockedFolders } from './locked-folders.ts';
import { DENIED, lstatOrDenied, lstatSpelledOrDenied, mapLimited, type LstatResult } from './look.ts';
import { sameIdentity, type PendingChange } from './pending-change.ts';
import type { Logger } from '../log.ts';

/** What one check of named paths gathers as it looks at each, for the Reconciler's steps after its batch. */
export interface PathCheck {
  /** The paths lstat'ed: each reported path, and the directory holding it. */
  readonly looked: Set<string>;
  /** Directories to walk whole: new, re-made, their permission given back, or their .gitignore changed. */
  readonly trees: Set<string>;
  /** Of `trees`, directories of another identity than the indexed one (see Watcher.rewatch). */
  readonly replaced: Set<string>;
  /** Of `trees`, directories whose .gitignore changed. */
  readonly ignoreEdits: Set<string>;
  /** Indexed directories of the same identity whose mtime moved: their entries changed (see TreeDiff.relist). */
  readonly relists: Set<string>;
  /**
   * Other indexed names of files seen with more than one link (a write through
   * one name changes them all), and of files whose rows went; none of `looked`.
   */
  readonly linked: Set<string>;
  /** Whether other names of hard-linked files are looked up (not when these names are the ones looked at). */
  readonly otherNames: boolean;
}

/**
 * Looks at each named path (absolute) as it is now, and at the directory
 * that holds it (the one rule of docs/live-updates.md: an event is a hint
 * that something changed there, the disk says what). Files are written or
 * removed at once; what needs more (a walk, a relist, other names) is
 * gathered in the PathCheck for the Reconciler to do next.
 */
export class NamedPaths {
  constructor(
    private readonly index: FolderIndex,
    private readonly log: Logger,
    private readonly locked: LockedFolders,
    /** Live's lifetime: once aborted, a batch under way stops between paths, and writes nothing more. */
    private readonly signal: AbortSignal,
  ) {}

  /** Looks at `paths` into `change` and commits it; undefined once aborted. */
  async look(change: PendingChange, paths: Iterable<string>, otherNames: boolean): Promise<PathCheck | undefined> {
    const check = this.pathsToLook(paths, otherNames);
    const files = [...check.looked];
    const stats = await mapLimited(files, foldsNames() ? lstatSpelledOrDenied : lstatOrDenied);
    const statOf = new Map(files.map((path, i) => [path, stats[i]!]));
    for (let i = 0; i < files.length; i++) {
      if (this.signal.aborted) return undefined;
      await this.lookAt(change, files[i]!, stats[i]!, statOf, check);
    }
    await change.flush();
    for (const path of change.links.takeRemoved()) check.linked.add(path);
    for (const path of check.looked) check.linked.delete(path);
    return check;
  }

  /**
   * The paths to lstat: each one inside a root, and the directory holding
   * it. A `.gitignore` is not looked at itself: what is ignored beneath its
   * directory may have changed either way, so its rules are forgotten and
   * the subtree diffed (which reads them again).
   */
  private pathsToLook(paths: Iterable<string>, otherNames: boolean): PathCheck {
    const check: PathCheck = { looked: new Set(), trees: new Set(), replaced: new Set(), ignoreEdits: new Set(), relists: new Set(), linked: new Set(), otherNames };
    for (const path of new Set(paths)) {
      const root = findRoot(this.index.roots, path);
      if (!root) continue;
      if (path !== root.path) check.looked.add(dirname(path));
      if (basename(path) === '.gitignore' && this.index.options.gitignore) {
        this.index.rules.invalidate(dirname(path));
        check.trees.add(dirname(path));
        check.ignoreEdits.add(dirname(path));
      } else {
        check.looked.add(path);
      }
    }
    return check;
  }

  /**
   * One looked-at path as its lstat (`st`) says it is now: its row written
   * or removed, or the path noted for a walk or relist after the batch.
   * `statOf` holds the lstat of every path of the batch.
   */
  private async lookAt(change: PendingChange, path: string, st: LstatResult, statOf: ReadonlyMap<string, LstatResult>, check: PathCheck): Promise<void> {
    const { store, rules, roots } = this.index;
    const root = findRoot(roots, path)!;
    // Its folder, looked at in this batch, is not one now (a link, a file, gone): an lstat of the
    // path went through a link to whatever it names, or found nothing. The folder's own check
    // removes it, or finds it replaced and walks it. (A folder not in the batch, the parent of a
    // reported path's folder, was not looked at: that path is judged as before.)
    const folder = statOf.get(dirname(path));
    if (path !== root.path && folder !== undefined && (folder === null || folder === DENIED || !folder.isDirectory())) return;
    if (st === DENIED) {
      // Beneath a folder that cannot be searched now: not gone, unknown. Its rows stay as they are.
      await this.locked.lockedAbove(path, root);
      // Yet a file the index knows here may have other names (hard links) in folders that can be searched: a
      // change made through this name is theirs too, and no event names them. The index has this name's inode,
      // so they are looked at (issue 44: truncated through a name in a folder made unreadable after the link,
      // the other name kept its old size until the periodic diff).
      const known = check.otherNames ? store.get(pathToUri(path, false)) : undefined;
      if (known) addOtherNames(store, known, check.linked);
      return;
    }
    if (path === root.path) return this.lookAtRoot(change, root, st, check);
    const rootIndex = roots.indexOf(root);
    const isDir = st?.isDirectory() ?? false;
    const isFile = st?.isFile() ?? false;
    const fileUri = pathToUri(path, false);
    const dirUri = pathToUri(path, true);
    if (!(isDir || isFile) || rules.isIgnored(path, isDir)) {
      change.removeIfIndexed(fileUri);
      change.removeIfIndexed(dirUri);
      return;
    }
    const parentUri = pathToUri(dirname(path), true);
    if (!store.get(parentUri)) {
      check.trees.add(highestUnindexedAncestor(store, dirname(path), root));
      return;
    }
    const knownDir = isFile ? undefined : store.get(dirUri);
    if (isFile) {
      change.removeIfIndexed(dirUri); // a directory replaced by a file of the same name
      change.consider(entryRow(path, basename(path), false, st!, parentUri, rootIndex), path);
      // A hard link's other names: looked up only when the file has other links.
      if (check.otherNames && st!.nlink > 1) addOtherNames(store, { uri: fileUri, ino: st!.ino, dev: st!.dev }, check.linked);
      await change.limitSniffs();
    } else if (knownDir) {
      const row = entryRow(path, basename(path), true, st!, parentUri, rootIndex);
      this.judgeDirectory(path, knownDir, row, st!, check);
      change.consider(row, path, knownDir);
    } else {
      change.removeIfIndexed(fileUri);
      check.trees.add(path); // new directory (created, moved in, or un-ignored): walk it
    }
    if (change.full) await change.flush();
  }

  /** A root as it is now: gone (its rows go), re-made (walked whole), or its own row written. */
  private lookAtRoot(change: PendingChange, root: Root, st: Stats | null, check: PathCheck): void {
    const { store, roots } = this.index;
    if (!st?.isDirectory()) return rootGone(store, change, root, this.log);
    const row = rootRow(root, roots.indexOf(root), st);
    const known = store.get(row.uri);
    // Re-made (rm -rf and mkdir, a checkout that replaced it): nothing the index knows of it holds.
    if (known) this.judgeDirectory(root.path, known, row, st, check);
    else check.trees.add(root.path); // not indexed: gone during the scan, or since, and back
    change.consider(row, root.path, known ?? null);
  }

  /**
   * An indexed directory as it is now against its row: of another identity
   * (a build output swapped in with mv dist.new dist, a folder re-made), it
   * is walked whole; the same one with its mtime moved (entries made,
   * removed or renamed that no event may have named), listed again.
   */
  private judgeDirectory(path: string, known: EntryRow, row: EntryRow, st: Stats, check: PathCheck): void {
    if (this.locked.changed(path, st.ctimeMs)) {
      check.trees.add(path); // its permission changed: what is inside may have changed unseen
    } else if (!sameIdentity(known, row)) {
      check.trees.add(path);
      check.replaced.add(path);
    } else if (known.mtime !== row.mtime) check.relists.add(path);
  }
}
