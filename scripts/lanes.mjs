// The two lanes of the test suite (test/e2e and test/unit; the cluster is a
// third, `npm run test:cluster`). `npm test` runs the quick lane: every unit
// test but the four below, and the end-to-end tests that show each era, each
// transport and each tool working through the real server; it stays within
// 90 s on a quiet 2-core machine. `npm run test:slow` runs the slow lane:
// the files named here, each slow by what it does (many server starts, the
// fuzzer, bombs and bursts, every watcher backend, servers run as nobody).
// CI (.ci/run) runs both lanes, on Node 20 and on Node 24.
// Node.js itself keeps its stress tests apart the same way (its "pummel" tests).
// A new test file is in the quick lane unless it is named here; a name here
// that no longer exists fails `npm test`, so a rename cannot drop a file
// from both lanes.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Test files (under test/, without the extension) of the slow lane, with why. */
export const SLOW = {
  'unit/converters': 'the conversion process under memory, time and address-space limits: converter bombs',
  'unit/scan-watch-redteam': "the scan's watches raced by thousands of directory changes",
  'unit/content-index-scale': "the content index's build over 11,000 and 1,500 files",
  'unit/filtering.budget': 'pathological patterns against the scan budget, over thousands of rows',
  'unit/lock-race': 'four processes at a time racing for one stale index lock, six times',
  'e2e/fuzz.e2e': 'the model-based fuzzer: seeds of random operations on every watcher backend',
  'e2e/formats.e2e': 'every document format through the binary, bombs included',
  'e2e/search-formats.e2e': 'hostile documents in the content index',
  'e2e/search-meaning.e2e': 'search by meaning against an embedding server',
  'e2e/http-bounds': 'bursts of hundreds of connections against the HTTP bounds',
  'e2e/db-safety.e2e': 'a dozen starts of the binary, each on an unusable --db',
  'e2e/safe-open.e2e': 'folders swapped for links and files for FIFOs, under every watcher backend',
  'e2e/index-truth.e2e': "the independent fuzzer's findings, raced against real watchers",
  'e2e/write-races.e2e': 'writers racing each other and outside writes',
  'e2e/live-start.e2e': 'restarts, SIGKILL and warm starts of the binary',
  'e2e/live.e2e': 'live updates on every watcher backend',
  'e2e/stdio-read-budget.e2e': 'memory bounds of large reads in flight',
  'e2e/edit-bounds.e2e': 'the edit tools at their size bounds',
  'e2e/search-bounds.e2e': 'the search time and memory bounds',
  'e2e/unreadable-walk.e2e': 'folders made unreadable under servers run as nobody',
  'e2e/names.e2e': 'thousands of strange names and too-deep folders',
  'e2e/stdio-transport': 'over-long lines (128 MiB) against the stdio bound',
  'e2e/resources.e2e': 'every resource method through the binary on a generated tree, both eras',
  'e2e/filtering.e2e': 'the filter model over a generated tree, case by case',
  'e2e/http.e2e': 'five HTTP servers, both eras at once',
  'e2e/index-file.e2e': 'two servers on one index file, and where the file may not be',
};

/** Fails on a name in SLOW with no test file behind it. */
export function checkLanes(testDir) {
  const missing = Object.keys(SLOW).filter((name) => !existsSync(join(testDir, `${name}.test.ts`)));
  if (missing.length > 0) throw new Error(`scripts/lanes.mjs names test files that do not exist: ${missing.join(', ')}`);
}

/** Whether a test file (a path ending in <suite>/<name>.test.{ts,js}) is in the slow lane. */
export function isSlow(file) {
  const match = /([^/\\]+)[/\\]([^/\\]+)\.test\.[jt]s$/.exec(file);
  return match !== null && Object.hasOwn(SLOW, `${match[1]}/${match[2]}`);
}
