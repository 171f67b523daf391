import type { Stats } from 'node:fs';
import { access as accessCallback, constants, lstat as lstatCallback } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, childPrefix, dirname, join } from '../fs-path.ts';
import { EntryKind, type EntryColumns, type EntryRow } from '../entry.ts';
import { scanInThread } from '../index/scan-thread.ts';
import type { FolderIndex } from '../index/folder-index.ts';
import { isAlwaysExcluded } from '../index/ignore.ts';
import { entryRow, rootRow, sniffMime } from '../index/scan.ts';
import { SkipReport, escapeName, invalidPathText, readServableDir, type DirListing } from '../index/servable.ts';
import type { Logger } from '../log.ts';
import { findRoot, pathToUri, uriToPath, type Root } from '../uri.ts';
import { outermostDirs, type RewatchReason } from '../watch/watcher.ts';
import { describeError, errnoCode, isNoEntry } from '../errno.ts';

/** Rows (and removals) per committed transaction. */
const BATCH = 2000;
/** Files opened or stat'ed at once: well under any fd limit. */
const PARALLEL_IO = 128;
/** Directories diffed at once (memory: this many directory listings). */
const PARALLEL_DIRS = 8;
/** Index children read per query when diffing one directory. */
const CHILD_PAGE = 5000;
/** Other names of one hard-linked file looked at when it changes (a file with more is rare; the safety diff has the rest). */
const MAX_OTHER_NAMES = 1000;
/** Hard-linked files one directory diff follows to their other names at most (a pnpm store links every file); past it the periodic diff covers them. */
const MAX_LINKED_FOUND = 10_000;

/**
 * Brings the index in line with the disk, one path or one subtree at a time,
 * writing only through FolderIndex.apply. Every decision comes from an lstat
 * made now, never from what a watcher said happened: so events may be lost,
 * duplicated or reordered (renames, atomic saves, bursts) and the index still
 * ends equal to the disk once the last change has been looked at.
 *
 * Memory is bounded by one directory's width (a subtree is diffed directory
 * by directory against the index's children of that directory), not by the
 * size of the tree.
 */
export class Reconciler {
  /** Rows written and URIs removed so far, over the Reconciler's life (to tell whether a diff found anything). */
  written = 0;
  private upserted: EntryRow[] = [];
  private removed: string[] = [];
  private sniffs: Promise<void>[] = [];
  /** Entries seen but not servable since the last report (the scan skips the same ones). */
  private skips = new SkipReport();
  /**
   * Folders there but not readable (EACCES, EPERM), with their ctime when
   * found so: the index keeps their rows and their children's as last seen
   * (what is inside is unknown, not gone). Giving the permission back moves
   * only the folder's ctime, which no watcher reports for sure: a ctime
   * moved (recheckLocked, or an event naming the folder) walks it whole.
   */
  private readonly locked = new Map<string, number>();
  /**
   * Files with other links that a directory diff found new or changed: their
   * other indexed names (elsewhere, under no event) are looked at after it
   * (see otherNames). The path check (`paths`) does the same for its own.
   */
  private linkedFound: Array<{ uri: string; ino: number; dev: number }> = [];
  /**
   * The other indexed names of files whose rows went (see flush): written
   * through the removed name just before it went (appended to, then its
   * folder deleted), they hold a size and mtime no event names.
   */
  private linkedToRemoved = new Set<string>();

  constructor(
    private readonly index: FolderIndex,
    private readonly log: Logger,
    /** Live's lifetime: once aborted, a walk or batch under way stops between steps, and writes nothing more. */
    private readonly signal: AbortSignal,
    /** Told of directories a walk found that the watcher may have missed (see Watcher.rewatch). */
    private readonly rewatch: (dir: string, reason: RewatchReason) => void = () => {},
    /**
     * Told of each directory walked because it had just appeared. Watchers
     * read a new directory and then watch it; a file created in between is
     * reported by nobody, and this walk may have run before it existed too.
     * So the caller looks at such a directory once more a little later,
     * when the watch surely exists.
     */
    private readonly recheckLater: (dir: string) => void = () => {},
  ) {}

  private get roots(): readonly Root[] {
    return this.index.roots;
  }

  /**
   * Looks at each path (absolute) as it is now, and at the directory that
   * holds it (the one rule of docs/live-updates.md: an event is a hint that
   * something changed there, the disk says what). A directory is compared
   * with its row: of another identity (inode, device) it is walked whole; of
   * the same identity with its mtime moved (entries made, removed or renamed
   * in it, whether or not an event named them) it is listed again (relist).
   * New directories, and directories whose `.gitignore` changed, are walked.
   */
  async paths(paths: Iterable<string>, otherNames = true): Promise<void> {
    const check = this.pathsToLook(paths, otherNames);
    const files = [...check.looked];
    const stats = await mapLimited(files, lstatOrDenied);
    const statOf = new Map(files.map((path, i) => [path, stats[i]!]));
    for (let i = 0; i < files.length; i++) {
      if (this.signal.aborted) return;
      await this.lookAt(files[i]!, stats[i]!, statOf, check);
    }
    await this.flush();
    for (const path of this.takeLinkedToRemoved()) check.linked.add(path);
    for (const path of check.looked) check.linked.delete(path);
    if (check.linked.size > 0 && !this.signal.aborted) await this.paths(check.linked, false);
    if (!(await this.relistChanged(check))) return;
    if (!(await this.walkTrees(check))) return;
    this.reportSkips();
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
      const root = findRoot(this.roots, path);
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
  private async lookAt(path: string, st: LstatResult, statOf: ReadonlyMap<string, LstatResult>, check: PathCheck): Promise<void> {
    const root = findRoot(this.roots, path)!;
    // Its folder, looked at in this batch, is not one now (a link, a file, gone): an lstat of the
    // path went through a link to whatever it names, or found nothing. The folder's own check
    // removes it, or finds it replaced and walks it. (A folder not in the batch, the parent of a
    // reported path's folder, was not looked at: that path is judged as before.)
    const folder = statOf.get(dirname(path));
    if (path !== root.path && folder !== undefined && (folder === null || folder === DENIED || !folder.isDirectory())) return;
    if (st === DENIED) {
      // Beneath a folder that cannot be searched now: not gone, unknown. Its rows stay as they are.
      await this.lockedAbove(path, root);
      // Yet a file the index knows here may have other names (hard links) in folders that can be searched: a
      // change made through this name is theirs too, and no event names them. The index has this name's inode,
      // so they are looked at (issue 44: truncated through a name in a folder made unreadable after the link,
      // the other name kept its old size until the periodic diff).
      const known = check.otherNames ? this.index.store.get(pathToUri(path, false)) : undefined;
      if (known) for (const uri of this.index.store.sameFile(known.ino, known.dev, MAX_OTHER_NAMES)) if (uri !== known.uri) check.linked.add(uriToPath(uri));
      return;
    }
    if (path === root.path) return this.lookAtRoot(root, st, check);
    const { store, rules } = this.index;
    const rootIndex = this.roots.indexOf(root);
    const isDir = st?.isDirectory() ?? false;
    const isFile = st?.isFile() ?? false;
    const fileUri = pathToUri(path, false);
    const dirUri = pathToUri(path, true);
    if (!(isDir || isFile) || rules.isIgnored(path, isDir)) {
      this.removeIfIndexed(fileUri);
      this.removeIfIndexed(dirUri);
      return;
    }
    const parentUri = pathToUri(dirname(path), true);
    if (!store.get(parentUri)) {
      check.trees.add(this.highestUnindexedAncestor(dirname(path), root));
      return;
    }
    const knownDir = isFile ? undefined : store.get(dirUri);
    if (isFile) {
      this.removeIfIndexed(dirUri); // a directory replaced by a file of the same name
      this.consider(entryRow(path, basename(path), false, st!, parentUri, rootIndex), path);
      // A hard link's other names: no event names them (inotify reports the name written through), yet
      // their size and mtime are this file's. Looked up only when the file has other links.
      if (check.otherNames && st!.nlink > 1) {
        for (const uri of store.sameFile(st!.ino, st!.dev, MAX_OTHER_NAMES)) if (uri !== fileUri) check.linked.add(uriToPath(uri));
      }
      await this.limitSniffs();
    } else if (knownDir) {
      const row = entryRow(path, basename(path), true, st!, parentUri, rootIndex);
      this.judgeDirectory(path, knownDir, row, st!, check);
      this.consider(row, path, knownDir);
    } else {
      this.removeIfIndexed(fileUri);
      check.trees.add(path); // new directory (created, moved in, or un-ignored): walk it
    }
    if (this.pendingCount() >= BATCH) await this.flush();
  }

  /** A root as it is now: gone (its rows go), re-made (walked whole), or its own row written. */
  private lookAtRoot(root: Root, st: Stats | null, check: PathCheck): void {
    if (!st?.isDirectory()) return this.rootGone(root);
    const row = rootRow(root, this.roots.indexOf(root), st);
    const known = this.index.store.get(row.uri);
    // Re-made (rm -rf and mkdir, a checkout that replaced it): nothing the index knows of it holds.
    if (known) this.judgeDirectory(root.path, known, row, st, check);
    else check.trees.add(root.path); // not indexed: gone during the scan, or since, and back
    this.consider(row, root.path, known ?? null);
  }

  /**
   * An indexed directory as it is now against its row: of another identity
   * (a build output swapped in with mv dist.new dist, a folder re-made), it
   * is walked whole; the same one with its mtime moved (entries made,
   * removed or renamed that no event may have named), listed again.
   */
  private judgeDirectory(path: string, known: EntryRow, row: EntryRow, st: Stats, check: PathCheck): void {
    if (this.locked.has(path) && this.locked.get(path) !== st.ctimeMs) {
      check.trees.add(path); // its permission changed: what is inside may have changed unseen
    } else if (!sameIdentity(known, row)) {
      check.trees.add(path);
      check.replaced.add(path);
    } else if (known.mtime !== row.mtime) check.relists.add(path);
  }

  /** Lists again each directory whose entries changed, unless a walk after covers it; false once aborted. */
  private async relistChanged(check: PathCheck): Promise<boolean> {
    for (const dir of check.relists) {
      if (this.signal.aborted) return false;
      if (![...check.trees].some((tree) => dir === tree || dir.startsWith(childPrefix(tree)))) await this.relist(dir);
    }
    return true;
  }

  /** Walks the outermost of the directories found new, replaced or with new rules; false once aborted. */
  private async walkTrees(check: PathCheck): Promise<boolean> {
    for (const dir of outermostDirs(check.trees)) {
      if (this.signal.aborted) return false;
      if (!check.ignoreEdits.has(dir)) this.rewatch(dir, check.replaced.has(dir) ? 'replaced' : 'found');
      // A directory that just appeared may hold directories created before the watcher saw it.
      await this.tree(dir, check.ignoreEdits.has(dir) ? 'unignored' : 'nested');
      this.recheckLater(dir);
    }
    return true;
  }

  /** Diffs the directory `dir` (a root or inside one) and everything beneath it against the index. */
  async tree(dir: string, newDirsAre?: RewatchReason): Promise<void> {
    const { store, rules } = this.index;
    const root = findRoot(this.roots, dir);
    if (!root) return;
    const rootIndex = this.roots.indexOf(root);
    const st = await lstatOrNull(dir);
    if (dir === root.path) {
      if (!st?.isDirectory()) {
        this.rootGone(root);
        return this.flush();
      }
      if (newDirsAre === undefined) return this.walkedRoot(root, rootIndex);
      this.consider(rootRow(root, rootIndex, st), dir);
    } else {
      const parentUri = pathToUri(dirname(dir), true);
      if (!store.get(parentUri)) return this.tree(this.highestUnindexedAncestor(dirname(dir), root), newDirsAre);
      if (!st?.isDirectory() || rules.isIgnored(dir, true)) {
        // Gone, ignored now, or a file: the path check handles every case.
        await this.flush();
        return this.paths([dir]);
      }
      this.removeIfIndexed(pathToUri(dir, false));
      this.consider(entryRow(dir, basename(dir), true, st, parentUri, rootIndex), dir);
    }
    await this.diffDirectories(dir, rootIndex, newDirsAre);
    await this.flush();
    await this.otherNames();
    this.reportSkips();
  }

  /**
   * Diffs `dir` and the directories diffDirectory queues beneath it (all of
   * them, or with `walkWhole` only those whose mtime moved: see relist).
   */
  private async diffDirectories(dir: string, rootIndex: number, newDirsAre: RewatchReason | undefined, walkWhole?: string[]): Promise<void> {
    const pending = [dir];
    while (pending.length > 0) {
      if (this.signal.aborted) return;
      // A few directories at once: each is a readdir and a few lstats, mostly waiting on the thread pool.
      const round = pending.splice(-PARALLEL_DIRS);
      await Promise.all(round.map((d) => this.diffDirectory(d, rootIndex, pending, newDirsAre, walkWhole)));
      if (this.pendingCount() >= BATCH) await this.flush();
    }
  }

  /**
   * Lists the indexed directory `dir` again, of the same identity as the
   * index knows it, and compares each entry with the index by type, size,
   * mtime and identity. Beneath it, a directory that is new or of another
   * identity is walked whole (tree); one whose own mtime moved (entries
   * added, removed or renamed in it) is listed again the same way; one
   * unchanged is left alone: what changes inside it without changing it
   * (a file written) is its own watch's to report.
   */
  async relist(dir: string): Promise<void> {
    const root = findRoot(this.roots, dir);
    if (!root) return;
    const rootIndex = this.roots.indexOf(root);
    const walkWhole: string[] = [];
    await this.diffDirectories(dir, rootIndex, 'found', walkWhole);
    await this.flush();
    await this.otherNames();
    for (const tree of outermostDirs(walkWhole)) {
      if (this.signal.aborted) return;
      await this.tree(tree, 'found');
    }
    this.reportSkips();
  }

  /**
   * Diffs a whole root against the index, from the cold scan's walk (on its
   * worker thread once one is up: half the CPU of the async walk, and off
   * the main thread, which only compares each directory's entries with the
   * index's children of it and writes the difference). The post-scan check,
   * the periodic safety check and every poll diff a whole root.
   */
  private async walkedRoot(root: Root, rootIndex: number): Promise<void> {
    const { rules, options } = this.index;
    const walk = scanInThread({
      roots: this.roots,
      onlyRoot: rootIndex,
      ignore: { gitignore: options.gitignore, exclude: options.exclude },
      log: walkLog(this.log),
      skips: this.skips,
      dbFile: null,
      ...(options.scanSlicesHere ? { slicesHere: options.scanSlicesHere } : {}),
    });
    try {
      for await (const { rows, read } of walk) {
        if (this.signal.aborted) return;
        let next = 0;
        // The root's own row leads the first batch; every directory's rows precede its entry in `read`.
        if (rows.parent[0] === null) {
          const row = rowAt(rows, next++);
          const known = this.index.store.get(row.uri);
          // Re-made since the index was written (rm -rf, mkdir): a backend holding a watch of the old one watches afresh.
          if (known && !sameIdentity(known, row)) this.rewatch(root.path, 'replaced');
          this.consider(row, root.path, known ?? null);
        }
        for (const dir of read) {
          // A whole root's diff (the start's check, the periodic one, a poll) is background work: requests go first.
          await this.index.foreground.turn();
          if (this.signal.aborted) return;
          const first = next;
          while (next < rows.uri.length && rows.parent[next] === dir.uri) next++;
          rules.setDirRules(dir.path, dir.gitignore);
          if (dir.failed === 'gone') this.removeIfIndexed(dir.uri);
          // Unreadable: keep what the index knows rather than pretend it is empty.
          else if (dir.failed === 'unreadable') await this.markLocked(dir.path, null);
          else {
            this.unlocked(dir.path);
            this.diffListed(dir.uri, rows, first, next);
          }
        }
        if (this.pendingCount() >= BATCH) await this.flush();
      }
    } catch (error) {
      // The root went away mid-walk, or the walk's thread failed: what was compared so far is
      // written below, and the next check (periodic, or the next poll) covers the rest.
      this.log.warn(`cannot walk ${escapeName(root.path)}: ${describeError(error)}`);
    }
    await this.flush();
    await this.otherNames();
    this.reportSkips();
  }

  /** One directory as walked (rows[first..end) of a batch) against its children in the index. */
  private diffListed(dirUri: string, rows: EntryColumns, first: number, end: number): void {
    const indexed = this.indexedChildren(dirUri);
    for (let i = first; i < end; i++) {
      const row = rowAt(rows, i);
      const known = indexed.get(row.uri);
      indexed.delete(row.uri);
      // The walk has sniffed what needed it: no path is needed here. Its rows carry no link count: a
      // document new or changed is looked up by identity (one index lookup), as a hard link's other
      // names, in folders nobody re-lists, may have been written through it (fuzzer seed 3075).
      const changed = this.consider(row, '', known ?? null);
      if (changed && row.kind === EntryKind.document && row.ino !== 0 && this.linkedFound.length < MAX_LINKED_FOUND) {
        this.linkedFound.push({ uri: row.uri, ino: row.ino, dev: row.dev });
      }
      if (row.kind === EntryKind.collection) this.rewatchIfNew(uriToPath(row.uri), known, row, 'found');
    }
    // In the index, not on disk (or ignored now): a collection takes its subtree with it.
    for (const uri of indexed.keys()) this.removed.push(uri);
  }

  /** Tells the watcher of a walked directory that is new to the index (as `reason`) or of another identity than the indexed one. */
  private rewatchIfNew(path: string, known: EntryRow | undefined, row: EntryRow, reason: RewatchReason): void {
    if (!known) this.rewatch(path, reason);
    else if (!sameIdentity(known, row)) this.rewatch(path, 'replaced');
  }

  private indexedChildren(dirUri: string): Map<string, EntryRow> {
    const indexed = new Map<string, EntryRow>();
    for (let after = ''; ; ) {
      const page = this.index.store.children(dirUri, after, CHILD_PAGE);
      for (const row of page) indexed.set(row.uri, row);
      if (page.length < CHILD_PAGE) break;
      after = page.at(-1)!.uri;
    }
    return indexed;
  }

  /** One warning per walk at most (and none for skips already reported): see SkipWarnings. */
  private reportSkips(): void {
    if (this.skips.total === 0) return;
    const skips = this.skips;
    this.skips = new SkipReport();
    this.index.skipWarnings.report(skips, 'rescan');
  }

  private async diffDirectory(
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
      if (isNoEntry(error)) this.removeIfIndexed(dirUri);
      else if (errnoCode(error) === 'ENAMETOOLONG') this.skips.add('deep', escapeName(dir));
      // Unreadable: keep what the index knows rather than pretend it is empty.
      else if (isDenied(error)) await this.markLocked(dir, error);
      else this.log.warn(`cannot read directory ${escapeName(dir)}: ${describeError(error)}`);
      return;
    }
    for (const name of listing.invalidNames) this.skips.add('name', invalidPathText(dir, name));
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
      await this.markLocked(dir, null);
      return;
    }
    this.unlocked(dir);
    // Not a folder any more (swapped for a link to another folder, removed): what was read may be
    // another folder's. Its row goes; what it is now comes from the event on its parent.
    if (!(await lstatOrNull(dir))?.isDirectory()) {
      this.removeIfIndexed(dirUri);
      return;
    }
    const indexed = this.indexedChildren(dirUri);
    for (let i = 0; i < kept.length; i++) {
      const st = stats[i];
      const path = join(dir, kept[i]!.name);
      if (st === 'deep') {
        this.skips.add('deep', escapeName(path));
        continue;
      }
      if (!st || st === DENIED || !(st.isFile() || st.isDirectory())) continue; // vanished since readdir
      const row = entryRow(path, kept[i]!.name, st.isDirectory(), st, dirUri, rootIndex);
      const known = indexed.get(row.uri);
      indexed.delete(row.uri);
      if (this.consider(row, path, known ?? null) && st.isFile() && st.nlink > 1 && this.linkedFound.length < MAX_LINKED_FOUND) {
        this.linkedFound.push({ uri: row.uri, ino: row.ino, dev: row.dev });
      }
      await this.limitSniffs();
      if (st.isDirectory()) {
        this.rewatchIfNew(path, known, row, newDirsAre ?? 'found');
        if (walkWhole === undefined) pending.push(path);
        else if (!known || known.kind !== row.kind || !sameIdentity(known, row)) walkWhole.push(path);
        else if (known.mtime !== row.mtime) pending.push(path);
      }
    }
    // In the index, not on disk (or ignored now): a collection takes its subtree with it.
    for (const uri of indexed.keys()) this.removed.push(uri);
  }

  /**
   * Records `dir` as there but unreadable (see `locked`), once: its rows and
   * its children's stay as the index has them.
   */
  private async markLocked(dir: string, error: unknown, quiet = false): Promise<void> {
    const st = await lstatOrNull(dir);
    if (!st?.isDirectory()) return; // gone meanwhile: its parent's event says so
    if (!this.locked.has(dir)) {
      if (this.locked.size >= MAX_LOCKED) return; // past it, the periodic diff catches up
      const why = error ? `: ${describeError(error)}` : '';
      // Quiet: the caller has said so already (the scan's own warning).
      if (!quiet) this.log.warn(`cannot read directory ${escapeName(dir)}${why}; its entries are listed as last seen until it is readable again`);
    }
    // Readable again already (a chmod between the read and the lstat above): a ctime that can match nothing, so
    // the next recheckLocked walks it.
    const readable = await new Promise<boolean>((resolve) => accessCallback(dir, constants.R_OK | constants.X_OK, (e) => resolve(!e)));
    this.locked.set(dir, readable ? Number.NaN : st.ctimeMs);
  }

  /** Whether some folder is recorded unreadable (recheckLocked has work). */
  get hasLocked(): boolean {
    return this.locked.size > 0;
  }

  /** Folders found unreadable elsewhere (the cold scan): recorded as locked. */
  async noteLocked(dirs: readonly string[]): Promise<void> {
    for (const dir of dirs) await this.markLocked(dir, null, true);
  }

  /** `dir` was just listed: it is readable (again). */
  private unlocked(dir: string): void {
    if (this.locked.delete(dir)) this.log.info(`directory ${escapeName(dir)} is readable again`);
  }

  /**
   * `path` cannot be lstat'ed for want of permission: the folder above it
   * that can be lstat'ed but not searched is locked (its rows stay).
   */
  private async lockedAbove(path: string, root: Root): Promise<void> {
    for (let dir = dirname(path); path !== root.path && (dir === root.path || dir.startsWith(childPrefix(root.path))); dir = dirname(dir)) {
      const st = await lstatOrDenied(dir);
      if (st === DENIED) continue;
      if (st?.isDirectory()) await this.markLocked(dir, null);
      return;
    }
  }

  /**
   * The locked folders whose ctime moved (a chmod, a chown) or that are gone:
   * each is looked at again, and walked whole if it is readable now. Cheap
   * (one lstat per locked folder): the sync layer calls it every second.
   */
  async recheckLocked(): Promise<void> {
    if (this.locked.size === 0) return;
    const dirs = [...this.locked];
    const stats = await mapLimited(dirs, ([dir]) => lstatOrNull(dir));
    const moved: string[] = [];
    for (let i = 0; i < dirs.length; i++) {
      const [dir, ctime] = dirs[i]!;
      const st = stats[i];
      if (!st?.isDirectory()) this.locked.delete(dir);
      if (!st?.isDirectory() || st.ctimeMs !== ctime) moved.push(dir);
    }
    if (moved.length > 0) await this.paths(moved);
  }

  /** Queues `row` unless the index already has it as it is (then false); `known` skips the lookup when the caller has it. */
  private consider(row: EntryRow, path: string, known: EntryRow | null | undefined = undefined): boolean {
    const existing = known === undefined ? this.index.store.get(row.uri) : (known ?? undefined);
    if (
      existing &&
      existing.mtime === row.mtime &&
      existing.size === row.size &&
      sameIdentity(existing, row) &&
      existing.kind === row.kind &&
      existing.parent === row.parent &&
      existing.root === row.root
    ) {
      return false;
    }
    if (row.mime === '') this.sniffs.push(sniffMime(path, row));
    this.upserted.push(row);
    return true;
  }

  /**
   * The other indexed names of the hard-linked files a directory diff found
   * new or changed: a folder readable again (or listed again) can show a
   * file written through a name the server could not see, and its other
   * names, in folders no event named, hold the same size and mtime.
   */
  private async otherNames(): Promise<void> {
    const others = new Set<string>(this.takeLinkedToRemoved());
    const found = this.linkedFound;
    this.linkedFound = [];
    for (const { uri, ino, dev } of found) {
      for (const other of this.index.store.sameFile(ino, dev, MAX_OTHER_NAMES)) if (other !== uri) others.add(uriToPath(other));
    }
    // The names found are looked at again too: one lstat'ed before a write through another name, with
    // that name's event (or walk) handled before this one was committed, would keep the size from before.
    if (others.size > 0 && !this.signal.aborted) await this.paths(others, false);
  }

  private takeLinkedToRemoved(): Set<string> {
    const taken = this.linkedToRemoved;
    this.linkedToRemoved = new Set();
    return taken;
  }

  /** Keeps the files open for sniffing under PARALLEL_IO (a sniff that hits EMFILE would call text binary). */
  private async limitSniffs(): Promise<void> {
    if (this.sniffs.length < PARALLEL_IO) return;
    const sniffs = this.sniffs;
    this.sniffs = [];
    await Promise.all(sniffs);
  }

  /**
   * A served folder that is gone (deleted, moved away, replaced by a file):
   * nothing of it is listed any more, its own row included, as on disk. The
   * watcher looks for it to come back (then it is walked whole); the server
   * goes on serving the other roots.
   */
  private rootGone(root: Root): void {
    if (!this.index.store.get(root.uri)) return;
    this.log.warn(`served folder ${escapeName(root.path)} is gone or not a folder: its entries are no longer listed until it is back`);
    this.removed.push(root.uri);
  }

  private removeIfIndexed(uri: string): void {
    if (this.index.store.get(uri)) this.removed.push(uri);
  }

  /** The topmost directory between `dir` and its root that the index does not have yet. */
  private highestUnindexedAncestor(dir: string, root: Root): string {
    let top = dir;
    while (top !== root.path && dirname(top) !== root.path && !this.index.store.get(pathToUri(dirname(top), true))) {
      top = dirname(top);
    }
    return top;
  }

  private pendingCount(): number {
    return this.upserted.length + this.removed.length;
  }

  /** Commits what is queued as one transaction (after the content sniffs it needs). */
  private async flush(): Promise<void> {
    if (this.sniffs.length > 0) {
      const sniffs = this.sniffs;
      this.sniffs = [];
      await Promise.all(sniffs);
    }
    const change = { upserted: this.upserted, removed: this.removed };
    this.upserted = [];
    this.removed = [];
    if (this.signal.aborted) return;
    for (const uri of change.removed) {
      if (this.linkedToRemoved.size >= MAX_LINKED_FOUND) break;
      for (const other of this.index.store.linkedOutside(uri, MAX_OTHER_NAMES)) this.linkedToRemoved.add(uriToPath(other));
    }
    if (this.index.apply(change)) this.written += change.upserted.length + change.removed.length;
  }
}

/** The scan's warning for a folder it cannot read or search (src/index/scan.ts). */
const SCAN_UNREADABLE_WARNING = /^skipping (unreadable|unsearchable) directory /;

/**
 * The log of a walk of a whole root: the scan's warning for an unreadable
 * folder goes to debug, since markLocked says it once per lock (the walk
 * said it again each time it ran: every 2 s with the poll watcher, every
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

/** Whether two rows of one path name the same file on disk (inode and device). */
function sameIdentity(a: Pick<EntryRow, 'ino' | 'dev'>, b: Pick<EntryRow, 'ino' | 'dev'>): boolean {
  return a.ino === b.ino && a.dev === b.dev;
}

/** An lstat refused for want of permission: the entry may be there (see Reconciler.locked). */
const DENIED = 'denied';
/** What lstatOrDenied found: the entry, nothing there, or no permission to look. */
type LstatResult = Stats | null | typeof DENIED;

/** What one call of Reconciler.paths gathers as it looks at each path, for the steps after its batch. */
interface PathCheck {
  /** The paths lstat'ed: each reported path, and the directory holding it. */
  readonly looked: Set<string>;
  /** Directories to walk whole: new, re-made, their permission given back, or their .gitignore changed. */
  readonly trees: Set<string>;
  /** Of `trees`, directories of another identity than the indexed one (see Watcher.rewatch). */
  readonly replaced: Set<string>;
  /** Of `trees`, directories whose .gitignore changed. */
  readonly ignoreEdits: Set<string>;
  /** Indexed directories of the same identity whose mtime moved: their entries changed (see relist). */
  readonly relists: Set<string>;
  /** Other indexed names of files seen with more than one link: a write through one name changes them all. */
  readonly linked: Set<string>;
  /** Whether other names of hard-linked files are looked up (not when these names are the ones looked at). */
  readonly otherNames: boolean;
}
/** Locked folders remembered at most (a few bytes each); past it the periodic diff covers the rest. */
const MAX_LOCKED = 10_000;

function isDenied(error: unknown): boolean {
  const code = errnoCode(error);
  return code === 'EACCES' || code === 'EPERM';
}

/** lstatOrNull, with a refusal for want of permission told apart from "not there". */
function lstatOrDenied(path: string): Promise<LstatResult> {
  return new Promise((resolve) => lstatCallback(path, (error, stats) => resolve(error ? (isDenied(error) ? DENIED : null) : stats)));
}

/** lstatEntry (the scan's), with a refusal for want of permission told apart. */
function lstatEntryOrDenied(path: string): Promise<Stats | null | 'deep' | typeof DENIED> {
  return new Promise((resolve) =>
    lstatCallback(path, (error, stats) => resolve(error ? (isDenied(error) ? DENIED : errnoCode(error) === 'ENAMETOOLONG' ? 'deep' : null) : stats)),
  );
}

/** Gone (or unreachable) is null: the caller treats it as not there. Callback lstat: measurably cheaper than fs/promises per call. */
function lstatOrNull(path: string): Promise<Stats | null> {
  return new Promise((resolve) => lstatCallback(path, (error, stats) => resolve(error ? null : stats)));
}

/** `fn` over items, at most PARALLEL_IO at a time, results in order. */
async function mapLimited<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  for (let start = 0; start < items.length; start += PARALLEL_IO) {
    const chunk = items.slice(start, start + PARALLEL_IO);
    const results = await Promise.all(chunk.map(fn));
    for (let i = 0; i < results.length; i++) out[start + i] = results[i]!;
  }
  return out;
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
