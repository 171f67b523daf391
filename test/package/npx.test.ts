// `npx -y ./folder-mcp-0.1.0.tgz DIR`, the README's line for the package
// before it is published (`npx -y folder-mcp DIR` after: the same install,
// from the registry), on three Node.js: this machine's (20 in CI, where npm
// compiles the optional better-sqlite3), and 22 and 24 from the npm package
// `node` (node:sqlite, so nothing needs compiling). Each starts with an empty
// npm cache in a HOME of its own, then runs again on the cache it filled. The
// SDK client lists the folder and searches it. The time from npx's start to
// its first answer is printed (a test asserts no time); the three Nodes run
// side by side, so the Node 20 compile overlaps the other two installs.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { pathToFileURL } from 'node:url';
import { tempDir, waitFor, writeTree } from '../helpers.ts';
import { npmNode } from '../../scripts/newer-node.ts';
import { pack, userEnv, type Packed } from './packed.ts';

/** Long enough for a cold install that compiles better-sqlite3 on a loaded 2-core machine (some 70 s quiet). */
const INSTALL_MS = 600_000;

/** Which SQLite the server picks on a Node.js: its built-in one from 22.16 (FTS5), else better-sqlite3. */
function expectedDriver(version: string): string {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 16) ? 'node:sqlite' : 'better-sqlite3';
}

const NODES = [
  { name: "this machine's Node.js", path: () => process.execPath },
  { name: 'Node 22 (npm: node@22)', path: () => npmNode(22) },
  { name: 'Node 24 (npm: node@24)', path: () => npmNode(24) },
];

describe('npx -y ./folder-mcp-<version>.tgz DIR, from an empty npm cache and then a warm one', { concurrency: NODES.length }, () => {
  const work = tempDir('folder-mcp-npx-');
  const folder = tempDir('folder-mcp-npx-docs-');
  let packed: Packed;
  /** Each Node.js's binary, found before any test starts: fetching node@22 blocks, and would stall the others' clocks. */
  const binaries = new Map<string, string>();

  before(() => {
    for (const node of NODES) binaries.set(node.name, node.path());
    packed = pack(work.path);
    writeTree(folder.path, { 'notes/plan.md': '# Plan\nThe quokka migration starts in spring.\n' });
  });

  after(() => {
    work.cleanup();
    folder.cleanup();
  });

  /** Starts `npx -y ./<tarball> DIR` from the tarball's folder, as the README says; resolves at the first answer. */
  async function npx(env: Record<string, string>) {
    let stderr = '';
    const transport = new StdioClientTransport({ command: 'npx', args: ['-y', `./${packed.file}`, folder.path], cwd: work.path, env, stderr: 'pipe' });
    transport.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    const client = new Client({ name: 'npx-test', version: '0.0.0' });
    const started = performance.now();
    await client.connect(transport, { timeout: INSTALL_MS }).catch((error: Error) => {
      error.message += `; npx and the server wrote:\n${stderr}`;
      throw error;
    });
    return { client, firstAnswerMs: performance.now() - started, stderr: () => stderr };
  }

  /** Lists and searches through a started server, and says what the first answer took. */
  async function listsAndSearches(t: TestContext, env: Record<string, string>, driver: string): Promise<void> {
    const { client, firstAnswerMs, stderr } = await npx(env);
    try {
      const uris = (await client.listResources()).resources.map((r) => r.uri);
      assert.ok(uris.includes(pathToFileURL(join(folder.path, 'notes', 'plan.md')).href), uris.join(', '));
      assert.match(stderr(), new RegExp(`SQLite: ${driver} \\(SQLite 3\\.`));
      const hits = await waitFor(async () => {
        const result = await client.callTool({ name: 'search', arguments: { query: 'quokka' } });
        const { results } = result.structuredContent as { results: { path: string }[] };
        return results.length > 0 ? results : undefined;
      }, 20_000, 'search to find quokka');
      assert.deepEqual(hits?.map((h) => h.path), ['notes/plan.md']);
    } finally {
      await client.close();
    }
    t.diagnostic(`npx start to first answer: ${(firstAnswerMs / 1000).toFixed(1)} s`);
  }

  for (const node of NODES) {
    test(node.name, async (t) => {
      const binary = binaries.get(node.name)!;
      const version = execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim();
      const driver = expectedDriver(version);
      const home = tempDir('folder-mcp-npx-home-');
      t.after(home.cleanup);
      const env = userEnv(home.path, binary);
      t.diagnostic(`${version}, SQLite driver ${driver}; tarball ${packed.file}: ${packed.size} bytes, ${packed.unpackedSize} unpacked`);
      await t.test(`cold: an empty npm cache, so npm installs every dependency${driver === 'better-sqlite3' ? ' and compiles better-sqlite3' : ''}`, (t) =>
        listsAndSearches(t, env, driver),
      );
      await t.test('warm: again, on the cache the first run filled', (t) => listsAndSearches(t, env, driver));
    });
  }
});
