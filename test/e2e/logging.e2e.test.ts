// Server log lines reach 2025-era clients as notifications/message, at the
// level the client asked for (issue 24, item 7). A PDF that cannot be parsed
// logs a warning when it is read; the read's answer follows every
// notification sent before it on the same stdout, so "nothing arrived" is
// known once the answer is in.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { rejectsWith, serveTree, type LooseResult } from '../helpers.ts';

const broken = (n: number) => `not a pdf, number ${n}`;

describe('logging: notifications/message on the 2025 era', () => {
  const served = serveTree(
    { 'a.pdf': broken(1), 'b.pdf': broken(2), 'c.pdf': broken(3), 'd.pdf': broken(4) },
    ({ root }) => [root, '--db', ':memory:', '--watcher', 'none', '--no-search'],
    { era: 'legacy' },
  );
  const messages: LooseResult[] = [];
  const about = (name: string) => messages.filter((m) => String(m.data).includes(name));
  const read = (name: string) => served.conn.request('resources/read', { uri: served.uriOf(name) });

  test('declares the logging capability', () => {
    served.conn.onNotification('notifications/message', (params) => messages.push(params));
    assert.deepEqual((served.conn.client as V1Client).getServerCapabilities()?.logging, {});
  });

  test('a warning reaches a client that set no level', async () => {
    await read('a.pdf');
    const [line, ...more] = about('a.pdf');
    assert.equal(more.length, 0);
    assert.equal(line?.level, 'warning');
    assert.equal(line?.logger, 'folder-mcp');
    assert.match(String(line?.data), /a\.pdf left out: PDF cannot be parsed/);
  });

  test('logging/setLevel error silences warnings; warning brings them back', async () => {
    assert.deepEqual(await served.conn.request('logging/setLevel', { level: 'error' }), {});
    await read('b.pdf');
    assert.deepEqual(about('b.pdf'), []);
    await served.conn.request('logging/setLevel', { level: 'warning' });
    await read('c.pdf');
    assert.equal(about('c.pdf').length, 1);
  });

  test('an unknown level is -32602 and changes nothing', async () => {
    await rejectsWith(served.conn.request('logging/setLevel', { level: 'loud' }), -32602, /level must be one of debug, info/);
    await rejectsWith(served.conn.request('logging/setLevel', {}), -32602);
    await read('d.pdf');
    assert.equal(about('d.pdf').length, 1, 'still at warning');
  });
});

describe('logging: nothing unsolicited on 2026-07-28', () => {
  const served = serveTree(
    { 'a.pdf': broken(1) },
    ({ root }) => [root, '--db', ':memory:', '--watcher', 'none', '--no-search'],
    { era: 'modern' },
  );

  test('the warning stays on stderr', async () => {
    const messages: LooseResult[] = [];
    served.conn.onNotification('notifications/message', (params) => messages.push(params));
    await served.conn.request('resources/read', { uri: served.uriOf('a.pdf') });
    assert.deepEqual(messages, []);
    assert.match(served.conn.stderr(), /a\.pdf left out/);
  });
});
