// The `search` tool: full-text search over the text documents and the text a
// read shows of PDFs, Office documents and notebooks (SQLite FTS5, bm25 ranking), one
// snippet and line number per file, and the page or cell when it has them; with an
// embedding model (--embed-url), by meaning too, or both fused (mode).
import { z } from 'zod';
import { PROGRESS_INTERVAL_MS, type ProgressSink } from '../protocol/progress.ts';
import { DEFAULT_SEARCH_BUDGET_MS } from '../config.ts';
import { SEARCH_MAX_FILE_BYTES, SEARCH_WAIT_MAX_FILES, type ContentSearch } from '../search/content-search.ts';
import type { Embeddings } from '../search/embeddings.ts';
import { SearchBusyError } from '../search/search-thread.ts';
import { scopeQuery } from './scope.ts';
import { MAX_QUERY_LENGTH, parseSearchQuery, SearchQueryError, type SearchExpression } from '../search/search-query.ts';
import { EmbedError } from '../search/embed-provider.ts';
import { SEARCH_MODES, type SearchMode } from '../search/meaning-reader.ts';
import { asList, resourceLink, stringOrList, ToolFailure, type ToolDefinition } from './tool.ts';
import { displayPath } from './paths.ts';
import { listingName } from '../content/collection.ts';

export const SEARCH_DEFAULT_LIMIT = 20;
export const SEARCH_MAX_LIMIT = 100;

/**
 * Runs `wait` (a wait for the first content build), telling a call that sent
 * a progress token how far the build got, every PROGRESS_INTERVAL_MS while
 * it moves: progress = documents checked, total = documents to check once
 * the build has counted them.
 */
async function withBuildProgress<T>(search: ContentSearch, progress: ProgressSink | undefined, wait: () => Promise<T>): Promise<T> {
  if (!progress) return wait();
  let last = -1;
  const report = () => {
    const { done, total, complete } = search.progress;
    if (complete || done === last) return;
    last = done;
    progress(done, total > 0 ? total : undefined, `content index: ${done} of ${total > 0 ? total : '?'} documents checked`);
  };
  report();
  const timer = setInterval(report, PROGRESS_INTERVAL_MS);
  try {
    return await wait();
  } finally {
    clearInterval(timer);
  }
}

/**
 * Waits (at most `waitMs`) for the embeddings to catch up, telling a call
 * that sent a progress token how far they got, every PROGRESS_INTERVAL_MS
 * while they move: progress = documents embedded, total = documents with text.
 */
async function withEmbeddingProgress(meaning: Embeddings, progress: ProgressSink | undefined, waitMs: number): Promise<void> {
  let last = -1;
  await meaning.whenEmbedded(waitMs, PROGRESS_INTERVAL_MS, ({ embedded, docs }) => {
    if (!progress || embedded === last) return;
    last = embedded;
    progress(embedded, docs, `embeddings: ${embedded} of ${docs} documents embedded`);
  });
}

const input = z.strictObject({
  query: z
    .string()
    .min(1)
    .describe(
      'Words and "quoted phrases"; every one must occur (AND). Case and accents are ignored. A word ending in * matches by prefix (`pars*`). ' +
        'Operators such as OR, NOT, NEAR, - and : are searched as plain text.',
    ),
  glob: stringOrList('Only files whose path (relative to a served folder) matches one of these globs, e.g. `src/**/*.ts`.'),
  name: stringOrList('Only files whose name matches one of these globs, e.g. `*.md`.'),
  prefix: z.string().optional().describe('Only files under this path (relative to a served folder) or URI prefix.'),
  mode: z
    .enum(SEARCH_MODES)
    .optional()
    .describe(
      'text: the words themselves (bm25). meaning: passages nearest in meaning (the server\'s embedding model), for questions whose words the files may not use. ' +
        'hybrid: both, fused by rank. Default hybrid when the server has an embedding model (--embed-url), else text.',
    ),
  limit: z.number().int().min(1).max(SEARCH_MAX_LIMIT).default(SEARCH_DEFAULT_LIMIT).describe(`At most this many files (max ${SEARCH_MAX_LIMIT}).`),
});

const hit = z.object({
  uri: z.string(),
  path: z.string(),
  line: z.number().describe('1-based line of the first highlighted match (a match by meaning: the first line of its passage)'),
  lineEnd: z.number().optional().describe('a match by meaning: the last line of the passage'),
  text: z.string().describe('that line, trimmed'),
  snippet: z.string().describe('the best matching passage, matches marked «like this»'),
  score: z.number().describe('relevance, higher is better: bm25 (text), cosine (meaning) or the fused rank score (hybrid)'),
  mimeType: z
    .string()
    .optional()
    .describe('present when the match is in the text form of a document (a PDF\'s text, a notebook\'s, workbook\'s or presentation\'s Markdown): its type; line counts in that text, as the read tool shows it'),
  page: z.number().optional().describe('the PDF page of the match (1-based)'),
  cell: z.number().optional().describe('the notebook cell of the match (1-based, every cell counted)'),
  sheet: z.number().optional().describe('the workbook sheet of the match (1-based, in workbook order)'),
  sheetName: z.string().optional().describe("that sheet's name"),
  slide: z.number().optional().describe('the presentation slide of the match (1-based)'),
});

const output = z.object({
  query: z.string(),
  terms: z.array(z.string()),
  mode: z.enum(SEARCH_MODES).describe('how the results were ranked: may be text when meaning search was asked for but is unavailable (see note)'),
  note: z.string().optional().describe('why meaning search was unavailable or partial'),
  results: z.array(hit),
  indexing: z
    .object({ done: z.number(), total: z.number() })
    .optional()
    .describe('Present while the content index is still being built: results cover only the files indexed so far.'),
  rechecking: z
    .boolean()
    .optional()
    .describe("True after a restart while the last run's content index is compared with the disk: a file changed since may be missing, or found by its old text."),
  waiting: z.number().optional().describe('Files known to have changed whose new text is not indexed yet (results may miss it); absent when none.'),
  truncated: z
    .boolean()
    .optional()
    .describe(`True when the search was cut short at its time budget (default ${DEFAULT_SEARCH_BUDGET_MS} ms): results are the best found by then, maybe none.`),
});

export const searchTool: ToolDefinition<z.infer<typeof input>> = {
  name: 'search',
  title: 'Search file contents',
  description:
    'Full-text search over the text files of the served folders and the text of PDF, .docx, .xlsx, .pptx and Jupyter notebook files, best matches first (bm25), ' +
    'with the line number and a snippet of each match, and the page (PDF), cell (notebook), sheet (workbook) or slide it is in. ' +
    `Text files up to ${SEARCH_MAX_FILE_BYTES / 1024 / 1024} MiB are indexed. ` +
    'When the server has an embedding model, mode "meaning" or "hybrid" (then the default) also finds passages by meaning, for questions whose exact words the files may not use. ' +
    'Use find for file names, read to see a file.',
  input,
  output,
  async run(tc, args) {
    const { ctx, search } = tc;
    if (!search) throw new ToolFailure('Full-text search is turned off on this server (--no-search)');
    const meaning = search.meaning;
    const asked: SearchMode = args.mode ?? (meaning ? 'hybrid' : 'text');
    if (asked !== 'text' && !meaning) {
      throw new ToolFailure(
        `Search by meaning is not configured on this server: start it with --embed-url and --embed-model (see docs/tools.md), or use mode "text"`,
      );
    }
    if (args.query.length > MAX_QUERY_LENGTH) throw new ToolFailure(`Query is longer than ${MAX_QUERY_LENGTH} characters`);
    let expression: SearchExpression | null = null;
    try {
      expression = parseSearchQuery(args.query);
    } catch (error) {
      if (!(error instanceof SearchQueryError)) throw error;
      // A question by meaning needs no searchable words; text search does.
      if (asked === 'text') throw new ToolFailure(error.message);
    }
    // A search right after start on a small folder would otherwise say "No
    // matches" for words the index is about to have: wait for the first build, bounded.
    if (!search.progress.complete) await withBuildProgress(search, tc.progress, () => search.whenSmallBuildComplete());
    const query = scopeQuery({ glob: asList(args.glob), name: asList(args.name), prefix: args.prefix }, ctx.roots);
    const exact = query.namePatterns === undefined && query.uriPatterns === undefined;
    let mode: SearchMode = asked;
    let vector: Float32Array | null = null;
    let note: string | undefined;
    if (meaning && asked !== 'text') {
      let status = meaning.status();
      // As for the content build: on a small folder, a search by meaning right after start (or after many
      // edits) waits a moment for the embeddings to catch up rather than answer from a few of them.
      if (status.embedded < status.docs && status.failing === null && status.docs - status.embedded <= SEARCH_WAIT_MAX_FILES) {
        await withEmbeddingProgress(meaning, tc.progress, search.searchWaitMs);
        status = meaning.status();
      }
      try {
        // A provider that failed moments ago is not asked again by a search that can do without it (each ask
        // waited up to the timeout, 30 s by default, before the answer came from text); a search by meaning alone is.
        const hold = asked === 'hybrid' ? meaning.queryHold() : null;
        if (hold !== null) throw new EmbedError(hold, hold);
        vector = await meaning.embedQuery(args.query);
        if (status.embedded < status.docs) {
          note = `search by meaning covers ${status.embedded} of ${status.docs} files so far${status.failing !== null ? ` (the embedding model fails: ${status.failing})` : ''}; results by meaning are partial.`;
        }
      } catch (error) {
        if (!(error instanceof EmbedError)) throw error;
        mode = 'text';
        note = `search by meaning is unavailable (the embedding model fails: ${error.reason}); these results are from text search.`;
      }
    }
    if (mode === 'meaning') expression = null;
    if (mode === 'text' && expression === null) {
      throw new ToolFailure(`${note !== undefined ? `${note} ` : ''}Query has no words to search for as text`);
    }
    let outcome;
    try {
      outcome = await search.query(expression, query, exact, args.limit, undefined, vector, tc.signal);
    } catch (error) {
      if (error instanceof SearchBusyError) throw new ToolFailure(`Search is busy: ${error.message}`);
      throw error;
    }
    const { hits, truncated } = outcome;
    const progress = search.progress;
    const results = hits.map((h) => ({
      uri: h.row.uri,
      path: displayPath(h.row, ctx.roots),
      line: h.line,
      ...(h.lineEnd !== undefined ? { lineEnd: h.lineEnd } : {}),
      text: h.text,
      snippet: h.snippet,
      score: Number(h.score.toPrecision(mode === 'hybrid' ? 6 : 4)),
      ...(h.form !== undefined ? { mimeType: h.form } : {}),
      ...(h.place ? { [h.place.unit]: h.place.number } : {}),
      ...(h.place?.unit === 'sheet' && h.place.name !== undefined ? { sheetName: h.place.name } : {}),
    }));
    const indexing = progress.complete ? undefined : { done: progress.done, total: progress.total };
    // Once complete: answered from an index that may lag the disk, for a moment, by what it knows changed.
    const rechecking = progress.complete && progress.rechecking;
    const waiting = progress.complete && !rechecking ? progress.waiting : 0;
    // One hit per line: the matched line's own control characters are escaped too.
    const lines = hits.map((h, i) => {
      const r = results[i]!;
      // A sheet's name is the file's to choose: escaped as a path is (JSON.stringify left U+0085, U+2028 and DEL raw).
      const name = h.place?.name !== undefined ? ` "${listingName(h.place.name).replace(/"/g, '\\"')}"` : '';
      const where = h.place ? ` (${h.place.unit} ${h.place.number}${name})` : '';
      const lines = h.lineEnd !== undefined && h.lineEnd !== h.line ? `${r.line}-${h.lineEnd}` : `${r.line}`;
      // A match by meaning is its passage, not its first line (issue 46: `cars.md:1-3: # Garage notes` showed
      // nothing of what matched): the passage on one line, cut at PASSAGE_SHOWN characters.
      const shown = h.lineEnd !== undefined ? passageLine(h.snippet) : r.text;
      return `${r.path}:${lines}${where}: ${listingName(shown)}`;
    });
    const summary =
      (note !== undefined ? `Note: ${note}\n` : '') +
      (indexing ? `Note: the content index is still being built (${indexing.done} of ${indexing.total} files); results are partial.\n` : '') +
      (rechecking ? "Note: the content index is the last run's, still being re-checked against the disk; a file changed since may be missing or found by its old text.\n" : '') +
      (waiting > 0 ? `Note: ${waiting} changed file${waiting === 1 ? ' is' : 's are'} not indexed yet; results may miss their new text.\n` : '') +
      (truncated
        ? `Note: the search was cut short after ${search.searchBudgetMs} ms; results are partial. Use fewer or longer prefix terms, or narrow it with glob, name or prefix.\n`
        : '') +
      (results.length === 0 ? `No matches for ${expression ? expression.terms.join(' ') : JSON.stringify(args.query)}.` : lines.join('\n'));
    return {
      content: [{ type: 'text', text: summary }, ...hits.map((h) => resourceLink(h.row, ctx))],
      structuredContent: { query: args.query, terms: expression?.terms ?? [], mode, ...(note !== undefined ? { note } : {}), results, ...(indexing ? { indexing } : {}), ...(rechecking ? { rechecking } : {}), ...(waiting > 0 ? { waiting } : {}), ...(truncated ? { truncated } : {}) },
    };
  },
};

/** Characters of a meaning hit's passage shown on its line of the text answer (the whole passage is in structuredContent). */
const PASSAGE_SHOWN = 240;

function passageLine(passage: string): string {
  const line = passage.replace(/\s+/g, ' ').trim();
  return line.length > PASSAGE_SHOWN ? `${line.slice(0, PASSAGE_SHOWN)}…` : line;
}
