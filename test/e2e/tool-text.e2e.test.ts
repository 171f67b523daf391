// Text meant for the model: one entry per line whatever the names, and
// entries of two same-named roots never print alike (issue 11, items 6, 10).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ERAS, rejectsWith, serveTree, waitFor, type LooseResult } from '../helpers.ts';

const textOf = (result: LooseResult) => (result.content as { type: string; text?: string }[]).filter((c) => c.type === 'text').map((c) => c.text!).join('\n');

for (const era of ERAS) {
  describe(`tool text: control characters in names (${era})`, () => {
    const served = serveTree(
      {
        'a\nforged.txt': 'needle one\n',
        'esc\u001b[31mred.txt': 'needle two\n',
        'plain.txt': 'needle three\u001b[2J\n',
      },
      ({ root }) => [root, '--db', ':memory:', '--watcher', 'none'],
      { era },
    );

    test('tree and find print one line per entry, controls escaped', async () => {
      const tree = textOf(await served.conn.request('tools/call', { name: 'tree', arguments: {} }));
      assert.equal(tree.split('\n').length, 4, tree); // the root and three files
      assert.match(tree, /a\\u000aforged\.txt/);
      assert.match(tree, /esc\\u001b\[31mred\.txt/);
      assert.doesNotMatch(tree, /[\u0000-\u0008\u000b-\u001f]/, 'a raw control character reached the text');
      const find = textOf(await served.conn.request('tools/call', { name: 'find', arguments: { glob: '*.txt' } }));
      assert.equal(find.split('\n').filter((l) => l.endsWith('B')).length, 3, find);
      assert.doesNotMatch(find, /[\u0000-\u0008\u000b-\u001f]/);
    });

    test('search prints one line per hit, the matched line escaped too', async () => {
      const result = await waitFor(async () => {
        const r = await served.conn.request('tools/call', { name: 'search', arguments: { query: 'needle' } });
        // All three hits and the index complete: until then the text opens with a "results are partial" note.
        const { results, indexing } = r.structuredContent as { results: unknown[]; indexing?: unknown };
        return results.length === 3 && indexing === undefined ? r : null;
      }, 20_000, 'the content index');
      const text = textOf(result!);
      assert.equal(text.split('\n').length, 3, text);
      assert.doesNotMatch(text, /[\u0000-\u0008\u000b-\u001f]/);
    });
  });

  describe(`tool text: two roots with one name (${era})`, () => {
    // Two roots named proj, under a/ and b/ of the temp tree: proj and proj~2, in command-line order.
    const served = serveTree(
      { 'a/proj/common.txt': 'from a\n', 'a/proj/only-a.txt': 'a\n', 'b/proj/common.txt': 'from b\n' },
      ({ root }) => [join(root, 'a', 'proj'), join(root, 'b', 'proj'), '--db', ':memory:', '--watcher', 'none'],
      { era },
    );

    test('find and tree tell the roots apart', async () => {
      const find = await served.conn.request('tools/call', { name: 'find', arguments: { glob: '**/common.txt' } });
      const paths = (find.structuredContent as { matches: { path: string }[] }).matches.map((m) => m.path).sort();
      assert.deepEqual(paths, ['proj/common.txt', 'proj~2/common.txt']);
      const tree = textOf(await served.conn.request('tools/call', { name: 'tree', arguments: {} }));
      assert.match(tree, /^proj\/$/m);
      assert.match(tree, /^proj~2\/$/m);
    });

    test('an ambiguous relative path is an error listing the candidates; a labelled one reads the right file', async () => {
      const ambiguous = await served.conn.request('tools/call', { name: 'read', arguments: { uri: 'common.txt' } });
      assert.equal(ambiguous.isError, true);
      const message = textOf(ambiguous);
      assert.match(message, /Ambiguous path common\.txt/);
      assert.match(message, /proj\/common\.txt/);
      assert.match(message, /proj~2\/common\.txt/);
      const fromB = await served.conn.request('tools/call', { name: 'read', arguments: { uri: 'proj~2/common.txt' } });
      assert.match(JSON.stringify(fromB.content), /from b/);
      const onlyA = await served.conn.request('tools/call', { name: 'read', arguments: { uri: 'only-a.txt' } });
      assert.match(JSON.stringify(onlyA.content), /"text":"a\\n"/, 'a path in one root only is not ambiguous');
      const byUri = await served.conn.request('tools/call', { name: 'read', arguments: { uri: pathToFileURL(join(served.root, 'a', 'proj', 'common.txt')).href } });
      assert.match(JSON.stringify(byUri.content), /from a/);
      const prompt = await rejectsWith(served.conn.request('prompts/get', { name: 'explain', arguments: { uri: 'common.txt' } }), -32602, 'Ambiguous path');
      assert.deepEqual((prompt.data as { candidates: string[] }).candidates.sort(), ['proj/common.txt', 'proj~2/common.txt']);
    });
  });
}
