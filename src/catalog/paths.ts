// How tool and prompt arguments name things: a `file:` URI, an absolute path,
// or a path relative to a served folder. Models write paths; the index speaks
// canonical URIs. Every name still goes through lookupEntry, whose answer is
// index membership, so nothing here can reach outside the roots.
import { posix } from 'node:path';
import { listingName } from '../content/collection.ts';
import type { EntryRow } from '../entry.ts';
import { lookupEntry } from '../index/lookup.ts';
import type { ServerContext } from '../protocol/context.ts';
import { relativeTitle } from '../resource.ts';
import { canonicalUriText, pathToUri, type Root } from '../uri.ts';
import { ToolFailure } from './tool.ts';

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** Canonical spelling of one path segment (decoded text), as pathToUri writes it. */
export function encodeSegment(segment: string): string {
  // pathToUri normalises, which would eat '.' and '..'; those are ASCII and never encoded.
  if (segment === '' || segment === '.' || segment === '..') return segment;
  return pathToUri(`/${segment}`, false).slice('file:///'.length);
}

/** Canonical spelling of a relative path text, segment by segment, not normalised. */
export function encodeRelative(path: string): string {
  return path.split('/').map(encodeSegment).join('/');
}

/** Backslash-escapes the metachars of our glob dialect (src/query/glob.ts). */
export function escapeGlob(text: string): string {
  return text.replace(/[\\*?[\]{}]/g, '\\$&');
}

export function isUriText(text: string): boolean {
  return SCHEME.test(text);
}

/**
 * The URI prefixes a `prefix`-style argument stands for: a URI prefix as it is
 * (canonical spelling), or a relative path under every root.
 */
export function prefixUris(text: string, roots: readonly Root[]): string[] {
  if (isUriText(text)) return [canonicalUriText(text)];
  const rel = text.replace(/^\.?\/+/, '');
  return roots.map((root) => root.uri + encodeRelative(rel));
}

/**
 * How each root is named in text for a model, parallel to `rootPaths`: its
 * folder name, or where two roots share one, the shortest run of trailing
 * path segments that tells them apart (`/w/a/proj`, `/w/b/proj` are `a/proj`
 * and `b/proj`). Pure.
 */
export function rootLabels(rootPaths: readonly string[]): string[] {
  const segments = rootPaths.map((path) => path.split('/').filter(Boolean));
  const depth = rootPaths.map(() => 1);
  const label = (i: number) => (segments[i]!.length === 0 ? '/' : segments[i]!.slice(-depth[i]!).join('/'));
  for (;;) {
    const byLabel = new Map<string, number[]>();
    rootPaths.forEach((_, i) => byLabel.set(label(i), [...(byLabel.get(label(i)) ?? []), i]));
    let grew = false;
    for (const same of byLabel.values()) {
      if (same.length < 2) continue;
      for (const i of same) {
        if (depth[i]! < segments[i]!.length) {
          depth[i]!++;
          grew = true;
        }
      }
    }
    if (!grew) return rootPaths.map((_, i) => label(i));
  }
}

const labelCache = new WeakMap<readonly Root[], string[]>();

function labelsOf(roots: readonly Root[]): string[] {
  let labels = labelCache.get(roots);
  if (!labels) labelCache.set(roots, (labels = rootLabels(roots.map((r) => r.path))));
  return labels;
}

/**
 * How a tool or prompt names an entry to a model: its path relative to its
 * root, and with several roots the root's label first (`b/proj/src/a.ts`),
 * so that entries of two roots never print alike; control characters
 * escaped, so a name is one line. `read` and `tree` accept it back.
 */
export function displayPath(row: Pick<EntryRow, 'uri' | 'root'>, roots: readonly Root[]): string {
  const root = roots[row.root];
  if (!root) return listingName(row.uri);
  const relative = row.uri === root.uri ? '' : relativeTitle(row.uri, root);
  if (roots.length === 1) return listingName(relative === '' ? root.name : relative);
  const label = labelsOf(roots)[row.root]!;
  return listingName(relative === '' ? label : `${label}/${relative}`);
}

/** A relative path that names entries in more than one root: the caller must say which. */
export class AmbiguousPath extends ToolFailure {
  constructor(text: string, readonly candidates: string[]) {
    super(`Ambiguous path ${listingName(text)}: it names ${candidates.length} entries, in different served folders: ${candidates.join(', ')}. Pass one of these, or a file: URI.`);
  }
}

/**
 * The indexed entry a URI, absolute path or relative path names; undefined
 * when none. A relative path is tried under every root, and under the root
 * whose label it starts with (`b/proj/src/a.ts`); naming entries in two roots
 * it throws AmbiguousPath, listing them.
 */
export async function resolveTarget(ctx: ServerContext, text: string): Promise<EntryRow | undefined> {
  await ctx.index.ready;
  const lookup = (uri: string) =>
    lookupEntry(uri, { store: ctx.index.store, roots: ctx.roots, followSymlinks: ctx.followSymlinks });
  if (isUriText(text)) return lookup(text);
  if (text.startsWith('/')) return lookup(pathToUri(posix.normalize(text), text.endsWith('/')));
  const rel = text.replace(/^\.\/+/, '');
  const found = new Map<string, EntryRow>();
  const labels = ctx.roots.length > 1 ? labelsOf(ctx.roots) : [];
  for (const [i, root] of ctx.roots.entries()) {
    const candidates = [rel === '.' ? '' : rel];
    const label = labels[i];
    if (label !== undefined && (rel === label || rel.startsWith(`${label}/`))) candidates.push(rel.slice(label.length + 1));
    for (const candidate of candidates) {
      const entry = await lookup(root.uri + encodeRelative(candidate));
      if (entry) found.set(entry.uri, entry);
    }
  }
  if (found.size > 1) throw new AmbiguousPath(text, [...found.values()].map((row) => displayPath(row, ctx.roots)));
  return found.values().next().value;
}
