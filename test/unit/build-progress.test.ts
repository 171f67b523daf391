// How long a search waits for the first content build (src/search/build-progress.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BuildProgress } from '../../src/search/build-progress.ts';

describe('BuildProgress.whenComplete', () => {
  test('waits when few documents are left, whatever the total (issue 46: a server per call never saw 5,000 files built)', async () => {
    const progress = new BuildProgress();
    progress.checked(4_500);
    progress.setTotal(5_000, false);
    const waited = progress.whenComplete(60_000, 2_000);
    progress.checked(500);
    progress.markComplete();
    assert.equal(await waited, true, '500 left of 5,000: waited for the end');
  });

  test('does not wait when many are left', async () => {
    const progress = new BuildProgress();
    progress.setTotal(5_000, false);
    assert.equal(await progress.whenComplete(60_000, 2_000), false);
  });
});
