// The path model for both flavours, on every platform: Windows rules run on
// Linux (and POSIX rules on Windows) because the flavour is a parameter.
import assert from 'node:assert/strict';
import { posix, win32 } from 'node:path';
import { describe, test } from 'node:test';
import { basename, dirname, foldName, isAbsoluteSlashPath, join, normalizeSlashPath, rootLength, toSlashPath, type Flavour } from '../../src/fs-path.ts';
import { prefixUris, resolveWritePath, spelledOnDisk, toolPath } from '../../src/catalog/paths.ts';
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { lookupEntry } from '../../src/index/lookup.ts';
import { silentLogger } from '../../src/log.ts';
import { tempDir } from '../basics.ts';
import { judgeOwnName, judgeTarget } from '../../src/content/safe-write.ts';
import { findRoot, isForbiddenWin32Segment, isPathInside, makeRoot, parseFileUri, pathToUri, resolveUri, uriToPath, type ResolveFs } from '../../src/uri.ts';

describe('toSlashPath', () => {
  const rows: Array<[Flavour, string, string]> = [
    ['win32', 'C:\\Users\\me\\proj', 'C:/Users/me/proj'],
    ['win32', 'c:\\users\\me\\proj\\', 'C:/users/me/proj'],
    ['win32', 'C:/Users/me/./proj/../proj2', 'C:/Users/me/proj2'],
    ['win32', 'C:\\', 'C:/'],
    ['win32', 'C:\\..\\..', 'C:/'],
    ['win32', '\\\\server\\share\\dir\\f.txt', '//server/share/dir/f.txt'],
    ['win32', '\\\\server\\share', '//server/share/'],
    ['win32', '\\\\server\\share\\..\\other', '//server/share/other'],
    ['win32', '\\\\?\\C:\\very\\long\\path', 'C:/very/long/path'],
    ['win32', '\\\\?\\UNC\\server\\share\\x', '//server/share/x'],
    ['win32', 'src\\a.ts', 'src/a.ts'],
    ['win32', 'C:relative', 'C:relative'],
    ['posix', '/home/me/proj', '/home/me/proj'],
    ['posix', '/home/me/proj/', '/home/me/proj'],
    ['posix', '//home//me/./x/../y', '/home/me/y'],
    ['posix', '/a\\b', '/a\\b'], // a backslash is a character of a POSIX name
    ['posix', '/..', '/'],
    ['posix', 'a/../..', '..'],
  ];
  for (const [flavour, input, expected] of rows) {
    test(`${flavour}: ${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => assert.equal(toSlashPath(input, flavour), expected));
  }

  test('agrees with path.win32 and path.posix on what is absolute', () => {
    const samples = ['C:\\x', 'c:/x', 'C:x', '\\\\server\\share\\x', '\\x', 'x\\y', '/x', 'x/y', '//server/share', ''];
    for (const sample of samples) {
      // path.win32 calls '\x' (the current drive's root) absolute; a server started anywhere cannot mean it, so it is not.
      const expectedWin = win32.isAbsolute(sample) && /^[A-Za-z]:|^[\\/]{2}[^\\/]+[\\/][^\\/]+/.test(sample);
      assert.equal(isAbsoluteSlashPath(toSlashPath(sample, 'win32'), 'win32'), expectedWin, `win32 ${sample}`);
      assert.equal(isAbsoluteSlashPath(toSlashPath(sample, 'posix'), 'posix'), posix.isAbsolute(sample), `posix ${sample}`);
    }
  });
});

describe('join, dirname, basename, rootLength on slash paths', () => {
  const rows: Array<{ path: string; dir: string; base: string; root: number }> = [
    { path: '/a/b', dir: '/a', base: 'b', root: 1 },
    { path: '/a', dir: '/', base: 'a', root: 1 },
    { path: '/', dir: '/', base: '', root: 1 },
    { path: 'C:/a/b', dir: 'C:/a', base: 'b', root: 3 },
    { path: 'C:/a', dir: 'C:/', base: 'a', root: 3 },
    { path: 'C:/', dir: 'C:/', base: 'C:', root: 3 },
    { path: '//srv/share/a', dir: '//srv/share/', base: 'a', root: 12 },
    { path: '//srv/share/', dir: '//srv/share/', base: 'share', root: 12 },
  ];
  for (const row of rows) {
    test(row.path, () => {
      assert.equal(dirname(row.path), row.dir);
      assert.equal(basename(row.path), row.base);
      assert.equal(rootLength(row.path), row.root);
    });
  }
  test('join', () => {
    assert.equal(join('/r', 'a'), '/r/a');
    assert.equal(join('/', 'a'), '/a');
    assert.equal(join('C:/', 'a', 'b'), 'C:/a/b');
    assert.equal(join('//srv/share/', 'a'), '//srv/share/a');
    assert.equal(join('/r', 'a/../b'), '/r/b');
    assert.equal(join('C:/r', '../../..'), 'C:/');
    assert.equal(join('/r', ''), '/r');
  });
  test('foldName keeps a path\'s length (NTFS never folds one unit into two)', () => {
    assert.equal(foldName('C:/Users/me/Stra\u00dfe'), 'C:/USERS/ME/STRA\u00dfE');
    assert.equal(foldName('\ufb01le'), '\ufb01LE');
    assert.equal(foldName('cafe\u0301'), 'CAF\u00c9');
    for (const text of ['a\u00df', '\ufb01x', 'ŉ', 'İi']) assert.equal(foldName(text).length, text.normalize('NFC').length, text);
  });
  test('rootLength: no share, or . or .. as a name, is no share', () => {
    for (const path of ['//a/', '//a', '//./UNC/s/x', '//../s/x', '//s/../x', '//s/./x', '//?/C:/x']) assert.equal(rootLength(path), 0, path);
  });
  test('normalizeSlashPath keeps a share and clamps at it', () => {
    assert.equal(normalizeSlashPath('//srv/share/../../x', 'win32'), '//srv/share/x');
    assert.equal(normalizeSlashPath('//srv/share/../../x', 'posix'), '/x');
  });
});

describe('canonical URIs of Windows paths, and back', () => {
  const rows: Array<{ path: string; dir: boolean; uri: string }> = [
    { path: 'C:/Users/me/proj', dir: true, uri: 'file:///C:/Users/me/proj/' },
    { path: 'C:/Users/me/caf\u00e9 #1.txt', dir: false, uri: 'file:///C:/Users/me/caf%C3%A9%20%231.txt' },
    { path: 'C:/', dir: true, uri: 'file:///C:/' },
    { path: '//server/share/dir', dir: true, uri: 'file://server/share/dir/' },
    { path: '//server/share/a%b', dir: false, uri: 'file://server/share/a%25b' },
  ];
  for (const row of rows) {
    test(`${row.path} <-> ${row.uri}`, () => {
      assert.equal(pathToUri(row.path, row.dir, 'win32'), row.uri);
      assert.equal(uriToPath(row.uri, 'win32'), row.path);
    });
  }
  test('a Windows spelling is normalised first: backslashes, lower-case drive', () => {
    assert.equal(pathToUri(toSlashPath('c:\\Users\\me\\x.txt', 'win32'), false, 'win32'), 'file:///C:/Users/me/x.txt');
  });
  test('relative and drive-relative paths have no URI', () => {
    for (const path of ['Users/me', 'C:Users', '/no-drive']) assert.throws(() => pathToUri(path, false, 'win32'), TypeError, path);
  });
  test('POSIX URIs are unchanged', () => {
    assert.equal(pathToUri('/srv/app', true, 'posix'), 'file:///srv/app/');
    assert.equal(uriToPath('file:///C:/x', 'posix'), '/C:/x');
  });
  test('makeRoot takes a Windows path as the user typed it', () => {
    const root = makeRoot('c:\\Users\\Me\\Proj\\', 'win32');
    assert.deepEqual(root, { path: 'C:/Users/Me/Proj', uri: 'file:///C:/Users/Me/Proj/', name: 'Proj' });
    assert.deepEqual(makeRoot('\\\\nas\\team', 'win32'), { path: '//nas/team/', uri: 'file://nas/team/', name: 'team' });
  });
});

describe('parseFileUri, Windows rules', () => {
  const rows: Array<{ uri: string; path: string | null; why: string }> = [
    { uri: 'file:///C:/r/a.txt', path: 'C:/r/a.txt', why: 'canonical' },
    { uri: 'file:///c:/r/a.txt', path: 'C:/r/a.txt', why: 'lower-case drive' },
    { uri: 'file:///C|/r/a.txt', path: 'C:/r/a.txt', why: "the old '|' spelling of a drive" },
    { uri: 'file://localhost/C:/r/a.txt', path: 'C:/r/a.txt', why: 'localhost' },
    { uri: 'file:///C:/r/sub/../a.txt', path: 'C:/r/a.txt', why: 'dot segments' },
    { uri: 'file:///C:/../../Windows', path: 'C:/Windows', why: "'..' clamps at the drive" },
    { uri: 'file://server/share/r/a.txt', path: '//server/share/r/a.txt', why: 'a UNC share' },
    { uri: 'file://server/share/../../other/x', path: '//server/share/other/x', why: "'..' clamps at the share" },
    { uri: 'file:///r/a.txt', path: null, why: 'no drive: nothing absolute' },
    { uri: 'file:///C:/r/a.txt:secret', path: null, why: 'an alternate data stream' },
    { uri: 'file:///C:/r/a.txt::$DATA', path: null, why: 'the default stream by name' },
    { uri: 'file:///C:/r/a.txt.', path: null, why: 'a trailing dot' },
    { uri: 'file:///C:/r/a.txt%20', path: null, why: 'a trailing space' },
    { uri: 'file:///C:/r/CON', path: null, why: 'a device' },
    { uri: 'file:///C:/r/nul.txt', path: null, why: 'a device with an extension' },
    { uri: 'file:///C:/r/COM1.tar.gz', path: null, why: 'a device with two extensions' },
    { uri: 'file:///C:/r/lpt9', path: null, why: 'a device, lower case' },
    { uri: 'file:///C:/r/console.txt', path: 'C:/r/console.txt', why: 'not a device' },
    { uri: 'file:///C:/r/a%5C..%5C..%5Cx', path: null, why: 'an encoded backslash' },
    { uri: 'file:///C:/r/a%3Fb', path: null, why: "'?' is never in a Windows name" },
    { uri: 'file:///C:/r/a*b', path: null, why: "'*' is never in a Windows name" },
    { uri: 'file://evil.example%2F/x', path: null, why: 'a host that is not a name' },
    { uri: 'file://localhost/share/x', path: '//localhost/share/x', why: 'a share on localhost, as its own URIs read' },
    { uri: 'file://./UNC/s/sh/x', path: null, why: 'the device namespace' },
    { uri: 'file://s/../x', path: null, why: "'..' as a share" },
    { uri: 'file://a/', path: null, why: 'a server and no share' },
  ];
  for (const row of rows) {
    test(`${row.uri}: ${row.why}`, () => assert.equal(parseFileUri(row.uri, 'win32')?.path ?? null, row.path));
  }
  test('on POSIX a drive letter names nothing and a host is refused', () => {
    assert.equal(parseFileUri('file:///C:/r/a.txt', 'posix'), null);
    assert.equal(parseFileUri('file://server/share/x', 'posix'), null);
    assert.equal(parseFileUri('file:///r/a%5Cb', 'posix')?.path, '/r/a\\b');
  });
  test('isForbiddenWin32Segment', () => {
    for (const bad of ['CON', 'con', 'Aux.txt', 'NUL .txt', 'COM\u00b9', 'CONIN$', 'a:b', 'x.', 'x ', 'a|b', 'a<b']) assert.equal(isForbiddenWin32Segment(bad), true, bad);
    for (const good of ['CONSOLE', 'nully', 'COM10', '.git', '..', '.', 'a b', 'café']) assert.equal(isForbiddenWin32Segment(good), false, good);
  });
});

describe('containment under Windows rules', () => {
  const roots = ['C:\\Users\\me\\proj', 'C:\\Users\\me\\proj-secrets', '\\\\nas\\team\\docs'].map((p) => makeRoot(p, 'win32'));
  test('the sibling-prefix trap, on drives and shares', () => {
    assert.equal(findRoot(roots, 'C:/Users/me/proj/a')?.path, 'C:/Users/me/proj');
    assert.equal(findRoot(roots, 'C:/Users/me/proj-secrets/k')?.path, 'C:/Users/me/proj-secrets');
    assert.equal(findRoot(roots, 'C:/Users/me/projX'), undefined);
    assert.equal(findRoot(roots, '//nas/team/docs/x')?.path, '//nas/team/docs');
    assert.equal(findRoot(roots, '//nas/team/docsX'), undefined);
    assert.equal(findRoot(roots, '//nas/other/docs/x'), undefined);
    assert.equal(findRoot(roots, 'D:/Users/me/proj/a'), undefined);
  });
  test('case: folded only when asked (the first look at a client spelling), exact otherwise', () => {
    assert.equal(findRoot(roots, 'c:/users/ME/PROJ/a'), undefined);
    assert.equal(findRoot(roots, 'c:/users/ME/PROJ/a', true)?.path, 'C:/Users/me/proj');
    assert.equal(isPathInside('C:/Users/me/proj', 'C:/USERS/me/proj-secrets', true), false);
  });
  test('case folding cannot splice a path into another root (\u00df is not SS)', () => {
    const trap = ['C:\\SS', 'C:\\SSa', 'C:\\Stra\u00dfe'].map((p) => makeRoot(p, 'win32'));
    assert.equal(findRoot(trap, 'C:/\u00df/a/b', true), undefined);
    assert.equal(findRoot(trap, 'C:/STRASSE/x', true), undefined);
    assert.equal(findRoot(trap, 'C:/stra\u00dfe/x', true)?.path, 'C:/Stra\u00dfe');
    assert.equal(resolveWritePath('C:\\\u00df\\a\\b', trap, 'win32'), undefined);
  });
  test('a backslash in a win32 slash path fails closed', () => {
    assert.equal(isPathInside('C:/r', 'C:/r/a\\..\\..\\x'), false);
  });
  test('a file-system root as a root', () => {
    assert.equal(isPathInside('C:/', 'C:/x/y'), true);
    assert.equal(isPathInside('C:/', 'D:/x'), false);
    assert.equal(isPathInside('/', '/x'), true);
  });
  test('unnormalised paths fail closed', () => {
    assert.equal(isPathInside('C:/r', 'C:/r/../x'), false);
    assert.equal(isPathInside('C:/r', 'C:/r//x'), false);
    assert.equal(isPathInside('C:/r', 'C:r/x'), false);
  });
});

describe('resolveUri under Windows rules (a file system of a case-insensitive volume, injected)', () => {
  // The volume as Windows shows it: lookups ignore case and 8.3 names; realpath answers with the spelling on disk.
  const onDisk = new Map([
    ['C:/USERS/ME/PROJ', 'C:/Users/me/proj'],
    ['C:/USERS/ME/PROJ/README.MD', 'C:/Users/me/proj/README.md'],
    ['C:/USERS/ME/PROJ/LONGFO~1', 'C:/Users/me/proj/Long folder name'],
    ['C:/USERS/ME/PROJ/LONG FOLDER NAME', 'C:/Users/me/proj/Long folder name'],
    ['C:/USERS/ME/PROJ/LONG FOLDER NAME/X.TXT', 'C:/Users/me/proj/Long folder name/x.txt'],
    ['C:/USERS/ME/PROJ/LONGFO~1/X.TXT', 'C:/Users/me/proj/Long folder name/x.txt'],
    ['C:/USERS/ME/PROJ/JUNCTION', 'C:/Windows/System32'],
  ]);
  const dirs = new Set(['C:/Users/me/proj', 'C:/Users/me/proj/Long folder name', 'C:/Windows/System32']);
  const fs: ResolveFs = {
    realpath: async (p) => {
      const real = onDisk.get(p.toUpperCase());
      if (real === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      return real;
    },
    stat: async (p) => ({ isFile: () => !dirs.has(p), isDirectory: () => dirs.has(p) }),
  };
  const roots = [makeRoot('C:\\Users\\me\\proj', 'win32')];
  const rows: Array<{ uri: string; expected: string | null }> = [
    { uri: 'file:///C:/Users/me/proj/README.md', expected: 'file:///C:/Users/me/proj/README.md' },
    { uri: 'file:///c:/users/ME/proj/readme.MD', expected: 'file:///C:/Users/me/proj/README.md' },
    { uri: 'file:///C:/Users/me/proj/LONGFO~1/x.txt', expected: 'file:///C:/Users/me/proj/Long%20folder%20name/x.txt' },
    { uri: 'file:///C:/Users/me/proj/junction', expected: null },
    { uri: 'file:///C:/Users/me/proj/README.md:evil', expected: null },
    { uri: 'file:///C:/Users/me/proj/missing', expected: null },
  ];
  for (const row of rows) {
    test(`${row.uri} -> ${row.expected}`, async () => {
      assert.equal((await resolveUri(row.uri, roots, fs, 'win32'))?.uri ?? null, row.expected);
    });
  }
});

describe('the tools\' path language', () => {
  const rows: Array<[Flavour, string, { absolute?: string; relative?: string }]> = [
    ['win32', 'C:\\Users\\me\\proj\\a.ts', { absolute: 'C:/Users/me/proj/a.ts' }],
    ['win32', 'c:/Users/me/proj/a.ts', { absolute: 'C:/Users/me/proj/a.ts' }],
    ['win32', '\\\\nas\\team\\docs\\x', { absolute: '//nas/team/docs/x' }],
    ['win32', '/mnt/c/Users/me', { absolute: 'C:/Users/me' }],
    ['win32', 'src\\deep\\a.ts', { relative: 'src/deep/a.ts' }],
    ['win32', 'src/deep/a.ts', { relative: 'src/deep/a.ts' }],
    ['win32', '/src/a.ts', { relative: '/src/a.ts' }],
    ['posix', '/srv/app/a.ts', { absolute: '/srv/app/a.ts' }],
    ['posix', 'src\\a.ts', { relative: 'src\\a.ts' }],
    ['posix', 'C:/x', { relative: 'C:/x' }],
  ];
  for (const [flavour, text, expected] of rows) {
    test(`${flavour}: ${text}`, () => {
      const got = toolPath(text, flavour);
      assert.equal(got.absolute, expected.absolute);
      assert.equal(got.relative, expected.relative);
    });
  }
  test('a write path typed with another case of the served folder is that folder\'s, on Windows only', () => {
    const win = [makeRoot('C:\\Users\\me\\proj', 'win32')];
    assert.deepEqual(resolveWritePath('c:\\users\\ME\\proj\\src\\New.txt', win, 'win32'), { path: 'C:/Users/me/proj/src/New.txt', shown: 'src/New.txt' });
    assert.deepEqual(resolveWritePath('src\\New.txt', win, 'win32'), { path: 'C:/Users/me/proj/src/New.txt', shown: 'src/New.txt' });
    assert.equal(resolveWritePath('c:\\users\\me\\proj-secrets\\x', win, 'win32'), undefined);
    assert.equal(resolveWritePath('src\\a.txt:stream', win, 'win32')?.path, 'C:/Users/me/proj/src/a.txt:stream', 'refused by judgeTarget (below)');
    const posixRoots = [makeRoot('/srv/App', 'posix')];
    assert.equal(resolveWritePath('/srv/app/x', posixRoots, 'posix'), undefined);
  });
  test('a prefix given as a Windows path, in any case, is its folder\'s URI', () => {
    const win = [makeRoot('C:\\Users\\me\\proj', 'win32')];
    assert.deepEqual(prefixUris('c:\\users\\ME\\proj\\src', win, 'win32'), ['file:///C:/Users/me/proj/src']);
    assert.deepEqual(prefixUris('src\\lib', win, 'win32'), ['file:///C:/Users/me/proj/src/lib']);
  });

  test('the write tools refuse what Windows would write elsewhere', () => {
    const win = [makeRoot('C:\\r', 'win32')];
    for (const path of ['C:/r/a.txt:s', 'C:/r/a.txt.', 'C:/r/dir /x', 'C:/r/nul.txt', 'C:/r/d/COM1', 'C:/r/a?b']) {
      const verdict = judgeTarget(path, win, 'win32');
      assert.equal(verdict.ok, false, path);
    }
    assert.equal(judgeTarget('C:/r/d/console.txt', win, 'win32').ok, true);
    assert.equal(judgeTarget('/r/nul.txt', [makeRoot('/r', 'posix')], 'posix').ok, true, 'a POSIX name');
  });

  test('spelledOnDisk takes only a difference of case from realpath, never a symlink\'s target', () => {
    const dir = tempDir('folder-mcp-spelled-');
    try {
      const real = realpathSync(dir.path);
      mkdirSync(join(real, 'd'));
      symlinkSync(join(real, 'd'), join(real, 'link'));
      const root = makeRoot(real);
      for (const platform of ['win32', 'darwin', 'linux'] as const) {
        assert.equal(spelledOnDisk(join(real, 'link', 'x.txt'), root, platform), join(real, 'link', 'x.txt'), platform);
        assert.equal(spelledOnDisk(join(real, 'd', 'new', 'x.txt'), root, platform), join(real, 'd', 'new', 'x.txt'), platform);
      }
    } finally {
      dir.cleanup();
    }
  });

  test('an existing entry is changed only by its own name (no 8.3 short name), up to case and normalization', () => {
    assert.equal(judgeOwnName('GIT~1', '.git')?.reason, 'refused');
    assert.equal(judgeOwnName('LONGFI~1.TXT', 'LongFileName.txt')?.reason, 'refused');
    assert.equal(judgeOwnName('readme.MD', 'README.md'), null);
    assert.equal(judgeOwnName('cafe\u0301.txt', 'caf\u00e9.txt'), null);
    assert.equal(judgeOwnName('stra\u00dfe', 'STRASSE')?.reason, 'refused', 'NTFS never folds \u00df to SS');
  });

  test('every absolute path read back prints the same URI', () => {
    for (const text of ['C:\\a\\b.txt', 'c:/a/b.txt', '/mnt/c/a/b.txt']) {
      assert.equal(pathToUri(toolPath(text, 'win32').absolute!, false, 'win32'), 'file:///C:/a/b.txt');
    }
  });
});

describe('lookupEntry on a volume that folds names', () => {
  test('a spelling realpath sends through a link is not taken (only a difference of case would be)', async () => {
    const dir = tempDir('folder-mcp-lookup-');
    const real = realpathSync(dir.path);
    mkdirSync(join(real, 'd'));
    writeFileSync(join(real, 'd', 'x.txt'), 'x');
    symlinkSync(join(real, 'd'), join(real, 'link'));
    const roots = [makeRoot(real)];
    const index = new FolderIndex({ roots, dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
    try {
      await index.readiness.reached('scanned');
      const ctx = { store: index.store, roots, followSymlinks: false, foldsNames: true };
      assert.equal((await lookupEntry(pathToUri(join(real, 'd', 'x.txt'), false), ctx))?.uri, pathToUri(join(real, 'd', 'x.txt'), false));
      assert.equal(await lookupEntry(pathToUri(join(real, 'link', 'x.txt'), false), ctx), undefined, 'through the link');
      assert.equal(await lookupEntry(pathToUri(join(real, 'D', 'X.txt'), false), ctx), undefined, 'this volume is case-sensitive: no such file');
      const following = { ...ctx, followSymlinks: true };
      assert.equal((await lookupEntry(pathToUri(join(real, 'link', 'x.txt'), false), following))?.uri, pathToUri(join(real, 'd', 'x.txt'), false));
    } finally {
      await index.close();
      dir.cleanup();
    }
  });
});
