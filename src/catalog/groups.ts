// SEP-1292 discovery resources: mcp://groups/tools, mcp://groups/prompts and
// mcp://groups/resources, each `{"groups":[{name, description, uri_paths}]}`.
// They are the only mcp:// resources. They are readable (resources/read,
// resources/metadata) but not listed by resources/list: that list is the
// folders' content, and clients find these at their standard URIs.
import type { ServerContext } from '../protocol/context.ts';
import { resourceNotFound } from '../protocol/errors.ts';
import type { ResourceObject } from '../resource.ts';
import { labelsOf } from './paths.ts';
import { CATALOG_GROUP } from './tool.ts';

export const GROUP_URIS = ['mcp://groups/prompts', 'mcp://groups/resources', 'mcp://groups/tools'] as const;
/** Top-level folders named per root; a root with more says how many were left out. */
const MAX_FOLDER_GROUPS = 200;

export interface Group {
  name: string;
  description: string;
  uri_paths: string[];
}

export interface GroupsDocument {
  groups: Group[];
  /** Top-level folders not named, per root URI (only when some were left out). */
  omitted?: Record<string, number>;
}

export function catalogGroups(kind: 'tools' | 'prompts'): GroupsDocument {
  return {
    groups: [
      {
        name: CATALOG_GROUP,
        description:
          kind === 'tools'
            ? 'Find, search, read and outline the files of the served folders'
            : 'Prompts about the files of the served folders: explain one, review recent changes',
        uri_paths: [`mcp://${kind}/${CATALOG_GROUP}/`],
      },
    ],
  };
}

/** The served roots and each one's top-level folders, from the index. */
export async function resourceGroups(ctx: ServerContext): Promise<GroupsDocument> {
  const doc: GroupsDocument = { groups: [] };
  // Named as the tools print paths: two roots with one folder name are `same` and `same~2`, never two groups alike.
  const labels = ctx.roots.length > 1 ? labelsOf(ctx.roots) : ctx.roots.map((root) => root.name);
  for (const [i, root] of ctx.roots.entries()) {
    const label = labels[i]!;
    doc.groups.push({ name: label, description: `Everything in ${root.path}`, uri_paths: [root.uri] });
    // (parent, uri) index: the folders among the root's children, at most the cap, then a count of the rest.
    const dirs = ctx.index.store.subfolders(root.uri, MAX_FOLDER_GROUPS + 1);
    for (const dir of dirs.slice(0, MAX_FOLDER_GROUPS)) {
      doc.groups.push({ name: `${label}/${dir.name}`, description: `The ${dir.name} folder of ${label}`, uri_paths: [dir.uri] });
    }
    if (dirs.length > MAX_FOLDER_GROUPS) {
      (doc.omitted ??= {})[root.uri] = ctx.index.store.countSubfolders(root.uri) - MAX_FOLDER_GROUPS;
    }
  }
  return doc;
}

/** True for any mcp: URI: they are never looked up as files. */

async function groupDocument(ctx: ServerContext, uri: string): Promise<{ resource: ResourceObject; text: string }> {
  const kind = uri.slice('mcp://groups/'.length);
  if (!(GROUP_URIS as readonly string[]).includes(uri)) throw resourceNotFound(uri);
  const doc = kind === 'resources' ? await resourceGroups(ctx) : catalogGroups(kind as 'tools' | 'prompts');
  const text = JSON.stringify(doc);
  const resource: ResourceObject = {
    uri,
    name: kind,
    title: `${kind[0]!.toUpperCase()}${kind.slice(1)} groups`,
    mimeType: 'application/json',
    size: Buffer.byteLength(text),
    resourceType: 'document',
    capabilities: { subscribe: false },
    annotations: { lastModified: lastModified(ctx, kind) },
  };
  return { resource, text };
}

function lastModified(ctx: ServerContext, kind: string): string {
  // Tool and prompt groups are fixed for the life of the process.
  if (kind !== 'resources') return new Date(performance.timeOrigin).toISOString();
  // A top-level folder added or removed changes its root's mtime.
  const mtimes = ctx.roots.map((root) => ctx.index.store.get(root.uri)?.mtime ?? 0);
  return new Date(Math.max(0, ...mtimes)).toISOString();
}

/** resources/read of a reserved mcp: URI (only mcp://groups/* exist; any other is not found). */
export async function readReservedResource(ctx: ServerContext, uri: string) {
  const { resource, text } = await groupDocument(ctx, uri);
  return { contents: [{ ...resource, text }] };
}

/** resources/metadata of a reserved mcp: URI. */
export async function reservedResourceMetadata(ctx: ServerContext, uri: string) {
  return { resource: (await groupDocument(ctx, uri)).resource };
}
