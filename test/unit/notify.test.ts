// ResourceNotifier (src/protocol/notify.ts): a connection whose output is
// full (a stdio client that stopped reading stdout) is handed nothing more
// until it takes more; what changes meanwhile waits, one entry per subscribed
// URI, and goes out once. A client that reads hears a change at once. On the
// test clock.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CommittedChange } from '../../src/index/folder-index.ts';
import { silentLogger } from '../../src/log.ts';
import { Connection } from '../../src/protocol/connection.ts';
import { ResourceNotifier } from '../../src/protocol/notify.ts';
import { TestClock } from '../test-clock.ts';

const R = 'file:///r/';
const changed = (uris: string[]): CommittedChange => ({
  upserted: uris.map((uri) => ({ uri, parent: R, root: 0, name: uri.slice(R.length), ext: 'txt', kind: 0, size: 1, mtime: 0, mime: 'text/plain', ino: 0, dev: 0 })),
  removed: [],
  listChanged: true,
});

/**
 * A connection to 50 subscribed files whose output the test fills and
 * drains. `sendsWait`: a send settles only once the output takes more (the
 * 2025 era on stdio); else at once (2026-07-28, where the SDK queues it).
 */
function stalling(sendsWait: boolean) {
  const clock = new TestClock();
  const connection = new Connection();
  const files = Array.from({ length: 50 }, (_, i) => `${R}f${i}.txt`);
  for (const uri of files) connection.subscriptions.add(uri, uri.slice(R.length));
  let full: Promise<void> | null = null;
  let drain: () => void = () => {};
  connection.outputFull = () => full;
  const sent: string[] = [];
  let lists = 0;
  const settled = () => (sendsWait && full ? full : Promise.resolve());
  connection.server = {
    sendResourceUpdated: (params: { uri: string }) => (sent.push(params.uri), settled()),
    sendResourceListChanged: () => (lists++, settled()),
  };
  const notifier = new ResourceNotifier(connection, silentLogger, { listQuietMs: 200, listMaxDelayMs: 1000, updatedQuietMs: 100, updatedMaxDelayMs: 500, clock });
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    clock,
    files,
    notifier,
    settle,
    counts: () => ({ updated: sent.length, lists }),
    sent,
    fill: () => void (full = new Promise<void>((resolve) => (drain = resolve))),
    drain: () => {
      full = null;
      drain();
    },
    /** `n` windows of every file changing, then the quiet. */
    async windows(n: number) {
      for (let i = 0; i < n; i++) {
        notifier.onCommitted(changed(files));
        clock.advance(600);
        await settle();
      }
      clock.advance(2000);
      await settle();
    },
  };
}

describe('ResourceNotifier', () => {
  test('a client that reads hears a change at once: updated and list_changed on the leading edge, neither behind the other (one spell late, they took 123 ms)', async () => {
    const c = stalling(true);
    try {
      c.notifier.onCommitted(changed([c.files[0]!]));
      await c.settle();
      assert.deepEqual(c.counts(), { updated: 1, lists: 1 }, 'before any time passed');
    } finally {
      c.notifier.cancel();
    }
  });

  for (const sendsWait of [true, false]) {
    test(`while the output is full no window hands it more; then what changed meanwhile goes once (${sendsWait ? 'sends settle when written: 2025' : 'sends settle at once: 2026-07-28'})`, async () => {
      const c = stalling(sendsWait);
      try {
        await c.windows(1);
        assert.deepEqual(c.counts(), { updated: 50, lists: 1 });
        c.fill();
        await c.windows(1);
        const handed = c.counts();
        assert.ok(handed.updated + handed.lists <= 50 + 1 + 51, 'at most the window that filled it');
        // The client reads nothing: a hundred more windows of every file changing hand over nothing more.
        await c.windows(100);
        assert.deepEqual(c.counts(), handed);
        // It reads again: each file once more, and one list_changed.
        c.drain();
        await c.settle();
        c.clock.advance(2000);
        await c.settle();
        assert.equal(c.counts().updated, handed.updated + 50);
        assert.deepEqual(c.sent.slice(-50).sort(), [...c.files].sort());
        assert.equal(c.counts().lists, handed.lists + 1);
      } finally {
        c.notifier.cancel();
      }
    });
  }
});
