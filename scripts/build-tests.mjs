#!/usr/bin/env node
// `npm test` runs the test files as plain JavaScript: each test file bundled
// with what it imports from src/ and test/ (packages stay in node_modules)
// into build/tests/{e2e,unit,cluster}/ (git-ignored; per checkout, so two runs in two
// clones that share a node_modules do not meet).
// Why: node --test runs every file in a process of its own, and under
// `--import tsx` each of those processes starts tsx's loader thread and sends
// every module of its graph through it. Measured on 2 cores: 0.2 s of CPU
// before the first line of a test, and 0.6-0.9 s for a file that loads the
// SDK clients and the server, some 30 s of CPU over the suite. Bundled,
// a file loads as one module.
// What stays as under tsx: every module keeps its own `import.meta.url` (the
// URL of its source file, written in before bundling), so paths found from it
// (dist/, the workers, package.json) are the same; names are kept
// (keepNames); source maps send stack traces to the .ts lines
// (--enable-source-maps). Types are checked by tsc, in scripts/checks.mjs.
// `node --import tsx --test test/unit/x.test.ts` still runs one file from
// its source.
//   node scripts/build-tests.mjs [--outdir DIR]
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const TESTS_OUT = resolve(ROOT, 'build/tests');
/** The suites `npm test` runs. */
export const SUITES = ['e2e', 'unit'];
/** Built too, run on their own: `npm run test:cluster` (nginx, redis-server and three replicas) and `npm run test:windows` (node.exe under Wine); .ci/run runs both. */
export const BUILT_SUITES = [...SUITES, 'cluster', 'windows'];

/**
 * Each module's `import.meta.url` as the URL of its own source file, as if loaded from it. The Windows suite runs
 * in node.exe under Wine, which sees this machine's `/` as its drive Z: (`file:///Z:/work/...`).
 */
const ownMetaUrl = (underWine = false) => ({
  name: 'own-import-meta-url',
  setup(build) {
    build.onLoad({ filter: /\.(ts|mts|mjs|js)$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      const url = underWine ? `file:///Z:${pathToFileURL(args.path).pathname}` : pathToFileURL(args.path).href;
      return {
        contents: text.replaceAll('import.meta.url', JSON.stringify(url)),
        loader: args.path.endsWith('ts') ? 'ts' : 'js',
      };
    });
  },
});

/** Writes a clean `outdir`: one bundle per test file of each suite (the Windows suite's for Wine, see ownMetaUrl). */
export async function buildTests({ outdir = TESTS_OUT } = {}) {
  rmSync(outdir, { recursive: true, force: true });
  const entriesOf = (suites) =>
    suites.flatMap((suite) =>
      readdirSync(join(ROOT, 'test', suite))
        .filter((name) => name.endsWith('.test.ts'))
        .map((name) => join(ROOT, 'test', suite, name)),
    );
  const options = {
    absWorkingDir: ROOT,
    outdir,
    outbase: join(ROOT, 'test'),
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20.19',
    keepNames: true,
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  };
  const here = entriesOf(BUILT_SUITES.filter((suite) => suite !== 'windows'));
  const wine = entriesOf(['windows']);
  await Promise.all([
    build({ ...options, entryPoints: here, plugins: [ownMetaUrl()] }),
    // Built on Windows itself (a Windows runner), the Windows suite's paths are already Windows'.
    build({ ...options, entryPoints: wine, plugins: [ownMetaUrl(process.platform !== 'win32')] }),
  ]);
  return here.length + wine.length;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' } } });
  const started = performance.now();
  const count = await buildTests(values.outdir ? { outdir: resolve(values.outdir) } : {});
  process.stdout.write(`test files bundled: ${count} in ${Math.round(performance.now() - started)} ms\n`);
}
