// How tool and prompt arguments name things: a `file:` URI, an absolute path,
// or a path relative to a served folder. Models write paths; the index speaks
// canonical URIs. Every name still goes through lookupEntry, whose answer is
// index membership, so nothing here can reach outside the roots.
import { basename, below, dirname, foldName, foldsNames, HOST_FLAVOUR, isAbsoluteSlashPath, join, normalizeSlashPath, toSlashPath, type Flavour } from '../fs-path.ts';
import { realOrNull, type Absence } from '../content/file-facts.ts';
import { listingName } from '../content/collection.ts';
import { missingSegments } from '../content/safe-write.ts';
import type { EntryRow } from '../entry.ts';
import { lookupEntry } from '../index/lookup.ts';
import type { ServerContext } from '../protocol/context.ts';
import { relativeTitle } from '../resource.ts';
import { compileGlob } from '../query/glob.ts';
import { canonicalUriText, findRoot, parseFileUri, pathToUri, type Root } from '../uri.ts';
import { ToolFailure } from './tool.ts';

// Two characters at least: a one-letter "scheme" is a Windows drive (`C:\x`, `c:/x`), a path.
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]+:/;

/** Canonical spelling of one path segment (decoded text), as pathToUri writes it. */
export function encodeSegment(segment: string): string {
  // pathToUri normalises, which would eat '.' and '..'; those are ASCII and never encoded.
  if (segment === '' || segment === '.' || segment === '..') return segment;
  return pathToUri(`/${segment}`, false, 'posix').slice('file:///'.length);
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
 * A path argument as a model writes it, in slash form (src/fs-path.ts). On
 * Windows '\' separates as '/' does (no Windows name holds one), and `C:\x`,
 * `c:/x`, `\\server\share\x` and WSL's `/mnt/c/x` are absolute; on POSIX a
 * path is absolute when it starts with '/'. A relative path comes back as
 * written, separators turned. `trailingSlash`: the text ended in a separator.
 */
export function toolPath(text: string, flavour: Flavour = HOST_FLAVOUR): { absolute?: string; relative?: string; trailingSlash: boolean } {
  let t = flavour === 'win32' ? text.replaceAll('\\', '/') : text;
  const trailingSlash = t.endsWith('/');
  if (flavour === 'win32') {
    const wsl = /^\/mnt\/([A-Za-z])(?:\/|$)/.exec(t);
    if (wsl) t = `${wsl[1]!.toUpperCase()}:/${t.slice(wsl[0].length)}`;
    const slash = toSlashPath(t, 'win32');
    if (isAbsoluteSlashPath(slash, 'win32')) return { absolute: slash, trailingSlash };
    // `/x` on Windows names no drive: read as relative to the served folders, as a prefix is.
    return { relative: t, trailingSlash };
  }
  if (t.startsWith('/')) return { absolute: normalizeSlashPath(t, 'posix'), trailingSlash };
  return { relative: t, trailingSlash };
}

/**
 * The URI prefixes a `prefix`-style argument stands for: a URI prefix as it is
 * (canonical spelling), or a relative path under every root; with several
 * roots also as the tools print paths, the root's label first (`notes/to`
 * under the root labelled `notes`; a text the label itself starts with, such
 * as `no`, names that whole root).
 */
export function prefixUris(text: string, roots: readonly Root[], flavour: Flavour = HOST_FLAVOUR): string[] {
  if (isUriText(text)) return [canonicalUriText(text)];
  const given = toolPath(text, flavour);
  // A Windows path (`C:\proj\src`) stands for its URI; on POSIX a leading '/' has always read as relative.
  if (flavour === 'win32' && given.absolute !== undefined) {
    return [canonicalUriText(pathToUri(spelledAsRoot(roots, given.absolute, flavour), given.trailingSlash, flavour))];
  }
  const rel = (given.relative ?? text).replace(/^\.?\/+/, '');
  const uris = roots.map((root) => root.uri + encodeRelative(rel));
  // With one folder, tools print the folder itself by its name (tree's first entry): that name is the whole folder too.
  if (roots.length === 1 && rel !== '' && rel === roots[0]!.name) uris.push(roots[0]!.uri);
  if (roots.length > 1 && rel !== '') {
    labelsOf(roots).forEach((label, i) => {
      const root = roots[i]!;
      if (rel.startsWith(`${label}/`)) uris.push(root.uri + encodeRelative(rel.slice(label.length + 1)));
      else if (label.startsWith(rel)) uris.push(root.uri);
    });
  }
  return [...new Set(uris)];
}

/**
 * The (root, relative glob) pairs a relative glob stands for: the glob under
 * every root, and with several roots also as printed paths are matched: when
 * its first segment (a glob itself, `**` aside) matches a root's label, the
 * rest under that root (`notes/*.md`, `*\/todo.md`).
 */
export function relativeGlobs(glob: string, roots: readonly Root[]): Array<{ root: Root; glob: string }> {
  const rel = glob.replace(/^\.?\/+/, '');
  const out = roots.map((root) => ({ root, glob: rel }));
  const slash = rel.indexOf('/');
  if (roots.length < 2 || slash <= 0) return out;
  const head = rel.slice(0, slash);
  const rest = rel.slice(slash + 1);
  if (head.includes('**') || rest === '') return out;
  let matchesHead: (label: string) => boolean;
  try {
    const compiled = compileGlob(head);
    matchesHead = (label) => compiled.match(label);
  } catch {
    return out; // a head that is no glob alone (a brace or class spanning the '/'): the glob as written only
  }
  labelsOf(roots).forEach((label, i) => {
    if (matchesHead(label)) out.push({ root: roots[i]!, glob: rest });
  });
  return out;
}

/**
 * How each root is named in text for a model, parallel to `rootPaths`: its
 * folder name; where two roots share one, the later ones on the command line
 * get `~2`, `~3`, ... (the first suffix no root's own name and no earlier
 * label uses), so `/w/a/same /w/b/same` are `same` and `same~2`. One path
 * segment each: a printed path's first segment is its root's label. The
 * file-system root is `/`. Pure.
 */
export function rootLabels(rootPaths: readonly string[]): string[] {
  const names = rootPaths.map((path) => path.split('/').filter(Boolean).at(-1) ?? '/');
  const taken = new Set<string>();
  const own = new Set(names);
  return names.map((name) => {
    let label = name;
    for (let k = 2; taken.has(label); k++) {
      label = `${name}~${k}`;
      if (own.has(label)) label = name; // another root is called that: try the next suffix
    }
    taken.add(label);
    return label;
  });
}

const labelCache = new WeakMap<readonly Root[], string[]>();

export function labelsOf(roots: readonly Root[]): string[] {
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
export async function resolveTarget(ctx: ServerContext, text: string, flavour: Flavour = HOST_FLAVOUR): Promise<EntryRow | undefined> {
  const lookup = (uri: string) =>
    lookupEntry(uri, { store: ctx.index.store, roots: ctx.roots, followSymlinks: ctx.followSymlinks });
  if (isUriText(text)) return lookup(text);
  const given = toolPath(text, flavour);
  if (given.absolute !== undefined) return lookup(pathToUri(given.absolute, given.trailingSlash, flavour));
  const rel = given.relative!.replace(/^\.\/+/, '');
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
  // With one folder, tools print the folder itself by its name (tree's first line): that name read back is the
  // folder, unless an entry inside it has that name (then `.` names the folder).
  const only = ctx.roots.length === 1 ? ctx.roots[0]! : undefined;
  if (found.size === 0 && only && rel === displayPath({ uri: only.uri, root: 0 }, ctx.roots)) return lookup(only.uri);
  return found.values().next().value;
}

/**
 * On Windows a path typed with another case of a served folder's own path
 * (`c:\\users\\me\\proj\\x`) is that folder's: the volume ignores case. The
 * part that names the folder is spelled as the folder is; what lies below is
 * left as typed (the disk keeps the spelling of what exists, safe-write checks
 * what it writes). Elsewhere, and outside every root, `path` as it is.
 */
function spelledAsRoot(roots: readonly Root[], path: string, flavour: Flavour): string {
  if (flavour !== 'win32' || findRoot(roots, path) !== undefined) return path;
  const root = findRoot(roots, path, true);
  return root === undefined ? path : root.path + path.slice(root.path.length);
}

/** Whatever stops realpath counts as not there (the write checks again). */
const ANY_FAILURE: Absence = { absent: () => true };

/**
 * Where the volume ignores case (Windows, macOS), `path` with what exists of
 * it spelled as on disk: `src/README.MD` writes the file that is there as
 * `src/readme.md`, and never makes a second name for it. Only a difference of
 * case or Unicode normalization is taken from realpath: a path that reaches
 * elsewhere (through a symlink) stays as typed, and the write refuses it.
 * Looks no higher than the path's served folder.
 */
export function spelledOnDisk(path: string, root: Root, platform: NodeJS.Platform = process.platform): string {
  if (!foldsNames(platform)) return path;
  const rest: string[] = [];
  for (let at = path; at.length >= root.path.length; at = dirname(at)) {
    const real = realOrNull(at, ANY_FAILURE);
    if (real !== null) {
      const spelled = join(real, ...rest.reverse());
      return foldName(spelled) === foldName(path) ? spelled : path;
    }
    if (at === root.path || dirname(at) === at) break;
    rest.push(basename(at));
  }
  return path;
}

/** Where a write tool's path argument points: an absolute path, normalised, that may not exist yet. */
/**
 * A move's destination when it only changes the source's case or
 * normalization (`readme.md` to `README.md`) where names fold (Windows,
 * macOS): there the disk's spelling made `to` the source itself, and the
 * move was refused as going nowhere. The last segment is then taken as
 * typed. Any other `to` is returned as it is.
 */
export function caseRename(from: WritePath, to: WritePath, typed: string, flavour: Flavour = HOST_FLAVOUR, platform: NodeJS.Platform = process.platform): WritePath {
  if (to.path !== from.path || !foldsNames(platform)) return to;
  const name = typedName(typed, flavour);
  const own = basename(from.path);
  if (name === undefined || name === own || foldName(name) !== foldName(own) || !to.shown.endsWith(own)) return to;
  return { path: join(dirname(from.path), name), shown: `${to.shown.slice(0, to.shown.length - own.length)}${name}` };
}

/** The last segment of a path as a tool was given it (a URI's decoded), before the disk's spelling; undefined for none. */
export function typedName(text: string, flavour: Flavour = HOST_FLAVOUR): string | undefined {
  if (isUriText(text)) {
    const parsed = parseFileUri(text, flavour);
    return parsed ? basename(parsed.path) || undefined : undefined;
  }
  const given = toolPath(text, flavour);
  const path = (given.absolute ?? given.relative ?? '').replace(/\/+$/, '');
  return basename(path) || undefined;
}

export interface WritePath {
  path: string;
  /** How tools print it back (`displayPath`'s form, for an entry that may not be indexed). */
  shown: string;
}

/**
 * The path a write tool's argument names, in the same path language as every
 * other tool: a `file:` URI, an absolute path, or a relative path. With one
 * root a relative path is under it. With several, it may start with a root's
 * label (as tools print paths) or be relative to any root. The label's
 * reading wins; otherwise the reading whose folders exist deepest on disk
 * (fewest segments left to create), and a tie is AmbiguousPath. Undefined when it names nothing inside the
 * roots (the caller says "Not found", as for reads). Looks at the disk, never
 * outside the roots; safe-write checks everything again when it writes.
 */
export function resolveWritePath(text: string, roots: readonly Root[], flavour: Flavour = HOST_FLAVOUR): WritePath | undefined {
  const show = (path: string) => {
    const root = findRoot(roots, path);
    if (!root) return listingName(path);
    const rel = below(root.path, path);
    if (roots.length === 1) return listingName(rel === '' ? root.name : rel);
    const label = labelsOf(roots)[roots.indexOf(root)]!;
    return listingName(rel === '' ? label : `${label}/${rel}`);
  };
  const inside = (typed: string) => {
    const path = spelledAsRoot(roots, typed, flavour);
    const root = findRoot(roots, path);
    if (!root) return undefined;
    const spelled = flavour === HOST_FLAVOUR ? spelledOnDisk(path, root) : path;
    return { path: spelled, shown: show(spelled) };
  };
  if (isUriText(text)) {
    const parsed = parseFileUri(text, flavour);
    return parsed ? inside(parsed.path) : undefined;
  }
  if (text.includes('\0')) return undefined;
  const given = toolPath(text, flavour);
  if (given.absolute !== undefined) return inside(given.absolute);
  const rel = given.relative!.replace(/^(\.\/+)+/, '').replace(/\/+$/, '');
  const readings = roots.map((root) => join(root.path, rel));
  let labelled: string | undefined;
  if (roots.length > 1) {
    labelsOf(roots).forEach((label, i) => {
      if (rel === label || rel.startsWith(`${label}/`)) readings.push((labelled = join(roots[i]!.path, rel.slice(label.length + 1))));
    });
  }
  const candidates = [...new Set(readings)].filter((path) => findRoot(roots, path) !== undefined);
  if (candidates.length <= 1) return candidates[0] === undefined ? undefined : inside(candidates[0]);
  // The form tools print: what a client copied from an answer. A red-team pass wrote `notes/todo.md` (the label
  // form: a new file in the notes folder) and replaced code/notes/todo.md instead, which the deeper reading below
  // chose. Its folder missing, the write fails there rather than land in another folder.
  if (labelled !== undefined && candidates.includes(labelled)) return inside(labelled);
  const missing = candidates.map(missingSegments);
  const fewest = Math.min(...missing);
  const best = candidates.filter((_, i) => missing[i] === fewest);
  if (best.length > 1) throw new AmbiguousPath(text, best.map(show));
  return inside(best[0]!);
}
