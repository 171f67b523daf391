// One server per index file (src/index/lock.ts), raced: servers started at once, each in a process of its own,
// all finding the lock stale (its server died), must end with one holder. A red-team pass had two holders in 3 of
// 20 trials of three (each removed whatever lock it found, the other's new one included).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../basics.ts';

const LOCK_MODULE = new URL('../../src/index/lock.ts', import.meta.url).href;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A process that, for each trial, takes the lock of `${dir}/i<trial>.db` at its time (`at` + trial * GAP_MS, ms
 * since the epoch), holds every lock it got until its stdin ends, and says which trials it got.
 */
function taker(dir: string, at: number, trials: number): Promise<{ got: number[]; exit: () => Promise<void> }> {
  const script = `
    import { acquireDbLock } from ${JSON.stringify(LOCK_MODULE)};
    const runs = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
    const got = [];
    for (let trial = 0; trial < ${trials}; trial++) {
      while (Date.now() < ${at} + trial * ${GAP_MS});
      if (acquireDbLock(${JSON.stringify(dir)} + '/i' + trial + '.db', runs, runs).acquired) got.push(trial);
    }
    process.stdout.write(JSON.stringify(got) + '\\n');
    process.stdin.resume();
    process.stdin.on('end', () => process.exit(0));
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (!out.includes('\n')) return;
      resolve({ got: JSON.parse(out) as number[], exit: () => (child.stdin.end(), exited) });
    });
    child.once('exit', (code) => reject(new Error(`the taker exited (${code}) before it answered`)));
  });
}

/** Between two trials: long enough for every process to have taken its turn at the last. */
const GAP_MS = 25;
const TRIALS = 120;

test('servers taking a stale lock over at once: one holds it, the others are told it is held', { timeout: 120_000 }, async () => {
  const dir = tempDir('folder-mcp-lock-race-');
  try {
    // Each trial's lock: its server died (no such process), or died before writing its pid (an empty lock).
    for (let trial = 0; trial < TRIALS; trial++) writeFileSync(join(dir.path, `i${trial}.db.lock`), trial % 4 === 3 ? '' : 'folder-mcp 999999999');
    // Far enough ahead for four processes to be up and spinning, on a loaded machine too.
    const at = Date.now() + 4000;
    const takers = await Promise.all([0, 1, 2, 3].map(() => taker(dir.path, at, TRIALS)));
    await Promise.all(takers.map((t) => t.exit()));
    const holders = Array.from({ length: TRIALS }, (_, trial) => takers.filter((t) => t.got.includes(trial)).length);
    const wrong = holders.flatMap((count, trial) => (count === 1 ? [] : [`trial ${trial}: ${count} holders`]));
    assert.deepEqual(wrong, []);
  } finally {
    dir.cleanup();
  }
});
