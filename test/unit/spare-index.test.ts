// src/index/spare-index.ts: the spare index files of the default place. Real files in a temp folder, real locks.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { spareIndexPath, takeSpareIndex } from '../../src/index/spare-index.ts';
import { chooseDriver } from '../../src/sqlite.ts';
import { tempDir } from '../basics.ts';

test('spare paths: <key>.db -> <key>-n.db; a path without .db gets the suffix after it', () => {
  const cases: [string, number, string][] = [
    ['/c/folder-mcp/61f2ab7f8dbe6ef2.db', 2, '/c/folder-mcp/61f2ab7f8dbe6ef2-2.db'],
    ['/c/folder-mcp/61f2ab7f8dbe6ef2.db', 3, '/c/folder-mcp/61f2ab7f8dbe6ef2-3.db'],
    ['C:\\Users\\me\\AppData\\Local\\folder-mcp\\abc.db', 2, 'C:\\Users\\me\\AppData\\Local\\folder-mcp\\abc-2.db'],
    ['/c/index', 2, '/c/index-2.db'],
    ['/c/a.db.db', 2, '/c/a.db-2.db'],
  ];
  for (const [first, n, spare] of cases) assert.equal(spareIndexPath(first, n), spare, `${first} ${n}`);
});

test('the next free spare is taken; a symlink, or a folder where its lock would be, is passed over with a warning; none left: null', () => {
  const { path: dir, cleanup } = tempDir('folder-mcp-spare-');
  const warnings: string[] = [];
  const log = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} };
  const driver = chooseDriver();
  // Another server, as a lock names one: a live process whose command line says folder-mcp.
  const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', 'folder-mcp'], { stdio: 'ignore' });
  try {
    const first = join(dir, 'key.db');
    writeFileSync(first, '');
    // -2.db a symlink to the first: two servers would write one index through it.
    symlinkSync(first, spareIndexPath(first, 2));
    const taken = takeSpareIndex(first, driver, log);
    assert.equal(taken?.dbFile, spareIndexPath(first, 3));
    assert.match(warnings.join('\n'), /key-2\.db is passed over: .*key-2\.db is not a regular file/);
    taken!.lock.release();
    // -3.db held by another server: nothing is left.
    writeFileSync(`${spareIndexPath(first, 3)}.lock`, `folder-mcp ${other.pid}`);
    assert.equal(takeSpareIndex(first, driver, log), null);
    // A folder where -2.db's lock would be, the symlink gone: passed over, never a throw.
    rmSync(spareIndexPath(first, 2));
    mkdirSync(`${spareIndexPath(first, 2)}.lock`);
    assert.equal(takeSpareIndex(first, driver, log), null);
    assert.match(warnings.join('\n'), /key-2\.db is passed over: .*key-2\.db\.lock is not a regular file/);
    rmSync(`${spareIndexPath(first, 2)}.lock`, { recursive: true });
    const second = takeSpareIndex(first, driver, log);
    assert.equal(second?.dbFile, spareIndexPath(first, 2));
    second!.lock.release();
  } finally {
    other.kill();
    cleanup();
  }
});

test('a lock that is a FIFO is no lock of ours, at once (its read waited for a writer: the start hung)', { skip: process.platform === 'win32' }, () => {
  const { path: dir, cleanup } = tempDir('folder-mcp-spare-');
  try {
    const db = join(dir, 'key.db');
    execFileSync('mkfifo', [`${db}.lock`]);
    // In a process of its own, with a deadline: a read that blocks would block this one's test runner for good.
    const lockModule = new URL('../../src/index/lock.ts', import.meta.url).href;
    const script = `const { acquireDbLock } = await import(${JSON.stringify(lockModule)}); console.log(JSON.stringify(acquireDbLock(${JSON.stringify(db)})));`;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.signal, null, 'the lock was read without blocking');
    assert.deepEqual(JSON.parse(run.stdout), { acquired: false, heldBy: null, foreign: true }, run.stderr);
  } finally {
    cleanup();
  }
});
