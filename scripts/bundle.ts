/**
 * `npm run bundle`: builds build/folder-mcp-<version>.mcpb, an MCP Bundle
 * that Claude Desktop installs with a double-click, on every platform.
 *
 * The bundle holds no native module: the index runs on Node's built-in
 * node:sqlite (src/sqlite.ts), so one file serves macOS, Windows and Linux
 * on any Node.js that has it (NODE_SQLITE_SINCE, 22.16: Claude Desktop ships
 * 24), and macOS's library validation, which refuses a third-party `.node`
 * file in Claude Desktop's process, has nothing to refuse. The optional
 * dependencies (better-sqlite3 for Node 20, pdfjs's @napi-rs/canvas for
 * rendering, which text extraction never loads) stay out, and a `.node` file
 * that slips in anyway fails the build.
 *
 * Steps: build src/ into a clean staging folder (scripts/build.mjs; no stale
 * files, no source maps), install the locked production dependencies there
 * without optional ones or install scripts, trim what is never loaded, check
 * that the server starts from the staging folder alone, pack.
 *
 * Options:
 *   --out DIR       where the bundle (and its staging folder) go; default build/
 */
import { packExtension } from '@anthropic-ai/mcpb';
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The Node.js the bundle needs: node:sqlite with FTS5 (src/sqlite.ts, NODE_SQLITE_SINCE). */
export const BUNDLE_NODE = '>=22.16.0';

/** Paths under the staged node_modules that the server never loads (other builds of pdfjs). */
const NEVER_LOADED = [
  'pdfjs-dist/build',
  'pdfjs-dist/web',
  'pdfjs-dist/types',
  'pdfjs-dist/image_decoders',
  'pdfjs-dist/legacy/web',
  'pdfjs-dist/legacy/image_decoders',
];

interface PackageJson {
  name: string;
  version: string;
  description: string;
  license: string;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  [key: string]: unknown;
}

/** The bundle's file name: one per version, for every platform. */
export function bundleFileName(version: string): string {
  return `folder-mcp-${version}.mcpb`;
}

/** Every file under `dir` whose name ends in `.node` (a native module), relative to `dir`. */
export function nativeModulesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((rel) => rel.endsWith('.node') && statSync(join(dir, rel)).isFile());
}

function run(command: string, args: string[], cwd: string, options: SpawnSyncOptions = {}): void {
  // npm is npm.cmd on Windows, which spawn runs only through a shell.
  const result = spawnSync(command, args, { cwd, stdio: 'inherit', shell: command === 'npm' && process.platform === 'win32', ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`})`);
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

function stageBundle(pkg: PackageJson, staging: string): void {
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });

  // The same bundles as `npm run build` (scripts/build.mjs), without source maps.
  run(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', join(staging, 'dist'), '--no-sourcemap'], ROOT);

  // The lockfile pins the tree; scripts are dropped so that npm does not run `prepare` (a build) here.
  const { scripts: _scripts, ...withoutScripts } = pkg;
  writeFileSync(join(staging, 'package.json'), `${JSON.stringify(withoutScripts, null, 2)}\n`);
  copyFileSync(join(ROOT, 'package-lock.json'), join(staging, 'package-lock.json'));
  // No optional dependency (the native ones) and no install script: nothing is compiled or downloaded.
  run('npm', ['ci', '--omit=dev', '--omit=optional', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], staging);
  for (const path of NEVER_LOADED) rmSync(join(staging, 'node_modules', path), { recursive: true, force: true });
  rmSync(join(staging, 'package-lock.json'));
  const native = nativeModulesUnder(staging);
  if (native.length > 0) throw new Error(`the bundle would hold native modules, which Claude Desktop on macOS refuses: ${native.join(', ')}`);

  // What the installed server reads: its version (cli.ts), "type": "module" for dist/.
  const shipped = {
    name: pkg.name,
    version: pkg.version,
    description: pkg.description,
    license: pkg.license,
    type: pkg.type,
    bin: pkg.bin,
    engines: pkg.engines,
    dependencies: pkg.dependencies,
  };
  writeFileSync(join(staging, 'package.json'), `${JSON.stringify(shipped, null, 2)}\n`);

  // One bundle for every platform, on a Node.js with node:sqlite: manifest.json says so (checked by test:package).
  const manifest = readJson<{ version: string }>(join(ROOT, 'manifest.json'));
  manifest.version = pkg.version;
  writeFileSync(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const file of ['LICENSE', 'icon.png']) {
    if (existsSync(join(ROOT, file))) cpSync(join(ROOT, file), join(staging, file));
  }

  const version = spawnSync(process.execPath, [join(staging, 'dist', 'cli.js'), '--version'], {
    cwd: dirname(staging),
    encoding: 'utf8',
    env: { ...process.env, NODE_PATH: '' },
  });
  if (version.stdout.trim() !== pkg.version) {
    throw new Error(`the staged server does not start: ${version.stderr || version.stdout || `exit ${version.status}`}`);
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const out = resolve(values.out ?? join(ROOT, 'build'));
  const pkg = readJson<PackageJson>(join(ROOT, 'package.json'));
  const staging = join(out, 'bundle');
  stageBundle(pkg, staging);
  const output = join(out, bundleFileName(pkg.version));
  rmSync(output, { force: true });
  if (!(await packExtension({ extensionPath: staging, outputPath: output, silent: true }))) {
    throw new Error('mcpb pack failed (run `npx mcpb validate manifest.json`)');
  }
  const mib = (statSync(output).size / 2 ** 20).toFixed(1);
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  const shown = relative(process.cwd(), output).startsWith('..') ? output : relative(process.cwd(), output);
  console.log(`bundle: ${shown} (${mib} MiB, every platform, Node.js ${BUNDLE_NODE}, no native module) in ${seconds} s`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error(`bundle: ${(error as Error).message}`);
    process.exitCode = 1;
  });
}
