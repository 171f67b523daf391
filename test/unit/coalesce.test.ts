// The one primitive for delayed and coalesced work (src/coalesce.ts) and its
// clock (src/clock.ts), on a clock the test moves: nothing here depends on
// how fast or how loaded the machine is, and nothing sleeps.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { every, realClock, type Clock } from '../../src/clock.ts';
import { Coalescer, type CoalescerOptions } from '../../src/coalesce.ts';
import { silentLogger } from '../../src/log.ts';
import { Rechecks } from '../../src/sync/rechecks.ts';
import { WriteQueue } from '../../src/sync/write-queue.ts';
import { TestClock } from '../test-clock.ts';

/** A coalescer of quiet 20 ms, longest 500 ms, spell 250 ms, on a test clock; `fired()` counts its firings. */
function coalescer(options: CoalescerOptions = {}, quietMs = 20, maxDelayMs = 500) {
  const clock = new TestClock();
  let count = 0;
  const times: number[] = [];
  const c = new Coalescer(
    () => {
      count++;
      times.push(clock.now());
    },
    quietMs,
    maxDelayMs,
    { spellMs: 250, clock, ...options },
  );
  return { c, clock, fired: () => count, times };
}

describe('Coalescer', () => {
  test('leading now: the first trigger fires within trigger(); what follows is gathered and fires after the quiet time', () => {
    const { c, clock, fired } = coalescer();
    c.trigger();
    assert.equal(fired(), 1);
    c.trigger();
    c.trigger();
    assert.equal(fired(), 1, 'inside the spell: gathered');
    clock.advance(10);
    c.trigger();
    assert.equal(fired(), 1, 'the quiet time starts again at each trigger');
    clock.advance(19);
    assert.equal(fired(), 1);
    clock.advance(1);
    assert.equal(fired(), 2, 'one firing for the two');
    assert.equal(clock.pending(), 0);
  });

  test('leading next-turn: a synchronous batch of triggers fires once, on the next turn; after a quiet spell, again', () => {
    const { c, clock, fired } = coalescer({ leading: 'next-turn' });
    c.trigger();
    c.trigger();
    c.trigger();
    assert.equal(fired(), 0);
    assert.equal(clock.pending(), 1, 'one timer for the batch');
    clock.advance(0);
    assert.equal(fired(), 1);
    c.trigger();
    clock.advance(0);
    assert.equal(fired(), 1, 'within the spell: no leading edge, the quiet time');
    clock.advance(20);
    assert.equal(fired(), 2);
    clock.advance(300);
    c.trigger();
    clock.advance(0);
    assert.equal(fired(), 3, 'after a quiet spell: the next turn again');
  });

  test('a steady stream still fires every maxDelayMs', () => {
    const { c, clock, fired } = coalescer();
    c.trigger(); // leading
    for (let t = 0; t < 1000; t += 10) {
      c.trigger();
      clock.advance(10);
    }
    // 1 leading + one every 500 ms of the 1,000 ms stream (a quiet 20 ms never came).
    assert.equal(fired(), 3);
  });

  test('leading none with quiet = longest: fires a fixed time after the first trigger, whatever follows (the bus, the rechecks)', () => {
    const { c, clock, fired, times } = coalescer({ leading: 'none' }, 50, 50);
    const start = clock.now();
    c.trigger();
    assert.equal(fired(), 0, 'no leading edge');
    for (let i = 0; i < 49; i++) {
      clock.advance(1);
      c.trigger();
    }
    assert.equal(clock.pending(), 1);
    clock.advance(1);
    assert.deepEqual(times, [start + 50], 'once, 50 ms after the first trigger, not after the last');
    // A trigger long after is no leading edge either.
    clock.advance(10_000);
    c.trigger();
    assert.equal(fired(), 1);
    clock.advance(50);
    assert.equal(fired(), 2);
  });

  test('a burst of triggers at a deadline already set costs no new timer', () => {
    const clock = new TestClock();
    let set = 0;
    const counting: Clock = {
      now: () => clock.now(),
      setTimeout: (fire, ms, options) => (set++, clock.setTimeout(fire, ms, options)),
      clearTimeout: (timer) => clock.clearTimeout(timer),
    };
    const c = new Coalescer(() => {}, 50, 50, { leading: 'none', clock: counting });
    for (let i = 0; i < 10_000; i++) c.trigger();
    assert.equal(set, 1);
    clock.advance(50);
  });

  test('cancel drops what is gathered; the next trigger starts afresh', () => {
    const { c, clock, fired } = coalescer();
    c.trigger();
    c.trigger();
    c.cancel();
    clock.advance(1000);
    assert.equal(fired(), 1, 'only the leading edge');
    c.trigger();
    assert.equal(fired(), 2, 'a quiet spell passed: leading again');
  });

  test('background: its timer is one that does not keep the process alive', () => {
    const { c, clock } = coalescer({ leading: 'none', background: true });
    c.trigger();
    assert.equal(clock.pending('background'), 1);
    c.cancel();
    const { c: d, clock: other } = coalescer({ leading: 'none' });
    d.trigger();
    assert.equal(other.pending('foreground'), 1);
    d.cancel();
  });
});

describe('every', () => {
  test('ticks every ms on its clock, in the background, until stopped', () => {
    const clock = new TestClock();
    let ticks = 0;
    const ticker = every(clock, 1000, () => ticks++);
    clock.advance(999);
    assert.equal(ticks, 0);
    clock.advance(1);
    assert.equal(ticks, 1);
    clock.advance(3000);
    assert.equal(ticks, 4);
    assert.equal(clock.pending('background'), 1);
    ticker.stop();
    clock.advance(10_000);
    assert.equal(ticks, 4);
    assert.equal(clock.pending(), 0);
  });

  test('stopped by its own tick: no tick after', () => {
    const clock = new TestClock();
    let ticks = 0;
    const ticker = every(clock, 10, () => {
      if (++ticks === 2) ticker.stop();
    });
    clock.advance(100);
    assert.equal(ticks, 2);
  });
});

describe('realClock', () => {
  test('its timers fire, and a cleared one does not', async () => {
    let fired = 0;
    const cleared = realClock.setTimeout(() => fired++, 0);
    realClock.clearTimeout(cleared);
    realClock.clearTimeout(undefined);
    await new Promise<void>((resolve) => realClock.setTimeout(resolve, 1, { background: false }));
    assert.equal(fired, 0);
    assert.ok(realClock.now() > 0);
  });
});

describe('Rechecks: new directories walked again', () => {
  test('a pass gathers its directories and walks the outermost of them 1 s after the first, then once more 4 s later', async () => {
    const clock = new TestClock();
    const stop = new AbortController();
    const walked: string[] = [];
    const queue = new WriteQueue({ ready: () => Promise.resolve(), signal: stop.signal, log: silentLogger });
    const rechecks = new Rechecks({
      queue,
      tree: async (dir) => void walked.push(dir),
      diffRoots: () => Promise.resolve(0),
      written: () => 0,
      backend: () => 'dirs',
      signal: stop.signal,
      log: silentLogger,
      clock,
    });
    try {
      rechecks.newDirectory('/r/a');
      clock.advance(500);
      rechecks.newDirectory('/r/a/deep');
      rechecks.newDirectory('/r/b');
      assert.equal(rechecks.scheduled, 3);
      clock.advance(499);
      await queue.idle();
      assert.deepEqual(walked, [], 'not before 1 s after the first');
      clock.advance(1);
      await queue.idle();
      assert.deepEqual(walked, ['/r/a', '/r/b'], 'the outermost, together');
      clock.advance(3999);
      await queue.idle();
      assert.equal(walked.length, 2);
      clock.advance(1);
      await queue.idle();
      assert.deepEqual(walked, ['/r/a', '/r/b', '/r/a', '/r/b'], 'the second pass, 5 s after the first walk was asked for');
      clock.advance(60_000);
      await queue.idle();
      assert.equal(walked.length, 4, 'two passes, no more');
      assert.equal(rechecks.scheduled, 0);
    } finally {
      rechecks.close();
      stop.abort();
    }
  });
});
