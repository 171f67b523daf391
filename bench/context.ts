import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { pathToUri } from '../src/uri.ts';
import type { BenchTree } from './tree.ts';

/** What every scenario gets for one tree size. */
export interface SizeContext {
  tree: BenchTree;
  /** Real path of the tree root (URIs are real paths). */
  root: string;
  /** Measured repetitions for slow things (cold index, alternatives); fast things repeat more. */
  runs: number;
  quick: boolean;
  /** Scratch dir outside the tree for index files. */
  work: string;
  /** Watcher backends the watch scenario tries. */
  backends: string[];
  /** The index built by the cold scenario (warm from then on). */
  db: string;
  log(line: string): void;
}

/** A scenario skipped on purpose, with the reason printed as "n/a: reason". */
export interface Skipped {
  skipped: string;
}

export function isSkipped(x: unknown): x is Skipped {
  return typeof x === 'object' && x !== null && 'skipped' in x;
}

export function makeContext(tree: BenchTree, opts: Omit<SizeContext, 'tree' | 'root' | 'db'>): SizeContext {
  return { ...opts, tree, root: realpathSync(tree.root), db: join(opts.work, `index-${tree.size}.db`) };
}

/** URI of a path relative to the tree root; `dir` adds the collection's trailing slash. */
export function uriOf(ctx: SizeContext, rel: string, dir = false): string {
  return pathToUri(rel === '' ? ctx.root : join(ctx.root, ...rel.split('/')), dir);
}

/** Repeats `fn` up to `maxRuns` times but stops once `budgetMs` is spent (at least `minRuns`). */
export async function sampleWithin(
  maxRuns: number,
  budgetMs: number,
  fn: () => unknown,
  minRuns = 1,
): Promise<number[]> {
  const samples: number[] = [];
  const deadline = performance.now() + budgetMs;
  while (samples.length < maxRuns && (samples.length < minRuns || performance.now() < deadline)) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return samples;
}

/** One result per tree size, in size order, as the tables get them. */
export type BySize<R> = { size: number; result: R | Skipped }[];

export interface Table {
  title: string;
  header: string[];
  rows: string[][];
  /** One line under the table: what the target is, how to read it. */
  note?: string;
}

export interface Scenario<R> {
  /** Name for `--only` and the key in the results file. */
  name: string;
  run(ctx: SizeContext): Promise<R | Skipped>;
  tables(bySize: BySize<R>): Table[];
}

/** Formats a skipped result's cells: "n/a: reason" in the first data column. */
export function skippedRow(size: number, r: Skipped, width: number): string[] {
  return [sizeLabel(size), `n/a: ${r.skipped}`, ...Array(Math.max(0, width - 2)).fill('')];
}

/** One table row per tree size: the size, then `cells` of its result, or an n/a row for a skipped size. */
export function rowPerSize<R>(bySize: BySize<R>, header: readonly string[], cells: (r: R) => string[]): string[][] {
  return bySize.map(({ size, result }) =>
    isSkipped(result) ? skippedRow(size, result, header.length) : [sizeLabel(size), ...cells(result)],
  );
}

export function sizeLabel(size: number): string {
  return size >= 1_000_000 ? `${size / 1_000_000}M` : size >= 1000 ? `${size / 1000}k` : String(size);
}
