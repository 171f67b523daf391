import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLI, settled, settleTimeout, spawnFolderMcp } from './client.ts';
import { makeContext, type Scenario, type Skipped } from './context.ts';
import { goalsTable } from './goals.ts';
import { allTables, gitRev, mergeInto, readResults, renderTables, RESULTS_DIR, SCENARIOS, type Machine, type Results } from './results.ts';
import { cold } from './scenarios/cold.ts';
import { BACKENDS } from './scenarios/watch.ts';
import { writeChart } from './svg.ts';
import { benchHome, ensureTree } from './tree.ts';

const USAGE = `Usage: npm run bench -- [options]

  --sizes LIST    tree sizes in files, comma-separated (default 10000,100000,1000000)
  --only LIST     scenarios to run: ${SCENARIOS.map((s) => s.name).join(', ')} (default all)
  --runs N        measured repetitions of slow measurements (default 5; 1 at 1M files)
  --seed N        tree generator seed (default 1)
  --backends LIST watcher backends for the watch scenario (default ${BACKENDS.join(',')})
  --quick         10k files, few runs: checks the harness in 7-8 minutes on 2 cores (results not saved to latest.json)
  -h, --help      this help

Trees are generated once under ${join(benchHome(), 'trees')} and reused.
Results: bench/results/<timestamp>.json, bench/results/latest.json, bench/results/chart.svg.
`;

function machine(): Machine {
  let cpu = cpus()[0]?.model ?? 'unknown';
  try {
    cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpu;
  } catch {
    // not Linux: os.cpus() it is
  }
  return { nproc: cpus().length, cpu, ramGiB: Math.round(totalmem() / 2 ** 30), node: process.version, platform: process.platform };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string' },
      only: { type: 'string' },
      runs: { type: 'string' },
      seed: { type: 'string' },
      quick: { type: 'boolean' },
      backends: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void process.stdout.write(USAGE);
  const quick = values.quick ?? false;
  // The HTTP load and the capacity run at one size (100k; 10k quick): alone, they need no other tree.
  const onlyHttp = values.only?.split(',').every((n) => ['http', 'capacity'].includes(n.trim())) ?? false;
  const sizes = (values.sizes ?? (quick ? '10000' : onlyHttp ? '100000' : '10000,100000,1000000')).split(',').map((s) => Number(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 100)) throw new Error(`--sizes: whole numbers >= 100, got ${values.sizes}`);
  const only = values.only?.split(',').map((s) => s.trim());
  const unknown = only?.filter((n) => !SCENARIOS.some((s) => s.name === n)) ?? [];
  if (unknown.length) throw new Error(`--only: unknown scenario ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
  const scenarios = SCENARIOS.filter((s) => !only || only.includes(s.name));
  const runsOpt = values.runs ? Number(values.runs) : quick ? 2 : 5;
  const seed = values.seed ? Number(values.seed) : 1;
  const backends = values.backends ? values.backends.split(',').map((s) => s.trim()) : [...BACKENDS];
  const badBackend = backends.filter((b) => !(BACKENDS as readonly string[]).includes(b));
  if (badBackend.length) throw new Error(`--backends: unknown ${badBackend.join(', ')}; known: ${BACKENDS.join(', ')}`);
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first (npm run bench does)`);

  const log = (line: string) => process.stderr.write(`${line}\n`);
  // A fresh clone has no bench home yet: create it before the scratch folder in it.
  mkdirSync(benchHome(), { recursive: true });
  const work = mkdtempSync(join(benchHome(), 'work-'));
  const mach = machine();
  log(`folder-mcp bench: sizes ${sizes.join(', ')}; scenarios ${scenarios.map((s) => s.name).join(', ')}; ${mach.nproc} x ${mach.cpu}, ${mach.ramGiB} GiB, Node ${mach.node}`);
  const started = new Date();
  const fresh: Results = { updated: started.toISOString(), sizes: {} };
  try {
    for (const size of sizes) {
      const tree = ensureTree(size, seed, log);
      const runs = size >= 1_000_000 && !values.runs ? 1 : runsOpt;
      const ctx = makeContext(tree, { runs, quick, work, log, backends });
      // The later scenarios need an index; without the cold scenario, build one untimed.
      if (!scenarios.includes(cold as Scenario<unknown>)) await buildIndex(ctx.root, ctx.db, ctx.tree.size, log);
      const entry = (fresh.sizes[size] = { machine: mach, commit: gitRev(), seed, runs, at: {} as Record<string, string>, commits: {} as Record<string, string>, scenarios: {} as Record<string, unknown> });
      for (const scenario of scenarios) {
        log(`[${size}] ${scenario.name} ...`);
        const t0 = performance.now();
        let result: unknown;
        try {
          result = await scenario.run(ctx);
        } catch (error) {
          log(`[${size}] ${scenario.name} failed: ${(error as Error).stack}`);
          result = { skipped: `failed: ${(error as Error).message.slice(0, 160)}` } satisfies Skipped;
        }
        entry.scenarios[scenario.name] = result;
        entry.at[scenario.name] = new Date().toISOString();
        entry.commits[scenario.name] = entry.commit;
        log(`[${size}] ${scenario.name} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
        for (const table of scenario.tables([{ size, result }])) process.stdout.write(`${renderTables([table], 'text')}\n`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }

  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  writeFileSync(join(RESULTS_DIR, `${stamp}.json`), JSON.stringify(fresh, null, 1));
  let merged = fresh;
  if (!quick) {
    merged = mergeInto(readResults(join(RESULTS_DIR, 'latest.json')), fresh);
    writeFileSync(join(RESULTS_DIR, 'latest.json'), JSON.stringify(merged, null, 1));
    writeChart(merged, join(RESULTS_DIR, 'chart.svg'));
  }
  process.stdout.write(`\n\n######## Summary (${quick ? 'this quick run' : 'latest.json: this run merged over earlier ones'})\n`);
  process.stdout.write(`${renderTables([goalsTable(merged), ...allTables(merged)], 'text')}\n`);
  log(`\nwrote bench/results/${stamp}.json${quick ? '' : ', bench/results/latest.json, bench/results/chart.svg'}`);
  log(`bench took ${((Date.now() - started.getTime()) / 60_000).toFixed(1)} min`);
}

/**
 * Builds an index untimed, through the real server: spawn, first list, then
 * wait for the scan and its check to end before closing (the first page is
 * answered during the scan: closed then, the scan is cut short and the next
 * spawn scans again, cold, where the warm scenario meant to measure warm).
 */
async function buildIndex(root: string, db: string, size: number, log: (line: string) => void): Promise<void> {
  log('building the index (untimed) ...');
  const t0 = performance.now();
  const conn = await spawnFolderMcp(root, db, ['--watcher', 'none', '--no-search']);
  await conn.request('resources/list', {});
  // Untimed: the bound only guards against a hang, so it is generous (a shared 2-core machine at a load of 18 took
  // more than the timed scenarios' 60 s at 100k).
  const { reconcileMs } = await settled(conn, t0, 4 * settleTimeout(size));
  await conn.close();
  if (reconcileMs === null) throw new Error("the untimed index did not finish its scan in time (no 'index checked against the disk' line)");
}





main().catch((error: unknown) => {
  process.stderr.write(`bench: ${(error as Error).message}\n`);
  process.exitCode = 1;
});
