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

/**
 * The one place an index row becomes a protocol resource, so that list items,
 * `resources/metadata` and every read content item agree field for field.
 */
export function toResource(row: EntryRow, roots: readonly Root[]): ResourceObject {
  const collection = row.kind === EntryKind.collection;
  const resource: ResourceObject = {
    uri: row.uri,
    name: row.name,
    title: titleOf(row, roots),
    mimeType: row.mime,
    resourceType: collection ? 'collection' : 'document',
    capabilities: collection ? { list: true, subscribe: true } : { subscribe: true },
    annotations: { lastModified: new Date(row.mtime).toISOString() },
  };
  if (!collection) resource.size = row.size;
  return resource;
}

/** Path relative to the entry's root (`src/main.rs`); a root is titled by its folder name. */
function titleOf(row: EntryRow, roots: readonly Root[]): string {
  const root = roots[row.root];
  if (!root || row.uri === root.uri) return row.name;
  return relativeTitle(row.uri, root);
}

/** The title of a URI under `root` (its path relative to the root, decoded), for a URI that may not be indexed. */
export function relativeTitle(uri: string, root: Root): string {
  if (uri === root.uri) return root.name;
  let relative = uri.slice(root.uri.length);
  if (relative.endsWith('/')) relative = relative.slice(0, -1);
  try {
    return decodeURIComponent(relative);
  } catch {
    return relative;
  }
}
