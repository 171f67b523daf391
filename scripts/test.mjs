#!/usr/bin/env node
// `npm test`, after the build (dist/ and build/tests/): node's test runner
// over the bundled test files of the quick lane (scripts/lanes.mjs) and,
// side by side, the quick checks (scripts/checks.mjs --only layers,links: no
// import points up, no link or named path is broken; a second of CPU each).
// The type check and the linter are `npm run checks` (CI runs them): some
// 70 s of CPU from a fresh clone, they would add a third to npm test's time.
// The checks' output is printed whole once the tests end, then the tests'
// closing line again, so the last line still says how the tests went; the
// exit code is 1 if either failed.
// Arguments are passed to the test runner (e.g. `npm test --
// --test-name-pattern=sibling`). `--slow` first (`npm run test:slow`): the
// slow lane instead, without the checks; `--no-checks`: the quick lane alone.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SUITES, TESTS_OUT } from './build-tests.mjs';
import { checkLanes, isSlow } from './lanes.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The checks npm test runs (types and lint: `npm run checks`). */
const QUICK_CHECKS = 'layers,links';

const args = process.argv.slice(2);
/** Takes a flag of ours off the front of the arguments (the rest go to the test runner). */
const flag = (name) => args[0] === name && args.shift() !== undefined;
const slowLane = flag('--slow');
const withChecks = !slowLane && !flag('--no-checks');
checkLanes(join(ROOT, 'test'));
const files = SUITES.flatMap((suite) =>
  readdirSync(join(TESTS_OUT, suite))
    .filter((name) => name.endsWith('.test.js'))
    .sort()
    .map((name) => join(TESTS_OUT, suite, name)),
).filter((file) => isSlow(file) === slowLane);

/** The quick checks, or (slow lane, --no-checks) a stand-in that has passed. */
const checks = !withChecks
  ? Promise.resolve({ ok: true, output: '' })
  : new Promise((resolve) => {
      let output = '';
      const child = spawn(process.execPath, [join(ROOT, 'scripts', 'checks.mjs'), '--only', QUICK_CHECKS], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      child.on('error', (error) => resolve({ ok: false, output, why: String(error) }));
      child.on('close', (code) => resolve({ ok: code === 0, output }));
    });

let lastLine = '';
// Not --test-force-exit, though a file left hanging on a handle would end: on
// Node 24.21 it ended files before their last describes ran, and said nothing
// (uri.test.js: 322 of 373 tests). A watch left open is a failing test instead
// (test/unit/watch-chokidar.test.ts).
const tests = new Promise((resolve) => {
  const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=./test/summary-reporter.mjs', '--test-reporter-destination=stdout'];
  const child = spawn(process.execPath, ['--enable-source-maps', '--test', '--test-concurrency=4', ...reporters, ...args, ...files], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    const lines = String(chunk).trimEnd().split('\n');
    if (lines.at(-1)) lastLine = lines.at(-1);
  });
  child.on('error', (error) => resolve({ ok: false, why: String(error) }));
  child.on('close', (code) => resolve({ ok: code === 0 }));
});

const testResult = await tests;
const checkResult = await checks;
const checksOutput = checkResult.output;
const lane = slowLane ? 'slow lane' : 'quick lane';
if (!withChecks) process.stdout.write(`${lane}: ${lastLine.trim()}${testResult.why ? ` (${testResult.why})` : ''}\n`);
else {
  process.stdout.write(`\n${checksOutput.trimEnd()}${checkResult.why ? `\n${checkResult.why}` : ''}\n`);
  process.stdout.write(`${checkResult.ok ? 'layers and links passed' : 'layers or links FAILED (above)'}; ${lane}: ${lastLine.trim()}${testResult.why ? ` (${testResult.why})` : ''}\n`);
}
process.exitCode = testResult.ok && checkResult.ok ? 0 : 1;
