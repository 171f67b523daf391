// ResourceNotifier (src/protocol/notify.ts): a connection whose transport
// cannot write out what it holds (a stdio client that stopped reading stdout)
// is sent nothing more until it can; what changes meanwhile waits, one entry
// per subscribed URI, and goes out once. On the test clock.
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

describe('ResourceNotifier', () => {
  test('while the transport holds what it was given, no window sends more; then what changed meanwhile goes once', async () => {
    const clock = new TestClock();
    const connection = new Connection();
    const files = Array.from({ length: 100 }, (_, i) => `${R}f${i}.txt`);
    for (const uri of files) connection.subscriptions.add(uri, uri.slice(R.length));
    // What the transport was given is written out when the test says so (a client reading again).
    let release: () => void = () => {};
    let written = Promise.resolve();
    const stall = () => void (written = new Promise<void>((resolve) => (release = resolve)));
    const sent: string[] = [];
    let lists = 0;
    connection.server = {
      sendResourceUpdated: (params: { uri: string }) => (sent.push(params.uri), written),
      sendResourceListChanged: () => (lists++, written),
    };
    const notifier = new ResourceNotifier(connection, silentLogger, { listQuietMs: 200, listMaxDelayMs: 1000, updatedQuietMs: 100, updatedMaxDelayMs: 500, clock });
    const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
    const windows = async (n: number) => {
      for (let i = 0; i < n; i++) {
        notifier.onCommitted(changed(files));
        clock.advance(600);
        await settle();
      }
      clock.advance(2000);
      await settle();
    };
    try {
      await windows(1);
      assert.deepEqual([sent.length, lists], [100, 1], 'a client that reads: every window goes out');
      stall();
      await windows(1);
      assert.ok(sent.length + lists > 101, 'the next window was handed to the transport, which holds it');
      const handed = [sent.length, lists];
      // The client reads nothing: a thousand more windows of every file changing hand over nothing more.
      await windows(1000);
      assert.deepEqual([sent.length, lists], handed);
      // It reads again: each file once more, and one list_changed.
      release();
      await settle();
      clock.advance(2000);
      await settle();
      assert.equal(sent.length, handed[0]! + 100);
      assert.deepEqual(sent.slice(-100).sort(), [...files].sort());
      assert.equal(lists, handed[1]! + 1);
    } finally {
      notifier.cancel();
    }
  });

  test('on 2026-07-28 the SDK resolves a send at once: while stdout is full (the transport says so), no window hands it more', async () => {
    const clock = new TestClock();
    const connection = new Connection();
    const files = Array.from({ length: 50 }, (_, i) => `${R}f${i}.txt`);
    for (const uri of files) connection.subscriptions.add(uri, uri.slice(R.length));
    let full: Promise<void> | null = null;
    let drain: () => void = () => {};
    connection.outputFull = () => full;
    const sent: string[] = [];
    connection.server = {
      sendResourceUpdated: async (params: { uri: string }) => void sent.push(params.uri),
      sendResourceListChanged: async () => {},
    };
    const notifier = new ResourceNotifier(connection, silentLogger, { listQuietMs: 200, listMaxDelayMs: 1000, updatedQuietMs: 100, updatedMaxDelayMs: 500, clock });
    const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
    try {
      notifier.onCommitted(changed(files));
      clock.advance(1000);
      await settle();
      assert.equal(sent.length, 50);
      full = new Promise<void>((resolve) => (drain = resolve));
      for (let i = 0; i < 100; i++) {
        notifier.onCommitted(changed(files));
        clock.advance(600);
        await settle();
      }
      assert.equal(sent.length, 50, 'nothing handed over while stdout is full');
      full = null;
      drain();
      await settle();
      clock.advance(1000);
      await settle();
      assert.equal(sent.length, 100, 'each file once more');
    } finally {
      notifier.cancel();
    }
  });
});
