// Tools, prompts, completions and mcp://groups over the stdio wire (in process) with the SDK
// Client. The disk is the oracle: find and tree are checked against a walk of
// the test folder, read against the file bytes, search against edits made on disk.
import assert from 'node:assert/strict';
import { readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { CallToolResultSchema, GetPromptResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { connect, ERAS, notFoundCode, rejectsWith, serveTree, tempDir, waitFor, writeTree, type LooseResult } from '../helpers.ts';

const BINARY = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff, 0xfe, 0x00, 0x10]);
const BIG_BINARY = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7919) % 256));
const BIG = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}: ünïcödé ✓ text\n`).join('');

const TREE: Record<string, string | Uint8Array> = {
  '.gitignore': 'ignored/\n',
  'README.md': '# Demo\nHello world.\n',
  'src/main.ts': 'export const main = () => 42;\n// the quick brown fox jumps\n',
  'src/util/strings.ts': 'export const up = (s: string) => s.toUpperCase();\n',
  'src/util/math.ts': 'export function add(a: number, b: number) {\n  return a + b;\n}\n// NEAR the OR operator: a-b "quoted" x:y\n',
  'docs/guide.md': '# Guide\n\nParsing configuration files\nis explained here.\n',
  'docs/café.md': 'crème brûlée\n',
  'docs/with space.md': 'spaced out\n',
  'assets/logo.png': BINARY,
  'big.txt': BIG,
  'assets/big.bin': BIG_BINARY,
  'ignored/secret.txt': 'quick brown secret\n',
  ...Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`many/f${String(i).padStart(2, '0')}.txt`, `file number ${i}\n`])),
};

/** Paths relative to root (directories with '/'), in URI order, without ignored ones. */
function diskPaths(root: string): { path: string; uri: string; dir: boolean }[] {
  const out: { path: string; uri: string; dir: boolean }[] = [];
  const walk = (dir: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      if (d.name === 'ignored' || d.name === '.git') continue;
      const abs = join(dir, d.name);
      const rel = relative(root, abs);
      if (d.isDirectory()) {
        out.push({ path: rel, uri: pathToFileURL(abs).href + '/', dir: true });
        walk(abs);
      } else out.push({ path: rel, uri: pathToFileURL(abs).href, dir: false });
    }
  };
  walk(root);
  return out.sort((a, b) => (a.uri < b.uri ? -1 : 1));
}

type ToolCall = LooseResult & { content: LooseResult[]; structuredContent?: LooseResult; isError?: boolean };

for (const era of ERAS) describe(`tools, prompts, completions and groups over stdio (${era})`, () => {
  // --max-read-bytes below big.txt and big.bin: windows read them anyway.
  const tree = serveTree(TREE, ({ root, state }) => [root, '--db', join(state, 'index.db'), '--page-size', '2', '--max-read-bytes', '65536'], { era });
  const { uriOf } = tree;
  const call = async (name: string, args: Record<string, unknown>) =>
    (await tree.conn.request('tools/call', { name, arguments: args })) as ToolCall;
  const text = (result: ToolCall) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  /** Search once the content index is complete (the result says `indexing` until then). */
  const search = async (args: Record<string, unknown>) => {
    const result = await call('search', args);
    const ready = await waitFor(async () => {
      const r = result.structuredContent?.indexing ? await call('search', args) : result;
      return r.structuredContent?.indexing ? null : r;
    }, 20_000, 'the content index');
    return ready as ToolCall;
  };


  describe('tools/list', () => {
    test('four tools, each with a SEP-1292 uri and input and output schemas', async () => {
      const { tools } = await tree.conn.request('tools/list', { filters: { uri_paths: ['mcp://tools/files/'] } });
      const all = [...(tools as LooseResult[])];
      // page size 2: page on
      let result = await tree.conn.request('tools/list', {});
      const paged: LooseResult[] = [...(result.tools as LooseResult[])];
      while (result.nextCursor) {
        result = await tree.conn.request('tools/list', { cursor: result.nextCursor });
        paged.push(...(result.tools as LooseResult[]));
      }
      assert.deepEqual(paged.map((t) => t.name).sort(), ['find', 'read', 'search', 'tree']);
      for (const tool of paged) {
        assert.equal(tool.uri, `mcp://tools/files/${tool.name}`);
        assert.equal((tool.inputSchema as LooseResult).type, 'object');
        assert.equal((tool.outputSchema as LooseResult).type, 'object');
      }
      assert.deepEqual(paged.map((t) => t.uri), [...paged.map((t) => t.uri as string)].sort(), 'URI order');
      assert.ok(all.length >= 1);
    });

    test('filters like resources/list: prefix, namePatterns, uri_paths; bad patterns are -32602', async () => {
      const names = async (params: Record<string, unknown>) => {
        const out: string[] = [];
        let cursor: unknown;
        do {
          const r = await tree.conn.request('tools/list', cursor ? { ...params, cursor } : params);
          out.push(...(r.tools as LooseResult[]).map((t) => t.name as string));
          cursor = r.nextCursor;
        } while (cursor);
        return out;
      };
      assert.deepEqual(await names({ filter: { namePatterns: ['s*', 't*'] } }), ['search', 'tree']);
      assert.deepEqual(await names({ prefix: 'mcp://tools/files/r' }), ['read']);
      assert.deepEqual(await names({ filters: { uri_paths: ['mcp://tools/files/find'] } }), ['find']);
      assert.deepEqual(await names({ filters: { uri_paths: ['mcp://tools/files/fin'] } }), []);
      assert.deepEqual(await names({ filters: { uri_paths: ['mcp://tools/other/'] } }), []);
      await rejectsWith(tree.conn.request('tools/list', { filter: { namePatterns: ['[abc'] } }), -32602, "Invalid pattern in namePatterns: '[abc'");
      const first = await tree.conn.request('tools/list', {});
      await rejectsWith(
        tree.conn.request('tools/list', { cursor: first.nextCursor, filter: { namePatterns: ['*'] } }),
        -32602,
        'Filter parameters must not change between paginated requests',
      );
    });
  });

  describe('find', () => {
    test('a glob over the index equals the same glob over the disk, in URI order', async () => {
      const result = await call('find', { glob: '**/*.md' });
      const expected = diskPaths(tree.root).filter((p) => !p.dir && p.path.endsWith('.md'));
      const matches = result.structuredContent!.matches as LooseResult[];
      assert.deepEqual(matches.map((m) => m.uri), expected.map((p) => p.uri));
      assert.deepEqual(matches.map((m) => m.path), expected.map((p) => p.path));
      const links = result.content.filter((c) => c.type === 'resource_link');
      assert.deepEqual(links.map((l) => l.uri), expected.map((p) => p.uri));
      assert.equal(links[0]!.resourceType, 'document', 'resource_link carries the full resource object');
      assert.equal(result.nextCursor, undefined);
    });

    test('more than 100 globs: the error says so (the schema failed first, with "Invalid input → at glob")', async () => {
      const result = await call('find', { glob: Array.from({ length: 101 }, (_, i) => `g${i}/**`) });
      assert.equal(result.isError, true);
      assert.match(String(result.content[0]?.text), /Too many patterns: at most 100 globs and 100 names/);
    });

    test('name globs, prefixes and type', async () => {
      const uris = async (args: Record<string, unknown>) =>
        ((await call('find', args)).structuredContent!.matches as LooseResult[]).map((m) => m.path);
      assert.deepEqual(await uris({ name: '*.ts' }), ['src/main.ts', 'src/util/math.ts', 'src/util/strings.ts']);
      assert.deepEqual(await uris({ prefix: 'src/u' }), ['src/util', 'src/util/math.ts', 'src/util/strings.ts']);
      assert.deepEqual(await uris({ prefix: uriOf('docs/') }), ['docs', 'docs/caf\u00e9.md', 'docs/guide.md', 'docs/with space.md']);
      assert.deepEqual(await uris({ glob: 'docs/caf\u00e9.md' }), ['docs/caf\u00e9.md'], 'non-ASCII literal in a relative glob');
      assert.deepEqual(await uris({ glob: 'docs/with space.md' }), ['docs/with space.md']);
      assert.deepEqual(await uris({ glob: 'ignored/**' }), [], 'ignored files are not in the index');
    });

    test('type collection lists exactly the folders', async () => {
      const result = await call('find', { type: 'collection', limit: 1000 });
      const paths = (result.structuredContent!.matches as LooseResult[]).map((m) => m.uri);
      assert.deepEqual(paths, [tree.rootUri, ...diskPaths(tree.root).filter((p) => p.dir).map((p) => p.uri)]);
    });

    test('limit and continuation walk every match exactly once', async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let calls = 0;
      do {
        const result = await call('find', { glob: 'many/*.txt', limit: 7, ...(cursor ? { cursor } : {}) });
        assert.ok(!result.isError, text(result));
        const matches = result.structuredContent!.matches as LooseResult[];
        assert.ok(matches.length <= 7);
        seen.push(...matches.map((m) => m.path as string));
        cursor = result.structuredContent!.nextCursor as string | undefined;
        calls++;
      } while (cursor);
      assert.equal(calls, 5);
      assert.deepEqual(seen, Array.from({ length: 30 }, (_, i) => `many/f${String(i).padStart(2, '0')}.txt`));
    });

    test('a cursor from other arguments, a tampered cursor and bad globs are tool errors', async () => {
      const first = await call('find', { glob: 'many/*.txt', limit: 3 });
      const cursor = first.structuredContent!.nextCursor as string;
      const other = await call('find', { glob: 'many/*', limit: 3, cursor });
      assert.equal(other.isError, true);
      assert.match(text(other), /Filter parameters must not change/);
      const tampered = await call('find', { glob: 'many/*.txt', limit: 3, cursor: cursor.slice(0, -2) + 'AA' });
      assert.equal(tampered.isError, true);
      assert.match(text(tampered), /Invalid cursor/);
      const bad = await call('find', { glob: 'src/[abc' });
      assert.equal(bad.isError, true);
      assert.match(text(bad), /Invalid pattern in glob: 'src\/\[abc'/);
      // Hostile pattern (picomatch 4.0.7 hangs on it): an answer, not a hang.
      const hostile = await call('find', { glob: 'a/\\\\\\\\\\\\' });
      assert.ok(hostile.isError || Array.isArray(hostile.structuredContent?.matches));
      const tooBig = await call('find', { limit: 5000 });
      assert.equal(tooBig.isError, true);
      assert.match(text(tooBig), /limit/);
      const unknown = await call('find', { globs: '*.ts' });
      assert.equal(unknown.isError, true);
      assert.match(text(unknown), /Unrecognized key.*globs/);
    });
  });

  describe('search', () => {
    test('finds words with bm25 ranking, a line number and a snippet', async () => {
      const result = await search({ query: 'quick fox' });
      const results = result.structuredContent!.results as LooseResult[];
      assert.deepEqual(results.map((r) => r.path), ['src/main.ts'], 'ignored files are not searched');
      assert.equal(results[0]!.line, 2);
      assert.equal(results[0]!.text, '// the quick brown fox jumps');
      assert.match(results[0]!.snippet as string, /«quick» brown «fox»/);
      assert.equal(result.content.filter((c) => c.type === 'resource_link')[0]!.uri, uriOf('src/main.ts'));
    });

    test('phrases, prefixes, accents, scopes', async () => {
      const paths = async (args: Record<string, unknown>) =>
        ((await search(args)).structuredContent!.results as LooseResult[]).map((r) => r.path);
      assert.deepEqual(await paths({ query: '"brown fox"' }), ['src/main.ts']);
      assert.deepEqual(await paths({ query: '"fox brown"' }), []);
      assert.deepEqual(await paths({ query: 'pars*' }), ['docs/guide.md']);
      const guide = (await search({ query: 'configuration' })).structuredContent!.results as LooseResult[];
      assert.equal(guide[0]!.line, 3);
      assert.deepEqual(await paths({ query: 'creme brulee' }), ['docs/caf\u00e9.md']);
      assert.deepEqual(await paths({ query: 'file number', prefix: 'many/', limit: 5 }).then((p) => p.length), 5);
      assert.deepEqual(await paths({ query: 'number 7', glob: 'many/f0*.txt' }), ['many/f07.txt']);
      assert.deepEqual(await paths({ query: 'export', name: 'strings.ts' }), ['src/util/strings.ts']);
    });

    test('a costly query is refused with what to do instead, and the server keeps answering', async () => {
      const hostile = await call('search', { query: 'w* f* a* b* c* d* e* g* h* i* j* k* l* m* n* o*' });
      assert.equal(hostile.isError, true);
      assert.match(text(hostile), /too short: a prefix needs at least 3 letters/);
      const many = await call('search', { query: 'brow* quic* foxe* jump* laz*' });
      assert.equal(many.isError, true);
      assert.match(text(many), /more than 4 prefix/);
      assert.ok(Array.isArray((await tree.conn.request('resources/list', {})).resources));
      const bro = (await search({ query: 'bro* fox' })).structuredContent!.results as LooseResult[];
      assert.deepEqual(bro.map((r) => r.path), ['src/main.ts'], 'a three-letter prefix works (from the prefix index)');
    });

    test('FTS5 operators and quotes are searched as text, never a syntax error', async () => {
      for (const query of ['NEAR OR "quoted" x:y a-b *', 'NEAR(a b)', 'a OR', '-add', 'operator:', '"OR"', 'x:y', 'add*', '^add', 'a AND NOT b']) {
        const result = await search({ query });
        assert.ok(!result.isError, `${query}: ${text(result)}`);
      }
      const ops = (await search({ query: 'NEAR OR "quoted" x:y *' })).structuredContent!.results as LooseResult[];
      assert.deepEqual(ops.map((r) => r.path), ['src/util/math.ts']);
      assert.equal(ops[0]!.line, 4);
      const unbalanced = await call('search', { query: 'say "hello' });
      assert.equal(unbalanced.isError, true);
      assert.match(text(unbalanced), /Unbalanced quote/);
      const punctuation = await call('search', { query: '* - :' });
      assert.equal(punctuation.isError, true);
      assert.match(text(punctuation), /no words/);
      const empty = await call('search', { query: '' });
      assert.equal(empty.isError, true);
    });

    test('follows edits on disk: added, changed and deleted files (needs the watcher)', async () => {
      const paths = async (query: string) => ((await search({ query })).structuredContent!.results as LooseResult[]).map((r) => r.path);
      writeFileSync(join(tree.root, 'src/added.ts'), 'export const zebracorn = 1;\n');
      await waitFor(async () => (await paths('zebracorn')).includes('src/added.ts'), 30_000, 'the added file in search');
      writeFileSync(join(tree.root, 'src/added.ts'), 'export const unicornzebra = 2;\n');
      await waitFor(async () => (await paths('unicornzebra')).includes('src/added.ts'), 30_000, 'the changed file in search');
      assert.deepEqual(await paths('zebracorn'), [], 'the old text is gone');
      rmSync(join(tree.root, 'src/added.ts'));
      await waitFor(async () => (await paths('unicornzebra')).length === 0, 30_000, 'the deleted file out of search');
    });
  });

  describe('read', () => {
    test('a text file by URI and by relative path, as an embedded resource with its metadata', async () => {
      const byUri = await call('read', { uri: uriOf('src/main.ts') });
      const byPath = await call('read', { uri: 'src/main.ts' });
      assert.deepEqual(byPath, byUri);
      const block = byUri.content[0]!;
      assert.equal(block.type, 'resource');
      const resource = block.resource as LooseResult;
      assert.equal(resource.uri, uriOf('src/main.ts'));
      assert.equal(resource.text, TREE['src/main.ts']);
      assert.equal(resource.mimeType, 'text/typescript');
      // SEP-2093 on the wire: the annotations ride on resource.annotations (the SDK's re-parse would drop them).
      assert.ok((resource.annotations as LooseResult).lastModified);
      assert.equal(resource.resourceType, 'document');
      assert.equal(byUri.structuredContent!.nextOffset, undefined);
      // Still a valid CallToolResult for clients that validate with the SDK's schema.
      assert.ok(CallToolResultSchema.safeParse(byUri).success);
    });

    test('windows of a large UTF-8 file reassemble to the file, never splitting a character', async () => {
      let offset: number | undefined = 0;
      const parts: string[] = [];
      while (offset !== undefined) {
        const result = await call('read', { uri: 'big.txt', offset, length: 9999 });
        assert.ok(!result.isError, text(result));
        parts.push((result.content[0]!.resource as LooseResult).text as string);
        const s = result.structuredContent!;
        assert.equal(s.offset, offset);
        assert.ok((s.length as number) <= 9999);
        offset = s.nextOffset as number | undefined;
      }
      assert.equal(parts.join(''), BIG);
      // An offset inside a character moves forward to the next whole one.
      const mid = await call('read', { uri: 'big.txt', offset: Buffer.byteLength('line 1: ü') - 1, length: 3 });
      assert.equal((mid.content[0]!.resource as LooseResult).text, 'nï');
    });

    test('a binary file over --max-read-bytes reads in base64 windows', async () => {
      const parts: Buffer[] = [];
      let offset: number | undefined = 0;
      while (offset !== undefined) {
        const result = await call('read', { uri: 'assets/big.bin', offset, length: 30_000 });
        assert.ok(!result.isError, text(result));
        assert.equal(result.structuredContent!.encoding, 'base64');
        parts.push(Buffer.from((result.content[0]!.resource as LooseResult).blob as string, 'base64'));
        offset = result.structuredContent!.nextOffset as number | undefined;
      }
      assert.ok(Buffer.concat(parts).equals(BIG_BINARY));
      assert.equal(parts.length, 4);
    });

    test('binary files as base64, folders as their listing', async () => {
      const png = await call('read', { uri: 'assets/logo.png' });
      assert.equal((png.content[0]!.resource as LooseResult).blob, BINARY.toString('base64'));
      assert.equal(png.structuredContent!.encoding, 'base64');
      const docs = await call('read', { uri: 'docs' });
      const listing = (docs.content[0]!.resource as LooseResult).text as string;
      assert.equal(listing.split('\n').filter(Boolean).length, 3);
      assert.match(listing, /guide\.md\tdocument\t/);
      assert.equal(docs.structuredContent!.type, 'collection');
    });

    test('missing, outside and ignored paths are tool errors that reveal nothing', async () => {
      for (const uri of ['nope.txt', 'ignored/secret.txt', '../outside.txt', '/etc/passwd', 'file:///etc/passwd', uriOf('nope')]) {
        const result = await call('read', { uri });
        assert.equal(result.isError, true, uri);
        assert.match(text(result), /^Not found: /);
      }
      const bad = await call('read', { uri: 'README.md', length: 0 });
      assert.equal(bad.isError, true);
      assert.match(text(bad), /length/);
    });
  });

  describe('tree', () => {
    test('a bounded outline whose counts match the disk', async () => {
      const result = await call('tree', { depth: 1 });
      const entries = result.structuredContent!.entries as LooseResult[];
      const top = diskPaths(tree.root).filter((p) => !p.path.includes('/'));
      assert.deepEqual(entries.slice(1).map((e) => e.uri), top.map((p) => p.uri));
      for (const e of entries.filter((x) => x.type === 'collection' && x.depth === 1)) {
        const onDisk = readdirSync(join(tree.root, e.path as string)).length;
        assert.equal(e.children, onDisk, `${e.path as string} children`);
        assert.equal(e.hidden, onDisk, 'depth 1: their children are not shown, and counted');
      }
      assert.equal(result.structuredContent!.truncated, false);
    });

    test('the entry cap cuts and says how much', async () => {
      const result = await call('tree', { uri: 'many', maxEntries: 10, depth: 3 });
      const entries = result.structuredContent!.entries as LooseResult[];
      assert.equal(entries.length, 10);
      assert.equal(result.structuredContent!.truncated, true);
      assert.equal(entries[0]!.children, 30);
      assert.equal(entries[0]!.hidden, 21);
      assert.match(text(result), /21 of 30 entries not shown/);
      const file = await call('tree', { uri: 'README.md' });
      assert.equal(file.isError, true);
    });
  });

  describe('tools/call', () => {
    test('by name or by URI, the same result; unknown tools are protocol errors', async () => {
      const byName = await call('find', { name: 'README.md' });
      const byUri = await call('mcp://tools/files/find', { name: 'README.md' });
      assert.deepEqual(byUri, byName);
      await rejectsWith(call('nope', {}), -32602, 'Unknown tool: nope');
      await rejectsWith(call('mcp://tools/files/nope', {}), -32602, 'Unknown tool');
      await rejectsWith(call('mcp://tools/other/find', {}), -32602, 'Unknown tool');
    });

    test('the SDK Client validates structuredContent against each outputSchema', async () => {
      await tree.conn.client.listTools();
      for (const [name, args] of [
        ['find', { glob: '**/*.md' }],
        ['search', { query: 'fox' }],
        ['read', { uri: 'README.md' }],
        ['tree', {}],
      ] as const) {
        const result = await tree.conn.client.callTool({ name, arguments: args });
        assert.ok(!result.isError, `${name}: ${JSON.stringify(result.content)}`);
        assert.ok(result.structuredContent);
      }
    });
  });

  describe('prompts', () => {
    test('listed with uris, filterable; explain embeds a document or a listing', async () => {
      const { prompts } = await tree.conn.request('prompts/list', { filter: { namePatterns: ['*'] } });
      const all = [...(prompts as LooseResult[])];
      assert.equal((await tree.conn.request('prompts/list', {})).nextCursor, undefined, 'two prompts fit a page of two');
      assert.deepEqual(all.map((p) => p.uri), ['mcp://prompts/files/explain', 'mcp://prompts/files/recent-changes']);
      const doc = await tree.conn.request('prompts/get', { name: 'explain', arguments: { uri: uriOf('src/main.ts') } });
      assert.ok(GetPromptResultSchema.safeParse(doc).success);
      const messages = doc.messages as LooseResult[];
      const embedded = (messages[0]!.content as LooseResult).resource as LooseResult;
      assert.equal(embedded.text, TREE['src/main.ts']);
      assert.match((messages[1]!.content as LooseResult).text as string, /src\/main\.ts/);
      const dir = await tree.conn.request('prompts/get', { name: 'mcp://prompts/files/explain', arguments: { uri: 'docs/' } });
      const listing = (((dir.messages as LooseResult[])[0]!.content as LooseResult).resource as LooseResult).text as string;
      assert.match(listing, /caf\u00e9\.md\tdocument/);
      await rejectsWith(tree.conn.request('prompts/get', { name: 'explain', arguments: {} }), -32602, 'Missing required argument: uri');
      await rejectsWith(tree.conn.request('prompts/get', { name: 'explain', arguments: { uri: '/etc/passwd' } }), notFoundCode(era));
      await rejectsWith(tree.conn.request('prompts/get', { name: 'nope' }), -32602, 'Unknown prompt');
    });

    test('recent-changes lists files by lastModified within the window', async () => {
      // Whole seconds: a fractional mtime can come back a millisecond off through the float seconds of utimes.
      const old = new Date(Math.floor(Date.now() / 1000 - 3 * 86_400) * 1000);
      utimesSync(join(tree.root, 'README.md'), old, old);
      await waitFor(async () => {
        const m = await tree.conn.request('tools/call', { name: 'find', arguments: { name: 'README.md' } });
        const match = ((m.structuredContent as LooseResult).matches as LooseResult[])[0]!;
        return new Date(match.lastModified as string).getTime() === old.getTime();
      }, 20_000, 'the new mtime in the index');
      const day = await tree.conn.request('prompts/get', { name: 'recent-changes', arguments: { window: '24h' } });
      const dayText = ((day.messages as LooseResult[])[0]!.content as LooseResult).text as string;
      assert.match(dayText, /src\/main\.ts/);
      assert.doesNotMatch(dayText, /README\.md/);
      const week = await tree.conn.request('prompts/get', { name: 'recent-changes', arguments: { window: '7d', scope: 'README.md' } });
      assert.match(((week.messages as LooseResult[])[0]!.content as LooseResult).text as string, /README\.md/);
      const links = (week.messages as LooseResult[]).slice(1).map((m) => (m.content as LooseResult).uri);
      assert.deepEqual(links, [uriOf('README.md')]);
      await rejectsWith(tree.conn.request('prompts/get', { name: 'recent-changes', arguments: { window: 'soon' } }), -32602, "Invalid window 'soon'");
    });
  });

  describe('completion/complete', () => {
    const completeTemplate = async (value: string) =>
      ((await tree.conn.request('completion/complete', { ref: { type: 'ref/resource', uri: `${tree.rootUri}{+path}` }, argument: { name: 'path', value } }))
        .completion as { values: string[]; total: number; hasMore: boolean });

    test('the template path, one segment at a time, at several depths', async () => {
      assert.deepEqual((await completeTemplate('')).values, ['.gitignore', 'README.md', 'assets/', 'big.txt', 'docs/', 'many/', 'src/']);
      assert.deepEqual((await completeTemplate('s')).values, ['src/']);
      assert.deepEqual((await completeTemplate('src/')).values, ['src/main.ts', 'src/util/']);
      assert.deepEqual((await completeTemplate('src/util/m')).values, ['src/util/math.ts']);
      assert.deepEqual((await completeTemplate('docs/caf')).values, ['docs/caf\u00e9.md']);
      assert.deepEqual((await completeTemplate('docs/with ')).values, ['docs/with space.md']);
      const many = await completeTemplate('many/f1');
      assert.deepEqual(many.values, Array.from({ length: 10 }, (_, i) => `many/f1${i}.txt`));
      assert.equal(many.total, 10);
      assert.equal(many.hasMore, false);
      assert.deepEqual((await completeTemplate('nope/')).values, []);
      assert.deepEqual((await completeTemplate('ignored/')).values, []);
      await rejectsWith(
        tree.conn.request('completion/complete', { ref: { type: 'ref/resource', uri: 'file:///elsewhere/{+path}' }, argument: { name: 'path', value: '' } }),
        -32602,
      );
    });

    test('prompt arguments: URIs and relative paths, windows', async () => {
      const completePrompt = async (name: string, arg: string, value: string) =>
        ((await tree.conn.request('completion/complete', { ref: { type: 'ref/prompt', name }, argument: { name: arg, value } })).completion as {
          values: string[];
          total: number;
        });
      assert.deepEqual((await completePrompt('explain', 'uri', uriOf('src/u'))).values, [uriOf('src/util') + '/']);
      assert.deepEqual((await completePrompt('explain', 'uri', tree.rootUri.slice(0, -3))).values, [tree.rootUri]);
      assert.deepEqual((await completePrompt('explain', 'uri', 'docs/g')).values, ['docs/guide.md']);
      // An escape being typed is the start of one, whatever case its hex: every step still completes.
      for (const typed of ['docs/caf', 'docs/caf%', 'docs/caf%c', 'docs/caf%C3', 'docs/caf%C3%a']) {
        assert.deepEqual((await completePrompt('explain', 'uri', tree.rootUri + typed)).values, [uriOf('docs/caf\u00e9.md')], typed);
      }
      assert.deepEqual((await completePrompt('mcp://prompts/files/recent-changes', 'window', '')).values, ['1h', '24h', '7d', '30d']);
      assert.deepEqual((await completePrompt('recent-changes', 'scope', 'sr')).values, ['src/']);
    });
  });

  describe('groups (mcp://groups/*)', () => {
    const readGroups = async (uri: string) => {
      const { contents } = await tree.conn.request('resources/read', { uri });
      const item = (contents as LooseResult[])[0]!;
      assert.equal(item.uri, uri);
      assert.equal(item.mimeType, 'application/json');
      return JSON.parse(item.text as string) as { groups: { name: string; description: string; uri_paths: string[] }[] };
    };

    test('tool and prompt groups agree with tools/list and prompts/list filtered by their uri_paths', async () => {
      for (const [kind, method, key] of [
        ['tools', 'tools/list', 'tools'],
        ['prompts', 'prompts/list', 'prompts'],
      ] as const) {
        const { groups } = await readGroups(`mcp://groups/${kind}`);
        assert.ok(groups.length > 0);
        const inGroups = new Set<string>();
        for (const group of groups) {
          assert.ok(group.name && group.description);
          let cursor: unknown;
          do {
            const r = await tree.conn.request(method, { filters: { uri_paths: group.uri_paths }, ...(cursor ? { cursor } : {}) });
            for (const item of r[key] as LooseResult[]) inGroups.add(item.uri as string);
            cursor = r.nextCursor;
          } while (cursor);
        }
        const all = new Set<string>();
        let cursor: unknown;
        do {
          const r = await tree.conn.request(method, cursor ? { cursor } : {});
          for (const item of r[key] as LooseResult[]) all.add(item.uri as string);
          cursor = r.nextCursor;
        } while (cursor);
        assert.deepEqual([...inGroups].sort(), [...all].sort(), `${kind}: the groups cover the list`);
      }
    });

    test('resource groups: the root and its top-level folders, consistent with resources/list', async () => {
      const { groups } = await readGroups('mcp://groups/resources');
      const dirs = diskPaths(tree.root).filter((p) => p.dir && !p.path.includes('/'));
      assert.deepEqual(groups.map((g) => g.uri_paths[0]), [tree.rootUri, ...dirs.map((d) => d.uri)]);
      const docs = groups.find((g) => g.uri_paths[0] === uriOf('docs') + '/')!;
      const listed: string[] = [];
      let cursor: unknown;
      do {
        const r = await tree.conn.request('resources/list', { filters: { uri_paths: docs.uri_paths }, ...(cursor ? { cursor } : {}) });
        listed.push(...(r.resources as LooseResult[]).map((x) => x.uri as string));
        cursor = r.nextCursor;
      } while (cursor);
      assert.deepEqual(listed, diskPaths(tree.root).filter((p) => p.path === 'docs' || p.path.startsWith('docs/')).map((p) => p.uri));
    });

    test('readable and described, not listed; other mcp: URIs are not found', async () => {
      const meta = await tree.conn.request('resources/metadata', { uri: 'mcp://groups/tools' });
      assert.equal((meta.resource as LooseResult).uri, 'mcp://groups/tools');
      assert.equal((meta.resource as LooseResult).mimeType, 'application/json');
      const { resources } = await tree.conn.request('resources/list', { prefix: 'mcp:' });
      assert.deepEqual(resources, []);
      await rejectsWith(tree.conn.request('resources/read', { uri: 'mcp://groups/other' }), notFoundCode(era), 'Resource not found');
      await rejectsWith(tree.conn.request('resources/read', { uri: 'mcp://tools/files/find' }), notFoundCode(era), 'Resource not found');
      await rejectsWith(tree.conn.request('resources/metadata', { uri: 'MCP://groups/x' }), notFoundCode(era));
    });
  });
});

describe('--no-search', () => {
  test('no search tool, no content index', async () => {
    const root = tempDir();
    writeTree(root.path, { 'a.txt': 'hello\n' });
    const conn = await connect([root.path, '--db', ':memory:', '--no-search']);
    try {
      const { tools } = await conn.request('tools/list', {});
      assert.deepEqual((tools as LooseResult[]).map((t) => t.name).sort(), ['find', 'read', 'tree']);
      await rejectsWith(conn.request('tools/call', { name: 'search', arguments: { query: 'hello' } }), -32602, 'Unknown tool: search');
      const found = (await conn.request('tools/call', { name: 'find', arguments: {} })) as ToolCall;
      assert.equal((found.structuredContent!.matches as LooseResult[]).length, 2);
    } catch (error) {
      // A server that died says why on stderr.
      throw new Error(`${(error as Error).message}\nserver stderr:\n${conn.stderr()}`);
    } finally {
      await conn.close();
      root.cleanup();
    }
  });
});
