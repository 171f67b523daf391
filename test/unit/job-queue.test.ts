// src/job-queue.ts: the queue the conversion process and the search thread share. Pure, no timers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JobQueue } from '../../src/job-queue.ts';

function queue(options: { maxWaiting?: number; held?: () => boolean; failStart?: (job: number) => boolean } = {}) {
  const started: number[] = [];
  let drained = 0;
  const q: JobQueue<number, string> = new JobQueue<number, string>({
    maxWaiting: options.maxWaiting ?? 2,
    refused: (reason) => new Error(reason),
    held: options.held,
    start: (job) => {
      if (options.failStart?.(job)) throw new Error(`cannot start ${job}`);
      started.push(job);
    },
    drained: () => drained++,
  });
  return { q, started, drained: () => drained };
}

test('one job at a time, in order; each finish starts the next; drained once nothing is left', async () => {
  const { q, started, drained } = queue();
  const a = q.add(1);
  const b = q.add(2);
  assert.deepEqual(started, [1], 'the second waits');
  assert.equal(q.current, 1);
  q.finish(undefined, 'one');
  assert.equal(await a, 'one');
  assert.deepEqual(started, [1, 2]);
  assert.equal(drained(), 0);
  q.finish(new Error('two failed'));
  await assert.rejects(b, /two failed/);
  assert.equal(q.current, undefined);
  assert.equal(drained(), 1);
  q.finish(undefined, 'nothing runs');
  assert.equal(drained(), 1, 'a finish with nothing running does nothing');
});

test('past maxWaiting a job is refused at once; a closed queue refuses the waiting and the new', async () => {
  const { q } = queue({ maxWaiting: 1 });
  const running = q.add(1);
  const waiting = q.add(2);
  await assert.rejects(q.add(3), /^Error: full$/);
  q.close();
  await assert.rejects(waiting, /^Error: closed$/);
  await assert.rejects(q.add(4), /^Error: closed$/);
  q.finish(new Error('stopped'));
  await assert.rejects(running, /stopped/, 'the running job is the owner\'s to end');
});

test("a waiting job whose request is cancelled leaves the queue, and its place is free; a running one is the owner's", async () => {
  const { q, started } = queue({ maxWaiting: 2 });
  const first = new AbortController();
  const second = new AbortController();
  const running = q.add(1, first.signal);
  const cancelled = q.add(2, second.signal);
  const kept = q.add(3);
  await assert.rejects(q.add(4), /^Error: full$/);
  second.abort();
  await assert.rejects(cancelled, /^Error: cancelled$/);
  const later = q.add(5);
  first.abort();
  assert.equal(q.current, 1, 'the running job runs on: its owner ends it');
  q.finish(undefined, 'one');
  assert.equal(await running, 'one');
  assert.deepEqual(started, [1, 3], 'the cancelled job never started');
  q.finish(undefined, 'three');
  assert.equal(await kept, 'three');
  q.finish(undefined, 'five');
  assert.equal(await later, 'five');
  assert.deepEqual(started, [1, 3, 5]);
  const gone = new AbortController();
  gone.abort();
  await assert.rejects(q.add(6, gone.signal), /^Error: cancelled$/, 'cancelled before it was queued');
  assert.deepEqual(started, [1, 3, 5]);
});

test('a start that throws fails that job only; the next starts', async () => {
  const { q, started } = queue({ failStart: (job) => job === 1 });
  const a = q.add(1);
  await assert.rejects(a, /cannot start 1/);
  const b = q.add(2);
  assert.deepEqual(started, [2]);
  q.finish(undefined, 'ok');
  assert.equal(await b, 'ok');
});

test('while held nothing starts; pump() starts the next once it is not', async () => {
  let held = true;
  const { q, started } = queue({ held: () => held });
  void q.add(1);
  assert.deepEqual(started, []);
  held = false;
  q.pump();
  assert.deepEqual(started, [1]);
});
