import { readdirSync, readFileSync, statSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isNoEntry } from './errno.ts';

/** The scripts a worker thread or child process runs: scripts/build.mjs's entry points besides the server's. */
export type BuiltScript = 'worker' | 'search-worker' | 'scan-worker' | 'scan-watch';

/** dist/ lacks a worker script, or holds one built before a source it bundles last changed. */
export class StaleBuildError extends Error {
  override name = 'StaleBuildError';
}

/**
 * The URL of a built worker script, dist/<name>.js, beside the bundle this
 * code runs in (scripts/build.mjs writes every entry point at the top of
 * dist/). Running the TypeScript sources (tests, benchmarks under tsx), a
 * worker cannot load .ts files, so it runs the one in the checkout's dist/;
 * when that one is missing or older than a source it was built from, this
 * throws a StaleBuildError (`npm run build` fixes it) rather than let the
 * work run on the main thread or in code that is not the code under test.
 */
export function builtScriptUrl(name: BuiltScript): URL {
  if (!import.meta.url.endsWith('.ts')) return new URL(`./${name}.js`, import.meta.url);
  let url = checked.get(name);
  if (url === undefined) {
    url = freshBuiltScript(name, new URL('../', import.meta.url));
    checked.set(name, url);
  }
  return url;
}

/**
 * Checked once a process: a test file starts many servers. Only when running
 * the TypeScript sources (tests, benchmarks); the bundle never reads it. A
 * memo, not state: the answer is the same URL for every caller, and a
 * rebuild while the process runs is not looked for again on purpose.
 */
const checked = new Map<BuiltScript, URL>();

/**
 * `root`/dist/<name>.js, if it is there and no source it was built from is
 * newer. The sources are the ones its source map names (esbuild writes
 * them, node_modules included); a build without maps is checked against
 * every file under `root`/src/.
 */
export function freshBuiltScript(name: BuiltScript, root: URL): URL {
  const built = new URL(`dist/${name}.js`, root);
  const builtAt = mtimeOrNull(built);
  if (builtAt === null) throw new StaleBuildError(`dist/${name}.js is missing in ${fileURLToPath(root)}: run npm run build (workers run the built scripts)`);
  const ours = new URL('src/', root).href;
  for (const source of sourcesOf(built, root)) {
    const at = mtimeOrNull(source);
    // A package's map may name sources it does not ship; one of ours gone means the bundle holds deleted code.
    if (at === null ? !source.href.startsWith(ours) : at <= builtAt) continue;
    const path = fileURLToPath(source).slice(fileURLToPath(root).length);
    const why = at === null ? `was built from ${path}, which is gone` : `is older than ${path}`;
    throw new StaleBuildError(`dist/${name}.js ${why}: run npm run build (workers run the built scripts)`);
  }
  return built;
}

function sourcesOf(built: URL, root: URL): URL[] {
  const map = new URL(`${built.href}.map`);
  let text: string;
  try {
    text = readFileSync(map, 'utf8');
  } catch (error) {
    if (isNoEntry(error)) return filesUnder(new URL('src/', root));
    throw error;
  }
  const { sources } = JSON.parse(text) as { sources?: unknown };
  if (!Array.isArray(sources)) return filesUnder(new URL('src/', root));
  return sources.filter((s): s is string => typeof s === 'string').map((s) => new URL(s, map));
}

function filesUnder(dir: URL): URL[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { recursive: true, withFileTypes: true });
  } catch (error) {
    if (isNoEntry(error)) return [];
    throw error;
  }
  return entries.filter((entry) => entry.isFile()).map((entry) => pathToFileURL(join(entry.parentPath, entry.name)));
}

function mtimeOrNull(url: URL): number | null {
  try {
    return statSync(url).mtimeMs;
  } catch (error) {
    if (isNoEntry(error)) return null;
    throw error;
  }
}
