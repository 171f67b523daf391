// Search quality on a labelled query set that ships with the repository
// (bench/eval/queries.json: questions over this repository's docs/ and src/
// with the files that answer them): recall@10 and MRR for text, meaning and
// hybrid search, through the built server over stdio. Usage:
//   npm run eval:search -- --embed-url URL --embed-model NAME [--embed-api ollama|openai]
// Without --embed-url it runs against the tests' embedding server
// (test/embed-server.ts), a toy model: its figures check the plumbing, and
// real figures need a real model. Prints a table and writes
// bench/results/eval-search.json.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startEmbedServer } from '../test/embed-server.ts';
import { connect, waitFor, type LooseResult } from '../test/helpers.ts';

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const MODES = ['text', 'meaning', 'hybrid'] as const;
const K = 10;
/** A provider failing this long on end while the eval waits for embeddings: it stops, saying why. */
const PROVIDER_GIVE_UP_MS = 60_000;

const { values } = parseArgs({ options: { 'embed-url': { type: 'string' }, 'embed-model': { type: 'string' }, 'embed-api': { type: 'string' } } });
const labelled = JSON.parse(readFileSync(join(REPO, 'bench/eval/queries.json'), 'utf8')) as { roots: string[]; queries: { query: string; relevant: string[] }[] };

const toy = values['embed-url'] === undefined ? await startEmbedServer() : undefined;
const url = values['embed-url'] ?? toy!.origin;
const model = values['embed-model'] ?? 'test-embedder';
const state = mkdtempSync(join(tmpdir(), 'folder-mcp-eval-'));
const roots = labelled.roots.map((r) => join(REPO, r));
const conn = await connect([...roots, '--db', join(state, 'index.db'), '--embed-url', url, '--embed-model', model, ...(values['embed-api'] ? ['--embed-api', values['embed-api']] : [])]);
try {
  type Result = { structuredContent?: { results?: { uri: string }[]; note?: string; indexing?: unknown; mode?: string } } & LooseResult;
  const search = (query: string, mode: string) => conn.request('tools/call', { name: 'search', arguments: { query, mode, limit: K } }) as Promise<Result>;
  // Wait until the content index is complete and every file is embedded (a real model may take minutes), saying
  // how it goes every 10 s, and giving up once the provider has failed for a minute on end (issue 46: it printed
  // nothing for 10 minutes after its provider died).
  let said = performance.now();
  let failingSince: number | null = null;
  await waitFor(async () => {
    const r = await search(labelled.queries[0]!.query, 'meaning');
    const s = r.structuredContent;
    const failing = s?.mode === 'text' && /unavailable/.test(s.note ?? '');
    failingSince = failing ? (failingSince ?? performance.now()) : null;
    if (failingSince !== null && performance.now() - failingSince > PROVIDER_GIVE_UP_MS) {
      throw new Error(`the embedding provider at ${url} has failed for ${PROVIDER_GIVE_UP_MS / 1000} s: ${s?.note ?? ''}`);
    }
    if (performance.now() - said > 10_000) {
      said = performance.now();
      console.error(`eval:search: waiting for the embeddings: ${s?.note ?? (s?.indexing ? 'the content index is being built' : 'nearly there')}`);
    }
    return s && !s.indexing && s.note === undefined && s.mode === 'meaning';
  }, 30 * 60_000, 'every file to be embedded');
  const rows: Record<string, { recall: number; mrr: number }> = {};
  const perQuery: { query: string; mode: string; found: string[] }[] = [];
  for (const mode of MODES) {
    let recall = 0;
    let mrr = 0;
    for (const q of labelled.queries) {
      const r = await search(q.query, mode);
      const found = (r.structuredContent?.results ?? []).map((h) => relative(REPO, fileURLToPath(h.uri)));
      perQuery.push({ query: q.query, mode, found });
      recall += q.relevant.filter((p) => found.includes(p)).length / q.relevant.length;
      const first = found.findIndex((p) => q.relevant.includes(p));
      mrr += first < 0 ? 0 : 1 / (first + 1);
    }
    rows[mode] = { recall: recall / labelled.queries.length, mrr: mrr / labelled.queries.length };
  }
  console.log(`${labelled.queries.length} queries over ${labelled.roots.join(', ')}; model ${model}${toy ? ' (the tests\' toy embedder: real figures need a real model)' : ` at ${url}`}`);
  console.log('');
  console.log(`| mode | recall@${K} | MRR |`);
  console.log('|---|---:|---:|');
  for (const mode of MODES) console.log(`| ${mode} | ${rows[mode]!.recall.toFixed(2)} | ${rows[mode]!.mrr.toFixed(2)} |`);
  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(join(REPO, 'bench/results/eval-search.json'), JSON.stringify({ model, toy: toy !== undefined, k: K, modes: rows, perQuery, at: new Date().toISOString() }, null, 2) + '\n');
} finally {
  await conn.close();
  await toy?.close();
  rmSync(state, { recursive: true, force: true });
}
