// Path <-> URI, canonicalisation and containment. Pure, except resolveUri, whose
// file system is injected. Everything the server serves is named by the
// canonical URI built here, and every client URI is checked here before any
// other module touches the disk.
import { realpath as fsRealpath, stat as fsStat } from 'node:fs/promises';
import {
  basename,
  childPrefix,
  flavourOf,
  foldName,
  foldsNames,
  HOST_FLAVOUR,
  isAbsoluteSlashPath,
  normalizeSlashPath,
  rootLength,
  toSlashPath,
  type Flavour,
} from './fs-path.ts';

export interface Root {
  /** realpath of the served folder as a slash path (src/fs-path.ts), no trailing separator but at a file-system root */
  path: string;
  /** its collection URI: pathToFileURL(path).href + '/' */
  uri: string;
  /** basename of path (the folder name) */
  name: string;
}

/**
 * Longest URI we accept from a client; longer ones name nothing (not found).
 * Whatever the server lists must be readable by its URI: the longest path
 * Linux can stat is PATH_MAX (4,096 bytes), each byte of it at most three
 * characters once percent-encoded (`%C3`), plus `file://` and a collection's
 * trailing slash.
 */
export const PATH_MAX_BYTES = 4096;
export const MAX_URI_LENGTH = 'file://'.length + 3 * PATH_MAX_BYTES + 1;


// The canonical spelling must not drift with the Node version (URIs are primary
// keys of a persisted index, and their order is the listing order), and the
// set pathToFileURL encodes is Node's choice, with no stability promise. So the
// set is written out here: what pathToFileURL encodes on Node 20.20 (the test
// checks they agree): C0 controls, space, DEL, these ASCII chars, and all
// non-ASCII as UTF-8 with uppercase hex. One deliberate difference: Node drops
// a trailing C0 control ('/r/a\x01' -> 'file:///r/a'), which would give two
// files one URI; we encode it.
const PATH_ENCODE_ASCII = new Set(' "#%<>?[\\]^`{|}~');

// Any character that percentEncodePath would change: C0 controls, space, DEL,
// the set above, and everything non-ASCII. Most paths have none, and skipping
// the per-character rebuild for them halves the garbage of a cold scan.
const NEEDS_ENCODING = /[\x00-\x20"#%<>?[\\\]^`{|}~\x7f-\uffff]/;

function percentEncodePath(path: string): string {
  if (!NEEDS_ENCODING.test(path)) return path;
  let out = '';
  for (const char of path) {
    // for..of walks code points: a surrogate pair is one char, never split.
    const code = char.codePointAt(0)!;
    if (code < 0x20 || code === 0x7f || PATH_ENCODE_ASCII.has(char)) out += hexByte(code);
    else if (code < 0x80) out += char;
    // TextEncoder writes a lone surrogate as U+FFFD (EF BF BD), as pathToFileURL does.
    else out += utf8Escapes(char);
  }
  return out;
}

function hexByte(byte: number): string {
  return '%' + byte.toString(16).toUpperCase().padStart(2, '0');
}

const utf8 = new TextEncoder();

function utf8Escapes(char: string): string {
  let out = '';
  for (const byte of utf8.encode(char)) out += hexByte(byte);
  return out;
}

/**
 * Canonical URI of an absolute slash path (src/fs-path.ts): pathToFileURL(path).href, plus a trailing '/' for
 * directories. ASCII only (non-ASCII percent-encoded, uppercase hex). `/r/a` is `file:///r/a`; on Windows
 * `C:/r/a` is `file:///C:/r/a` and the share `//server/share/a` is `file://server/share/a`.
 */
export function pathToUri(absPath: string, isDirectory: boolean, flavour: Flavour = HOST_FLAVOUR): string {
  // pathToFileURL would resolve a relative path against process.cwd(): a hidden
  // input that would make the URI depend on where the server was started.
  if (!isAbsoluteSlashPath(absPath, flavour)) throw new TypeError(`pathToUri needs an absolute path: ${absPath}`);
  const path = normalizeSlashPath(absPath, flavour);
  // A share's '//server' is the URI's authority; a drive path gets the empty authority's '//' and its own '/'.
  const href = (path.startsWith('//') ? 'file:' : path.startsWith('/') ? 'file://' : 'file:///') + percentEncodePath(path);
  if (!isDirectory || href.endsWith('/')) return href; // a file-system root ('file:///', 'file:///C:/') has its '/'
  return href + '/';
}

/**
 * The URI of `name` inside the collection `parentUri`: the same string as
 * pathToUri(join(parentPath, name)), built without re-normalising and
 * re-encoding the whole path (the scan calls this once per entry). `name` is
 * one path segment, as readdir returns it.
 */
export function childUri(parentUri: string, name: string, isDirectory: boolean): string {
  const uri = parentUri + percentEncodePath(name);
  return isDirectory ? `${uri}/` : uri;
}

/** Inverse for canonical URIs from our own index: the slash path (trailing '/' dropped but at a file-system root). */
export function uriToPath(uri: string, flavour: Flavour = HOST_FLAVOUR): string {
  if (!uri.startsWith('file://')) throw new TypeError(`not a file: URI: ${uri}`);
  let path = decodeURIComponent(uri.slice('file://'.length));
  if (flavour === 'win32') {
    if (/^\/[A-Za-z]:\//.test(path)) path = path.slice(1);
    else if (!path.startsWith('/')) path = '//' + path; // file://server/share/x
  }
  return normalizeSlashPath(path, flavour);
}

/**
 * Pure, lexical: is `candidate` (an absolute, normalised slash path) equal to root or inside it? Must not admit
 * sibling prefixes (/srv/app vs /srv/app-secrets). Handles file-system roots (`/`, `C:/`) too. `foldCase`
 * compares without regard to case, as a Windows volume looks names up: only for a first look at a client's
 * spelling, before realpath gives the spelling on disk, which is then compared exactly.
 */
export function isPathInside(rootPath: string, candidate: string, foldCase = false): boolean {
  // Security: fail closed on anything that is not an absolute, normalised path;
  // a stray '..' segment or NUL here would make a string comparison lie.
  const rootTrimmed = trimTrailingSlashes(rootPath);
  const candTrimmed = trimTrailingSlashes(candidate);
  if (!isNormalisedAbsolute(rootTrimmed) || !isNormalisedAbsolute(candTrimmed)) return false;
  const root = foldCase ? foldName(rootTrimmed) : rootTrimmed;
  const cand = foldCase ? foldName(candTrimmed) : candTrimmed;
  if (cand === root) return true;
  // Security: compare against root + '/', never root alone, or '/srv/app'
  // would admit '/srv/app-secrets'. A file-system root already ends in '/'.
  return cand.startsWith(childPrefix(root));
}

/** `/a/b/` as `/a/b`; a file-system root (`/`, `C:/`, `//server/share/`) keeps its '/'. */
function trimTrailingSlashes(p: string): string {
  const root = rootLength(p);
  let end = p.length;
  while (end > root && p[end - 1] === '/') end--;
  return p.slice(0, end);
}

function isNormalisedAbsolute(p: string): boolean {
  const flavour = flavourOf(p);
  // Security: on Windows '\\' is a separator too: a slash path holding one would name another place than it reads.
  if (flavour === 'win32' && p.includes('\\')) return false;
  return rootLength(p) > 0 && !p.includes('\0') && normalizeSlashPath(p, flavour) === p;
}

/** The root containing absPath (lexically), or undefined. With nested roots, the deepest. `foldCase`: see isPathInside. */
export function findRoot(roots: readonly Root[], absPath: string, foldCase = false): Root | undefined {
  let best: Root | undefined;
  for (const root of roots) {
    if (!isPathInside(root.path, absPath, foldCase)) continue;
    if (best === undefined || root.path.length > best.path.length) best = root;
  }
  return best;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// Security: an encoded '/' would be a separator only after decoding, so it could
// smuggle a '..' past a check done on segments; NUL truncates paths in C APIs.
// Neither can name a file we serve. An encoded '\\' (%5C) is allowed on POSIX,
// where it is an ordinary character (the canonical URI of such a file uses it);
// on Windows it is a separator, as smuggling as '/'.
const FORBIDDEN_ESCAPE = /%(?:2f|00)/i;
const FORBIDDEN_ESCAPE_WIN32 = /%(?:2f|00|5c)/i;
const BAD_ESCAPE = /%(?![0-9a-fA-F]{2})/;
const DRIVE_LETTER = /^\/[A-Za-z][:|](?:\/|$)/;

/**
 * Windows names that a path must not hold: a ':' past the drive is an
 * alternate data stream (`a.txt:secret`); a trailing '.' or ' ' is dropped by
 * the Win32 layer, so `a.txt.` would reach `a.txt` by another spelling; the
 * device names (`CON`, `NUL`, `COM1.txt`...) name no file; and `<>"|?*` and
 * controls are never in a name. Such a segment names nothing we serve.
 */
export function isForbiddenWin32Segment(segment: string): boolean {
  if (segment === '' || segment === '.' || segment === '..') return false;
  if (/[\x00-\x1f<>:"|?*]/.test(segment)) return true;
  if (/[. ]$/.test(segment)) return true;
  // The device is named by what comes before the first '.', trailing spaces aside: `NUL.tar.gz` and `nul .txt` too.
  return WIN32_DEVICE.test(segment.split('.')[0]!.trimEnd());
}

const WIN32_DEVICE = /^(?:CON|PRN|AUX|NUL|COM[0-9\u00B9\u00B2\u00B3]|LPT[0-9\u00B9\u00B2\u00B3]|CONIN\$|CONOUT\$)$/i;

/**
 * Pure parse of a client-supplied URI. Returns null when it cannot name anything we serve:
 * not a string, longer than MAX_URI_LENGTH, scheme other than file: (case-insensitive scheme ok),
 * a host other than '' or 'localhost' (on Windows a host is a share: `file://server/share/x`), a query or
 * fragment, an encoded slash (%2F; %5C on Windows), a NUL (raw or %00), invalid percent-encoding, or not
 * absolute. Otherwise decodes percent-encoding (so `file:///r/caf%C3%A9`, `file:///r/caf%c3%a9` and
 * `file:///r/café` give the same path), resolves `.`/`..` segments (also `%2e%2e`) lexically, clamped at the
 * file-system root, and returns the absolute slash path and whether the URI ended in '/'.
 *
 * On Windows (`flavour`): `file:///C:/x`, `file:///c:/x` and `file:///C|/x` name `C:/x` (the drive letter
 * upper case); a segment isForbiddenWin32Segment refuses names nothing. On POSIX a drive letter names nothing.
 *
 * `trailingSlash` is also true when the last segment is `.` or `..` (`dir/.` names a directory, as in posix).
 * The returned path never ends in '/' except at a file-system root.
 */
export function parseFileUri(input: unknown, flavour: Flavour = HOST_FLAVOUR): { path: string; trailingSlash: boolean } | null {
  if (typeof input !== 'string' || input.length > MAX_URI_LENGTH) return null;
  // Hand-parsed rather than via WHATWG `new URL`: that parser silently drops
  // tabs and newlines, trims spaces, turns '\\' into '/' and resolves dot
  // segments before we can see them, so two different strings would name one
  // file without us noticing.
  const scheme = /^file:/i.exec(input);
  if (scheme === null) return null;
  let rest = input.slice(scheme[0].length);
  let share = '';
  let localhost = false;
  if (rest.startsWith('//')) {
    const slash = rest.indexOf('/', 2);
    const authority = slash === -1 ? rest.slice(2) : rest.slice(2, slash);
    rest = slash === -1 ? '' : rest.slice(slash);
    // Security: a host means another machine. On POSIX we serve only this one; on Windows a host is a share
    // (`\\server\share`), which is served when a root is on it. Hosts are case-insensitive: 'LOCALHOST' is local.
    if (authority !== '' && authority.toLowerCase() !== 'localhost') {
      if (flavour !== 'win32' || !/^[A-Za-z0-9._-]+$/.test(authority)) return null;
      share = `//${authority}`;
    } else localhost = authority !== '';
  }
  // RFC 8089 also allows `file:/path` (no authority); `file:path` is relative.
  if (!rest.startsWith('/')) return null;
  // Our canonical URIs never carry a query or fragment ('?' and '#' in names are
  // encoded), so one here cannot name a file we serve.
  if (rest.includes('?') || rest.includes('#')) return null;
  if (rest.includes('\0') || rest.includes('\\')) return null;
  if ((flavour === 'win32' ? FORBIDDEN_ESCAPE_WIN32 : FORBIDDEN_ESCAPE).test(rest) || BAD_ESCAPE.test(rest)) return null;
  if (LONE_SURROGATE.test(rest)) return null;
  let decoded: string;
  try {
    // Decodes each %XX exactly once; throws on invalid UTF-8 (overlong forms,
    // encoded surrogates, truncated sequences). Raw non-ASCII passes through.
    decoded = decodeURIComponent(rest);
  } catch {
    return null; // URIError: invalid percent-encoding, by definition names nothing
  }
  const segments = decoded.split('/');
  const last = segments[segments.length - 1];
  const trailingSlash = last === '' || last === '.' || last === '..';
  if (flavour === 'posix') {
    if (DRIVE_LETTER.test(decoded)) return null; // a Windows path: names nothing here
    // Security: dot segments are resolved after decoding, so '%2e%2e' counts as '..', clamped at '/'.
    return { path: normalizeSlashPath(decoded, 'posix'), trailingSlash };
  }
  // `file://localhost/share/x`, with no drive: the share \\localhost\share (which is how its own URIs read).
  if (localhost && !DRIVE_LETTER.test(decoded)) share = '//localhost';
  let path: string;
  if (share !== '') path = share + decoded;
  else if (DRIVE_LETTER.test(decoded)) path = decoded[1]!.toUpperCase() + ':/' + decoded.slice(4);
  else return null; // `file:///x`: no drive, no share, so no absolute Windows path
  // The drive's ':' (or a share's name) is past: any other ':' is a stream, and the Win32 rules hold per segment.
  const body = path.slice(share !== '' ? share.length : 3).split('/');
  if (body.some(isForbiddenWin32Segment)) return null;
  // Security: '..' clamps at the drive or the share, never climbing into the server's other shares.
  path = normalizeSlashPath(path, 'win32');
  if (!isAbsoluteSlashPath(path, 'win32')) return null;
  return { path, trailingSlash };
}

function isHex(code: number | undefined): boolean {
  return code !== undefined && ((code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66));
}

/**
 * The ASCII characters a URI path spells percent-encoded (PATH_ENCODE_ASCII) that a client's URI text may
 * hold raw and mean as themselves: all but `?` and `#`, which are URI syntax there (docs/listing.md), and `%`,
 * which is taken as an escape when two hex digits follow it.
 */
const URI_TEXT_ENCODE = new Set([...PATH_ENCODE_ASCII].filter((c) => !'?#%'.includes(c)));

/**
 * Normalises a client-supplied URI *prefix* (prefix / uri_paths / glob literal text) to the spelling of canonical
 * URIs, without requiring it to be a whole URI: percent-encodes every non-ASCII character (UTF-8), every
 * ASCII control or space, the ASCII characters URI paths spell encoded (URI_TEXT_ENCODE: `~`, `^`, `|`, ...),
 * and a `%` that begins no escape, and uppercases the hex of existing %xx escapes. Leaves every other ASCII
 * char as is. It must never split a multi-byte char; a lone surrogate is encoded as U+FFFD. Before, `~` and
 * the rest were left raw, so `prefix: file:///p/dir~/` found nothing in `dir~` (listed as `dir%7E`), and
 * `100%` matched `100%25` only as a text prefix (a red-team finding).
 */
export function canonicalUriText(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const code = text.codePointAt(i)!;
    // A code point above U+FFFF is two UTF-16 units; stepping by code point,
    // not by unit, is what keeps a multi-byte char whole.
    const char = String.fromCodePoint(code);
    if (code === 0x25 && isHex(text.charCodeAt(i + 1)) && isHex(text.charCodeAt(i + 2))) {
      out += text.slice(i, i + 3).toUpperCase();
      i += 3;
      continue;
    }
    if (code <= 0x20 || code === 0x7f || code === 0x25 || URI_TEXT_ENCODE.has(char)) out += hexByte(code);
    else if (code < 0x80) out += char;
    else out += utf8Escapes(char); // a lone surrogate becomes U+FFFD
    i += char.length;
  }
  return out;
}

export interface ResolvedUri {
  uri: string;
  path: string;
  root: Root;
  isDirectory: boolean;
}

export interface ResolveFs {
  realpath(p: string): Promise<string>;
  stat(p: string): Promise<{ isFile(): boolean; isDirectory(): boolean }>;
}

// fs.promises.realpath is realpath(3) (GetFinalPathNameByHandle on Windows): the spelling on disk, long names
// for 8.3 ones, and on Windows backslashes, which the slash path turns.
const defaultFs: ResolveFs = { realpath: async (p) => toSlashPath(await fsRealpath(p)), stat: (p) => fsStat(p) };

// Errors that mean "this path names nothing we can serve". Anything else (EIO,
// EMFILE, ...) is a fault of the server and is thrown, not hidden as not found.
const NOT_FOUND_CODES = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EACCES', 'EPERM', 'ENAMETOOLONG', 'EINVAL']);

async function orNotFound<T>(op: Promise<T>): Promise<T | null> {
  try {
    return await op;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException | null)?.code;
    if (code !== undefined && NOT_FOUND_CODES.has(code)) return null;
    throw err;
  }
}

/**
 * Full resolution of a client URI against the served roots, following symlinks:
 * parseFileUri -> lexical containment (findRoot) -> realpath (injected, default fs.promises.realpath)
 * -> containment again on the real path -> stat (injected, default fs.promises.stat) to know file vs directory.
 * Returns null for anything outside every root, missing, unparsable, or neither a regular file nor a directory.
 * Outside and missing are indistinguishable to the caller (never reveal that an outside path exists).
 * The returned uri is pathToUri(realpath, isDirectory).
 *
 * A trailing '/' on a file gives null (as in posix); a directory without one resolves, and its returned
 * uri has the '/'. The check is a snapshot: callers should open the returned real path, not the client's.
 */
export async function resolveUri(
  input: unknown,
  roots: readonly Root[],
  fsImpl: ResolveFs = defaultFs,
  flavour: Flavour = HOST_FLAVOUR,
  /** Whether the volumes ignore case: Windows', and macOS' by default. */
  foldCase: boolean = flavour === 'win32' || (flavour === HOST_FLAVOUR && foldsNames()),
): Promise<ResolvedUri | null> {
  const parsed = parseFileUri(input, flavour);
  if (parsed === null) return null;
  // Security: a path outside every root never reaches the file system, so no
  // errno or timing difference can tell a client whether it exists. Where the
  // volume ignores case (Windows, macOS), this first look does too
  // (`file:///c:/users/...`); the look at the real path below, spelled as on
  // disk, is exact.
  if (findRoot(roots, parsed.path, foldCase) === undefined) return null;
  const real = await orNotFound(fsImpl.realpath(parsed.path));
  if (real === null) return null;
  // Security: a symlink inside a root may point anywhere; only its target
  // counts. Out of every root answers exactly like missing.
  const root = findRoot(roots, real);
  if (root === undefined) return null;
  const stats = await orNotFound(fsImpl.stat(real));
  if (stats === null) return null;
  const isDirectory = stats.isDirectory();
  if (!isDirectory && !stats.isFile()) return null; // sockets, FIFOs, devices: reading one could block or leak
  if (parsed.trailingSlash && !isDirectory) return null;
  return { uri: pathToUri(real, isDirectory, flavour), path: real, root, isDirectory };
}

/** Makes a Root from a folder path the user gave (realpath'd by the caller), in slash or platform form. */
export function makeRoot(realPath: string, flavour: Flavour = HOST_FLAVOUR): Root {
  const path = toSlashPath(realPath, flavour);
  if (!isAbsoluteSlashPath(path, flavour)) throw new TypeError(`makeRoot needs an absolute path: ${realPath}`);
  return { path, uri: pathToUri(path, true, flavour), name: path === '/' ? '/' : basename(path) };
}
