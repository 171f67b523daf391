// Names and paths that exist on disk but cannot be served: the pure checks, then the scan over real folders.
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { IgnoreRules } from '../../src/index/ignore.ts';
import { Walk } from '../../src/index/scan.ts';
import { SkipReport, SkipWarnings, escapeName, isValidUtf8, readServableDir } from '../../src/index/servable.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { tempDir } from '../basics.ts';
import { deepChain, removeDeep, writeRawName } from '../disk-helpers.ts';

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

describe('isValidUtf8 and escapeName', () => {
  const cases: [string, Buffer, boolean, string][] = [
    ['ascii', bytes('a.txt'), true, 'a.txt'],
    ['accented', bytes('café'), true, 'café'],
    ['emoji (4 bytes)', bytes('😀'), true, '😀'],
    ['a real U+FFFD', bytes('x\uFFFD'), true, 'x\uFFFD'],
    ['lone 0xff', bytes('x', [0xff], '.txt'), false, 'x\\xff.txt'],
    ['lone continuation', bytes([0x80]), false, '\\x80'],
    ['truncated 2-byte', bytes('a', [0xc3]), false, 'a\\xc3'],
    ['overlong slash', bytes([0xc0, 0xaf]), false, '\\xc0\\xaf'],
    ['overlong 3-byte', bytes([0xe0, 0x80, 0xaf]), false, '\\xe0\\x80\\xaf'],
    ['UTF-16 surrogate', bytes([0xed, 0xa0, 0x80]), false, '\\xed\\xa0\\x80'],
    ['above U+10FFFF', bytes([0xf4, 0x90, 0x80, 0x80]), false, '\\xf4\\x90\\x80\\x80'],
    ['latin-1 name', bytes([0x63, 0x61, 0x66, 0xe9]), false, 'caf\\xe9'],
    ['newline', bytes('a\nb'), true, 'a\\nb'],
    ['ESC sequence', bytes('\x1b[31mred'), true, '\\x1b[31mred'],
    ['C1 control', bytes('\u009b'), true, '\\x9b'],
    ['backslash', bytes('a\\xff'), true, 'a\\\\xff'],
  ];
  for (const [what, name, valid, escaped] of cases) {
    test(what, () => {
      assert.equal(isValidUtf8(name), valid);
      assert.equal(escapeName(name), escaped);
      // Valid is exactly "decodes without U+FFFD that was not there".
      if (valid) assert.deepEqual(Buffer.from(name.toString('utf8')), name);
    });
  }
});

describe('SkipWarnings', () => {
  test('one line per reason with the count, and nothing again for the same skips', () => {
    const lines: string[] = [];
    const warnings = new SkipWarnings(createLogger('warn', (l) => lines.push(l)));
    const report = () => {
      const skips = new SkipReport();
      for (let i = 0; i < 500; i++) skips.add('name', `/r/x${i}\\xff`);
      skips.add('deep', '/r/' + 'a/'.repeat(3000));
      return skips;
    };
    warnings.report(report(), 'scan');
    assert.equal(lines.length, 2);
    assert.match(lines[0]!, /skipped 500 entries with names that are not valid UTF-8.*e\.g\. \/r\/x0\\xff\n$/);
    assert.match(lines[1]!, /skipped 1 entry with paths longer than the OS path limit/);
    assert.ok(lines[1]!.length < 400, 'a too-deep example is shortened');
    warnings.report(report(), 'rescan');
    assert.equal(lines.length, 2);
  });
});

describe('readServableDir', () => {
  test('drops only the names that are not valid UTF-8, keeps a real U+FFFD', async () => {
    const dir = tempDir();
    try {
      writeRawName(dir.path, bytes('x', [0xff], '.txt'));
      writeRawName(dir.path, bytes('x\uFFFD.txt'));
      writeFileSync(join(dir.path, 'y.txt'), 'y');
      const { entries, invalidNames } = await readServableDir(dir.path);
      assert.deepEqual(entries.map((e) => e.name).sort(), ['x\uFFFD.txt', 'y.txt']);
      assert.ok(entries.every((e) => e.isFile()));
      assert.deepEqual(invalidNames, [bytes('x', [0xff], '.txt')]);
    } finally {
      dir.cleanup();
    }
  });
});

async function scanUris(root: string, skips = new SkipReport(), beforeRead?: (dir: string) => void): Promise<string[]> {
  const roots = [makeRoot(root)];
  const rules = new IgnoreRules(roots, { gitignore: true, exclude: [] });
  const uris: string[] = [];
  const walk = new Walk({ roots, rules, log: silentLogger, skips, ...(beforeRead ? { beforeRead } : {}) });
  for (let batch = walk.next(3); batch !== null; batch = walk.next(3)) {
    for (const row of batch.rows) uris.push(row.uri);
  }
  return uris.sort();
}

describe('a walk and folders swapped for links (a checkout can do it)', () => {
  /** `root` with `a/` and `sub/` (a folder inside), and a folder outside it holding other names. */
  function folders() {
    const dir = tempDir();
    const root = join(dir.path, 'root');
    const outside = join(dir.path, 'outside');
    mkdirSync(join(root, 'sub', 'inner'), { recursive: true });
    mkdirSync(join(root, 'a'));
    writeFileSync(join(root, 'a', 'a.txt'), 'a');
    writeFileSync(join(root, 'sub', 'inner', 's.txt'), 's');
    mkdirSync(join(outside, 'deeper'), { recursive: true });
    writeFileSync(join(outside, 'secret.txt'), 'outside');
    writeFileSync(join(outside, 'deeper', 'd.txt'), 'outside');
    return { dir, root, outside };
  }

  test('a folder swapped for a link after its parent was read: nothing the link leads to is walked', async () => {
    const { dir, root, outside } = folders();
    try {
      const uris = await scanUris(root, new SkipReport(), (read) => {
        // Between its parent's read and its own: as a checkout swapping it would.
        if (read !== join(root, 'sub')) return;
        renameSync(read, join(dir.path, 'sub.old'));
        symlinkSync(outside, read);
      });
      const base = pathToFileURL(root).href;
      assert.deepEqual(uris.filter((uri) => uri.startsWith(`${base}/sub/`) && uri !== `${base}/sub/`), []);
      assert.ok(uris.includes(`${base}/a/a.txt`), 'the rest of the tree is walked');
    } finally {
      dir.cleanup();
    }
  });

  test('a served folder that is a link now (swapped since the server started): nothing of it is walked', async () => {
    const { dir, root, outside } = folders();
    try {
      const served = join(dir.path, 'served');
      symlinkSync(outside, served);
      assert.deepEqual(await scanUris(served), []);
      assert.ok((await scanUris(root)).length > 0);
    } finally {
      dir.cleanup();
    }
  });
});

describe('scan', () => {
  test('a name that is not valid UTF-8 costs nothing but itself; a newline name is scanned', async () => {
    const dir = tempDir();
    try {
      for (const name of ['a.txt', 'b.txt', 'm.txt', 'z.txt']) writeFileSync(join(dir.path, name), name);
      mkdirSync(join(dir.path, 'sub'));
      writeFileSync(join(dir.path, 'sub', 'in.txt'), 'in');
      mkdirSync(join(dir.path, 'zz'));
      writeRawName(join(dir.path, 'zz'), bytes('bad', [0xfe, 0xff]));
      writeFileSync(join(dir.path, 'zz', 'ok.txt'), 'ok');
      writeRawName(dir.path, bytes('x', [0xff], '.txt'));
      writeFileSync(join(dir.path, 'new\nline.txt'), 'nl');
      mkdirSync(join(dir.path, 'd\nir'));
      writeFileSync(join(dir.path, 'd\nir', 'in.txt'), 'in');
      // A .gitignore puts the ignore rules on every name's path too.
      writeFileSync(join(dir.path, '.gitignore'), 'ignored.txt\n');
      const skips = new SkipReport();
      const uris = await scanUris(dir.path, skips);
      // join keeps a trailing '/', and pathToFileURL keeps it: the collection URIs.
      const uri = (rel: string) => pathToFileURL(join(dir.path, rel)).href + (rel === '' ? '/' : '');
      const expected = ['', '.gitignore', 'a.txt', 'b.txt', 'm.txt', 'z.txt', 'sub/', 'sub/in.txt', 'zz/', 'zz/ok.txt',
        'new\nline.txt', 'd\nir/', 'd\nir/in.txt'].map(uri);
      assert.deepEqual(uris, expected.sort());
      assert.ok(uris.includes(pathToFileURL(dir.path).href + '/new%0Aline.txt'));
      assert.equal(skips.counts.name, 2);
      assert.deepEqual(skips.examples.name.sort(), [`${dir.path}/x\\xff.txt`, `${dir.path}/zz/bad\\xfe\\xff`]);
    } finally {
      dir.cleanup();
    }
  });

  test('a chain deeper than PATH_MAX is skipped below the limit; the rest is scanned', async () => {
    const dir = tempDir();
    try {
      writeFileSync(join(dir.path, 'top.txt'), 'top');
      mkdirSync(join(dir.path, 'side'));
      writeFileSync(join(dir.path, 'side', 's.txt'), 's');
      deepChain(dir.path);
      const skips = new SkipReport();
      const uris = await scanUris(dir.path, skips);
      assert.ok(uris.includes(pathToFileURL(join(dir.path, 'top.txt')).href));
      assert.ok(uris.includes(pathToFileURL(join(dir.path, 'side', 's.txt')).href));
      const chain = uris.filter((u) => u.includes('/aaaa'));
      assert.ok(chain.length >= 15 && chain.length < 25, `part of the chain is served (${chain.length})`);
      assert.ok(chain.every((u) => decodeURIComponent(new URL(u).pathname).length < 4096));
      assert.equal(skips.counts.deep, 1);
    } finally {
      removeDeep(dir.path);
    }
  });
});
