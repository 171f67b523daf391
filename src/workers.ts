import { existsSync } from 'node:fs';

/** The scripts a worker thread or child process runs: scripts/build.mjs's entry points besides the server's. */
export type BuiltScript = 'worker' | 'search-worker' | 'scan-worker';

/**
 * The URL of a built worker script, dist/<name>.js, beside the bundle this
 * code runs in (scripts/build.mjs writes every entry point at the top of
 * dist/). Running the TypeScript sources (tests, benchmarks under tsx), a
 * worker cannot load .ts files, so the built one is used when there is one
 * (`npm test` and `npm run bench` build first); undefined otherwise, and the
 * caller does the work on its own thread (the scan, a search bounded between
 * statements only, a conversion under a timer).
 */
export function builtScriptUrl(name: BuiltScript): URL | undefined {
  if (!import.meta.url.endsWith('.ts')) return new URL(`./${name}.js`, import.meta.url);
  const built = new URL(`../dist/${name}.js`, import.meta.url);
  return existsSync(built) ? built : undefined;
}
