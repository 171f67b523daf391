// How often a wide folder is listed again (src/sync/relist-pace.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RelistPace, WIDE_RELIST_MS } from '../../src/sync/relist-pace.ts';
import { waitFor } from '../basics.ts';

test('a relist that took long makes the next wait, and the folder is looked at again once the wait is over', async () => {
  const looked: string[] = [];
  const pace = new RelistPace((dir) => looked.push(dir), new AbortController().signal);
  assert.equal(pace.defer('/w/wide'), false, 'nothing known: listed at once');
  pace.took('/w/narrow', WIDE_RELIST_MS - 1);
  assert.equal(pace.defer('/w/narrow'), false, 'a quick relist paces nothing');
  pace.took('/w/wide', WIDE_RELIST_MS);
  assert.equal(pace.defer('/w/wide'), true);
  assert.equal(pace.defer('/w/wide'), true, 'asked again while it waits');
  await waitFor(() => looked.length > 0, 30_000, 'the look after the wait');
  assert.deepEqual(looked, ['/w/wide'], 'one look, however often it was deferred');
  assert.equal(pace.defer('/w/wide'), false, 'the wait is over: listed');
});

test('once Live has ended, nothing is looked at', async () => {
  const looked: string[] = [];
  const lifetime = new AbortController();
  const pace = new RelistPace((dir) => looked.push(dir), lifetime.signal);
  pace.took('/w/wide', WIDE_RELIST_MS);
  assert.equal(pace.defer('/w/wide'), true);
  lifetime.abort();
  // The wait is 9 x WIDE_RELIST_MS: past it, with nothing looked at.
  await waitFor(() => pace.defer('/w/wide') === false, 30_000, 'the wait to end');
  // The scheduled look was due when the wait ended: a timer due then has run by the next one.
  await new Promise((resolve) => setTimeout(resolve, 1));
  assert.deepEqual(looked, []);
});
