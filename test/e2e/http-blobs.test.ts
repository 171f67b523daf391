// Large binary contents over HTTP are written as the answer is sent (src/protocol/sdk/answer-blobs.ts): whatever the
// era, the transport's answer shape (JSON, an SSE stream, a 2025 session's stream, a batch), the client gets the
// file's bytes, and never a placeholder. In process: a real App and the endpoint on 127.0.0.1.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { DEFER_BLOB_BYTES } from '../../src/protocol/sdk/answer-blobs.ts';
import { waitFor } from '../helpers.ts';
import { connectHttp, rawPost, serveInProcess } from '../http-helpers.ts';

const big = randomBytes(DEFER_BLOB_BYTES * 3 + 5);
const small = randomBytes(100);

type Message = { id: number; result?: { contents: Array<{ blob?: string }> }; error?: unknown };

/** The JSON-RPC messages of an answer: a JSON body (one or a batch), or an SSE stream's `data:` lines. */
function messages(body: string, type: string): Message[] {
  if (!type.startsWith('text/event-stream')) return [JSON.parse(body) as Message | Message[]].flat();
  return body
    .split('\n')
    .filter((line) => line.startsWith('data:') && line.slice('data:'.length).trim() !== '')
    .map((line) => JSON.parse(line.slice('data:'.length)) as Message);
}

describe('large binary contents over HTTP', () => {
  const served = serveInProcess({}, { 'big.bin': big, 'small.bin': small, 'big.txt': 'x'.repeat(DEFER_BLOB_BYTES * 2) });

  for (const era of ['modern', 'legacy'] as const) {
    test(`${era === 'modern' ? '2026-07-28' : 'a 2025 session'}: a file over DEFER_BLOB_BYTES reads as its bytes, as a small one and a large text do`, async () => {
      const conn = await connectHttp(served.endpoint.url, era);
      try {
        for (const [name, bytes] of [['big.bin', big], ['small.bin', small]] as const) {
          const read = (await conn.request('resources/read', { uri: `${served.rootUri}${name}` })) as { contents: Array<{ blob: string }> };
          assert.equal(read.contents[0]!.blob, bytes.toString('base64'), name);
        }
        const text = (await conn.request('resources/read', { uri: `${served.rootUri}big.txt` })) as { contents: Array<{ text: string }> };
        assert.equal(text.contents[0]!.text.length, DEFER_BLOB_BYTES * 2);
      } finally {
        await conn.close();
      }
    });
  }

  test('a 2025 batch outside any session: each answer holds its own file, no placeholder goes out', async () => {
    const uri = (name: string) => `${served.rootUri}${name}`;
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: uri('big.bin') } },
      { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri: uri('small.bin') } },
      { jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: uri('big.bin') } },
      { jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: uri('missing.bin') } },
    ];
    const answer = await rawPost(served.endpoint.url, { 'mcp-protocol-version': '2025-11-25' }, JSON.stringify(batch));
    assert.equal(answer.status, 200);
    assert.ok(!answer.body.includes('folderMcpBlob'), 'a placeholder went out');
    const byId = new Map(messages(answer.body, String(answer.headers['content-type'])).map((m) => [m.id, m]));
    assert.equal(byId.get(1)!.result!.contents[0]!.blob, big.toString('base64'));
    assert.equal(byId.get(2)!.result!.contents[0]!.blob, small.toString('base64'));
    assert.equal(byId.get(3)!.result!.contents[0]!.blob, big.toString('base64'));
    assert.ok(byId.get(4)!.error, 'the missing file is an error');
  });

  test('a 2025 session\'s read resumed on another stream (Last-Event-ID) carries the file, not a placeholder', async () => {
    // The SDK sends a session's answer on whatever stream holds its stream id: after a resumption, the GET's. So a
    // session's content is never deferred (only a request's own response is spliced); it was, and the resumed
    // stream carried a 44-character placeholder for the file.
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(served.endpoint.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }),
    });
    await init.text();
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    const post = (message: Record<string, unknown>) => fetch(served.endpoint.url, { method: 'POST', headers: session, body: JSON.stringify(message) });
    await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).text();
    // The read waits for the read budget, held here, so its answer comes after the resumption.
    const budget = served.app.services().ctx.readBudget;
    let free!: () => void;
    const holding = budget.run(budget.totalBytes, () => new Promise<void>((resolve) => (free = resolve)));
    const read = await post({ jsonrpc: '2.0', id: 7, method: 'resources/read', params: { uri: `${served.rootUri}big.bin` } });
    const reader = read.body!.getReader();
    const primed = /id: (\S+)/.exec(new TextDecoder().decode((await reader.read()).value))?.[1];
    assert.ok(primed, 'the answer stream has no priming event');
    await reader.cancel();
    // Until the server has seen the POST stream go, a resumption is 409.
    const resumed = (await waitFor(async () => {
      const get = await fetch(served.endpoint.url, { method: 'GET', headers: { ...session, accept: 'text/event-stream', 'last-event-id': primed } });
      if (get.status === 409) await get.body?.cancel();
      return get.status === 409 ? null : get;
    }, 10_000, 'the resumed stream'))!;
    assert.equal(resumed.status, 200);
    free();
    await holding;
    const text = await resumed.text();
    const answer = messages(text, 'text/event-stream').find((m) => m.id === 7);
    assert.equal(answer?.result?.contents[0]?.blob, big.toString('base64'));
  });
});
