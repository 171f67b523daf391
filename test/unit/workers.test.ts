// Running from the sources, the worker scripts come from the checkout's dist/:
// a missing or stale one is a loud error, not work moved to the main thread
// or done by yesterday's code. Real files in a temp checkout, mtimes set.
import assert from 'node:assert/strict';
import { rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { builtScriptUrl, freshBuiltScript, StaleBuildError, type BuiltScript } from '../../src/workers.ts';
import { tempDir, writeTree } from '../basics.ts';

const OLD = new Date('2026-01-01T00:00:00Z');
const NEW = new Date('2026-01-02T00:00:00Z');

/** A checkout in a temp dir: src/ files and dist/scan-worker.js (with or without its map), all at OLD except `newer` at NEW. */
function checkout(files: Record<string, string>, newer: string[] = []): { root: URL; path: string } {
  const dir = tempDir('folder-mcp-workers-');
  cleanups.push(dir.cleanup);
  writeTree(dir.path, files);
  for (const rel of Object.keys(files)) utimesSync(join(dir.path, rel), OLD, OLD);
  for (const rel of newer) utimesSync(join(dir.path, rel), NEW, NEW);
  return { root: pathToFileURL(dir.path + '/'), path: dir.path };
}
const cleanups: (() => void)[] = [];
after(() => cleanups.forEach((cleanup) => cleanup()));

const MAP = JSON.stringify({ version: 3, sources: ['../src/index/scan-worker.ts', '../src/keys.ts', '../node_modules/ignore/index.js'], mappings: '' });
const TREE = {
  'src/index/scan-worker.ts': '',
  'src/keys.ts': '',
  'src/http/serve.ts': '',
  'node_modules/ignore/index.js': '',
  'dist/scan-worker.js': '',
  'dist/scan-worker.js.map': MAP,
};

function staleMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof StaleBuildError, `a StaleBuildError, not ${String(error)}`);
    return error.message;
  }
  assert.fail('no error: the stale build would have run');
}

describe('the built worker scripts, from a dev checkout', () => {
  test('a build newer than every source it names is used', () => {
    const { root } = checkout(TREE, ['dist/scan-worker.js']);
    assert.equal(freshBuiltScript('scan-worker', root).href, new URL('dist/scan-worker.js', root).href);
  });

  test('a build as old as its sources is used (a checkout copied with its times)', () => {
    const { root } = checkout(TREE);
    assert.equal(freshBuiltScript('scan-worker', root).href, new URL('dist/scan-worker.js', root).href);
  });

  test('a missing build is an error that says to build', () => {
    const { root, path } = checkout(TREE);
    rmSync(join(path, 'dist/scan-worker.js'));
    assert.match(staleMessage(() => freshBuiltScript('scan-worker', root)), /^dist\/scan-worker\.js is missing in .*: run npm run build/);
  });

  for (const source of ['src/index/scan-worker.ts', 'src/keys.ts', 'node_modules/ignore/index.js']) {
    test(`a build older than ${source}, which its map names, is an error that names it`, () => {
      const { root } = checkout(TREE, [source]);
      assert.equal(staleMessage(() => freshBuiltScript('scan-worker', root)), `dist/scan-worker.js is older than ${source}: run npm run build (workers run the built scripts)`);
    });
  }

  test('a source the worker does not bundle may be newer', () => {
    const { root } = checkout(TREE, ['src/http/serve.ts']);
    assert.ok(freshBuiltScript('scan-worker', root));
  });

  test('a source the map names that is gone is an error', () => {
    const { root, path } = checkout(TREE, ['dist/scan-worker.js']);
    rmSync(join(path, 'src/keys.ts'));
    assert.match(staleMessage(() => freshBuiltScript('scan-worker', root)), /^dist\/scan-worker\.js was built from src\/keys\.ts, which is gone/);
  });

  test('a package\'s source the map names but the package does not ship is no error', () => {
    const map = JSON.stringify({ version: 3, sources: ['../src/keys.ts', '../node_modules/ignore/src/index.ts'], mappings: '' });
    assert.ok(freshBuiltScript('scan-worker', checkout({ ...TREE, 'dist/scan-worker.js.map': map }, ['dist/scan-worker.js']).root));
  });

  test('built without maps: any file under src/ newer than the build is an error', () => {
    const { ['dist/scan-worker.js.map']: _map, ...noMap } = TREE;
    assert.ok(freshBuiltScript('scan-worker', checkout(noMap).root));
    assert.match(staleMessage(() => freshBuiltScript('scan-worker', checkout(noMap, ['src/http/serve.ts']).root)), /is older than src\/http\/serve\.ts/);
    assert.ok(freshBuiltScript('scan-worker', checkout(noMap, ['node_modules/ignore/index.js']).root), 'only src/ is known without a map');
  });

  test('a map that is not JSON is an error, not a pass', () => {
    const { root, path } = checkout(TREE, ['dist/scan-worker.js']);
    writeFileSync(join(path, 'dist/scan-worker.js.map'), '{ not json');
    assert.throws(() => freshBuiltScript('scan-worker', root), SyntaxError);
  });

  test('this checkout: each worker is built and fresh (npm test builds first)', () => {
    for (const name of ['worker', 'search-worker', 'scan-worker'] as BuiltScript[]) {
      const url = builtScriptUrl(name);
      assert.ok(url.pathname.endsWith(`/dist/${name}.js`), url.href);
    }
  });
});
