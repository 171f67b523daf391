#!/usr/bin/env node
// `npm test`, after the build (dist/ and build/tests/): the checks
// (scripts/checks.mjs: types, lint, layers, links) and node's test runner
// over the bundled test files, side by side. The checks run at a lower
// priority: they are pure CPU, and the tests wait on events (a watcher, a
// child process, a socket) often enough that on 2 cores the checks finish in
// the gaps instead of holding every test back by their 13-18 s. The checks'
// output is printed whole once the tests end, then the tests' closing line
// again, so the last line still says how the tests went; the exit code is 1
// if either failed. Arguments are passed to the test runner
// (e.g. `npm test -- --test-name-pattern=sibling`).
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SUITES, TESTS_OUT } from './build-tests.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** How much lower the checks run than the tests (nice(1) steps). */
const CHECKS_NICENESS = 10;

const files = SUITES.flatMap((suite) =>
  readdirSync(join(TESTS_OUT, suite))
    .filter((name) => name.endsWith('.test.js'))
    .sort()
    .map((name) => join(TESTS_OUT, suite, name)),
);

let checksOutput = '';
const checks = new Promise((resolve) => {
  const child = spawn(process.execPath, [join(ROOT, 'scripts', 'checks.mjs'), '--nice', String(CHECKS_NICENESS)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk) => (checksOutput += chunk));
  child.stderr.on('data', (chunk) => (checksOutput += chunk));
  child.on('error', (error) => resolve({ ok: false, why: String(error) }));
  child.on('close', (code) => resolve({ ok: code === 0 }));
});

let lastLine = '';
const tests = new Promise((resolve) => {
  const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=./test/summary-reporter.mjs', '--test-reporter-destination=stdout'];
  const child = spawn(process.execPath, ['--enable-source-maps', '--test', '--test-concurrency=4', ...reporters, ...process.argv.slice(2), ...files], {
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
process.stdout.write(`\n${checksOutput.trimEnd()}${checkResult.why ? `\n${checkResult.why}` : ''}\n`);
process.stdout.write(`${checkResult.ok ? 'checks passed' : 'checks FAILED (above)'}; ${lastLine.trim()}${testResult.why ? ` (${testResult.why})` : ''}\n`);
process.exitCode = testResult.ok && checkResult.ok ? 0 : 1;
