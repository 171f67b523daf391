import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { defaultDbPath, indexFolderExcludes, isInsideRoots, privateTempDir, realPathOf } from '../../src/index/location.ts';
import { acquireDbLock } from '../../src/index/lock.ts';
import { tempDir } from '../basics.ts';

describe('index location, by real paths', () => {
  let t: ReturnType<typeof tempDir>;
  let root: string;
  before(() => {
    t = tempDir();
    root = join(t.path, 'served');
    mkdirSync(join(root, 'inner'), { recursive: true });
    mkdirSync(join(t.path, 'outside'));
    symlinkSync(join(root, 'inner'), join(t.path, 'link-in')); // a folder outside that leads inside
    symlinkSync(join(t.path, 'outside'), join(t.path, 'link-out'));
  });
  after(() => t.cleanup());

  test('realPathOf resolves the nearest existing ancestor and keeps the rest', () => {
    assert.equal(realPathOf(join(t.path, 'link-in', 'x.db')), join(root, 'inner', 'x.db'));
    assert.equal(realPathOf(join(t.path, 'link-in', 'new', 'deeper', 'x.db')), join(root, 'inner', 'new', 'deeper', 'x.db'));
  });

  const rows: Array<[string, string, boolean]> = [
    ['inside by text', 'served/x.db', true],
    ['a sibling with the same prefix', 'served-secrets/x.db', false],
    ['through a link that resolves inside', 'link-in/x.db', true],
    ['through a link, in a folder not made yet', 'link-in/a/b/x.db', true],
    ['through a link that resolves outside', 'link-out/x.db', false],
    ['outside', 'outside/x.db', false],
    ['the root itself', 'served', true],
  ];
  for (const [why, rel, inside] of rows) {
    test(why, () => assert.equal(isInsideRoots(join(t.path, rel), [root]), inside));
  }
  test(':memory: is never inside', () => assert.equal(isInsideRoots(':memory:', [root]), false));

  test('serving the home folder: the cache dir is inside it, so a private temp dir is used', () => {
    const home = join(t.path, 'home');
    mkdirSync(join(home, '.cache'), { recursive: true });
    const tmp = join(t.path, 'tmp');
    mkdirSync(tmp);
    const path = defaultDbPath([home], { exclude: [], gitignore: true }, { XDG_CACHE_HOME: join(home, '.cache') }, () => privateTempDir(tmp));
    assert.ok(path.startsWith(join(tmp, `folder-mcp-${process.getuid!()}`)), path);
    assert.equal(isInsideRoots(path, [home]), false);
  });

  test('a private temp dir someone else prepared (a link, or open to others) is refused', () => {
    const tmp = join(t.path, 'tmp-hostile');
    mkdirSync(tmp);
    symlinkSync(join(t.path, 'outside'), join(tmp, `folder-mcp-${process.getuid!()}`));
    assert.equal(privateTempDir(tmp), null);
    const tmp2 = join(t.path, 'tmp-open');
    mkdirSync(join(tmp2, `folder-mcp-${process.getuid!()}`), { recursive: true });
    chmodSync(join(tmp2, `folder-mcp-${process.getuid!()}`), 0o777);
    assert.equal(privateTempDir(tmp2), null);
    const home = join(t.path, 'home2');
    mkdirSync(home);
    assert.equal(defaultDbPath([home], { exclude: [], gitignore: true }, { XDG_CACHE_HOME: join(home, 'c') }, () => privateTempDir(tmp)), ':memory:');
  });
});

describe('one server per index file', () => {
  let t: ReturnType<typeof tempDir>;
  before(() => (t = tempDir()));
  after(() => t.cleanup());

  test('a second taker is told who holds it while that process lives; a dead holder is taken over', () => {
    const db = join(t.path, 'i.db');
    const first = acquireDbLock(db);
    assert.equal(first.acquired, true);
    assert.equal(readFileSync(`${db}.lock`, 'utf8'), String(process.pid));
    if (first.acquired) first.release();
    writeFileSync(`${db}.lock`, '424242'); // another server
    assert.deepEqual(acquireDbLock(db, () => true), { acquired: false, heldBy: 424242 });
    const third = acquireDbLock(db, () => false); // that server died
    assert.equal(third.acquired, true);
    if (third.acquired) third.release();
    assert.throws(() => readFileSync(`${db}.lock`), /ENOENT/, 'release removes the lock');
  });
});

describe('indexFolderExcludes: the index folders inside a served root, as anchored patterns (pure)', () => {
  const same = (path: string) => path;
  const folders = ['/home/me/.cache/folder-mcp', '/tmp/folder-mcp-0'];
  const cases: Array<[string[], string[]]> = [
    [['/home/me'], ['/.cache/folder-mcp/']],
    [['/home/me/project'], []],
    [['/tmp'], ['/folder-mcp-0/']],
    [['/home', '/tmp'], ['/me/.cache/folder-mcp/', '/folder-mcp-0/']],
    [['/home/me/.cache/folder-mcp'], []],
  ];
  for (const [roots, expected] of cases) {
    test(roots.join(', '), () => assert.deepEqual(indexFolderExcludes(roots, folders, same), expected));
  }
  test('a gitignore character in the path is escaped', () => {
    assert.deepEqual(indexFolderExcludes(['/r'], ['/r/we[i]rd #1/folder-mcp'], same), ['/we\\[i\\]rd \\#1/folder-mcp/']);
  });
});
