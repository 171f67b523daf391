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

/** A process that takes the lock at `at` (ms since the epoch), says whether it got it, and holds it until its stdin ends. */
function taker(db: string, at: number): Promise<{ acquired: boolean; exit: () => Promise<void> }> {
  const script = `
    import { acquireDbLock } from ${JSON.stringify(LOCK_MODULE)};
    const runs = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
    while (Date.now() < ${at});
    const lock = acquireDbLock(${JSON.stringify(db)}, runs, runs);
    process.stdout.write(JSON.stringify({ acquired: lock.acquired }) + '\\n');
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
      const { acquired } = JSON.parse(out) as { acquired: boolean };
      resolve({ acquired, exit: () => (child.stdin.end(), exited) });
    });
    child.once('exit', (code) => reject(new Error(`the taker exited (${code}) before it answered`)));
  });
}

test('servers taking a stale lock over at once: one holds it, the others are told it is held', { timeout: 120_000 }, async () => {
  const dir = tempDir('folder-mcp-lock-race-');
  try {
    for (let trial = 0; trial < 6; trial++) {
      const db = join(dir.path, `i${trial}.db`);
      writeFileSync(`${db}.lock`, 'folder-mcp 999999999'); // its server died: no such process
      // Far enough ahead for four processes to be up and spinning, on a loaded machine too.
      const at = Date.now() + 3000;
      const takers = await Promise.all([0, 1, 2, 3].map(() => taker(db, at)));
      const holders = takers.filter((t) => t.acquired).length;
      await Promise.all(takers.map((t) => t.exit()));
      assert.equal(holders, 1, `trial ${trial}: ${holders} processes hold one lock`);
    }
  } finally {
    dir.cleanup();
  }
});
