// The decision behind every read of a served file (src/content/safe-open.ts):
// a table over what open, fstat and the look-up of the descriptor saw, then
// openVerified and readOpenedContent on real files, links, FIFOs and sockets.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ContentError, readFileContent, readOpenedContent, representationSize } from '../../src/content/read.ts';
import type { FileFacts, FileKind } from '../../src/content/file-facts.ts';
import { judgeOpen, judgePath, openVerified, verifyDescriptor, type OpenFacts } from '../../src/content/safe-open.ts';
import { makeRoot } from '../../src/uri.ts';
import { tempDir } from '../basics.ts';

const roots = [makeRoot('/srv/app'), makeRoot('/home/u/notes')];
const file = (ino: bigint, kind: FileKind = 'file', dev = 1n): FileFacts => ({ dev, ino, kind });

describe('judgePath: may an index path be opened', () => {
  const cases: Array<[string, string, string | null, 'ok' | 'not-found']> = [
    ['the path is its own real path, in a root', '/srv/app/sub/s.txt', '/srv/app/sub/s.txt', 'ok'],
    ['in the second root', '/home/u/notes/a.md', '/home/u/notes/a.md', 'ok'],
    ['vanished (realpath failed)', '/srv/app/sub/s.txt', null, 'not-found'],
    ['a folder became a link out', '/srv/app/sub/s.txt', '/etc/s.txt', 'not-found'],
    ['a folder became a link inside the root', '/srv/app/sub/s.txt', '/srv/app/other/s.txt', 'not-found'],
    ['a folder became a link to /proc/self', '/srv/app/sub/environ', '/proc/12345/environ', 'not-found'],
    ['sibling-prefix folder', '/srv/app-secrets/k', '/srv/app-secrets/k', 'not-found'],
    ['a path outside every root, even when real', '/etc/passwd', '/etc/passwd', 'not-found'],
    ['an unnormalised path fails closed', '/srv/app/../etc/passwd', '/srv/app/../etc/passwd', 'not-found'],
  ];
  for (const [name, path, real, want] of cases) {
    test(name, () => {
      const verdict = judgePath(path, real, roots);
      assert.equal(verdict.ok ? 'ok' : verdict.reason, want);
    });
  }
});

describe('judgeOpen: is the open descriptor the file the index meant', () => {
  const path = '/srv/app/sub/s.txt';
  const base: OpenFacts = { path, opened: file(7n), locatedPath: path, located: file(7n) };
  const cases: Array<[string, Partial<OpenFacts>, 'ok' | 'not-found' | 'unreadable', RegExp?]> = [
    ['the regular file at its own path', {}, 'ok'],
    ['descriptor found outside the roots (a folder swapped for a link)', { locatedPath: '/home/x/.ssh/s.txt' }, 'not-found'],
    ['descriptor found elsewhere in the root', { locatedPath: '/srv/app/other/s.txt' }, 'not-found'],
    ['descriptor of a deleted file (kernel name says so)', { locatedPath: `${path} (deleted)` }, 'not-found'],
    ['look-up failed', { locatedPath: null, located: null }, 'not-found'],
    ['swapped between open and look-up: other inode', { located: file(8n) }, 'not-found'],
    ['swapped between open and look-up: other device', { located: file(7n, 'file', 2n) }, 'not-found'],
    ['a FIFO', { opened: file(7n, 'FIFO'), located: file(7n, 'FIFO') }, 'unreadable', /FIFO/],
    ['a character device (/dev/null-like)', { opened: file(7n, 'character device'), located: file(7n, 'character device') }, 'unreadable', /character device/],
    ['a block device', { opened: file(7n, 'block device'), located: file(7n, 'block device') }, 'unreadable', /block device/],
    ['a socket that opened', { opened: file(7n, 'socket'), located: file(7n, 'socket') }, 'unreadable', /socket/],
    ['a folder where the document was', { opened: file(7n, 'directory'), located: file(7n, 'directory') }, 'not-found'],
    ['a FIFO outside the roots is not-found, not named', { opened: file(7n, 'FIFO'), locatedPath: '/tmp/f', located: file(7n, 'FIFO') }, 'not-found'],
    ['open failed: ENOENT', { opened: null, openError: 'ENOENT', locatedPath: null, located: null }, 'not-found'],
    ['open failed: ELOOP (the file became a symlink)', { opened: null, openError: 'ELOOP', locatedPath: null, located: null }, 'not-found'],
    ['open failed: ENXIO on our socket', { opened: null, openError: 'ENXIO', located: file(7n, 'socket') }, 'unreadable', /socket/],
    ['open failed: ENXIO on a socket outside', { opened: null, openError: 'ENXIO', locatedPath: '/run/x.sock', located: file(7n, 'socket') }, 'not-found'],
    ['open failed: EACCES on our file', { opened: null, openError: 'EACCES', located: file(7n) }, 'unreadable', /EACCES/],
    ['open failed: EACCES outside says nothing', { opened: null, openError: 'EACCES', locatedPath: '/root/k', located: file(7n) }, 'not-found'],
  ];
  for (const [name, change, want, message] of cases) {
    test(name, () => {
      const verdict = judgeOpen({ ...base, ...change }, roots);
      assert.equal(verdict.ok ? 'ok' : verdict.reason, want);
      if (message && !verdict.ok) assert.match(verdict.message, message);
    });
  }
});

describe('openVerified on a real folder', () => {
  let dir: ReturnType<typeof tempDir>;
  let rootPath: string;
  let outside: string;
  let realRoots: ReturnType<typeof makeRoot>[];
  const reason = async (promise: Promise<unknown>): Promise<string> => {
    try {
      await promise;
      return 'ok';
    } catch (error) {
      assert.ok(error instanceof ContentError, String(error));
      return `${error.reason}: ${error.message}`;
    }
  };

  before(() => {
    dir = tempDir();
    const base = realpathSync(dir.path);
    rootPath = join(base, 'root');
    outside = join(base, 'outside');
    mkdirSync(join(rootPath, 'sub'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(rootPath, 'sub/s.txt'), 'inside\n');
    writeFileSync(join(outside, 's.txt'), 'OUTSIDE SECRET\n');
    realRoots = [makeRoot(rootPath)];
  });
  after(() => dir.cleanup());

  test('reads a regular file', async () => {
    const content = await readFileContent(join(rootPath, 'sub/s.txt'), 1000, realRoots);
    assert.equal(content.text, 'inside\n');
  });

  test('a folder swapped for a link out of the root is not found, and nothing outside is read', async () => {
    const path = join(rootPath, 'sub/s.txt');
    renameSync(join(rootPath, 'sub'), join(rootPath, 'sub.moved'));
    symlinkSync(outside, join(rootPath, 'sub'));
    try {
      assert.match(await reason(readFileContent(path, 1000, realRoots)), /^not-found/);
      assert.match(await reason(openVerified(path, realRoots)), /^not-found/);
    } finally {
      execFileSync('rm', [join(rootPath, 'sub')]);
      renameSync(join(rootPath, 'sub.moved'), join(rootPath, 'sub'));
    }
  });

  test('a descriptor opened through a folder link (the swap won the race against the first check) is refused', async () => {
    // What openVerified's check before opening cannot see: the swap lands between it and open.
    // The descriptor is then outside; verifyDescriptor must say so.
    const path = join(rootPath, 'sub/s.txt');
    renameSync(join(rootPath, 'sub'), join(rootPath, 'sub.moved'));
    symlinkSync(outside, join(rootPath, 'sub'));
    const handle = await open(path, 'r');
    try {
      // And swapped back before the check: the path looks right again, the descriptor is still outside.
      execFileSync('rm', [join(rootPath, 'sub')]);
      renameSync(join(rootPath, 'sub.moved'), join(rootPath, 'sub'));
      assert.match(await reason(verifyDescriptor(handle, path, realRoots)), /^not-found/);
    } finally {
      await handle.close();
    }
    const good = await open(path, 'r');
    try {
      assert.equal(await reason(verifyDescriptor(good, path, realRoots)), 'ok');
    } finally {
      await good.close();
    }
  });

  test('the file itself swapped for a link is not found', async () => {
    const path = join(rootPath, 'link.txt');
    symlinkSync(join(outside, 's.txt'), path);
    assert.match(await reason(readFileContent(path, 1000, realRoots)), /^not-found/);
  });

  test('a FIFO is refused at once with a clear error, never opened for a blocking read', async () => {
    const path = join(rootPath, 'fifo.txt');
    execFileSync('mkfifo', [path]);
    assert.match(await reason(readFileContent(path, 1000, realRoots)), /^unreadable: .*FIFO/);
  });

  test('a socket is refused with a clear error', async () => {
    const path = join(rootPath, 'sock.txt');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      assert.match(await reason(readFileContent(path, 1000, realRoots)), /^unreadable: .*socket/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('a path outside the roots is not found even though it exists', async () => {
    assert.match(await reason(readFileContent(join(outside, 's.txt'), 1000, realRoots)), /^not-found/);
  });

  test("as-opened reads the size fstat saw: a file growing past the limit while read is not refused; to-end refuses it", async () => {
    const path = join(rootPath, 'growing.bin');
    writeFileSync(path, Buffer.alloc(90, 1));
    const first = await openVerified(path, realRoots);
    const second = await openVerified(path, realRoots);
    try {
      appendFileSync(path, Buffer.alloc(50, 2)); // now 140 bytes, over the limit of 100
      const asOpened = await readOpenedContent(first, 100, 'as-opened');
      assert.equal(asOpened.bytes.length, 90);
      await assert.rejects(readOpenedContent(second, 100, 'to-end'), /grew past the read limit/);
    } finally {
      await first.handle.close();
      await second.handle.close();
    }
  });

  test('representationSize of UTF-16 text is its UTF-8 bytes, not its bytes on disk', async () => {
    const path = join(rootPath, 'utf16.txt');
    const text = 'héllo wörld\n';
    writeFileSync(path, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]));
    const content = await readFileContent(path, 1000, realRoots);
    assert.equal(content.text, text);
    assert.equal(representationSize(content), Buffer.byteLength(text));
    assert.notEqual(representationSize(content), content.bytes.length);
  });
});
