// The live-update suite, run once per watcher backend (`--watcher`): real
// files in a fresh temp folder, the real server over stdio, `waitFor` with
// timeouts. The disk is the oracle: after each change the whole listing must
// equal a walk of the disk.
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { diskUris, rejectsWith, serveTree, tempDir, waitFor, writeTree, type Connected } from '../helpers.ts';
import { connectWithNotes, listingDiff, listingEqualsDisk, type Notes } from '../live-helpers.ts';

// LIVE_BACKENDS=dirs,poll narrows the loop while working on one backend.
const BACKENDS = (process.env.LIVE_BACKENDS?.split(',') ?? ['chokidar', 'dirs', 'recursive', 'poll']) as Array<'chokidar' | 'dirs' | 'recursive' | 'poll'>;
/** Polling sees a change within a couple of seconds; leave room for a loaded machine. */
const TIMEOUT = 30_000;
/** The burst test: 5,000 files walked and compared with the listing at each look, on a machine that may be busy. */
const BURST_TIMEOUT = 120_000;

const TREE = {
  '.gitignore': 'ignored/\n*.log\n',
  'README.md': '# live\n',
  'src/main.ts': 'export const main = 1;\n',
  'src/util/strings.ts': 'export const s = "";\n',
  'docs/guide.md': '# guide\n',
  'ignored/secret.txt': 'no\n',
  'debug.log': 'no\n',
};

/** The test tree's ignore rules, for the disk walk: `ignored/`, `*.log` and, once added, `gen/`. */
function skipFor(extra: () => string[]) {
  return (name: string, isDir: boolean) =>
    (isDir && name === 'ignored') || name.endsWith('.log') || (isDir && extra().includes(name));
}

for (const backend of BACKENDS) {
  describe(`live updates (--watcher ${backend})`, () => {
    // Poll every 200 ms, not the default 2 s: the suite tests what polling sees, not how long it waits.
    const poll = backend === 'poll' ? ['--poll-interval', '200'] : [];
    const tree = serveTree(TREE, ({ root }) => ['--db', ':memory:', '--watcher', backend, ...poll, root], { connect: connectWithNotes });
    let conn: Connected & { notes: Notes };
    const ignoredDirs: string[] = [];
    const { uriOf } = tree;
    const disk = () => diskUris(tree.root, skipFor(() => ignoredDirs));
    const settles = async (what: string, timeoutMs = TIMEOUT) => {
      try {
        await waitFor(() => listingEqualsDisk(conn, disk), timeoutMs, what);
      } catch (error) {
        throw new Error(`${(error as Error).message}: ${await listingDiff(conn, disk)}\n${conn.stderr()}`);
      }
    };
    const metadata = async (rel: string) => {
      try {
        return ((await conn.request('resources/metadata', { uri: uriOf(rel) })).resource ?? null) as Record<string, unknown> | null;
      } catch (error) {
        if ((error as { code?: number }).code === -32002) return null;
        throw error;
      }
    };

    before(async () => {
      ({ conn } = tree);
      await settles('the first scan');
      // The watcher runs once the start-up line says so; changes before it are caught by the start-up diff anyway.
      await waitFor(() => conn.stderr().includes(`watcher: ${backend}`), TIMEOUT, 'the watcher to start');
    });

    test('says on stderr which backend runs and why', () => {
      assert.match(conn.stderr(), new RegExp(`watcher: ${backend} \\(--watcher ${backend}\\)`));
    });

    test('a new file appears, a change is seen, a deleted file vanishes', async () => {
      conn.notes.reset();
      writeFileSync(join(tree.root, 'src/new.ts'), 'export const n = 1;\n');
      await waitFor(() => metadata('src/new.ts'), TIMEOUT, 'the new file');
      await settles('after adding a file');
      await waitFor(() => conn.notes.listChanged > 0, TIMEOUT, 'list_changed');
      // Editor backup and swap names are files like any other: the scan serves them, so must the watcher.
      writeFileSync(join(tree.root, 'src/new.ts~'), 'backup\n');
      writeFileSync(join(tree.root, 'src/.new.ts.swp'), 'swap\n');
      await waitFor(() => metadata('src/.new.ts.swp'), TIMEOUT, 'the swap file');
      await waitFor(() => metadata('src/new.ts~'), TIMEOUT, 'the backup file');
      rmSync(join(tree.root, 'src/new.ts~'));
      rmSync(join(tree.root, 'src/.new.ts.swp'));

      writeFileSync(join(tree.root, 'src/new.ts'), 'export const n = 1234567890;\n');
      await waitFor(async () => (await metadata('src/new.ts'))?.size === 29, TIMEOUT, 'the new size');

      rmSync(join(tree.root, 'src/new.ts'));
      await waitFor(async () => (await metadata('src/new.ts')) === null, TIMEOUT, 'the file to vanish');
      await rejectsWith(conn.request('resources/read', { uri: uriOf('src/new.ts') }), -32002);
      await settles('after deleting a file');
    });

    test('a renamed file moves', async () => {
      writeFileSync(join(tree.root, 'docs/old-name.md'), '# old\n');
      await waitFor(() => metadata('docs/old-name.md'), TIMEOUT, 'the file before the rename');
      renameSync(join(tree.root, 'docs/old-name.md'), join(tree.root, 'docs/new name.md'));
      await waitFor(() => metadata('docs/new name.md'), TIMEOUT, 'the renamed file');
      await settles('after renaming a file');
      assert.equal(await metadata('docs/old-name.md'), null);
    });

    test('a directory: created with files, renamed, deleted', async () => {
      writeTree(tree.root, { 'pkg/a.ts': 'a\n', 'pkg/deep/b.ts': 'b\n', 'pkg/deep/er/c.md': 'c\n' });
      await settles('after creating a directory tree');
      renameSync(join(tree.root, 'pkg'), join(tree.root, 'pkg2'));
      await settles('after renaming the directory');
      assert.equal(await metadata('pkg/deep/b.ts'), null);
      assert.equal((await metadata('pkg2/deep/er/c.md'))?.title, 'pkg2/deep/er/c.md');
      rmSync(join(tree.root, 'pkg2'), { recursive: true });
      await settles('after deleting the directory');
      assert.equal(await metadata('pkg2/'), null);
    });

    test('directories created nested in one go (mkdir -p) are watched: later changes inside them are seen', async () => {
      for (let i = 0; i < 10; i++) writeTree(tree.root, { [`nest${i}/a/b/c/first.md`]: 'first\n' });
      await settles('after creating nested directories');
      for (let i = 0; i < 10; i++) writeFileSync(join(tree.root, `nest${i}/a/b/c/later.md`), 'later\n');
      for (let i = 0; i < 10; i++) writeFileSync(join(tree.root, `nest${i}/a/b/later.md`), 'later\n');
      await settles('after writing into the nested directories');
      for (let i = 0; i < 10; i++) rmSync(join(tree.root, `nest${i}`), { recursive: true });
      await settles('after removing them');
    });

    test('a directory moved in from outside the root is indexed whole', async () => {
      const outside = tempDir();
      try {
        writeTree(outside.path, { 'm/x.ts': 'x\n', 'm/y/z.md': 'z\n' });
        renameSync(join(outside.path, 'm'), join(tree.root, 'moved'));
        await settles('after moving a directory in');
        assert.ok(await metadata('moved/y/z.md'));
      } finally {
        outside.cleanup();
      }
    });

    test('an atomic save (write a temp file, rename it over) updates the document', async () => {
      const target = join(tree.root, 'src/main.ts');
      const temp = join(tree.root, 'src/.main.ts.tmp-123');
      writeFileSync(temp, 'export const main = "saved atomically";\n');
      renameSync(temp, target);
      await waitFor(async () => (await metadata('src/main.ts'))?.size === 40, TIMEOUT, 'the saved size');
      await settles('after an atomic save');
      const read = await conn.request('resources/read', { uri: uriOf('src/main.ts') });
      assert.equal((read.contents as Array<{ text: string }>)[0]!.text, 'export const main = "saved atomically";\n');
    });

    test('a .gitignore edit removes what it now ignores and brings back what it no longer does', async () => {
      writeTree(tree.root, { 'gen/out1.js': '1\n', 'gen/sub/out2.js': '2\n' });
      await waitFor(() => metadata('gen/sub/out2.js'), TIMEOUT, 'gen/ before ignoring it');
      conn.notes.reset();
      writeFileSync(join(tree.root, '.gitignore'), 'ignored/\n*.log\ngen/\n');
      ignoredDirs.push('gen');
      await settles('after ignoring gen/');
      assert.equal(await metadata('gen/out1.js'), null);
      await waitFor(() => conn.notes.listChanged > 0, TIMEOUT, 'list_changed after the ignore');

      // While ignored, changes under gen/ are not served.
      writeFileSync(join(tree.root, 'gen/out3.js'), '3\n');
      writeFileSync(join(tree.root, '.gitignore'), 'ignored/\n*.log\n');
      ignoredDirs.length = 0;
      await settles('after un-ignoring gen/');
      assert.ok(await metadata('gen/out3.js'));

      // And once un-ignored, gen/ is watched again.
      writeFileSync(join(tree.root, 'gen/sub/out4.js'), '4\n');
      await waitFor(() => metadata('gen/sub/out4.js'), TIMEOUT, 'a new file in the un-ignored gen/');
      // A nested .gitignore counts too.
      writeFileSync(join(tree.root, 'gen/.gitignore'), 'sub/\n');
      await waitFor(async () => (await metadata('gen/sub/out4.js')) === null, TIMEOUT, 'gen/sub/ ignored by gen/.gitignore');
      rmSync(join(tree.root, 'gen'), { recursive: true });
      await settles('after removing gen/');
    });

    test('a burst of 5,000 files ends with the index equal to the disk and few list_changed', async () => {
      conn.notes.reset();
      for (let d = 0; d < 50; d++) {
        const dir = join(tree.root, 'burst', `d${d}`);
        mkdirSync(dir, { recursive: true });
        for (let f = 0; f < 100; f++) writeFileSync(join(dir, `f${f}.txt`), `file ${d}/${f}\n`);
      }
      // 5,000 files: on two loaded cores a poll walk of them and the listing compared each time take seconds.
      await settles('after the burst', BURST_TIMEOUT);
      // Let the trailing list_changed of the burst arrive before counting.
      await waitFor(() => conn.notes.listChanged > 0, TIMEOUT, 'list_changed after the burst');
      assert.ok(conn.notes.listChanged < 50, `list_changed sent ${conn.notes.listChanged} times`);
      rmSync(join(tree.root, 'burst'), { recursive: true });
      await settles('after deleting the burst', BURST_TIMEOUT);
    });

    test('a write seen half done (truncated, then written 30 ms later) ends with the index equal to the disk', async () => {
      const path = join(tree.root, 'docs/halfway.md');
      writeFileSync(path, 'first version\n');
      await waitFor(() => metadata('docs/halfway.md').then((m) => m?.size === 14), TIMEOUT, 'the first version indexed');
      await new Promise((r) => setTimeout(r, 400)); // a quiet spell: the next change is applied at once
      const fd = openSync(path, 'r+');
      ftruncateSync(fd, 0);
      await new Promise((r) => setTimeout(r, 30));
      writeSync(fd, 'second version, longer\n');
      closeSync(fd);
      await waitFor(() => metadata('docs/halfway.md').then((m) => m?.size === 23), TIMEOUT, 'the finished write indexed');
      rmSync(path);
      await settles('after the half-done write');
    });

    test('subscriptions: a document and a collection get updated; an unsubscribed one does not', async () => {
      writeTree(tree.root, { 'sub/a.md': 'a\n', 'sub/inner/b.md': 'b\n', 'other/c.md': 'c\n' });
      await waitFor(() => metadata('other/c.md'), TIMEOUT, 'the files to subscribe to');
      await waitFor(() => metadata('sub/inner/b.md'), TIMEOUT, 'the files to subscribe to');
      // Spelled without the trailing slash: resolved like read, stored canonically.
      await conn.request('resources/subscribe', { uri: uriOf('sub') });
      await conn.request('resources/subscribe', { uri: uriOf('sub') }); // twice is harmless
      await conn.request('resources/subscribe', { uri: uriOf('other/c.md') });
      conn.notes.reset();

      writeFileSync(join(tree.root, 'sub/inner/b.md'), 'b changed\n');
      await waitFor(() => conn.notes.updated.some((n) => n.uri === uriOf('sub/')), TIMEOUT, 'updated for the collection');
      assert.equal(conn.notes.updated.find((n) => n.uri === uriOf('sub/'))!.title, 'sub');
      writeFileSync(join(tree.root, 'other/c.md'), 'c changed\n');
      await waitFor(() => conn.notes.updated.some((n) => n.uri === uriOf('other/c.md')), TIMEOUT, 'updated for the document');
      assert.equal(conn.notes.updated.find((n) => n.uri === uriOf('other/c.md'))!.title, 'other/c.md');

      // Unsubscribe the collection, then change both: only the document may be told.
      await conn.request('resources/unsubscribe', { uri: uriOf('sub/') });
      await conn.request('resources/unsubscribe', { uri: uriOf('docs/guide.md') }); // never subscribed: harmless
      conn.notes.reset();
      writeFileSync(join(tree.root, 'sub/a.md'), 'a changed\n');
      await waitFor(() => metadata('sub/a.md').then((m) => m?.size === 10), TIMEOUT, 'the change under sub/ indexed');
      writeFileSync(join(tree.root, 'other/c.md'), 'c changed again\n');
      await waitFor(() => conn.notes.updated.some((n) => n.uri === uriOf('other/c.md')), TIMEOUT, 'updated for the document');
      assert.deepEqual(conn.notes.updated.filter((n) => n.uri === uriOf('sub/')), []);

      // A subscribed document that vanishes is told too.
      conn.notes.reset();
      rmSync(join(tree.root, 'other/c.md'));
      await waitFor(() => conn.notes.updated.some((n) => n.uri === uriOf('other/c.md')), TIMEOUT, 'updated for the deleted document');
      await conn.request('resources/unsubscribe', { uri: uriOf('other/c.md') }); // gone now: still harmless
      rmSync(join(tree.root, 'sub'), { recursive: true });
      rmSync(join(tree.root, 'other'), { recursive: true });
      await settles('after the subscription test');
    });

    test('subscribing to an unknown or ignored URI is -32002; a bad param is -32602', async () => {
      await rejectsWith(conn.request('resources/subscribe', { uri: uriOf('nope.md') }), -32002, 'Resource not found');
      await rejectsWith(conn.request('resources/subscribe', { uri: uriOf('ignored/secret.txt') }), -32002);
      await rejectsWith(conn.request('resources/subscribe', { uri: 'file:///etc/passwd' }), -32002);
      await rejectsWith(conn.request('resources/subscribe', { uri: 42 }), -32602);
      await rejectsWith(conn.request('resources/unsubscribe', {}), -32602);
    });
  });
}
