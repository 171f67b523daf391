// Where the index file may live. Security: it holds the text of every served
// file and the cursor key, so it never lands inside a served folder (where it
// would be listed and served), judged by real paths, not path text; and in
// the shared temp directory only inside a private directory of ours.
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { isPathInside } from '../uri.ts';
import { toSlashPath } from '../fs-path.ts';

type Realpath = (path: string) => string;

/**
 * The real path `path` has, or would have once created: the realpath of its
 * nearest existing ancestor, with the rest appended. So a `--db` spelled
 * through a symlinked folder is judged where it really lands.
 */
export function realPathOf(path: string, realpath: Realpath = realpathSync.native): string {
  const rest: string[] = [];
  for (let at = resolve(path); ; ) {
    try {
      return join(realpath(at), ...rest.reverse());
    } catch {
      const parent = dirname(at);
      if (parent === at) return resolve(path);
      rest.push(basename(at));
      at = parent;
    }
  }
}

/** A folder's identity on disk (device and inode, as text), or null where it cannot be looked at. */
type Identity = (path: string) => string | null;

function diskIdentity(path: string): string | null {
  try {
    const stats = statSync(path, { bigint: true });
    // Some file systems (network drives, ReFS on Windows) give no inode number: no identity, rather than one for all.
    return stats.ino === 0n ? null : `${stats.dev}:${stats.ino}`;
  } catch {
    return null;
  }
}

/**
 * Whether an index at `dbFile` (and its -wal and -shm beside it) would be
 * inside a served root: by real path, and by the identity of each folder
 * above it, for another path to a root that its text does not show (a bind
 * mount of it: the index was listed, served and rewritten by its own
 * watcher's events, 7.7 MiB in 10 s of an idle server, a red-team finding).
 */
export function isInsideRoots(dbFile: string, rootRealPaths: readonly string[], realpath: Realpath = realpathSync.native, identity: Identity = diskIdentity): boolean {
  if (dbFile === ':memory:') return false;
  const realNative = realPathOf(dbFile, realpath);
  const real = toSlashPath(realNative);
  if (rootRealPaths.some((root) => isPathInside(root, real) || real === root)) return true;
  const roots = new Set(rootRealPaths.map(identity).filter((id) => id !== null));
  for (let at = dirname(realNative); ; at = dirname(at)) {
    const id = identity(at);
    if (id !== null && roots.has(id)) return true;
    if (dirname(at) === at) return false;
  }
}

/**
 * `<tmp>/folder-mcp-<uid>`: created readable by us only; refused (null) when
 * it exists and is a link, not a directory, someone else's, or open to others
 * (in a shared /tmp anyone may have made it first).
 */
export function privateTempDir(base: string = tmpdir()): string | null {
  const uid = process.getuid?.() ?? 'user';
  const dir = join(base, `folder-mcp-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return null;
  }
  const stats = lstatSync(dir);
  if (!stats.isDirectory() || (process.getuid && stats.uid !== process.getuid()) || (stats.mode & 0o077) !== 0) return null;
  return dir;
}

/**
 * The user's cache folder, as each platform has it: `$XDG_CACHE_HOME` wherever
 * it is set to an absolute path (the XDG spec has a relative one ignored: a
 * literal `~/.cache` from a JSON config made `./~/.cache` in the working
 * folder), else `%LOCALAPPDATA%` on Windows (what is cached stays on this
 * machine, out of a roaming profile), `~/Library/Caches` on macOS, `~/.cache`
 * elsewhere.
 */
export function userCacheDir(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string {
  if (env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME)) return env.XDG_CACHE_HOME;
  if (platform === 'win32') return env.LOCALAPPDATA || join(homedir(), 'AppData', 'Local');
  if (platform === 'darwin') return join(homedir(), 'Library', 'Caches');
  return join(homedir(), '.cache');
}

/**
 * Where the index lives by default: one file per set of roots and the options
 * that change what is indexed, in the user's cache dir. Never inside a served
 * root (the server never writes there; judged by real paths): if the cache dir
 * is inside one (serving the home folder), a private directory of ours in the
 * system temp dir is used, and if that cannot be had, the index stays in memory.
 */
export function defaultDbPath(
  rootPaths: readonly string[],
  config: { exclude: readonly string[]; gitignore: boolean },
  env: NodeJS.ProcessEnv = process.env,
  tempDir: () => string | null = privateTempDir,
  platform: NodeJS.Platform = process.platform,
): string {
  const key = createHash('sha256')
    .update(JSON.stringify({ roots: rootPaths, exclude: config.exclude, gitignore: config.gitignore }))
    .digest('hex')
    .slice(0, 16);
  const cache = join(userCacheDir(env, platform), 'folder-mcp', `${key}.db`);
  if (!isInsideRoots(cache, rootPaths)) return cache;
  const temp = tempDir();
  if (temp !== null && !isInsideRoots(join(temp, `${key}.db`), rootPaths)) return join(temp, `${key}.db`);
  return ':memory:';
}

/**
 * Where folder-mcp keeps index files by default: the user's cache folder's
 * `folder-mcp/`, and the private temp folder used when that is served.
 */
export function indexFolders(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform, base: string = tmpdir()): string[] {
  return [join(userCacheDir(env, platform), 'folder-mcp'), join(base, `folder-mcp-${process.getuid?.() ?? 'user'}`)];
}

/**
 * Patterns for `--exclude` (relative to each root, anchored) that leave out
 * every index folder inside a served root. Serving the home folder served
 * `~/.cache/folder-mcp/`, whose index files of other sets of folders (their
 * full text included) were listed and read (a red-team finding, made common
 * by the client's roots). The current index is never inside a root (see
 * defaultDbPath); the others are now never served.
 */
export function indexFolderExcludes(rootRealPaths: readonly string[], folders: readonly string[], realpath: Realpath = realpathSync.native): string[] {
  const patterns = new Set<string>();
  for (const folder of folders) {
    const real = toSlashPath(realPathOf(folder, realpath));
    for (const root of rootRealPaths) {
      if (real === root || !isPathInside(root, real)) continue;
      // Anchored to the root, as a folder; a gitignore pattern's special characters escaped.
      const relative = real.slice(root.length).replace(/^\/+/, '');
      patterns.add(`/${relative.replace(/[\\*?[\]!#]/g, (c) => `\\${c}`).replace(/ $/, '\\ ')}/`);
    }
  }
  return [...patterns];
}
