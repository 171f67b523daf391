#!/usr/bin/env node
// `npm run build`: dist/ as three bundled ES modules, one per entry point.
//   dist/cli.js            the server (the package's bin)
//   dist/worker.js         the conversion process (src/content/isolate.ts starts it)
//   dist/search-worker.js  the search thread (src/catalog/search-thread.ts starts it)
// Why bundle: Node loads an ES module graph file by file, and the server's is
// ~200 files (its own ~80, zod's ~100, the MCP SDK's); one file starts in
// about half the time (see docs/design.md#start-up). The entry points sit side
// by side at the top of dist/ because the bundled code finds the two workers
// beside itself (`new URL('./worker.js', import.meta.url)`).
// Kept out of the bundle, and loaded from node_modules as before: the native
// modules (better-sqlite3, @parcel/watcher), and the converters' libraries
// (pdfjs-dist, mammoth), which load only when a document is converted.
// Type checking is tsc's job (npm run build runs it first); esbuild only strips types.
//   node scripts/build.mjs [--outdir DIR] [--no-sourcemap]
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export const ENTRY_POINTS = {
  cli: 'src/cli.ts',
  worker: 'src/content/worker.ts',
  'search-worker': 'src/catalog/search-worker.ts',
};

export const EXTERNAL = ['better-sqlite3', '@parcel/watcher', 'pdfjs-dist', 'mammoth'];

/** Writes a clean `outdir` (no stale files from an older layout). */
export async function buildDist({ outdir = resolve(ROOT, 'dist'), sourcemap = true } = {}) {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: ENTRY_POINTS,
    outdir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20.19',
    external: EXTERNAL,
    // Bundled CommonJS packages (mime-types, ignore, ...) call require(); an ES module has none of its own.
    banner: { js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);" },
    // As tsc's maps did: file names and positions, not the sources (src/ is not in the package).
    sourcemap: sourcemap ? 'linked' : false,
    sourcesContent: false,
    logLevel: 'warning',
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' }, 'no-sourcemap': { type: 'boolean' } } });
  await buildDist({ ...(values.outdir ? { outdir: resolve(values.outdir) } : {}), sourcemap: !values['no-sourcemap'] });
}
