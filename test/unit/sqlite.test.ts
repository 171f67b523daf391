// The storage seam (src/sqlite.ts): one conformance suite, run against each
// driver this runtime can load (node:sqlite on Node >= 22.16, better-sqlite3
// where it is installed and built for this Node). CI runs it on Node 20 and on
// Node 24, so each driver is checked on at least one; the file written by one
// and opened by the other is checked across two Nodes in
// test/e2e/sqlite-drivers.e2e.test.ts.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { openDb, PAGE_SIZE, setMeta } from '../../src/index/db.ts';
import { silentLogger } from '../../src/log.ts';
import { chooseDriver, isSqliteError, nodeSqliteAvailable, openDatabase, SqliteDriverError, type Database, type SqliteDriverName } from '../../src/sqlite.ts';
import { tempDir } from '../basics.ts';

function loads(driver: SqliteDriverName): boolean {
  try {
    return chooseDriver(driver) === driver;
  } catch (error) {
    if (error instanceof SqliteDriverError) return false;
    throw error;
  }
}

test('auto picks node:sqlite exactly where it has FTS5 (Node >= 22.16), else better-sqlite3', () => {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  // Node 22.13-22.15 have node:sqlite without FTS5; 23.x is end of life and not judged here.
  if (major === 20 || (major === 22 && minor < 16)) assert.equal(nodeSqliteAvailable(), false);
  if ((major === 22 && minor >= 16) || major >= 24) assert.equal(nodeSqliteAvailable(), true);
  assert.equal(chooseDriver('auto'), nodeSqliteAvailable() ? 'node' : 'better-sqlite3');
});

test('node:sqlite forced where it cannot hold the index is refused with what to do', { skip: nodeSqliteAvailable() ? 'this Node has a usable node:sqlite' : false }, () => {
  assert.throws(() => chooseDriver('node'), (error: Error) => error instanceof SqliteDriverError && /needs Node\.js >= 22\.16/.test(error.message));
});

test('at least one driver loads', () => {
  assert.ok(loads('node') || loads('better-sqlite3'));
});

for (const driver of ['node', 'better-sqlite3'] as const) {
  describe(`driver ${driver}`, { skip: loads(driver) ? false : `${driver} cannot be loaded by Node ${process.version}` }, () => {
    const dir = tempDir();
    after(dir.cleanup);
    let n = 0;
    const fresh = (): Database => {
      const db = openDatabase(join(dir.path, `t${n++}.db`), driver);
      db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID');
      return db;
    };
    const count = (db: Database) => (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;

    test('a transaction commits when it returns and rolls back, rethrowing, when it throws', () => {
      const db = fresh();
      const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
      const many = db.transaction((rows: [string, number][]) => {
        for (const [k, v] of rows) insert.run(k, v);
        return rows.length;
      });
      assert.equal(many([['a', 1], ['b', 2]]), 2);
      assert.equal(count(db), 2);
      assert.throws(() => many([['c', 3], ['a', 9]]), (error) => isSqliteError(error) && /UNIQUE/.test(error.message));
      assert.equal(count(db), 2, 'the failed batch left a row behind');
      const failing = db.transaction(() => {
        insert.run('d', 4);
        throw new TypeError('not SQLite');
      });
      assert.throws(failing, (error) => error instanceof TypeError && !isSqliteError(error));
      assert.equal(count(db), 2);
      // The connection is usable after both.
      many([['e', 5]]);
      assert.equal(count(db), 3);
      db.close();
    });

    test('a transaction inside another is a savepoint: its failure keeps the outer work', () => {
      const db = fresh();
      const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
      const inner = db.transaction((k: string) => {
        insert.run(k, 1);
        throw new Error('inner fails');
      });
      const outer = db.transaction(() => {
        insert.run('kept', 1);
        assert.throws(() => inner('dropped'), /inner fails/);
        insert.run('also kept', 2);
      });
      outer();
      assert.deepEqual((db.prepare('SELECT k FROM t ORDER BY k').all() as { k: string }[]).map((r) => r.k), ['also kept', 'kept']);
      db.close();
    });

    test('pragma returns the first column of the first row, undefined for one that returns none', () => {
      const db = fresh();
      assert.equal(db.pragma('busy_timeout'), 5000, 'every connection waits 5 s for a lock');
      assert.equal(db.pragma('journal_mode = WAL'), 'wal');
      assert.equal(db.pragma('synchronous = OFF'), undefined);
      assert.equal(db.pragma('synchronous'), 0);
      assert.equal(db.pragma('user_version = 7'), undefined);
      assert.equal(db.pragma('user_version'), 7);
      db.close();
    });

    test('prepareRows gives rows as arrays in the SELECT order', () => {
      const db = fresh();
      db.prepare('INSERT INTO t (k, v) VALUES (?, ?)').run('x', 42);
      const rows = db.prepareRows('SELECT v, k, NULL AS z FROM t WHERE k > ? ORDER BY k');
      assert.deepEqual(rows.all(''), [[42, 'x', null]]);
      assert.deepEqual(rows.all('x'), []);
      db.close();
    });

    test('values round-trip: numbers bind as REAL, integral ones read back as numbers; blobs as bytes', () => {
      const db = fresh();
      db.exec('CREATE TABLE b (id INTEGER PRIMARY KEY, data BLOB, r REAL)');
      const bytes = new Uint8Array([0, 1, 2, 254, 255]);
      db.prepare('INSERT INTO b (id, data, r) VALUES (?, ?, ?)').run(3, Buffer.from(bytes), 1.5);
      const row = db.prepare('SELECT id, data, r, typeof(id) AS t FROM b').get() as { id: number; data: Uint8Array; r: number; t: string };
      assert.equal(row.id, 3);
      assert.equal(row.t, 'integer');
      assert.equal(row.r, 1.5);
      assert.ok(row.data instanceof Uint8Array);
      assert.deepEqual([...row.data], [...bytes]);
      assert.equal((db.prepare('SELECT typeof(?) AS t').get(3) as { t: string }).t, 'real');
      assert.equal(db.prepare('SELECT 1 FROM b WHERE id = ?').get(99), undefined, 'no row is undefined');
      const run = db.prepare('INSERT INTO b (data) VALUES (NULL)').run();
      assert.equal(run.changes, 1);
      assert.equal(Number(run.lastInsertRowid), 4);
      db.close();
    });

    test('FTS5 with the index tokenizer, and a user function', () => {
      const db = fresh();
      db.exec(`CREATE VIRTUAL TABLE f USING fts5(body, tokenize = 'unicode61 remove_diacritics 2', prefix = '3')`);
      const put = db.prepare('INSERT INTO f (rowid, body) VALUES (CAST(? AS INTEGER), ?)');
      put.run(1, 'café au lait');
      put.run(2, 'tea');
      db.function('twice', { deterministic: true }, (x: unknown) => (typeof x === 'number' ? x * 2 : null));
      const hits = db.prepare(`SELECT rowid AS id, twice(rowid) AS d FROM f WHERE f MATCH ? AND rowid = CAST(? AS INTEGER)`).all('cafe', 1);
      assert.deepEqual(hits.map((h) => ({ ...(h as object) })), [{ id: 1, d: 2 }]);
      assert.equal((db.prepare(`SELECT count(*) AS n FROM f WHERE f MATCH 'caf*'`).get() as { n: number }).n, 1);
      db.close();
    });

    test('read-only: a missing file is an SQLite error, and nothing can be written', () => {
      assert.throws(() => openDatabase(join(dir.path, 'missing.db'), driver, { readOnly: true }), (error) => isSqliteError(error));
      const file = join(dir.path, 'ro.db');
      fresh().close();
      const writer = openDatabase(file, driver);
      writer.exec('CREATE TABLE x (a)');
      writer.close();
      const reader = openDatabase(file, driver, { readOnly: true });
      assert.throws(() => reader.exec('INSERT INTO x VALUES (1)'), (error) => isSqliteError(error) && /readonly/i.test(error.message));
      reader.close();
    });

    test('a file that is not a database is an SQLite error at the first statement', async () => {
      const { writeFileSync } = await import('node:fs');
      const file = join(dir.path, 'notes.txt');
      writeFileSync(file, 'just some text, not a database at all'.repeat(200));
      assert.throws(
        () => {
          const db = openDatabase(file, driver);
          try {
            db.pragma('journal_mode = WAL');
          } finally {
            db.close();
          }
        },
        (error) => isSqliteError(error) && /not a database/.test(error.message),
      );
    });

    test('a new index file has PAGE_SIZE pages; an index written with 4 KiB pages opens warm and keeps them', () => {
      const pageSize = (db: Database) => db.pragma('page_size') as number;
      const made = openDb(join(dir.path, `new${n++}.db`), silentLogger, false, driver);
      assert.equal(made.warm, false);
      assert.equal(pageSize(made.db), PAGE_SIZE);
      made.db.close();
      // An index from before PAGE_SIZE: SQLite's default, fixed by its first table.
      const file = join(dir.path, `old${n++}.db`);
      const before = openDatabase(file, driver);
      before.pragma('page_size = 4096');
      before.exec('CREATE TABLE x (a); DROP TABLE x');
      before.close();
      const first = openDb(file, silentLogger, false, driver);
      assert.equal(pageSize(first.db), 4096);
      setMeta(first.db, 'scan_completed', new Date().toISOString());
      first.db.close();
      const again = openDb(file, silentLogger, false, driver);
      assert.equal(again.warm, true, 'an index of 4 KiB pages was rebuilt');
      assert.equal(pageSize(again.db), 4096);
      again.db.close();
    });

    test('close is idempotent and says so', () => {
      const db = fresh();
      assert.equal(db.open, true);
      assert.equal(db.driver, driver);
      db.close();
      db.close();
      assert.equal(db.open, false);
    });
  });
}
