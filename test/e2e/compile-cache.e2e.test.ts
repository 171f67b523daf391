// The bin turns on Node's compile cache in folder-mcp's own cache folder
// (scripts/build.mjs, BIN), private, and never inside a folder named on the
// command line, nor with none named (the client's roots). Node 20 has no
// compile cache: nothing is made there.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import module from 'node:module';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CLI, tempDir } from '../helpers.ts';

const HAS_CACHE = typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function';

function start(args: string[], cacheHome: string): void {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: cacheHome };
  delete env.NODE_COMPILE_CACHE;
  delete env.NODE_DISABLE_COMPILE_CACHE;
  const result = spawnSync(process.execPath, [CLI, ...args, '--version'], { env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(result.status, 0, result.stderr);
}

describe('the compile cache', () => {
  const dir = tempDir();
  after(dir.cleanup);

  test(HAS_CACHE ? 'is kept beside the index, private' : 'is not made on a Node without one', () => {
    const cacheHome = join(dir.path, 'cache');
    const elsewhere = join(dir.path, 'elsewhere');
    mkdirSync(elsewhere);
    start([elsewhere], cacheHome);
    const cache = join(cacheHome, 'folder-mcp', 'compile-cache');
    assert.equal(existsSync(cache), HAS_CACHE);
    if (!HAS_CACHE) return;
    assert.equal(statSync(cache).mode & 0o077, 0, 'the compile cache is open to others');
    assert.ok(readdirSync(cache).length > 0, 'nothing was cached');
  });

  test('is never written inside a folder named on the command line', () => {
    const served = join(dir.path, 'served');
    mkdirSync(served);
    start([served], join(served, '.cache'));
    assert.deepEqual(readdirSync(served), []);
  });

  test('nor inside one reached through a symlink: the cache folder is judged by its real path, before it is made', () => {
    const served = join(dir.path, 'served-by-link');
    mkdirSync(served);
    const cacheHome = join(dir.path, 'linked-cache');
    mkdirSync(cacheHome);
    symlinkSync(served, join(cacheHome, 'folder-mcp'));
    start([served], cacheHome);
    assert.deepEqual(readdirSync(served), []);
  });

  test("nor with no folder on the command line: the client's roots, which may hold it, are not known yet", () => {
    const cacheHome = join(dir.path, 'roots-cache');
    start([], cacheHome);
    assert.equal(existsSync(join(cacheHome, 'folder-mcp')), false);
  });
});
