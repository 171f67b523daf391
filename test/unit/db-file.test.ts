// Which files the server may use, and rebuild, as its index (src/index/db-file.ts):
// a table over real files in a temp folder.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { dbFileProblem, inspectDbFile } from '../../src/index/db-file.ts';
import { openDb } from '../../src/index/db.ts';
import { silentLogger } from '../../src/log.ts';
import { chooseDriver, openDatabase } from '../../src/sqlite.ts';
import { tempDir } from '../basics.ts';

describe('inspectDbFile and dbFileProblem', () => {
  const driver = chooseDriver();
  const dir = tempDir();
  after(dir.cleanup);
  const at = (name: string) => join(dir.path, name);

  writeFileSync(at('notes.txt'), 'precious\n');
  writeFileSync(at('empty.db'), '');
  mkdirSync(at('folder'));
  symlinkSync(at('nowhere'), at('dangling.db'));
  writeFileSync(at('corrupt.db'), Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), Buffer.alloc(5000, 0xab)]));
  const theirs = openDatabase(at('theirs.db'), driver);
  theirs.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('owner', 'someone else')`);
  theirs.close();
  // An index written before the mark: meta with cursor_secret, and entries.
  const older = openDatabase(at('older.db'), driver);
  older.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('cursor_secret', 'x'); CREATE TABLE entries (uri TEXT PRIMARY KEY)`);
  older.close();
  openDb(at('ours.db'), silentLogger).db.close();
  // What a server killed between setting WAL mode and committing its schema leaves: a header, nothing else.
  const blank = openDatabase(at('blank.db'), driver);
  blank.pragma('journal_mode = WAL');
  blank.close();
  // No schema either, but someone set its version: not blank.
  const versioned = openDatabase(at('versioned.db'), driver);
  versioned.pragma('user_version = 7');
  versioned.close();
  const hasMkfifo = process.platform !== 'win32';
  if (hasMkfifo) execFileSync('mkfifo', [at('fifo.db')]);

  const cases: [name: string, kind: string, reason?: RegExp][] = [
    ['absent.db', 'absent'],
    ['empty.db', 'empty'],
    ['ours.db', 'index'],
    ['older.db', 'index'],
    ['blank.db', 'empty'],
    ['versioned.db', 'refuse', /did not make/],
    ['notes.txt', 'refuse', /is not an SQLite database/],
    ['theirs.db', 'refuse', /SQLite database that folder-mcp did not make/],
    ['corrupt.db', 'refuse', /did not make/],
    ['folder', 'refuse', /is a folder/],
    ['dangling.db', 'refuse', /symbolic link to nothing/],
    ...(hasMkfifo ? ([['fifo.db', 'refuse', /not a regular file/]] as [string, string, RegExp][]) : []),
  ];
  for (const [name, kind, reason] of cases) {
    test(`${name}: ${kind}`, () => {
      const found = inspectDbFile(at(name));
      assert.equal(found.kind, kind);
      if (reason) assert.match((found as { reason: string }).reason, reason);
      // Given with --db, only a file that may be used is accepted.
      const problem = dbFileProblem(at(name), false);
      if (kind === 'refuse') assert.match(problem ?? '', /refusing to overwrite it/);
      else assert.equal(problem, null);
    });
  }

  test('in our own cache folder, a corrupt or foreign file is ours to rebuild, a folder never', () => {
    assert.equal(dbFileProblem(at('corrupt.db'), true), null);
    assert.equal(dbFileProblem(at('notes.txt'), true), null);
    assert.match(dbFileProblem(at('folder'), true) ?? '', /is a folder/);
  });

  test('a place that cannot be written is refused before anything is made there', () => {
    assert.match(dbFileProblem(join(at('notes.txt'), 'sub', 'x.db'), false) ?? '', /cannot be created \(ENOTDIR/);
    assert.equal(dbFileProblem(':memory:', false), null);
  });

  test('openDb rebuilds an index of ours with another schema version, and never touches one that is not ours', () => {
    const db = openDatabase(at('older.db'), driver);
    db.pragma('user_version = 1');
    db.close();
    const opened = openDb(at('older.db'), silentLogger);
    assert.equal(opened.warm, false);
    opened.db.close();
    assert.throws(() => openDb(at('theirs.db'), silentLogger), /did not make: not touching it/);
    assert.throws(() => openDb(at('notes.txt'), silentLogger), /not an SQLite database, so not a folder-mcp index: not touching it/);
    const still = openDatabase(at('theirs.db'), driver, { readOnly: true });
    assert.deepEqual(still.prepare('SELECT * FROM meta').all().map((row) => ({ ...(row as object) })), [{ key: 'owner', value: 'someone else' }]);
    still.close();
  });
});
