// The process's read budget (src/content/read-budget.ts): bytes in flight
// never pass it, a read larger than all of it still runs (alone), and past
// the queue's bound a read is refused as busy.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { jsonTextBytes, ReadBudget, ReadBusyError, wireBytes } from '../../src/content/read-budget.ts';

/** A read that takes `bytes` and finishes when told. */
function gatedRead(budget: ReadBudget, bytes: number, log: { peak: number }) {
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  let started = false;
  const done = budget.run(bytes, async () => {
    started = true;
    log.peak = Math.max(log.peak, budget.inUse);
    await gate;
    return bytes;
  });
  return { done, finish: () => finish(), started: () => started };
}

const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('ReadBudget', () => {
  test('reads start while their bytes fit, the rest in order as bytes come back', async () => {
    const budget = new ReadBudget(100, 10);
    const log = { peak: 0 };
    const reads = [40, 40, 40, 10].map((b) => gatedRead(budget, b, log));
    await turns();
    assert.deepEqual(reads.map((r) => r.started()), [true, true, false, false], 'first come, first served: 10 waits behind 40');
    reads[0]!.finish();
    await turns();
    assert.deepEqual(reads.map((r) => r.started()), [true, true, true, true]);
    for (const r of reads) r.finish();
    assert.deepEqual(await Promise.all(reads.map((r) => r.done)), [40, 40, 40, 10]);
    assert.ok(log.peak <= 100, String(log.peak));
    assert.equal(budget.inUse, 0);
  });

  test('a read larger than the budget runs alone', async () => {
    const budget = new ReadBudget(100, 10);
    const log = { peak: 0 };
    const small = gatedRead(budget, 10, log);
    const big = gatedRead(budget, 500, log);
    await turns();
    assert.equal(big.started(), false);
    small.finish();
    await turns();
    assert.equal(big.started(), true);
    big.finish();
    await Promise.all([small.done, big.done]);
  });

  test('past the bound on waiting reads, busy; a failed read gives its bytes back', async () => {
    const budget = new ReadBudget(10, 2);
    const log = { peak: 0 };
    const holding = gatedRead(budget, 10, log);
    const waiting = [gatedRead(budget, 10, log), gatedRead(budget, 10, log)];
    await turns();
    await assert.rejects(budget.run(1, async () => 1), ReadBusyError);
    holding.finish();
    for (const w of waiting) w.finish();
    await Promise.all([holding.done, ...waiting.map((w) => w.done)]);
    await assert.rejects(budget.run(5, async () => { throw new Error('read failed'); }), /read failed/);
    assert.equal(budget.inUse, 0);
  });

  test('a read that holds its share keeps it past its end, until it gives it back (twice is harmless)', async () => {
    const budget = new ReadBudget(10, 10);
    let giveBack!: () => void;
    await budget.run(8, async (share) => void (giveBack = share.hold()));
    assert.equal(budget.inUse, 8, 'the share went back when the read ended');
    const next = gatedRead(budget, 8, { peak: 0 });
    await turns();
    assert.equal(next.started(), false, 'a read started while the share was held');
    giveBack();
    giveBack();
    await turns();
    assert.equal(next.started(), true);
    assert.equal(budget.inUse, 8);
    next.finish();
    await next.done;
    assert.equal(budget.inUse, 0);
  });

  test('a share grows to the answer\'s exact size at once, past the budget, and later reads wait for it', async () => {
    const budget = new ReadBudget(10, 10);
    let giveBack!: () => void;
    await budget.run(4, async (share) => {
      giveBack = share.hold();
      share.grow(12);
      share.grow(6); // never shrinks
    });
    assert.equal(budget.inUse, 12);
    const next = gatedRead(budget, 1, { peak: 0 });
    await turns();
    assert.equal(next.started(), false, 'a read started while the budget was over');
    giveBack();
    await turns();
    assert.equal(next.started(), true);
    next.finish();
    await next.done;
    assert.equal(budget.inUse, 0);
  });
});

describe('wire bytes', () => {
  test('base64 is 4/3 of the bytes, rounded up to whole quanta', () => {
    assert.equal(wireBytes(0), 0);
    assert.equal(wireBytes(1), 4);
    assert.equal(wireBytes(3), 4);
    assert.equal(wireBytes(4 * 1024 * 1024), Buffer.from(new Uint8Array(4 * 1024 * 1024)).toString('base64').length);
  });

  test('text counts as JSON.stringify writes it, in UTF-8', () => {
    const samples = ['', 'plain', 'a "quoted" \\path\\\n\t\r\b\f', '\u0000\u0001\u001f\u007f', 'café — 日本 😀', '\ud800 lone \udfff', '\u2028\u2029'];
    for (const text of samples) {
      assert.equal(jsonTextBytes(text), Buffer.byteLength(JSON.stringify(text)) - 2, JSON.stringify(text));
    }
  });
});
