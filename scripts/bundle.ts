/**
 * `npm run bundle`: builds build/folder-mcp-<version>-<platform>-<arch>.mcpb,
 * an MCP Bundle that Claude Desktop installs with a double-click.
 *
 * The bundle carries its own production node_modules, and two of them are
 * native (better-sqlite3), so a bundle runs only on the
 * platform and architecture it was built on, with a Node.js of the same ABI:
 * build on each platform you ship (docs/install.md).
 *
 * Steps: build src/ into a clean staging folder (scripts/build.mjs; no stale
 * files, no source maps), install the locked production dependencies there,
 * trim what is never loaded, check that the server starts from the staging
 * folder alone, pack.
 *
 * Options:
 *   --out DIR       where the bundle (and its staging folder) go; default build/
 *   --clean-native  compile better-sqlite3 in the staging folder (prebuilt
 *                   download, else node-gyp; about a minute) instead of
 *                   reusing this checkout's build of the same version, which
 *                   is used only when it loads in this Node.js.
 */
import { packExtension } from '@anthropic-ai/mcpb';
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SQLITE_BINARY = 'build/Release/better_sqlite3.node';

/** Paths under the staged node_modules that the server never loads (build inputs, other builds of pdfjs). */
const NEVER_LOADED = [
  'better-sqlite3/deps',
  'better-sqlite3/src',
  'better-sqlite3/binding.gyp',
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

/** The bundle's file name: one per version, platform and architecture. */
export function bundleFileName(version: string, platform: string = process.platform, arch: string = process.arch): string {
  return `folder-mcp-${version}-${platform}-${arch}.mcpb`;
}

/**
 * The Node.js versions the bundle runs on: the ABI of better-sqlite3 (not
 * N-API) changes with each major, so the build's major only, from the
 * package's floor (`engines.node`, ">=20.19") when that is the same major.
 */
export function runtimeRange(enginesNode: string, buildNode: string = process.versions.node): string {
  const major = Number(buildNode.split('.')[0]);
  const floor = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(enginesNode.trim());
  const from = floor && Number(floor[1]) === major ? `${major}.${floor[2] ?? 0}.${floor[3] ?? 0}` : `${major}.0.0`;
  return `>=${from} <${major + 1}.0.0`;
}

function run(command: string, args: string[], cwd: string, options: SpawnSyncOptions = {}): void {
  // npm is npm.cmd on Windows, which spawn runs only through a shell.
  const result = spawnSync(command, args, { cwd, stdio: 'inherit', shell: command === 'npm' && process.platform === 'win32', ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`})`);
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/** True when the staged better-sqlite3 opens a database in this Node.js, resolved from the staging folder only. */
function sqliteLoads(stage: string): boolean {
  const probe = `new (require(${JSON.stringify(join(stage, 'node_modules', 'better-sqlite3'))}))(':memory:').close()`;
  return spawnSync(process.execPath, ['-e', probe], { cwd: stage, stdio: 'ignore', env: { ...process.env, NODE_PATH: '' } }).status === 0;
}

/** Copies this checkout's better-sqlite3 binary when it is the same version; true if it then loads. */
function reuseSqliteBuild(stage: string): boolean {
  const from = join(ROOT, 'node_modules', 'better-sqlite3');
  const to = join(stage, 'node_modules', 'better-sqlite3');
  if (!existsSync(join(from, SQLITE_BINARY))) return false;
  if (readJson<PackageJson>(join(from, 'package.json')).version !== readJson<PackageJson>(join(to, 'package.json')).version) return false;
  mkdirSync(dirname(join(to, SQLITE_BINARY)), { recursive: true });
  copyFileSync(join(from, SQLITE_BINARY), join(to, SQLITE_BINARY));
  return sqliteLoads(stage);
}

/** Keeps only the loadable binary of better-sqlite3's build folder (objects and the static library are MBs). */
function trimSqliteBuild(stage: string): void {
  const pkg = join(stage, 'node_modules', 'better-sqlite3');
  const binary = readFileSync(join(pkg, SQLITE_BINARY));
  rmSync(join(pkg, 'build'), { recursive: true, force: true });
  mkdirSync(dirname(join(pkg, SQLITE_BINARY)), { recursive: true });
  writeFileSync(join(pkg, SQLITE_BINARY), binary);
}

function stageBundle(pkg: PackageJson, staging: string, cleanNative: boolean): void {
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });

  // The same bundles as `npm run build` (scripts/build.mjs), without source maps.
  run(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', join(staging, 'dist'), '--no-sourcemap'], ROOT);

  // The lockfile pins the tree; scripts are dropped so that npm does not run `prepare` (a build) here.
  const { scripts: _scripts, ...withoutScripts } = pkg;
  writeFileSync(join(staging, 'package.json'), `${JSON.stringify(withoutScripts, null, 2)}\n`);
  copyFileSync(join(ROOT, 'package-lock.json'), join(staging, 'package-lock.json'));
  const npmArgs = ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'];
  if (cleanNative) {
    run('npm', npmArgs, staging);
  } else {
    run('npm', [...npmArgs, '--ignore-scripts'], staging);
    if (!reuseSqliteBuild(staging)) {
      console.error('bundle: no reusable better-sqlite3 build here; compiling it in the staging folder');
      run('npm', ['rebuild', 'better-sqlite3'], staging);
    }
  }
  if (!sqliteLoads(staging)) throw new Error('better-sqlite3 does not load from the staging folder');
  trimSqliteBuild(staging);
  for (const path of NEVER_LOADED) rmSync(join(staging, 'node_modules', path), { recursive: true, force: true });
  rmSync(join(staging, 'package-lock.json'));

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

  // One bundle per platform and Node.js major: it says so, and Claude Desktop's install dialog checks both.
  const manifest = readJson<{ version: string; compatibility: { platforms: string[]; runtimes: { node: string } } }>(
    join(ROOT, 'manifest.json'),
  );
  manifest.version = pkg.version;
  manifest.compatibility.platforms = [process.platform];
  manifest.compatibility.runtimes.node = runtimeRange(pkg.engines.node ?? '');
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
  const { values } = parseArgs({ options: { out: { type: 'string' }, 'clean-native': { type: 'boolean' } } });
  const out = resolve(values.out ?? join(ROOT, 'build'));
  const pkg = readJson<PackageJson>(join(ROOT, 'package.json'));
  const staging = join(out, 'bundle');
  stageBundle(pkg, staging, values['clean-native'] ?? false);
  const output = join(out, bundleFileName(pkg.version));
  rmSync(output, { force: true });
  if (!(await packExtension({ extensionPath: staging, outputPath: output, silent: true }))) {
    throw new Error('mcpb pack failed (run `npx mcpb validate manifest.json`)');
  }
  const mib = (statSync(output).size / 2 ** 20).toFixed(1);
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  const shown = relative(process.cwd(), output).startsWith('..') ? output : relative(process.cwd(), output);
  console.log(`bundle: ${shown} (${mib} MiB, ${process.platform}-${process.arch}, Node ABI ${process.versions.modules}) in ${seconds} s`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error(`bundle: ${(error as Error).message}`);
    process.exitCode = 1;
  });
}
