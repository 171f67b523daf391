import { EntryKind, type EntryRow } from '../index/entry.ts';

/** Bounds of a collection read (DESIGN.md section 4). */
export interface CollectionReadLimits {
  /** Children named in the listing item (the rest are counted, not named). */
  listingEntries: number;
  /** Total bytes of child text documents embedded after the listing. */
  childBytes: number;
  /** Number of child text documents embedded after the listing. */
  childCount: number;
}

export const DEFAULT_COLLECTION_LIMITS: CollectionReadLimits = {
  listingEntries: 1000,
  childBytes: 256 * 1024,
  childCount: 100,
};

/**
 * The compact listing that is a collection's own content: one child per line,
 * `name<TAB>kind<TAB>size`, directories with a trailing '/'. Compact enough to
 * hand a model; `more` says how many children the listing left out.
 */
export function formatListing(children: readonly EntryRow[], more: number): string {
  const lines = children.map((child) =>
    child.kind === EntryKind.collection
      ? `${child.name}/\tcollection\t-`
      : `${child.name}\tdocument\t${child.size}`,
  );
  if (more > 0) {
    lines.push(`... ${more} more entries: use resources/list with this uri to page through all of them`);
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
