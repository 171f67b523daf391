/** Summary of repeated timings, in milliseconds. */
export interface Stat {
  n: number;
  p50: number;
  p99: number;
  min: number;
  max: number;
}

export function summarize(samples: readonly number[]): Stat {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
  const mid = s.length % 2 === 1 ? s[(s.length - 1) / 2]! : ((s[s.length / 2 - 1] ?? NaN) + (s[s.length / 2] ?? NaN)) / 2;
  return { n: s.length, p50: mid, p99: at(0.99), min: s[0] ?? NaN, max: s.at(-1) ?? NaN };
}

/** Runs `fn` `warmup` times unmeasured, then `runs` times measured; returns the summary. */
export async function measure(runs: number, fn: () => unknown, warmup = 1): Promise<Stat> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return summarize(samples);
}

export async function timed<T>(fn: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

export function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return 'n/a';
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 100) return `${Math.round(ms)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 1) return `${ms.toFixed(2)} ms`;
  return `${ms.toFixed(3)} ms`;
}

export function fmtRatio(r: number | null | undefined): string {
  if (r === null || r === undefined || !Number.isFinite(r)) return 'n/a';
  return r >= 100 ? `${Math.round(r)}x` : r >= 10 ? `${r.toFixed(1)}x` : `${r.toFixed(2)}x`;
}

export function fmtStat(s: Stat | null | undefined): string {
  if (!s) return 'n/a';
  if (s.n === 1) return `${fmtMs(s.p50)} (1 run)`;
  return `${fmtMs(s.p50)} (p99 ${fmtMs(s.p99)}, ${fmtMs(s.min)}–${fmtMs(s.max)})`;
}

/** A plain-text table for the terminal. */
export function textTable(title: string, header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [`\n== ${title}`, line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** The same table as GitHub markdown. */
export function mdTable(header: string[], rows: string[][]): string {
  // Table cells hold globs and '<root>': keep them literal in GitHub markdown.
  const esc = (c: string) =>
    c.replace(/\|/g, '\\|').replace(/\*/g, '\\*').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return [
    `| ${header.map(esc).join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ].join('\n');
}
