// What a client waits for right after a spawn (issue 45): Claude Desktop and
// Claude Code start folder-mcp again at every launch, so a warm start (an
// index from an earlier run) is the normal case. Per runtime (better-sqlite3
// on this Node, node:sqlite on Node 24), alternating, through a raw JSON-RPC
// client over stdio (no SDK client between the pipe and the clock):
//   cold      a new index file: spawn until the first resources/list page,
//             and until the last page;
//   settled   the same process once its start-up work is done (the check
//             against the disk, the content index): all pages again;
//   warm      a new process on that index: first page, all pages;
// with the bytes of one listed item on the wire, and each process's peak
// RSS (VmHWM); and, once a run, the bare walk of the tree (fast-glob with
// stats, as table 1's limit): no listing of a tree nobody has indexed can
// end before the disk has been read, so a cold listing's floor is that walk,
// which on a settled server can take longer than the listing itself.
// The targets (issue 45): warm first page <= 0.5x cold; spawn
// -> all pages within 1.3x of settled, cold or warm; Node 24 peak <= 350 MiB
// at 1M; <= 250 bytes an item.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cpuSeconds, peakRssMiB, settleTimeout, type Runtime } from '../client.ts';
import { isSkipped, sizeLabel, skippedRow, type Scenario } from '../context.ts';
import { fmtMs, fmtRatio, fmtStat, summarize, type Stat } from '../stats.ts';
import { bareWalk } from './cold.ts';
import { runtimes } from './drivers.ts';

export interface StartupRow {
  label: string;
  coldFirstPage: Stat;
  coldAllPages: Stat;
  settledAllPages: Stat;
  warmFirstPage: Stat;
  warmAllPages: Stat;
  /** Bytes of the resources array on the wire, per item (settled listing). */
  bytesPerItem: number;
  /** The server's CPU time (user + system) for the settled listing, per item: median of the runs. */
  cpuUsPerItem?: Stat;
  items: number;
  coldPeakRssMiB: number | null;
  warmPeakRssMiB: number | null;
  /** The bare walk of the tree in this process (table 1's limit), once a run; the same figure in every row. Older results have none. */
  bareWalk?: Stat;
}

export interface StartupResult {
  rows: StartupRow[];
}

export const startup: Scenario<StartupResult> = {
  name: 'startup',
  async run(ctx) {
    const all = runtimes();
    const walks: number[] = [];
    const samples = all.map(() => ({ coldFirst: [] as number[], coldAll: [] as number[], settledAll: [] as number[], settledCpu: [] as number[], warmFirst: [] as number[], warmAll: [] as number[], bytes: 0, items: 0, coldPeak: 0, warmPeak: 0 }));
    await bareWalk(ctx.root); // warm-up: every walk below sees the same (hot) dentry cache, as the servers do
    for (let run = 0; run < ctx.runs; run++) {
      const walkStarted = performance.now();
      await bareWalk(ctx.root);
      walks.push(performance.now() - walkStarted);
      for (const [i, { runtime }] of all.entries()) {
        const s = samples[i]!;
        const db = join(ctx.work, `startup-${i}.db`);
        for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
        ctx.log(`  startup: ${all[i]!.label}, run ${run + 1} of ${ctx.runs}: cold`);
        const cold = await RawServer.spawn(runtime, ctx.root, db);
        try {
          const first = await cold.list();
          s.coldFirst.push(first.atMs);
          s.coldAll.push((await cold.listRest(first)).atMs);
          await cold.settled(settleTimeout(ctx.tree.size));
          const t0 = performance.now();
          const cpu0 = cold.cpuSeconds();
          const settledList = await cold.listRest(await cold.list());
          s.settledAll.push(performance.now() - t0);
          s.settledCpu.push(((cold.cpuSeconds() - cpu0) * 1e6) / settledList.items);
          s.bytes = settledList.resourceBytes / settledList.items;
          s.items = settledList.items;
          s.coldPeak = Math.max(s.coldPeak, cold.peakRssMiB() ?? 0);
        } finally {
          await cold.close();
        }
        ctx.log(`  startup: ${all[i]!.label}, run ${run + 1} of ${ctx.runs}: warm`);
        const warm = await RawServer.spawn(runtime, ctx.root, db);
        try {
          const first = await warm.list();
          s.warmFirst.push(first.atMs);
          s.warmAll.push((await warm.listRest(first)).atMs);
          // Its start-up work done before it closes: the next cold run is not measured beside its end.
          await warm.settled(settleTimeout(ctx.tree.size));
          s.warmPeak = Math.max(s.warmPeak, warm.peakRssMiB() ?? 0);
        } finally {
          await warm.close();
        }
      }
    }
    return {
      rows: all.map(({ label }, i) => {
        const s = samples[i]!;
        return {
          label,
          coldFirstPage: summarize(s.coldFirst),
          coldAllPages: summarize(s.coldAll),
          settledAllPages: summarize(s.settledAll),
          warmFirstPage: summarize(s.warmFirst),
          warmAllPages: summarize(s.warmAll),
          bytesPerItem: Math.round(s.bytes),
          cpuUsPerItem: summarize(s.settledCpu),
          items: s.items,
          coldPeakRssMiB: s.coldPeak || null,
          warmPeakRssMiB: s.warmPeak || null,
          bareWalk: summarize(walks),
        };
      }),
    };
  },
  tables(bySize) {
    const header = ['size', 'runtime', 'cold 1st page', 'warm 1st page', 'warm / cold', 'cold: all pages', 'warm: all pages', 'settled: all pages', 'cold / settled', 'warm / settled', 'bare walk', 'cold: all pages / walk', 'bytes an item', 'settled: CPU an item', 'peak RSS cold / warm'];
    const rows = bySize.flatMap(({ size, result }) =>
      isSkipped(result)
        ? [skippedRow(size, result, header.length)]
        : result.rows.map((r) => [
            sizeLabel(size),
            r.label,
            fmtStat(r.coldFirstPage),
            fmtStat(r.warmFirstPage),
            fmtRatio(r.warmFirstPage.p50 / r.coldFirstPage.p50),
            fmtMs(r.coldAllPages.p50),
            fmtMs(r.warmAllPages.p50),
            fmtMs(r.settledAllPages.p50),
            fmtRatio(r.coldAllPages.p50 / r.settledAllPages.p50),
            fmtRatio(r.warmAllPages.p50 / r.settledAllPages.p50),
            r.bareWalk ? fmtMs(r.bareWalk.p50) : 'n/a',
            r.bareWalk ? fmtRatio(r.coldAllPages.p50 / r.bareWalk.p50) : 'n/a',
            String(r.bytesPerItem),
            // Older results files have no CPU figure.
            r.cpuUsPerItem ? `${r.cpuUsPerItem.p50.toFixed(1)} µs` : 'n/a',
            `${r.coldPeakRssMiB ?? 'n/a'} / ${r.warmPeakRssMiB ?? 'n/a'} MiB`,
          ]),
    );
    return [
      {
        title: '19. Start-up: spawn until the first page and until the last, cold and warm, against a settled server',
        header,
        rows,
        note: 'Raw JSON-RPC over stdio, default options (watcher, search on), the default page of 2,000; medians. Targets (issue 45): warm / cold <= 0.5; cold and warm / settled <= 1.3; <= 250 bytes an item; <= 3 µs of server CPU (user + system, /proc) an item on a settled server; Node 24 peak <= 350 MiB at 1M. Bare walk: fast-glob with stats over the tree in the bench process (the limit of table 1), once a run: a cold listing cannot end before it.',
      },
    ];
  },
};

interface Listed {
  /** Since spawn. */
  atMs: number;
  cursor: string | undefined;
  items: number;
  resourceBytes: number;
}

/** folder-mcp over its stdio, spoken to in raw JSON-RPC lines. */
class RawServer {
  private nextId = 1;
  private readonly waiting = new Map<number, (message: { result?: Record<string, unknown>; error?: unknown }, bytes: number) => void>();
  private stderr = '';
  private buffered = '';

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly t0: number,
  ) {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      this.buffered += chunk;
      for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n')) {
        const line = this.buffered.slice(0, nl);
        this.buffered = this.buffered.slice(nl + 1);
        const message = JSON.parse(line) as { id?: number; result?: Record<string, unknown>; error?: unknown };
        if (typeof message.id === 'number') this.waiting.get(message.id)?.(message, Buffer.byteLength(line));
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-50_000)));
  }

  static async spawn(runtime: Runtime, root: string, db: string): Promise<RawServer> {
    const t0 = performance.now();
    const child = spawn(runtime.node, [CLI, '--db', db, '--sqlite-driver', runtime.driver, root], { stdio: ['pipe', 'pipe', 'pipe'] });
    const server = new RawServer(child, t0);
    await server.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench-startup', version: '0' } });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    return server;
  }

  private request(method: string, params: Record<string, unknown>): Promise<{ result: Record<string, unknown>; bytes: number }> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, (message, bytes) => {
        this.waiting.delete(id);
        if (message.error || !message.result) reject(new Error(`${method}: ${JSON.stringify(message.error)}`));
        else resolve({ result: message.result, bytes });
      });
      this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  async list(cursor?: string): Promise<Listed> {
    const { result } = await this.request('resources/list', cursor ? { cursor } : {});
    const resources = result.resources as unknown[];
    return {
      atMs: performance.now() - this.t0,
      cursor: result.nextCursor as string | undefined,
      items: resources.length,
      resourceBytes: Buffer.byteLength(JSON.stringify(resources)),
    };
  }

  /** Every page after `first`: when the last came, and the items and bytes of all of them. */
  async listRest(first: Listed): Promise<Listed> {
    let page = first;
    let { items, resourceBytes } = first;
    while (page.cursor) {
      page = await this.list(page.cursor);
      items += page.items;
      resourceBytes += page.resourceBytes;
    }
    return { ...page, items, resourceBytes };
  }

  /** Until the log says the start-up work is done: the check against the disk, and the content index. */
  async settled(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!(/index checked against the disk in \d+ ms/.test(this.stderr) && /content index: \d+ (?:text )?documents checked/.test(this.stderr))) {
      if (performance.now() > deadline) throw new Error(`not settled after ${timeoutMs} ms: ${this.stderr.slice(-400)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  peakRssMiB(): number | null {
    return peakRssMiB(this.child.pid!);
  }

  cpuSeconds(): number {
    return cpuSeconds(this.child.pid!);
  }

  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}
