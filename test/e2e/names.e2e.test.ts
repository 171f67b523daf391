// Strange names and too-deep folders over real stdio: the first listing is complete, one warning, the rest served.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { connect, diskUris, tempDir, waitFor, writeTree, type LooseResult } from '../helpers.ts';
import { listedUris } from '../live-helpers.ts';
import { deepChain, removeDeep, writeRawName } from '../disk-helpers.ts';

const TIMEOUT = 30_000;
/** diskUris, minus the names that are not valid UTF-8 (readdirSync decodes them with U+FFFD; the trees here have no real one). */
const servableDiskUris = (root: string) => diskUris(root, (name) => name.includes('\uFFFD'));
const bad = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
const warningsAbout = (stderr: string, what: RegExp) => stderr.split('\n').filter((line) => / warn: /.test(line) && what.test(line));

describe('names that are not valid UTF-8, and newlines', () => {
  test('the first listing is complete; the bad names are one warning, on the scan and on a rescan', { timeout: TIMEOUT }, async () => {
    const dir = tempDir();
    writeTree(dir.path, {
      'a.txt': 'a',
      'b.txt': 'b',
      'm.txt': 'm',
      'z.txt': 'z',
      'sub/in.txt': 'in',
      'zz/ok.txt': 'ok',
      'new\nline.txt': 'newline',
      'd\nir/in.txt': 'in',
    });
    writeRawName(dir.path, bad('x', [0xff], '.txt'));
    writeRawName(join(dir.path, 'zz'), bad('caf', [0xe9]));
    const conn = await connect(['--db', ':memory:', '--watcher', 'poll', dir.path]);
    try {
      // Right after start: the request waits for the first scan, which must be the whole tree.
      const listed = await listedUris(conn);
      assert.deepEqual(listed, servableDiskUris(dir.path));
      assert.equal(listed.length, 12);
      const newline = pathToFileURL(join(dir.path, 'new\nline.txt')).href;
      assert.ok(newline.endsWith('/new%0Aline.txt'));
      assert.ok(listed.includes(newline));
      const read = await conn.request('resources/read', { uri: newline });
      assert.equal(((read.contents as LooseResult[])[0]!).text, 'newline');

      const utf8 = /not valid UTF-8/;
      await waitFor(() => warningsAbout(conn.stderr(), utf8).length === 1, 30_000, 'the scan warning');
      const [warning] = warningsAbout(conn.stderr(), utf8);
      assert.match(warning!, /scan: skipped 2 entries with names that are not valid UTF-8/);
      assert.match(warning!, /\\xff\.txt|caf\\xe9/);

      // The periodic diff skips the same names, keeps the new sibling, and warns only for what is new.
      writeRawName(join(dir.path, 'sub'), bad('late', [0xc3]));
      writeFileSync(join(dir.path, 'sub', 'late.txt'), 'late');
      const late = pathToFileURL(join(dir.path, 'sub', 'late.txt')).href;
      await waitFor(async () => (await listedUris(conn)).includes(late), 30_000, 'the poll to add sub/late.txt');
      assert.deepEqual(await listedUris(conn), servableDiskUris(dir.path));
      await waitFor(() => warningsAbout(conn.stderr(), utf8).length === 2, 30_000, 'the rescan warning');
      // Whichever walk finds it first says so: the poll's diff of the root (3 skipped) or a diff of sub/ alone (1).
      assert.match(warningsAbout(conn.stderr(), utf8)[1]!, /rescan: skipped (3 entries|1 entry) .*late\\xc3/);
    } finally {
      await conn.close();
      dir.cleanup();
    }
  });

  test('the default watcher keeps a bad name out and its siblings in', { timeout: TIMEOUT }, async () => {
    const dir = tempDir();
    writeTree(dir.path, { 'a.txt': 'a', 'sub/b.txt': 'b' });
    writeRawName(join(dir.path, 'sub'), bad('x', [0xff]));
    const conn = await connect(['--db', ':memory:', dir.path]);
    try {
      assert.deepEqual(await listedUris(conn), servableDiskUris(dir.path));
      writeRawName(join(dir.path, 'sub'), bad('y', [0xfe]));
      mkdirSync(join(dir.path, 'new'));
      writeRawName(join(dir.path, 'new'), bad('z', [0xff]));
      writeFileSync(join(dir.path, 'new', 'c.txt'), 'c');
      const c = pathToFileURL(join(dir.path, 'new', 'c.txt')).href;
      await waitFor(async () => (await listedUris(conn)).includes(c), 30_000, 'the watcher to add new/c.txt');
      assert.deepEqual(await listedUris(conn), servableDiskUris(dir.path));
      // No flood: a walk warns only with an example not reported before, so at most one line per bad name.
      const lines = warningsAbout(conn.stderr(), /not valid UTF-8/);
      const examples = lines.map((line) => /e\.g\. (.*)$/.exec(line)?.[1]);
      assert.equal(new Set(examples).size, lines.length, conn.stderr());
      assert.ok(lines.length <= 3, conn.stderr());
    } finally {
      await conn.close();
      dir.cleanup();
    }
  });
});

describe('a folder chain deeper than PATH_MAX', () => {
  test('is skipped below the limit with one warning; everything else is listed and read', { timeout: TIMEOUT }, async () => {
    const dir = tempDir();
    writeTree(dir.path, { 'top.txt': 'top', 'side/s.txt': 's' });
    deepChain(dir.path);
    const conn = await connect(['--db', ':memory:', dir.path]);
    try {
      const listed = await listedUris(conn);
      const top = pathToFileURL(join(dir.path, 'top.txt')).href;
      assert.ok(listed.includes(top));
      assert.ok(listed.includes(pathToFileURL(join(dir.path, 'side', 's.txt')).href));
      assert.ok(listed.some((uri) => uri.includes('/aaaa')), 'the part of the chain within the limit is listed');
      const read = await conn.request('resources/read', { uri: top });
      assert.equal(((read.contents as LooseResult[])[0]!).text, 'top');
      await waitFor(() => warningsAbout(conn.stderr(), /ENAMETOOLONG/).length === 1, 30_000, 'the warning');
      assert.match(warningsAbout(conn.stderr(), /ENAMETOOLONG/)[0]!, /skipped 1 entry with paths longer than the OS path limit/);
    } finally {
      await conn.close();
      removeDeep(dir.path);
    }
  });
});
