// One writer per path (src/content/path-locks.ts): holds on one path run one
// after the other, a tree hold covers what is beneath it, two spellings of
// one folder are one key, holds are granted in arrival order, and a wait
// past the limit is refused. Each test waits for events (promises), never time.
import assert from 'node:assert/strict';
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { lockKey, PATH_LOCK_WAIT_MS, PathBusyError, PathLocks } from '../../src/content/path-locks.ts';
import { tempDir } from '../basics.ts';

/** A change that runs until `release()` is called, and says when it started. */
function gate() {
  let release!: () => void;
  let started!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const running = new Promise<void>((resolve) => (started = resolve));
  return { release, running, change: async () => (started(), released) };
}

describe('PathLocks', () => {
  test('two changes of one path run one after the other; of two paths, at once', async () => {
    const locks = new PathLocks();
    const order: string[] = [];
    const first = gate();
    const a = locks.run([{ path: '/r/f' }], async () => (order.push('a start'), await first.change(), order.push('a end')));
    const b = locks.run([{ path: '/r/f' }], async () => order.push('b'));
    const other = locks.run([{ path: '/r/g' }], async () => order.push('other'));
    await first.running;
    await other;
    assert.deepEqual(order, ['a start', 'other']);
    first.release();
    await Promise.all([a, b]);
    assert.deepEqual(order, ['a start', 'other', 'a end', 'b']);
    assert.equal(locks.size, 0);
  });

  test('a tree hold covers everything beneath it, not a sibling that shares a prefix', async () => {
    const locks = new PathLocks();
    const move = gate();
    const moving = locks.run([{ path: '/r/d', tree: true }], move.change);
    await move.running;
    const order: string[] = [];
    const inside = locks.run([{ path: '/r/d/e/f.txt' }], async () => order.push('inside'));
    const sibling = locks.run([{ path: '/r/d2/f.txt' }], async () => order.push('sibling'));
    await sibling;
    assert.deepEqual(order, ['sibling']);
    move.release();
    await Promise.all([moving, inside]);
    assert.deepEqual(order, ['sibling', 'inside']);
  });

  test('arrival order: a waiting tree hold is not overtaken by a later change beneath it', async () => {
    const locks = new PathLocks();
    const edit = gate();
    const order: string[] = [];
    const editing = locks.run([{ path: '/r/d/f' }], async () => (await edit.change(), order.push('edit')));
    await edit.running;
    const moving = locks.run([{ path: '/r/d', tree: true }], async () => order.push('move'));
    const later = locks.run([{ path: '/r/d/g' }], async () => order.push('later'));
    edit.release();
    await Promise.all([editing, moving, later]);
    assert.deepEqual(order, ['edit', 'move', 'later']);
  });

  test('a failing change gives its hold back', async () => {
    const locks = new PathLocks();
    await assert.rejects(locks.run([{ path: '/r/f' }], async () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await locks.run([{ path: '/r/f' }], async () => 'next'), 'next');
    assert.equal(locks.size, 0);
  });

  test('a wait past the limit is refused, and the change does not run', async () => {
    const locks = new PathLocks(1);
    const held = gate();
    const holding = locks.run([{ path: '/r/f' }], held.change);
    await held.running;
    let ran = false;
    await assert.rejects(
      locks.run([{ path: '/r/f' }], async () => (ran = true)),
      (error: Error) => error instanceof PathBusyError && /nothing was changed/.test(error.message),
    );
    held.release();
    await holding;
    assert.equal(ran, false);
    assert.equal(locks.size, 0);
  });

  test('noteWritten / wroteLast: the file this server last left at a path, until anything else is there', () => {
    const locks = new PathLocks();
    assert.equal(locks.wroteLast('/r/f', { ino: 1n, mtimeNs: 5n }), false);
    locks.noteWritten('/r/f', { ino: 1n, mtimeNs: 5n });
    assert.equal(locks.wroteLast('/r/f', { ino: 1n, mtimeNs: 5n }), true);
    assert.equal(locks.wroteLast('/r/f', { ino: 1n, mtimeNs: 6n }), false, 'written since (an append)');
    assert.equal(locks.wroteLast('/r/f', { ino: 2n, mtimeNs: 5n }), false, 'replaced since');
  });

  test('lockKey: the real path, also through a symlinked folder and for a path that does not exist yet', () => {
    const dir = tempDir('folder-mcp-locks-');
    try {
      const real = realpathSync(dir.path);
      mkdirSync(join(real, 'd'));
      symlinkSync(join(real, 'd'), join(real, 'link'));
      assert.equal(lockKey(join(real, 'link/new/f.txt')), join(real, 'd/new/f.txt'));
      assert.equal(lockKey(join(real, 'd')), join(real, 'd'));
    } finally {
      dir.cleanup();
    }
  });

  test('lockKey: on Windows and macOS every spelling of a file is one key, existing or not; on Linux case is a name', () => {
    const dir = tempDir('folder-mcp-locks-');
    try {
      const real = realpathSync(dir.path);
      mkdirSync(join(real, 'd'));
      writeFileSync(join(real, 'd', 'Notes.txt'), 'x');
      for (const platform of ['win32', 'darwin'] as const) {
        assert.equal(lockKey(join(real, 'D/NOTES.txt'), platform), lockKey(join(real, 'd/Notes.txt'), platform), platform);
        assert.equal(lockKey(join(real, 'd/New.md'), platform), lockKey(join(real, 'd/new.MD'), platform), `${platform}: not there yet`);
        assert.equal(lockKey(join(real, 'd/cafe\u0301.md'), platform), lockKey(join(real, 'd/caf\u00e9.md'), platform), `${platform}: normalization`);
      }
      assert.notEqual(lockKey(join(real, 'd/New.md'), 'linux'), lockKey(join(real, 'd/new.md'), 'linux'));
    } finally {
      dir.cleanup();
    }
  });

  test('two spellings of one file wait for each other under Windows rules', async () => {
    const dir = tempDir('folder-mcp-locks-');
    try {
      const real = realpathSync(dir.path);
      const locks = new PathLocks(PATH_LOCK_WAIT_MS, 'win32');
      const order: string[] = [];
      let release!: () => void;
      const first = locks.run([{ path: join(real, 'Report.docx') }], async () => {
        order.push('first in');
        await new Promise<void>((resolve) => (release = resolve));
        order.push('first out');
      });
      const second = locks.run([{ path: join(real, 'REPORT.DOCX') }], async () => void order.push('second'));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(order, ['first in'], 'the second spelling waits');
      release();
      await Promise.all([first, second]);
      assert.deepEqual(order, ['first in', 'first out', 'second']);
    } finally {
      dir.cleanup();
    }
  });
});
