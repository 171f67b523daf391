// How tool and prompt arguments name things: a `file:` URI, an absolute path,
// or a path relative to a served folder. Models write paths; the index speaks
// canonical URIs. Every name still goes through lookupEntry, whose answer is
// index membership, so nothing here can reach outside the roots.
import { posix } from 'node:path';
import type { EntryRow } from '../index/entry.ts';
import { lookupEntry } from '../index/lookup.ts';
import type { ServerContext } from '../protocol/context.ts';
import { canonicalUriText, pathToUri, type Root } from '../uri.ts';

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

/** The indexed entry a URI, absolute path or root-relative path names; undefined when none. */
export async function resolveTarget(ctx: ServerContext, text: string): Promise<EntryRow | undefined> {
  await ctx.index.ready;
  const lookup = (uri: string) =>
    lookupEntry(uri, { store: ctx.index.store, roots: ctx.roots, followSymlinks: ctx.followSymlinks });
  if (isUriText(text)) return lookup(text);
  if (text.startsWith('/')) return lookup(pathToUri(posix.normalize(text), text.endsWith('/')));
  const rel = text.replace(/^\.\/+/, '');
  for (const root of ctx.roots) {
    const found = await lookup(root.uri + encodeRelative(rel === '.' ? '' : rel));
    if (found) return found;
  }
  return undefined;
}
