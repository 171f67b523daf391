// src/index/readiness.ts: an index's start-up as one value, a state plus one promise per state. The value on
// its own (no timers but the hold's, on a clock the test moves), then as FolderIndex drives it over a real
// temp folder and real SQLite.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mock, test } from 'node:test';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { Readiness } from '../../src/index/readiness.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { tempDir, writeTree } from '../basics.ts';

/** A turn of the event loop: every callback queued so far has run (no fixed wait). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** How `promise` stands after a turn. */
async function outcome(promise: Promise<unknown>): Promise<'resolved' | 'rejected' | 'pending'> {
  let seen: 'resolved' | 'rejected' | 'pending' = 'pending';
  promise.then(
    () => (seen = 'resolved'),
    () => (seen = 'rejected'),
  );
  await turn();
  return seen;
}

test('a start-up goes scanning, scanned, caught-up, each promise resolving once, in that order', async () => {
  const readiness = new Readiness();
  assert.equal(readiness.state, 'scanning');
  assert.equal(await outcome(readiness.reached('scanning')), 'resolved', 'where it starts is reached at once');
  assert.equal(await outcome(readiness.reached('scanned')), 'pending');
  // A catch-up over before the scan is (a warm start's, or a test's) waits for it: caught-up comes after scanned.
  readiness.catchUp(Promise.resolve());
  assert.equal(await outcome(readiness.reached('caught-up')), 'pending', 'caught up before the scan was over');
  assert.equal(readiness.state, 'scanning');

  const order: string[] = [];
  const scanned = readiness.reached('scanned');
  void scanned.then(() => order.push('scanned'));
  void readiness.reached('caught-up').then(() => order.push('caught-up'));
  readiness.scanned();
  assert.equal(readiness.state, 'scanned', 'the state moves when it is entered, before anybody awaiting hears of it');
  await readiness.reached('caught-up');
  assert.equal(readiness.state, 'caught-up');
  assert.deepEqual(order, ['scanned', 'caught-up']);
  // Settled once: the same promise, and nothing goes back or fails after.
  assert.equal(readiness.reached('scanned'), scanned);
  readiness.scanned();
  readiness.failed(new Error('too late'));
  assert.equal(readiness.state, 'caught-up');
  assert.equal(await outcome(readiness.reached('scanned')), 'resolved');
});

test('a catch-up that fails or never ends: over for the first, never for the second', async () => {
  const failing = new Readiness();
  failing.scanned();
  failing.catchUp(Promise.reject(new Error('the watcher failed')));
  await failing.reached('caught-up');
  assert.equal(failing.state, 'caught-up');

  const endless = new Readiness();
  endless.scanned();
  endless.catchUp(new Promise(() => {}));
  assert.equal(await outcome(endless.reached('caught-up')), 'pending');
  assert.equal(endless.state, 'scanned');
});

test('a failed scan ends the start-up: every state not reached rejects with its error, and nothing moves it on', async () => {
  const readiness = new Readiness();
  readiness.catchUp(Promise.resolve());
  const error = new Error('index closed during the scan');
  // Nobody waits yet: no unhandled rejection either (the test runner would fail the file).
  readiness.failed(error);
  assert.equal(readiness.state, 'failed');
  await assert.rejects(readiness.reached('scanned'), (e) => e === error);
  await assert.rejects(readiness.reached('caught-up'), (e) => e === error);
  assert.equal(await outcome(readiness.reached('scanning')), 'resolved');
  readiness.scanned();
  readiness.failed(new Error('a second failure'));
  assert.equal(readiness.state, 'failed');
  await assert.rejects(readiness.reached('scanned'), (e) => e === error);
});

test('held requests go once the index has caught up, or after maxMs at most; none are held unless asked', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const caughtUp = new Readiness();
    assert.equal(caughtUp.held, undefined);
    caughtUp.scanned();
    let finish!: () => void;
    caughtUp.catchUp(new Promise<void>((resolve) => (finish = resolve)));
    caughtUp.holdRequests(2000);
    const held = caughtUp.held;
    assert.ok(held);
    assert.equal(await outcome(held), 'pending');
    finish();
    await held;
    await turn(); // the hold forgets itself once it has settled
    assert.equal(caughtUp.held, undefined, 'still held after the catch-up');

    const slow = new Readiness();
    slow.scanned();
    slow.catchUp(new Promise(() => {}));
    slow.holdRequests(2000);
    const waiting = slow.held!;
    mock.timers.tick(1999);
    assert.equal(await outcome(waiting), 'pending', 'released before maxMs');
    mock.timers.tick(1);
    await waiting;
    await turn();
    assert.equal(slow.held, undefined);
    assert.equal(slow.state, 'scanned', 'maxMs releases the requests, it does not catch the index up');
  } finally {
    mock.timers.reset();
  }
});

test('FolderIndex: a cold index is scanning until its scan is committed, a warm one scanned at once; closed mid-scan, failed', async () => {
  const dir = tempDir();
  const state = tempDir('folder-mcp-state-');
  try {
    writeTree(dir.path, { 'a.md': 'alpha\n', 'sub/b.txt': 'beta\n' });
    const options = { roots: [makeRoot(dir.path)], dbFile: join(state.path, 'i.db'), log: silentLogger, gitignore: true, exclude: [] };
    const cold = new FolderIndex(options);
    assert.equal(cold.readiness.state, 'scanning');
    await cold.readiness.reached('scanned');
    assert.equal(cold.readiness.state, 'scanned');
    assert.equal(cold.store.count(), 4, 'scanned before every entry (the root, a.md, sub, sub/b.txt) was committed');
    cold.close();

    const warm = new FolderIndex(options);
    assert.ok(warm.warm);
    assert.equal(warm.readiness.state, 'scanned', 'a warm index waited for something');
    warm.close();

    const closed = new FolderIndex({ ...options, dbFile: ':memory:' });
    closed.close();
    await assert.rejects(closed.readiness.reached('scanned'), /index closed during the scan/);
    assert.equal(closed.readiness.state, 'failed');
    assert.equal(await outcome(closed.nextCommit()), 'resolved', 'a page waiting for the next batch would wait for ever');
  } finally {
    dir.cleanup();
    state.cleanup();
  }
});
