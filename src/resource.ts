import { EntryKind, type EntryRow } from './entry.ts';
import type { Root } from './uri.ts';

export type ResourceType = 'document' | 'collection';

/** The resource object of docs/resources.md, as list, metadata and read return it. */
export interface ResourceObject {
  [key: string]: unknown;
  uri: string;
  name: string;
  title: string;
  mimeType: string;
  size?: number;
  resourceType: ResourceType;
  capabilities: { list?: boolean; subscribe: boolean };
  annotations: { lastModified: string };
}

/** What a resource object is made of: an index row without `parent` and `ext`. */
export type ResourceRow = Pick<EntryRow, 'uri' | 'root' | 'name' | 'kind' | 'size' | 'mtime' | 'mime'>;

/**
 * The one place an index row becomes a protocol resource, so that list items,
 * `resources/metadata` and every read content item agree field for field.
 * A list page builds thousands, so it is kept cheap: one object literal per
 * kind (`size` last, as before), no Date, no decoding of a title that has
 * nothing to decode.
 */
export function toResource(row: ResourceRow, roots: readonly Root[]): ResourceObject {
  const title = titleOf(row, roots);
  const lastModified = isoTime(row.mtime);
  if (row.kind === EntryKind.collection) {
    return {
      uri: row.uri,
      name: row.name,
      title,
      mimeType: row.mime,
      resourceType: 'collection',
      capabilities: { list: true, subscribe: true },
      annotations: { lastModified },
    };
  }
  return {
    uri: row.uri,
    name: row.name,
    title,
    mimeType: row.mime,
    resourceType: 'document',
    capabilities: { subscribe: true },
    annotations: { lastModified },
    size: row.size,
  };
}

/** A resources/list item: the resource object less what the rest of it tells (toListItem). */
export interface ListItem {
  [key: string]: unknown;
  uri: string;
  name: string;
  mimeType: string;
  size?: number;
  resourceType: ResourceType;
  annotations: { lastModified: string };
}

/**
 * A resources/list item: the resource object without `title`, which is the
 * path the URI already holds, and `capabilities`, which `resourceType`
 * fixes (a collection lists, everything can be subscribed to). A listing
 * spent 55% of its CPU writing JSON and the pipe, at 403 bytes an item
 * (issue 45). Both stay on `resources/metadata`, on read contents and on the
 * tools' resource links (toResource).
 */
export function toListItem(row: ResourceRow): ListItem {
  const lastModified = isoTime(row.mtime);
  if (row.kind === EntryKind.collection) {
    return { uri: row.uri, name: row.name, mimeType: row.mime, resourceType: 'collection', annotations: { lastModified } };
  }
  return { uri: row.uri, name: row.name, mimeType: row.mime, resourceType: 'document', annotations: { lastModified }, size: row.size };
}

/** Path relative to the entry's root (`src/main.rs`); a root is titled by its folder name. */
function titleOf(row: ResourceRow, roots: readonly Root[]): string {
  const root = roots[row.root];
  if (!root || row.uri === root.uri) return row.name;
  return relativeTitle(row.uri, root);
}

/** The title of a URI under `root` (its path relative to the root, decoded), for a URI that may not be indexed. */
export function relativeTitle(uri: string, root: Root): string {
  if (uri === root.uri) return root.name;
  let relative = uri.slice(root.uri.length);
  if (relative.endsWith('/')) relative = relative.slice(0, -1);
  // Most paths have no escapes; decodeURIComponent would return them unchanged.
  if (!relative.includes('%')) return relative;
  try {
    return decodeURIComponent(relative);
  } catch {
    return relative;
  }
}

const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00Z: from there on toISOString writes a six-digit year. */
const YEAR_10000_MS = 253_402_300_800_000;
const ZERO = 0x30;
const [DASH, COLON, DOT, T, Z] = [0x2d, 0x3a, 0x2e, 0x54, 0x5a];
/** The tens and units digits of 0..99, as char codes. */
const hi = (n: number) => ZERO + Math.floor(n / 10);
const lo = (n: number) => ZERO + (n % 10);

/**
 * `new Date(ms).toISOString()`, a few times faster (a Date per item was the
 * largest single cost of building a list page): the civil date from the day
 * number (H. Hinnant's civil_from_days), then the time of day, written as one
 * flat string (a template literal of the parts leaves a dozen intermediate
 * strings per item for the collector). Times before 1970 or after 9999 go to
 * Date itself, which also keeps its RangeError for an invalid time.
 */
export function isoTime(ms: number): string {
  const t = Math.trunc(ms); // as Date does with a fraction (TimeClip)
  if (!(t >= 0 && t < YEAR_10000_MS)) return new Date(ms).toISOString();
  const days = Math.floor(t / DAY_MS);
  let rest = t - days * DAY_MS;
  const z = days + 719_468; // days since 0000-03-01
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153); // March = 0
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1;
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  const century = Math.floor(year / 100);
  return String.fromCharCode(
    hi(century), lo(century), hi(year % 100), lo(year % 100), DASH, hi(month), lo(month), DASH, hi(day), lo(day),
    T, hi(hours), lo(hours), COLON, hi(minutes), lo(minutes), COLON, hi(seconds), lo(seconds),
    DOT, ZERO + Math.floor(millis / 100), hi(millis % 100), lo(millis), Z,
  );
}
