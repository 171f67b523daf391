// Writes never lose a change (issue 33), at the module (src/content/safe-write.ts):
// an edit's write (`expect`) refuses a file another program changed after
// the read, however late before the rename; a write that lands on the old
// file between the last look and the rename is found after it, through the
// descriptor held since the read, and kept (appended after the edit, or the
// old file's version saved beside). And what would surprise is refused or
// kept: a read-only file, the owner and group, setuid and setgid, a move
// that would carry a served folder along. Each exact moment is a hook.
import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import {
  identityOf,
  judgeMoveSource,
  judgeReadOnly,
  keptNameFor,
  moveSafely,
  writeFileSafely,
  type WriteHooks,
  type WriteOutcome,
} from '../../src/content/safe-write.ts';
import { makeRoot, type Root } from '../../src/uri.ts';
import { tempDir, writeReason as reason, writeSandbox } from '../basics.ts';

let base: ReturnType<typeof tempDir>;
let served: string;
let roots: Root[];

beforeEach(() => ({ base, served, roots } = writeSandbox('folder-mcp-outside-')));
afterEach(() => base.cleanup());

const file = () => join(served, 'sub/a.txt');

/** An edit's write of `data` over sub/a.txt, with `expect` from a read made now; the handle closed after. */
async function editWrite(data: string, hooks: WriteHooks = {}): Promise<WriteOutcome> {
  const handle = await open(file(), 'r');
  try {
    const identity = identityOf(handle);
    const content = await handle.readFile();
    return await writeFileSafely(file(), Buffer.from(data), roots, { maxBytes: 1 << 20, expect: { identity, handle, content }, hooks });
  } finally {
    await handle.close();
  }
}


/** Another program's write to the old file after the edit's last look: its first byte made 'X', through a path open. */
function overwriteFirstByte(): void {
  const fd = openSync(file(), 'r+');
  writeSync(fd, 'X', 0);
  closeSync(fd);
}

const tempFiles = () => readdirSync(join(served, 'sub')).filter((name) => name.startsWith('.folder-mcp-'));

describe('an edit never overwrites an outside write in silence', () => {
  test('an append after the temp file is written (the look before the rename used to compare the inode only): refused, the append kept', async () => {
    const outcome = reason(editWrite('edited\n', { beforeRename: () => appendFileSync(file(), 'outside\n') }));
    assert.equal(await outcome, 'changed');
    assert.equal(readFileSync(file(), 'utf8'), 'a\noutside\n');
    assert.deepEqual(tempFiles(), []);
  });

  test('a same-length write with its mtime put back: refused (ctime and bytes)', async () => {
    const before = statSync(file());
    const outcome = reason(
      editWrite('edited\n', {
        beforeRename: () => {
          writeFileSync(file(), 'b\n');
          utimesSync(file(), before.atime, before.mtime);
        },
      }),
    );
    assert.equal(await outcome, 'changed');
    assert.equal(readFileSync(file(), 'utf8'), 'b\n');
  });

  test('an append that lands on the old file after the last look: found after the rename and appended after the edit', async () => {
    const outcome = await editWrite('edited\n', {
      // A process that opened the file by path before the rename and writes to it now: the old file.
      afterLastLook: () => appendFileSync(file(), 'outside\n'),
    });
    assert.deepEqual(outcome.outside, { kind: 'appended', bytes: 8 });
    assert.equal(readFileSync(file(), 'utf8'), 'edited\noutside\n');
  });

  test('an append that would take the file past --max-write-bytes is kept beside, copied in chunks, not appended (issue 44: 1 GiB appended)', async () => {
    const handle = await open(file(), 'r');
    let outcome: WriteOutcome;
    const big = 3 * 1024 * 1024; // three times the limit below: past it, nothing is read whole
    try {
      const identity = identityOf(handle);
      const content = await handle.readFile();
      outcome = await writeFileSafely(file(), Buffer.from('edited\n'), roots, {
        maxBytes: 1024 * 1024,
        expect: { identity, handle, content },
        hooks: { afterLastLook: () => appendFileSync(file(), Buffer.alloc(big, 0x61)) },
      });
    } finally {
      await handle.close();
    }
    assert.equal(outcome.outside?.kind, 'kept');
    const kept = outcome.outside!.kind === 'kept' ? outcome.outside! : undefined;
    assert.equal(kept?.tooLarge, true);
    assert.equal(kept?.bytes, 2 + big);
    assert.equal(statSync(kept!.keptPath).size, 2 + big, 'the whole old file, beside');
    assert.equal(readFileSync(file(), 'utf8'), 'edited\n', 'the edit, with nothing appended');
  });

  test('an append by a descriptor opened before the rename, written after it: kept too', async () => {
    let fd = -1;
    const outcome = await editWrite('edited\n', {
      afterLastLook: () => {
        fd = openSync(file(), 'a');
      },
      // No hook after the rename: the write goes to the old file as the rename returns, before the look through the held descriptor.
    });
    // The descriptor was opened before the rename and has written nothing yet: nothing to keep.
    assert.equal(outcome.outside, undefined);
    writeSync(fd, 'late\n');
    closeSync(fd);
    // What docs/tools.md says remains: a descriptor held across the rename writes to the old file.
    assert.equal(readFileSync(file(), 'utf8'), 'edited\n');
  });

  test('any other change in that window: the old file as the other program left it is saved beside, the edit stays', async () => {
    const outcome = await editWrite('edited\n', { afterLastLook: overwriteFirstByte });
    assert.equal(outcome.outside?.kind, 'kept');
    const kept = outcome.outside!.kind === 'kept' ? outcome.outside!.keptPath : '';
    assert.match(kept, /\/sub\/a\.txt\.folder-mcp-kept-[0-9a-f]{8}$/);
    assert.equal(readFileSync(kept, 'utf8'), 'X\n');
    assert.equal(readFileSync(file(), 'utf8'), 'edited\n');
  });

  test('a file whose name is near the longest a folder holds still gets its kept copy (it failed with ENAMETOOLONG and the other version was lost)', async () => {
    const long = join(served, 'sub', `${'n'.repeat(236)}.txt`);
    writeFileSync(long, 'a\n');
    const handle = await open(long, 'r');
    let outcome: WriteOutcome;
    try {
      const identity = identityOf(handle);
      const content = await handle.readFile();
      outcome = await writeFileSafely(long, Buffer.from('edited\n'), roots, {
        maxBytes: 1 << 20,
        expect: { identity, handle, content },
        hooks: {
          afterLastLook: () => {
            const fd = openSync(long, 'r+');
            writeSync(fd, 'X', 0);
            closeSync(fd);
          },
        },
      });
    } finally {
      await handle.close();
    }
    assert.equal(outcome.outside?.kind, 'kept');
    const kept = outcome.outside!.kind === 'kept' ? outcome.outside!.keptPath : '';
    assert.equal(Buffer.byteLength(kept.slice(kept.lastIndexOf('/') + 1)), 255);
    assert.equal(readFileSync(kept, 'utf8'), 'X\n');
    assert.equal(readFileSync(long, 'utf8'), 'edited\n');
  });

  test('a look after the rename that fails says the file was changed and the look could not be made, not that another program wrote', async () => {
    const handle = await open(file(), 'r');
    const identity = identityOf(handle);
    const content = await handle.readFile();
    // The descriptor held since the read is gone when the old file is looked at through it.
    const write = writeFileSafely(file(), Buffer.from('edited\n'), roots, {
      maxBytes: 1 << 20,
      expect: { identity, handle, content },
      hooks: { afterLastLook: () => handle.close() },
    });
    await assert.rejects(write, (error: Error & { reason?: string }) => {
      assert.equal(error.reason, 'not-checked');
      assert.match(error.message, /could not be checked \(/);
      assert.doesNotMatch(error.message, /another program wrote to it/);
      return true;
    });
    assert.equal(readFileSync(file(), 'utf8'), 'edited\n', 'the file was changed, as the error says');
  });

  test('keptNameFor: the name, cut at a character when it must be, and the tag, in at most 255 bytes (pure)', () => {
    const cases: [name: string, expected: string][] = [
      ['a.txt', 'a.txt.folder-mcp-kept-0a1b2c3d'],
      ['n'.repeat(230), `${'n'.repeat(230)}.folder-mcp-kept-0a1b2c3d`],
      ['n'.repeat(231), `${'n'.repeat(230)}.folder-mcp-kept-0a1b2c3d`],
      ['n'.repeat(255), `${'n'.repeat(230)}.folder-mcp-kept-0a1b2c3d`],
      // Two bytes a character: 115 of them are 230 bytes.
      ['é'.repeat(127), `${'é'.repeat(115)}.folder-mcp-kept-0a1b2c3d`],
      // Four bytes and two UTF-16 units a character: never half of one.
      [`n${'😀'.repeat(63)}`, `n${'😀'.repeat(57)}.folder-mcp-kept-0a1b2c3d`],
    ];
    for (const [name, expected] of cases) {
      const kept = keptNameFor(name, '0a1b2c3d');
      assert.equal(kept, expected, name);
      assert.ok(Buffer.byteLength(kept) <= 255);
      assert.equal(Buffer.from(kept).toString(), kept, 'no lone surrogate (it would not survive UTF-8)');
    }
  });

  test('keptNameFor under a shorter limit (eCryptfs: 143 bytes), and the tag alone when no part of the name fits (pure)', () => {
    const cases: [name: string, nameMax: number, expected: string][] = [
      ['a.txt', 143, 'a.txt.folder-mcp-kept-0a1b2c3d'],
      ['n'.repeat(200), 143, `${'n'.repeat(118)}.folder-mcp-kept-0a1b2c3d`],
      [`n${'😀'.repeat(40)}`, 143, `n${'😀'.repeat(29)}.folder-mcp-kept-0a1b2c3d`],
      ['a.txt', 0, '.folder-mcp-kept-0a1b2c3d'],
      ['n'.repeat(255), 0, '.folder-mcp-kept-0a1b2c3d'],
    ];
    for (const [name, nameMax, expected] of cases) assert.equal(keptNameFor(name, '0a1b2c3d', nameMax), expected, `${name} in ${nameMax}`);
  });

  test('the kept copy is the file owner\'s, with its group and permission bits (issue 44: it was root:root 0640)', { skip: process.getuid?.() !== 0 && 'needs root' }, async () => {
    chownSync(file(), 4242, 4343);
    chmodSync(file(), 0o640);
    const outcome = await editWrite('edited\n', { afterLastLook: overwriteFirstByte });
    assert.equal(outcome.outside?.kind, 'kept');
    const kept = outcome.outside!.kind === 'kept' ? outcome.outside!.keptPath : '';
    const stats = statSync(kept);
    assert.deepEqual([stats.uid, stats.gid, stats.mode & 0o7777], [4242, 4343, 0o640]);
  });

  test('the kept copy has the file\'s permission bits, never its setuid', async () => {
    chmodSync(file(), 0o4751);
    const outcome = await editWrite('edited\n', { afterLastLook: overwriteFirstByte });
    const kept = outcome.outside!.kind === 'kept' ? outcome.outside!.keptPath : '';
    assert.equal(statSync(kept).mode & 0o7777, 0o751);
  });

  test('no outside write: no note, no extra file', async () => {
    const outcome = await editWrite('edited\n');
    assert.equal(outcome.outside, undefined);
    assert.deepEqual(readdirSync(join(served, 'sub')), ['a.txt']);
  });
});

describe('refuse what would surprise; keep what the file had', () => {
  const write = (data: string, force = false) => writeFileSafely(file(), Buffer.from(data), roots, { maxBytes: 1024, force });

  test('judgeReadOnly: the owner write bit decides; force overrides', () => {
    assert.equal(judgeReadOnly(0o100644, false), null);
    assert.equal(judgeReadOnly(0o100200, false), null);
    assert.match(judgeReadOnly(0o100444, false)?.message ?? '', /read-only \(mode 0444.*force: true/);
    assert.equal(judgeReadOnly(0o100444, true), null);
  });

  test('a 0444 file is not replaced unless forced; forced, it stays 0444', async () => {
    chmodSync(file(), 0o444);
    assert.equal(await reason(write('new\n')), 'refused');
    assert.equal(readFileSync(file(), 'utf8'), 'a\n');
    await write('new\n', true);
    assert.equal(readFileSync(file(), 'utf8'), 'new\n');
    assert.equal(statSync(file()).mode & 0o7777, 0o444);
  });

  test('setuid, setgid and sticky bits are kept', async () => {
    for (const mode of [0o4755, 0o2750, 0o1644, 0o6711]) {
      chmodSync(file(), mode);
      await write(`mode ${mode}\n`);
      assert.equal(statSync(file()).mode & 0o7777, mode, mode.toString(8));
    }
  });

  test('owner and group are kept (as root: any; else the test needs root)', { skip: process.getuid?.() !== 0 && 'needs root' }, async () => {
    chownSync(file(), 1234, 2345);
    chmodSync(file(), 0o6755);
    await write('owned\n');
    const stats = statSync(file());
    assert.deepEqual([stats.uid, stats.gid, stats.mode & 0o7777], [1234, 2345, 0o6755]);
  });

  test('judgeMoveSource: a served folder, or a folder holding one, does not move', () => {
    const nested = [makeRoot('/w/p'), makeRoot('/w/p/x/inner'), makeRoot('/w/q')];
    assert.equal(judgeMoveSource('/w/p/a.txt', nested), null);
    assert.equal(judgeMoveSource('/w/p/x/in', nested), null);
    assert.match(judgeMoveSource('/w/p/x', nested)?.message ?? '', /holds another served folder \(\/w\/p\/x\/inner\)/);
    assert.match(judgeMoveSource('/w/p/x/inner', nested)?.message ?? '', /served folder itself/);
    assert.match(judgeMoveSource('/w/q', nested)?.message ?? '', /served folder itself/);
  });

  test('moving a folder that holds another served folder is refused, and nothing moves', async () => {
    mkdirSync(join(served, 'p/x/inner'), { recursive: true });
    const both = [...roots, makeRoot(join(served, 'p/x/inner'))];
    assert.equal(await reason(moveSafely(join(served, 'p'), join(served, 'moved'), both)), 'refused');
    assert.equal(await reason(moveSafely(join(served, 'p/x'), join(served, 'moved'), both)), 'refused');
    assert.ok(existsSync(join(served, 'p/x/inner')));
    assert.equal(existsSync(join(served, 'moved')), false);
  });

  test('move onto a read-only file: refused even with overwrite, unless forced', async () => {
    writeFileSync(join(served, 'ro.txt'), 'ro\n');
    chmodSync(join(served, 'ro.txt'), 0o444);
    assert.equal(await reason(moveSafely(file(), join(served, 'ro.txt'), roots, { overwrite: true })), 'refused');
    assert.equal(readFileSync(join(served, 'ro.txt'), 'utf8'), 'ro\n');
    await moveSafely(file(), join(served, 'ro.txt'), roots, { overwrite: true, force: true });
    assert.equal(readFileSync(join(served, 'ro.txt'), 'utf8'), 'a\n');
  });
});
