import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { caseRename, displayPath, prefixUris, relativeGlobs, resolveWritePath, rootLabels } from '../../src/catalog/paths.ts';
import { scopeQuery } from '../../src/catalog/scope.ts';
import { matchesQuery } from '../../src/query/plan.ts';
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../basics.ts';
import { listingName } from '../../src/content/collection.ts';
import { makeRoot } from '../../src/uri.ts';

describe('rootLabels', () => {
  const rows: Array<[string[], string[], string]> = [
    [['/w/proj'], ['proj'], 'one root: its folder name'],
    [['/w/proj', '/w/notes'], ['proj', 'notes'], 'distinct names stay short'],
    [['/w/a/same', '/w/b/same'], ['same', 'same~2'], 'same names: the later one on the command line gets ~2'],
    [['/w/b/same', '/w/a/same'], ['same', 'same~2'], 'by command-line order, not by path'],
    [['/x/p', '/y/p', '/z/notes', '/q/p'], ['p', 'p~2', 'notes', 'p~3'], 'one suffix per repeat, other names untouched'],
    [['/x/same', '/y/same', '/z/same~2'], ['same', 'same~3', 'same~2'], 'a suffix another root is named is skipped'],
    [['/', '/w'], ['/', 'w'], 'the file-system root'],
    [['/w/proj', '/w/proj/sub/proj'], ['proj', 'proj~2'], 'nested roots'],
  ];
  for (const [paths, labels, why] of rows) test(why, () => assert.deepEqual(rootLabels(paths), labels));
  test('labels are unique whenever the paths are', () => {
    const paths = ['/a/x/p', '/b/x/p', '/a/y/p', '/p', '/c/p'];
    assert.equal(new Set(rootLabels(paths)).size, paths.length);
  });
});

describe('displayPath', () => {
  const one = [makeRoot('/w/proj')];
  const two = [makeRoot('/w/a/proj'), makeRoot('/w/b/proj')];
  const labelled = [makeRoot('/w/notes'), makeRoot('/w/code')];
  test('one root: the path relative to it; the root by its name', () => {
    assert.equal(displayPath({ uri: 'file:///w/proj/src/a.ts', root: 0 }, one), 'src/a.ts');
    assert.equal(displayPath({ uri: 'file:///w/proj/', root: 0 }, one), 'proj');
  });
  test('several roots: the label first', () => {
    assert.equal(displayPath({ uri: 'file:///w/b/proj/src/a.ts', root: 1 }, two), 'proj~2/src/a.ts');
    assert.equal(displayPath({ uri: 'file:///w/a/proj/', root: 0 }, two), 'proj');
    assert.equal(displayPath({ uri: 'file:///w/notes/todo.md', root: 0 }, labelled), 'notes/todo.md');
  });
  test('control characters in a name are escaped: one entry, one line', () => {
    assert.equal(displayPath({ uri: 'file:///w/proj/a%0Ab.txt', root: 0 }, one), 'a\\u000ab.txt');
    assert.equal(displayPath({ uri: 'file:///w/proj/x%1B%5B31m.txt', root: 0 }, one), 'x\\u001b[31m.txt');
  });
});

describe('listingName', () => {
  const rows: Array<[string, string]> = [
    ['plain.txt', 'plain.txt'],
    ['tab\there', 'tab\\u0009here'],
    ['new\nline', 'new\\u000aline'],
    ['esc\u001b[2J', 'esc\\u001b[2J'],
    ['del\u007f', 'del\\u007f'],
    ['c1\u0085nel', 'c1\\u0085nel'],
    ['ls\u2028ps\u2029', 'ls\\u2028ps\\u2029'],
    ['looks\\u0041like', 'looks\\u005cu0041like'],
    ['back\\slash', 'back\\slash'],
    ['café ✓', 'café ✓'],
  ];
  for (const [name, shown] of rows) test(JSON.stringify(name), () => assert.equal(listingName(name), shown));
});

describe('one path language: what tools print, every tool accepts', () => {
  const roots = [makeRoot('/w/notes'), makeRoot('/w/code'), makeRoot('/v/code')];
  const row = (uri: string) => ({ uri, name: decodeURIComponent(uri.replace(/\/$/, '').split('/').pop()!) });
  const printed = (uri: string, root: number) => displayPath({ uri, root }, roots);

  test('prefixUris: a printed prefix names its root; a relative one every root', () => {
    assert.deepEqual(prefixUris('notes/', roots), ['file:///w/notes/notes/', 'file:///w/code/notes/', 'file:///v/code/notes/', 'file:///w/notes/']);
    assert.ok(prefixUris('code~2/src', roots).includes('file:///v/code/src'));
    assert.ok(prefixUris('no', roots).includes('file:///w/notes/'), 'a prefix of a label names that whole root');
  });

  test('relativeGlobs: a first segment that matches a label applies the rest under that root', () => {
    const under = (glob: string) => relativeGlobs(glob, roots).map((g) => `${g.root.path}:${g.glob}`);
    assert.deepEqual(under('notes/*.md'), ['/w/notes:notes/*.md', '/w/code:notes/*.md', '/v/code:notes/*.md', '/w/notes:*.md']);
    assert.deepEqual(under('code*/src/**').slice(3), ['/w/code:src/**', '/v/code:src/**']);
    assert.equal(under('**/x.md').length, 3, '** is under every root already');
  });

  test('every printed path matches find\'s prefix and glob built from it', () => {
    const cases: Array<[string, number]> = [
      ['file:///w/notes/todo.md', 0],
      ['file:///w/code/src/a.ts', 1],
      ['file:///v/code/src/a.ts', 2],
      ['file:///v/code/caf%C3%A9/x%20y.md', 2],
    ];
    for (const [uri, root] of cases) {
      const path = printed(uri, root);
      const others = cases.filter(([u]) => u !== uri).map(([u]) => u);
      const byPrefix = scopeQuery({ prefix: path }, roots);
      const byGlob = scopeQuery({ glob: [path] }, roots);
      assert.ok(matchesQuery(byPrefix, row(uri)), `prefix ${path}`);
      assert.ok(matchesQuery(byGlob, row(uri)), `glob ${path}`);
      for (const other of others) assert.ok(!matchesQuery(byGlob, row(other)), `glob ${path} must not match ${other}`);
    }
  });

  test('a folder prefix and globs together, with several roots: AND-ed', () => {
    const q = scopeQuery({ prefix: 'notes/', name: ['*.md'] }, roots);
    assert.ok(matchesQuery(q, row('file:///w/notes/todo.md')));
    assert.ok(!matchesQuery(q, row('file:///w/code/todo.md')));
    const both = scopeQuery({ prefix: 'code~2/', glob: ['**/*.ts'] }, roots);
    assert.ok(matchesQuery(both, row('file:///v/code/src/a.ts')));
    assert.ok(!matchesQuery(both, row('file:///w/code/src/a.ts')));
  });
});

describe('resolveWritePath', () => {
  test('one root: relative under it, `..` out of it names nothing; URIs and absolute paths as they are', () => {
    const dir = tempDir();
    const real = realpathSync(dir.path);
    try {
      const roots = [makeRoot(real)];
      assert.equal(resolveWritePath('a/b.txt', roots)?.path, join(real, 'a/b.txt'));
      assert.equal(resolveWritePath('./a/', roots)?.path, join(real, 'a'));
      assert.equal(resolveWritePath('../x.txt', roots), undefined);
      assert.equal(resolveWritePath('/etc/passwd', roots), undefined);
      assert.equal(resolveWritePath(`file://${real}/caf%C3%A9.md`, roots)?.path, join(real, 'café.md'));
      assert.equal(resolveWritePath(`${real}/n\nl.txt`, roots)?.shown, 'n\\u000al.txt');
    } finally {
      dir.cleanup();
    }
  });

  test('several roots: the printed form, else the root where the most of the path exists; a tie is ambiguous', () => {
    const dir = tempDir();
    try {
      const a = join(realpathSync(dir.path), 'x/same');
      const b = join(realpathSync(dir.path), 'y/same');
      mkdirSync(join(a, 'docs'), { recursive: true });
      mkdirSync(join(b, 'src'), { recursive: true });
      const roots = [makeRoot(a), makeRoot(b)];
      assert.equal(resolveWritePath('same~2/new.txt', roots)?.path, join(b, 'new.txt'));
      assert.equal(resolveWritePath('same/docs/new.md', roots)?.path, join(a, 'docs/new.md'));
      assert.equal(resolveWritePath('docs/new.md', roots)?.path, join(a, 'docs/new.md'));
      assert.equal(resolveWritePath('src/new.ts', roots)?.shown, 'same~2/src/new.ts');
      assert.throws(() => resolveWritePath('new.txt', roots), /Ambiguous path new\.txt.*same\/new\.txt, same~2\/new\.txt/);
      // The label form for a new file in the first root wins over a file of that path in the second, which the
      // deeper reading would have replaced.
      mkdirSync(join(b, 'same'));
      writeFileSync(join(b, 'same/todo.md'), 'theirs\n');
      assert.deepEqual(resolveWritePath('same/todo.md', roots), { path: join(a, 'todo.md'), shown: 'same/todo.md' });
      // Its folder missing too: still the label's folder (the write then fails there), never the second root's.
      mkdirSync(join(b, 'same/nowhere'));
      assert.equal(resolveWritePath('same/nowhere/todo.md', roots)?.path, join(a, 'nowhere/todo.md'));
      // What lies behind a symlink (here: outside both roots) does not make a reading win.
      mkdirSync(join(realpathSync(dir.path), 'outside/deep'), { recursive: true });
      symlinkSync(join(realpathSync(dir.path), 'outside'), join(a, 'link'));
      assert.throws(() => resolveWritePath('link/deep/x.txt', roots), /Ambiguous path/);
    } finally {
      dir.cleanup();
    }
  });
});

describe('caseRename: a move that only changes the name\'s case, where names fold', () => {
  const from = { path: '/w/proj/docs/readme.md', shown: 'docs/readme.md' };
  // Where names fold, `to` was spelled as on disk: the source itself.
  const rows: Array<[string, NodeJS.Platform, 'posix' | 'win32', string, string, string]> = [
    ['the typed spelling is kept', 'darwin', 'posix', 'docs/README.md', '/w/proj/docs/README.md', 'docs/README.md'],
    ['on Windows too, with backslashes', 'win32', 'win32', 'docs\\Readme.md', '/w/proj/docs/Readme.md', 'docs/Readme.md'],
    ['a URI: its decoded last segment', 'darwin', 'posix', 'file:///w/proj/docs/READ%4DE.md', '/w/proj/docs/README.md', 'docs/README.md'],
    ['another name altogether: not a respelling', 'darwin', 'posix', 'docs/readme.txt', '/w/proj/docs/readme.md', 'docs/readme.md'],
    ['the same spelling: nothing to do', 'darwin', 'posix', 'docs/readme.md', '/w/proj/docs/readme.md', 'docs/readme.md'],
    ['where names do not fold, never', 'linux', 'posix', 'docs/README.md', '/w/proj/docs/readme.md', 'docs/readme.md'],
  ];
  for (const [why, platform, flavour, typed, path, shown] of rows) {
    test(why, () => assert.deepEqual(caseRename(from, { ...from }, typed, flavour, platform), { path, shown }));
  }
  test('a destination that is another entry is returned as it is', () => {
    const other = { path: '/w/proj/docs/other.md', shown: 'docs/other.md' };
    assert.equal(caseRename(from, other, 'docs/OTHER.md', 'posix', 'darwin'), other);
  });
});
