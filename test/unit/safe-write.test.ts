// The write path of the write tools (src/content/safe-write.ts): the pure
// judgements as tables, then writeFileSafely, makeDirectory and moveSafely
// on real temp folders with real symlinks, FIFOs and hard links. Every row
// also checks that nothing appeared outside the served folder.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import {
  judgeReplace,
  judgeTarget,
  makeDirectory,
  moveSafely,
  NEW_FILE_MODE,
  writeFileSafely,
  type WriteReason,
} from '../../src/content/safe-write.ts';
import type { FileKind } from '../../src/content/file-facts.ts';
import { makeRoot, type Root } from '../../src/uri.ts';
import { tempDir, writeReason as reason, writeSandbox } from '../basics.ts';

describe('judgeTarget: may this path be written', () => {
  const roots = [makeRoot('/srv/app'), makeRoot('/home/u/notes')];
  const rows: Array<[string, string, 'ok' | WriteReason]> = [
    ['a file in a root', '/srv/app/a.txt', 'ok'],
    ['deep in the second root', '/home/u/notes/x/y/z.md', 'ok'],
    ['outside every root', '/etc/passwd', 'not-found'],
    ['a sibling-prefix folder', '/srv/app-secrets/k', 'not-found'],
    ['an unnormalised path fails closed', '/srv/app/../etc/passwd', 'not-found'],
    ['a root itself', '/srv/app', 'refused'],
    ['inside .git', '/srv/app/.git/config', 'refused'],
    ['.git itself', '/srv/app/.git', 'refused'],
    ['a nested node_modules', '/srv/app/web/node_modules/x/index.js', 'refused'],
    ['a name that only starts like them', '/srv/app/.gitignore', 'ok'],
    ['node_modules_old is another name', '/srv/app/node_modules_old/a', 'ok'],
    ['a name with a newline', '/srv/app/a\nb.txt', 'ok'],
    ['a lock file\'s name (never listed, removed once 30 s old)', '/srv/app/d/.folder-mcp-lock-0123456789abcdef01234567', 'refused'],
    ['a lock breaker\'s name', '/srv/app/.folder-mcp-lock-0123-break', 'refused'],
    ['a folder of such a name', '/srv/app/.Folder-MCP-Lock-x/a.txt', 'refused'],
    ['a name that only contains it', '/srv/app/my.folder-mcp-lock-notes.txt', 'ok'],
  ];
  for (const [why, path, want] of rows) {
    test(why, () => {
      const verdict = judgeTarget(path, roots);
      assert.equal(verdict.ok ? 'ok' : verdict.reason, want);
    });
  }
});

describe('judgeReplace: may an existing entry be replaced', () => {
  const rows: Array<[FileKind, number, 'ok' | RegExp]> = [
    ['file', 1, 'ok'],
    ['file', 2, /2 hard links/],
    ['symlink', 1, /symlink/],
    ['FIFO', 1, /FIFO/],
    ['socket', 1, /socket/],
    ['character device', 1, /it is a device, not a regular file/],
    ['block device', 1, /it is a device, not a regular file/],
    ['unknown', 1, /not a regular file/],
    ['directory', 2, /folder/],
  ];
  for (const [kind, nlink, want] of rows) {
    test(`${kind}, ${nlink} link(s)`, () => {
      const refusal = judgeReplace({ kind, nlink });
      if (want === 'ok') assert.equal(refusal, null);
      else assert.match(refusal?.message ?? '', want);
    });
  }
});

/** A served folder and, beside it, a folder that is not served; both real paths. */
let base: ReturnType<typeof tempDir>;
let served: string;
let outside: string;
let roots: Root[];

beforeEach(() => ({ base, served, outside, roots } = writeSandbox('folder-mcp-write-')));

afterEach(() => base.cleanup());

/** Outside is as it was: its secret unchanged, and no file or folder but those a test made there itself. */
function assertOutsideUntouched(): void {
  const names = readdirSync(outside, { recursive: true }).map(String).sort();
  assert.deepEqual(names.filter((name) => name !== 'deep'), ['secret.txt']);
  assert.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'secret\n');
}

/** No temp file was left anywhere in the served folder. */
function assertNoTempFiles(dir = served): void {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    assert.doesNotMatch(entry.name, /\.folder-mcp-.*\.tmp$/, `temp file left: ${entry.name}`);
  }
}


const mkfifo = (path: string) => execFileSync('mkfifo', [path]);

describe('writeFileSafely on real folders', () => {
  const write = (rel: string, data = 'new\n', options: { createOnly?: boolean; maxBytes?: number } = {}) =>
    writeFileSafely(join(served, rel), Buffer.from(data), roots, { maxBytes: options.maxBytes ?? 1024, createOnly: options.createOnly });

  const rows: Array<[string, (() => void) | null, string, 'ok' | WriteReason, { createOnly?: boolean; maxBytes?: number }?]> = [
    ['a new file', null, 'sub/new.txt', 'ok'],
    ['replacing a file', null, 'sub/a.txt', 'ok'],
    ['a name with a newline and a tab', null, 'sub/two\nlines\t.txt', 'ok'],
    ['the target is a symlink to a file outside', () => symlinkSync(join(outside, 'secret.txt'), join(served, 'sub/link.txt')), 'sub/link.txt', 'refused'],
    ['the target is a dangling symlink to outside', () => symlinkSync(join(outside, 'nothing.txt'), join(served, 'sub/dangling.txt')), 'sub/dangling.txt', 'refused'],
    ['the parent folder is a symlink to outside', () => symlinkSync(outside, join(served, 'out')), 'out/new.txt', 'not-found'],
    ['a grandparent folder is a symlink to outside', () => {
      mkdirSync(join(outside, 'deep'));
      symlinkSync(outside, join(served, 'out'));
    }, 'out/deep/new.txt', 'not-found'],
    ['the target is a FIFO', () => mkfifo(join(served, 'sub/fifo')), 'sub/fifo', 'refused'],
    ['the target is hard-linked from outside', () => linkSync(join(outside, 'secret.txt'), join(served, 'sub/hard.txt')), 'sub/hard.txt', 'refused'],
    ['the target is a folder', null, 'sub', 'refused'],
    ['the parent folder is missing', null, 'nope/new.txt', 'not-found'],
    ['a parent is a file', null, 'sub/a.txt/new.txt', 'not-found'],
    ['inside .git', () => mkdirSync(join(served, '.git')), '.git/config', 'refused'],
    ['create_only on an existing file', null, 'sub/a.txt', 'exists', { createOnly: true }],
    ['create_only on a new file', null, 'sub/b.txt', 'ok', { createOnly: true }],
    ['over the size limit', null, 'sub/big.txt', 'too-large', { maxBytes: 2 }],
  ];
  for (const [why, setup, rel, want, options] of rows) {
    test(why, async () => {
      setup?.();
      const before = existsSync(join(served, rel)) && statSync(join(served, rel)).isFile() ? readFileSync(join(served, rel), 'utf8') : null;
      assert.equal(await reason(write(rel, 'new\n', options)), want);
      if (want === 'ok') assert.equal(readFileSync(join(served, rel), 'utf8'), 'new\n');
      else if (before !== null && !rel.includes('fifo')) assert.equal(readFileSync(join(served, rel), 'utf8'), before);
      assertOutsideUntouched();
      assertNoTempFiles();
    });
  }

  test('a replaced file keeps its mode; a new one gets NEW_FILE_MODE', async () => {
    chmodSync(join(served, 'sub/a.txt'), 0o750);
    await write('sub/a.txt');
    assert.equal(statSync(join(served, 'sub/a.txt')).mode & 0o777, 0o750);
    await write('sub/fresh.txt');
    assert.equal(statSync(join(served, 'sub/fresh.txt')).mode & 0o777, NEW_FILE_MODE);
  });

  test('replacing is a rename: a reader holding the old file keeps the old bytes', async () => {
    const held = (await import('node:fs/promises')).open(join(served, 'sub/a.txt'));
    const handle = await held;
    try {
      await write('sub/a.txt', 'replaced\n');
      assert.equal((await handle.readFile()).toString(), 'a\n');
      assert.equal(readFileSync(join(served, 'sub/a.txt'), 'utf8'), 'replaced\n');
    } finally {
      await handle.close();
    }
  });
});

describe('makeDirectory on real folders', () => {
  test('creates the missing folders, outermost first; an existing one is no error', async () => {
    assert.deepEqual(await makeDirectory(join(served, 'x/y/z'), roots, true), [join(served, 'x'), join(served, 'x/y'), join(served, 'x/y/z')]);
    assert.ok(statSync(join(served, 'x/y/z')).isDirectory());
    assert.deepEqual(await makeDirectory(join(served, 'x/y'), roots, true), []);
  });
  test('without parents, a missing parent is refused', async () => {
    assert.equal(await reason(makeDirectory(join(served, 'p/q'), roots, false)), 'not-found');
    assert.equal(existsSync(join(served, 'p')), false);
  });
  test('through a symlinked folder to outside: nothing created', async () => {
    symlinkSync(outside, join(served, 'out'));
    assert.equal(await reason(makeDirectory(join(served, 'out/new'), roots, true)), 'not-found');
    assertOutsideUntouched();
  });
  test('a file on the path', async () => {
    assert.equal(await reason(makeDirectory(join(served, 'sub/a.txt/x'), roots, true)), 'refused');
    assert.equal(await reason(makeDirectory(join(served, 'sub/a.txt'), roots, true)), 'exists');
  });
  test('node_modules is never created', async () => {
    assert.equal(await reason(makeDirectory(join(served, 'web/node_modules/x'), roots, true)), 'refused');
    assert.equal(existsSync(join(served, 'web')), false);
  });
});

describe('moveSafely on real folders', () => {
  const move = (from: string, to: string, overwrite = false) => moveSafely(join(served, from), join(served, to), roots, { overwrite });
  test('a file, then a folder with what is in it', async () => {
    assert.deepEqual(await move('sub/a.txt', 'b.txt'), { kind: 'file', replaced: false });
    assert.equal(readFileSync(join(served, 'b.txt'), 'utf8'), 'a\n');
    assert.equal(existsSync(join(served, 'sub/a.txt')), false);
    writeFileSync(join(served, 'sub/c.txt'), 'c\n');
    assert.deepEqual(await move('sub', 'moved'), { kind: 'directory', replaced: false });
    assert.equal(readFileSync(join(served, 'moved/c.txt'), 'utf8'), 'c\n');
  });
  test('onto an existing file: refused unless overwrite, then replaced', async () => {
    writeFileSync(join(served, 'b.txt'), 'b\n');
    assert.equal(await reason(move('sub/a.txt', 'b.txt')), 'exists');
    assert.equal(readFileSync(join(served, 'b.txt'), 'utf8'), 'b\n');
    assert.equal(readFileSync(join(served, 'sub/a.txt'), 'utf8'), 'a\n');
    assert.deepEqual(await move('sub/a.txt', 'b.txt', true), { kind: 'file', replaced: true });
    assert.equal(readFileSync(join(served, 'b.txt'), 'utf8'), 'a\n');
  });
  test('a folder never replaces anything, even with overwrite', async () => {
    mkdirSync(join(served, 'other'));
    assert.equal(await reason(move('sub', 'other', true)), 'refused');
    writeFileSync(join(served, 'f.txt'), 'f\n');
    assert.equal(await reason(move('sub', 'f.txt', true)), 'refused');
  });
  test('overwrite onto a hard-linked file or a symlink is refused', async () => {
    linkSync(join(outside, 'secret.txt'), join(served, 'hard.txt'));
    assert.equal(await reason(move('sub/a.txt', 'hard.txt', true)), 'refused');
    symlinkSync(join(outside, 'secret.txt'), join(served, 'link.txt'));
    assert.equal(await reason(move('sub/a.txt', 'link.txt', true)), 'refused');
    assertOutsideUntouched();
  });
  test('into itself, a root, a symlink, a FIFO, or through a symlinked folder: refused', async () => {
    mkdirSync(join(served, 'sub/inner'));
    assert.equal(await reason(move('sub', 'sub/inner/sub')), 'refused');
    assert.equal(await reason(moveSafely(served, join(served, 'sub/x'), roots)), 'refused');
    symlinkSync(join(outside, 'secret.txt'), join(served, 'link.txt'));
    assert.equal(await reason(move('link.txt', 'moved-link.txt')), 'refused');
    mkfifo(join(served, 'fifo'));
    assert.equal(await reason(move('fifo', 'moved-fifo')), 'refused');
    symlinkSync(outside, join(served, 'out'));
    assert.equal(await reason(move('sub/a.txt', 'out/a.txt')), 'not-found');
    assert.equal(await reason(moveSafely(join(served, 'sub/a.txt'), join(outside, 'a.txt'), roots)), 'not-found');
    assertOutsideUntouched();
    assert.equal(readFileSync(join(served, 'sub/a.txt'), 'utf8'), 'a\n');
  });
});
