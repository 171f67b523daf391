// Search by meaning (issue 35): the built server over real stdio, an SDK
// client of each era, and a real embedding provider on 127.0.0.1 that the
// test owns (test/embed-server.ts), speaking Ollama's API to one server and
// OpenAI's to the other. A query word that is in no served file finds the
// file that says its synonym; every bad provider, at query time or in the
// background, leaves search answering from text with a note, and the server
// up; a model that changes dimension under its name is embedded again; a
// search on a small folder waits for its embeddings, with MCP progress; over
// Streamable HTTP on both eras too.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { closedPort, startCountingServer, startEmbedServer, type EmbedServer } from '../embed-server.ts';
import { makeNotebook } from '../fixtures.ts';
import { connect, tempTree, waitFor, type Connected, type Era, type LooseResult } from '../helpers.ts';
import { connectHttp, startHttp, type HttpClient, type HttpProcess } from '../http-helpers.ts';

type ToolCall = LooseResult & { content: LooseResult[]; structuredContent?: LooseResult; isError?: boolean };
type Hit = { path: string; line: number; lineEnd?: number; text: string; snippet: string; cell?: number; score: number };

const TREE: Record<string, string | Uint8Array> = {
  '.gitignore': 'secret/\n',
  'auth/session.md': '# Sessions\n\nA token lifetime of one hour; after that the user signs in again.\n',
  'garage/notes.txt': 'The automobile is parked in the garage.\nOil was changed in May.\n',
  'billing.txt': 'Each invoice is sent monthly to the customer.\n',
  'readme.txt': 'expired session handling lives in auth\n',
  'analysis.ipynb': makeNotebook([
    { cell_type: 'markdown', source: '# Analysis' },
    { cell_type: 'code', source: 'import pandas as pd' },
    { cell_type: 'markdown', source: 'The weather outlook for next week.' },
  ]),
  // Never sent to the provider: ignored, and over the search size limit.
  'secret/hidden.txt': 'classified expired material\n',
  'big.txt': `oversizedmarker ${'x'.repeat(1024 * 1024 + 10)}\n`,
};

const TIMEOUT_MS = 1500;

/** What a search needs of a connection, over stdio or HTTP. */
type Requester = Pick<Connected, 'request'>;

async function callTool(conn: Requester, args: Record<string, unknown>): Promise<ToolCall> {
  return (await conn.request('tools/call', { name: 'search', arguments: args })) as ToolCall;
}
const textOf = (result: ToolCall) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const hitsOf = (result: ToolCall) => (result.structuredContent?.results ?? []) as Hit[];
const paths = (result: ToolCall) => hitsOf(result).map((h) => h.path);

/** A search once every file is embedded (no note) and the content index complete. Conversions may be slow on a loaded machine: hence the ceiling. */
async function searchSettled(conn: Requester, args: Record<string, unknown>): Promise<ToolCall> {
  return waitFor(async () => {
    const result = await callTool(conn, args);
    const s = result.structuredContent;
    return s && !s.indexing && s.note === undefined && s.mode !== 'text' ? result : null;
  }, 120_000, `search by meaning to settle (${JSON.stringify(args)})`) as Promise<ToolCall>;
}

function servedWithProvider(api: 'ollama' | 'openai', era: Era, initialMode: EmbedServer['mode'] = 'ok') {
  const tree = tempTree(TREE);
  let provider: EmbedServer;
  let conn: Connected;
  before(async () => {
    provider = await startEmbedServer();
    // Before the server starts: a small tree is embedded within moments of it.
    provider.mode = initialMode;
    const url = api === 'ollama' ? provider.origin : `${provider.origin}/v1`;
    conn = await connect(
      [tree.root, '--db', join(tree.state, 'index.db'), '--embed-url', url, '--embed-model', 'test-embedder', '--embed-timeout-ms', String(TIMEOUT_MS)],
      { era, env: { FOLDER_MCP_EMBED_KEY: 'test-key-123' } },
    );
  });
  after(async () => {
    await conn?.close();
    await provider?.close();
  });
  return {
    tree,
    get conn() {
      return conn;
    },
    get provider() {
      return provider;
    },
  };
}

for (const [api, era] of [['ollama', 'legacy'], ['openai', 'modern']] as const) {
  describe(`search by meaning, ${api} API, ${era} era`, () => {
    const s = servedWithProvider(api, era);

    test('a word in no file finds the file that says its synonym, with its lines', async () => {
      const result = await searchSettled(s.conn, { query: 'automobile', mode: 'meaning' });
      const byCar = await searchSettled(s.conn, { query: 'car', mode: 'meaning' });
      assert.equal(paths(byCar)[0], 'garage/notes.txt', textOf(byCar));
      assert.equal(result.structuredContent?.mode, 'meaning');
      const hit = hitsOf(byCar)[0]!;
      assert.equal(hit.line, 1);
      assert.equal(hit.lineEnd, 2);
      assert.match(hit.snippet, /automobile is parked/);
      // The passage's lines, not only its first (issue 46).
      assert.match(textOf(byCar), /^garage\/notes\.txt:1-2: The automobile is parked in the garage\. Oil was changed in May\.$/m);
      // Text search alone knows no "car".
      const text = await callTool(s.conn, { query: 'car', mode: 'text' });
      assert.deepEqual(paths(text), []);
      assert.equal(text.structuredContent?.mode, 'text');
    });

    test('hybrid is the default: the file with the words and the file with the meaning both rank', async () => {
      const result = await searchSettled(s.conn, { query: 'expired' });
      assert.equal(result.structuredContent?.mode, 'hybrid');
      const found = paths(result);
      assert.ok(found.includes('readme.txt'), textOf(result));
      assert.ok(found.includes('auth/session.md'), textOf(result));
      assert.ok(!found.some((p) => p.startsWith('secret/')), 'ignored files are never found');
      // The text hit keeps its highlight.
      assert.match(hitsOf(result).find((h) => h.path === 'readme.txt')!.snippet, /«expired»/);
    });

    test('a notebook cell is found by meaning with its cell', async () => {
      const result = await searchSettled(s.conn, { query: 'forecast', mode: 'meaning' });
      const hit = hitsOf(result)[0]!;
      assert.equal(hit.path, 'analysis.ipynb', textOf(result));
      assert.equal(hit.cell, 3);
    });

    test('filters apply as for text: prefix and glob', async () => {
      const scoped = await searchSettled(s.conn, { query: 'expired', mode: 'meaning', prefix: 'garage' });
      assert.ok(paths(scoped).every((p) => p.startsWith('garage/')), textOf(scoped));
      const globbed = await searchSettled(s.conn, { query: 'lifetime', mode: 'meaning', glob: '**/*.md' });
      assert.deepEqual(paths(globbed), ['auth/session.md']);
    });

    test('the provider never saw an ignored file or one over the size limit, and got the key', () => {
      assert.ok(s.provider.texts.length > 0);
      assert.ok(!s.provider.texts.some((t) => t.includes('classified') || t.includes('oversizedmarker')));
      assert.ok(s.provider.requests.every((r) => r.api === api && r.authorization === 'Bearer test-key-123'));
    });

    test('a removed file leaves meaning search; an edited one is embedded again', async () => {
      rmSync(join(s.tree.root, 'billing.txt'));
      writeFileSync(join(s.tree.root, 'garage/notes.txt'), 'The receipt for the new tyres.\n');
      await waitFor(async () => {
        const result = await searchSettled(s.conn, { query: 'bill', mode: 'meaning' });
        return paths(result)[0] === 'garage/notes.txt' && !paths(result).includes('billing.txt');
      }, 30_000, 'the edit and the removal to reach meaning search');
    });
  });
}

describe('bad providers: search answers from text with a note, and the server stays up', () => {
  const s = servedWithProvider('ollama', 'legacy');
  let elsewhere: Awaited<ReturnType<typeof startCountingServer>>;
  before(async () => {
    elsewhere = await startCountingServer();
  });
  after(() => elsewhere?.close());

  // The note is a fixed short reason of ours: never the provider's own words ("model crashed", its JSON).
  const cases: { mode: EmbedServer['mode']; note: RegExp }[] = [
    { mode: 'slow', note: /\(the embedding model fails: no answer in time\)/ },
    { mode: 'unstable-dimension', note: /fails: (vectors of dimension \d+, not 64|the model answers vectors of dimension \d+, then \d+ \(the index holds 64\))\)/ },
    { mode: 'http-500', note: /fails: HTTP 500\)/ },
    { mode: 'model-not-found', note: /fails: HTTP 404\)/ },
    { mode: 'nan', note: /fails: a vector value that is not a finite number\)/ },
    // Finite as a number, Infinity as the float32 kept: documents were stored as zeros with a scale of Infinity.
    { mode: 'past-float32', note: /fails: a vector value that is not a finite number\)/ },
    // A query of zeros scores every passage 0: the scan's order came back as hits.
    { mode: 'zero', note: /fails: an unusable vector\)/ },
    { mode: 'redirect', note: /fails: request failed/ },
  ];
  test('every failure, then recovery', async () => {
    await searchSettled(s.conn, { query: 'lifetime' });
    s.provider.redirectTo = `${elsewhere.origin}/api/embed`;
    for (const c of cases) {
      s.provider.mode = c.mode;
      // By meaning alone, so that each search asks the provider: a hybrid one does not while the background
      // embedding finds it failing (the unstable dimension makes it embed everything again), as tested below.
      const result = await callTool(s.conn, { query: 'lifetime', mode: 'meaning' });
      assert.equal(result.isError, undefined, textOf(result));
      assert.equal(result.structuredContent?.mode, 'text', c.mode);
      assert.match(String(result.structuredContent?.note), /search by meaning is unavailable/, c.mode);
      assert.match(String(result.structuredContent?.note), c.note, c.mode);
      assert.match(textOf(result), /^Note: search by meaning is unavailable/m);
      assert.deepEqual(paths(result), ['auth/session.md'], `${c.mode}: answered from text`);
      // The server still answers everything else.
      const listed = (await s.conn.request('resources/list', {})) as { resources: unknown[] };
      assert.ok(listed.resources.length > 0);
    }
    assert.equal(elsewhere.hits(), 0, 'a redirect is never followed to another origin');
    s.provider.mode = 'ok';
    const back = await searchSettled(s.conn, { query: 'car', mode: 'meaning' });
    assert.equal(paths(back)[0], 'garage/notes.txt');
  });
});

describe('a provider failing from the start: one log line, the files stay queued, and it catches up', () => {
  const s = servedWithProvider('ollama', 'legacy', 'http-500');

  test('text answers meanwhile; once the provider answers, everything is embedded', async () => {
    await waitFor(() => /embeddings: .* failed: HTTP 500/.test(s.conn.stderr()), 30_000, 'the failure log line');
    const during = await callTool(s.conn, { query: 'lifetime' });
    assert.equal(during.structuredContent?.mode, 'text');
    assert.deepEqual(paths(during), ['auth/session.md']);
    s.provider.mode = 'ok';
    const after = await searchSettled(s.conn, { query: 'car', mode: 'meaning' });
    assert.equal(paths(after)[0], 'garage/notes.txt');
    assert.equal(s.conn.stderr().match(/failed: HTTP 500/g)?.length, 1, 'one line per failure streak');
    assert.match(s.conn.stderr(), /answers again/);
  });
});

describe('bad providers in the background: one log line a streak, the file stays queued and is retried, text answers meanwhile', () => {
  const s = servedWithProvider('ollama', 'legacy');
  let elsewhere: Awaited<ReturnType<typeof startCountingServer>>;
  before(async () => {
    elsewhere = await startCountingServer();
  });
  after(() => elsewhere?.close());

  const cases: { mode: EmbedServer['mode']; log: RegExp }[] = [
    { mode: 'slow', log: new RegExp(`failed: no answer within ${TIMEOUT_MS} ms`) },
    { mode: 'unstable-dimension', log: /failed: the model answers vectors of dimension \d+, then \d+ \(the index holds 64\)/ },
    { mode: 'nan', log: /failed: vector holds a value that is not a finite float32 number/ },
    { mode: 'redirect', log: /failed: request failed/ },
    { mode: 'model-not-found', log: /failed: HTTP 404: .*not found, try pulling it first/ },
  ];
  test('each failure, then recovery', async () => {
    await searchSettled(s.conn, { query: 'lifetime' });
    s.provider.redirectTo = `${elsewhere.origin}/api/embed`;
    const count = (re: RegExp) => s.conn.stderr().split('\n').filter((l) => re.test(l)).length;
    for (const [i, c] of cases.entries()) {
      const word = `quokka${i}`;
      const failures = count(/embeddings: .* failed: /);
      const recoveries = count(/answers again/);
      s.provider.mode = c.mode;
      // The word alone: its vector is the query's (another word may share its hashed dimension, so the file is among the first, at cosine 1).
      writeFileSync(join(s.tree.root, `new-${i}.txt`), `${word}\n`);
      await waitFor(() => count(c.log) === 1, 60_000, `${c.mode}: its log line`);
      // Retried with back-off (0.5 s, then 1 s, ...), still one line for the streak.
      await waitFor(() => s.provider.texts.filter((t) => t.includes(word)).length >= 2, 60_000, `${c.mode}: a retry`);
      assert.equal(count(/embeddings: .* failed: /), failures + 1, `${c.mode}: one log line for the streak`);
      // The provider is known to fail: a search (hybrid, the default) does not ask it again and wait up to its
      // timeout (a red-team finding: 30 s a search with the default timeout), it answers from text at once.
      const query = `${word} ${word}`;
      const during = await callTool(s.conn, { query });
      assert.equal(during.structuredContent?.mode, 'text', c.mode);
      assert.match(String(during.structuredContent?.note), /search by meaning is unavailable/, c.mode);
      assert.deepEqual(paths(during), [`new-${i}.txt`], `${c.mode}: answered from text`);
      assert.equal(s.provider.texts.filter((t) => t.includes(query)).length, 0, `${c.mode}: the failing provider was asked for the query`);
      s.provider.mode = 'ok';
      const found = await searchSettled(s.conn, { query: word, mode: 'meaning' });
      const hit = hitsOf(found).find((h) => h.path === `new-${i}.txt`);
      assert.ok(hit && hit.score > 0.99, `${c.mode}: embedded once the provider answers: ${textOf(found)}`);
      await waitFor(() => count(/answers again/) === recoveries + 1, 30_000, `${c.mode}: the recovery line`);
    }
    assert.equal(elsewhere.hits(), 0, 'a redirect is never followed to another origin');
  });
});

describe('another dimension under the same model name: everything is embedded again', () => {
  const s = servedWithProvider('ollama', 'legacy');

  test('seen by a search, then by the background embedding', async () => {
    await searchSettled(s.conn, { query: 'car', mode: 'meaning' });
    // The model behind the name now answers 32 dimensions: a search notices first (nothing is being embedded).
    const sent = s.provider.texts.length;
    s.provider.mode = 'wrong-dimension';
    const during = await callTool(s.conn, { query: 'lifetime' });
    assert.equal(during.structuredContent?.mode, 'text');
    assert.match(String(during.structuredContent?.note), /vectors of dimension 32, not 64/);
    await waitFor(() => /now answers vectors of dimension 32, the index holds 64: .*every document is embedded again/.test(s.conn.stderr()), 30_000, 'the change to be seen');
    const car = await searchSettled(s.conn, { query: 'car', mode: 'meaning' });
    assert.equal(paths(car)[0], 'garage/notes.txt', textOf(car));
    assert.ok(s.provider.texts.slice(sent).some((t) => t.includes('token lifetime')), 'every file embedded again');
    // Back to 64, noticed by the background embedding of a new file this time.
    const sentAgain = s.provider.texts.length;
    s.provider.mode = 'ok';
    writeFileSync(join(s.tree.root, 'fleet.txt'), 'The company vehicle list.\n');
    await waitFor(() => /now answers vectors of dimension 64, the index holds 32/.test(s.conn.stderr()), 30_000, 'the change back to be seen');
    const vehicle = await searchSettled(s.conn, { query: 'automobile', mode: 'meaning' });
    assert.deepEqual(paths(vehicle).slice(0, 2).sort(), ['fleet.txt', 'garage/notes.txt'], textOf(vehicle));
    assert.ok(s.provider.texts.slice(sentAgain).some((t) => t.includes('token lifetime')), 'every file embedded again');
    assert.doesNotMatch(s.conn.stderr(), /embeddings: .* failed/, 'a change of dimension is not a failure');
  });
});

describe('a search by meaning while the embeddings catch up on a small folder', () => {
  const tree = tempTree(TREE);
  let provider: EmbedServer;
  let conn: Connected;
  before(async () => {
    provider = await startEmbedServer();
    provider.mode = 'delayed';
    // Long enough that five documents take seconds: the search arrives while they are embedded.
    provider.delayMs = 1500;
    conn = await connect([tree.root, '--db', join(tree.state, 'index.db'), '--embed-url', provider.origin, '--embed-model', 'test-embedder', '--search-wait-ms', '60000']);
  });
  after(async () => {
    await conn?.close();
    await provider?.close();
  });

  test('waits for them, with MCP progress to a call that sent a progress token', async () => {
    // The content index first (a search waits for it on its own): then the embeddings are what is left.
    await waitFor(async () => !(await callTool(conn, { query: 'lifetime', mode: 'text' })).structuredContent?.indexing, 60_000, 'the content index');
    const progress: { progress: number; total?: number; message?: string }[] = [];
    const result = (await conn.request('tools/call', { name: 'search', arguments: { query: 'car', mode: 'meaning' } }, { onprogress: (p) => progress.push(p), timeout: 120_000 })) as ToolCall;
    assert.equal(result.structuredContent?.note, undefined, textOf(result));
    assert.equal(paths(result)[0], 'garage/notes.txt');
    assert.ok(progress.length >= 1, 'progress was sent');
    for (const p of progress) {
      assert.match(String(p.message), /^embeddings: \d+ of \d+ documents embedded$/);
      assert.equal(p.total, 6, 'the documents with text: five files (.gitignore one of them) and the notebook');
    }
    const values = progress.map((p) => p.progress);
    assert.deepEqual(values, [...values].sort((a, b) => a - b), 'progress only grows');
  });
});

describe('a provider that is down', () => {
  const tree = tempTree({ 'auth/session.md': 'A token lifetime of one hour.\n' });
  let conn: Connected;
  before(async () => {
    const port = await closedPort();
    conn = await connect([tree.root, '--db', join(tree.state, 'index.db'), '--embed-url', `http://127.0.0.1:${port}`, '--embed-model', 'm']);
  });
  after(() => conn?.close());

  test('search answers from text with a note', async () => {
    const result = (await waitFor(async () => {
      const r = await callTool(conn, { query: 'lifetime' });
      return r.structuredContent?.indexing ? null : r;
    }, 30_000, 'the content index'))!;
    assert.equal(result.structuredContent?.mode, 'text');
    assert.match(String(result.structuredContent?.note), /unavailable \(the embedding model fails: request failed \(unreachable, refused or redirected\)\)/);
    assert.deepEqual(paths(result), ['auth/session.md']);
  });
});

describe('without an embedding model', () => {
  const tree = tempTree({ 'a.txt': 'hello world\n' });
  let conn: Connected;
  before(async () => {
    conn = await connect([tree.root, '--db', join(tree.state, 'index.db')]);
  });
  after(() => conn?.close());

  test('text is the default; meaning or hybrid is a clear tool error', async () => {
    const result = (await waitFor(async () => {
      const r = await callTool(conn, { query: 'hello' });
      return r.structuredContent?.indexing ? null : r;
    }, 30_000, 'the content index'))!;
    assert.equal(result.structuredContent?.mode, 'text');
    assert.deepEqual(paths(result), ['a.txt']);
    for (const mode of ['meaning', 'hybrid']) {
      const refused = await callTool(conn, { query: 'hello', mode });
      assert.equal(refused.isError, true);
      assert.match(textOf(refused), /Search by meaning is not configured on this server: start it with --embed-url and --embed-model/);
    }
  });
});

describe('vectors are kept: a chunk is embedded again only when its text changes, and all of them for another model', () => {
  const line = (i: number) => `line ${i} of the long file, ${'padding words '.repeat(6)}\n`;
  const long = Array.from({ length: 60 }, (_, i) => line(i)).join('');
  const tree = tempTree({ 'long.txt': long, 'auth/session.md': 'A token lifetime of one hour.\n' });
  let provider: EmbedServer;
  before(async () => {
    provider = await startEmbedServer();
  });
  after(() => provider?.close());
  const start = (model: string) =>
    connect([tree.root, '--db', join(tree.state, 'index.db'), '--embed-url', provider.origin, '--embed-model', model, '--embed-timeout-ms', String(TIMEOUT_MS)]);

  test('edit, restart, another model', async () => {
    let conn = await start('model-a');
    try {
      await searchSettled(conn, { query: 'lifetime', mode: 'meaning' });
      const first = provider.texts.filter((t) => t.includes('long file')).length;
      assert.ok(first >= 3, `the long file is several chunks (${first})`);
      // Edit the last line only: the chunks before it keep their vectors.
      const sent = provider.texts.length;
      writeFileSync(join(tree.root, 'long.txt'), long.replace(line(59), 'the very last line is new\n'));
      await waitFor(() => provider.texts.slice(sent).some((t) => t.includes('very last line is new')), 30_000, 'the edited chunk to be embedded');
      await searchSettled(conn, { query: 'lifetime', mode: 'meaning' });
      const again = provider.texts.slice(sent).filter((t) => t.includes('long file') || t.includes('very last line'));
      assert.ok(again.length < first, `only the changed chunks are embedded again (${again.length} of ${first})`);
      assert.ok(!again.some((t) => t.includes('line 0 of the long file')), 'the first chunk kept its vector');
    } finally {
      await conn.close();
    }
    // The same model after a restart: nothing to embed.
    const beforeRestart = provider.texts.length;
    conn = await start('model-a');
    try {
      await searchSettled(conn, { query: 'lifetime', mode: 'meaning' });
      const sentAfterRestart = provider.texts.slice(beforeRestart);
      assert.ok(sentAfterRestart.length > 0 && sentAfterRestart.every((t) => t === 'lifetime'), `only queries are embedded: ${JSON.stringify(sentAfterRestart)}`);
    } finally {
      await conn.close();
    }
    // Another model: every chunk again.
    const beforeSwitch = provider.texts.length;
    conn = await start('model-b');
    try {
      await searchSettled(conn, { query: 'lifetime', mode: 'meaning' });
      const switched = provider.texts.slice(beforeSwitch);
      assert.ok(switched.some((t) => t.includes('line 0 of the long file')) && switched.some((t) => t.includes('token lifetime')), 'everything embedded again');
      assert.match(conn.stderr(), /search by meaning: indexed text is sent to http:\/\/127\.0\.0\.1:\d+ to be embedded with model-b/);
    } finally {
      await conn.close();
    }
  });
});

for (const era of ['modern', 'legacy'] as const) {
  describe(`search by meaning over Streamable HTTP (${era === 'modern' ? '2026-07-28' : '2025-11-25'})`, () => {
    const tree = tempTree(TREE);
    let provider: EmbedServer;
    let server: HttpProcess;
    let client: HttpClient;
    before(async () => {
      provider = await startEmbedServer();
      const url = era === 'modern' ? `${provider.origin}/v1` : provider.origin;
      server = await startHttp([tree.root, '--db', join(tree.state, 'index.db'), '--embed-url', url, '--embed-model', 'test-embedder']);
      client = await connectHttp(server.url, era);
    });
    after(async () => {
      await client?.close();
      await server?.stop();
      await provider?.close();
    });

    test('a word in no file finds its synonym', async () => {
      const result = await searchSettled(client, { query: 'vehicle', mode: 'meaning' });
      assert.equal(paths(result)[0], 'garage/notes.txt', textOf(result));
      assert.ok(provider.requests.every((r) => r.api === (era === 'modern' ? 'openai' : 'ollama')));
      const hybrid = await searchSettled(client, { query: 'expired' });
      assert.equal(hybrid.structuredContent?.mode, 'hybrid');
      assert.ok(paths(hybrid).includes('auth/session.md') && paths(hybrid).includes('readme.txt'), textOf(hybrid));
    });
  });
}
