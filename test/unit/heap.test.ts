// The main thread's new space held where it has grown to (src/heap.ts), on
// this process's own V8: a workload that keeps much of what it allocates
// alive across scavenges makes V8 grow the new space, up to 128 MiB on Node
// 24 and 32 MiB on Node 20 unheld. Each test file runs in a process of its
// own, so the flags set here touch nothing else.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { holdNewSpace, holdsNewSpace } from '../../src/heap.ts';
import { waitFor } from '../basics.ts';

const MiB = 1024 * 1024;
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

function newSpace(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_size;
}

/** Allocates in many small tasks, keeping the last 60,000 objects alive; the largest new space seen. */
async function churn(tasks = 2000): Promise<number> {
  const kept: unknown[] = [];
  let largest = newSpace();
  for (let task = 0; task < tasks; task++) {
    for (let i = 0; i < 2000; i++) kept.push({ i, text: `item ${i}`, list: [i] });
    if (kept.length > 60_000) kept.splice(0, 2000);
    // A task each: GC entries reach the observer between tasks, as a server's requests are.
    await new Promise((resolve) => setImmediate(resolve));
    largest = Math.max(largest, newSpace());
  }
  return largest;
}

describe('the new space held', () => {
  test('stays within one growth of where it is held; the same work unheld takes it far past', async (t) => {
    const at = Math.max(8 * MiB, newSpace());
    const hold = holdNewSpace(at);
    let held: number;
    try {
      held = await churn();
      assert.ok(hold.held(), `the hold engaged (new space ${newSpace() / MiB} MiB)`);
    } finally {
      hold.stop();
    }
    const unheld = await churn();
    // V8 sizes the young generation from the machine's memory: where its most is small, the hold cannot be told.
    if (unheld < 3 * at) return t.skip(`V8's new space here grows to ${unheld / MiB} MiB at most`);
    // GC entries reach the observer a task or two after the GC: a growth past the hold at most, where a task
    // allocates far less than the new space holds (as a server's requests do).
    assert.ok(held < 3 * at, `held at ${at / MiB} MiB, it reached ${held / MiB} MiB; unheld, ${unheld / MiB} MiB`);
  });

  test('gives the growth back once V8 shrinks it, and holds it again', { skip: NODE_MAJOR < 22 ? 'V8 11 (Node 20) does not shrink the new space on a last-resort GC' : false }, async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (options: object) => void;
    const at = 8 * MiB;
    const hold = holdNewSpace(at);
    try {
      // The new space the test before left grown: held from the first GC on.
      await waitFor(async () => (await churn(10), hold.held()), 30_000, 'the hold engaged');
      // What V8 does when memory is short (and, on its own, when the process is idle): the new space shrinks.
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
      assert.ok(newSpace() < at, `a last-resort GC shrank the new space (${newSpace() / MiB} MiB)`);
      await waitFor(() => !hold.held(), 30_000, 'the growth given back');
      let grown = await churn();
      // The GC entries that engage the hold reach the observer a task or more after the GC (later on a busy
      // machine: 8 CPU-burning processes beside the suite saw it not yet held when the churn ended).
      await waitFor(async () => ((grown = Math.max(grown, await churn(10))), hold.held()), 30_000, 'held again');
      assert.ok(grown >= at, `grown again to ${grown / MiB} MiB`);
      assert.ok(grown < 3 * at, `held at ${at / MiB} MiB, it reached ${grown / MiB} MiB`);
    } finally {
      hold.stop();
    }
  });

  test('is the server\'s on Node 22 and later, unless a size of the young generation is given', () => {
    const cases: Array<[number, string[], boolean]> = [
      [24, [], true],
      [22, ['--max-old-space-size=4096', '--require', 'x.cjs', ''], true],
      [20, [], false],
      [24, ['--max-semi-space-size=16'], false],
      [24, ['--max_semi_space_size=32'], false],
      [22, ['--min-semi-space-size=2'], false],
      [26, ['--semi-space-growth-factor=3'], false],
    ];
    for (const [major, flags, holds] of cases) assert.equal(holdsNewSpace(major, flags), holds, `Node ${major} ${flags.join(' ')}`);
  });
});
