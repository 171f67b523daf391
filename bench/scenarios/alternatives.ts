import { existsSync } from 'node:fs';
import { join } from 'node:path';
import picomatch from 'picomatch';
import { listAll, SERVER_FILESYSTEM, settled, settleTimeout, spawnFolderMcp, spawnServer, type Conn } from '../client.ts';
import { isSkipped, sampleWithin, sizeLabel, skippedRow, uriOf, type Scenario, type SizeContext } from '../context.ts';
import { fmtMs, fmtRatio, summarize, type Stat } from '../stats.ts';

interface Question {
  key: string;
  label: string;
  /** server-filesystem: tool and arguments; returns how many entries it answered with. */
  tool: string;
  args: Record<string, unknown>;
  /** folder-mcp: resources/list params, paged to the end. */
  params: Record<string, unknown>;
  accepts(uri: string): boolean;
  /** Above this size the tool's answer would break the SDK's 10 MiB message limit. */
  maxSize?: number;
}

function questions(ctx: SizeContext): Question[] {
  const src = uriOf(ctx, 'src', true);
  const docs = uriOf(ctx, 'docs', true);
  const isTs = picomatch('*.ts');
  const name = (u: string) => decodeURIComponent(u.replace(/\/$/, '').split('/').pop() ?? '');
  return [
    {
      key: 'ts-under-src',
      label: 'all .ts files under src/',
      tool: 'search_files',
      args: { path: join(ctx.root, 'src'), pattern: '**/*.ts' },
      params: { prefix: src, filter: { namePatterns: ['*.ts'] } },
      accepts: (u) => u.startsWith(src) && isTs(name(u)),
    },
    {
      key: 'in-docs',
      label: 'what is in docs/ (direct children)',
      tool: 'list_directory',
      args: { path: join(ctx.root, 'docs') },
      params: { uri: docs },
      accepts: (u) => u.startsWith(docs) && u !== docs && !u.slice(docs.length).replace(/\/$/, '').includes('/'),
    },
    {
      key: 'docs-tree',
      label: 'everything under docs/ (tree)',
      tool: 'directory_tree',
      args: { path: join(ctx.root, 'docs') },
      params: { prefix: docs },
      accepts: (u) => u.startsWith(docs),
      maxSize: 100_000,
    },
  ];
}

function countAnswer(tool: string, result: Record<string, unknown>): number {
  const text = ((result.content as { text?: string }[] | undefined)?.[0]?.text ?? '').trim();
  if (result.isError) throw new Error(`${tool}: ${text.slice(0, 200)}`);
  if (tool === 'directory_tree') {
    const count = (nodes: { children?: unknown[] }[]): number =>
      nodes.reduce((n, x) => n + 1 + (x.children ? count(x.children as never) : 0), 0);
    return count(JSON.parse(text) as never);
  }
  return text === '' || text === 'No matches found' ? 0 : text.split('\n').length;
}

export interface QuestionResult {
  label: string;
  tool: string;
  filesystem: Stat | null;
  filesystemItems: number | null;
  folderMcp: Stat;
  /** The first page alone (absent in results from before it was measured). */
  folderMcpFirstPage?: Stat;
  folderMcpItems: number;
  folderMcpPages: number;
  honoured: boolean;
  note?: string;
}

export type AlternativesResult = Record<string, QuestionResult>;

export const alternatives: Scenario<AlternativesResult> = {
  name: 'alternatives',
  async run(ctx) {
    if (!existsSync(ctx.db)) return { skipped: 'no index from the cold scenario (run it first)' };
    const fm = await spawnFolderMcp(ctx.root, ctx.db, ['--watcher', 'none']);
    await settled(fm, performance.now(), settleTimeout(ctx.tree.size));
    let fs: Conn | null = null;
    const out: AlternativesResult = {};
    try {
      fs = await spawnServer(SERVER_FILESYSTEM, [ctx.root]);
      for (const q of questions(ctx)) {
        ctx.log(`  vs server-filesystem: ${q.label}`);
        const first = await listAll(fm, q.params);
        const honoured = first.items > 0 && first.uris.every(q.accepts);
        for (let i = 0; i < 5; i++) await listAll(fm, q.params);
        const fmSamples = await sampleWithin(ctx.runs * 3, 20_000, () => listAll(fm, q.params), 3);
        // The first page alone: what a client can show while it asks for the rest.
        const firstPage = await sampleWithin(ctx.runs * 10, 10_000, () => fm.request('resources/list', q.params), 5);
        let filesystem: Stat | null = null;
        let filesystemItems: number | null = null;
        let note: string | undefined;
        if (q.maxSize !== undefined && ctx.tree.size > q.maxSize) {
          note = `skipped above ${sizeLabel(q.maxSize)}: its one-message answer outgrows the SDK's 10 MiB stdio limit`;
        } else {
          const call = async () => (filesystemItems = countAnswer(q.tool, await fs!.request('tools/call', { name: q.tool, arguments: q.args })));
          try {
            if (ctx.tree.size < 1_000_000) for (let i = 0; i < (ctx.tree.size <= 10_000 ? 3 : 1); i++) await call(); // warm-up, where affordable
            filesystem = summarize(await sampleWithin(ctx.runs, 60_000, call, 1));
          } catch (error) {
            note = `server-filesystem failed: ${(error as Error).message.slice(0, 120)}`;
            // A closed connection (e.g. an answer over the SDK's 10 MiB message limit) ends that server: start another.
            await fs.close().catch(() => {});
            fs = await spawnServer(SERVER_FILESYSTEM, [ctx.root]);
          }
        }
        out[q.key] = {
          label: q.label,
          tool: q.tool,
          filesystem,
          filesystemItems,
          folderMcp: summarize(fmSamples),
          folderMcpFirstPage: summarize(firstPage),
          folderMcpItems: first.items,
          folderMcpPages: first.pages,
          honoured,
          ...(note ? { note } : {}),
        };
      }
      return out;
    } finally {
      await fm.close();
      await fs?.close();
    }
  },
  tables(bySize) {
    const header = ['size', 'question', 'server-filesystem', 'its items', 'folder-mcp (all pages)', 'items / pages', 'speed-up', 'first page', 'first-page speed-up'];
    const rows: string[][] = [];
    for (const { size, result: r } of bySize) {
      if (isSkipped(r)) {
        rows.push(skippedRow(size, r, header.length));
        continue;
      }
      for (const q of Object.values(r)) {
        rows.push([
          sizeLabel(size),
          `${q.label}${q.honoured ? '' : ' (params ignored by server)'}`,
          q.filesystem ? `${fmtMs(q.filesystem.p50)} (${q.tool})` : `n/a${q.note ? `: ${q.note}` : ''}`,
          q.filesystemItems === null ? 'n/a' : String(q.filesystemItems),
          `${fmtMs(q.folderMcp.p50)} (p99 ${fmtMs(q.folderMcp.p99)})`,
          `${q.folderMcpItems} / ${q.folderMcpPages}`,
          q.filesystem ? fmtRatio(q.filesystem.p50 / q.folderMcp.p50) : 'n/a',
          q.folderMcpFirstPage ? fmtMs(q.folderMcpFirstPage.p50) : 'n/a',
          q.filesystem && q.folderMcpFirstPage ? fmtRatio(q.filesystem.p50 / q.folderMcpFirstPage.p50) : 'n/a',
        ]);
      }
    }
    return [
      {
        title: '5. The same question: @modelcontextprotocol/server-filesystem tools vs folder-mcp resources/list (default page size, every page)',
        header,
        rows,
        note: 'Target: >= 100x faster at 100k files for the whole answer, >= 1000x for the first page. server-filesystem walks the disk per call; its item count includes directories where its tool lists them.',
      },
    ];
  },
};
