// GET /metrics over real sockets: behind the token, strict Prometheus text,
// counters that move with requests and refusals, labels from fixed sets only;
// and `--metrics` as a listener of its own beside a stdio server (the built
// CLI), which serves /metrics and nothing else.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { KNOWN_TOOLS } from '../../src/http/metrics.ts';
import { prepareLaunch } from '../../src/launch.ts';
import { CLI, tempDir, waitFor, writeTree } from '../helpers.ts';
import { connectHttp, rawPost, rawRequest, serveInProcess, type HttpClient } from '../http-helpers.ts';

const TOKEN = 'metrics-test-token-0123456789';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Prometheus text exposition format 0.0.4, strictly: every line a `# HELP`,
 * a `# TYPE` (once per family, before its samples) or a sample whose family
 * was typed; names and label names as the format allows; label values quoted
 * with only \\, \" and \n escaped; values floats (or +Inf, -Inf, NaN);
 * histograms with ascending `le` buckets whose counts never fall, ending in
 * +Inf equal to _count, and a _sum.
 */
function parseExposition(text: string): Sample[] {
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const sampleLine = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`);
  const labelPair = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(?:,|$)/;
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      assert.match(meta[2]!, new RegExp(`^${NAME}$`), line);
      if (meta[1] === 'TYPE') {
        assert.ok(!types.has(meta[2]!), `one TYPE line for ${meta[2]}`);
        assert.ok(['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(meta[3]!), line);
        types.set(meta[2]!, meta[3]!);
      }
      continue;
    }
    assert.ok(!line.startsWith('#'), `a comment that is neither HELP nor TYPE: ${line}`);
    const match = sampleLine.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    const [, name, labelText = '', valueText] = match;
    const labels: Record<string, string> = {};
    for (let rest = labelText; rest !== ''; ) {
      const pair = labelPair.exec(rest);
      assert.ok(pair, `bad labels in: ${line}`);
      labels[pair[1]!] = pair[2]!;
      rest = rest.slice(pair[0].length);
    }
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    assert.ok(valueText === 'NaN' || !Number.isNaN(value), `bad value in: ${line}`);
    const family = types.has(name!) ? name! : name!.replace(/_(bucket|sum|count)$/, '');
    assert.ok(types.has(family), `a sample before its TYPE: ${line}`);
    if (family !== name) assert.ok(['histogram', 'summary'].includes(types.get(family)!), line);
    samples.push({ name: name!, labels, value });
  }
  // Each histogram series: buckets ascending in le, counts never falling, +Inf last and equal to _count.
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const s of samples.filter((x) => x.name === `${family}_bucket`)) {
      const { le, ...rest } = s.labels;
      assert.ok(le !== undefined, `${family}_bucket without le`);
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, buckets] of series) {
      const les = buckets.map((b) => (b.labels.le === '+Inf' ? Infinity : Number(b.labels.le)));
      assert.deepEqual([...les].sort((a, b) => a - b), les, `${family} buckets ascending`);
      assert.equal(les.at(-1), Infinity);
      for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, `${family} counts never fall`);
      const count = samples.find((s) => s.name === `${family}_count` && JSON.stringify(s.labels) === key);
      assert.equal(count?.value, buckets.at(-1)!.value, `${family}_count equals the +Inf bucket`);
      assert.ok(samples.some((s) => s.name === `${family}_sum` && JSON.stringify(s.labels) === key), `${family}_sum`);
    }
  }
  return samples;
}

/** The value of one sample (0 when absent: a labelled counter not yet counted). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found?.value ?? 0;
}

describe('/metrics on the --http listener', () => {
  const served = serveInProcess({}, { 'notes.md': 'the quick brown fox\n' }, { token: TOKEN, metrics: true, args: ['--write'] });
  let conn: HttpClient;
  const url = () => `http://127.0.0.1:${served.port}/metrics`;
  const scrape = async () => {
    const response = await rawRequest(url(), 'GET', { authorization: `Bearer ${TOKEN}` });
    assert.equal(response.status, 200);
    return { response, samples: parseExposition(response.body) };
  };
  before(async () => {
    conn = await connectHttp(served.endpoint.url, 'modern', TOKEN);
    await served.app.services().index.readiness.reached('scanned');
  });

  test('asks for the token (401 without it, 403 for a foreign Host), answers with it in strict Prometheus text', async () => {
    const refused = await rawRequest(url(), 'GET');
    assert.equal(refused.status, 401);
    assert.match(String(refused.headers['www-authenticate']), /^Bearer/);
    assert.equal((await rawRequest(url(), 'GET', { authorization: `Bearer ${TOKEN}`, host: 'evil.example' })).status, 403);
    assert.equal((await rawRequest(url(), 'POST', { authorization: `Bearer ${TOKEN}` })).status, 405);
    const { response, samples } = await scrape();
    assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    // prom-client's process metrics, under our prefix.
    for (const name of ['folder_mcp_process_cpu_seconds_total', 'folder_mcp_process_resident_memory_bytes', 'folder_mcp_nodejs_eventloop_lag_seconds']) {
      assert.ok(samples.some((s) => s.name === name), name);
    }
    assert.ok(valueOf(samples, 'folder_mcp_index_entries') >= 4, 'a.txt, sub/, sub/b.txt, notes.md and the root');
    assert.equal(valueOf(samples, 'folder_mcp_scan_complete'), 1);
    assert.equal(valueOf(samples, 'folder_mcp_http_connections_open') >= 1, true);
    const head = await rawRequest(url(), 'HEAD', { authorization: `Bearer ${TOKEN}` });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
  });

  test('a list, a read and a search move the request counters and histograms, by method and tool', async () => {
    const before = (await scrape()).samples;
    await conn.request('resources/list', {});
    await conn.request('resources/read', { uri: `${served.rootUri}a.txt` });
    await conn.request('tools/call', { name: 'search', arguments: { query: 'fox' } });
    await assert.rejects(conn.request('resources/read', { uri: `${served.rootUri}missing.txt` }));
    const after = (await scrape()).samples;
    const moved = (name: string, labels: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
    assert.equal(moved('folder_mcp_requests_total', { method: 'resources/list', outcome: 'ok' }), 1);
    assert.equal(moved('folder_mcp_requests_total', { method: 'resources/read', outcome: 'ok' }), 1);
    assert.equal(moved('folder_mcp_requests_total', { method: 'resources/read', outcome: 'error' }), 1);
    assert.equal(moved('folder_mcp_requests_total', { method: 'tools/call', outcome: 'ok' }), 1);
    assert.equal(moved('folder_mcp_tool_calls_total', { tool: 'search', outcome: 'ok' }), 1);
    assert.equal(moved('folder_mcp_request_duration_seconds_count', { method: 'resources/read' }), 2);
    assert.equal(moved('folder_mcp_tool_call_duration_seconds_count', { tool: 'search' }), 1);
    assert.ok(moved('folder_mcp_http_response_bytes_total', {}) > 0, 'bytes out');
    assert.ok(moved('folder_mcp_http_responses_total', { code: '200' }) >= 4);
  });

  test('an unknown method, or an unknown tool, lands in "other"; no label carries a URI, a path or a name as sent', async () => {
    const before = (await scrape()).samples;
    await assert.rejects(conn.request('no/such-method', {}), /Method not found/);
    await assert.rejects(conn.request('tools/call', { name: 'no-such-tool', arguments: {} }));
    const { response, samples: after } = await scrape();
    assert.equal(valueOf(after, 'folder_mcp_requests_total', { method: 'other', outcome: 'error' }) - valueOf(before, 'folder_mcp_requests_total', { method: 'other', outcome: 'error' }), 1);
    assert.equal(valueOf(after, 'folder_mcp_tool_calls_total', { tool: 'other' }) - valueOf(before, 'folder_mcp_tool_calls_total', { tool: 'other' }), 1);
    for (const text of ['no/such-method', 'no-such-tool', 'file:', served.root.path, 'a.txt', 'notes']) assert.ok(!response.body.includes(text), text);
  });

  test('a body over 1 MiB is refused (413) and counted by its bound', async () => {
    const count = async () => valueOf((await scrape()).samples, 'folder_mcp_refusals_total', { bound: 'body_too_large' });
    const before = await count();
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(1024 * 1024) } });
    const refused = await rawPost(served.endpoint.url, { authorization: `Bearer ${TOKEN}` }, big);
    assert.equal(refused.status, 413);
    assert.equal((await count()) - before, 1);
    // Every bound is there, at 0 or more, so a dashboard needs no absent series.
    const { samples } = await scrape();
    for (const bound of ['connection_cap', 'pending_cap', 'read_budget', 'listen_uris', 'listen_streams', 'sessions_busy', 'draining', 'answer_not_taken']) {
      assert.ok(samples.some((s) => s.name === 'folder_mcp_refusals_total' && s.labels.bound === bound), bound);
    }
  });

  test('listen streams and 2025-era sessions are counted while open', async () => {
    const listen = await (conn.client as Client).listen({ resourceSubscriptions: [`${served.rootUri}a.txt`] });
    const legacy = await connectHttp(served.endpoint.url, 'legacy', TOKEN);
    try {
      const { samples } = await scrape();
      assert.equal(valueOf(samples, 'folder_mcp_listen_streams_open'), 1);
      assert.equal(valueOf(samples, 'folder_mcp_listen_uris'), 1);
      assert.equal(valueOf(samples, 'folder_mcp_sessions_open'), 1);
    } finally {
      await listen.close();
      await legacy.close();
    }
    await waitFor(async () => valueOf((await scrape()).samples, 'folder_mcp_listen_streams_open') === 0, 30_000, 'the listen stream released');
    // A listen naming more URIs than its bound is refused, and counted by that bound.
    const tooMany = Array.from({ length: 1_001 }, (_, i) => `${served.rootUri}f${i}.txt`);
    const refusedBefore = valueOf((await scrape()).samples, 'folder_mcp_refusals_total', { bound: 'listen_uris' });
    await assert.rejects((conn.client as Client).listen({ resourceSubscriptions: tooMany }), /Too many resourceSubscriptions/);
    assert.equal(valueOf((await scrape()).samples, 'folder_mcp_refusals_total', { bound: 'listen_uris' }) - refusedBefore, 1);
  });

  test('the tools the metrics name are the tools the server has', async () => {
    const listed = await conn.request('tools/list', {});
    const names = (listed.tools as { name: string }[]).map((t) => t.name).sort();
    assert.deepEqual(names, [...KNOWN_TOOLS].sort());
  });
});

describe('--metrics: a listener of its own', () => {
  test('beside a stdio server: counts its requests, asks for the token when one is set, serves /metrics only', async () => {
    const dir = tempDir();
    writeTree(dir.path, { 'a.txt': 'a\n' });
    const child = spawn(process.execPath, [CLI, '--metrics', '127.0.0.1:0', '--db', ':memory:', '--watcher', 'none', dir.path], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, FOLDER_MCP_TOKEN: TOKEN, FOLDER_MCP_CURSOR_KEY: '' },
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const url = String(await waitFor(() => /serving metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(stderr)?.[1], 30_000, 'the metrics URL on stderr'));
      const base = url.slice(0, -'/metrics'.length);
      // Over stdio: an initialize and a list, as a client sends them.
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
      send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } });
      await waitFor(() => stdout.includes('"id":1'), 30_000, 'the initialize answer');
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      send({ jsonrpc: '2.0', id: 2, method: 'resources/list', params: {} });
      await waitFor(() => stdout.includes('"id":2'), 30_000, 'the list answer');

      assert.equal((await rawRequest(url, 'GET')).status, 401, 'the token set for the process guards the metrics listener');
      const scraped = await rawRequest(url, 'GET', { authorization: `Bearer ${TOKEN}` });
      assert.equal(scraped.status, 200);
      const samples = parseExposition(scraped.body);
      assert.equal(valueOf(samples, 'folder_mcp_requests_total', { method: 'initialize', outcome: 'ok' }), 1);
      assert.equal(valueOf(samples, 'folder_mcp_requests_total', { method: 'resources/list', outcome: 'ok' }), 1);
      assert.equal(valueOf(samples, 'folder_mcp_index_entries'), 2);
      for (const path of ['/mcp', '/healthz', '/readyz']) {
        assert.equal((await rawRequest(`${base}${path}`, 'GET', { authorization: `Bearer ${TOKEN}` })).status, 404, `${path} is not served there`);
      }
    } finally {
      child.stdin.end();
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      dir.cleanup();
    }
  });

  test('a non-loopback address needs a token, as --http does; --allowed-host and --token-file go with --metrics', () => {
    const dir = tempDir();
    try {
      const open = prepareLaunch(['--metrics', '0.0.0.0:9100', dir.path], { FOLDER_MCP_TOKEN: '' }, '0');
      assert.equal(open.kind, 'refuse');
      assert.match((open as { text: string }).text, /--metrics 0\.0\.0\.0 is not a loopback address: set a bearer token/);
      const guarded = prepareLaunch(['--metrics', '0.0.0.0:9100', '--allowed-host', 'prom.internal', dir.path], { FOLDER_MCP_TOKEN: TOKEN }, '0');
      assert.equal(guarded.kind, 'serve');
      assert.deepEqual((guarded as { config: { metrics: unknown } }).config.metrics, { host: '0.0.0.0', port: 9100 });
    } finally {
      dir.cleanup();
    }
  });
});
