// The two write races of issue 33, measured over stdio against the built
// server (or any build: --cli):
//
// - concurrent edits: each round, one client sends 4 `edit` calls at once,
//   each adding one `x` after `slot:` in one file; after all rounds, how
//   many calls reported success against how many `x` are on disk (equal
//   when no reported change is lost).
// - racing appender: a process appends numbered lines to the file, opening
//   it by path for each append (fs.promises.appendFile), while the client loops
//   `edit` on it; when the appender is done, how many of its completed
//   appends are not in the file. The appender never holds a descriptor
//   across an edit's rename (docs/tools.md says what that would do).
//
// A program, not a test (a test never asserts a count that depends on timing):
//   npm run build && node --import tsx bench/scenarios/write-races.ts [--rounds 20] [--appends 40000] [--appender async|sync] [--pace MS] [--cli dist/cli.js] [--out FILE]
// prints a table and writes JSON (default bench/results/write-races.json).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CLI, spawnServer, type Conn } from '../client.ts';

export interface RaceResult {
  cli: string;
  appenderKind: keyof typeof APPENDERS;
  /** The appender's pause after each append (0: none), so that more edits get through between appends. */
  paceMs: number;
  concurrent: { rounds: number; calls: number; reported: number; refused: number; onDisk: number; lost: number };
  appender: {
    appends: number;
    lost: number;
    editsApplied: number;
    editsRefused: number;
    /** Applied, and told that an append landed on the old file in the rename window (kept, appended after the edit). */
    editsAppendRescued: number;
    /** Applied, and told that the old file changed otherwise in the window (its version saved beside). */
    editsKeptBeside: number;
    keptFiles: number;
    seconds: number;
  };
}

type Call = { isError?: boolean; content?: { type: string; text?: string }[] };

const edit = (conn: Conn) =>
  conn.request('tools/call', { name: 'edit', arguments: { path: 'f.txt', edits: [{ old_text: 'slot:', new_text: 'slot:x' }] } }) as Promise<Call>;

const slotXs = (text: string) => /slot:(x*)/.exec(text)?.[1]?.length ?? 0;

/**
 * The appender: `count` numbered lines, each appended by path (open, write,
 * close: fs.promises.appendFile, through libuv's pool as a Node program
 * would); prints how many completed.
 */
export const APPENDERS = {
  async: `
const fs = require('node:fs/promises');
const [path, count, pace] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
(async () => {
  let done = 0;
  for (let i = 0; i < count; i++) {
    await fs.appendFile(path, 'A' + i + '\\n');
    done++;
    if (pace > 0) await new Promise((resolve) => setTimeout(resolve, pace));
  }
  process.stdout.write(String(done));
})();
`,
  /** open, write, close back to back (fs.appendFileSync). */
  sync: `
const fs = require('node:fs');
const [path, count, pace] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
let done = 0;
for (let i = 0; i < count; i++) {
  fs.appendFileSync(path, 'A' + i + '\\n');
  done++;
  if (pace > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pace);
}
process.stdout.write(String(done));
`,
};

export async function runRaces(cli: string, rounds: number, appends: number, appenderKind: keyof typeof APPENDERS = 'async', paceMs = 0): Promise<RaceResult> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'folder-mcp-bench-races-')));
  const state = mkdtempSync(join(tmpdir(), 'folder-mcp-bench-races-state-'));
  const file = join(root, 'f.txt');
  let conn: Conn | undefined;
  try {
    writeFileSync(file, 'slot:\n');
    conn = await spawnServer(cli, ['--db', join(state, 'index.db'), '--write', '--max-write-bytes', String(16 * 1024 * 1024), root]);
    await conn.request('resources/list', {});

    let reported = 0;
    let refused = 0;
    for (let round = 0; round < rounds; round++) {
      const results = await Promise.all([edit(conn), edit(conn), edit(conn), edit(conn)]);
      for (const r of results) {
        if (r.isError) refused++;
        else reported++;
      }
    }
    const onDisk = slotXs(readFileSync(file, 'utf8'));

    writeFileSync(file, 'slot:\n');
    const t0 = performance.now();
    const appender = spawn(process.execPath, ['-e', APPENDERS[appenderKind], file, String(appends), String(paceMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    appender.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    let running = true;
    const exited = new Promise<void>((done) => appender.on('exit', () => ((running = false), done())));
    let applied = 0;
    let editRefused = 0;
    let rescued = 0;
    let keptBeside = 0;
    while (running) {
      const r = await edit(conn);
      const text = r.content?.map((c) => c.text ?? '').join('\n') ?? '';
      if (/another program appended/.test(text)) rescued++;
      if (/was saved as/.test(text)) keptBeside++;
      else if (!r.isError) applied++;
      else editRefused++;
    }
    await exited;
    const seconds = (performance.now() - t0) / 1000;
    const completed = Number(out);
    const lines = new Set(readFileSync(file, 'utf8').split('\n'));
    let lost = 0;
    for (let i = 0; i < completed; i++) if (!lines.has(`A${i}`)) lost++;
    const keptFiles = readdirSync(root).filter((name) => name !== 'f.txt').length;
    return {
      cli,
      appenderKind,
      paceMs,
      concurrent: { rounds, calls: rounds * 4, reported, refused, onDisk, lost: reported - onDisk },
      appender: { appends: completed, lost, editsApplied: applied, editsRefused: editRefused, editsAppendRescued: rescued, editsKeptBeside: keptBeside, keptFiles, seconds },
    };
  } finally {
    await conn?.close().catch(() => {});
    rmSync(root, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  }
}

function table(r: RaceResult): string {
  const c = r.concurrent;
  const a = r.appender;
  return [
    `write races over stdio (${r.cli})`,
    '',
    '| race | result |',
    '|---|---|',
    `| 4 concurrent edits x ${c.rounds} rounds | ${c.reported} reported success, ${c.onDisk} changes on disk (${c.lost} lost), ${c.refused} refused |`,
    `| appender (${r.appenderKind}${r.paceMs ? `, ${r.paceMs} ms apart` : ''}: open by path per append) vs edit loop | ${a.lost} of ${a.appends} completed appends lost; edits: ${a.editsApplied} applied (${a.editsAppendRescued} of them told of an append in the rename window, kept after the edit), ${a.editsKeptBeside} applied with the old file's version saved beside, ${a.editsRefused} refused (changed since read); ${a.keptFiles} other files; ${a.seconds.toFixed(1)} s |`,
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '20' },
      appends: { type: 'string', default: '40000' },
      appender: { type: 'string', default: 'async' },
      pace: { type: 'string', default: '0' },
      cli: { type: 'string' },
      out: { type: 'string' },
    },
  });
  if (values.appender !== 'async' && values.appender !== 'sync') throw new Error('--appender async|sync');
  const out = values.out ?? fileURLToPath(new URL('../results/write-races.json', import.meta.url));
  const result = await runRaces(values.cli ? resolve(values.cli) : CLI, Number(values.rounds), Number(values.appends), values.appender, Number(values.pace));
  console.log(table(result));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), node: process.version, ...result }, null, 2) + '\n');
  console.log(`\nwrote ${out}`);
}
