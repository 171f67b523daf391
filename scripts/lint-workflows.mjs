#!/usr/bin/env node
// Lints the GitHub Actions workflows with actionlint (`npm run checks`): every
// .yml and .yaml file in .github/workflows/, or the files named. Prints each
// finding as FILE:LINE:COL: MESSAGE [KIND] and exits 1 on any. No workflow
// runs here (no GitHub), so this is what catches a typo in an expression, a
// context that does not exist, a missing `runs-on` or bad YAML before a tag
// does.
//
// The npm package `actionlint` is actionlint compiled to WebAssembly, with no
// binary to download. It is actionlint 1.6.22 (2022): it does not run
// shellcheck or pyflakes on `run:` scripts (no processes in WebAssembly), and
// its tables are of that year: a runner label newer than ubuntu-22.04 and the
// `attestations` permission are unknown to it, and it checks the inputs of
// actions/checkout and actions/setup-node only up to @v3.
//   node scripts/lint-workflows.mjs [FILE...]
import { createLinter } from 'actionlint';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORKFLOWS = join(ROOT, '.github', 'workflows');

const named = process.argv.slice(2).map((file) => resolve(file));
const files = named.length > 0
  ? named
  : existsSync(WORKFLOWS)
    ? readdirSync(WORKFLOWS).filter((name) => /\.ya?ml$/.test(name)).sort().map((name) => join(WORKFLOWS, name))
    : [];
if (files.length === 0) {
  console.log('no workflow to lint');
  process.exit(named.length > 0 ? 1 : 0);
}

let lint = await createLinter();
let findings = 0;
for (const file of files) {
  const shown = relative(process.cwd(), file).startsWith('..') ? file : relative(process.cwd(), file);
  let results;
  try {
    results = lint(readFileSync(file, 'utf8'), shown);
  } catch (error) {
    // This build stops (a Go panic: "RuntimeError: unreachable") on YAML it cannot parse, an unclosed quote or
    // bracket, and its runtime is gone after that: the file counts as a finding, the next one gets a new linter.
    findings++;
    console.log(`${shown}: not linted: actionlint stopped (${error.message}), as it does on YAML it cannot parse`);
    lint = await createLinter();
    continue;
  }
  for (const f of results) {
    findings++;
    console.log(`${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
  }
}
console.log(`actionlint: ${files.length} workflow(s), ${findings} finding(s)`);
process.exitCode = findings > 0 ? 1 : 0;
