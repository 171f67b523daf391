// A search cannot stall the server (issue 11, item 9): query cost bounded at
// parse time, a time budget that cuts a result short and says so, and queries
// run off the event loop so other requests are answered meanwhile.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { ContentSearch } from '../../src/search/content-search.ts';
import { MAX_PREFIX_TERMS, MIN_PREFIX_CHARS, parseSearchQuery, SearchQueryError } from '../../src/search/search-query.ts';
import { SearchReader } from '../../src/search/search-reader.ts';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { silentLogger } from '../../src/log.ts';
import { planQuery } from '../../src/query/plan.ts';
import { makeRoot } from '../../src/uri.ts';
import { connect, tempDir, waitFor, type LooseResult } from '../helpers.ts';

/** Every file holds words starting with each of these, from thousands of distinct words per prefix. */
const PREFIXES = ['abc', 'cde', 'efg', 'ghi'];
const BROAD = PREFIXES.map((p) => `${p}*`).join(' ');
const ONE_LETTER = 'w f a b c d e g h i j k l m n o p q r s t u v x y z 1 2 3 4 5 6'
  .split(' ')
  .map((l) => `${l}*`)
  .join(' ');

/** `files` text files in which every prefix term of BROAD matches, each expanding to thousands of index words. */
function broadTree(root: string, files: number): void {
  let seed = 1;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  for (let i = 0; i < files; i++) {
    const dir = join(root, `d${i % 40}`);
    mkdirSync(dir, { recursive: true });
    const words: string[] = [];
    for (const p of PREFIXES) for (let n = 0; n < 12; n++) words.push(`${p}${(next() % 5000).toString(36)}`);
    writeFileSync(join(dir, `f${i}.txt`), `${words.join(' ')}\nneedle${i % 3}\n`);
  }
}

describe('parseSearchQuery bounds the cost of prefix terms', () => {
  const refused: [string, RegExp][] = [
    ['w*', new RegExp(`w\\* is too short: a prefix needs at least ${MIN_PREFIX_CHARS} letters or digits`)],
    ['parser ab*', /ab\* is too short/],
    [ONE_LETTER, /more than 16 terms|too short/],
    [PREFIXES.concat(['qrs']).map((p) => `${p}*`).join(' '), new RegExp(`more than ${MAX_PREFIX_TERMS} prefix`)],
  ];
  for (const [query, message] of refused) {
    test(`refused: ${query.slice(0, 40)}`, () => {
      assert.throws(() => parseSearchQuery(query), (e: Error) => e instanceof SearchQueryError && message.test(e.message));
    });
  }
  const allowed = ['abc*', BROAD, 'w', 'w x y z', '"w*"', 'é12*'];
  for (const query of allowed) {
    test(`allowed: ${query}`, () => assert.ok(parseSearchQuery(query).match.length > 0));
  }
});

describe('the time budget', () => {
  test('a search past its deadline stops between statements and says it was cut short', async () => {
    const dir = tempDir();
    const state = tempDir('folder-mcp-state-');
    try {
      broadTree(dir.path, 200);
      const root = makeRoot(dir.path);
      const index = new FolderIndex({ roots: [root], dbFile: join(state.path, 'i.db'), log: silentLogger, gitignore: true, exclude: [] });
      const search = new ContentSearch(index, silentLogger, undefined, { workerUrl: null });
      index.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
      search.start();
      await search.idle();
      const expression = parseSearchQuery(BROAD);
      const plan = planQuery({ method: 'resources/list' });
      const scope = { ranges: plan.ranges, residual: plan.residual, exact: true };
      const reader = new SearchReader(index.db);
      const whole = reader.search(expression, scope, 20);
      assert.deepEqual([whole.hits.length, whole.truncated], [20, false]);
      // A deadline already passed: the ranked statement runs, no snippet after it.
      const cut = reader.search(expression, scope, 20, performance.now() - 1);
      assert.deepEqual([cut.hits.length, cut.truncated], [0, true]);
      // The same through ContentSearch.query on the main thread (an index with no second connection).
      const viaQuery = await search.query(expression, { method: 'resources/list' }, true, 20, 0);
      assert.equal(viaQuery.truncated, true);
      await search.close();
      index.close();
    } finally {
      dir.cleanup();
      state.cleanup();
    }
  });
});

describe('the search thread', () => {
  test('a thread that fails is not the end of search: the query is answered on the main thread, with a warning', async () => {
    const dir = tempDir();
    const state = tempDir('folder-mcp-state-');
    try {
      broadTree(dir.path, 20);
      const broken = join(state.path, 'broken-worker.mjs');
      writeFileSync(broken, "throw new Error('cannot start');\n");
      const warnings: string[] = [];
      const log = { ...silentLogger, warn: (m: string) => warnings.push(m) };
      const index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: join(state.path, 'i.db'), log: silentLogger, gitignore: true, exclude: [] });
      const search = new ContentSearch(index, log, undefined, { workerUrl: pathToFileURL(broken) });
      index.readiness.catchUp(Promise.resolve()); // no live layer: caught up with the disk once scanned
      search.start();
      await search.idle();
      const outcome = await search.query(parseSearchQuery('needle1'), { method: 'resources/list' }, true, 50);
      assert.equal(outcome.hits.length, 7);
      assert.match(warnings.join('\n'), /search thread failed: cannot start; this search runs on the main thread/);
      await search.close();
      index.close();
    } finally {
      dir.cleanup();
      state.cleanup();
    }
  });
});

describe('a cancelled search', () => {
  test('never runs while it waits for the search thread, and frees its place: a client that cancels does not wait behind its own searches', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    const state = tempDir('folder-mcp-state-');
    broadTree(dir.path, 20);
    const index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: join(state.path, 'i.db'), log: silentLogger, gitignore: true, exclude: [] });
    const search = new ContentSearch(index, silentLogger);
    try {
      index.readiness.catchUp(Promise.resolve());
      search.start();
      await search.idle();
      const ask = (signal?: AbortSignal) => search.query(parseSearchQuery('needle1'), { method: 'resources/list' }, true, 50, undefined, null, signal);
      // The first goes to the thread; the next eight fill the queue (SearchThread's MAX_QUEUED).
      const running = ask();
      const cancels = Array.from({ length: 8 }, () => new AbortController());
      const waiting = cancels.map((c) => ask(c.signal));
      await assert.rejects(ask(), /8 searches are already waiting/);
      for (const c of cancels) c.abort();
      for (const w of waiting) await assert.rejects(w, /the request was cancelled/);
      // Their places are free at once, and the thread runs what is asked next.
      const next = Array.from({ length: 8 }, () => ask());
      assert.equal((await running).hits.length, 7);
      for (const n of next) assert.equal((await n).hits.length, 7);
      const aborted = new AbortController();
      aborted.abort();
      await assert.rejects(ask(aborted.signal), /the request was cancelled/, 'cancelled before it was asked');
    } finally {
      // Closed whatever failed: a search thread left running would hold the test process open.
      await search.close();
      index.close();
      dir.cleanup();
      state.cleanup();
    }
  });
});

describe('a hostile search over stdio', () => {
  test('is bounded or cut short, and a resources/list sent after it is answered first', async () => {
    const dir = tempDir();
    const state = tempDir('folder-mcp-state-');
    broadTree(dir.path, 3000);
    // A 1 ms budget: the broad query always overruns it; the default is 2 s.
    const conn = await connect(['--db', join(state.path, 'i.db'), '--watcher', 'none', '--search-budget-ms', '1', dir.path]);
    type Result = LooseResult & { isError?: boolean; content: { text: string }[]; structuredContent?: LooseResult };
    const search = (query: string) => conn.request('tools/call', { name: 'search', arguments: { query } }) as Promise<Result>;
    try {
      await waitFor(async () => (await search('needle1')).structuredContent?.indexing === undefined, 60_000, 'content index built');

      const refused = await search(ONE_LETTER);
      assert.equal(refused.isError, true);
      assert.match(refused.content[0]!.text, /more than 16 terms|too short/);

      const order: string[] = [];
      const broad = search(BROAD).then((r) => (order.push('search'), r));
      const list = conn.request('resources/list', {}).then((r) => (order.push('list'), r));
      const [result, listed] = await Promise.all([broad, list]);
      assert.ok((listed.resources as unknown[]).length > 0);
      assert.deepEqual(order, ['list', 'search'], 'the list is not held up behind the search');
      assert.equal(result.isError ?? false, false, result.content[0]?.text);
      assert.equal(result.structuredContent!.truncated, true);
      assert.match(result.content[0]!.text, /^Note: the search was cut short after 1 ms; results are partial/);

      // The search thread still answers afterwards.
      const narrow = await search('needle2');
      assert.equal(narrow.isError ?? false, false);
    } finally {
      await conn.close();
      dir.cleanup();
      state.cleanup();
    }
  });
});
