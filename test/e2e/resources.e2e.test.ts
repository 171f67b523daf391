import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { waitFor } from '../basics.ts';
import { CLI, connect, connectInProcess, diskUris, ERAS, listAll, notFoundCode, rejectsWith, serveTree, tempDir, writeTree, type LooseResult } from '../helpers.ts';

/** What an error's data repeats of a URI: at most 512 characters, then the length. */
const echoed = (uri: string) => (uri.length <= 512 ? uri : `${uri.slice(0, 512)}… (${uri.length} characters)`);

const BINARY = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff, 0xfe, 0x00, 0x10]);
const LATIN1 = Buffer.from('caf\xe9 cr\xe8me\n', 'latin1');

const TREE: Record<string, string | Uint8Array> = {
  'src/main.ts': 'export const main = () => 42;\n',
  'src/util/strings.ts': 'export const up = (s: string) => s.toUpperCase();\n',
  'src/util/math.ts': 'export const add = (a: number, b: number) => a + b;\n',
  'README.md': '# Demo\n',
  'docs/guide.md': '# Guide\nHello.\n',
  'docs/café.md': 'crème brûlée\n',
  'docs/with space.md': 'spaced\n',
  'assets/logo.png': BINARY,
  'assets/legacy.txt': LATIN1,
  'empty.txt': '',
  'Makefile': 'all:\n\techo hi\n',
  'big.txt': 'x'.repeat(5000),
  'empty-dir/': '',
  '.gitignore': 'ignored/\n*.log\n',
  'ignored/secret.txt': 'no\n',
  'debug.log': 'no\n',
  'node_modules/pkg/index.js': 'no\n',
  '.git/HEAD': 'ref: refs/heads/main\n',
};

for (const era of ERAS) describe(`resources over stdio (${era})`, () => {
  const tree = serveTree(TREE, ({ root, state }) => [root, '--db', join(state, 'index.db'), '--page-size', '3', '--max-read-bytes', '4096'], { era });
  const { uriOf } = tree;


  test('lists every file and folder once, in URI order, across pages', async () => {
    const { items, pages } = await listAll(tree.conn, 'resources/list', 'resources');
    const uris = items.map((r) => r.uri as string);
    assert.deepEqual(uris, diskUris(tree.root, (name) => name === 'ignored' || name.endsWith('.log')));
    assert.ok(pages > 3, `expected several pages of 3, got ${pages}`);
  });

  test('list items carry the resource object less title and capabilities, which resources/metadata gives (issue 45)', async () => {
    const { items } = await listAll(tree.conn, 'resources/list', 'resources');
    const byUri = new Map(items.map((r) => [r.uri as string, r]));
    const main = byUri.get(uriOf('src/main.ts'))!;
    assert.deepEqual(Object.keys(main), ['uri', 'name', 'mimeType', 'resourceType', 'annotations', 'size']);
    assert.equal(main.name, 'main.ts');
    assert.equal(main.mimeType, 'text/typescript');
    assert.equal(main.size, statSync(join(tree.root, 'src/main.ts')).size);
    assert.equal(main.resourceType, 'document');
    const lastModified = (main.annotations as { lastModified: string }).lastModified;
    assert.equal(new Date(lastModified).getTime(), Math.floor(statSync(join(tree.root, 'src/main.ts')).mtimeMs));
    const src = byUri.get(uriOf('src') + '/')!;
    assert.deepEqual(Object.keys(src), ['uri', 'name', 'mimeType', 'resourceType', 'annotations']);
    assert.equal(src.resourceType, 'collection');
    assert.equal(src.mimeType, 'inode/directory');
    const top = byUri.get(tree.rootUri)!;
    assert.equal(top.resourceType, 'collection');
    assert.equal(top.name, tree.root.split('/').pop());
    // Sniffed: no extension, text content.
    assert.equal(byUri.get(uriOf('Makefile'))!.mimeType, 'text/plain');
    assert.equal(byUri.get(uriOf('docs/café.md'))!.name, 'café.md');
    // What the list leaves out, the metadata of the same resource has, field for field the rest.
    for (const item of [main, src]) {
      const { resource } = (await tree.conn.request('resources/metadata', { uri: item.uri })) as { resource: LooseResult };
      const { title, capabilities, ...rest } = resource;
      assert.deepEqual(rest, item);
      assert.equal(title, item === main ? 'src/main.ts' : 'src');
      assert.deepEqual(capabilities, item === main ? { subscribe: true } : { list: true, subscribe: true });
    }
  });

  test('reads a UTF-8 text document with its metadata', async () => {
    const result = await tree.conn.request('resources/read', { uri: uriOf('src/main.ts') });
    const contents = result.contents as LooseResult[];
    assert.equal(contents.length, 1);
    assert.equal(contents[0]!.uri, uriOf('src/main.ts'));
    assert.equal(contents[0]!.text, TREE['src/main.ts']);
    assert.equal(contents[0]!.mimeType, 'text/typescript');
    assert.equal(contents[0]!.resourceType, 'document');
    assert.equal(contents[0]!.title, 'src/main.ts');
    assert.equal(contents[0]!.size, Buffer.byteLength(TREE['src/main.ts'] as string));
  });

  test('reads binary, empty and non-UTF-8 files correctly', async () => {
    const png = ((await tree.conn.request('resources/read', { uri: uriOf('assets/logo.png') })).contents as LooseResult[])[0]!;
    assert.equal(png.blob, BINARY.toString('base64'));
    assert.equal(png.mimeType, 'image/png');
    assert.equal(png.text, undefined);
    const empty = ((await tree.conn.request('resources/read', { uri: uriOf('empty.txt') })).contents as LooseResult[])[0]!;
    assert.equal(empty.text, '');
    assert.equal(empty.size, 0);
    const legacy = ((await tree.conn.request('resources/read', { uri: uriOf('assets/legacy.txt') })).contents as LooseResult[])[0]!;
    assert.equal(legacy.blob, LATIN1.toString('base64'), 'invalid UTF-8 is served as bytes, not mangled text');
  });

  test('the same file is named by percent-encoded and raw non-ASCII URIs', async () => {
    const encoded = await tree.conn.request('resources/read', { uri: uriOf('docs/café.md') });
    const raw = await tree.conn.request('resources/read', { uri: `${tree.rootUri}docs/café.md` });
    const lower = await tree.conn.request('resources/read', { uri: `${tree.rootUri}docs/caf%c3%a9.md` });
    assert.deepEqual(raw, encoded);
    assert.deepEqual(lower, encoded);
    assert.equal((encoded.contents as LooseResult[])[0]!.uri, uriOf('docs/café.md'));
  });

  test('reads a collection: its listing, then its direct text children', async () => {
    const contents = (await tree.conn.request('resources/read', { uri: uriOf('docs') + '/' })).contents as LooseResult[];
    assert.equal(contents[0]!.uri, uriOf('docs') + '/');
    assert.equal(contents[0]!.resourceType, 'collection');
    const listing = contents[0]!.text as string;
    for (const name of ['guide.md', 'café.md', 'with space.md']) assert.match(listing, new RegExp(`^${name}\\tdocument\\t\\d+$`, 'm'));
    const children = contents.slice(1);
    assert.deepEqual(
      children.map((c) => c.uri),
      [uriOf('docs/café.md'), uriOf('docs/guide.md'), uriOf('docs/with space.md')].sort(),
    );
    for (const child of children) {
      assert.equal(child.resourceType, 'document');
      assert.equal(child.text, readFileSync(new URL(child.uri as string), 'utf8'));
    }
    // A collection without its trailing slash names the same collection.
    const again = (await tree.conn.request('resources/read', { uri: uriOf('docs') })).contents as LooseResult[];
    assert.equal(again[0]!.uri, uriOf('docs') + '/');
    // Binary children are listed but not embedded.
    const assets = (await tree.conn.request('resources/read', { uri: uriOf('assets') + '/' })).contents as LooseResult[];
    assert.match(assets[0]!.text as string, /^logo\.png\tdocument\t10$/m);
    assert.deepEqual(assets.slice(1).map((c) => c.uri), []);
  });

  test('resources/metadata returns the resource without content', async () => {
    const { resource } = (await tree.conn.request('resources/metadata', { uri: uriOf('docs/guide.md') })) as {
      resource: LooseResult;
    };
    assert.equal(resource.uri, uriOf('docs/guide.md'));
    assert.equal(resource.mimeType, 'text/markdown');
    assert.equal(resource.size, Buffer.byteLength(TREE['docs/guide.md'] as string));
    assert.equal(resource.text, undefined);
    const dir = (await tree.conn.request('resources/metadata', { uri: tree.rootUri })) as { resource: LooseResult };
    assert.equal(dir.resource.resourceType, 'collection');
  });

  test('templates/list offers one template per root', async () => {
    const result = await tree.conn.request('resources/templates/list');
    const templates = result.resourceTemplates as LooseResult[];
    assert.equal(templates.length, 1);
    assert.equal(templates[0]!.uriTemplate, `${tree.rootUri}{+path}`);
  });

  test('anything outside, ignored or missing is not found, with the uri in data', async () => {
    const secretsDir = `${tree.root}-secrets`;
    const cases = [
      uriOf('nope.txt'),
      `${tree.rootUri}../`,
      `${tree.rootUri}..%2f..%2fetc/passwd`,
      `${tree.rootUri}%2e%2e/%2e%2e/etc/passwd`,
      pathToFileURL(secretsDir).href + '/x.txt',
      'file:///etc/passwd',
      'file://evil.example/etc/passwd',
      'http://example.com/',
      'mcp://groups/nonexistent',
      'not a uri',
      uriOf('ignored/secret.txt'),
      uriOf('debug.log'),
      uriOf('node_modules/pkg/index.js'),
      uriOf('.git/HEAD'),
      uriOf('src/main.ts') + '/',
      `${tree.rootUri}${'a/'.repeat(5000)}`,
    ];
    for (const uri of cases) {
      const error = await rejectsWith(tree.conn.request('resources/read', { uri }), notFoundCode(era), 'Resource not found');
      assert.deepEqual(error.data, { uri: echoed(uri) }, uri);
      await rejectsWith(tree.conn.request('resources/metadata', { uri }), notFoundCode(era));
    }
  });

  test('an error repeats at most 512 characters of what the client sent', async () => {
    const huge = `${tree.rootUri}${'x'.repeat(100_000)}`;
    const notFound = await rejectsWith(tree.conn.request('resources/read', { uri: huge }), notFoundCode(era));
    assert.ok(JSON.stringify(notFound.data).length < 700, 'data.uri cut');
    assert.match(String((notFound.data as { uri: string }).uri), /\(100\d{3} characters\)$/);
    const tool = await rejectsWith(tree.conn.request('tools/call', { name: 'y'.repeat(100_000), arguments: {} }), -32602, 'Unknown tool');
    assert.ok(tool.message.length < 700, `message of ${tool.message.length} characters`);
    const prompt = await rejectsWith(tree.conn.request('prompts/get', { name: 'z'.repeat(100_000) }), -32602, 'Unknown prompt');
    assert.ok(prompt.message.length < 700);
    const read = await tree.conn.request('tools/call', { name: 'read', arguments: { uri: huge } });
    const text = (read.content as { text: string }[])[0]!.text;
    assert.equal(read.isError, true);
    assert.ok(text.length < 700, `tool error of ${text.length} characters`);
  });

  test('bad params are -32602, and the server keeps serving', async () => {
    await rejectsWith(tree.conn.request('resources/read', {}), -32602, 'uri');
    await rejectsWith(tree.conn.request('resources/read', { uri: 42 }), -32602, 'uri');
    await rejectsWith(tree.conn.request('resources/list', { cursor: 'garbage' }), -32602, 'Invalid cursor');
    await rejectsWith(tree.conn.request('resources/list', { cursor: 42 }), -32602);
    const ok = await tree.conn.request('resources/metadata', { uri: uriOf('README.md') });
    assert.ok(ok.resource);
  });

  test('a file over --max-read-bytes gets an error naming its size and the limit', async () => {
    const error = await rejectsWith(tree.conn.request('resources/read', { uri: uriOf('big.txt') }), -32602);
    assert.match(error.message, /5000 bytes/);
    assert.match(error.message, /4096/);
    assert.deepEqual(error.data, { uri: uriOf('big.txt'), size: 5000, limit: 4096 });
  });

  test('a file deleted after indexing is not found, not a crash', async () => {
    rmSync(join(tree.root, 'README.md'));
    await rejectsWith(tree.conn.request('resources/read', { uri: uriOf('README.md') }), notFoundCode(era));
    writeFileSync(join(tree.root, 'README.md'), TREE['README.md'] as string);
  });
});

describe('index reuse', () => {
  test('a second start reuses the database and serves the same listing', async () => {
    const root = tempDir();
    const state = tempDir('folder-mcp-state-');
    try {
      writeTree(root.path, { 'a.txt': 'a', 'b/c.txt': 'c' });
      const db = join(state.path, 'index.db');
      const first = await connect([root.path, '--db', db]);
      const before = (await listAll(first, 'resources/list', 'resources')).items;
      // Pages answer as soon as their keys are in, before the scan's last word: closed then, the scan would be
      // cut short and the index left cold (CI saw it once).
      await waitFor(() => /indexed 4 entries/.test(first.stderr()), 30_000, 'the cold scan to end');
      await first.close();
      assert.ok(existsSync(db));
      const second = await connect([root.path, '--db', db]);
      const afterList = (await listAll(second, 'resources/list', 'resources')).items;
      await second.close();
      assert.deepEqual(afterList, before);
      assert.equal(before.length, 4);
      assert.match(first.stderr(), /indexed 4 entries/);
      assert.doesNotMatch(second.stderr(), /indexed 4 entries/);
    } finally {
      root.cleanup();
      state.cleanup();
    }
  });

  test('a cursor outlives a restart on the same folders, and is invalid once the index serves other folders (a red-team finding)', async () => {
    const [a, z, state] = [tempDir('folder-mcp-a-'), tempDir('folder-mcp-z-'), tempDir('folder-mcp-state-')];
    try {
      writeTree(a.path, Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`a${i}.txt`, 'a'])));
      writeTree(z.path, Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`z${i}.txt`, 'z'])));
      const db = join(state.path, 'index.db');
      const first = await connectInProcess([a.path, '--db', db, '--page-size', '3']);
      const cursor = (await first.request('resources/list', {})).nextCursor as string;
      // Closed before its first scan is done, an index is scanned again from nothing, its cursors void.
      await waitFor(() => /indexed \d+ entries/.test(first.stderr()), 30_000, 'the first scan');
      await first.close();
      assert.ok(cursor);
      const again = await connectInProcess([a.path, '--db', db, '--page-size', '3']);
      assert.equal(((await again.request('resources/list', { cursor })).resources as LooseResult[]).length, 3);
      await again.close();
      // The index is emptied for the other folder, its secret kept: the cursor named a place in a listing gone.
      const other = await connectInProcess([z.path, '--db', db, '--page-size', '3']);
      await rejectsWith(other.request('resources/list', { cursor }), -32602, 'Invalid cursor');
      await other.close();
    } finally {
      for (const dir of [a, z, state]) dir.cleanup();
    }
  });

  test('a corrupt index in our own cache folder is rebuilt with a warning (a --db file is never: db-safety.e2e)', async () => {
    const root = tempDir();
    const state = tempDir('folder-mcp-state-');
    try {
      writeTree(root.path, { 'a.txt': 'a' });
      const env = { XDG_CACHE_HOME: state.path };
      const first = await connect([root.path], { env });
      await first.request('resources/list', {});
      await first.close();
      const db = /\(index: (.+?\.db);/.exec(first.stderr())![1]!;
      assert.ok(db.startsWith(join(state.path, 'folder-mcp')), db);
      writeFileSync(db, 'this is not a database, just some bytes that SQLite will refuse'.repeat(100));
      const conn = await connect([root.path], { env });
      const { items } = await listAll(conn, 'resources/list', 'resources');
      await conn.close();
      assert.equal(items.length, 2);
      assert.match(conn.stderr(), /rebuilt/);
    } finally {
      root.cleanup();
      state.cleanup();
    }
  });
});

describe('command line', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', input: '' });

  test('bad invocations exit 2 with one line on stderr and nothing on stdout', () => {
    const root = tempDir();
    try {
      writeTree(root.path, { 'file.txt': 'x' });
      const cases = [
        [join(root.path, 'missing')],
        [join(root.path, 'file.txt')],
        ['--no-such-option', root.path],
        // With no folder, only a stdio server has a client to name roots (test/e2e/client-roots.e2e.test.ts).
        ['--http', '0'],
        ['--page-size', 'zero', root.path],
        ['--poll-interval', '0', root.path],
        ['--db', join(root.path, 'inside.db'), root.path],
      ];
      for (const args of cases) {
        const result = run(args);
        assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
        assert.equal(result.stdout, '', args.join(' '));
        assert.match(result.stderr, /^folder-mcp: /);
      }
      assert.equal(existsSync(join(root.path, 'inside.db')), false);
    } finally {
      root.cleanup();
    }
  });

  test('--help and --version print to stdout and exit 0', () => {
    const help = run(['--help']);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /--max-read-bytes/);
    const version = run(['--version']);
    assert.equal(version.status, 0);
    assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
  });
});

for (const era of ERAS) describe(`symlinks (${era})`, () => {
  test('links are not listed; a URI through a link resolves only with --follow-symlinks and only inside', async () => {
    const { symlinkSync } = await import('node:fs');
    const root = tempDir();
    const outside = tempDir('folder-mcp-outside-');
    try {
      writeTree(root.path, { 'real/doc.txt': 'inside', 'top.txt': 'top' });
      writeTree(outside.path, { 'secret.txt': 'outside' });
      symlinkSync(join(root.path, 'real'), join(root.path, 'alias'));
      symlinkSync(join(root.path, 'top.txt'), join(root.path, 'top-link.txt'));
      symlinkSync(outside.path, join(root.path, 'escape'));
      symlinkSync(join(outside.path, 'secret.txt'), join(root.path, 'secret-link.txt'));
      const rootUri = pathToFileURL(root.path).href + '/';
      const through = [`${rootUri}alias/doc.txt`, `${rootUri}top-link.txt`];
      const escaping = [`${rootUri}escape/secret.txt`, `${rootUri}secret-link.txt`, `${rootUri}escape/`];
      for (const follow of [false, true]) {
        const conn = await connect([root.path, '--db', ':memory:', ...(follow ? ['--follow-symlinks'] : [])], { era });
        try {
          const { items } = await listAll(conn, 'resources/list', 'resources');
          assert.deepEqual(
            items.map((r) => r.uri),
            [rootUri, `${rootUri}real/`, `${rootUri}real/doc.txt`, `${rootUri}top.txt`],
            'links never appear as resources of their own',
          );
          for (const uri of escaping) await rejectsWith(conn.request('resources/read', { uri }), notFoundCode(era));
          for (const uri of through) {
            if (!follow) {
              await rejectsWith(conn.request('resources/read', { uri }), notFoundCode(era));
              continue;
            }
            const item = ((await conn.request('resources/read', { uri })).contents as LooseResult[])[0]!;
            assert.ok([`${rootUri}real/doc.txt`, `${rootUri}top.txt`].includes(item.uri as string), 'answered under the real URI');
          }
        } finally {
          await conn.close();
        }
      }
    } finally {
      root.cleanup();
      outside.cleanup();
    }
  });
});
