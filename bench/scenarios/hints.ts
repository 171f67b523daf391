// A flood of bus hints (issue 44, item 7): what a replica that publishes hints
// in a loop (or anyone who can publish to the Redis server) costs a replica
// that hears them. One --http --bus replica on the bench tree, a real
// redis-server, and a publisher sending one kind of hint at 20,000 messages a
// second, for 10 s each: the replica's CPU seconds over those 10 s (from
// /proc), against 10 s idle. Every root diff is rate-limited (src/replicas/bus.ts:
// once a second, at most a tenth of the time), whatever the hint names,
// `.gitignore` included. Run it at the sizes:
//   npm run bench -- --only hints --sizes 2000,20000
// Needs redis-server on PATH (apt-get install -y redis-server); skipped otherwise.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { clusterMissing, freePort, startRedis } from '../../test/cluster-helpers.ts';
import { CLI, cpuSeconds, peakRssMiB } from '../client.ts';
import { rowPerSize, type Scenario } from '../context.ts';

/** How long each kind of hint is sent, and the idle baseline measured. */
const WINDOW_MS = 10_000;
/**
 * Messages a second the publisher sends: a thousand times what a busy
 * replica sends (one message per 50 ms flush), and a fixed rate, so that two
 * runs (two commits) are compared at the same load, whatever Redis and the
 * machine could take that day.
 */
const RATE = 20_000;

export interface HintFloodRow {
  /** What was sent. */
  kind: string;
  /** Messages published in the window. */
  sent: number;
  /** The replica's CPU (user + system) over the window, in seconds. */
  cpuSeconds: number;
}

export interface HintsResult {
  rows: HintFloodRow[];
  peakRssMiB: number | null;
}

const KINDS = ['idle', '.gitignore path hints', 'tree hints', 'path hints (existing files, 256 a message)'] as const;

export const hints: Scenario<HintsResult> = {
  name: 'hints',
  async run(ctx) {
    if (ctx.quick) return { skipped: 'not in --quick (40 s of floods): --only hints --sizes 2000,20000' };
    if (ctx.tree.size > 100_000) return { skipped: 'measured at 2k and 20k files (--only hints --sizes 2000,20000)' };
    const missing = clusterMissing(['redis-server']);
    if (missing) return { skipped: missing };
    if (process.platform !== 'linux') return { skipped: 'reads CPU time from /proc' };
    const dir = mkdtempSync(join(ctx.work, 'hints-'));
    const port = await freePort();
    const stops: ChildProcess[] = [];
    try {
      const redis = await startRedis(dir, port);
      stops.push(redis.child);
      const { url } = redis;
      const replica = await startReplica(ctx.root, ctx.db, url, stops);
      const { Redis } = await import('ioredis');
      const publisher = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
      try {
        const files = someFiles(ctx.root, 256);
        const message = (kind: (typeof KINDS)[number]): string => {
          const base = { v: 1, origin: 'bench-flood', root: ctx.root };
          if (kind === '.gitignore path hints') return JSON.stringify({ ...base, paths: ['.gitignore'] });
          if (kind === 'tree hints') return JSON.stringify({ ...base, paths: [], tree: true });
          return JSON.stringify({ ...base, paths: files });
        };
        const rows: HintFloodRow[] = [];
        for (const kind of KINDS) {
          ctx.log(`  hints: ${kind} for ${WINDOW_MS / 1000} s`);
          const cpu0 = cpuSeconds(replica.pid!);
          const deadline = performance.now() + WINDOW_MS;
          let sent = 0;
          if (kind === 'idle') await new Promise((r) => setTimeout(r, WINDOW_MS));
          else {
            const text = message(kind);
            // RATE a second, in ticks of 10 ms; a tick that falls behind is made up in the next.
            const started = performance.now();
            while (performance.now() < deadline) {
              const due = Math.floor(((performance.now() - started) / 1000) * RATE) - sent;
              if (due > 0) {
                await Promise.all(Array.from({ length: due }, () => publisher.publish('folder-mcp:hints', text)));
                sent += due;
              }
              await new Promise((r) => setTimeout(r, 10));
            }
          }
          rows.push({ kind, sent, cpuSeconds: Math.round((cpuSeconds(replica.pid!) - cpu0) * 100) / 100 });
          // What the flood left queued is done before the next kind is measured.
          await new Promise((r) => setTimeout(r, 3_000));
        }
        return { rows, peakRssMiB: peakRssMiB(replica.pid!) };
      } finally {
        publisher.disconnect();
      }
    } finally {
      for (const child of stops) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  },
  tables(bySize) {
    const header = ['size', ...KINDS.map((k) => `${k}: CPU s / 10 s (messages)`), 'peak RSS'];
    return [
      {
        title: '18. A flood of bus hints: the replica that hears them, CPU seconds per 10 s',
        header,
        rows: rowPerSize(bySize, header, (r) => [
          ...KINDS.map((kind) => {
            const row = r.rows.find((x) => x.kind === kind);
            return row ? `${row.cpuSeconds.toFixed(2)} (${row.sent.toLocaleString('en-US')})` : 'n/a';
          }),
          r.peakRssMiB === null ? 'n/a' : `${r.peakRssMiB} MiB`,
        ]),
        note: 'One --http --bus replica (watcher dirs, search on, warm index), a real redis-server, a publisher sending one kind at 20,000 messages a second. Root diffs: once a second per root, at most a tenth of the time (src/replicas/bus.ts).',
      },
    ];
  },
};

/** Starts the replica that hears the flood, and waits until /readyz says it has caught up. */
async function startReplica(root: string, db: string, bus: string, stops: ChildProcess[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [CLI, '--http', '127.0.0.1:0', '--bus', bus, '--db', db, '--replica-id', 'heard', root], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, FOLDER_MCP_TOKEN: randomBytes(16).toString('hex') },
  });
  stops.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-20_000)));
  const deadline = performance.now() + 300_000;
  for (;;) {
    const url = /http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(stderr);
    if (url) {
      const ready = await fetch(`http://127.0.0.1:${url[1]}/readyz`).then((r) => r.status === 200, () => false);
      // Caught up, and the content index checked: the flood is measured against a settled replica.
      if (ready && /content index: \d+ (?:text )?documents checked/.test(stderr)) return child;
    }
    if (child.exitCode !== null || performance.now() > deadline) throw new Error(`the replica did not start: ${stderr.slice(-500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Up to `count` files of the tree, relative, `/`-separated: existing paths for the path hints. */
function someFiles(root: string, count: number): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      if (out.length >= count) return;
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) out.push(path);
    }
  };
  walk('');
  return out;
}
