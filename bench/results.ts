import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BySize, Scenario, Table } from './context.ts';
import { abuse } from './scenarios/abuse.ts';
import { drivers } from './scenarios/drivers.ts';
import { alternatives } from './scenarios/alternatives.ts';
import { capacity } from './scenarios/capacity.ts';
import { cold } from './scenarios/cold.ts';
import { eras } from './scenarios/eras.ts';
import { hints } from './scenarios/hints.ts';
import { http } from './scenarios/http.ts';
import { list } from './scenarios/list.ts';
import { paginate } from './scenarios/paginate.ts';
import { reads } from './scenarios/reads.ts';
import { search } from './scenarios/search.ts';
import { startup } from './scenarios/startup.ts';
import { warm } from './scenarios/warm.ts';
import { watch } from './scenarios/watch.ts';
import { mdTable, textTable } from './stats.ts';

/** Every scenario in run order: cold builds the index the later ones use; watch writes to the tree, so it goes last. */
export const SCENARIOS = [cold, warm, list, paginate, alternatives, reads, search, http, capacity, watch, eras, abuse, drivers, hints, startup] as Scenario<unknown>[];

export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

export interface Machine {
  nproc: number;
  cpu: string;
  ramGiB: number;
  node: string;
  platform: string;
}

export interface SizeEntry {
  machine: Machine;
  /** The commit of the newest run at this size (see `commits`). */
  commit: string;
  seed: number;
  runs: number;
  /** When each scenario's result was measured. */
  at: Record<string, string>;
  /** At which commit each scenario's result was measured (absent in results older than this field: `commit` then). */
  commits?: Record<string, string>;
  scenarios: Record<string, unknown>;
}

/** A results file: per size, per scenario, the newest result (a run updates what it measured and keeps the rest). */
export interface Results {
  updated: string;
  sizes: Record<string, SizeEntry>;
}

export function readResults(file: string): Results {
  if (!existsSync(file)) return { updated: '', sizes: {} };
  return JSON.parse(readFileSync(file, 'utf8')) as Results;
}

export function mergeInto(old: Results, fresh: Results): Results {
  const out: Results = { updated: fresh.updated, sizes: { ...old.sizes } };
  for (const [size, entry] of Object.entries(fresh.sizes)) {
    const prev = out.sizes[size];
    if (!prev) {
      out.sizes[size] = entry;
      continue;
    }
    const scenarios = { ...prev.scenarios, ...entry.scenarios };
    for (const [name, result] of Object.entries(entry.scenarios)) {
      const before = prev.scenarios[name];
      if (hasAttacks(result) && result.partial === true && hasAttacks(before)) {
        scenarios[name] = mergeAttacks(before, result, commitsOf(prev)[name] ?? prev.commit, commitsOf(entry)[name] ?? entry.commit);
      }
    }
    out.sizes[size] = { ...entry, at: { ...prev.at, ...entry.at }, commits: { ...commitsOf(prev), ...commitsOf(entry) }, scenarios };
  }
  return out;
}

/** A result of some of a scenario's attacks (FOLDER_MCP_BENCH_ATTACKS): each names the commit it was measured at. */
interface PartialResult {
  partial?: boolean;
  attacks: { attack: string; commit?: string }[];
}

function hasAttacks(result: unknown): result is PartialResult {
  return typeof result === 'object' && result !== null && Array.isArray((result as PartialResult).attacks);
}

/** The earlier result's attacks, those measured again replaced (in the earlier order; new ones at the end). */
function mergeAttacks(prev: PartialResult, fresh: PartialResult, prevCommit: string, commit: string): PartialResult {
  const again = new Map(fresh.attacks.map((a) => [a.attack, { ...a, commit }]));
  const kept = prev.attacks.map((a) => again.get(a.attack) ?? { ...a, commit: a.commit ?? prevCommit });
  const added = [...again.values()].filter((a) => !prev.attacks.some((p) => p.attack === a.attack));
  return { attacks: [...kept, ...added] };
}

/** Each scenario's commit at one size, for entries written before `commits` existed too. */
export function commitsOf(entry: SizeEntry): Record<string, string> {
  return entry.commits ?? Object.fromEntries(Object.keys(entry.scenarios).map((name) => [name, entry.commit]));
}

export function sizesOf(results: Results): number[] {
  return Object.keys(results.sizes).map(Number).sort((a, b) => a - b);
}

/** The result of one scenario at each size that has one, in size order. */
export function bySize<R>(results: Results, name: string): BySize<R> {
  return sizesOf(results)
    .filter((size) => results.sizes[size]!.scenarios[name] !== undefined)
    .map((size) => ({ size, result: results.sizes[size]!.scenarios[name] as never }));
}

/** Every scenario's tables over every size in the results, in the order of their numbered titles. */
export function allTables(results: Results): Table[] {
  const num = (t: Table) => Number.parseInt(t.title, 10) || 0;
  return SCENARIOS.flatMap((s) => {
    const rows = bySize(results, s.name);
    return rows.length ? s.tables(rows) : [];
  }).sort((a, b) => num(a) - num(b));
}

export function renderTables(tables: Table[], format: 'text' | 'md'): string {
  return tables
    .map((t) =>
      format === 'text'
        ? `${textTable(t.title, t.header, t.rows)}${t.note ? `\n${t.note}` : ''}`
        : `#### ${t.title}\n\n${mdTable(t.header, t.rows)}${t.note ? `\n\n${t.note}` : ''}\n`,
    )
    .join('\n');
}

export function gitRev(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}
