import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { settled, settleTimeout, spawnFolderMcp, type Conn } from '../client.ts';
import { isSkipped, sampleWithin, sizeLabel, uriOf, type Scenario, type SizeContext, type Skipped } from '../context.ts';
import { fmtMs, fmtRatio, summarize, type Stat } from '../stats.ts';

const run = promisify(execFile);

/** One kind of read: its timing, or why it was not measured. */
export interface ReadResult {
  label: string;
  stat: Stat | null;
  /** What came back: content items and their MIME types. */
  detail: string;
  /** The alternative it is compared with (grep -r for search). */
  baseline?: Stat | null;
  baselineLabel?: string;
  skipped?: string;
}

export type ReadsResult = Record<string, ReadResult>;

interface Content {
  mimeType?: string;
  text?: string;
  blob?: string;
}

async function readCase(ctx: SizeContext, conn: Conn, label: string, rel: string, wantAlternative: boolean): Promise<ReadResult> {
  const uri = uriOf(ctx, rel);
  let contents: Content[];
  try {
    contents = (await conn.request('resources/read', { uri })).contents as Content[];
  } catch (error) {
    return { label, stat: null, detail: '', skipped: `read failed: ${(error as Error).message.slice(0, 100)}` };
  }
  const detail = contents.map((c) => `${c.mimeType ?? '?'} ${c.text !== undefined ? 'text' : 'blob'}`).join(', ');
  if (wantAlternative && contents.length < 2) return { label, stat: null, detail, skipped: 'no converted alternative (converter not there)' };
  const samples = await sampleWithin(ctx.quick ? 10 : 40, 10_000, () => conn.request('resources/read', { uri }), 5);
  return { label, stat: summarize(samples), detail };
}

async function searchCase(ctx: SizeContext, conn: Conn): Promise<ReadResult> {
  const label = `search tool ("${ctx.tree.needle}")`;
  const tools = (await conn.request('tools/list', {}).catch(() => ({ tools: [] }))).tools as { name: string; inputSchema?: { properties?: Record<string, unknown> } }[];
  const tool = tools.find((t) => t.name === 'search' || t.name.endsWith('search'));
  if (!tool) return { label, stat: null, detail: '', skipped: 'tools/list has no search tool' };
  const props = Object.keys(tool.inputSchema?.properties ?? {});
  const argName = props.find((p) => ['query', 'q', 'text', 'pattern'].includes(p)) ?? props[0] ?? 'query';
  const call = () => conn.request('tools/call', { name: tool.name, arguments: { [argName]: ctx.tree.needle } });
  let first;
  try {
    first = await call();
  } catch (error) {
    return { label, stat: null, detail: '', skipped: `search failed: ${(error as Error).message.slice(0, 100)}` };
  }
  const hits = (first.content as unknown[] | undefined)?.length ?? 0;
  const samples = await sampleWithin(ctx.quick ? 10 : 30, 15_000, call, 3);
  const grep = await sampleWithin(ctx.runs, 60_000, () => run('grep', ['-rl', '--', ctx.tree.needle, ctx.root], { maxBuffer: 1 << 28 }).catch(() => null), 1);
  return { label, stat: summarize(samples), detail: `${hits} content items`, baseline: summarize(grep), baselineLabel: 'grep -rl' };
}

export const reads: Scenario<ReadsResult> = {
  name: 'reads',
  async run(ctx): Promise<ReadsResult | Skipped> {
    if (!existsSync(ctx.db)) return { skipped: 'no index from the cold scenario (run it first)' };
    const conn = await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'none']);
    await settled(conn, performance.now(), settleTimeout(ctx.tree.size));
    try {
      const t = ctx.tree;
      return {
        bigText: await readCase(ctx, conn, '1 MB text file', t.bigText, false),
        binary: await readCase(ctx, conn, '1 MB binary file (base64)', t.binary, false),
        pdf: await readCase(ctx, conn, 'PDF with text alternative', t.pdf, true),
        notebook: await readCase(ctx, conn, 'notebook with Markdown alternative', t.notebook, true),
        search: await searchCase(ctx, conn),
      };
    } finally {
      await conn.close();
    }
  },
  tables(bySize) {
    const header = ['size', 'read', 'p50', 'p99', 'min–max', 'contents', 'baseline', 'ratio'];
    const rows: string[][] = [];
    for (const { size, result: r } of bySize) {
      if (isSkipped(r)) {
        rows.push([sizeLabel(size), `n/a: ${r.skipped}`, '', '', '', '', '', '']);
        continue;
      }
      for (const x of Object.values(r)) {
        if (!x.stat) {
          rows.push([sizeLabel(size), x.label, `n/a: ${x.skipped ?? 'not measured'}`, '', '', x.detail, '', '']);
          continue;
        }
        rows.push([
          sizeLabel(size),
          x.label,
          fmtMs(x.stat.p50),
          fmtMs(x.stat.p99),
          `${fmtMs(x.stat.min)}–${fmtMs(x.stat.max)}`,
          x.detail,
          x.baseline ? `${x.baselineLabel} ${fmtMs(x.baseline.p50)}` : '',
          x.baseline ? fmtRatio(x.baseline.p50 / x.stat.p50) : '',
        ]);
      }
    }
    return [{ title: '7. Reads over stdio: large text, binary, converted formats, full-text search', header, rows, note: 'ratio = baseline / folder-mcp (above 1: folder-mcp is faster).' }];
  },
};
