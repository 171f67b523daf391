#!/usr/bin/env node
// `npm run build`: dist/ as bundled ES modules, one per entry point, plus the bin.
//   dist/cli.js            the package's bin: turns on Node's compile cache, then loads the server
//   dist/folder-mcp.js     the server (src/cli.ts and everything it loads)
//   dist/worker.js         the conversion process (src/content/isolate.ts starts it)
//   dist/search-worker.js  the search thread (src/search/search-thread.ts starts it)
//   dist/scan-worker.js    the scan's walk thread (src/index/scan-thread.ts starts it)
//   dist/scan-watch.js     the scan's watches on that thread (it loads the module src/watch/scan-changes.ts names)
// Why bundle: Node loads an ES module graph file by file, and the server's
// start-up graph was ~200 files (its own ~80, zod's ~100, the MCP SDK's); as
// one file it loads in about half the time (docs/design.md#start-up). The bundles
// sit side by side at the top of dist/ because the bundled code finds the three
// workers beside itself (`new URL('./worker.js', import.meta.url)`).
// Kept out of the bundles, and loaded from node_modules as before: the native
// modules (better-sqlite3), and the converters' libraries
// (pdfjs-dist, mammoth), which load only when a document is converted, and
// the Redis client (ioredis), which loads only with --bus.
// Type checking is tsc's job (npm run build runs it first); esbuild only strips types.
//   node scripts/build.mjs [--outdir DIR] [--no-sourcemap]
import { build } from 'esbuild';
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mimeTypesModule } from './mime-types-table.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export const ENTRY_POINTS = {
  'folder-mcp': 'src/cli.ts',
  worker: 'src/content/worker.ts',
  'search-worker': 'src/search/search-worker.ts',
  'scan-worker': 'src/index/scan-worker.ts',
  'scan-watch': 'src/watch/scan-watch.ts',
};

export const EXTERNAL = ['better-sqlite3', 'pdfjs-dist', 'mammoth', 'ioredis'];
/** The externals no start loads: only a dynamic import() may name them (a static one is hoisted and runs at every start). */
const LOADED_ON_DEMAND = ['pdfjs-dist', 'mammoth', 'ioredis'];

/**
 * Node's own modules that only --http uses, and whose ES import costs every
 * start: from Node 22, importing node:http builds its module facade, which
 * runs each lazy export (its WebSocket and EventSource load undici), and
 * node:http2 loads TLS and more. With both imported, `--version` on Node 24
 * took 131 ms against 98 without, Node 20 165 against 160 (medians of 20
 * alternating runs, farm-bench: docs/design.md, Start-up). The code takes node:http from
 * `process.getBuiltinModule` where it makes a server, and @hono/node-server's
 * import of node:http2 is bundled as scripts/http2-on-demand.mjs.
 */
const ON_DEMAND_BUILTINS = ['node:http', 'node:http2'];

/** @hono/node-server's `import ... from 'node:http2'`, answered by scripts/http2-on-demand.mjs. */
const http2OnDemand = {
  name: 'http2-on-demand',
  setup(build) {
    build.onResolve({ filter: /^node:http2$/ }, () => ({ path: resolve(ROOT, 'scripts/http2-on-demand.mjs') }));
  },
};

/** The SDK's Node shim, with ajv evaluated on first use: scripts/sdk-shims-node.mjs says why. */
const sdkShimsNode = {
  name: 'sdk-shims-node',
  setup(build) {
    build.onResolve({ filter: /^@modelcontextprotocol\/server\/_shims$/ }, () => ({ path: resolve(ROOT, 'scripts/sdk-shims-node.mjs') }));
  },
};

/**
 * zod's `locales` namespace (`z.locales`, `z.core.locales`): its index
 * imports all 63 of zod's locales, which the bundle evaluated at every start
 * (the namespace escapes, so esbuild cannot drop them): 394 KiB of the
 * 2.9 MB server bundle. English is the one zod configures itself and the one
 * anything here uses. Side by side (farm-bench, 20 alternating runs),
 * `--version` took 157 ms against 165 on Node 20, 101 against 107 on Node
 * 24 (medians).
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: resolve(ROOT, 'scripts/zod-locales-en.mjs') } : undefined,
    );
  },
};

/**
 * mime-types, as src/ imports it, is its extension table computed now and
 * mime.lookup over it (scripts/mime-types-table.mjs): mime-types builds that
 * table from all of mime-db at every start, in the server, the scan thread
 * and the conversion process.
 */
const mimeTypesTable = {
  name: 'mime-types-table',
  setup(build) {
    // Named by the script that writes it, so the source maps name a file (src/workers.ts checks a build's age by them).
    const path = resolve(ROOT, 'scripts/mime-types-table.mjs');
    const src = resolve(ROOT, 'src') + sep;
    build.onResolve({ filter: /^mime-types$/ }, (args) => (args.importer.startsWith(src) ? { path } : undefined));
    build.onLoad({ filter: /[\\/]scripts[\\/]mime-types-table\.mjs$/ }, (args) =>
      args.path === path ? { contents: mimeTypesModule(), loader: 'js', resolveDir: ROOT } : undefined,
    );
  },
};

/**
 * Fails the build when a bundle imports an on-demand external or builtin
 * statically (ioredis did: about 300 ms of CPU a start), or bundles zod's
 * other locales again (a zod that imports them another way: zodEnglishOnly),
 * or mime-db (mime-types imported another way: mimeTypesTable), or the SDK's
 * own Node shim with ajv (imported another way: sdkShimsNode); read from
 * esbuild's account of each bundle (its metafile), not from the code. And
 * when a bundle holds a character outside ASCII: V8 keeps a source with one
 * such character as two bytes a character, and Node decodes and hashes all of
 * it at every start (a `\uXXXX` escape says the same in a string or a regex).
 */
function checkBundles(metafile) {
  for (const [file, output] of Object.entries(metafile.outputs)) {
    if (!file.endsWith('.js')) continue;
    // The metafile's paths are relative to absWorkingDir (ROOT), wherever outdir is and however node_modules is reached.
    for (const { path: imported, kind } of output.imports) {
      if (kind === 'dynamic-import') continue;
      const pkg = LOADED_ON_DEMAND.find((p) => imported === p || imported.startsWith(`${p}/`));
      if (pkg) throw new Error(`${file} imports ${imported} statically: load it with import() where it is used`);
      // A require() of a builtin runs where it is called; an import statement, at every start (either spelling).
      if (kind === 'import-statement' && ON_DEMAND_BUILTINS.includes(`node:${imported.replace(/^node:/, '')}`)) {
        throw new Error(`${file} imports ${imported} statically: take it from process.getBuiltinModule where it is used`);
      }
    }
    for (const input of Object.keys(output.inputs)) {
      const locale = /(?:^|\/)node_modules\/zod\/v4\/locales\/(?!en\.js$)(\S+)$/.exec(input)?.[1];
      if (locale) throw new Error(`${file} bundles zod's locale ${locale}: only English is meant to be (zodEnglishOnly)`);
      const sdkShim = /(?:^|\/)node_modules\/@modelcontextprotocol\/server\/dist\/(shimsNode|ajvProvider-\w+)\.mjs$/.exec(input)?.[1];
      if (sdkShim) throw new Error(`${file} bundles the SDK's ${sdkShim}.mjs, evaluated at every start: its shim is meant to be scripts/sdk-shims-node.mjs (sdkShimsNode)`);
      if (/(?:^|\/)node_modules\/mime-db\//.test(input)) throw new Error(`${file} bundles mime-db: its table is meant to be computed at build time (mimeTypesTable)`);
    }
    const code = readFileSync(resolve(ROOT, file), 'utf8');
    const wide = /[^\x00-\x7f]/.exec(code);
    if (wide) throw new Error(`${file} holds ${JSON.stringify(code.slice(Math.max(0, wide.index - 40), wide.index + 1))}: a character outside ASCII (write it as a \\u escape)`);
  }
}

/** Writes a clean `outdir` (no stale files from an older layout). */
export async function buildDist({ outdir = resolve(ROOT, 'dist'), sourcemap = true } = {}) {
  rmSync(outdir, { recursive: true, force: true });
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: ENTRY_POINTS,
    outdir,
    bundle: true,
    // No comments and no indentation: 1.7 MB of server bundle instead of 2.4, which Node reads, hashes and compiles
    // at every start (--version 3-5% sooner on Node 20 and 24, 3 MiB less resident). Names are kept, and the maps
    // lead a stack trace back to the source (node --enable-source-maps).
    minifyWhitespace: true,
    metafile: true,
    platform: 'node',
    format: 'esm',
    target: 'node20.19',
    external: EXTERNAL,
    // Bundled CommonJS packages (mime-types, ignore, ...) call require(); an ES module has none of its own.
    banner: { js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);" },
    // As tsc's maps did: file names and positions, not the sources (src/ is not in the package).
    sourcemap: sourcemap ? 'linked' : false,
    sourcesContent: false,
    plugins: [http2OnDemand, zodEnglishOnly, mimeTypesTable, sdkShimsNode],
    logLevel: 'warning',
  });
  writeFileSync(join(outdir, 'cli.js'), BIN);
  chmodSync(join(outdir, 'cli.js'), 0o755);
  checkBundles(metafile);
}

/**
 * The bin, a module of its own because the compile cache applies to what is
 * compiled after it is turned on: from Node 22.1, V8's compiled code of the
 * 2 MB server bundle is kept on disk and the next start skips most of its
 * compilation (docs/design.md#start-up). It is kept in folder-mcp's own cache
 * folder, beside the index ($XDG_CACHE_HOME when it is an absolute path, else
 * ~/.cache, then folder-mcp/compile-cache, made private), not in the shared
 * temporary folder Node would use, where another user could put code there
 * first. Never inside a served folder, as the server never writes in one:
 * both the cache folder and each argument that is an existing folder are
 * taken by their real paths (the cache's by its nearest existing folder
 * before it is made, and again after, through a `~` spelled with a symlink
 * or a `folder-mcp` that is one); and with no folder on the command line
 * there is no cache, as the client's roots are not known until the server
 * runs (they may hold the cache). Any argument that is a folder counts, which
 * at worst turns the cache off. NODE_COMPILE_CACHE still chooses another
 * place and NODE_DISABLE_COMPILE_CACHE=1 turns it off. Node 20 has no compile
 * cache: the call is skipped.
 */
const BIN = `#!/usr/bin/env node
// Written by scripts/build.mjs: the server is folder-mcp.js; this turns on Node's compile cache (Node >= 22.1) first.
import { mkdirSync, realpathSync, statSync } from 'node:fs';
import module from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
if (module.enableCompileCache) {
  if (process.env.NODE_COMPILE_CACHE) module.enableCompileCache();
  else {
    // realpath(3), as the server takes its folders (on Windows and macOS it spells a path as the disk does: case),
    // and Node's own walk where that fails.
    const realpath = (path) => {
      try {
        return realpathSync.native(path);
      } catch {
        return realpathSync(path);
      }
    };
    // The real path a path has, or would have once made: its nearest existing folder's, and the rest.
    const real = (path) => {
      const rest = [];
      for (let at = resolve(path); ; at = dirname(at)) {
        try {
          return join(realpath(at), ...rest.reverse());
        } catch {
          if (dirname(at) === at) return resolve(path);
          rest.push(basename(at));
        }
      }
    };
    const xdg = process.env.XDG_CACHE_HOME;
    const dir = join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.cache'), 'folder-mcp', 'compile-cache');
    const folders = process.argv.slice(2).filter((arg) => {
      try {
        return statSync(arg).isDirectory();
      } catch {
        return false;
      }
    }).map(real);
    const inside = (path) => folders.some((folder) => path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep));
    if (folders.length > 0 && !inside(real(dir))) {
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        if (!inside(realpath(dir))) module.enableCompileCache(dir);
      } catch {
        // No cache: the server starts all the same, compiling as Node 20 does.
      }
    }
  }
}
await import('./folder-mcp.js');
`;

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' }, 'no-sourcemap': { type: 'boolean' } } });
  await buildDist({ ...(values.outdir ? { outdir: resolve(values.outdir) } : {}), sourcemap: !values['no-sourcemap'] });
}
