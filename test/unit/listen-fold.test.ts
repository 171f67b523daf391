// src/protocol/listen.ts: a listen's URIs folded to one spelling per resource, at once (stdio) or a slice at a
// time with the event loop turning between (HTTP). In process, with an index stand-in: no disk needed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EntryKind } from '../../src/entry.ts';
import { trackListens, trackListensInTurns } from '../../src/protocol/listen.ts';
import { Subscriptions } from '../../src/protocol/subscriptions.ts';
import { PROTOCOL_VERSION_META_KEY } from '../../src/protocol/wire.ts';
import { TurnBudget } from '../../src/turns.ts';
import { makeRoot } from '../../src/uri.ts';

const root = makeRoot('/srv/r');

/** An index that knows no entry; each lookup costs `costMs` of CPU (a busy wait: the work a real lookup does). */
function ctx(costMs = 0) {
  const store = {
    get: () => {
      const until = performance.now() + costMs;
      while (performance.now() < until);
      return undefined;
    },
  };
  return { roots: [root], index: { store } } as never;
}

function listen(id: number, uris: string[]) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: { _meta: { [PROTOCOL_VERSION_META_KEY]: '2026-07-28' }, notifications: { resourceSubscriptions: uris } },
  };
}

const URIS = [
  'file:///srv/r/a.txt',
  'file:///srv/r/./a.txt', // the same file: folded away
  'file:///srv/r/caf%C3%A9.txt',
  'file:///srv/r/café.txt', // the same file, another spelling: folded away
  'file:///elsewhere/x.txt', // outside the roots: dropped
  ...Array.from({ length: 300 }, (_, i) => `file:///srv/r/n${i}.md`),
];

test('folding in turns keeps what folding at once keeps: the same spellings, the same subscriptions', async () => {
  const atOnce = new Subscriptions();
  const inTurns = new Subscriptions();
  const a = listen(1, [...URIS]);
  const b = listen(1, [...URIS]);
  assert.equal(trackListens(ctx(), atOnce)(a), undefined);
  assert.equal(await trackListensInTurns(ctx(), inTurns, new TurnBudget(1))(b), undefined);
  const kept = a.params.notifications.resourceSubscriptions;
  assert.deepEqual(b.params.notifications.resourceSubscriptions, kept);
  assert.deepEqual(kept.slice(0, 2), ['file:///srv/r/a.txt', 'file:///srv/r/caf%C3%A9.txt']);
  assert.equal(kept.length, 302);
  assert.equal(inTurns.size, atOnce.size);
  // A cancellation releases what that listen held.
  await trackListensInTurns(ctx(), inTurns, new TurnBudget(1))({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
  assert.equal(inTurns.size, 0);
});

test('over the bound, both refuse the listen whole and keep nothing', async () => {
  const subscriptions = new Subscriptions();
  const big = Array.from({ length: 1001 }, (_, i) => `file:///srv/r/f${i}`);
  const refused = await trackListensInTurns(ctx(), subscriptions, new TurnBudget(1))(listen(7, big));
  assert.match(JSON.stringify(refused), /Too many resourceSubscriptions: 1001 exceeds maximum of 1000/);
  assert.match(JSON.stringify(trackListens(ctx(), subscriptions)(listen(8, big))), /Too many resourceSubscriptions/);
  assert.equal(subscriptions.size, 0);
});

test('on stdio, one connection\'s open listens name 1,000 URIs at most together (a red-team finding: 40 of 1,000 held a ping 11.7 s)', () => {
  const subscriptions = new Subscriptions();
  const track = trackListens(ctx(), subscriptions);
  const uris = (from: number, count: number) => Array.from({ length: count }, (_, i) => `file:///srv/r/f${from + i}`);
  assert.equal(track(listen(1, uris(0, 600))), undefined);
  assert.match(JSON.stringify(track(listen(2, uris(600, 401)))), /Too many resourceSubscriptions on this connection: 600 named by its open listen streams and 401 asked exceeds maximum of 1000/);
  assert.equal(subscriptions.listened(), 600, 'nothing kept of the one refused');
  assert.equal(track(listen(2, uris(600, 400))), undefined);
  // The same id again replaces its stream: its own URIs do not count against it.
  assert.equal(track(listen(1, uris(1000, 600))), undefined);
  assert.equal(subscriptions.listened(), 1000);
  // A stream cancelled gives its share back.
  track({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } });
  assert.equal(track(listen(3, uris(2000, 400))), undefined);
  // resources/subscribe's URIs are counted by its own bound, not this one.
  subscriptions.add('file:///srv/r/sub', 'sub');
  assert.equal(subscriptions.listened(), 1000);
});

test('folding in turns lets other work run between slices: a listen costing 50 ms does not hold the loop for 50 ms', async () => {
  // 1,000 lookups of 0.05 ms each: 50 ms of folding, fifty times a turn's 1 ms.
  const fold = trackListensInTurns(ctx(0.05), new Subscriptions(), new TurnBudget(1))(listen(1, Array.from({ length: 1000 }, (_, i) => `file:///srv/r/f${i}`)));
  let turns = 0;
  let folded = false;
  void fold.then(() => (folded = true));
  const tick = () =>
    new Promise<void>((resolve) =>
      setImmediate(() => {
        if (!folded) turns++;
        resolve();
      }),
    );
  while (!folded) await tick();
  assert.ok(turns >= 20, `the loop turned ${turns} times while the listen was folded`);
});

test('many listens folding at once share the turn: together they fold about 1 ms before the loop turns, not 1 ms each', async () => {
  // 20 listens of 100 lookups of 0.05 ms: 100 ms of folding in all. Each resuming listen starting a budget of its
  // own folded 20 slices a turn, and the loop turned about 5 times.
  const track = trackListensInTurns(ctx(0.05), new Subscriptions(), new TurnBudget(1));
  const all = Promise.all(Array.from({ length: 20 }, (_, k) => track(listen(k + 1, Array.from({ length: 100 }, (_, i) => `file:///srv/r/l${k}/f${i}`)))));
  let turns = 0;
  let folded = false;
  void all.then(() => (folded = true));
  while (!folded) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!folded) turns++;
  }
  assert.ok(turns >= 40, `the loop turned ${turns} times while 20 listens were folded`);
});

test('a spelling folds to what the index says now: after a write, a name without its slash is the folder made since', async () => {
  // The answers are remembered while the index is unchanged (many clients listen to the same files).
  const rows = new Map<string, { uri: string; kind: EntryKind }>();
  const index = { writes: 0, store: { get: (uri: string) => rows.get(uri) } };
  const subscriptions = new Subscriptions();
  const track = trackListensInTurns({ roots: [root], index } as never, subscriptions, new TurnBudget(1));
  await track(listen(1, ['file:///srv/r/x']));
  assert.ok(subscriptions.has('file:///srv/r/x'), 'no entry: the name as it is');
  // x is made a folder, and indexed.
  rows.set('file:///srv/r/x/', { uri: 'file:///srv/r/x/', kind: EntryKind.collection });
  index.writes++;
  await track(listen(2, ['file:///srv/r/x']));
  assert.ok(subscriptions.has('file:///srv/r/x/'), 'the folder, once indexed');
  // Without a write in between, the remembered answer stands (what the memory is for): listen 3 holds the folder.
  rows.delete('file:///srv/r/x/');
  await track(listen(3, ['file:///srv/r/x']));
  subscriptions.release({ listen: 2 });
  assert.ok(subscriptions.has('file:///srv/r/x/'), 'listen 3 folded to the remembered folder');
});

test('releasing in turns drops what releasing at once drops, and no more: a URI another listen holds stays', async () => {
  const atOnce = new Subscriptions();
  const inTurns = new Subscriptions();
  for (const subscriptions of [atOnce, inTurns]) {
    const track = trackListens(ctx(), subscriptions);
    track(listen(1, Array.from({ length: 450 }, (_, i) => `file:///srv/r/n${i}.md`)));
    track(listen(2, ['file:///srv/r/n7.md', 'file:///srv/r/./n8.md', 'file:///srv/r/other.md']));
  }
  atOnce.release({ listen: 1 });
  const released = inTurns.releaseInTurns({ listen: 1 }, new TurnBudget(0));
  assert.equal(inTurns.holders, 1, 'the holder is gone at once');
  await released;
  assert.equal(inTurns.size, 3);
  assert.equal(atOnce.size, 3);
  for (const uri of ['file:///srv/r/n7.md', 'file:///srv/r/n8.md', 'file:///srv/r/other.md']) assert.ok(inTurns.has(uri) && atOnce.has(uri), uri);
  assert.deepEqual(inTurns.spellingsOf('file:///srv/r/n8.md'), ['file:///srv/r/./n8.md'], 'the spelling listen 2 asked for');
  await inTurns.releaseInTurns({ listen: 2 }, new TurnBudget(0));
  assert.equal(inTurns.size, 0);
});

test('a turn budget is shared: 20 callers taking slices of 0.4 ms run at most 6 slices between two turns, not 20', async () => {
  // A slice starts while the turn has budget left: at 0, 0.4 and 0.8 ms at most. The probe runs once a turn, at
  // some point among the slices: it may see the end of one turn and the start of the next. A budget per caller,
  // one restarted by each caller resuming, or one that let through every caller asking at once, ran 20.
  const turns = new TurnBudget(1);
  let inThisTurn = 0;
  let most = 0;
  let done = false;
  const probe = (async () => {
    while (!done) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      inThisTurn = 0;
    }
  })();
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      for (let i = 0; i < 10; i++) {
        await turns.slice();
        const until = performance.now() + 0.4;
        while (performance.now() < until);
        most = Math.max(most, ++inThisTurn);
      }
    }),
  );
  done = true;
  await probe;
  assert.ok(most <= 6, `${most} slices ran between two turns`);
});

test('a revision the SDK serves no listen on keeps nothing; an id used again holds only its last listen (300 MiB of URIs no stream heard)', () => {
  const subscriptions = new Subscriptions();
  const track = trackListens(ctx(), subscriptions);
  const future = listen(1, URIS.slice(5, 105));
  (future.params._meta as Record<string, string>)[PROTOCOL_VERSION_META_KEY] = '2999-01-01';
  assert.equal(track(future), undefined);
  assert.equal(subscriptions.size, 0, 'refused by the SDK: nothing kept');
  track(listen(7, URIS.slice(5, 105)));
  track(listen(7, URIS.slice(105, 205)));
  assert.equal(subscriptions.size, 100, 'the second listen of id 7 replaced the first');
  assert.deepEqual([...subscriptions.heldBy({ listen: 7 })].sort(), URIS.slice(105, 205).sort());
});
