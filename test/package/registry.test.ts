// The MCP Registry entry, server.json (scripts/registry-entry.ts): the kept
// schema is the published one, the committed entry agrees with package.json
// and manifest.json and cannot be published before the release fills in the
// bundle's hash, and the validation refuses what the registry would refuse.
// The release's own steps are rehearsed in bundle.test.ts (the entry for a
// built bundle, reusing the bundle that file builds) and release.test.ts.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  SCHEMA_PATH,
  SHA256_PLACEHOLDER,
  checkCommitted,
  driftOf,
  fillEntry,
  readSources,
  validateEntry,
  type PackageEntry,
  type ServerEntry,
  type Sources,
} from '../../scripts/registry-entry.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const A_HASH = 'fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce';

function packageOf(entry: ServerEntry, registryType: string): PackageEntry {
  const found = entry.packages?.find((p) => p.registryType === registryType);
  assert.ok(found, `server.json has no ${registryType} package`);
  return found;
}

/** The committed entry with a hash filled in, as the release writes it, for each case to break one way. */
function filled(): ServerEntry {
  return fillEntry(structuredClone(readSources().entry), A_HASH);
}

test('the kept schema is the published 2025-12-11 one, unedited (the hash schemas/README.md names), and server.json names it', () => {
  const text = readFileSync(SCHEMA_PATH);
  const recorded = /SHA-256: ([a-f0-9]{64})/.exec(readFileSync(join(ROOT, 'schemas', 'README.md'), 'utf8'))?.[1];
  assert.equal(createHash('sha256').update(text).digest('hex'), recorded);
  const schema = JSON.parse(text.toString('utf8')) as { $id: string };
  assert.equal(schema.$id, 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json');
  assert.equal(readSources().entry.$schema, schema.$id);
});

test('the committed server.json agrees with package.json and manifest.json (the check `npm run checks` runs)', () => {
  assert.deepEqual(checkCommitted(readSources()), []);
  const { pkg, entry } = readSources();
  assert.equal(pkg.mcpName, 'io.github.folder-mcp/folder-mcp');
  assert.equal(entry.name, pkg.mcpName);
});

test('the committed server.json cannot be published as it is: the schema refuses the placeholder where the hash goes', () => {
  const { entry } = readSources();
  const index = entry.packages?.findIndex((p) => p.registryType === 'mcpb');
  assert.equal(packageOf(entry, 'mcpb').fileSha256, SHA256_PLACEHOLDER);
  assert.deepEqual(validateEntry(entry), [`/packages/${index}/fileSha256 must match pattern "^[a-f0-9]{64}$"`]);
});

test('the entry tells a client to pass folders: the npm package takes one or more folder paths', () => {
  const npm = packageOf(readSources().entry, 'npm');
  assert.equal(npm.runtimeHint, 'npx');
  assert.deepEqual(npm.transport, { type: 'stdio' });
  assert.deepEqual(
    (npm.packageArguments as Record<string, unknown>[]).map(({ type, valueHint, format, isRequired, isRepeated }) => ({ type, valueHint, format, isRequired, isRepeated })),
    [{ type: 'positional', valueHint: 'folder', format: 'filepath', isRequired: true, isRepeated: true }],
  );
});

test('the filled-in entry is valid', () => {
  assert.deepEqual(validateEntry(filled()), []);
});

/** One way to break the filled-in entry each, and what the validation must say. */
const REFUSED: [string, (entry: ServerEntry) => void, RegExp][] = [
  [
    'a field in the snake_case of the schemas before 2025-09-16',
    (e) => {
      const npm = packageOf(e, 'npm');
      npm.registry_type = npm.registryType;
      delete (npm as Partial<PackageEntry>).registryType;
    },
    /^\/packages\/0 must have required property 'registryType'$/,
  ],
  ['no description', (e) => delete e.description, /^\/ must have required property 'description'$/],
  ['a description past 100 characters', (e) => (e.description = 'x'.repeat(101)), /^\/description must NOT have more than 100 characters$/],
  ['a name with no namespace', (e) => (e.name = 'folder-mcp'), /^\/name must match pattern/],
  ['a package version "latest"', (e) => (packageOf(e, 'npm').version = 'latest'), /^\/packages\/0\/version must NOT be valid$/],
  ['a hash in capitals', (e) => (packageOf(e, 'mcpb').fileSha256 = A_HASH.toUpperCase()), /^\/packages\/1\/fileSha256 must match pattern/],
  ['no hash on the bundle', (e) => delete packageOf(e, 'mcpb').fileSha256, /^\/packages\/1 an mcpb package needs fileSha256$/],
  ['a transport the schema does not have', (e) => (packageOf(e, 'npm').transport = { type: 'pipe' }), /^\/packages\/0\/transport\/type must be equal to one of the allowed values \(stdio\)$/],
  [
    'a folder argument with neither valueHint nor value',
    (e) => delete (packageOf(e, 'npm').packageArguments as Record<string, unknown>[])[0]!.valueHint,
    /^\/packages\/0\/packageArguments\/0 must have required property 'valueHint'$/,
  ],
  ['a repository URL that is not a URL', (e) => (e.repository = { url: 'folder-mcp/folder-mcp', source: 'github' }), /^\/repository\/url must match format "uri"$/],
  ['a bundle outside GitHub releases', (e) => (packageOf(e, 'mcpb').identifier = 'https://example.com/folder-mcp-0.1.0.mcpb'), /^\/packages\/1\/identifier must be a GitHub release asset/],
  ['a bundle URL without "mcp"', (e) => (packageOf(e, 'mcpb').identifier = 'https://github.com/o/r/releases/download/v1/x.zip'), /^\/packages\/1\/identifier must contain "mcp"$/],
  ['an npm mirror', (e) => (packageOf(e, 'npm').registryBaseUrl = 'https://registry.npmmirror.com'), /^\/packages\/0\/registryBaseUrl must be https:\/\/registry\.npmjs\.org$/],
];

for (const [what, breakIt, expected] of REFUSED) {
  test(`refused: ${what}`, () => {
    const entry = filled();
    breakIt(entry);
    const problems = validateEntry(entry);
    assert.ok(problems.some((p) => expected.test(p)), `expected ${expected} among:\n${problems.join('\n')}`);
  });
}

/** One way for the three files to drift each, and what the check must say. */
const DRIFTS: [string, (s: Sources) => void, string[]][] = [
  ['manifest.json bumped alone', (s) => (s.manifest.version = '0.1.1'), ['manifest.json version is "0.1.1", expected "0.1.0"']],
  [
    'package.json bumped alone',
    (s) => (s.pkg.version = '0.2.0'),
    [
      'manifest.json version is "0.1.0", expected "0.2.0"',
      'server.json version is "0.1.0", expected "0.2.0"',
      'server.json npm package version is "0.1.0", expected "0.2.0"',
      'server.json mcpb package identifier is "https://github.com/folder-mcp/folder-mcp/releases/download/v0.1.0/folder-mcp-0.1.0.mcpb", expected "https://github.com/folder-mcp/folder-mcp/releases/download/v0.2.0/folder-mcp-0.2.0.mcpb"',
      'server.json mcpb package version is "0.1.0", expected "0.2.0"',
    ],
  ],
  ['server.json npm package version', (s) => (packageOf(s.entry, 'npm').version = '0.0.9'), ['server.json npm package version is "0.0.9", expected "0.1.0"']],
  ['mcpName', (s) => (s.pkg.mcpName = 'io.github.someone/folder-mcp'), ['package.json mcpName (the registry checks it against the npm package) is "io.github.someone/folder-mcp", expected "io.github.folder-mcp/folder-mcp"']],
  [
    'package.json repository',
    (s) => (s.pkg.repository = { url: 'git+https://github.com/someone/folder-mcp.git' }),
    ['package.json repository.url (npm provenance checks it against the repository that builds) is "https://github.com/someone/folder-mcp", expected "https://github.com/folder-mcp/folder-mcp"'],
  ],
];

for (const [what, drift, expected] of DRIFTS) {
  test(`drift caught: ${what}`, () => {
    const sources = structuredClone(readSources());
    assert.deepEqual(driftOf(sources), []);
    drift(sources);
    assert.deepEqual(driftOf(sources), expected);
  });
}

test('a committed hash is refused too: only the release writes one', () => {
  const sources = structuredClone(readSources());
  packageOf(sources.entry, 'mcpb').fileSha256 = A_HASH;
  assert.deepEqual(checkCommitted(sources), [`server.json mcpb fileSha256 is "${A_HASH}", expected the placeholder ${JSON.stringify(SHA256_PLACEHOLDER)}`]);
});
