// Slash paths: the one spelling of a platform path inside folder-mcp.
//
// Every path the index, the watchers, the content layer and the write tools
// hold is absolute, normalised and written with '/': on POSIX the path
// itself (`/home/me/proj`), on Windows the path with its separators turned
// (`C:/Users/me/proj`, the share `//server/share/x`). Node's fs accepts both
// spellings on Windows (and prefixes `\\?\` past MAX_PATH itself), so one
// string serves the system calls, the string compares of containment and the
// canonical URI alike, and the code that joins a folder and a name is the
// same on every platform. Platform paths come in at a few edges only (the
// command line, realpath, a watcher's file names, a tool's argument): each
// goes through toSlashPath there.
//
// Pure. The platform is a parameter (default: this process's), so the tests
// run the Windows rules on Linux and the POSIX rules on Windows.

/** Which rules a path follows: POSIX (Linux, macOS) or Windows. */
export type Flavour = 'posix' | 'win32';

/** This process's flavour. */
export const HOST_FLAVOUR: Flavour = process.platform === 'win32' ? 'win32' : 'posix';

/**
 * Whether `platform`'s volumes ignore case and Unicode normalization by
 * default (NTFS on Windows, APFS on macOS): there two spellings of a name may
 * be one file, so lookups, locks and the write checks fold names (foldName).
 */
export function foldsNames(platform: NodeJS.Platform = process.platform): boolean {
  return platform === 'win32' || platform === 'darwin';
}

/** The flavour a normalised absolute slash path is written in: only Windows writes `C:/` or `//server/share`. */
export function flavourOf(path: string): Flavour {
  return path.startsWith('//') || DRIVE.test(path) ? 'win32' : 'posix';
}

const DRIVE = /^[A-Za-z]:/;
const DRIVE_ROOT = /^[A-Za-z]:\//;
/** A repeated '/', a '.' or '..' segment, or a trailing '/' (past the first character). */
const NOT_NORMAL = /\/\/|\/\.\.?(?:\/|$)|.\/$/;

/**
 * Length of the file-system root at the start of a slash path: 1 for `/x`,
 * 3 for `C:/x`, and for a share `//server/share/x` up to and with the slash
 * after the share's name. 0 when the path is not absolute in either flavour.
 * The root of a normalised path is the only part that may end in '/'.
 */
export function rootLength(path: string): number {
  if (path.startsWith('//')) {
    const server = path.indexOf('/', 2);
    if (server <= 2) return 0;
    const share = path.indexOf('/', server + 1);
    const end = share === -1 ? path.length : share;
    // No share, or a server or share named '.' or '..' (the device namespace `\\.\`, a climb): not a share.
    const names = [path.slice(2, server), path.slice(server + 1, end)];
    if (names.some((name) => name === '' || name === '.' || name === '..' || name === '?')) return 0;
    return share === -1 ? path.length : share + 1;
  }
  if (path.startsWith('/')) return 1;
  return DRIVE_ROOT.test(path) ? 3 : 0;
}

/** Is `path` absolute in `flavour`? POSIX: starts with '/'. Windows: a drive (`C:/`) or a share (`//server/share`). */
export function isAbsoluteSlashPath(path: string, flavour: Flavour = HOST_FLAVOUR): boolean {
  if (flavour === 'posix') return path.startsWith('/');
  return DRIVE_ROOT.test(path) || (path.startsWith('//') && rootLength(path) > 0);
}

/**
 * A platform path in slash form, lexically normalised: Windows separators
 * turned to '/', the `\\?\` and `\\?\UNC\` prefixes dropped, the drive letter
 * upper case; '.' and '..' resolved (clamped at the root), repeated
 * separators collapsed, no trailing '/' but at a root. Relative paths stay
 * relative (normalised). POSIX paths are only normalised.
 */
export function toSlashPath(path: string, flavour: Flavour = HOST_FLAVOUR): string {
  let p = path;
  if (flavour === 'win32') {
    p = p.replaceAll('\\', '/');
    if (/^\/\/[?.]\/UNC\//i.test(p)) p = '//' + p.slice('//?/UNC/'.length);
    else if (/^\/\/[?.]\/[A-Za-z]:/.test(p)) p = p.slice('//?/'.length);
    if (DRIVE.test(p)) p = p[0]!.toUpperCase() + p.slice(1);
  }
  return normalizeSlashPath(p, flavour);
}

/**
 * Lexical normalisation of a slash path (see toSlashPath). A Windows share
 * keeps its leading '//'; on POSIX a leading '//' is one '/', as Node's
 * path.posix.normalize has it.
 */
export function normalizeSlashPath(path: string, flavour: Flavour = HOST_FLAVOUR): string {
  // Most paths are normal already (realpath's, readdir's): no walk over their segments.
  if (path.startsWith('/') && !path.startsWith('//') && !NOT_NORMAL.test(path)) return path;
  let head: string;
  let rest: string;
  if (flavour === 'win32' && DRIVE.test(path)) {
    // 'C:x' (relative to the drive's current folder) has no meaning for a server: it stays as written, and is not absolute.
    if (path[2] !== '/') return path;
    head = path.slice(0, 3);
    rest = path.slice(3);
  } else if (flavour === 'win32' && path.startsWith('//')) {
    const parts = path.slice(2).split('/');
    const server = parts.shift() ?? '';
    const share = parts.shift() ?? '';
    // Not a share (no share name; '.', '..' or '?' for a name: a device path or a climb): left alone, not absolute.
    if ([server, share].some((name) => name === '' || name === '.' || name === '..' || name === '?')) return path;
    head = `//${server}/${share}/`;
    rest = parts.join('/');
  } else if (path.startsWith('/')) {
    head = '/';
    rest = path;
  } else {
    head = '';
    rest = path;
  }
  const out: string[] = [];
  for (const segment of rest.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (head === '') out.push('..'); // a relative path keeps the '..' it cannot resolve
      continue;
    }
    out.push(segment);
  }
  const joined = head + out.join('/');
  return joined === '' ? '.' : joined;
}

/**
 * `text` as a volume that ignores case compares it: composed (NFC), each
 * UTF-16 unit upper-cased where that keeps it one unit, as NTFS's upcase
 * table does (never `ß` -> `SS`), so a folded path keeps its length and a
 * prefix of it stays a prefix of the path.
 */
export function foldName(text: string): string {
  return text.normalize('NFC').replace(/[a-z\u00b5-\uffff]/g, (unit) => {
    const upper = unit.toUpperCase();
    return upper.length === 1 ? upper : unit;
  });
}

/** Is `path` (a normalised slash path) the root of its file system: `/`, `C:/`, `//server/share/`? */
export function isFileSystemRoot(path: string): boolean {
  return path.endsWith('/');
}

/** `dir` with the separator its children follow: `/r/` for `/r`, `C:/` for `C:/`. */
export function childPrefix(dir: string): string {
  return dir.endsWith('/') ? dir : `${dir}/`;
}

/** `name` (one segment, as readdir returns it) inside `dir`. */
export function join(dir: string, ...names: string[]): string {
  let out = dir;
  for (const name of names) {
    if (name === '') continue;
    out = childPrefix(out) + name;
  }
  // Names from readdir and watchers are single segments; anything else ('a/../b', './x') is normalised.
  return /(?:^|\/)\.\.?(?:\/|$)|\/\//.test(out.slice(rootLength(out))) ? normalizeSlashPath(out, flavourOf(out)) : out;
}

/** The folder `path` is in; a file-system root is its own. */
export function dirname(path: string): string {
  const root = rootLength(path);
  const slash = path.lastIndexOf('/');
  if (slash < root) return root > 0 ? path.slice(0, root) : '.';
  return path.slice(0, slash);
}

/** The last segment of `path`; a file-system root's is '' (`/`) or the drive (`C:`) or the share's name. */
export function basename(path: string): string {
  if (isFileSystemRoot(path)) {
    if (path === '/') return '';
    if (DRIVE.test(path)) return path.slice(0, 2);
    return path.slice(0, -1).split('/').at(-1) ?? '';
  }
  return path.slice(path.lastIndexOf('/') + 1);
}

/** `path` relative to `dir` that contains it ('' for `dir` itself), in '/' form. The caller knows `path` is inside. */
export function below(dir: string, path: string): string {
  return path === dir ? '' : path.slice(childPrefix(dir).length);
}

/** The directories of `dirs` that are not inside another one of them. */
export function outermostDirs(dirs: Iterable<string>): string[] {
  const all = new Set(dirs);
  return [...all].filter((dir) => {
    for (let prev = dir, up = dirname(dir); up !== prev; prev = up, up = dirname(up)) if (all.has(up)) return false;
    return true;
  });
}
