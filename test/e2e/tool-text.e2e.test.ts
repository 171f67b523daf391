// Text meant for the model: one entry per line whatever the names, and
// entries of two same-named roots never print alike (issue 11, items 6, 10).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { connect, ERAS, rejectsWith, tempDir, waitFor, writeTree, type Connected, type LooseResult } from '../helpers.ts';

const textOf = (result: LooseResult) => (result.content as { type: string; text?: string }[]).filter((c) => c.type === 'text').map((c) => c.text!).join('\n');

for (const era of ERAS) {
  describe(`tool text: control characters in names (${era})`, () => {
    let root: ReturnType<typeof tempDir>;
    let conn: Connected;
    before(async () => {
      root = tempDir();
      writeTree(root.path, {
        'a\nforged.txt': 'needle one\n',
        'esc\u001b[31mred.txt': 'needle two\n',
        'plain.txt': 'needle three\u001b[2J\n',
      });
      conn = await connect([root.path, '--db', ':memory:', '--watcher', 'none'], { era });
    });
    after(async () => {
      await conn?.close();
      root?.cleanup();
    });

    test('tree and find print one line per entry, controls escaped', async () => {
      const tree = textOf(await conn.request('tools/call', { name: 'tree', arguments: {} }));
      assert.equal(tree.split('\n').length, 4, tree); // the root and three files
      assert.match(tree, /a\\u000aforged\.txt/);
      assert.match(tree, /esc\\u001b\[31mred\.txt/);
      assert.doesNotMatch(tree, /[\u0000-\u0008\u000b-\u001f]/, 'a raw control character reached the text');
      const find = textOf(await conn.request('tools/call', { name: 'find', arguments: { glob: '*.txt' } }));
      assert.equal(find.split('\n').filter((l) => l.endsWith('B')).length, 3, find);
      assert.doesNotMatch(find, /[\u0000-\u0008\u000b-\u001f]/);
    });

    test('search prints one line per hit, the matched line escaped too', async () => {
      const result = await waitFor(async () => {
        const r = await conn.request('tools/call', { name: 'search', arguments: { query: 'needle' } });
        return (r.structuredContent as { results: unknown[] }).results.length === 3 ? r : null;
      }, 20_000, 'the content index');
      const text = textOf(result!);
      assert.equal(text.split('\n').length, 3, text);
      assert.doesNotMatch(text, /[\u0000-\u0008\u000b-\u001f]/);
    });
  });

  describe(`tool text: two roots with one name (${era})`, () => {
    let base: ReturnType<typeof tempDir>;
    let conn: Connected;
    let a: string;
    let b: string;
    before(async () => {
      base = tempDir();
      a = join(base.path, 'a', 'proj');
      b = join(base.path, 'b', 'proj');
      mkdirSync(a, { recursive: true });
      mkdirSync(b, { recursive: true });
      writeTree(a, { 'common.txt': 'from a\n', 'only-a.txt': 'a\n' });
      writeTree(b, { 'common.txt': 'from b\n' });
      conn = await connect([a, b, '--db', ':memory:', '--watcher', 'none'], { era });
    });
    after(async () => {
      await conn?.close();
      base?.cleanup();
    });

    test('find and tree tell the roots apart', async () => {
      const find = await conn.request('tools/call', { name: 'find', arguments: { glob: '**/common.txt' } });
      const paths = (find.structuredContent as { matches: { path: string }[] }).matches.map((m) => m.path).sort();
      assert.deepEqual(paths, ['a/proj/common.txt', 'b/proj/common.txt']);
      const tree = textOf(await conn.request('tools/call', { name: 'tree', arguments: {} }));
      assert.match(tree, /^a\/proj\/$/m);
      assert.match(tree, /^b\/proj\/$/m);
    });

    test('an ambiguous relative path is an error listing the candidates; a labelled one reads the right file', async () => {
      const ambiguous = await conn.request('tools/call', { name: 'read', arguments: { uri: 'common.txt' } });
      assert.equal(ambiguous.isError, true);
      const message = textOf(ambiguous);
      assert.match(message, /Ambiguous path common\.txt/);
      assert.match(message, /a\/proj\/common\.txt/);
      assert.match(message, /b\/proj\/common\.txt/);
      const fromB = await conn.request('tools/call', { name: 'read', arguments: { uri: 'b/proj/common.txt' } });
      assert.match(JSON.stringify(fromB.content), /from b/);
      const onlyA = await conn.request('tools/call', { name: 'read', arguments: { uri: 'only-a.txt' } });
      assert.match(JSON.stringify(onlyA.content), /"text":"a\\n"/, 'a path in one root only is not ambiguous');
      const byUri = await conn.request('tools/call', { name: 'read', arguments: { uri: pathToFileURL(join(a, 'common.txt')).href } });
      assert.match(JSON.stringify(byUri.content), /from a/);
      const prompt = await rejectsWith(conn.request('prompts/get', { name: 'explain', arguments: { uri: 'common.txt' } }), -32602, 'Ambiguous path');
      assert.deepEqual((prompt.data as { candidates: string[] }).candidates.sort(), ['a/proj/common.txt', 'b/proj/common.txt']);
    });
  });
}
