// The look-ups safe-open and safe-write share (src/content/file-facts.ts):
// the kind of real entries, and which failures each caller's Absence turns
// into "not there" and which it throws. Real files, links, FIFOs, sockets.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { errnoCode } from '../../src/errno.ts';
import {
  kernelPathOf,
  kindOf,
  lstatOrNull,
  realOrNull,
  refuse,
  statOrNull,
  statSyncOrNull,
  type Absence,
  type FileKind,
} from '../../src/content/file-facts.ts';
import { tempDir } from '../basics.ts';

const NOTHING: Absence = { absent: () => true };
const NO_ENTRY: Absence = { absent: (error) => errnoCode(error) === 'ENOENT' };
const WRAPPED: Absence = { absent: (error) => errnoCode(error) === 'ENOENT', fail: (error) => new Error(`wrapped ${errnoCode(error)}`) };

describe('file facts on a real folder', () => {
  let dir: ReturnType<typeof tempDir>;
  let server: Server | undefined;
  before(async () => {
    dir = tempDir('folder-mcp-facts-');
    writeFileSync(join(dir.path, 'f.txt'), 'x');
    mkdirSync(join(dir.path, 'd'));
    symlinkSync('f.txt', join(dir.path, 'link'));
    symlinkSync('link-b', join(dir.path, 'link-a'));
    symlinkSync('link-a', join(dir.path, 'link-b'));
    if (process.platform !== 'win32') {
      execFileSync('mkfifo', [join(dir.path, 'fifo')]);
      const listening = createServer();
      await new Promise<void>((resolve) => listening.listen(join(dir.path, 'sock'), resolve));
      server = listening;
    }
  });
  after(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    dir.cleanup();
  });

  const kinds: Array<[string, FileKind]> = [
    ['f.txt', 'file'],
    ['d', 'directory'],
    ['link', 'symlink'],
    ['fifo', 'FIFO'],
    ['sock', 'socket'],
    ['/dev/null', 'character device'],
  ];
  for (const [name, kind] of kinds) {
    test(`kindOf(lstat ${name}) is ${kind}`, { skip: process.platform === 'win32' && name !== 'f.txt' && name !== 'd' && 'POSIX entries' }, () => {
      assert.equal(kindOf(lstatSync(name.startsWith('/') ? name : join(dir.path, name), { bigint: true })), kind);
    });
  }

  test('realOrNull: the real path; null for what is gone or loops when the absence says so', () => {
    assert.equal(realOrNull(join(dir.path, 'link'), NO_ENTRY), join(dir.path, 'f.txt'));
    assert.equal(realOrNull(join(dir.path, 'gone'), NO_ENTRY), null);
    assert.equal(realOrNull(join(dir.path, 'link-a'), NOTHING), null, 'a loop (ELOOP) is nowhere to a caller that says so');
    assert.throws(() => realOrNull(join(dir.path, 'link-a'), NO_ENTRY), (error) => errnoCode(error) === 'ELOOP', 'else it is thrown as it is');
    assert.throws(() => realOrNull(join(dir.path, 'f.txt', 'below'), WRAPPED), /wrapped ENOTDIR/, 'or as the caller makes it');
  });

  test('stat and lstat: null for a missing name, the stats otherwise', async () => {
    const missing = join(dir.path, 'gone');
    assert.equal(statSyncOrNull(missing, NO_ENTRY), null);
    assert.equal(await statOrNull(missing, NO_ENTRY), null);
    assert.equal(await lstatOrNull(missing, NO_ENTRY), null);
    assert.equal(kindOf((await statOrNull(join(dir.path, 'link'), NO_ENTRY))!), 'file', 'stat follows the link');
    assert.equal(kindOf((await lstatOrNull(join(dir.path, 'link'), NO_ENTRY))!), 'symlink', 'lstat does not');
    assert.equal(typeof statSyncOrNull(join(dir.path, 'f.txt'), NO_ENTRY)?.ino, 'bigint');
    await assert.rejects(lstatOrNull(join(dir.path, 'f.txt', 'below'), NO_ENTRY), (error) => errnoCode(error) === 'ENOTDIR');
  });

  test('kernelPathOf: the kernel\'s name of a descriptor on Linux, null elsewhere', { skip: process.platform !== 'linux' && 'Linux /proc' }, async () => {
    const handle = await open(join(dir.path, 'f.txt'));
    try {
      assert.equal(kernelPathOf(handle.fd), join(dir.path, 'f.txt'));
    } finally {
      await handle.close();
    }
    assert.equal(kernelPathOf(1_000_000), null, 'no such descriptor');
  });
});

describe('refuse', () => {
  test('a yes or no judgement passes; a refusal throws the caller\'s error', () => {
    const toError = (refusal: { reason: string; message: string }) => new Error(`${refusal.reason}: ${refusal.message}`);
    refuse({ ok: true }, toError);
    refuse(null, toError);
    assert.throws(() => refuse({ ok: false, reason: 'not-found', message: 'gone' }, toError), /^Error: not-found: gone$/);
  });
});
