// Which files the server may use, and rebuild, as its index (src/index/db-file.ts):
// a table over real files in a temp folder.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { dbFileProblem, inspectDbFile, sharedPlaceProblem } from '../../src/index/db-file.ts';
import { openDb } from '../../src/index/db.ts';
import { silentLogger } from '../../src/log.ts';
import { chooseDriver, openDatabase } from '../../src/sqlite.ts';
import { tempDir } from '../basics.ts';

/** A rollback journal's first 28 bytes as SQLite writes them before the journal is synced: the magic still zero. */
function journalHead(sectorSize: number, pageSize: number): Buffer {
  const head = Buffer.alloc(512);
  head.writeUInt32BE(sectorSize, 20);
  head.writeUInt32BE(pageSize, 24);
  return head;
}

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
  // A served file's other name: as the index it would be served, cursor key and all.
  writeFileSync(at('served-empty.txt'), '');
  linkSync(at('served-empty.txt'), at('hardlinked.db'));
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
    ['corrupt.db', 'refuse', /cannot be read as an SQLite database to see whose it is \(.+\)/],
    ['hardlinked.db', 'refuse', /has 1 other name\(s\) \(hard links\)/],
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
    assert.match(dbFileProblem(at('hardlinked.db'), true) ?? '', /hard links/);
    assert.equal(readFileSync(at('served-empty.txt'), 'utf8'), '', 'its other name untouched');
  });

  test('--db beside a file the server would delete or SQLite would rewrite (a lock, -wal, -shm) that is not theirs: refused, the file intact', () => {
    const wal = Buffer.alloc(32);
    wal.writeUInt32BE(0x377f0682, 0);
    const shm = Buffer.alloc(32);
    shm.writeUInt32LE(3007000, 0);
    const beside: [db: string, file: string, content: string | Buffer | 'folder' | 'link', refused: RegExp | null][] = [
      ['Cargo', 'Cargo.lock', '# This file is automatically @generated by Cargo.\n', /Cargo\.lock is there and is not a folder-mcp lock/],
      ['stale', 'stale.lock', '424242', null],
      ['unwritten', 'unwritten.lock', '', null],
      ['long', 'long.lock', '9'.repeat(17), /is not a folder-mcp lock/],
      ['dir', 'dir.lock', 'folder', /is not a folder-mcp lock/],
      ['notes', 'notes-wal', 'my precious notes\n', /notes-wal is there and is not SQLite's write-ahead log/],
      ['logged', 'logged-wal', wal, null],
      ['linked', 'linked-wal', 'link', /linked-wal is there and is not SQLite's write-ahead log/],
      ['memo', 'memo-shm', 'my shm notes\n', /memo-shm is there and is not SQLite's shared-memory file/],
      ['shared', 'shared-shm', shm, null],
      // Beside an index of ours, SQLite's files are its own (a killed server's -shm may be half made).
      ['ours.db', 'ours.db-shm', 'abc', null],
      ['work', 'work-journal', 'my journal entry\n', /work-journal is there and is not SQLite's rollback journal/],
      ['journaled', 'journaled-journal', Buffer.concat([Buffer.from('d9d505f920a163d7', 'hex'), Buffer.alloc(24)]), null],
      // What a server killed while making a new index leaves: the header before its magic is written.
      ['crashed', 'crashed-journal', journalHead(512, 4096), null],
      ['zeros', 'zeros-journal', Buffer.alloc(512), /zeros-journal is there and is not SQLite's rollback journal/],
      ['odd', 'odd-journal', journalHead(512, 1000), /odd-journal is there and is not/],
    ];
    const room = join(dir.path, 'beside');
    mkdirSync(room);
    for (const [db, file, content, refused] of beside) {
      const path = join(room, file);
      // An index of ours, closed (SQLite removed its -wal), then a file of that name.
      if (db === 'ours.db') openDb(join(room, db), silentLogger).db.close();
      if (content === 'folder') mkdirSync(path);
      else if (content === 'link') symlinkSync(at('notes.txt'), path);
      else writeFileSync(path, content);
      const problem = dbFileProblem(join(room, db), false);
      if (refused === null) assert.equal(problem, null, file);
      else {
        assert.match(problem ?? '', refused, file);
        assert.match(problem ?? '', /refusing to overwrite it/, file);
      }
      // The server's own cache folder holds nothing of anyone else's: nothing there is refused.
      assert.equal(dbFileProblem(join(room, db), true), null, file);
    }
    assert.equal(readFileSync(join(room, 'Cargo.lock'), 'utf8'), '# This file is automatically @generated by Cargo.\n');
    assert.equal(readFileSync(at('notes.txt'), 'utf8'), 'precious\n');
  });

  test('an index of ours with a hot journal beside it that a read-only look cannot play: refused, and it says why', () => {
    const room = join(dir.path, 'hot');
    mkdirSync(room);
    openDb(join(room, 'notes'), silentLogger).db.close();
    writeFileSync(join(room, 'notes-journal'), 'my journal entry\n');
    assert.match(dbFileProblem(join(room, 'notes'), false) ?? '', /cannot be read as an SQLite database to see whose it is/);
    assert.equal(readFileSync(join(room, 'notes-journal'), 'utf8'), 'my journal entry\n');
  });

  test("a running program's pid file as the lock (--db run/mydaemon) is refused; a marked lock of ours is not", { skip: process.platform !== 'linux' && 'needs /proc to tell a program from folder-mcp' }, (t) => {
    const room = join(dir.path, 'run');
    mkdirSync(room);
    const daemon = spawn('sleep', ['60'], { stdio: 'ignore' });
    t.after(() => daemon.kill());
    writeFileSync(join(room, 'mydaemon.lock'), `${daemon.pid}\n`);
    assert.match(dbFileProblem(join(room, 'mydaemon'), false) ?? '', /mydaemon\.lock is there and is not a folder-mcp lock/);
    assert.equal(readFileSync(join(room, 'mydaemon.lock'), 'utf8'), `${daemon.pid}\n`);
    writeFileSync(join(room, 'ours.lock'), `folder-mcp ${daemon.pid}`);
    assert.equal(dbFileProblem(join(room, 'ours'), false), null, 'marked: a folder-mcp whose pid was reused, taken over');
    // Beside an index of ours, a pid alone is the lock a server before the mark left (upgraded after a crash).
    openDb(join(room, 'index.db'), silentLogger).db.close();
    writeFileSync(join(room, 'index.db.lock'), `${daemon.pid}`);
    assert.equal(dbFileProblem(join(room, 'index.db'), false), null);
  });

  test('a place other users could read the index through: a file of theirs among its names, or a folder every user may write (a red-team finding)', () => {
    const folder = (mode: number) => ({ path: '/srv/team', mode: 0o40000 | mode });
    const cases: [uid: number, mode: number, files: { path: string; uid: number }[], refused: RegExp | null][] = [
      [1000, 0o700, [], null],
      [1000, 0o755, [{ path: '/srv/team/idx.db', uid: 1000 }, { path: '/srv/team/idx.db-wal', uid: 1000 }], null],
      // Group-writable folders are left to the group's trust (a user's private group is the common case).
      [1000, 0o775, [], null],
      // Another user made the file first: an empty index file, or only its -wal, that they can read.
      [1000, 0o755, [{ path: '/srv/team/idx.db', uid: 65534 }], /idx\.db belongs to another user \(uid 65534\)/],
      [1000, 0o700, [{ path: '/srv/team/idx.db', uid: 1000 }, { path: '/srv/team/idx.db-wal', uid: 0 }], /idx\.db-wal belongs to another user \(uid 0\)/],
      [1000, 0o700, [{ path: '/srv/team/idx.db.lock', uid: 1001 }], /idx\.db\.lock belongs to another user/],
      // /tmp: anyone may make idx.db-wal there at any time, sticky bit or not.
      [1000, 0o1777, [], /its folder \/srv\/team can be written by every user/],
      [1000, 0o777, [{ path: '/srv/team/idx.db', uid: 1000 }], /can be written by every user/],
      [0, 0o1777, [], /can be written by every user/],
    ];
    for (const [uid, mode, files, refused] of cases) {
      const problem = sharedPlaceProblem(uid, folder(mode), files);
      const label = `uid ${uid}, folder ${mode.toString(8)}, ${JSON.stringify(files)}`;
      if (refused === null) assert.equal(problem, null, label);
      else assert.match(problem ?? '', refused, label);
    }
  });

  test('--db in a folder every user may write, or beside a file of another user, is refused, and nothing is made', { skip: process.platform === 'win32' && 'no uid' }, (t) => {
    const open = join(dir.path, 'open');
    mkdirSync(open);
    chmodSync(open, 0o1777);
    assert.match(dbFileProblem(join(open, 'idx.db'), false) ?? '', /^--db .*idx\.db: its folder .*open can be written by every user/);
    assert.match(dbFileProblem(join(open, 'idx.db'), true) ?? '', /can be written by every user/);
    if (process.getuid?.() !== 0) return t.skip('making a file of another user needs root');
    const team = join(dir.path, 'team');
    mkdirSync(team);
    writeFileSync(join(team, 'idx.db-wal'), '');
    chownSync(join(team, 'idx.db-wal'), 65534, 65534);
    assert.match(dbFileProblem(join(team, 'idx.db'), false) ?? '', /idx\.db-wal belongs to another user \(uid 65534\)/);
    assert.equal(readFileSync(join(team, 'idx.db-wal'), 'utf8'), '');
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
