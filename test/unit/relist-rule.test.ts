// The one rule of live updates (docs/live-updates.md): a reported path is
// looked at as it is now; an indexed directory of another identity (inode,
// device) is walked whole, one of the same identity whose mtime moved is
// listed again. Each case gives the Reconciler only what a watcher would
// report (often less), against a real index of a real folder, and compares
// the index with the disk: URI, kind and size of every entry.
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { Reconciler } from '../../src/sync/reconcile.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { diskUris, tempDir, waitFor, writeTree } from '../basics.ts';
import { withScanIndex } from '../scan-helpers.ts';

const linuxOnly = process.platform === 'linux' ? {} : { skip: 'the dirs watcher is tested on Linux' };

/** Every entry under `root` as `uri kind size`, sorted (what the index must list). */
function diskState(root: string): string[] {
  const out = [`${pathToFileURL(root).href}/ dir 0`];
  const walk = (dir: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, d.name);
      if (d.isDirectory()) {
        out.push(`${pathToFileURL(path).href}/ dir 0`);
        walk(path);
      } else if (d.isFile()) {
        out.push(`${pathToFileURL(path).href} file ${lstatSync(path).size}`);
      }
    }
  };
  walk(root);
  return out.sort();
}

function indexState(index: FolderIndex): string[] {
  const rows = index.db.prepare('SELECT uri, kind, size FROM entries').all() as { uri: string; kind: number; size: number }[];
  return rows.map((r) => `${r.uri} ${r.kind === 1 ? 'dir' : 'file'} ${r.size}`).sort();
}

interface Case {
  name: string;
  tree: Record<string, string>;
  /** Changes the served folder (`root`) behind the index's back; returns the paths (relative) a watcher reports. */
  change(root: string): string[];
}

const CASES: Case[] = [
  {
    name: 'a build output swapped in (mv dist dist.old; mv dist.new dist): the new dist is walked whole',
    tree: { 'dist/a.js': 'a', 'dist/lib/b.js': 'bb', 'dist.new/c.js': 'ccc', 'dist.new/lib/b.js': 'new b', 'src/x.ts': 'x' },
    change(root) {
      renameSync(join(root, 'dist'), join(root, 'dist.old'));
      renameSync(join(root, 'dist.new'), join(root, 'dist'));
      return ['dist', 'dist.old', 'dist.new'];
    },
  },
  {
    name: 'a swap reported by its one name (events coalesced): the new dist is walked whole',
    tree: { 'dist/a.js': 'a', 'dist.new/c.js': 'ccc' },
    change(root) {
      rmSync(join(root, 'dist'), { recursive: true });
      renameSync(join(root, 'dist.new'), join(root, 'dist'));
      return ['dist'];
    },
  },
  {
    name: 'the served folder deleted and made again (rm -rf, mkdir): what it holds now is indexed',
    tree: { 'a.txt': 'a', 'sub/b.txt': 'b' },
    change(root) {
      rmSync(root, { recursive: true });
      mkdirSync(root);
      writeTree(root, { 'new.txt': 'in the new root', 'newsub/c.txt': 'c' });
      return [''];
    },
  },
  {
    name: 'entries made in a folder that no event named (a watch not yet set): the folder is listed again',
    tree: { 'sub/old.txt': 'old' },
    change(root) {
      writeTree(root, { 'sub/new.txt': 'new', 'sub/deeper/d.txt': 'd' });
      rmSync(join(root, 'sub', 'old.txt'));
      return ['sub'];
    },
  },
  {
    name: 'a folder renamed within a folder that is the only path reported: listed again, the renamed one walked',
    tree: { 'a/b/x.txt': 'x', 'a/b/y/z.txt': 'z' },
    change(root) {
      renameSync(join(root, 'a', 'b'), join(root, 'a', 'c'));
      return ['a'];
    },
  },
  {
    name: 'a folder replaced by a file of its name',
    tree: { 'docs/old/a.md': 'a', 'docs/keep.md': 'k' },
    change(root) {
      rmSync(join(root, 'docs', 'old'), { recursive: true });
      writeFileSync(join(root, 'docs', 'old'), 'a file now');
      return ['docs/old'];
    },
  },
  {
    name: 'a file replaced by an empty folder of its name',
    tree: { 'notes.txt': 'notes' },
    change(root) {
      rmSync(join(root, 'notes.txt'));
      mkdirSync(join(root, 'notes.txt'));
      return ['notes.txt'];
    },
  },
  {
    name: 'a file grown with its mtime put back (cp -a, touch -r)',
    tree: { 'notes.txt': 'short' },
    change(root) {
      const path = join(root, 'notes.txt');
      const before = statSync(path);
      writeFileSync(path, 'much longer than it was before, 36 b');
      utimesSync(path, before.atime, before.mtime);
      return ['notes.txt'];
    },
  },
  {
    // The folder of a reported path is judged even when its own folder is not in the batch.
    name: 'a file reported in a folder where others were made unreported: the folder (whose parent nobody named) is listed again',
    tree: { 'a/b/x.txt': 'x' },
    change(root) {
      writeFileSync(join(root, 'a/b/new.txt'), 'new');
      writeFileSync(join(root, 'a/b/unnamed.txt'), 'no event named me');
      return ['a/b/new.txt'];
    },
  },
  {
    // A cloned repo's checkout can do this; a watch on the old folder still names paths in it, and an
    // lstat of `sub/s.txt` now follows the link: nothing beneath `sub` may stay listed (CI, stop 29).
    name: 'a folder swapped for a link to an outside folder, reported with paths beneath it: nothing beneath it stays listed',
    tree: { 'sub/s.txt': 'inside', 'top.txt': 'top' },
    change(root) {
      const outside = join(root, '..', 'outside');
      writeTree(outside, { 's.txt': 'OUTSIDE, longer than inside', 'extra.txt': 'only outside', 'deeper/d.txt': 'd' });
      renameSync(join(root, 'sub'), join(root, '..', 'sub.old'));
      symlinkSync(outside, join(root, 'sub'));
      return ['sub/s.txt', 'sub', 'sub/extra.txt', 'sub/deeper', 'sub/deeper/d.txt'];
    },
  },
];

/** An in-memory index of these folders, as the server keeps one (.gitignore applied, nothing excluded). */
const memoryIndex = (...roots: string[]) => new FolderIndex({ roots: roots.map((root) => makeRoot(root)), dbFile: ':memory:', log: silentLogger, gitignore: true, exclude: [] });
const reconcilerOf = (index: FolderIndex) => new Reconciler(index, silentLogger, new AbortController().signal);

describe('the re-list rule: the index equals the disk after the reported paths are looked at', () => {
  for (const c of CASES) {
    test(c.name, async () => {
      const dir = tempDir();
      const root = join(dir.path, 'served');
      writeTree(root, c.tree);
      const index = memoryIndex(root);
      try {
        await index.readiness.reached('scanned');
        assert.deepEqual(indexState(index), diskState(root), 'the scan indexed the tree');
        const reported = c.change(root).map((rel) => (rel === '' ? root : join(root, rel)));
        await reconcilerOf(index).paths(reported);
        assert.deepEqual(indexState(index), diskState(root));
      } finally {
        index.close();
        dir.cleanup();
      }
    });
  }
});

describe('a hard-linked file written through a name that then goes (found by the fuzzer, seed 3047)', () => {
  test('its other names are looked at again: they hold the new size, and no event names them', async () => {
    const dir = tempDir();
    const root = join(dir.path, 'served');
    writeTree(root, { 'x/e/f.txt': 'linked\n', 'h/other.txt': 'o' });
    // The other name in a folder nothing happens in: no re-list of a folder whose mtime moved finds it.
    linkSync(join(root, 'x/e/f.txt'), join(root, 'h/g.txt'));
    const index = memoryIndex(root);
    try {
      await index.readiness.reached('scanned');
      assert.deepEqual(indexState(index), diskState(root), 'the scan indexed the tree');
      appendFileSync(join(root, 'x/e/f.txt'), 'more');
      rmSync(join(root, 'x/e'), { recursive: true });
      // What a watcher reports: the file written, and the folder deleted (its parent's mtime moved).
      await reconcilerOf(index).paths([join(root, 'x/e/f.txt'), join(root, 'x/e'), join(root, 'x')]);
      assert.deepEqual(indexState(index), diskState(root));
    } finally {
      index.close();
      dir.cleanup();
    }
  });
});

describe('a hard-linked file written through a name in another root, walked after (found by the fuzzer, seed 3075)', () => {
  test('a root walk looks up the documents it finds by identity: the name the first walk saw holds the new size', async () => {
    const dir = tempDir();
    const [outer, inner] = [join(dir.path, 'outer'), join(dir.path, 'inner')];
    writeTree(outer, { 'd/x.txt': 'x' });
    writeTree(inner, { 'y.txt': 'y' });
    const index = memoryIndex(outer, inner);
    try {
      await index.readiness.reached('scanned');
      // Made while no server ran: two names of one file, one in each root.
      writeFileSync(join(inner, 'f.txt'), 'linked\n');
      linkSync(join(inner, 'f.txt'), join(outer, 'd/a'));
      const reconciler = reconcilerOf(index);
      // A warm start walks each root: the outer one first, then a write through the inner name, then the inner walk.
      await reconciler.tree(outer);
      appendFileSync(join(inner, 'f.txt'), 'more');
      await reconciler.tree(inner);
      assert.deepEqual(indexState(index), [...diskState(outer), ...diskState(inner)].sort());
    } finally {
      index.close();
      dir.cleanup();
    }
  });
});

describe('a served folder missing when the cold scan runs (found by the fuzzer, seed 174: re-made mid-scan)', () => {
  test('the scan indexes the other folders, and this one once it is back and looked at', async () => {
    const dir = tempDir();
    const [here, missing] = [join(dir.path, 'here'), join(dir.path, 'missing')];
    writeTree(here, { 'x.txt': 'x', 'sub/y.txt': 'y' });
    const index = memoryIndex(here, missing);
    try {
      await index.readiness.reached('scanned');
      assert.deepEqual(indexState(index), diskState(here));
      writeTree(missing, { 'z.txt': 'z', 'deeper/w.txt': 'w' });
      await reconcilerOf(index).paths([missing]);
      assert.deepEqual(indexState(index), [...diskState(here), ...diskState(missing)].sort());
    } finally {
      index.close();
      dir.cleanup();
    }
  });
});

/** The index as URIs, sorted (scan-watch-redteam's view). */
function indexedUris(index: FolderIndex): string[] {
  return ((index.db.prepare('SELECT uri FROM entries ORDER BY uri').all() as { uri: string }[]).map((r) => r.uri)).sort();
}

/** Waits until the index lists what the disk holds under every root (`what` names the step on a timeout). */
function settles(index: FolderIndex, roots: string[], what: string): Promise<unknown> {
  const disk = () => roots.flatMap((root) => (existsSync(root) ? diskUris(root) : [])).sort();
  return waitFor(() => JSON.stringify(indexedUris(index)) === JSON.stringify(disk()), 30_000, what).catch((error: Error) => {
    throw new Error(`${error.message}\nindex: ${indexedUris(index).join(' ')}\ndisk:  ${disk().join(' ')}`);
  });
}

describe('a folder swapped for a link to an outside folder while the Reconciler works on it', () => {
  /** A served folder with `sub/s.txt`, indexed; `sub` then swapped for a link to a folder outside. */
  async function swapped(run: (index: FolderIndex, root: string) => Promise<void>): Promise<void> {
    const dir = tempDir();
    const root = join(dir.path, 'served');
    const outside = join(dir.path, 'outside');
    writeTree(root, { 'sub/s.txt': 'inside', 'top.txt': 'top' });
    writeTree(outside, { 's.txt': 'OUTSIDE, longer than inside', 'extra.txt': 'only outside' });
    const index = memoryIndex(root);
    try {
      await index.readiness.reached('scanned');
      renameSync(join(root, 'sub'), join(dir.path, 'sub.old'));
      symlinkSync(outside, join(root, 'sub'));
      await run(index, root);
    } finally {
      index.close();
      dir.cleanup();
    }
  }

  test('listed again (judged before the swap, listed after): nothing the link names is listed, and the folder goes', async () => {
    await swapped(async (index, root) => {
      await reconcilerOf(index).relist(join(root, 'sub'));
      assert.deepEqual(indexState(index), diskState(root));
    });
  });

  test('a row written under a folder removed in the same batch is not written: the index never holds a row without its folder', async () => {
    await swapped(async (index, root) => {
      const sub = pathToFileURL(join(root, 'sub')).href;
      const row = index.store.get(`${sub}/s.txt`)!;
      const folder = index.store.get(`${sub}/`)!;
      // What an lstat through the link gives, written after the folder's removal.
      const committed = index.apply({ removed: [`${sub}/`], upserted: [{ ...row, size: 27 }] });
      assert.deepEqual(committed?.upserted, [], 'the listeners are not told of a row that was not written');
      assert.deepEqual(indexState(index), diskState(root));
      // A folder written in the same batch holds its children.
      const made = { ...folder, uri: `${pathToFileURL(root).href}/made/`, name: 'made' };
      index.apply({ removed: [], upserted: [{ ...row, uri: `${made.uri}x.txt`, parent: made.uri }, made] });
      assert.ok(index.store.get(`${made.uri}x.txt`), 'a row whose folder comes in the same batch (after it) is written');
    });
  });
});

for (const watcher of ['dirs', 'poll'] as const) {
  describe(`the re-list rule, live (${watcher} watcher)`, { ...linuxOnly }, () => {
    const options = { watcher, pollIntervalMs: 100 } as const;

    test('build outputs swapped in again and again while other files change: dist lists the new build each time', async () => {
      await withScanIndex(
        (dir) => writeTree(dir, { 'dist/app.js': 'build 0', 'dist/lib/util.js': 'u0', 'src/main.ts': 'main' }),
        async ({ dir, index, sync }) => {
          await sync(options).start();
          for (let build = 1; build <= 5; build++) {
            // Other changes keep the batch open while the swap happens.
            writeFileSync(join(dir, 'src', `edit${build}.ts`), `edit ${build}`);
            writeTree(dir, { [`dist.new/app-${build}.js`]: `build ${build}`, [`dist.new/lib${build}/util.js`]: 'u' });
            renameSync(join(dir, 'dist'), join(dir, 'dist.old'));
            renameSync(join(dir, 'dist.new'), join(dir, 'dist'));
            rmSync(join(dir, 'dist.old'), { recursive: true });
            await settles(index, [dir], `build ${build} listed`);
          }
        },
      );
    });

    test('the served folder deleted and made again: its new entries are listed, and later ones live', async () => {
      const served = (dir: string) => join(dir, 'served');
      await withScanIndex(
        (dir) => writeTree(served(dir), { 'a.txt': 'a', 'sub/b.txt': 'b' }),
        async ({ dir, index, sync }) => {
          const root = served(dir);
          await sync(options).start();
          rmSync(root, { recursive: true });
          await settles(index, [root], 'the gone folder unlisted');
          mkdirSync(root);
          writeTree(root, { 'new.txt': 'new', 'newsub/c.txt': 'c' });
          await settles(index, [root], 'the re-made folder listed');
          writeFileSync(join(root, 'later.txt'), 'written once it is watched again');
          await settles(index, [root], 'a later file listed');
        },
        { roots: (dir) => [served(dir)] },
      );
    });

    test('a served folder inside another moved away: it is unlisted, and listed again when moved back', async () => {
      await withScanIndex(
        (dir) => writeTree(dir, { 'outer/top.txt': 't', 'outer/inner/x.txt': 'x', 'outer/inner/deep/y.txt': 'y' }),
        async ({ dir, index, sync }) => {
          const outer = join(dir, 'outer');
          const inner = join(outer, 'inner');
          await sync(options).start();
          renameSync(inner, join(dir, 'away'));
          await settles(index, [outer], 'the moved folder unlisted');
          writeFileSync(join(dir, 'away', 'while-away.txt'), 'not served');
          renameSync(join(dir, 'away'), inner);
          await settles(index, [outer], 'the folder listed again');
        },
        { roots: (dir) => [join(dir, 'outer'), join(dir, 'outer', 'inner')] },
      );
    });
  });
}
