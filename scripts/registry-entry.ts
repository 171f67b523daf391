/**
 * The MCP Registry entry: `server.json` at the root names the npm package and
 * the release's `.mcpb`, and this script keeps it true.
 *
 * The bundle's SHA-256 is known only once the release has built it (a zip
 * holds its files' times, so two builds differ), so the committed server.json
 * carries a placeholder there that the schema's `^[a-f0-9]{64}$` rejects, as
 * the registry's publish API does (its model declares the same pattern), so
 * an entry that was never filled in cannot be published. The release fills
 * it in (below) and publishes that copy; the committed file is never edited.
 *
 *   node --import tsx scripts/registry-entry.ts --check
 *     (`npm run checks`) the committed server.json against package.json and
 *     manifest.json: one version everywhere (server.json's own, the npm
 *     package's, the bundle's and its download URL), `mcpName` and
 *     `repository` as server.json says, and valid against the kept schema
 *     once a hash is filled in. Exit 1 on any drift.
 *   node --import tsx scripts/registry-entry.ts BUNDLE [--out FILE]
 *     (the release, `.github/workflows/release.yml`) the same checks, then
 *     writes FILE (default build/server.json): server.json with BUNDLE's
 *     SHA-256, validated against the kept schema and the registry's own rules
 *     for an npm and an mcpb package; and BUNDLE.sha256 beside BUNDLE, in
 *     `sha256sum` format, to attach to the release. Exit 1 if anything fails.
 */
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bundleFileName } from './bundle.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The kept copy of the registry's schema (schemas/README.md says where it came from). */
export const SCHEMA_PATH = join(ROOT, 'schemas', 'server.schema.json');

/** What the committed server.json holds where the bundle's SHA-256 goes; the release replaces it. */
export const SHA256_PLACEHOLDER = 'written at release by scripts/registry-entry.ts: the SHA-256 of this .mcpb';

/** The only npm registry the official MCP Registry accepts (official-registry-requirements.md). */
const NPM_REGISTRY = 'https://registry.npmjs.org';

export interface PackageEntry {
  registryType: string;
  identifier: string;
  version?: string;
  registryBaseUrl?: string;
  fileSha256?: string;
  [key: string]: unknown;
}

export interface ServerEntry {
  $schema: string;
  name: string;
  version: string;
  repository?: { url: string; source: string };
  packages?: PackageEntry[];
  [key: string]: unknown;
}

/** The parts of package.json the entry must agree with. */
export interface PackageJson {
  name: string;
  version: string;
  mcpName?: string;
  repository?: { url?: string } | string;
}

/** The three files whose versions and names must agree. */
export interface Sources {
  pkg: PackageJson;
  manifest: { version: string };
  entry: ServerEntry;
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

export function readSources(root = ROOT): Sources {
  return {
    pkg: readJson<PackageJson>(join(root, 'package.json')),
    manifest: readJson<{ version: string }>(join(root, 'manifest.json')),
    entry: readJson<ServerEntry>(join(root, 'server.json')),
  };
}

/** Where the release puts the bundle: a GitHub release asset, the only kind (with GitLab's) the registry takes. */
export function bundleUrl(repositoryUrl: string, version: string): string {
  return `${repositoryUrl.replace(/\/+$/, '')}/releases/download/v${version}/${bundleFileName(version)}`;
}

/** package.json's repository as a plain https URL (npm writes `git+https://...git`). */
function repositoryUrlOf(pkg: PackageJson): string | undefined {
  const url = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  return url?.replace(/^git\+/, '').replace(/\.git$/, '');
}

function packageOf(entry: ServerEntry, registryType: string): PackageEntry | undefined {
  return entry.packages?.find((p) => p.registryType === registryType);
}

/**
 * What disagrees between package.json, manifest.json and server.json, one
 * line each; empty when they agree. package.json's version is the one the
 * others must carry: npm publishes it, and the bundle's manifest is written
 * from it (scripts/bundle.ts).
 */
export function driftOf({ pkg, manifest, entry }: Sources): string[] {
  const problems: string[] = [];
  const expect = (what: string, actual: unknown, expected: unknown) => {
    if (actual !== expected) problems.push(`${what} is ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
  };
  const { version } = pkg;
  expect('manifest.json version', manifest.version, version);
  expect('server.json version', entry.version, version);
  expect('package.json mcpName (the registry checks it against the npm package)', pkg.mcpName, entry.name);
  expect('package.json repository.url (npm provenance checks it against the repository that builds)', repositoryUrlOf(pkg), entry.repository?.url);

  const npm = packageOf(entry, 'npm');
  if (!npm) problems.push('server.json has no npm package');
  else {
    expect('server.json npm package identifier', npm.identifier, pkg.name);
    expect('server.json npm package version', npm.version, version);
  }
  const mcpb = packageOf(entry, 'mcpb');
  if (!mcpb) problems.push('server.json has no mcpb package');
  else {
    if (entry.repository) expect('server.json mcpb package identifier', mcpb.identifier, bundleUrl(entry.repository.url, version));
    if (mcpb.version !== undefined) expect('server.json mcpb package version', mcpb.version, version);
  }
  return problems;
}

let compiled: ReturnType<Ajv['compile']> | undefined;

/** The kept schema, compiled once: draft-07, with `format` checked (uri) and its `example` annotations allowed. */
function schemaValidator(): ReturnType<Ajv['compile']> {
  if (compiled) return compiled;
  // Strict mode stays on, so a keyword Ajv does not know fails here instead of being skipped silently;
  // `example` (singular, from OpenAPI) is the one annotation the schema uses that JSON Schema does not define.
  const ajv = new Ajv({ allErrors: true, keywords: ['example'] });
  // ajv-formats is CommonJS: under NodeNext a default import is its module.exports, whose `default` is the plugin.
  addFormatsPlugin.default(ajv);
  compiled = ajv.compile(readJson(SCHEMA_PATH));
  return compiled;
}

function describeError(error: ErrorObject): string {
  return `${error.instancePath || '/'} ${error.message ?? error.keyword}${error.params && 'allowedValues' in error.params ? ` (${(error.params.allowedValues as unknown[]).join(', ')})` : ''}`;
}

/**
 * Why the registry would refuse `entry`, one line each; empty when it would
 * take it (as far as can be told offline): the kept schema, then the rules
 * the registry adds for our two kinds of package (registries/npm.go and
 * mcpb.go in modelcontextprotocol/registry). What needs the network, the npm
 * package's `mcpName` and the bundle's URL answering, is checked by
 * `mcp-publisher publish` itself.
 */
export function validateEntry(entry: unknown): string[] {
  const validate = schemaValidator();
  const problems = validate(entry) ? [] : (validate.errors ?? []).map(describeError);
  const server = entry as ServerEntry;
  for (const [i, p] of (server.packages ?? []).entries()) {
    const where = `/packages/${i}`;
    if (p.registryType === 'npm' && p.registryBaseUrl !== undefined && p.registryBaseUrl !== NPM_REGISTRY) {
      problems.push(`${where}/registryBaseUrl must be ${NPM_REGISTRY}`);
    }
    if (p.registryType === 'mcpb') {
      if (p.fileSha256 === undefined) problems.push(`${where} an mcpb package needs fileSha256`);
      if (p.registryBaseUrl !== undefined) problems.push(`${where}/registryBaseUrl is not allowed on an mcpb package (the identifier is the URL)`);
      const url = URL.canParse(p.identifier) ? new URL(p.identifier) : undefined;
      if (!url || url.protocol !== 'https:' || url.hostname !== 'github.com' || !/^\/[^/]+\/[^/]+\/releases\/download\/[^/]+\/[^/]+$/.test(url.pathname)) {
        problems.push(`${where}/identifier must be a GitHub release asset (https://github.com/OWNER/REPO/releases/download/TAG/FILE)`);
      }
      if (!p.identifier.toLowerCase().includes('mcp')) problems.push(`${where}/identifier must contain "mcp"`);
    }
  }
  return problems;
}

/** `entry` with `sha256` as its mcpb package's fileSha256 (a copy; `entry` is left as it was). */
export function fillEntry(entry: ServerEntry, sha256: string): ServerEntry {
  if (!packageOf(entry, 'mcpb')) throw new Error('server.json has no mcpb package to fill in');
  return { ...entry, packages: entry.packages?.map((p) => (p.registryType === 'mcpb' ? { ...p, fileSha256: sha256 } : p)) };
}

export async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The committed server.json: no drift, the placeholder in place, and valid once a hash is filled in. */
export function checkCommitted(sources: Sources): string[] {
  const problems = driftOf(sources);
  const sha = packageOf(sources.entry, 'mcpb')?.fileSha256;
  if (sha !== SHA256_PLACEHOLDER) {
    // A real-looking hash here would be published as it is if the release step were skipped: only the release writes one.
    problems.push(`server.json mcpb fileSha256 is ${JSON.stringify(sha)}, expected the placeholder ${JSON.stringify(SHA256_PLACEHOLDER)}`);
  }
  if (packageOf(sources.entry, 'mcpb')) problems.push(...validateEntry(fillEntry(sources.entry, '0'.repeat(64))));
  return problems;
}

/** The release's entry for `bundle`: checks the sources, fills in the hash, validates. Throws with every problem. */
export async function releaseEntry(sources: Sources, bundle: string): Promise<{ entry: ServerEntry; sha256: string }> {
  const problems = checkCommitted(sources);
  if (basename(bundle) !== bundleFileName(sources.pkg.version)) {
    problems.push(`the bundle is ${basename(bundle)}, expected ${bundleFileName(sources.pkg.version)} (package.json's version)`);
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  const sha256 = await sha256Of(bundle);
  const entry = fillEntry(sources.entry, sha256);
  const invalid = validateEntry(entry);
  if (invalid.length > 0) throw new Error(invalid.join('\n'));
  return { entry, sha256 };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { check: { type: 'boolean' }, out: { type: 'string' } } });
  const sources = readSources();
  if (values.check) {
    const problems = checkCommitted(sources);
    for (const problem of problems) console.error(`server.json: ${problem}`);
    if (problems.length > 0) throw new Error(`${problems.length} problem(s); see docs/install.md#mcp-registry`);
    console.log(`server.json: ${sources.entry.name} ${sources.entry.version}, as package.json and manifest.json say; valid against ${relative(ROOT, SCHEMA_PATH)} once the release fills in the bundle's SHA-256`);
    return;
  }
  const [bundle] = positionals;
  if (!bundle || positionals.length > 1) throw new Error('usage: registry-entry.ts --check | registry-entry.ts BUNDLE [--out FILE]');
  const { entry, sha256 } = await releaseEntry(sources, resolve(bundle));
  const out = resolve(values.out ?? join(ROOT, 'build', 'server.json'));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(entry, null, 2)}\n`);
  writeFileSync(`${resolve(bundle)}.sha256`, `${sha256}  ${basename(bundle)}\n`);
  console.log(`registry entry: ${relative(process.cwd(), out)} (${entry.name} ${entry.version}, bundle SHA-256 ${sha256}); ${relative(process.cwd(), resolve(bundle))}.sha256`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  main().catch((error: unknown) => {
    console.error(`registry-entry: ${(error as Error).message}`);
    process.exitCode = 1;
  });
}
