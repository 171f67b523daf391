import { getMcpConfigForManifest, unpackExtension, type McpbManifestAny } from '@anthropic-ai/mcpb';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BUNDLE_NODE, bundleFileName, nativeModulesUnder } from '../../scripts/bundle.ts';
import { readSources, SHA256_PLACEHOLDER, validateEntry, type ServerEntry } from '../../scripts/registry-entry.ts';
import { makePdf } from '../fixtures.ts';
import { tempDir, waitFor, writeTree } from '../helpers.ts';
import { newerNode } from '../../scripts/newer-node.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));
/** The `mcpb` command (the package's bin; its package.json is not exported). */
const MCPB_CLI = join(dirname(createRequire(import.meta.url).resolve('@anthropic-ai/mcpb')), 'cli', 'cli.js');

test('manifest.json passes `mcpb validate` and matches package.json', () => {
  const result = spawnSync(process.execPath, [MCPB_CLI, 'validate', join(ROOT, 'manifest.json')], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
  assert.match(result.stdout, /validation passes/);
  const manifest = readJson(join(ROOT, 'manifest.json'));
  const pkg = readJson(join(ROOT, 'package.json'));
  assert.equal(manifest.version, pkg.version);
  assert.equal(manifest.server.type, 'node');
  assert.equal(manifest.server.entry_point, pkg.bin['folder-mcp']);
  assert.deepEqual(manifest.user_config.folders, {
    type: 'directory',
    title: 'Folders',
    description: manifest.user_config.folders.description,
    multiple: true,
    required: true,
  });
});

test('the manifest declares every platform and the Node.js that has node:sqlite with FTS5', () => {
  const manifest = readJson(join(ROOT, 'manifest.json'));
  assert.deepEqual([...manifest.compatibility.platforms].sort(), ['darwin', 'linux', 'win32']);
  assert.equal(manifest.compatibility.runtimes.node, BUNDLE_NODE);
});

/** Every path under `dir` that is a symlink (an unpacked bundle must hold real files only). */
function symlinksUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((rel) => lstatSync(join(dir, rel)).isSymbolicLink());
}

describe('the .mcpb, unpacked outside the repository and started as Claude Desktop starts it (Node 24, env -i, no cwd)', () => {
  const out = tempDir('folder-mcp-bundle-');
  const home = tempDir('folder-mcp-bundle-home-');
  const docs = tempDir('folder-mcp-bundle-docs-');
  const notes = tempDir('folder-mcp-bundle-notes-');
  const unpacked = join(home.path, 'Claude Extensions', 'folder-mcp');
  const file = join(out.path, bundleFileName(readJson(join(ROOT, 'package.json')).version));
  let client: Client;
  let stderr = '';

  before(async () => {
    const build = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'bundle.ts'), '--out', out.path], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    assert.equal(build.status, 0, `npm run bundle failed:\n${build.stdout}${build.stderr}`);
    assert.ok(await unpackExtension({ mcpbPath: file, outputDir: unpacked, silent: true }), 'mcpb unpack');
    // The unpacked server must not find the repository's modules: not by a parent folder, not by NODE_PATH.
    assert.equal(relative(ROOT, unpacked).startsWith('..'), true);
    assert.equal(existsSync(join(tmpdir(), 'node_modules')), false, `${tmpdir()}/node_modules would shadow the bundle's`);

    writeTree(docs.path, {
      'README.md': '# Docs\nThe marmalade recipe lives here.\n',
      'reports/q3.pdf': makePdf(['Quarterly report', 'Second page']),
    });
    writeTree(notes.path, { 'todo.txt': 'buy oranges\n' });

    // What Claude Desktop runs: the manifest's mcp_config with ${__dirname} and the picked folders substituted
    // by the mcpb library's own code, the one the app uses.
    const manifest = readJson(join(unpacked, 'manifest.json')) as McpbManifestAny;
    const config = await getMcpConfigForManifest({
      manifest,
      extensionPath: unpacked,
      systemDirs: { HOME: home.path },
      userConfig: { folders: [docs.path, notes.path] },
      pathSeparator: '/',
    });
    assert.ok(config);
    assert.equal(config.command, 'node');
    assert.deepEqual(config.args, [join(unpacked, 'dist', 'cli.js'), '--', docs.path, notes.path]);
    // No NODE_OPTIONS: a size of the young generation there would turn off the server's own hold of it (src/heap.ts).
    assert.equal(config.env?.NODE_OPTIONS, undefined);
    const transport = new StdioClientTransport({
      // Claude Desktop runs "node" with its own Node.js (24 today): the npm package `node` at 24 stands in for it,
      // with an environment of its own only (as `env -i`) and the folder it was unpacked to, not the repository, as cwd.
      command: newerNode(),
      args: config.args ?? [],
      cwd: home.path,
      env: { ...config.env, HOME: home.path, XDG_CACHE_HOME: join(home.path, '.cache') },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    client = new Client({ name: 'claude-desktop-stand-in', version: '0.0.0' });
    await client.connect(transport);
  });

  after(async () => {
    await client?.close();
    for (const dir of [out, home, docs, notes]) dir.cleanup();
  });

  test('holds real files only, and no native module: one bundle for every platform', () => {
    assert.deepEqual(symlinksUnder(unpacked), []);
    assert.deepEqual(nativeModulesUnder(unpacked), []);
    assert.equal(existsSync(join(unpacked, 'node_modules', 'better-sqlite3')), false);
    const manifest = readJson(join(unpacked, 'manifest.json'));
    assert.deepEqual([...manifest.compatibility.platforms].sort(), ['darwin', 'linux', 'win32']);
    assert.equal(manifest.compatibility.runtimes.node, BUNDLE_NODE);
  });

  test('lists both picked folders', async () => {
    const uris = (await client.listResources()).resources.map((r) => r.uri);
    for (const [root, rel] of [[docs.path, 'README.md'], [docs.path, 'reports/q3.pdf'], [notes.path, 'todo.txt']] as const) {
      assert.ok(uris.includes(pathToFileURL(join(root, rel)).href), `${rel} listed in ${uris.join(', ')}`);
    }
    assert.match(stderr, /serving .*SQLite: node:sqlite \(SQLite 3\.\d+/);
  });

  test('searches (FTS5 from node:sqlite) and reads a PDF as text (bundled pdfjs, without its optional canvas)', async () => {
    const results = await waitFor(async () => {
      const result = await client.callTool({ name: 'search', arguments: { query: 'marmalade' } });
      const { results } = result.structuredContent as { results: { path: string }[] };
      return results.length > 0 ? results : undefined;
    }, 20_000, 'search to find marmalade');
    // Two folders are served: a path starts with its folder's label.
    assert.deepEqual(results?.map((r) => r.path), [`${basename(docs.path)}/README.md`]);

    const { contents } = await client.readResource({ uri: pathToFileURL(join(docs.path, 'reports/q3.pdf')).href });
    assert.equal(contents[0]?.mimeType, 'application/pdf');
    assert.equal(contents[1] && 'text' in contents[1] ? contents[1].text : undefined, '--- page 1 ---\nQuarterly report\n\n--- page 2 ---\nSecond page\n');
  });

  // The release's steps (.github/workflows/release.yml) on this bundle, the one built here, so the rehearsal builds
  // no second one; test/package/registry.test.ts and release.test.ts have the rest.
  test('the release: the packed manifest passes `mcpb validate`; the entry carries the SHA-256 of this bundle and is valid; BUNDLE.sha256', () => {
    const validate = spawnSync(process.execPath, [MCPB_CLI, 'validate', join(unpacked, 'manifest.json')], { encoding: 'utf8' });
    assert.equal(validate.status, 0, validate.stdout + validate.stderr);

    const entryPath = join(out.path, 'server.json');
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'registry-entry.ts'), file, '--out', entryPath], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
    const entry = readJson(entryPath) as ServerEntry;
    assert.deepEqual(validateEntry(entry), []);
    const mcpb = entry.packages?.find((p) => p.registryType === 'mcpb');
    assert.equal(mcpb?.fileSha256, sha256);
    // What `sha256sum --check` reads, and what a user compares by hand.
    assert.equal(readFileSync(`${file}.sha256`, 'utf8'), `${sha256}  ${basename(file)}\n`);
    // Only the hash is written: the rest is the committed server.json, and that file is left as it was.
    const committed = readSources().entry;
    assert.deepEqual({ ...entry, packages: entry.packages?.map((p) => (p === mcpb ? { ...p, fileSha256: SHA256_PLACEHOLDER } : p)) }, committed);
    assert.equal(committed.packages?.find((p) => p.registryType === 'mcpb')?.fileSha256, SHA256_PLACEHOLDER);
  });
});
