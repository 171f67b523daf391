import { access as accessCallback, constants } from 'node:fs';
import { childPrefix, dirname } from '../fs-path.ts';
import { escapeName } from '../index/servable.ts';
import type { Logger } from '../log.ts';
import type { Root } from '../uri.ts';
import { describeError } from '../errno.ts';
import { DENIED, lstatOrDenied, lstatOrNull, mapLimited } from './look.ts';

/** Locked folders remembered at most (a few bytes each); past it the periodic diff covers the rest. */
const MAX_LOCKED = 10_000;

/**
 * Folders there but not readable (EACCES, EPERM), with their ctime when
 * found so: the index keeps their rows and their children's as last seen
 * (what is inside is unknown, not gone). Giving the permission back moves
 * only the folder's ctime, which no watcher reports for sure: a ctime moved
 * (see `due`, or an event naming the folder) walks it whole.
 *
 * Outlives every reconcile task (it is what the disk was, not what a task
 * is about to write).
 */
export class LockedFolders {
  private readonly locked = new Map<string, number>();

  constructor(private readonly log: Logger) {}

  /** Whether some folder is recorded unreadable (`due` has work). */
  get any(): boolean {
    return this.locked.size > 0;
  }

  /** Whether `dir` is recorded locked with another ctime than `ctimeMs`: its permission changed, what is inside may have changed unseen. */
  changed(dir: string, ctimeMs: number): boolean {
    return this.locked.has(dir) && this.locked.get(dir) !== ctimeMs;
  }

  /**
   * Records `dir` as there but unreadable, once: its rows and its children's
   * stay as the index has them.
   */
  async mark(dir: string, error: unknown, quiet = false): Promise<void> {
    const st = await lstatOrNull(dir);
    if (!st?.isDirectory()) return; // gone meanwhile: its parent's event says so
    if (!this.locked.has(dir)) {
      if (this.locked.size >= MAX_LOCKED) return; // past it, the periodic diff catches up
      const why = error ? `: ${describeError(error)}` : '';
      // Quiet: the caller has said so already (the scan's own warning).
      if (!quiet) this.log.warn(`cannot read directory ${escapeName(dir)}${why}; its entries are listed as last seen until it is readable again`);
    }
    // Readable again already (a chmod between the read and the lstat above): a ctime that can match nothing, so
    // the next `due` walks it.
    const readable = await new Promise<boolean>((resolve) => accessCallback(dir, constants.R_OK | constants.X_OK, (e) => resolve(!e)));
    this.locked.set(dir, readable ? Number.NaN : st.ctimeMs);
  }

  /** Folders found unreadable elsewhere (the cold scan): recorded as locked. */
  async note(dirs: readonly string[]): Promise<void> {
    for (const dir of dirs) await this.mark(dir, null, true);
  }

  /** `dir` was just listed: it is readable (again). */
  unlocked(dir: string): void {
    if (this.locked.delete(dir)) this.log.info(`directory ${escapeName(dir)} is readable again`);
  }

  /**
   * `path` cannot be lstat'ed for want of permission: the folder above it
   * that can be lstat'ed but not searched is locked (its rows stay).
   */
  async lockedAbove(path: string, root: Root): Promise<void> {
    for (let dir = dirname(path); path !== root.path && (dir === root.path || dir.startsWith(childPrefix(root.path))); dir = dirname(dir)) {
      const st = await lstatOrDenied(dir);
      if (st === DENIED) continue;
      if (st?.isDirectory()) await this.mark(dir, null);
      return;
    }
  }

  /**
   * The locked folders whose ctime moved (a chmod, a chown) or that are gone,
   * to be looked at again (and walked whole if readable now); the gone ones
   * are forgotten. Cheap (one lstat per locked folder): the sync layer asks
   * every second.
   */
  async due(): Promise<string[]> {
    if (this.locked.size === 0) return [];
    const dirs = [...this.locked];
    const stats = await mapLimited(dirs, ([dir]) => lstatOrNull(dir));
    const moved: string[] = [];
    for (let i = 0; i < dirs.length; i++) {
      const [dir, ctime] = dirs[i]!;
      const st = stats[i];
      if (!st?.isDirectory()) this.locked.delete(dir);
      if (!st?.isDirectory() || st.ctimeMs !== ctime) moved.push(dir);
    }
    return moved;
  }
}
