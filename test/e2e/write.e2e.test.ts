// The write tools (--write) over the stdio wire (in process) with the SDK client, on both
// eras: what each tool does on disk, that the index and the clients hear of
// it in the same call (find, resource links, updated, list_changed), and what
// they refuse. Without --write they do not exist and the server says it is
// read-only.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ERAS, serveTree, tempDir, waitFor, type LooseResult } from '../helpers.ts';

type ToolCall = LooseResult & { content: LooseResult[]; structuredContent?: LooseResult; isError?: boolean };

const TREE = {
  '.gitignore': 'ignored/\n',
  'README.md': '# Demo\n',
  'notes/todo.md': 'one\ntwo\nthree\n',
  'notes/dup.md': 'x = 1\nx = 1\n',
  'src/main.ts': 'export const main = () => 42;\n',
  'ignored/keep.txt': 'hidden-content\n',
};

const WRITE_TOOLS = ['write', 'edit', 'mkdir', 'move'];

for (const era of ERAS) describe(`write tools over stdio (${era})`, () => {
  /** A folder beside the served one, not served: nothing may change in it. */
  let outside: ReturnType<typeof tempDir>;
  const tree = serveTree(TREE, ({ root, state }) => [root, '--db', join(state, 'index.db'), '--write', '--max-write-bytes', '65536'], { era });
  const call = async (name: string, args: Record<string, unknown>) => (await tree.conn.request('tools/call', { name, arguments: args })) as ToolCall;
  const text = (result: ToolCall) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  const links = (result: ToolCall) => result.content.filter((c) => c.type === 'resource_link');
  const onDisk = (rel: string) => readFileSync(join(tree.root, rel), 'utf8');
  const found = async (glob: string) => {
    const result = await call('find', { glob });
    return (result.structuredContent!.matches as LooseResult[]).map((m) => m.path);
  };

  before(() => {
    outside = tempDir('folder-mcp-outside-');
    writeFileSync(join(outside.path, 'secret.txt'), 'secret\n');
  });
  after(() => outside.cleanup());

  test('tools/list has the four write tools, annotated as changing files; the instructions say writable', async () => {
    const { tools } = (await tree.conn.request('tools/list', {})) as { tools: LooseResult[] };
    const byName = new Map(tools.map((t) => [t.name as string, t]));
    for (const name of WRITE_TOOLS) {
      const annotations = byName.get(name)?.annotations as LooseResult;
      assert.equal(annotations?.readOnlyHint, false, name);
      assert.equal(typeof annotations.destructiveHint, 'boolean');
      assert.equal(typeof annotations.idempotentHint, 'boolean');
    }
    assert.equal((byName.get('write')!.annotations as LooseResult).destructiveHint, true);
    assert.equal((byName.get('mkdir')!.annotations as LooseResult).destructiveHint, false);
    assert.equal((byName.get('find')!.annotations as LooseResult).readOnlyHint, true);
    assert.deepEqual((byName.get('edit')!.inputSchema as { required: string[] }).required.sort(), ['edits', 'path']);
    assert.match(tree.conn.client.getInstructions() ?? '', /Writable \(--write\)/);
  });

  test('write creates a file: the result links it, find sees it at once, and list_changed goes out', async () => {
    await tree.conn.listenListChanged();
    let listChanged = 0;
    tree.conn.onNotification('notifications/resources/list_changed', () => listChanged++);
    const result = await call('write', { path: 'notes/new.md', content: 'fresh\n' });
    assert.equal(result.isError, undefined, text(result));
    assert.equal(onDisk('notes/new.md'), 'fresh\n');
    assert.deepEqual(result.structuredContent, { uri: tree.uriOf('notes/new.md'), path: 'notes/new.md', created: true, size: 6, indexed: true });
    const [link] = links(result);
    assert.equal(link?.uri, tree.uriOf('notes/new.md'));
    assert.equal(link?.size, 6);
    assert.equal(link?.resourceType, 'document');
    // In the index before the call returned: no wait for the watcher.
    assert.deepEqual(await found('notes/new.md'), ['notes/new.md']);
    await waitFor(() => listChanged > 0, 30_000, 'list_changed');
  });

  test('write replaces a file: updated goes out to its subscriber, the mode is kept, create_only refuses', async () => {
    const uri = tree.uriOf('src/main.ts');
    chmodSync(join(tree.root, 'src/main.ts'), 0o754);
    const updated: string[] = [];
    tree.conn.onNotification('notifications/resources/updated', (p) => updated.push(p.uri as string));
    await tree.conn.subscribe(uri);
    const result = await call('write', { path: 'src/main.ts', content: 'export const main = () => 43;\n' });
    assert.equal(result.structuredContent?.created, false);
    assert.match(text(result), /^Replaced src\/main\.ts/);
    assert.equal(statSync(join(tree.root, 'src/main.ts')).mode & 0o777, 0o754);
    await waitFor(() => updated.includes(uri), 30_000, 'updated for src/main.ts');
    await tree.conn.unsubscribe(uri);
    const refused = await call('write', { path: 'src/main.ts', content: 'no\n', create_only: true });
    assert.equal(refused.isError, true);
    assert.match(text(refused), /already exists/);
    assert.equal(onDisk('src/main.ts'), 'export const main = () => 43;\n');
  });

  test('write in base64, and over --max-write-bytes', async () => {
    const bytes = Buffer.from([0, 1, 2, 255]);
    const ok = await call('write', { path: 'bin.dat', content: bytes.toString('base64'), encoding: 'base64' });
    assert.equal(ok.isError, undefined, text(ok));
    assert.deepEqual(readFileSync(join(tree.root, 'bin.dat')), bytes);
    const big = await call('write', { path: 'big.txt', content: 'x'.repeat(65537) });
    assert.equal(big.isError, true);
    assert.match(text(big), /65537 bytes is more than the limit of 65536 \(--max-write-bytes\)/);
    assert.equal(existsSync(join(tree.root, 'big.txt')), false);
  });

  test('edit: dry_run returns the diff and changes nothing; then the diff is what is applied', async () => {
    const edits = [{ old_text: 'two\n', new_text: 'TWO\n' }];
    const dry = await call('edit', { path: 'notes/todo.md', edits, dry_run: true });
    assert.equal(dry.isError, undefined, text(dry));
    const diff = dry.structuredContent!.diff as string;
    assert.match(diff, /^--- a\/notes\/todo\.md\n\+\+\+ b\/notes\/todo\.md\n@@ -1,3 \+1,3 @@\n one\n-two\n\+TWO\n three\n/);
    assert.equal(onDisk('notes/todo.md'), 'one\ntwo\nthree\n');
    const done = await call('edit', { path: 'notes/todo.md', edits });
    assert.equal(done.structuredContent!.diff, diff);
    assert.equal(onDisk('notes/todo.md'), 'one\nTWO\nthree\n');
    assert.equal(links(done)[0]?.size, Buffer.byteLength('one\nTWO\nthree\n'));
    // The content index follows the index in the background: searchable soon after.
    await waitFor(async () => {
      const result = await call('search', { query: 'TWO', prefix: 'notes/' });
      return (result.structuredContent?.results as LooseResult[] | undefined)?.some((r) => r.path === 'notes/todo.md');
    }, 20_000, 'the edit to be searchable');
  });

  test('edit: an old_text that matches 0 or 2 times names the edit and the count, and nothing changes', async () => {
    const none = await call('edit', { path: 'notes/dup.md', edits: [{ old_text: 'x = 1\n', new_text: 'y\n' }] });
    assert.equal(none.isError, true);
    assert.match(text(none), /^Edit 1 of 1: old_text matches 2 times in notes\/dup\.md; it must match exactly once/);
    const second = await call('edit', {
      path: 'notes/dup.md',
      edits: [
        { old_text: 'x = 1\nx', new_text: 'z = 1\nx' },
        { old_text: 'absent', new_text: '' },
      ],
    });
    assert.match(text(second), /^Edit 2 of 2: old_text matches 0 times/);
    assert.equal(onDisk('notes/dup.md'), 'x = 1\nx = 1\n');
  });

  test('mkdir with parents, then move a file and a folder; find follows each at once', async () => {
    const made = await call('mkdir', { path: 'a/b/c' });
    assert.deepEqual(made.structuredContent!.created, ['a', 'a/b', 'a/b/c']);
    assert.equal(links(made)[0]?.resourceType, 'collection', text(made));
    assert.deepEqual(await found('a/b/*/'), ['a/b/c']);
    const again = await call('mkdir', { path: 'a/b/c' });
    assert.deepEqual(again.structuredContent!.created, []);

    const moved = await call('move', { from: 'notes/new.md', to: 'a/b/c/new.md' });
    assert.equal(moved.isError, undefined, text(moved));
    assert.deepEqual(await found('**/new.md'), ['a/b/c/new.md']);
    const folder = await call('move', { from: 'a', to: 'z' });
    assert.equal(folder.structuredContent!.type, 'collection');
    assert.deepEqual(await found('**/new.md'), ['z/b/c/new.md']);
    assert.deepEqual(await found('a/**'), []);
  });

  test('move refuses to overwrite unless asked, and then only a file', async () => {
    writeFileSync(join(tree.root, 'm1.txt'), 'one\n');
    writeFileSync(join(tree.root, 'm2.txt'), 'two\n');
    const refused = await call('move', { from: 'm1.txt', to: 'm2.txt' });
    assert.match(text(refused), /destination exists \(pass overwrite: true/);
    assert.equal(onDisk('m2.txt'), 'two\n');
    const replaced = await call('move', { from: 'm1.txt', to: 'm2.txt', overwrite: true });
    assert.equal(replaced.structuredContent!.replaced, true);
    assert.equal(onDisk('m2.txt'), 'one\n');
    const folder = await call('move', { from: 'z', to: 'm2.txt', overwrite: true });
    assert.match(text(folder), /a folder never replaces anything/);
    // A problem of the destination names the destination, not the file that exists.
    const nowhere = await call('move', { from: 'm2.txt', to: 'nowhere/m.txt' });
    assert.match(text(nowhere), /^Not found: nowhere\/m\.txt \(the destination: /);
    assert.equal(onDisk('m2.txt'), 'one\n');
  });

  test('refusals: outside, .git, a symlinked folder, a symlink, a FIFO, a hard-linked file', async () => {
    mkdirSync(join(tree.root, '.git'), { recursive: true });
    symlinkSync(outside.path, join(tree.root, 'out'));
    symlinkSync(join(outside.path, 'secret.txt'), join(tree.root, 'link.txt'));
    execFileSync('mkfifo', [join(tree.root, 'fifo')]);
    linkSync(join(outside.path, 'secret.txt'), join(tree.root, 'hard.txt'));
    // An indexed file (written through the tool, so in the index at once) that then gets a second name outside.
    assert.equal((await call('write', { path: 'linked.txt', content: 'linked\n' })).isError, undefined);
    linkSync(join(tree.root, 'linked.txt'), join(outside.path, 'linked.txt'));
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['write', { path: '../outside.txt', content: 'x' }, /^Not found: \.\.\/outside\.txt \(not a path in the served folders\)/],
      ['write', { path: join(outside.path, 'secret.txt'), content: 'x' }, /^Not found: /],
      ['write', { path: '.git/config', content: 'x' }, /writes never go into \.git\//],
      ['mkdir', { path: 'node_modules/x' }, /writes never go into node_modules\//],
      ['write', { path: 'out/secret.txt', content: 'x' }, /^Not found: out\/secret\.txt/],
      ['write', { path: 'link.txt', content: 'x' }, /it is a symlink/],
      ['edit', { path: 'link.txt', edits: [{ old_text: 'secret', new_text: 'x' }] }, /^Not found: link\.txt/],
      ['write', { path: 'fifo', content: 'x' }, /FIFO/],
      ['write', { path: 'hard.txt', content: 'x' }, /2 hard links/],
      ['edit', { path: 'linked.txt', edits: [{ old_text: 'linked', new_text: 'x' }] }, /2 hard links/],
      ['move', { from: 'notes/todo.md', to: 'out/todo.md' }, /^Not found: /],
      ['write', { path: 'missing/dir/x.txt', content: 'x' }, /^Not found: missing\/dir\/x\.txt/],
      // A folder's path: it wrote a file named newfile.
      ['write', { path: 'newfile/', content: 'x' }, /^Cannot write newfile\/: a path that ends in a slash names a folder/],
      ['edit', { path: 'notes/', edits: [{ old_text: 'a', new_text: 'b' }] }, /^Cannot edit notes\/: a path that ends in a slash/],
      // Deeper than the write tools go: refused before anything is held (a 10,000-deep mkdir held the server past a minute).
      ['mkdir', { path: Array.from({ length: 129 }, () => 'd').join('/') }, /is 129 folders deep below its served folder .* at most 128/],
      ['mkdir', { path: Array.from({ length: 10_000 }, () => 'd').join('/') }, /is 10000 folders deep/],
      ['write', { path: `${'d/'.repeat(129)}x.txt`, content: 'x' }, /is 130 folders deep/],
      ['move', { from: 'notes/todo.md', to: `${'e/'.repeat(200)}todo.md` }, /is 201 folders deep/],
    ];
    for (const [tool, args, message] of cases) {
      const result = await call(tool, args);
      assert.equal(result.isError, true, `${tool} ${JSON.stringify(args)}`);
      assert.match(text(result), message, `${tool} ${JSON.stringify(args)}`);
    }
    assert.equal(readFileSync(join(outside.path, 'secret.txt'), 'utf8'), 'secret\n');
    assert.equal(readFileSync(join(outside.path, 'linked.txt'), 'utf8'), 'linked\n');
    assert.equal(existsSync(join(outside.path, 'outside.txt')), false);
    assert.equal(existsSync(join(tree.root, 'd')), false, 'no folder of the refused paths was made');
    assert.equal(existsSync(join(tree.root, 'newfile')), false);
    assert.equal(existsSync(join(tree.root, '.git/config')), false);
  });

  test('an ignored path is written when named, and said to be unindexed', async () => {
    const result = await call('write', { path: 'ignored/new.txt', content: 'quiet\n' });
    assert.equal(result.isError, undefined, text(result));
    assert.equal(result.structuredContent!.indexed, false);
    assert.equal(links(result).length, 0);
    assert.match(text(result), /not in the index \(ignored or excluded\)/);
    assert.equal(onDisk('ignored/new.txt'), 'quiet\n');
    // An edit reads, and reads never reach ignored files: not even a dry run's diff.
    const edit = await call('edit', { path: 'ignored/keep.txt', edits: [{ old_text: 'hidden', new_text: 'x' }], dry_run: true });
    assert.match(text(edit), /^Not found: ignored\/keep\.txt/);
    assert.doesNotMatch(JSON.stringify(edit), /hidden-content/);
  });

  test('a name with a newline is written, and printed on one line', async () => {
    const result = await call('write', { path: 'two\nlines.txt', content: 'x\n' });
    assert.equal(result.isError, undefined, text(result));
    assert.equal(onDisk('two\nlines.txt'), 'x\n');
    assert.match(text(result), /^Created two\\u000alines\.txt/);
  });
});

describe('edit of a file another program just made, before any watcher event (--watcher none)', () => {
  const tree = serveTree({ 'a.txt': 'a\n', '.gitignore': 'ignored/\n' }, ({ root, state }) => [root, '--db', join(state, 'index.db'), '--write', '--watcher', 'none']);
  const call = async (name: string, args: Record<string, unknown>) => (await tree.conn.request('tools/call', { name, arguments: args })) as ToolCall;
  test('the index looks at it first, and the edit goes through; an ignored file is still refused', async () => {
    writeFileSync(join(tree.root, 'new.txt'), 'made outside\n');
    const edited = await call('edit', { path: 'new.txt', edits: [{ old_text: 'outside', new_text: 'elsewhere' }] });
    assert.equal(edited.isError, undefined, JSON.stringify(edited.content));
    assert.equal(readFileSync(join(tree.root, 'new.txt'), 'utf8'), 'made elsewhere\n');
    mkdirSync(join(tree.root, 'ignored'));
    writeFileSync(join(tree.root, 'ignored/x.txt'), 'x\n');
    const refused = await call('edit', { path: 'ignored/x.txt', edits: [{ old_text: 'x', new_text: 'y' }] });
    assert.equal(refused.isError, true);
    assert.equal(readFileSync(join(tree.root, 'ignored/x.txt'), 'utf8'), 'x\n');
  });
});

for (const era of ERAS) describe(`without --write (${era})`, () => {
  const tree = serveTree({ 'a.txt': 'a\n' }, ({ root, state }) => [root, '--db', join(state, 'index.db')], { era });
  test('no write tool is listed or callable, and the instructions say read-only', async () => {
    const { tools } = (await tree.conn.request('tools/list', {})) as { tools: LooseResult[] };
    assert.deepEqual(tools.map((t) => t.name).filter((name) => WRITE_TOOLS.includes(name as string)), []);
    for (const tool of tools) assert.equal((tool.annotations as LooseResult).readOnlyHint, true);
    await assert.rejects(tree.conn.request('tools/call', { name: 'write', arguments: { path: 'b.txt', content: 'x' } }), /Unknown tool: write/);
    assert.equal(existsSync(join(tree.root, 'b.txt')), false);
    assert.match(tree.conn.client.getInstructions() ?? '', /Read-only/);
  });
});
