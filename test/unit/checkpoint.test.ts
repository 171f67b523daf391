// The index's WAL checkpoints on a thread of their own (src/index/checkpoint.ts,
// the built dist/checkpoint-worker.js: npm test builds first): the WAL must
// stay bounded without SQLite's automatic checkpoint on the main connection,
// and a thread that cannot run must give the checkpoints back to SQLite.
import assert from 'node:assert/strict';
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Checkpointer, defaultCheckpointWorkerUrl } from '../../src/index/checkpoint.ts';
import { openDb, type Db } from '../../src/index/db.ts';
import { FolderIndex } from '../../src/index/folder-index.ts';
import { makeRoot } from '../../src/uri.ts';
import { createLogger, silentLogger, type Logger } from '../../src/log.ts';
import { tempDir, waitFor } from '../helpers.ts';

const MIB = 1024 * 1024;

/** Writes `transactions` transactions of about 1 MiB each, letting the event loop turn between them as the server's writers do. */
async function writeMiBs(db: Db, transactions: number, between: () => Promise<void>): Promise<void> {
  db.exec('CREATE TABLE IF NOT EXISTS filler (id INTEGER PRIMARY KEY, blob BLOB)');
  const insert = db.prepare('INSERT INTO filler (blob) VALUES (?)');
  const oneMiB = db.transaction(() => {
    for (let i = 0; i < 16; i++) insert.run(Buffer.alloc(64 * 1024, i));
  });
  for (let t = 0; t < transactions; t++) {
    oneMiB();
    await between();
  }
}

const walBytes = (file: string) => statSync(`${file}-wal`).size;

/** An index file opened as the server opens it, with a Checkpointer on it; all closed and removed after `run`. */
async function withDb(log: Logger, run: (ctx: { file: string; db: Db; checkpointer: Checkpointer }) => Promise<void> | void): Promise<void> {
  const dir = tempDir();
  const file = join(dir.path, 'index.db');
  const { db } = openDb(file, log);
  const checkpointer = new Checkpointer(db, log);
  try {
    await run({ file, db, checkpointer });
  } finally {
    checkpointer.close();
    db.close();
    dir.cleanup();
  }
}

test('the checkpoint thread keeps the WAL bounded while the main connection never checkpoints', async () => {
  const url = defaultCheckpointWorkerUrl();
  assert.ok(url, 'dist/checkpoint-worker.js is built (npm test builds first)');
  await withDb(silentLogger, async ({ file, db, checkpointer }) => {
    checkpointer.start(file, url);
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0);
    await writeMiBs(db, 40, () => checkpointer.idle());
    assert.ok(checkpointer.runs >= 1, `checkpoints run: ${checkpointer.runs}`);
    // 40 MiB went through the WAL; checkpointed as it went, the writer started it over each time.
    assert.ok(walBytes(file) < 8 * MIB, `WAL is ${walBytes(file)} bytes`);
  });
});

test('a checkpoint thread that cannot start gives the checkpoints back to SQLite', async () => {
  const warnings: string[] = [];
  await withDb(createLogger('warn', (line) => warnings.push(line)), async ({ file, db, checkpointer }) => {
    checkpointer.start(file, new URL('file:///nonexistent/checkpoint-worker.js'));
    await waitFor(() => db.pragma('wal_autocheckpoint', { simple: true }) === 1000, 10_000, 'the automatic checkpoint back on');
    assert.match(warnings.join('\n'), /checkpoint thread .*SQLite checkpoints on the main thread again/);
    await writeMiBs(db, 40, () => new Promise((resolve) => setImmediate(resolve)));
    assert.ok(walBytes(file) < 8 * MIB, `WAL is ${walBytes(file)} bytes`);
  });
});

test('a checkpoint that fails gives the checkpoints back to SQLite (the WAL must not grow meanwhile)', async () => {
  const warnings: string[] = [];
  await withDb(createLogger('warn', (line) => warnings.push(line)), async ({ file, db, checkpointer }) => {
    checkpointer.start(file, defaultCheckpointWorkerUrl());
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0);
    // The main connection keeps the file open; the thread, opening it by name for each checkpoint, cannot.
    rmSync(file);
    await writeMiBs(db, 1, async () => {});
    await waitFor(() => db.pragma('wal_autocheckpoint', { simple: true }) === 1000, 10_000, 'the automatic checkpoint back on');
    assert.match(warnings.join('\n'), /checkpoint thread could not checkpoint .*SQLite checkpoints on the main thread again/);
  });
});

test('without a thread (an index in memory, or none given) SQLite keeps checkpointing', async () => {
  await withDb(silentLogger, ({ file, db, checkpointer }) => {
    checkpointer.start(file, null);
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000);
  });
});

test('an index closed at any moment, checkpoint running or not, leaves no WAL behind', async () => {
  const folder = tempDir();
  const state = tempDir('folder-mcp-state-');
  try {
    // Closing at many points of the thread's 200 ms cycle, several of them while a checkpoint of ~16 MiB runs.
    for (const waitMs of [0, 190, 200, 210, 220, 230, 240, 250, 270, 300, 400]) {
      const file = join(state.path, `index-${waitMs}.db`);
      const index = new FolderIndex({ roots: [makeRoot(folder.path)], dbFile: file, log: silentLogger, gitignore: true, exclude: [] });
      await index.ready;
      await waitFor(() => index.db.pragma('wal_autocheckpoint', { simple: true }) === 0, 10_000, 'the checkpoint thread');
      await writeMiBs(index.db, 16, async () => {});
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      index.close();
      assert.equal(existsSync(`${file}-wal`), false, `WAL left behind when closed ${waitMs} ms after the writes`);
    }
  } finally {
    folder.cleanup();
    state.cleanup();
  }
});
