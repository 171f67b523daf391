// Writes through MCP, side by side (issue 24): folder-mcp's `write` and `edit`
// tools (--write) against @modelcontextprotocol/server-filesystem's
// `write_file` and `edit_file`, on one small temp folder.
//
// - write -> updated: a client subscribed to a document calls `write` on it;
//   the time until `notifications/resources/updated` for it arrives (folder-mcp
//   tells it from the index it updated in the same call: target p50 <= 20 ms).
//   Beside it, the same file written by server-filesystem's `write_file` while
//   a read-only folder-mcp watches the folder: the time until that folder-mcp
//   hears of it from its watcher (two servers, as users run them today).
// - edit of a 1 MiB file: one replacement in its middle, the tool call's
//   round trip, for both servers.
//
// A program, not part of `npm run bench`:
//   npm run build && node --import tsx bench/scenarios/write.ts [--runs N] [--cli dist/cli.js] [--out FILE]
// prints a table and writes JSON (default bench/results/write.json).
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { CLI, SERVER_FILESYSTEM, spawnServer, type Conn } from '../client.ts';
import { fmtMs, summarize, type Stat } from '../stats.ts';

const MIB = 1024 * 1024;
/** Pause between two timed writes: each notification's coalescing window (100 ms) closes first, so every write is timed alone. */
const PAUSE_MS = 250;

export interface WriteBenchResult {
  runs: number;
  /** folder-mcp `write` tool call until `updated` for the file arrives. */
  folderMcpWriteToUpdated: Stat | null;
  /** folder-mcp `write` tool call round trip (the index already updated when it returns). */
  folderMcpWriteCall: Stat;
  /** server-filesystem `write_file` call until a watching folder-mcp sends `updated`. */
  serverFilesystemWriteToUpdated: Stat | null;
  /** server-filesystem `write_file` round trip. */
  serverFilesystemWriteCall: Stat;
  /** One replacement in the middle of a 1 MiB file: the tool call's round trip. */
  folderMcpEdit1MiB: Stat;
  serverFilesystemEdit1MiB: Stat;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Times from `start` until `updated` for `uri` arrives (null after 10 s). */
export function updatedWatcher(conn: Conn): (uri: string, start: number) => Promise<number | null> {
  const seen: { uri: string; at: number }[] = [];
  conn.client.fallbackNotificationHandler = async (n) => {
    const uri = (n.params as { uri?: string } | undefined)?.uri;
    if (n.method === 'notifications/resources/updated' && uri) seen.push({ uri, at: performance.now() });
  };
  return async (uri, start) => {
    const deadline = start + 10_000;
    for (;;) {
      const hit = seen.find((s) => s.uri === uri && s.at >= start);
      if (hit) return hit.at - start;
      if (performance.now() > deadline) return null;
      await sleep(1);
    }
  };
}

async function callTool(conn: Conn, name: string, args: Record<string, unknown>): Promise<number> {
  const t0 = performance.now();
  const result = (await conn.request('tools/call', { name, arguments: args })) as { isError?: boolean; content?: { text?: string }[] };
  const ms = performance.now() - t0;
  if (result.isError) throw new Error(`${name} failed: ${result.content?.[0]?.text ?? ''}`);
  return ms;
}

/** A 1 MiB text file of numbered lines, and the edit that changes the line in its middle. */
function bigText(): { text: string; middle: string } {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < MIB; i++) {
    const line = `line ${i}: the quick brown fox jumps over the lazy dog\n`;
    lines.push(line);
    size += line.length;
  }
  return { text: lines.join(''), middle: lines[Math.floor(lines.length / 2)]! };
}

export async function runWriteBench(runs: number, cli = CLI): Promise<WriteBenchResult> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'folder-mcp-bench-write-')));
  const state = mkdtempSync(join(tmpdir(), 'folder-mcp-bench-write-state-'));
  const conns: Conn[] = [];
  try {
    mkdirSync(join(root, 'docs'));
    writeFileSync(join(root, 'docs', 'a.md'), 'start\n');
    writeFileSync(join(root, 'docs', 'b.md'), 'start\n');
    const big = bigText();
    writeFileSync(join(root, 'big.txt'), big.text);
    writeFileSync(join(root, 'big2.txt'), big.text);

    const writer = await spawnServer(cli, ['--db', join(state, 'w.db'), '--write', root]);
    conns.push(writer);
    const writerUpdated = updatedWatcher(writer);
    const aUri = pathToFileURL(join(root, 'docs', 'a.md')).href;
    await writer.request('resources/list', {});
    await writer.request('resources/subscribe', { uri: aUri });

    const fs = await spawnServer(SERVER_FILESYSTEM, [root]);
    conns.push(fs);
    // A read-only folder-mcp on the same folder, hearing of server-filesystem's writes from its watcher.
    const watcher = await spawnServer(CLI, ['--db', join(state, 'r.db'), root]);
    conns.push(watcher);
    const watcherUpdated = updatedWatcher(watcher);
    const bUri = pathToFileURL(join(root, 'docs', 'b.md')).href;
    await watcher.request('resources/list', {});
    await watcher.request('resources/subscribe', { uri: bUri });
    await sleep(1000); // both watchers up

    const ours: number[] = [];
    const oursCall: number[] = [];
    const theirs: number[] = [];
    const theirsCall: number[] = [];
    for (let i = 0; i < runs; i++) {
      let t0 = performance.now();
      oursCall.push(await callTool(writer, 'write', { path: 'docs/a.md', content: `write ${i}\n` }));
      const ms = await writerUpdated(aUri, t0);
      if (ms !== null) ours.push(ms);
      await sleep(PAUSE_MS);
      t0 = performance.now();
      theirsCall.push(await callTool(fs, 'write_file', { path: join(root, 'docs', 'b.md'), content: `write ${i}\n` }));
      const seen = await watcherUpdated(bUri, t0);
      if (seen !== null) theirs.push(seen);
      await sleep(PAUSE_MS);
    }

    const editOurs: number[] = [];
    const editTheirs: number[] = [];
    for (let i = 0; i < runs; i++) {
      // Each edit changes the middle line and the next one puts it back, so every call has exactly one match.
      const [from, to] = i % 2 === 0 ? [big.middle, `edited ${big.middle}`] : [`edited ${big.middle}`, big.middle];
      editOurs.push(await callTool(writer, 'edit', { path: 'big.txt', edits: [{ old_text: from, new_text: to }] }));
      editTheirs.push(await callTool(fs, 'edit_file', { path: join(root, 'big2.txt'), edits: [{ oldText: from, newText: to }] }));
    }
    return {
      runs,
      folderMcpWriteToUpdated: ours.length ? summarize(ours) : null,
      folderMcpWriteCall: summarize(oursCall),
      serverFilesystemWriteToUpdated: theirs.length ? summarize(theirs) : null,
      serverFilesystemWriteCall: summarize(theirsCall),
      folderMcpEdit1MiB: summarize(editOurs),
      serverFilesystemEdit1MiB: summarize(editTheirs),
    };
  } finally {
    for (const conn of conns) await conn.close().catch(() => {});
    rmSync(root, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  }
}

function table(result: WriteBenchResult): string {
  const row = (what: string, ours: Stat | null, theirs: Stat | null) =>
    `| ${what} | ${fmtMs(ours?.p50)} / ${fmtMs(ours?.p99)} | ${fmtMs(theirs?.p50)} / ${fmtMs(theirs?.p99)} |`;
  return [
    `writes over stdio, ${result.runs} runs each (p50 / p99)`,
    '',
    '| | folder-mcp (`write`, `edit`) | server-filesystem (`write_file`, `edit_file`) |',
    '|---|---|---|',
    row('write: the tool call', result.folderMcpWriteCall, result.serverFilesystemWriteCall),
    row('write -> `updated` at the client (theirs: a watching folder-mcp)', result.folderMcpWriteToUpdated, result.serverFilesystemWriteToUpdated),
    row('edit of a 1 MiB file, one replacement', result.folderMcpEdit1MiB, result.serverFilesystemEdit1MiB),
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '25' }, out: { type: 'string' }, cli: { type: 'string' } } });
  const out = values.out ?? fileURLToPath(new URL('../results/write.json', import.meta.url));
  const result = await runWriteBench(Number(values.runs), values.cli ? resolve(values.cli) : CLI);
  console.log(table(result));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), node: process.version, ...result }, null, 2) + '\n');
  console.log(`\nwrote ${out}`);
}
