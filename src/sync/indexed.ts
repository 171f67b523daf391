import type { EntryRow } from '../entry.ts';
import { dirname } from '../fs-path.ts';
import type { Store } from '../index/store.ts';
import type { Logger } from '../log.ts';
import { escapeName } from '../index/servable.ts';
import { pathToUri, type Root } from '../uri.ts';
import type { PendingChange } from './pending-change.ts';

/** The index's side of a reconcile: what it holds of a place, as the path check and the diffs read it. */

/** Index children read per query when diffing one directory. */
const CHILD_PAGE = 5000;

/** The index's children of one directory, by URI, read a page at a time. */
export function indexedChildren(store: Store, dirUri: string): Map<string, EntryRow> {
  const indexed = new Map<string, EntryRow>();
  for (let after = ''; ; ) {
    const page = store.children(dirUri, after, CHILD_PAGE);
    for (const row of page) indexed.set(row.uri, row);
    if (page.length < CHILD_PAGE) break;
    after = page.at(-1)!.uri;
  }
  return indexed;
}

/** The topmost directory between `dir` and its root that the index does not have yet. */
export function highestUnindexedAncestor(store: Store, dir: string, root: Root): string {
  let top = dir;
  while (top !== root.path && dirname(top) !== root.path && !store.get(pathToUri(dirname(top), true))) {
    top = dirname(top);
  }
  return top;
}

/**
 * A served folder that is gone (deleted, moved away, replaced by a file):
 * nothing of it is listed any more, its own row included, as on disk. The
 * watcher looks for it to come back (then it is walked whole); the server
 * goes on serving the other roots.
 */
export function rootGone(store: Store, change: PendingChange, root: Root, log: Logger): void {
  if (!store.get(root.uri)) return;
  log.warn(`served folder ${escapeName(root.path)} is gone or not a folder: its entries are no longer listed until it is back`);
  change.remove(root.uri);
}
