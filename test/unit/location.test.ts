import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { defaultDbPath, indexFolderExcludes, isInsideRoots, privateTempDir, realPathOf, userCacheDir } from '../../src/index/location.ts';
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

  test('another path to a root that its text does not show (a bind mount): inside, by the identity of a folder above the index', () => {
    // /mnt/alias is /srv/served mounted again; /mnt/other is another folder. realpath shows neither.
    const ids: Record<string, string> = { '/srv/served': '8:100', '/mnt/alias': '8:100', '/mnt/alias/sub': '8:101', '/mnt/other': '8:200', '/mnt': '8:2', '/': '8:1' };
    const identity = (path: string) => ids[path] ?? null;
    const realpath = (path: string) => {
      if (!(path in ids)) throw new Error('ENOENT');
      return path;
    };
    assert.equal(isInsideRoots('/mnt/alias/idx.db', ['/srv/served'], realpath, identity), true);
    assert.equal(isInsideRoots('/mnt/alias/sub/deeper/idx.db', ['/srv/served'], realpath, identity), true);
    assert.equal(isInsideRoots('/mnt/other/idx.db', ['/srv/served'], realpath, identity), false);
    assert.equal(isInsideRoots('/mnt/idx.db', ['/srv/served'], realpath, identity), false);
    // A root that cannot be looked at has no identity to match.
    assert.equal(isInsideRoots('/mnt/other/idx.db', ['/gone'], realpath, identity), false);
  });

  test('a relative XDG_CACHE_HOME is ignored, as the XDG spec asks (a literal ~/.cache made ./~/.cache)', () => {
    assert.equal(userCacheDir({ XDG_CACHE_HOME: '~/.cache' }, 'linux'), join(homedir(), '.cache'));
    assert.equal(userCacheDir({ XDG_CACHE_HOME: 'cache' }, 'darwin'), join(homedir(), 'Library', 'Caches'));
    assert.equal(userCacheDir({ XDG_CACHE_HOME: join(t.path, 'c') }, 'linux'), join(t.path, 'c'));
  });

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
    assert.equal(readFileSync(`${db}.lock`, 'utf8'), `folder-mcp ${process.pid}`);
    if (first.acquired) first.release();
    writeFileSync(`${db}.lock`, '424242'); // another server
    assert.deepEqual(acquireDbLock(db, () => true), { acquired: false, heldBy: 424242 });
    const third = acquireDbLock(db, () => false); // that server died
    assert.equal(third.acquired, true);
    if (third.acquired) third.release();
    assert.throws(() => readFileSync(`${db}.lock`), /ENOENT/, 'release removes the lock');
  });

  test("a file of the lock's name that is not a lock (a project's Cargo.lock, for --db Cargo) is never deleted", () => {
    const db = join(t.path, 'Cargo');
    const cargo = '# This file is automatically @generated by Cargo.\nversion = 3\n';
    writeFileSync(`${db}.lock`, cargo);
    assert.deepEqual(acquireDbLock(db, () => false), { acquired: false, heldBy: Number.NaN, foreign: true });
    assert.equal(readFileSync(`${db}.lock`, 'utf8'), cargo);
    // Digits, but more than a pid has: not a lock either.
    writeFileSync(`${db}.lock`, '1'.repeat(40));
    assert.equal(acquireDbLock(db, () => false).acquired, false);
    assert.equal(readFileSync(`${db}.lock`, 'utf8'), '1'.repeat(40));
    // A pid alone, as servers before the mark wrote it, and as any program's pid file holds: while a process that
    // is not folder-mcp runs with it, a running program's (`--db run/mydaemon`), never deleted; with no such
    // process, a stale lock, taken over.
    writeFileSync(`${db}.lock`, '424242');
    assert.deepEqual(acquireDbLock(db, () => false, () => true), { acquired: false, heldBy: Number.NaN, foreign: true });
    assert.equal(readFileSync(`${db}.lock`, 'utf8'), '424242');
    // ... unless the caller knows it for ours (our own cache folder, or an index of ours beside it): an upgrade
    // after a crash, the old server's pid since taken by another program.
    const upgraded = acquireDbLock(db, () => false, () => true, () => true);
    assert.equal(upgraded.acquired, true);
    if (upgraded.acquired) upgraded.release();
    writeFileSync(`${db}.lock`, '424242');
    const stale = acquireDbLock(db, () => false, () => false);
    assert.equal(stale.acquired, true);
    if (stale.acquired) stale.release();
    // What a server that died before writing its pid leaves: empty, and taken over.
    writeFileSync(`${db}.lock`, '');
    const taken = acquireDbLock(db, () => false);
    assert.equal(taken.acquired, true);
    if (taken.acquired) taken.release();
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
