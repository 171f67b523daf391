// Started from a terminal, the server says what it waits for and how to try
// it; started by a client (stdin a pipe), it says nothing of the kind. The
// terminal is a real pseudo-terminal from util-linux's script(1).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { CLI, connect, tempDir, waitFor, writeTree } from '../helpers.ts';

const HINT = /this is an MCP server: it waits for a client to speak JSON-RPC on stdin and stdout.*inspector@[0-9.]+ --cli node \S+cli\.js \S+ --method resources\/list/;
const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;

describe('a server started at a terminal', () => {
  const dir = tempDir();
  after(dir.cleanup);
  writeTree(dir.path, { 'a.txt': 'a\n' });

  test('says it waits for an MCP client, and how to try it', { skip: hasScript ? false : 'no script(1) here to make a terminal' }, async () => {
    const command = [process.execPath, CLI, dir.path, '--db', ':memory:'].map((a) => `'${a}'`).join(' ');
    const child = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitFor(() => HINT.test(output) || undefined, 30_000, 'the terminal hint');
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('says nothing of the kind to a client on a pipe', async () => {
    const conn = await connect([dir.path, '--db', ':memory:']);
    try {
      await conn.request('resources/list', {});
      assert.match(conn.stderr(), /serving /);
      assert.doesNotMatch(conn.stderr(), /this is an MCP server/);
    } finally {
      await conn.close();
    }
  });
});
