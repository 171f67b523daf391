import { EntryKind, type EntryRow } from '../entry.ts';
import { textKind } from './mime.ts';

/** Bounds of a collection read (docs/resources.md, Reading). */
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
      ? `${listingName(child.name)}/\tcollection\t-`
      : `${listingName(child.name)}\tdocument\t${child.size}`,
  );
  if (more > 0) {
    lines.push(`... ${more} more entries: use resources/list with this uri to page through all of them`);
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

/**
 * A name or path as it appears in text meant for a model (collection
 * listings, tool and prompt text): a tab, newline, escape or other control
 * character (all legal in file names) would forge a second line or reach a
 * terminal verbatim, so C0 and C1 controls, DEL and the Unicode line and
 * paragraph separators are written as `\uXXXX`, and so is a backslash that
 * would look like one.
 */
export function listingName(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]|\\(?=u[0-9a-fA-F]{4})/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Whether a child document may be text worth embedding in a collection read,
 * by its indexed MIME type (mime.ts: textKind): media, archives, office files
 * and sniffed binary are skipped without being opened (a folder of a thousand
 * images costs no reads). Anything else is read, and embedded only if it
 * decodes as text.
 */
export function mayBeText(mimeType: string): boolean {
  return textKind(mimeType) !== 'binary';
}
