// src/turns.ts ArrivalGate: requests arriving in one turn of the event loop share a budget; past it they wait with
// the backlog, and a request arriving in a later turn is admitted ahead of that backlog. A turn here is one check
// phase: callbacks queued with setImmediate together run in one, with microtasks run between two (as Node runs an
// I/O callback per ready socket in one poll phase).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ArrivalGate, Foreground, oneEachTurn, TurnBudget } from '../../src/turns.ts';
import { TestClock } from '../test-clock.ts';

/** CPU work of `ms` (a busy wait: what handling a request costs). */
function burn(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Requests through `gate`, each costing `costMs` once admitted: `order` is the order they were admitted in. */
function arrivals(gate: ArrivalGate, costMs = 2) {
  const order: string[] = [];
  const handled: Promise<void>[] = [];
  const arrive = (name: string, client?: string) =>
    void handled.push(
      gate.admit(client).then(() => {
        order.push(name);
        burn(costMs);
      }),
    );
  return { order, arrive, all: () => Promise.all(handled) };
}

test('a lone request is admitted at once, without waiting for a turn', async () => {
  const gate = new ArrivalGate(1, new TurnBudget(1));
  let turned = false;
  setImmediate(() => (turned = true));
  await gate.admit();
  assert.equal(turned, false, 'the request waited for a turn of the event loop');
  // And so is the next lone request, in a later turn, however long the one before took.
  burn(3);
  await nextTurn();
  await nextTurn();
  setImmediate(() => (turned = true));
  turned = false;
  await gate.admit();
  assert.equal(turned, false, 'a request arriving in a later turn waited');
});

test('a burst arriving in one turn waits past the budget; a request arriving in the next turn goes ahead of it', async () => {
  // Each admitted request costs 2 ms, twice the budget: the first of the burst goes, the other nine wait, and the
  // backlog lets one through a turn. The late request arrives in the next turn, after the burst's nine are queued:
  // without the gate it ran after all ten (one turn), with one shared first-come queue after all ten too.
  const gate = new ArrivalGate(1, new TurnBudget(1));
  const { order, arrive, all } = arrivals(gate);
  await new Promise<void>((resolve) => {
    for (let i = 0; i < 10; i++) setImmediate(() => arrive(`burst ${i}`));
    // Queued in the burst's turn: runs in the next one, after the backlog's first resumes.
    setImmediate(() => setImmediate(() => (arrive('late'), resolve())));
  });
  await all();
  assert.equal(order.length, 11);
  assert.deepEqual(order.slice(0, 1), ['burst 0'], 'the first of the burst did not go at once');
  const late = order.indexOf('late');
  assert.ok(late <= 2, `the late request was admitted ${late + 1}th: ${order.join(', ')}`);
  // The burst keeps its own order.
  assert.deepEqual(
    order.filter((name) => name !== 'late'),
    Array.from({ length: 10 }, (_, i) => `burst ${i}`),
  );
});

test('requests waiting from different turns take turns: a second burst is not served after the whole first one', async () => {
  // Burst a (10 requests) in one turn, burst b (5) in the next, each request 2 ms: both overflow their budget. Served
  // first come first served, b's waiting requests went after all of a's; taking turns, they alternate.
  const gate = new ArrivalGate(1, new TurnBudget(1));
  const { order, arrive, all } = arrivals(gate);
  for (let i = 0; i < 10; i++) setImmediate(() => arrive(`a${i}`));
  setImmediate(() => {
    for (let i = 0; i < 5; i++) setImmediate(() => arrive(`b${i}`));
  });
  await new Promise<void>((resolve) => setImmediate(() => setImmediate(() => setImmediate(resolve))));
  await all();
  assert.equal(order.length, 15);
  assert.ok(order.indexOf('b1') < order.indexOf('a4'), `b1 waited for a's burst: ${order.join(', ')}`);
  assert.ok(order.indexOf('b4') < order.indexOf('a9'), `b4 waited for a's burst: ${order.join(', ')}`);
  // Each burst keeps its own order.
  assert.deepEqual(order.filter((n) => n.startsWith('a')), Array.from({ length: 10 }, (_, i) => `a${i}`));
  assert.deepEqual(order.filter((n) => n.startsWith('b')), Array.from({ length: 5 }, (_, i) => `b${i}`));
});

test('a known client\'s request read in the same turn as a burst has a group of its own, not a place in the burst', async () => {
  // Ten requests of no known client and, read sixth among them, one of session S: in the burst's group, S waited
  // for the five read before it; in its own group it goes second among those waiting.
  const gate = new ArrivalGate(1, new TurnBudget(1));
  const { order, arrive, all } = arrivals(gate);
  await new Promise<void>((resolve) => {
    for (let i = 0; i < 10; i++) {
      setImmediate(() => arrive(`burst ${i}`));
      if (i === 5) setImmediate(() => arrive('S', 'session-S'));
    }
    setImmediate(resolve);
  });
  await all();
  assert.equal(order.length, 11);
  assert.ok(order.indexOf('S') <= 3, `S went ${order.indexOf('S') + 1}th: ${order.join(', ')}`);
  assert.deepEqual(order.filter((n) => n !== 'S'), Array.from({ length: 10 }, (_, i) => `burst ${i}`));
});

test('requests arriving in one turn within the budget all go in that turn', async () => {
  // Cheap requests (no CPU to speak of) and a budget no scheduling hiccup spends: none waits, as with no gate.
  const gate = new ArrivalGate(10_000, new TurnBudget(1));
  const admitted: number[] = [];
  await new Promise<void>((resolve) => {
    for (let i = 0; i < 20; i++) setImmediate(() => void gate.admit().then(() => admitted.push(i)));
    setImmediate(() => resolve());
  });
  assert.equal(admitted.length, 20, `${admitted.length} of 20 admitted in their turn`);
});

test('a request waiting to start goes before work under way: at most one slice of that work runs in between', async () => {
  // 10 callers each take 20 slices of 2 ms (twice the budget: one slice a turn). A request that missed its arrival
  // budget then waits for the same turns; taking turns alike, it waited for all 10 callers' next slices.
  const turns = new TurnBudget(1);
  let slices = 0;
  let done = false;
  const work = Array.from({ length: 10 }, async () => {
    for (let i = 0; i < 20 && !done; i++) {
      await turns.slice();
      slices++;
      burn(2);
    }
  });
  // Let the work get going: a few turns.
  for (let i = 0; i < 3; i++) await nextTurn();
  const before = slices;
  await turns.slice('arrival');
  const between = slices - before;
  done = true;
  await Promise.all(work);
  assert.ok(between <= 1, `${between} slices of work ran before the waiting request`);
});

/** A Foreground on a clock the test moves: whether background may run, and when its timers fire, is that clock's alone. */
function foregroundAt() {
  const clock = new TestClock(1000);
  return { clock, foreground: new Foreground(clock) };
}

/** Whether `promise` has settled once the event loop has turned a few times (the test's clock standing still). */
async function settledSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

test('Foreground: start-up work waits while a client is busy, and goes once it has been quiet 20 ms', async () => {
  const { clock, foreground } = foregroundAt();
  foreground.arrived(); // initialize: the services start
  const first = foreground.turn(true);
  // The client lists page after page, one clock millisecond apart.
  for (let page = 0; page < 50; page++) {
    const leave = foreground.enter();
    clock.advance(1);
    leave();
  }
  assert.equal(await settledSoon(first), false, 'background ran while the client was busy');
  clock.advance(20);
  await first;
});

test('Foreground: while an answer goes out (a large page the client reads as it comes), start-up work waits; after, 20 ms more', async () => {
  // A warm start's first page (530 KB at 100k files) went out in pieces as the client read them, and start-up work,
  // 20 ms after the handler built it, ran between two pieces: the page came about 10 ms later.
  const { clock, foreground } = foregroundAt();
  foreground.arrived(); // the request
  const waiting = foreground.turn(true);
  const leave = foreground.enter();
  leave(); // its answer is built...
  foreground.answering(); // ...and starts going out
  clock.advance(60);
  assert.equal(await settledSoon(waiting), false, 'background ran while the answer was going out');
  foreground.answered();
  clock.advance(19);
  assert.equal(await settledSoon(waiting), false, 'background ran before the client had 20 ms to ask again');
  clock.advance(1);
  await waiting;
});

test('Foreground: an answer that does not go out (a client that stops reading) holds background work back no longer than a steady load does', async () => {
  const { clock, foreground } = foregroundAt();
  foreground.answering();
  const waiting = foreground.turn(true);
  clock.advance(100);
  assert.equal(await settledSoon(waiting), false);
  clock.advance(10); // 110 ms since the last slice
  await waiting;
  // Out at last: the next slice waits only for the 20 ms in which the client may ask again; an end told twice
  // (or with no start) changes nothing.
  clock.advance(4);
  foreground.answered();
  foreground.answered();
  const next = foreground.turn();
  clock.advance(19);
  assert.equal(await settledSoon(next), false);
  clock.advance(1);
  await next;
});

test('Foreground: under a steady load, background still gets a slice every 104 ms at most', async () => {
  const { clock, foreground } = foregroundAt();
  const waiting = foreground.turn(true);
  for (let ms = 0; ms < 100; ms += 5) {
    foreground.arrived();
    clock.advance(5);
  }
  assert.equal(await settledSoon(waiting), false);
  clock.advance(10); // 110 ms since its last slice, a request 5 ms ago
  foreground.arrived();
  await waiting;
});

test('Foreground: once a client has left no quiet moment for 2 s, background gets a slice every 24 ms, not every 104', async () => {
  // A client sending a cheap request every 5 ms held the content index build to about 4% of the thread.
  const { clock, foreground } = foregroundAt();
  const slices: number[] = [];
  let stop = false;
  const background = (async () => {
    while (!stop) {
      await foreground.turn(true);
      slices.push(clock.now());
    }
  })();
  /** `ms` of a request every 5 ms, the event loop turning between two. */
  const load = async (ms: number) => {
    for (let at = 0; at < ms; at += 5) {
      foreground.arrived();
      clock.advance(5);
      for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await load(3_000);
  const gaps = slices.slice(1).map((at, i) => at - slices[i]!);
  const early = gaps.filter((_, i) => slices[i + 1]! - 1000 < 1_900);
  const late = gaps.filter((_, i) => slices[i]! - 1000 > 2_200);
  assert.ok(early.length > 5 && early.every((gap) => gap >= 100), `the first 2 s: a slice every 104 ms (${early.join(', ')})`);
  assert.ok(late.length > 20 && late.every((gap) => gap <= 25), `then every 24 ms (${late.join(', ')})`);
  // A quiet moment: back to the 104 ms bound.
  clock.advance(25);
  await new Promise((resolve) => setImmediate(resolve));
  const before = slices.length;
  await load(60);
  assert.equal(slices.length - before <= 1, true, 'the client was quiet lately: a slice every 104 ms again');
  stop = true;
  clock.advance(25);
  await background;
});

test('Foreground: a slice of background work runs 4 ms before it asks again; a fresh task always asks', async () => {
  const { clock, foreground } = foregroundAt();
  clock.advance(100); // quiet: nobody came
  await foreground.turn(true);
  foreground.arrived();
  // Within the slice: at once, whoever came.
  await foreground.turn();
  clock.advance(4);
  // Past it, with a message 4 ms ago: it waits.
  const next = foreground.turn();
  assert.equal(await settledSoon(next), false);
  clock.advance(20);
  await next;
});

test('Foreground: a request that waits for the background work (a held warm start) lets it run at once, however busy the client', { timeout: 30_000 }, async () => {
  const { clock, foreground } = foregroundAt();
  const waiting = foreground.turn(true);
  foreground.arrived();
  assert.equal(await settledSoon(waiting), false, 'busy: it waits');
  const done = foreground.urge();
  // The clock has not moved, and a message came just now: only the urge lets it go.
  foreground.arrived();
  await waiting;
  // While urged, every turn goes at once.
  clock.advance(10);
  foreground.arrived();
  await foreground.turn();
  done();
  clock.advance(10);
  foreground.arrived();
  const after = foreground.turn();
  assert.equal(await settledSoon(after), false, 'the urge over: it waits again');
  clock.advance(200);
  await after;
});

test('oneEachTurn: items that are all ready come one a turn of the event loop (the first scan\'s batches, its walk ahead)', async () => {
  // A red-team finding: batches waiting to be taken were committed one after the other in microtasks, and a ping
  // waited 0.6-0.9 s behind a second of them.
  async function* ready() {
    for (let i = 1; i <= 5; i++) yield i;
  }
  const turnsSeen: number[] = [];
  let taken = 0;
  let ticking = true;
  const tick = () => {
    turnsSeen.push(taken);
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  for await (const item of oneEachTurn(ready())) taken = item;
  ticking = false;
  for (let i = 1; i < 5; i++) assert.ok(turnsSeen.includes(i), `no turn after item ${i}: ${turnsSeen.join(',')}`);
  // Without it, all five are taken before any turn.
  const before = turnsSeen.length;
  taken = 0;
  ticking = true;
  setImmediate(tick);
  for await (const item of ready()) taken = item;
  ticking = false;
  assert.deepEqual(turnsSeen.slice(before).filter((n) => n > 0 && n < 5), []);
  // A consumer that stops early ends the source.
  let ended = false;
  async function* source() {
    try {
      yield* ready();
    } finally {
      ended = true;
    }
  }
  for await (const item of oneEachTurn(source())) if (item === 2) break;
  assert.equal(ended, true);
});
