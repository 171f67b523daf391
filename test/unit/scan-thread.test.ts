// The cold scan's walk moving between threads: a Walk resumed from another
// Walk's state, and scanInThread handing a real walk of a real tree to its
// worker thread (the built dist/scan-worker.js: npm test builds first),
// which must give what a walk on this thread gives, and leave the index whole.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { EntryColumns } from '../../src/entry.ts';
import { SECONDARY_INDEXES, getMeta } from '../../src/index/db.ts';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { IgnoreRules } from '../../src/index/ignore.ts';
import { Walk, type ScanBatch } from '../../src/index/scan.ts';
import { scanInThread, type ColumnBatch } from '../../src/index/scan-thread.ts';
import { builtScriptUrl } from '../../src/workers.ts';
import { SkipReport } from '../../src/index/servable.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import { makeRoot } from '../../src/uri.ts';
import { writeRawName } from '../disk-helpers.ts';
import { bigTree, diskUris, tempDir, writeTree } from '../basics.ts';
import { Reconciler } from '../../src/sync/reconcile.ts';

const IGNORE = { gitignore: true, exclude: [] };

/** What a walk hands over, batch boundaries aside: rows and directories read, in order. */
function flatten(batches: ScanBatch[]): { uris: string[]; read: string[]; gitignores: string[] } {
  return {
    uris: batches.flatMap((b) => b.rows.map((r) => r.uri)),
    read: batches.flatMap((b) => b.read.map((d) => d.uri)),
    gitignores: batches.flatMap((b) => b.read.filter((d) => d.gitignore !== null).map((d) => `${d.uri}:${d.gitignore}`)),
  };
}

describe('Walk', () => {
  test('resumed from its state by a new Walk (fresh rules), it ends as one walk would', () => {
    const dir = tempDir();
    try {
      writeTree(dir.path, {
        'a/.gitignore': 'skip-*\n',
        'a/b/keep.txt': 'k',
        'a/b/skip-me.txt': 's',
        'a/b/c/skip-too.txt': 's',
        'a/b/c/deep.txt': 'd',
        'd/one.txt': '1',
        'd/e/two.txt': '2',
        'z.txt': 'z',
      });
      const root = makeRoot(dir.path);
      const options = () => ({ roots: [root], rules: new IgnoreRules([root], IGNORE), log: silentLogger, skips: new SkipReport() });
      const whole: ScanBatch[] = [];
      const one = new Walk(options());
      for (let b = one.next(2); b !== null; b = one.next(2)) whole.push(b);

      const parts: ScanBatch[] = [];
      const first = new Walk(options());
      for (let i = 0; i < 3; i++) parts.push(first.next(2)!);
      // Through a structured clone, as the state reaches the worker.
      const rest = new Walk(options(), structuredClone(first.state));
      for (let b = rest.next(2); b !== null; b = rest.next(2)) parts.push(b);

      assert.deepEqual(flatten(parts), flatten(whole));
      const uris = flatten(whole).uris;
      assert.ok(uris.some((u) => u.endsWith('/a/b/c/deep.txt')), 'the walk went on beneath the handover');
      assert.ok(!uris.some((u) => u.includes('skip-')), 'the .gitignore above the handover still applies after it');
      assert.deepEqual([...uris].sort(), uris.slice().sort(), 'rows in key order within the walk order');
    } finally {
      dir.cleanup();
    }
  });
});

describe('scanInThread', () => {
  // Big enough that the walk outlasts its first slice and the worker's start-up.
  const FILES = 20_000;
  let dir: { path: string; cleanup: () => void };
  before(() => {
    dir = tempDir();
    bigTree(dir.path, FILES, (i) => `d${String(i % 200).padStart(3, '0')}/f${i}.txt`, 'x');
    mkdirSync(join(dir.path, 'd150', 'sub'));
    writeFileSync(join(dir.path, 'd150', '.gitignore'), 'hidden.txt\n');
    writeFileSync(join(dir.path, 'd150', 'sub', 'hidden.txt'), 'h');
    writeFileSync(join(dir.path, 'd150', 'sub', 'shown.txt'), 's');
    writeRawName(join(dir.path, 'd199'), Buffer.from([0x62, 0x61, 0x64, 0xff]));
  });
  after(() => dir.cleanup());

  async function collect(workerUrl: URL | null): Promise<{ uris: string[]; read: string[]; skips: SkipReport; debug: string[] }> {
    const root = makeRoot(dir.path);
    const debug: string[] = [];
    const log = createLogger('debug', (line) => debug.push(line));
    const skips = new SkipReport();
    const batches: ColumnBatch[] = [];
    // One slice here, then the worker walks (on a loaded machine it may take longer to start than the walk).
    for await (const batch of scanInThread({ roots: [root], ignore: IGNORE, log, skips, workerUrl, dbFile: null, slicesHere: 1 })) batches.push(batch);
    const uris = batches.flatMap((b: ScanBatch<EntryColumns>) => b.rows.uri);
    return { uris, read: batches.flatMap((b) => b.read.map((d) => d.uri)), skips, debug };
  }

  test('the worker takes the walk over and hands over what a walk on this thread does', async () => {
    const url = builtScriptUrl('scan-worker');
    const there = await collect(url);
    assert.ok(
      there.debug.some((line) => line.includes('the walk moves to its worker thread')),
      `the walk was handed over (else this test shows nothing): ${there.debug.join('')}`,
    );
    const here = await collect(null);
    assert.equal(there.uris.length, FILES + 200 + 1 + 3, 'files, their folders, the root, and d150/: .gitignore, sub/, sub/shown.txt');
    assert.deepEqual(there.uris, here.uris);
    assert.deepEqual(there.read, here.read);
    assert.ok(!there.uris.some((u) => u.endsWith('/hidden.txt')), 'the .gitignore read in the worker applied there');
    assert.deepEqual(there.skips.counts, { name: 1, deep: 0 }, "the worker's skips reach the caller");
    assert.deepEqual(there.skips.counts, here.skips.counts);
  });

  test('a worker that cannot start leaves the walk on the main thread, and the walk whole', async () => {
    const here = await collect(null);
    const missing = await collect(new URL('file:///nonexistent/scan-worker.js'));
    assert.ok(missing.debug.some((line) => line.includes('walking on the main thread')), missing.debug.join(''));
    assert.deepEqual(missing.uris, here.uris);
  });

  test('a cold FolderIndex walked by the worker ends complete, its secondary indexes built', async () => {
    const dbDir = tempDir();
    const db = join(dbDir.path, 'index.db');
    const debug: string[] = [];
    const index = new FolderIndex({ roots: [makeRoot(dir.path)], dbFile: db, log: createLogger('debug', (l) => debug.push(l)), ...IGNORE, scanSlicesHere: 1 });
    try {
      await index.readiness.reached('scanned');
      assert.ok(debug.some((line) => line.includes('the walk moves to its worker thread')), 'the walk was handed over');
      assert.equal(index.store.count(), FILES + 200 + 1 + 3);
      const indexes = index.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'entries' AND sql IS NOT NULL`).all() as { name: string }[];
      assert.deepEqual(indexes.map((i) => i.name).sort(), Object.keys(SECONDARY_INDEXES).sort());
      assert.ok(getMeta(index.db, 'scan_completed'), 'the scan is marked complete');
      assert.equal(index.store.countChildren(`${makeRoot(dir.path).uri}d150/`), 100 + 2, 'children of a folder (100 files, .gitignore, sub/) from entries_by_parent');
    } finally {
      index.close();
      dbDir.cleanup();
    }
  });
});

describe('a whole-root check from the walk (Reconciler.tree of a root)', () => {
  test('walked by the worker, it brings the index back to the disk: added, removed, changed, ignored, gone folders', async () => {
    const dir = tempDir();
    const dbDir = tempDir();
    const debug: string[] = [];
    const log = createLogger('debug', (line) => debug.push(line));
    const root = makeRoot(dir.path);
    bigTree(dir.path, 20_000, (i) => `d${String(i % 200).padStart(3, '0')}/f${i}.txt`, 'x');
    const index = new FolderIndex({ roots: [root], dbFile: join(dbDir.path, 'index.db'), log, ...IGNORE, scanSlicesHere: 1 });
    try {
      await index.readiness.reached('scanned');
      writeFileSync(join(dir.path, 'd010', 'new.txt'), 'new');
      rmSync(join(dir.path, 'd020', 'f20.txt'));
      // A new inode (the tree's files are hard links of one): another size.
      rmSync(join(dir.path, 'd030', 'f30.txt'));
      writeFileSync(join(dir.path, 'd030', 'f30.txt'), 'longer now');
      rmSync(join(dir.path, 'd040'), { recursive: true });
      writeTree(dir.path, { 'dnew/sub/x.txt': 'x', 'd050/.gitignore': 'f50.txt\n' });
      debug.length = 0;
      const reconciler = new Reconciler(index, log, new AbortController().signal);
      await reconciler.tree(root.path);
      assert.ok(debug.some((line) => line.includes('the walk moves to its worker thread')), 'the check was walked by the worker');
      const indexed = (index.db.prepare('SELECT uri FROM entries ORDER BY uri').all() as { uri: string }[]).map((r) => r.uri);
      const expected = diskUris(dir.path).filter((u) => !u.endsWith('/d050/f50.txt'));
      assert.deepEqual(indexed, expected);
      assert.equal(index.store.get(`${root.uri}d030/f30.txt`)?.size, 'longer now'.length);
      // new.txt, f30, d050/.gitignore, dnew/, dnew/sub/, x.txt upserted (and d050/ and d010/ whose
      // mtimes changed); f20, d040/ (with its subtree) and f50 removed.
      assert.ok(reconciler.written >= 9, `written: ${reconciler.written}`);
    } finally {
      index.close();
      dir.cleanup();
      dbDir.cleanup();
    }
  });
});
