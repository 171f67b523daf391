import type { Store } from '../index/store.ts';
import { uriToPath } from '../uri.ts';

/** Other names of one hard-linked file looked at when it changes (a file with more is rare; the safety diff has the rest). */
export const MAX_OTHER_NAMES = 1000;
/** Hard-linked files one directory diff follows to their other names at most (a pnpm store links every file); past it the periodic diff covers them. */
const MAX_LINKED_FOUND = 10_000;

/** One indexed name of a file on disk, with the file's identity. */
export interface NamedFile {
  readonly uri: string;
  readonly ino: number;
  readonly dev: number;
}

/**
 * The other indexed names (paths) of `file` into `into`: no event names them
 * (inotify reports the name written through), yet their size and mtime are
 * this file's.
 */
export function addOtherNames(store: Store, file: NamedFile, into: Set<string>): void {
  for (const uri of store.sameFile(file.ino, file.dev, MAX_OTHER_NAMES)) if (uri !== file.uri) into.add(uriToPath(uri));
}

/**
 * The hard links one reconcile task must look at after it has written: the
 * other names of files found new or changed, and of files whose rows went.
 * Part of the task's PendingChange.
 */
export class LinkedNames {
  /**
   * Files with other links that a directory diff found new or changed: their
   * other indexed names (elsewhere, under no event) are looked at after it
   * (see take). The path check does the same for its own.
   */
  private found: NamedFile[] = [];
  /**
   * The other indexed names of files whose rows went (see PendingChange.flush):
   * written through the removed name just before it went (appended to, then
   * its folder deleted), they hold a size and mtime no event names.
   */
  private toRemoved = new Set<string>();

  /** A file a directory diff wrote that may have other names. */
  noteFound(file: NamedFile): void {
    if (this.found.length < MAX_LINKED_FOUND) this.found.push({ uri: file.uri, ino: file.ino, dev: file.dev });
  }

  /** Rows about to be removed: their files' names outside them are looked at after. */
  noteRemoved(store: Store, removed: readonly string[]): void {
    for (const uri of removed) {
      if (this.toRemoved.size >= MAX_LINKED_FOUND) break;
      for (const other of store.linkedOutside(uri, MAX_OTHER_NAMES)) this.toRemoved.add(uriToPath(other));
    }
  }

  /** The other names of removed rows noted so far, taken. */
  takeRemoved(): Set<string> {
    const taken = this.toRemoved;
    this.toRemoved = new Set();
    return taken;
  }

  /**
   * Every name noted so far, taken: a folder readable again (or listed
   * again) can show a file written through a name the server could not see,
   * and its other names, in folders no event named, hold the same size and
   * mtime.
   */
  take(store: Store): Set<string> {
    const others = this.takeRemoved();
    const found = this.found;
    this.found = [];
    for (const file of found) addOtherNames(store, file, others);
    return others;
  }
}
