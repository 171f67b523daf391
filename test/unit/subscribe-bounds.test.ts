// resources/subscribe (the 2025-11-25 era) is bounded per client: past
// MAX_SUBSCRIBED_URIS a new URI is -32602 with what to do instead; one held
// already, and a folder that covers the rest, still go. In process, over the
// stdio wire, a real SDK client.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { MAX_SUBSCRIBED_URIS } from '../../src/protocol/subscribe.ts';
import { pathToUri } from '../../src/uri.ts';
import { connectInProcess, tempTree } from '../helpers.ts';

const files = Object.fromEntries(Array.from({ length: MAX_SUBSCRIBED_URIS + 1 }, (_, i) => [`d/f${i}.txt`, `${i}\n`]));

describe('resources/subscribe, bounded per client', () => {
  const tree = tempTree(files);

  test(`past ${MAX_SUBSCRIBED_URIS} URIs a new one is refused with what to do; one held, and the folder, still go`, async () => {
    const conn = await connectInProcess(['--db', ':memory:', '--watcher', 'none', tree.root], { era: 'legacy' });
    try {
      const uriOf = (i: number) => pathToUri(join(tree.root, 'd', `f${i}.txt`), false);
      for (let i = 0; i < MAX_SUBSCRIBED_URIS; i++) await conn.request('resources/subscribe', { uri: uriOf(i) });
      await assert.rejects(conn.request('resources/subscribe', { uri: uriOf(MAX_SUBSCRIBED_URIS) }), (error: Error & { code?: number }) => {
        assert.equal(error.code, -32602);
        assert.match(error.message, /Too many subscriptions: at most 1000 URIs \(subscribe to a folder: it hears of everything beneath it\)/);
        return true;
      });
      await conn.request('resources/subscribe', { uri: uriOf(0) }); // held already: one subscription, as before
      await conn.request('resources/unsubscribe', { uri: uriOf(1) });
      await conn.request('resources/subscribe', { uri: pathToUri(join(tree.root, 'd'), true) }); // the room one freed
    } finally {
      await conn.close();
    }
  });
});
