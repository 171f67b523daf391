import { writeFileSync } from 'node:fs';
import { isSkipped } from './context.ts';
import { bySize, type Results } from './results.ts';
import type { AlternativesResult } from './scenarios/alternatives.ts';
import type { ColdResult } from './scenarios/cold.ts';
import type { ListResult } from './scenarios/list.ts';

/** One line of a chart: points (x = tree size, y = milliseconds). */
export interface Series {
  label: string;
  color: string;
  dash?: boolean;
  points: [number, number][];
}

export interface Panel {
  title: string;
  series: Series[];
}

const W = 460;
const H = 340;
const M = { left: 62, right: 16, top: 34, bottom: 118 };

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function msLabel(v: number): string {
  if (v >= 1000) return `${v / 1000} s`;
  if (v >= 1) return `${v} ms`;
  return `${v * 1000} µs`;
}

function sizeTick(v: number): string {
  return v >= 1e6 ? `${v / 1e6}M` : v >= 1e3 ? `${v / 1e3}k` : String(v);
}

/** One log-log panel at (x0, 0): decade grid, lines with dots, a legend underneath. */
function panel(p: Panel, x0: number): string {
  const pts = p.series.flatMap((s) => s.points).filter(([x, y]) => x > 0 && y > 0);
  if (pts.length === 0) return `<text x="${x0 + W / 2}" y="${H / 2}" text-anchor="middle">${esc(p.title)}: no data</text>`;
  const lx = (v: number) => Math.log10(v);
  const [xMin, xMax] = [Math.floor(lx(Math.min(...pts.map((q) => q[0])))), Math.ceil(lx(Math.max(...pts.map((q) => q[0]))))];
  const [yMin, yMax] = [Math.floor(lx(Math.min(...pts.map((q) => q[1])))), Math.ceil(lx(Math.max(...pts.map((q) => q[1]))))];
  const xSpan = Math.max(1, xMax - xMin);
  const ySpan = Math.max(1, yMax - yMin);
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const X = (v: number) => x0 + M.left + ((lx(v) - xMin) / xSpan) * plotW;
  const Y = (v: number) => M.top + plotH - ((lx(v) - yMin) / ySpan) * plotH;
  const out: string[] = [`<text x="${x0 + W / 2}" y="20" text-anchor="middle" font-weight="bold">${esc(p.title)}</text>`];
  for (let e = yMin; e <= yMin + ySpan; e++) {
    const y = Y(10 ** e);
    out.push(`<line x1="${X(10 ** xMin)}" x2="${X(10 ** (xMin + xSpan))}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${X(10 ** xMin) - 6}" y="${y + 4}" text-anchor="end">${msLabel(10 ** e)}</text>`);
  }
  for (let e = xMin; e <= xMin + xSpan; e++) {
    const x = X(10 ** e);
    out.push(`<line x1="${x}" x2="${x}" y1="${M.top}" y2="${M.top + plotH}" stroke="#ddd"/>`);
    out.push(`<text x="${x}" y="${M.top + plotH + 16}" text-anchor="middle">${sizeTick(10 ** e)}</text>`);
  }
  out.push(`<text x="${x0 + M.left + plotW / 2}" y="${M.top + plotH + 32}" text-anchor="middle">files in the tree</text>`);
  p.series.forEach((s, i) => {
    const good = s.points.filter(([x, y]) => x > 0 && y > 0).sort((a, b) => a[0] - b[0]);
    if (good.length > 0) {
      const d = good.map(([x, y], j) => `${j ? 'L' : 'M'}${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ');
      out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ' stroke-dasharray="5,4"' : ''}/>`);
      for (const [x, y] of good) out.push(`<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="3" fill="${s.color}"/>`);
    }
    const ly = M.top + plotH + 50 + i * 15;
    out.push(`<line x1="${x0 + M.left}" x2="${x0 + M.left + 22}" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"${s.dash ? ' stroke-dasharray="5,4"' : ''}/>`);
    out.push(`<text x="${x0 + M.left + 28}" y="${ly}">${esc(s.label)}${good.length ? '' : ' (no data)'}</text>`);
  });
  return out.join('\n');
}

export function renderSvg(panels: Panel[], caption: string): string {
  const width = W * panels.length;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 30}" viewBox="0 0 ${width} ${H + 30}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...panels.map((p, i) => panel(p, i * W)),
    `<text x="${width / 2}" y="${H + 22}" text-anchor="middle" fill="#666">${esc(caption)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}

function points<R>(results: Results, scenario: string, pick: (r: R) => number | null | undefined): [number, number][] {
  return bySize<R>(results, scenario)
    .filter((e): e is { size: number; result: R } => !isSkipped(e.result))
    .map(({ size, result }) => [size, pick(result) ?? NaN] as [number, number])
    .filter(([, y]) => Number.isFinite(y));
}

/** The README chart: page latency and index time against tree size, folder-mcp next to its floor and the alternatives. */
export function writeChart(results: Results, file: string): void {
  const pages: Panel = {
    title: 'Answer latency (p50, log-log)',
    series: [
      { label: 'folder-mcp: prefix page (100 items, stdio)', color: '#1f77b4', points: points<ListResult>(results, 'list', (r) => r.queries.prefix?.server.p50) },
      { label: 'folder-mcp: *.ts page', color: '#17becf', points: points<ListResult>(results, 'list', (r) => r.queries.namePatterns?.server.p50) },
      { label: 'SQLite floor: bare range query, in-process', color: '#2ca02c', dash: true, points: points<ListResult>(results, 'list', (r) => r.queries.prefix?.floor.p50) },
      { label: 'naive walk + filter: *.ts page', color: '#d62728', points: points<ListResult>(results, 'list', (r) => r.queries.namePatterns?.naive.p50) },
      { label: 'server-filesystem: all .ts under src/', color: '#ff7f0e', points: points<AlternativesResult>(results, 'alternatives', (r) => r['ts-under-src']?.filesystem?.p50) },
      { label: 'folder-mcp: all .ts under src/ (every page)', color: '#9467bd', points: points<AlternativesResult>(results, 'alternatives', (r) => r['ts-under-src']?.folderMcp.p50) },
    ],
  };
  const index: Panel = {
    title: 'Cold index time (p50, log-log)',
    series: [
      { label: 'bare fast-glob walk with stats (the limit)', color: '#2ca02c', dash: true, points: points<ColdResult>(results, 'cold', (r) => r.walk.p50) },
      { label: 'folder-mcp index, in-process', color: '#1f77b4', points: points<ColdResult>(results, 'cold', (r) => r.index.p50) },
      { label: 'folder-mcp server: spawn → first page', color: '#9467bd', points: points<ColdResult>(results, 'cold', (r) => r.server.p50) },
    ],
  };
  const m = Object.values(results.sizes)[0]?.machine;
  const caption = m ? `${m.nproc} x ${m.cpu}, ${m.ramGiB} GiB RAM, Node ${m.node}; ${results.updated.slice(0, 10)}` : '';
  writeFileSync(file, renderSvg([pages, index], caption));
}
