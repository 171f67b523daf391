// The lock files that order changes across processes (src/content/file-locks.ts).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { BREAKER_LEFT_MS, BREAKER_STALE_MS, breakerOf, FileLockTimeout, holderGone, LOCK_FILE_PREFIX, LOCK_STALE_MS, lockFileOf, lockFiles, PID_SCOPE } from '../../src/content/file-locks.ts';
import { tempDir } from '../basics.ts';

/** Runs `body` with `f.txt` in a temp folder and its lock file's path; the folder removed after. */
async function inFolder(body: (paths: { dir: string; file: string; lock: string }) => Promise<void>): Promise<void> {
  const dir = tempDir('folder-mcp-file-locks-');
  try {
    const file = join(dir.path, 'f.txt');
    await body({ dir: dir.path, file, lock: lockFileOf(file, false) });
  } finally {
    dir.cleanup();
  }
}

/** Sets `path`'s mtime `ms` in the past. */
function age(path: string, ms: number): void {
  const then = new Date(Date.now() - ms);
  utimesSync(path, then, then);
}

describe('file locks', () => {
  test('one lock file per file, in its folder; every spelling of a name one lock where names fold', () => {
    assert.equal(lockFileOf('/r/d/a.txt', false).startsWith(`/r/d/${LOCK_FILE_PREFIX}`), true);
    assert.notEqual(lockFileOf('/r/d/A.txt', false), lockFileOf('/r/d/a.txt', false));
    assert.equal(lockFileOf('C:/r/d/A.TXT', true), lockFileOf('C:/r/d/a.txt', true));
    assert.equal(lockFileOf('/r/d/cafe\u0301', true), lockFileOf('/r/d/caf\u00e9', true));
  });

  test('held: a second taker waits, and past its deadline gives up; released: taken at once; the folder is left clean', () =>
    inFolder(async ({ dir, file }) => {
      const first = await lockFiles([file], performance.now() + 1000, false);
      await assert.rejects(lockFiles([file], performance.now() + 50, false), FileLockTimeout);
      const waiting = lockFiles([file], performance.now() + 30_000, false);
      first.release();
      (await waiting).release();
      assert.deepEqual(readdirSync(dir), []);
    }));

  test('a lock untouched for the stale time is a dead holder\'s: taken over; a release never removes another\'s lock', () =>
    inFolder(async ({ file, lock }) => {
      writeFileSync(lock, '999999 dead\n');
      age(lock, LOCK_STALE_MS + 1000);
      const taken = await lockFiles([file], performance.now() + 5_000, false);
      // A slow holder whose lock was taken over by another: its release leaves the other's lock alone.
      writeFileSync(lock, 'another holder\n');
      taken.release();
      assert.equal(existsSync(lock), true);
    }));

  test("a fresh lock whose holder's process is gone (a server killed mid-write) is taken at once; a live or foreign holder's is not", () =>
    inFolder(async ({ dir, file, lock }) => {
      // A process that has exited: its pid names nothing now (reused only after the pid space wraps).
      const dead = spawnSync(process.execPath, ['-e', '0']).pid;
      // Another live process of this scope: its lock is held (the test runner's parent).
      writeFileSync(lock, `${process.ppid} ${PID_SCOPE} abc\n`);
      await assert.rejects(lockFiles([file], performance.now() + 50, false), FileLockTimeout);
      // Another boot or pid namespace (a container beside this one): its pid says nothing here.
      writeFileSync(lock, `${dead} elsewhere abc\n`);
      await assert.rejects(lockFiles([file], performance.now() + 50, false), FileLockTimeout);
      writeFileSync(lock, `${dead} ${PID_SCOPE} abc\n`);
      // Far sooner than the stale time: the wait would otherwise end in FileLockTimeout.
      const taken = await lockFiles([file], performance.now() + LOCK_STALE_MS / 2, false);
      taken.release();
      assert.deepEqual(readdirSync(dir), []);
    }));

  test("a dead holder's lock is removed by one taker at a time: not while another's breaker is fresh; a dead taker's breaker is removed", () =>
    inFolder(async ({ dir, file, lock }) => {
      const breaker = breakerOf(lock);
      writeFileSync(lock, '999999 dead\n');
      age(lock, LOCK_STALE_MS + 1000);
      // Another taker is judging it: two that both judged it dead each removed it, the second the first's new lock.
      writeFileSync(breaker, '');
      await assert.rejects(lockFiles([file], performance.now() + 100, false), FileLockTimeout);
      assert.equal(readFileSync(lock, 'utf8'), '999999 dead\n', 'the lock is left to the breaker holder');
      // That taker was killed holding the breaker: once this process has seen it unchanged for BREAKER_STALE_MS (its
      // own clock: another host's may be ahead), it is removed and the dead lock taken.
      const since = performance.now();
      const taken = await lockFiles([file], performance.now() + 30_000, false);
      assert.ok(performance.now() - since >= BREAKER_STALE_MS, 'not before it was seen held for the stale time');
      assert.notEqual(readFileSync(lock, 'utf8'), '999999 dead\n');
      taken.release();
      assert.deepEqual(readdirSync(dir), []);
      // One whose mtime is a minute old is a dead taker's at once, whatever this process has seen of it.
      writeFileSync(lock, '999999 dead\n');
      age(lock, LOCK_STALE_MS + 1000);
      writeFileSync(breaker, '');
      age(breaker, BREAKER_LEFT_MS + 1000);
      (await lockFiles([file], performance.now() + BREAKER_STALE_MS / 2, false)).release();
      assert.deepEqual(readdirSync(dir), []);
      // One left beside no lock (its taker killed after removing the dead lock): removed when the lock is next taken.
      writeFileSync(breaker, '');
      age(breaker, BREAKER_LEFT_MS + 1000);
      (await lockFiles([file], performance.now() + 1000, false)).release();
      assert.deepEqual(readdirSync(dir), []);
    }));

  test('holderGone, by the text of a lock (pure)', () => {
    const gone = (pid: number) => pid !== 7;
    const cases: [text: string, expected: boolean][] = [
      ['41 here abc\n', true],
      ['7 here abc\n', false],
      ['41 there abc\n', false],
      ['41 abcdef\n', false],
      ['0 here abc', false],
      ['-3 here abc', false],
      ['x here abc', false],
      ['', false],
    ];
    for (const [text, expected] of cases) assert.equal(holderGone(text, 'here', (pid) => !gone(pid)), expected, JSON.stringify(text));
  });

  test('a folder reached through a symlink is not locked in: no lock file is made where the link points', async () => {
    const dir = tempDir('folder-mcp-file-locks-');
    try {
      const real = realpathSync(dir.path); // macOS: /var is a link to /private/var
      const outside = join(real, 'outside');
      mkdirSync(outside);
      symlinkSync(outside, join(real, 'lnk'));
      const held = await lockFiles([join(real, 'lnk/x.txt'), join(real, 'here.txt')], performance.now() + 1000, false);
      assert.deepEqual(readdirSync(outside), []);
      assert.equal(readdirSync(real).filter((name) => name.startsWith(LOCK_FILE_PREFIX)).length, 1, 'the real folder is locked in');
      held.release();
    } finally {
      dir.cleanup();
    }
  });

  test('a folder swapped for a link while its lock is held: the lock is released where it was made, nothing outside touched', async (t) => {
    // Linux reaches a lock through its folder's descriptor; elsewhere by its path (docs/security.md: the window left).
    if (process.platform !== 'linux') return t.skip('the folder is pinned by /proc/self/fd on Linux only');
    const dir = tempDir('folder-mcp-file-locks-');
    try {
      const real = realpathSync(dir.path);
      const folder = join(real, 'd');
      const outside = join(real, 'outside');
      mkdirSync(folder);
      mkdirSync(outside);
      const held = await lockFiles([join(folder, 'x.txt')], performance.now() + 1000, false);
      // Swapped as a checkout or another program could: the folder moved away, a link to outside in its place.
      renameSync(folder, join(real, 'moved'));
      symlinkSync(outside, folder);
      writeFileSync(join(outside, basename(lockFileOf(join(folder, 'x.txt'), false))), 'not ours\n');
      held.release();
      assert.deepEqual(readdirSync(join(real, 'moved')), [], 'its own lock released (by path, it was left for the next write to wait 30 s on)');
      assert.deepEqual(readdirSync(outside).map((name) => readFileSync(join(outside, name), 'utf8')), ['not ours\n'], 'nothing outside removed');
    } finally {
      dir.cleanup();
    }
  });

  test('no folder, no lock: nothing to wait for', async () => {
    const held = await lockFiles(['/nonexistent-folder-mcp/x/y.txt'], performance.now() + 10, false);
    held.release();
  });
});
