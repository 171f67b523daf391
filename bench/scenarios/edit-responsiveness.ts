// Does a large edit stall the other clients (issue 33)? One HTTP server
// (--write); one client sends 10 `edit` calls at once, each 100 replacements
// of 24 lines in a 4 MiB file of unique lines (dry_run, so all ten run
// together rather than one after the other on the file's hold); another
// client, in a process of its own (bench/victim.ts), pings 10 ms apart
// meanwhile. Reported: the pings' round trips (target p99 <= 50 ms), the
// edit calls' durations and what their diffs held.
//
// A program, not a test (a test never asserts a wall-clock time):
//   npm run build && node --import tsx bench/scenarios/edit-responsiveness.ts [--edits 10] [--cli dist/cli.js] [--out FILE]
// prints a table and writes JSON (default bench/results/edit-responsiveness.json).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CLI, Loose } from '../client.ts';
import { fmtMs, summarize, type Stat } from '../stats.ts';

const VICTIM = fileURLToPath(new URL('../victim.ts', import.meta.url));
const FILE_BYTES = 4 * 1024 * 1024;
const REPLACEMENTS = 100;
const LINES_EACH = 24;

export interface ResponsivenessResult {
  cli: string;
  fileBytes: number;
  lines: number;
  concurrentEdits: number;
  requestBytes: number;
  /** The same pings with no edit running, just before: what the machine gives anyway. */
  pingIdle: Stat;
  ping: Stat;
  pingErrors: number;
  edit: Stat;
  editErrors: number;
  diffBytes: number;
  diffOmittedHunks: number | null;
}

/** A file of unique lines, and `count` replacements of `each` lines spread over it. */
function bigFile(): { text: string; edits: { old_text: string; new_text: string }[]; lines: number } {
  const lines: string[] = [];
  for (let size = 0, i = 0; size < FILE_BYTES; i++) {
    const line = `line ${i} ${randomBytes(6).toString('hex')} some text to make the line longer\n`;
    if (size + line.length > FILE_BYTES) break;
    lines.push(line);
    size += line.length;
  }
  const step = Math.floor(lines.length / REPLACEMENTS);
  const edits = Array.from({ length: REPLACEMENTS }, (_, e) => {
    const old = lines.slice(e * step, e * step + LINES_EACH).join('');
    return { old_text: old, new_text: old.replace(/line /g, 'LINE ') };
  });
  return { text: lines.join(''), edits, lines: lines.length };
}

async function startHttp(cli: string, args: string[], token: string): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [cli, '--http', '127.0.0.1:0', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, FOLDER_MCP_TOKEN: token } });
  let stderr = '';
  const url = await new Promise<string>((done, fail) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(stderr);
      if (match) done(match[0]);
    });
    child.once('exit', (code) => fail(new Error(`server exited ${code}:\n${stderr}`)));
  });
  return { url, stop: () => child.kill() };
}

/** How long the idle pings run before the edits. */
const IDLE_MS = 3000;

/** Starts bench/victim.ts pinging `url` 10 ms apart; stop() ends it and gives its round trips. */
async function pinging(url: string, token: string): Promise<{ stop(): Promise<{ pings: number[]; errors: number }> }> {
  const victim = spawn(process.execPath, ['--import', 'tsx', VICTIM, url, token], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  victim.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<void>((done) => victim.on('exit', () => done()));
  await new Promise<void>((ready) => victim.stderr.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && ready()));
  return {
    async stop() {
      victim.stdin.end();
      await exited;
      return JSON.parse(out) as { pings: number[]; errors: number };
    },
  };
}

export async function runResponsiveness(cli: string, concurrentEdits: number): Promise<ResponsivenessResult> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'folder-mcp-bench-edit-')));
  const state = mkdtempSync(join(tmpdir(), 'folder-mcp-bench-edit-state-'));
  const token = randomBytes(16).toString('hex');
  const big = bigFile();
  writeFileSync(join(root, 'big.txt'), big.text);
  const server = await startHttp(cli, ['--write', '--max-write-bytes', String(16 * 1024 * 1024), '--db', join(state, 'index.db'), root], token);
  const client = new Client({ name: 'bench-editor', version: '0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    await client.request({ method: 'resources/list', params: {} }, Loose);
    const idle = await pinging(server.url, token);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const pingIdle = await idle.stop();
    const busy = await pinging(server.url, token);
    const args = { path: 'big.txt', edits: big.edits, dry_run: true };
    const durations: number[] = [];
    let editErrors = 0;
    let diffBytes = 0;
    let omitted: number | null = null;
    await Promise.all(
      Array.from({ length: concurrentEdits }, async () => {
        const t0 = performance.now();
        const result = (await client.request({ method: 'tools/call', params: { name: 'edit', arguments: args } }, Loose, { timeout: 600_000 })) as {
          isError?: boolean;
          structuredContent?: { diff?: string; diffOmittedHunks?: number };
        };
        durations.push(performance.now() - t0);
        if (result.isError) editErrors++;
        diffBytes = Math.max(diffBytes, Buffer.byteLength(result.structuredContent?.diff ?? ''));
        if (result.structuredContent && 'diffOmittedHunks' in result.structuredContent) omitted = result.structuredContent.diffOmittedHunks ?? null;
      }),
    );
    const pings = await busy.stop();
    return {
      cli,
      fileBytes: Buffer.byteLength(big.text),
      lines: big.lines,
      concurrentEdits,
      requestBytes: Buffer.byteLength(JSON.stringify(args)),
      pingIdle: summarize(pingIdle.pings),
      ping: summarize(pings.pings),
      pingErrors: pings.errors,
      edit: summarize(durations),
      editErrors,
      diffBytes,
      diffOmittedHunks: omitted,
    };
  } finally {
    await client.close().catch(() => {});
    server.stop();
    rmSync(root, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  }
}

function table(r: ResponsivenessResult): string {
  return [
    `edit responsiveness over HTTP (${r.cli})`,
    `${r.concurrentEdits} concurrent dry-run edits, each ${REPLACEMENTS} replacements of ${LINES_EACH} lines (${(r.requestBytes / 1024).toFixed(0)} KiB request) in a ${(r.fileBytes / 1048576).toFixed(1)} MiB file of ${r.lines} unique lines`,
    '',
    '| | p50 | p99 | max | n |',
    '|---|---|---|---|---|',
    `| another client's ping, no edit running (before) | ${fmtMs(r.pingIdle.p50)} | ${fmtMs(r.pingIdle.p99)} | ${fmtMs(r.pingIdle.max)} | ${r.pingIdle.n} |`,
    `| another client's ping, while the edits run | ${fmtMs(r.ping.p50)} | ${fmtMs(r.ping.p99)} | ${fmtMs(r.ping.max)} | ${r.ping.n} (${r.pingErrors} errors) |`,
    `| edit call | ${fmtMs(r.edit.p50)} | ${fmtMs(r.edit.p99)} | ${fmtMs(r.edit.max)} | ${r.edit.n} (${r.editErrors} errors) |`,
    '',
    `diff: ${(r.diffBytes / 1024).toFixed(0)} KiB${r.diffOmittedHunks ? `, ${r.diffOmittedHunks} hunks left out` : ''}`,
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const { values } = parseArgs({ options: { edits: { type: 'string', default: '10' }, cli: { type: 'string' }, out: { type: 'string' } } });
  const out = values.out ?? fileURLToPath(new URL('../results/edit-responsiveness.json', import.meta.url));
  const result = await runResponsiveness(values.cli ? resolve(values.cli) : CLI, Number(values.edits));
  console.log(table(result));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), node: process.version, ...result }, null, 2) + '\n');
  console.log(`\nwrote ${out}`);
}
