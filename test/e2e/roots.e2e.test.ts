// Many roots, one path language (issue 24, item 4), over the stdio wire (in process) on both
// eras: with several folders the tools print `notes/todo.md` (the root's
// label first), and that text works wherever a path is accepted: find's
// prefix and glob, search's prefix, read, tree, and the write tools. Two
// folders with one name are `same` and `same~2`, in command-line order.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ERAS, serveTree, waitFor, type LooseResult } from '../helpers.ts';

type ToolCall = LooseResult & { content: LooseResult[]; structuredContent?: LooseResult; isError?: boolean };

const TREE = {
  'notes/todo.md': 'buy milk\n',
  'notes/ideas/plan.md': 'a plan with milk\n',
  'code/src/main.ts': 'export const milk = 1;\n',
  'code/notes.txt': 'not in notes\n',
  'x/same/a.md': 'first same, milk\n',
  'y/same/a.md': 'second same, milk\n',
};

for (const era of ERAS) describe(`several roots, one path language (${era})`, () => {
  const tree = serveTree(
    TREE,
    ({ root }) => ['notes', 'code', 'x/same', 'y/same'].map((dir) => join(root, dir)).concat(['--db', ':memory:', '--write']),
    { era },
  );
  const call = async (name: string, args: Record<string, unknown>) => (await tree.conn.request('tools/call', { name, arguments: args })) as ToolCall;
  const text = (result: ToolCall) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  const findPaths = async (args: Record<string, unknown>) =>
    ((await call('find', { ...args, type: 'document' })).structuredContent!.matches as LooseResult[]).map((m) => m.path).sort();
  const searchPaths = async (args: Record<string, unknown>) => {
    const result = await waitFor(async () => {
      const r = await call('search', args);
      return r.structuredContent?.indexing === undefined ? r : null;
    }, 20_000, 'the content index');
    return (result!.structuredContent!.results as LooseResult[]).map((r) => r.path).sort();
  };

  test('paths print with the root label first; same-named roots are same and same~2', async () => {
    assert.deepEqual(await findPaths({ glob: '**/*.md' }), ['notes/ideas/plan.md', 'notes/todo.md', 'same/a.md', 'same~2/a.md']);
  });

  test('mcp://groups/resources names the roots as the tools do', async () => {
    const read = (await tree.conn.request('resources/read', { uri: 'mcp://groups/resources' })) as { contents: { text: string }[] };
    const names = (JSON.parse(read.contents[0]!.text) as { groups: { name: string }[] }).groups.map((g) => g.name);
    assert.deepEqual(names.filter((name) => !name.includes('/')), ['notes', 'code', 'same', 'same~2']);
    assert.ok(names.includes('notes/ideas') && names.includes('code/src'));
  });

  test('find: a printed prefix and a printed glob find what was printed', async () => {
    assert.deepEqual(await findPaths({ prefix: 'notes/' }), ['notes/ideas/plan.md', 'notes/todo.md']);
    assert.deepEqual(await findPaths({ glob: 'notes/*.md' }), ['notes/todo.md']);
    assert.deepEqual(await findPaths({ glob: 'notes/**' }), ['notes/ideas/plan.md', 'notes/todo.md']);
    assert.deepEqual(await findPaths({ prefix: 'same~2/' }), ['same~2/a.md']);
    assert.deepEqual(await findPaths({ glob: 'same/*.md' }), ['same/a.md']);
    assert.deepEqual(await findPaths({ prefix: 'code/src/', name: '*.ts' }), ['code/src/main.ts']);
    // Relative to each root still works as before.
    assert.deepEqual(await findPaths({ glob: 'src/*.ts' }), ['code/src/main.ts']);
  });

  test('search: a printed prefix narrows to that root', async () => {
    assert.deepEqual(await searchPaths({ query: 'milk', prefix: 'notes/' }), ['notes/ideas/plan.md', 'notes/todo.md']);
    assert.deepEqual(await searchPaths({ query: 'milk', prefix: 'same~2/' }), ['same~2/a.md']);
    assert.deepEqual(await searchPaths({ query: 'milk', glob: 'same/*' }), ['same/a.md']);
  });

  test('read and tree take every printed path back', async () => {
    for (const path of await findPaths({ glob: '**' })) {
      const result = await call('read', { uri: path });
      assert.equal(result.isError, undefined, `${path}: ${text(result)}`);
      assert.equal(result.structuredContent!.uri, ((await call('find', { glob: path })).structuredContent!.matches as LooseResult[])[0]!.uri);
    }
    const outline = await call('tree', { uri: 'same~2' });
    assert.match(text(outline), /^same~2\/\n {2}a\.md/);
  });

  test('the write tools speak the same language', async () => {
    const written = await call('write', { path: 'same~2/b.md', content: 'new\n' });
    assert.equal(written.isError, undefined, text(written));
    assert.equal(written.structuredContent!.path, 'same~2/b.md');
    assert.equal(readFileSync(join(tree.root, 'y/same/b.md'), 'utf8'), 'new\n');
    assert.deepEqual(await findPaths({ prefix: 'same~2/' }), ['same~2/a.md', 'same~2/b.md']);
    const edited = await call('edit', { path: 'notes/todo.md', edits: [{ old_text: 'milk', new_text: 'bread' }] });
    assert.equal(edited.isError, undefined, text(edited));
    assert.equal(readFileSync(join(tree.root, 'notes/todo.md'), 'utf8'), 'buy bread\n');
    const moved = await call('move', { from: 'same/a.md', to: 'notes/ideas/a.md' });
    assert.equal(moved.isError, undefined, text(moved));
    assert.deepEqual(await findPaths({ prefix: 'notes/ideas/' }), ['notes/ideas/a.md', 'notes/ideas/plan.md']);
    const ambiguous = await call('write', { path: 'c.md', content: 'x' });
    assert.match(text(ambiguous), /^Ambiguous path c\.md/);
  });
});
