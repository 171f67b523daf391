// subscriptions/listen within bounds (issue 23, items 6-8): at most
// MAX_LISTEN_URIS per listen, spellings of one resource folded to one before
// anything is stored or published, nothing kept for a listen the SDK refuses.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { createApp, type App, type ClientSession } from '../../src/app.ts';
import { parseCliArgs } from '../../src/config.ts';
import { silentLogger } from '../../src/log.ts';
import { MAX_LISTEN_URIS } from '../../src/protocol/listen.ts';
import { Subscriptions } from '../../src/protocol/subscriptions.ts';
import { makeRoot } from '../../src/uri.ts';
import { serveTree, tempDir, waitFor, writeTree, type LooseResult } from '../helpers.ts';

const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
const listenRequest = (id: number, uris: string[], meta: Record<string, unknown> | null = ENVELOPE) => ({
  jsonrpc: '2.0',
  id,
  method: 'subscriptions/listen',
  params: { notifications: { resourceSubscriptions: uris }, ...(meta ? { _meta: meta } : {}) },
});

describe('listen tracking in process', () => {
  let dir: ReturnType<typeof tempDir>;
  let app: App;
  let session: ClientSession;
  let rootUri: string;
  before(() => {
    dir = tempDir();
    writeTree(dir.path, { 'a.txt': 'a\n' });
    const parsed = parseCliArgs([dir.path, '--watcher', 'none']);
    if (parsed.kind !== 'run') throw new Error('bad args');
    const root = makeRoot(dir.path);
    rootUri = root.uri;
    app = createApp(parsed.config, [root], ':memory:', silentLogger, { name: 'folder-mcp', version: '0' });
    session = app.openSession();
  });
  after(async () => {
    session.close();
    await app.close();
    dir.cleanup();
  });

  test('a listen naming more than MAX_LISTEN_URIS is refused whole, nothing kept', () => {
    const uris = Array.from({ length: MAX_LISTEN_URIS + 1 }, (_, i) => `${rootUri}f${i}.txt`);
    const refused = session.onInbound(listenRequest(1, uris), 'modern');
    assert.equal(refused?.error.code, -32602);
    assert.match(refused.error.message, new RegExp(`Too many resourceSubscriptions: ${MAX_LISTEN_URIS + 1} exceeds maximum of ${MAX_LISTEN_URIS}`));
    assert.equal(session.connection.subscriptions.size, 0);
  });

  test('spellings of one resource fold to the first, in the request the SDK then reads', () => {
    const spellings = [`${rootUri}a.txt`, ...Array.from({ length: 999 }, (_, n) => `${rootUri}${n}/../a.txt`)];
    const request = listenRequest(2, spellings);
    assert.equal(session.onInbound(request, 'modern'), undefined);
    assert.deepEqual(request.params.notifications.resourceSubscriptions, [`${rootUri}a.txt`]);
    assert.equal(session.connection.subscriptions.size, 1);
    assert.deepEqual(session.connection.subscriptions.spellingsOf(`${rootUri}a.txt`), [`${rootUri}a.txt`]);
    session.onInbound({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } }, 'modern');
    assert.equal(session.connection.subscriptions.size, 0);
    assert.equal(session.connection.subscriptions.holders, 0);
  });

  test('an answer to a listen (the SDK refused it, or it ended) releases what it was tracked for; an answer to anything else, nothing', () => {
    assert.equal(session.onInbound(listenRequest(5, [`${rootUri}a.txt`]), 'modern'), undefined);
    assert.equal(session.onInbound(listenRequest(6, [`${rootUri}b.txt`]), 'modern'), undefined);
    assert.equal(session.connection.subscriptions.size, 2);
    session.answered(99);
    assert.equal(session.connection.subscriptions.size, 2);
    session.answered(5);
    assert.deepEqual([session.connection.subscriptions.has(`${rootUri}a.txt`), session.connection.subscriptions.has(`${rootUri}b.txt`)], [false, true]);
    session.answered(6);
    assert.equal(session.connection.subscriptions.holders, 0);
  });

  test('nothing is kept for a listen on a 2025-era connection, or without the 2026 envelope', () => {
    session.onInbound(listenRequest(3, [rootUri]), 'legacy');
    session.onInbound(listenRequest(4, [rootUri], null), 'opening');
    assert.equal(session.connection.subscriptions.size, 0);
  });
});

describe('Subscriptions: a holder releases its own', () => {
  test('release leaves what others hold, and forgets the holder', () => {
    const subs = new Subscriptions();
    subs.add('file:///r/a', 'a', { listen: 1 });
    subs.add('file:///r/a', 'a', { listen: 2 });
    subs.add('file:///r/b', 'b', { listen: 2 });
    subs.add('file:///r/c', 'c');
    subs.release({ listen: 2 });
    assert.deepEqual([subs.has('file:///r/a'), subs.has('file:///r/b'), subs.has('file:///r/c')], [true, false, true]);
    assert.equal(subs.holders, 2);
    subs.delete('file:///r/c');
    subs.release({ listen: 1 });
    assert.equal(subs.size, 0);
    assert.equal(subs.holders, 0);
  });
});

describe('a listen of a thousand spellings of the root hears one updated per change (2026-07-28, stdio)', () => {
  const tree = serveTree({ 'notes.md': 'one\n' }, ({ root }) => [root, '--db', ':memory:'], { era: 'modern' });

  test('one notification, in the first spelling', async () => {
    const client = tree.conn.client as Client;
    const heard: string[] = [];
    tree.conn.onNotification('notifications/resources/updated', (p: LooseResult) => heard.push(p.uri as string));
    const spellings = [tree.rootUri, ...Array.from({ length: 999 }, (_, n) => `${tree.rootUri}${n}/../`)];
    const stream = await client.listen({ resourceSubscriptions: spellings });
    try {
      writeFileSync(join(tree.root, 'notes.md'), 'two, longer\n');
      await waitFor(() => heard.length > 0, 30_000, 'the updated notification');
      // Anything published with it went out before a later answer on the same pipe.
      await tree.conn.request('resources/list', {});
      assert.deepEqual(heard, [tree.rootUri]);
      await assert.rejects(client.listen({ resourceSubscriptions: [...spellings, `${tree.rootUri}x`] }), /Too many resourceSubscriptions/);
    } finally {
      await stream.close();
    }
  });
});
