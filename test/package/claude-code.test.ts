// Claude Code's own CLI adds the packed server as the README says
// (`claude mcp add folder -- npx -y folder-mcp DIR`, with the tarball in the
// package's place until it is published: `file:` and its full path, the form
// a client's config needs, as no client promises the folder it starts a
// server in), then `claude mcp list` starts it and must print it connected.
// Neither command needs a login. The CLI runs in a HOME and CLAUDE_CONFIG_DIR
// of its own, with its updater and its other traffic off, bounded by a
// timeout; the server it starts installs on Node 24 from an empty npm cache,
// as a first run does.
//
// The CLI (some 180 MB to download, 384 MB installed: a native binary per
// platform) comes pinned through npx, which keeps it in npm's cache as
// .ci/run keeps Node 24: a devDependency would cost every `npm ci` of every
// lane that download and an install script, and a fresh install per run
// would write the 384 MB again each time.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tmpdir } from 'node:os';
import { tempDir, writeTree } from '../helpers.ts';
import { newerNode } from '../../scripts/newer-node.ts';
import { pack, userEnv, type Packed } from './packed.ts';

/** `npm view @anthropic-ai/claude-code version` when this was written. */
const CLAUDE_CODE = '@anthropic-ai/claude-code@2.1.332';
/** A bound on each CLI call: `mcp list` waits for the server's install (some 15 s cold on Node 24). */
const CLI_MS = 180_000;

/** The pinned `claude` binary, installed into npm's cache on first use. */
function claudeBinary(): string {
  const out = execFileSync('npm', ['exec', '--yes', `--package=${CLAUDE_CODE}`, '-c', 'command -v claude'], {
    cwd: tmpdir(),
    encoding: 'utf8',
    timeout: 600_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const path = out.trim().split('\n').at(-1);
  assert.ok(path, `npm exec found no claude: ${out}`);
  return path;
}

describe(`Claude Code (${CLAUDE_CODE}): claude mcp add folder -- npx -y file:/.../folder-mcp-<version>.tgz DIR, claude mcp list`, () => {
  const project = tempDir('folder-mcp-claude-project-');
  const home = tempDir('folder-mcp-claude-home-');
  const folder = tempDir('folder-mcp-claude-docs-');
  let claude: string;
  let packed: Packed;
  let env: Record<string, string>;

  before(() => {
    claude = claudeBinary();
    packed = pack(project.path);
    writeTree(folder.path, { 'notes/plan.md': '# Plan\nThe quokka migration starts in spring.\n' });
    env = userEnv(home.path, newerNode(), {
      CLAUDE_CONFIG_DIR: join(home.path, '.claude'),
      DISABLE_AUTOUPDATER: '1',
      // No telemetry, error reports or update checks: nothing but the MCP server is started.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      // How long the CLI waits for a server to start (30 s by default; it honours up to 60 s): a cold npx install.
      MCP_TIMEOUT: '60000',
    });
  });

  after(() => {
    for (const dir of [project, home, folder]) dir.cleanup();
  });

  /** One CLI call in the project folder, as a user types it there. */
  function run(args: string[]) {
    const result = spawnSync(claude, args, { cwd: project.path, env, encoding: 'utf8', timeout: CLI_MS, killSignal: 'SIGKILL', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.equal(result.error, undefined, `claude ${args.join(' ')}: ${result.error?.message}`);
    assert.equal(result.status, 0, `claude ${args.join(' ')} exited ${result.status}:\n${result.stdout}${result.stderr}`);
    return result.stdout;
  }

  test('mcp add, then mcp list prints the server connected', (t) => {
    t.diagnostic(run(['--version']).trim());
    const added = run(['mcp', 'add', 'folder', '--', 'npx', '-y', `file:${packed.path}`, folder.path]);
    assert.match(added, /Added stdio MCP server folder/);
    const listed = run(['mcp', 'list']);
    t.diagnostic(`claude mcp list:\n${listed.trim()}`);
    // `mcp list` exits 0 whatever the servers did; its line for each says how the health check went.
    const line = listed.split('\n').find((l) => l.startsWith('folder: '));
    assert.ok(line, `no line for folder in:\n${listed}`);
    assert.match(line, / - ✔ Connected$/, listed);
  });
});
