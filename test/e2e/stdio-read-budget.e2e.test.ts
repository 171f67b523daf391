// Issue 34: on stdio an answer keeps its share of the read budget until it has
// been written, and the share is what the answer weighs on the wire (JSON-
// escaped text, base64). Before, 16 concurrent 4 MiB reads held 509-680 MiB:
// the budget counted file bytes and was given back when the handler
// returned, while the answers waited for the pipe. The server runs in this
// process (the binary's start-up and StdioTransport) over a stdout whose
// client reads only when the test says so; memory itself is the bench's
// (bench/scenarios/abuse.ts, attacks 13-15).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { createApp, type App } from '../../src/app.ts';
import { READ_BUDGET_BYTES, wireBytes } from '../../src/content/read-budget.ts';
import { prepareLaunch, serveStdioStreams, type StdioServing } from '../../src/launch.ts';
import { createLogger } from '../../src/log.ts';
import { tempDir, waitFor, writeTree } from '../basics.ts';

const MIB = 1024 * 1024;

/**
 * A client's stdout end: takes what the server writes only while reading
 * (else the write's callback waits). Its buffer is large, so the transport
 * keeps reading requests meanwhile (with a full buffer it stops reading
 * stdin, and requests already read are what pile up).
 */
function clientOutput() {
  const chunks: Buffer[] = [];
  const held: (() => void)[] = [];
  let reading = true;
  const output = new Writable({
    highWaterMark: 64 * MIB,
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      if (reading) callback();
      else held.push(callback);
    },
  });
  return {
    output,
    /** The answers written so far, by id (a line may come in more than one chunk). */
    answers(): Map<unknown, Record<string, unknown>> {
      const text = Buffer.concat(chunks).toString('utf8');
      const lines = text.split('\n').slice(0, -1).map((l) => JSON.parse(l) as Record<string, unknown>);
      return new Map(lines.filter((m) => 'id' in m).map((m) => [m.id, m]));
    },
    /** Whether the server has started writing the answer to `id` (its first bytes are out). */
    started(id: number): boolean {
      return chunks.some((c) => c.includes(`"id":${id},`) || c.includes(`"id":${id}}`));
    },
    pause() {
      reading = false;
    },
    resume() {
      reading = true;
      for (const callback of held.splice(0)) callback();
    },
  };
}

describe('stdio: answers hold the read budget until written, counted as on the wire', () => {
  const dir = tempDir();
  // Every character of it is escaped in JSON: its answer weighs twice its bytes, more than base64's 4/3.
  const quoted = '"\\'.repeat(1.5 * MIB);
  const binary = randomBytes(4 * MIB);
  let app: App;
  let serving: StdioServing;
  let out: ReturnType<typeof clientOutput>;
  const input = new PassThrough();
  const send = (message: Record<string, unknown>) => input.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  const uri = (name: string) => pathToFileURL(`${dir.path}/${name}`).href;

  before(async () => {
    writeTree(dir.path, { 'quoted.txt': quoted, 'random.bin': binary, 'small.txt': 'small\n' });
    const launch = prepareLaunch(['--db', ':memory:', '--no-search', dir.path], process.env, '0.0.0-test');
    if (launch.kind !== 'serve') throw new Error(launch.text);
    const log = createLogger('error', () => {});
    app = createApp(launch.config, launch.roots, launch.dbFile, log, { name: 'folder-mcp', version: '0.0.0-test' });
    out = clientOutput();
    serving = serveStdioStreams(app, input, out.output, log, () => {});
    send({ id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } });
    send({ method: 'notifications/initialized' });
    send({ id: 100, method: 'resources/list', params: {} });
    await waitFor(() => out.answers().has(100), 30_000, 'the first list');
  });

  after(async () => {
    out.resume();
    await serving.close();
    await app.close();
    dir.cleanup();
  });

  test('a read waits while another answer, not yet written, holds the budget; the share is the escaped size', async () => {
    const budget = app.services().ctx.readBudget;
    const escaped = Buffer.byteLength(JSON.stringify(quoted)) - 2;
    assert.ok(escaped > wireBytes(Buffer.byteLength(quoted)), 'the text must weigh more on the wire than base64 would');
    assert.ok(escaped + wireBytes(binary.length) > READ_BUDGET_BYTES, 'the two answers must not fit in the budget together');
    out.pause();
    send({ id: 1, method: 'resources/read', params: { uri: uri('quoted.txt') } });
    await waitFor(() => out.started(1), 30_000, 'the first answer being written');
    send({ id: 2, method: 'resources/read', params: { uri: uri('random.bin') } });
    await waitFor(() => budget.queued === 1, 30_000, 'the second read waiting for the budget');
    // Written into a pipe nobody reads yet: its share stays, grown to the answer's exact size.
    assert.equal(budget.inUse, escaped);
    assert.equal(out.started(2), false);
    out.resume();
    await waitFor(() => out.answers().has(2), 30_000, 'the second answer');
    const answers = out.answers();
    assert.equal((answers.get(1)!.result as { contents: { text: string }[] }).contents[0]!.text, quoted);
    assert.equal((answers.get(2)!.result as { contents: { blob: string }[] }).contents[0]!.blob, binary.toString('base64'));
    await waitFor(() => budget.inUse === 0, 30_000, 'the budget given back once both are written');
  });

  test('the read tool with paths holds one share for the call until its answer is written', async () => {
    const budget = app.services().ctx.readBudget;
    out.pause();
    send({ id: 3, method: 'tools/call', params: { name: 'read', arguments: { paths: ['random.bin', 'quoted.txt', 'small.txt', 'missing.txt'], length: MIB } } });
    await waitFor(() => out.started(3), 30_000, 'the tool answer being written');
    // What its answer may weigh (base64 of two 1 MiB windows and 6 bytes) and one whole file read at a time.
    assert.equal(budget.inUse, wireBytes(2 * MIB + 6) + binary.length, 'the share went back before the answer was written');
    // A small read fits beside it (its answer is written after the call's).
    send({ id: 4, method: 'resources/read', params: { uri: uri('small.txt') } });
    out.resume();
    await waitFor(() => out.answers().has(4) && out.answers().has(3), 30_000, 'both answers');
    const result = out.answers().get(3)!.result as { structuredContent: { results: { path: string; error?: string; length?: number }[] } };
    assert.deepEqual(result.structuredContent.results.map((r) => r.length ?? r.error?.slice(0, 10)), [MIB, MIB, 6, 'Not found:']);
    await waitFor(() => budget.inUse === 0, 30_000, 'the budget given back');
  });
});
