import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, test } from 'node:test';
import { malformedReply } from '../src/protocol/stdio-guard.ts';
import { CLI, tempDir, writeTree } from './helpers.ts';

describe('malformedReply', () => {
  const rows: Array<{ line: string; expected: ReturnType<typeof malformedReply> }> = [
    { line: '', expected: undefined },
    { line: '{"jsonrpc":"2.0","id":1,"method":"ping"}', expected: undefined },
    { line: '{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"prefix":"x"}}', expected: undefined },
    { line: '{"jsonrpc":"2.0","method":"notifications/initialized"}', expected: undefined },
    { line: '{"jsonrpc":"2.0","id":"a","result":{}}', expected: undefined },
    { line: 'not json', expected: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } } },
    { line: '{"jsonrpc":"2.0","id":1,"method":"resources/list"', expected: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } } },
    {
      line: '{"jsonrpc":"2.0","id":2,"method":"resources/list","params":[]}',
      expected: { jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Invalid params: params must be an object' } },
    },
    {
      line: '{"jsonrpc":"2.0","id":"s","method":"resources/read","params":"file:///x"}',
      expected: { jsonrpc: '2.0', id: 's', error: { code: -32602, message: 'Invalid params: params must be an object' } },
    },
    {
      line: '{"jsonrpc":"2.0","id":3,"method":"resources/list","params":null}',
      expected: { jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'Invalid params: params must be an object' } },
    },
    { line: '{"jsonrpc":"2.0","id":4}', expected: { jsonrpc: '2.0', id: 4, error: { code: -32600, message: 'Invalid Request' } } },
    { line: '{"jsonrpc":"1.0","id":5,"method":"ping"}', expected: { jsonrpc: '2.0', id: 5, error: { code: -32600, message: 'Invalid Request' } } },
    { line: '[1,2]', expected: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } } },
    { line: '42', expected: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } } },
    { line: '{"jsonrpc":"2.0","method":"notifications/x","params":[]}', expected: null },
    { line: '{"jsonrpc":"2.0","id":6,"result":5}', expected: null },
  ];
  for (const { line, expected } of rows) {
    test(line || '(blank)', () => assert.deepEqual(malformedReply(line), expected));
  }
});

describe('malformed lines over stdio', () => {
  test('each gets an answer, and the server keeps serving', async () => {
    const root = tempDir();
    writeTree(root.path, { 'a.txt': 'a' });
    const child = spawn(process.execPath, [CLI, root.path, '--db', ':memory:'], { stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      const answers = new Map<unknown, { error?: { code: number }; result?: unknown }>();
      const lines = createInterface({ input: child.stdout });
      const nonJson: string[] = [];
      lines.on('line', (line) => {
        try {
          const message = JSON.parse(line) as { id: unknown };
          answers.set(message.id, message as never);
        } catch {
          nonJson.push(line);
        }
      });
      const send = (line: string) => child.stdin.write(`${line}\n`);
      send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } }));
      send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
      send('{"jsonrpc":"2.0","id":2,"method":"resources/list","params":[]}');
      send('this is not json');
      send('{"jsonrpc":"2.0","id":3}');
      send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'resources/list', params: {} }));
      const deadline = Date.now() + 15_000;
      while (!(answers.has(2) && answers.has(null) && answers.has(3) && answers.has(4)) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.equal(answers.get(2)?.error?.code, -32602);
      assert.equal(answers.get(null)?.error?.code, -32700);
      assert.equal(answers.get(3)?.error?.code, -32600);
      assert.ok(answers.get(4)?.result, 'a good request after the bad ones is answered');
      assert.deepEqual(nonJson, [], 'stdout carries JSON-RPC only');
    } finally {
      child.kill();
      root.cleanup();
    }
  });
});
