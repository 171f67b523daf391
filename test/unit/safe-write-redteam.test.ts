// Red-team cases for the write path (src/content/safe-write.ts): the disk
// changes between the checks and the write. Some at exact moments, through
// the module's hooks (after the look at the target, before the rename); one
// as a concurrent loop that swaps a folder for a symlink while writes run.
// Whatever happens, nothing may appear outside the served folder, no FIFO
// is opened, no hard-linked file changes, and no temp file is left behind.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { rename, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { makeDirectory, moveSafely, writeFileSafely, WriteError, type WriteHooks } from '../../src/content/safe-write.ts';
import type { Root } from '../../src/uri.ts';
import { tempDir, writeSandbox } from '../basics.ts';

let base: ReturnType<typeof tempDir>;
let served: string;
let outside: string;
let roots: Root[];

beforeEach(() => ({ base, served, outside, roots } = writeSandbox('folder-mcp-redteam-')));

afterEach(() => base.cleanup());

function assertOutsideUntouched(): void {
  assert.deepEqual(readdirSync(outside, { recursive: true }).map(String), ['secret.txt']);
  assert.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'secret\n');
}

function tempFilesIn(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String).filter((name) => /\.folder-mcp-[0-9a-f]+\.tmp$/.test(name));
}

async function failure(promise: Promise<unknown>): Promise<WriteError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof WriteError) return error;
    throw error;
  }
  assert.fail('the write went through');
}

/** `served/sub` becomes a symlink to outside; the real folder moves to `served/sub.real`. */
function swapSubForLink(): void {
  renameSync(join(served, 'sub'), join(served, 'sub.real'));
  symlinkSync(outside, join(served, 'sub'));
}

const write = (rel: string, hooks: WriteHooks, data = 'evil\n') =>
  writeFileSafely(join(served, rel), Buffer.from(data), roots, { maxBytes: 1024, hooks });

describe('red team: the write path', () => {
  test('the folder becomes a symlink to outside after the checks, before the temp file: refused', async () => {
    const error = await failure(write('sub/new.txt', { afterCheck: swapSubForLink }));
    assert.equal(error.reason, 'changed');
    assertOutsideUntouched();
    assert.deepEqual(tempFilesIn(served), []);
  });

  test('the folder becomes a symlink to outside after the temp file is written, before the rename: refused', async () => {
    const error = await failure(write('sub/a.txt', { beforeRename: swapSubForLink }));
    assert.equal(error.reason, 'changed');
    assertOutsideUntouched();
    assert.equal(readFileSync(join(served, 'sub.real/a.txt'), 'utf8'), 'a\n');
    assert.deepEqual(tempFilesIn(served), []);
  });

  test('the folder moves out of the served folder mid-write: refused, and nothing written out there', async () => {
    const error = await failure(write('sub/new.txt', { beforeRename: () => renameSync(join(served, 'sub'), join(outside, 'moved')) }));
    assert.equal(error.reason, 'changed');
    assert.deepEqual(readdirSync(join(outside, 'moved')).sort(), ['a.txt']);
  });

  test('the target becomes a symlink to a file outside before the rename: refused, the outside file unchanged', async () => {
    const error = await failure(
      write('sub/a.txt', {
        beforeRename: () => {
          unlinkSync(join(served, 'sub/a.txt'));
          symlinkSync(join(outside, 'secret.txt'), join(served, 'sub/a.txt'));
        },
      }),
    );
    assert.equal(error.reason, 'refused');
    assertOutsideUntouched();
    assert.deepEqual(tempFilesIn(served), []);
  });

  test('the target becomes a FIFO after the checks: refused, the FIFO never opened (the call returns)', async () => {
    const error = await failure(
      write('sub/a.txt', {
        afterCheck: () => {
          unlinkSync(join(served, 'sub/a.txt'));
          execFileSync('mkfifo', [join(served, 'sub/a.txt')]);
        },
      }),
    );
    assert.equal(error.reason, 'refused');
    assert.deepEqual(tempFilesIn(served), []);
  });

  test('the target gets a hard link from outside after the checks: refused, the linked file unchanged', async () => {
    const error = await failure(write('sub/a.txt', { afterCheck: () => linkSync(join(served, 'sub/a.txt'), join(outside, 'hard.txt')) }));
    assert.equal(error.reason, 'refused');
    assert.equal(readFileSync(join(outside, 'hard.txt'), 'utf8'), 'a\n');
    rmSync(join(outside, 'hard.txt'));
    assertOutsideUntouched();
  });

  test('the temp file is swapped for a symlink to outside before the rename: refused, no symlink takes the name', async () => {
    const error = await failure(
      write('sub/a.txt', {
        beforeRename: () => {
          const [temp] = tempFilesIn(join(served, 'sub'));
          unlinkSync(join(served, 'sub', temp!));
          symlinkSync(join(outside, 'secret.txt'), join(served, 'sub', temp!));
        },
      }),
    );
    assert.equal(error.reason, 'changed');
    assert.equal(readFileSync(join(served, 'sub/a.txt'), 'utf8'), 'a\n');
    assertOutsideUntouched();
  });

  test('create_only: the name is taken after the checks: refused, the new file kept', async () => {
    const error = await failure(
      writeFileSafely(join(served, 'sub/b.txt'), Buffer.from('mine\n'), roots, {
        maxBytes: 1024,
        createOnly: true,
        hooks: { beforeRename: () => writeFileSync(join(served, 'sub/b.txt'), 'theirs\n') },
      }),
    );
    assert.equal(error.reason, 'exists');
    assert.equal(readFileSync(join(served, 'sub/b.txt'), 'utf8'), 'theirs\n');
    assert.deepEqual(tempFilesIn(served), []);
  });

  test('names with newlines survive the swaps too', async () => {
    mkdirSync(join(served, 'odd\nname'));
    const error = await failure(
      write('odd\nname/x\n.txt', {
        afterCheck: () => {
          renameSync(join(served, 'odd\nname'), join(served, 'moved'));
          symlinkSync(outside, join(served, 'odd\nname'));
        },
      }),
    );
    assert.equal(error.reason, 'changed');
    assertOutsideUntouched();
  });

  test('mkdir: a folder on the path becomes a symlink to outside between two levels: nothing created outside', async () => {
    let swapped = false;
    const error = await failure(
      makeDirectory(join(served, 'sub/x/y/z'), roots, true, {
        afterCheck: () => {
          if (swapped) return;
          swapped = true;
          swapSubForLink();
        },
      }),
    );
    assert.match(error.reason, /changed|not-found/);
    assertOutsideUntouched();
  });

  test('move: the destination folder becomes a symlink to outside after the checks: refused', async () => {
    mkdirSync(join(served, 'dest'));
    const error = await failure(
      moveSafely(join(served, 'sub/a.txt'), join(served, 'dest/a.txt'), roots, {
        hooks: {
          afterCheck: () => {
            renameSync(join(served, 'dest'), join(served, 'dest.real'));
            symlinkSync(outside, join(served, 'dest'));
          },
        },
      }),
    );
    assert.equal(error.reason, 'changed');
    assertOutsideUntouched();
    assert.equal(readFileSync(join(served, 'sub/a.txt'), 'utf8'), 'a\n');
  });

  test('move: the source is swapped for a symlink after the checks: refused', async () => {
    const error = await failure(
      moveSafely(join(served, 'sub/a.txt'), join(served, 'b.txt'), roots, {
        hooks: {
          afterCheck: () => {
            renameSync(join(served, 'sub/a.txt'), join(served, 'a.real'));
            symlinkSync(join(outside, 'secret.txt'), join(served, 'sub/a.txt'));
          },
        },
      }),
    );
    assert.equal(error.reason, 'changed');
    assertOutsideUntouched();
  });

  test('a loop swapping the folder for a symlink to outside while 200 writes run: none lands outside', async () => {
    const sub = join(served, 'sub');
    const real = join(served, 'sub.real');
    let stop = false;
    let swaps = 0;
    // Concurrent with the writes: renames and symlinks go through libuv's pool, interleaved with the writer's calls.
    const swapper = (async () => {
      while (!stop && swaps < 100_000) {
        await rename(sub, real).catch(() => {});
        await symlink(outside, sub).catch(() => {});
        await unlink(sub).catch(() => {});
        await rename(real, sub).catch(() => {});
        swaps++;
      }
    })();
    const outcomes = { ok: 0, refused: 0 };
    for (let i = 0; i < 200; i++) {
      try {
        await write(`sub/f${i}.txt`, {}, `${i}\n`);
        outcomes.ok++;
      } catch (error) {
        if (!(error instanceof WriteError)) throw error;
        assert.match(error.reason, /changed|not-found/);
        outcomes.refused++;
      }
    }
    stop = true;
    await swapper;
    assert.ok(swaps > 0);
    assertOutsideUntouched();
    // Every write that went through is in the real folder (under either of its names).
    const folder = readdirSync(served).includes('sub.real') ? real : sub;
    const written = readdirSync(folder).filter((name) => /^f\d+\.txt$/.test(name));
    assert.equal(written.length, outcomes.ok);
    assert.deepEqual(tempFilesIn(served), []);
  });
});
