// What the package tests share: the tarball `npm pack` makes, and the
// environment of a user who runs it (a HOME of their own, so an npm cache
// and an ~/.npmrc of their own, and the Node.js they chose first on PATH).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Packed {
  /** The tarball's path. */
  path: string;
  /** Its file name (`folder-mcp-0.1.0.tgz`). */
  file: string;
  /** Bytes, packed and unpacked, as npm counts them. */
  size: number;
  unpackedSize: number;
}

/** `npm pack` of the repository's dist/ as built (no scripts run) into `dir`. */
export function pack(dir: string): Packed {
  const result = spawnSync('npm', ['pack', '--json', '--pack-destination', dir, '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
  const [info] = JSON.parse(result.stdout) as { filename: string; size: number; unpackedSize: number }[];
  assert.ok(info, `npm pack printed no tarball: ${result.stdout}`);
  return { path: join(dir, info.filename), file: info.filename, size: info.size, unpackedSize: info.unpackedSize };
}

/**
 * A user's environment for npm, npx and what they start: this one (its proxy and CA settings reach the registry
 * as the user's would), with HOME of its own (an empty ~/.npm, no ~/.npmrc), `node`'s folder first on PATH (npm,
 * npx and the bin they link all run on it), and nothing of this test run's npm or test runner: `npm run` exports
 * its whole configuration as npm_config_* (this machine's cache and nodedir among them) and puts the repository's
 * node_modules/.bin on PATH, none of which a user's shell has.
 */
export function userEnv(home: string, node: string, extra: Record<string, string> = {}): Record<string, string> {
  const inherited = Object.entries(process.env).filter(
    (entry): entry is [string, string] => entry[1] !== undefined && !/^npm_/i.test(entry[0]) && !entry[0].startsWith('NODE_TEST'),
  );
  const path = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '' && !dir.includes('node_modules'));
  const env: Record<string, string> = {
    ...Object.fromEntries(inherited),
    HOME: home,
    PATH: [dirname(node), ...path].join(delimiter),
    XDG_CACHE_HOME: join(home, '.cache'),
    // npm's once-a-day registry look-up for a newer npm, and its notice on stderr: not what is measured.
    npm_config_update_notifier: 'false',
    ...extra,
  };
  // The headers beside the binary (a distribution's Node.js has them, /usr/include/node; the npm package `node` has
  // none): node-gyp compiles better-sqlite3 against them instead of fetching them from nodejs.org, so an install
  // needs the npm registry only. Without them that compile fails, and npm leaves the optional package out.
  const prefix = dirname(dirname(node));
  if (existsSync(join(prefix, 'include', 'node', 'node.h'))) env.npm_config_nodedir = prefix;
  return env;
}
