// `npm pack`, then `npm install -g` of the tarball on Node 24 with no C++
// toolchain (cc, make and python3 hidden), then `folder-mcp DIR` as a user
// types it: better-sqlite3 is optional, so its failed compile fails nothing,
// and the server runs on node:sqlite.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { tempDir, waitFor, writeTree } from '../helpers.ts';
import { newerNode } from '../../scripts/newer-node.ts';
import { pack } from './packed.ts';

/** What a machine without a C++ toolchain answers for each tool node-gyp needs. */
const TOOLCHAIN = ['cc', 'c++', 'gcc', 'g++', 'make', 'python', 'python3'];

describe('npm pack, npm install -g on Node 24 without a toolchain, folder-mcp DIR', () => {
  const work = tempDir('folder-mcp-install-');
  const folder = tempDir('folder-mcp-install-docs-');
  const prefix = join(work.path, 'global');
  const shims = join(work.path, 'no-toolchain');
  let path = '';
  let install = { status: 0 as number | null, output: '' };
  let client: Client | undefined;
  let stderr = '';

  before(() => {
    const node = newerNode();
    // The toolchain hidden: each tool is a script that fails, first on PATH, ahead of the real one.
    spawnSync('mkdir', ['-p', shims]);
    for (const tool of TOOLCHAIN) {
      writeFileSync(join(shims, tool), `#!/bin/sh\necho "${tool}: not installed (hidden by the test)" >&2\nexit 127\n`);
      chmodSync(join(shims, tool), 0o755);
    }
    path = [shims, join(prefix, 'bin'), dirname(node), process.env.PATH ?? ''].join(':');
    const env = { ...process.env, PATH: path, npm_config_update_notifier: 'false' };
    const tarball = pack(work.path).path;
    const result = spawnSync('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', tarball], {
      cwd: work.path,
      env,
      encoding: 'utf8',
      timeout: 600_000,
    });
    install = { status: result.status, output: result.stdout + result.stderr };
    writeTree(folder.path, { 'notes/plan.md': '# Plan\nThe quokka migration starts in spring.\n' });
  });

  after(async () => {
    await client?.close();
    work.cleanup();
    folder.cleanup();
  });

  test('installs with better-sqlite3 left out (its compile fails without a toolchain, and it is optional)', () => {
    assert.equal(install.status, 0, install.output);
    const modules = join(prefix, 'lib', 'node_modules', 'folder-mcp', 'node_modules');
    assert.equal(existsSync(join(modules, 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node')), false, 'better-sqlite3 was compiled after all');
    assert.ok(existsSync(join(prefix, 'bin', 'folder-mcp')));
  });

  test('folder-mcp DIR serves the folder on node:sqlite: lists and searches', async () => {
    const transport = new StdioClientTransport({
      command: join(prefix, 'bin', 'folder-mcp'),
      args: [folder.path],
      cwd: work.path,
      env: { PATH: path, HOME: work.path, XDG_CACHE_HOME: join(work.path, 'cache') },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    client = new Client({ name: 'install-test', version: '0.0.0' });
    await client.connect(transport);
    const uris = (await client.listResources()).resources.map((r) => r.uri);
    assert.ok(uris.includes(pathToFileURL(join(folder.path, 'notes', 'plan.md')).href), uris.join(', '));
    assert.match(stderr, /SQLite: node:sqlite \(SQLite 3\.\d+[^)]*\) on Node\.js v24\./);
    const hits = await waitFor(async () => {
      const result = await client!.callTool({ name: 'search', arguments: { query: 'quokka' } });
      const { results } = result.structuredContent as { results: { path: string }[] };
      return results.length > 0 ? results : undefined;
    }, 20_000, 'search to find quokka');
    assert.deepEqual(hits?.map((h) => h.path), ['notes/plan.md']);
  });
});
