// The index path at start-up, through the built binary (issue 23, items 1-5):
// a --db typo never destroys a file, and every unusable place is one stderr
// line and exit 2 before anything is served.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';

import { chooseDriver, nodeSqliteAvailable, openDatabase } from '../../src/sqlite.ts';
import { CLI, connect, tempDir, type Connected } from '../helpers.ts';


/** A server for the length of `use`, closed whatever happens. */
async function withServer(args: string[], use: (conn: Connected) => Promise<unknown>): Promise<void> {
  const conn = await connect(args);
  try {
    await use(conn);
  } finally {
    await conn.close();
  }
}

/** Runs the CLI to its end with stdin closed: its exit code and stderr lines. */
function run(args: string[], env: Record<string, string> = {}, cli = CLI) {
  const result = spawnSync(process.execPath, [cli, ...args], { input: '', env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, lines: result.stderr.split('\n').filter(Boolean) };
}

describe('--db never destroys a file, and an unusable index is exit 2 with one line', () => {
  const dir = tempDir();
  after(dir.cleanup);
  const folder = join(dir.path, 'notes');
  mkdirSync(folder);
  writeFileSync(join(folder, 'a.md'), '# a\n');
  const at = (name: string) => join(dir.path, name);

  test('a text file given as --db is refused and left as it was', () => {
    writeFileSync(at('x.txt'), 'precious\n');
    const { status, lines } = run(['--db', at('x.txt'), folder]);
    assert.equal(status, 2);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /^folder-mcp: --db .*x\.txt is not an SQLite database, so not a folder-mcp index; refusing to overwrite it/);
    assert.equal(readFileSync(at('x.txt'), 'utf8'), 'precious\n');
  });

  test('another program\'s SQLite database is refused and left as it was', () => {
    const db = openDatabase(at('app.sqlite'), chooseDriver());
    db.exec(`CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('mine', 'yes')`);
    db.close();
    const before = readFileSync(at('app.sqlite'));
    const { status, lines } = run(['--db', at('app.sqlite'), folder]);
    assert.equal(status, 2);
    assert.deepEqual(lines.length, 1);
    assert.match(lines[0]!, /is an SQLite database that folder-mcp did not make/);
    assert.ok(readFileSync(at('app.sqlite')).equals(before));
  });

  test('a folder given as --db is refused and not touched', () => {
    mkdirSync(at('adir'), { mode: 0o755 });
    const mode = statSync(at('adir')).mode;
    const { status, lines } = run(['--db', at('adir'), folder]);
    assert.equal(status, 2);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /--db .*adir is a folder, not a file/);
    assert.equal(statSync(at('adir')).mode, mode);
    assert.deepEqual(readdirSync(at('adir')), []);
  });

  test('a place that cannot be written: --db, and the default cache folder', () => {
    const proc = run(['--db', '/proc/folder-mcp-test.db', folder]);
    assert.equal(proc.status, 2);
    assert.equal(proc.lines.length, 1);
    assert.match(proc.lines[0]!, /--db \/proc\/folder-mcp-test\.db cannot be created/);
    // A cache folder below a file: unwritable whoever runs the test (root included).
    const cache = run([folder], { XDG_CACHE_HOME: join(at('x.txt'), 'cache') });
    assert.equal(cache.status, 2);
    assert.equal(cache.lines.length, 1);
    assert.match(cache.lines[0]!, /the index file .* cannot be created \(ENOTDIR .*give a writable place with --db PATH/);
  });

  test('a --db that is a symlink is judged where SQLite works, beside its target (stop 56: the user\'s -wal and -journal were deleted)', { skip: process.platform === 'win32' }, () => {
    mkdirSync(at('data'));
    writeFileSync(at('data/real.db'), '');
    writeFileSync(at('data/real.db-wal'), 'my notes\n');
    symlinkSync(at('data/real.db'), at('link.db'));
    const { status, lines } = run(['--db', at('link.db'), folder]);
    assert.equal(status, 2);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /real\.db-wal is there and is not SQLite's write-ahead log; refusing to overwrite it/);
    assert.equal(readFileSync(at('data/real.db-wal'), 'utf8'), 'my notes\n');
  });

  test('a --db symlink inside a served folder to a file outside: its lock is made outside, beside the target', { skip: process.platform === 'win32' }, async () => {
    const served = at('served-with-link');
    mkdirSync(served);
    mkdirSync(at('outside'));
    symlinkSync(at('outside/idx.db'), join(served, 'link.db'));
    // The link's target does not exist yet: a dangling link is refused, so the index is made first.
    writeFileSync(at('outside/idx.db'), '');
    await withServer([served, '--db', join(served, 'link.db'), '--watcher', 'none'], async (conn) => {
      await conn.request('resources/list', {});
      assert.deepEqual(readdirSync(served), ['link.db'], 'nothing made in the served folder');
      assert.ok(readdirSync(at('outside')).includes('idx.db.lock'));
    });
  });

  test('--db /dev/stdout (stdout redirected to a file) is refused, and the file is left as it was', { skip: process.platform === 'win32' }, () => {
    const out = openSync(at('out.log'), 'w');
    try {
      const result = spawnSync(process.execPath, [CLI, '--db', '/dev/stdout', folder], { stdio: ['ignore', out, 'pipe'], encoding: 'utf8', timeout: 60_000 });
      assert.equal(result.status, 2);
      assert.match(result.stderr, /--db \/dev\/stdout is one of this process's own files/);
    } finally {
      closeSync(out);
    }
    assert.equal(readFileSync(at('out.log'), 'utf8'), '');
    // And through a symlink to it, where the path says nothing: the file is the one stdout writes to.
    symlinkSync('/dev/stdout', at('stdout-link.db'));
    const linked = openSync(at('out2.log'), 'w');
    try {
      const result = spawnSync(process.execPath, [CLI, '--db', at('stdout-link.db'), folder], { stdio: ['ignore', linked, 'pipe'], encoding: 'utf8', timeout: 60_000 });
      assert.equal(result.status, 2);
      assert.match(result.stderr, /stdout-link\.db is the file this process's standard input, output or error is/);
    } finally {
      closeSync(linked);
    }
    assert.equal(readFileSync(at('out2.log'), 'utf8'), '');
  });

  test('an index of ours is used, and one of another schema version rebuilt with a warning', async () => {
    const db = at('index.db');
    await withServer([folder, '--db', db, '--watcher', 'none'], async (first) => {
      assert.equal(((await first.request('resources/list', {})).resources as unknown[]).length, 2);
    });
    const old = openDatabase(db, chooseDriver());
    old.pragma('user_version = 1');
    old.close();
    await withServer([folder, '--db', db, '--watcher', 'none'], async (again) => {
      assert.equal(((await again.request('resources/list', {})).resources as unknown[]).length, 2);
      assert.match(again.stderr(), /index at .*index\.db is unusable \(schema version 1, expected \d+\); rebuilding it/);
    });
  });

  test('every file the server makes beside its index is the owner\'s alone, and its folder too', { skip: process.platform === 'win32' }, async () => {
    const state = join(at('private'), 'deep');
    const db = join(state, 'index.db');
    const conn = await connect([folder, '--db', db]);
    try {
      await conn.request('resources/list', {});
      // While it runs: the database, its WAL files and the lock.
      const made = readdirSync(state);
      assert.ok(made.includes('index.db') && made.includes('index.db.lock'), made.join(', '));
      for (const name of made) assert.equal(statSync(join(state, name)).mode & 0o077, 0, `${name} is open to others`);
      assert.equal(statSync(state).mode & 0o077, 0, 'the folder made for the index is open to others');
    } finally {
      await conn.close();
    }
    for (const name of readdirSync(state)) assert.equal(statSync(join(state, name)).mode & 0o077, 0, `${name} is open to others`);
  });
});

describe('a better-sqlite3 that cannot load is never taken for a corrupt index', () => {
  const dir = tempDir();
  after(dir.cleanup);
  const folder = join(dir.path, 'notes');
  mkdirSync(folder);
  writeFileSync(join(folder, 'a.md'), '# a\n');
  const db = join(dir.path, 'index.db');

  /**
   * A copy of the built server whose better-sqlite3 is broken: its native
   * module cannot load (as one built for another Node's NODE_MODULE_VERSION
   * cannot), or the package is missing (an optional dependency whose compile
   * failed). Every other package as installed.
   */
  function brokenCopy(name: string, how: 'unloadable' | 'missing'): string {
    const repo = dirname(dirname(CLI));
    const copy = join(dir.path, name);
    cpSync(join(repo, 'dist'), join(copy, 'dist'), { recursive: true });
    cpSync(join(repo, 'package.json'), join(copy, 'package.json'));
    const modules = join(repo, 'node_modules');
    mkdirSync(join(copy, 'node_modules'));
    for (const entry of readdirSync(modules)) {
      if (entry !== 'better-sqlite3') symlinkSync(join(modules, entry), join(copy, 'node_modules', entry));
    }
    if (how === 'unloadable') {
      // A package whose native module is not a shared object: made here, so that the test needs no compiled better-sqlite3.
      const sqlite = join(copy, 'node_modules', 'better-sqlite3');
      mkdirSync(join(sqlite, 'lib'), { recursive: true });
      mkdirSync(join(sqlite, 'build', 'Release'), { recursive: true });
      writeFileSync(join(sqlite, 'package.json'), JSON.stringify({ name: 'better-sqlite3', version: '0.0.0', main: 'lib/index.js' }));
      writeFileSync(join(sqlite, 'lib', 'index.js'), "module.exports = require('../build/Release/better_sqlite3.node');\n");
      writeFileSync(join(sqlite, 'build', 'Release', 'better_sqlite3.node'), 'not a shared object');
    }
    return join(copy, 'dist', 'cli.js');
  }

  test('forced (or on a Node without node:sqlite): exit 2 with what to do; the index file and its folder left as they were', async () => {
    await withServer([folder, '--db', db, '--watcher', 'none'], (made) => made.request('resources/list', {}));
    const before = readFileSync(db);
    const unloadable = brokenCopy('unloadable', 'unloadable');
    let { status, lines } = run(['--db', db, '--sqlite-driver', 'better-sqlite3', folder], {}, unloadable);
    assert.equal(status, 2);
    assert.equal(lines.length, 1, lines.join('\n'));
    // Issue 46: on a Node.js that has node:sqlite the way out is the built-in driver, not "run on Node.js >= 22.16".
    const instead = nodeSqliteAvailable() ? /or leave --sqlite-driver at auto: this Node\.js has SQLite built in \(node:sqlite\)$/ : /or run on Node\.js >= 22\.16, which has SQLite built in$/;
    // Where to rebuild it: the folder whose node_modules holds it (npx's cache entry, a first start cut short left unbuilt).
    const where = dirname(dirname(unloadable));
    assert.ok(lines[0]!.includes(`; rebuild it for this Node (in ${where}: npm rebuild better-sqlite3), `), lines[0]);
    assert.match(lines[0]!, instead);
    ({ status, lines } = run(['--db', db, '--sqlite-driver', 'better-sqlite3', folder], {}, brokenCopy('missing', 'missing')));
    assert.equal(status, 2);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, nodeSqliteAvailable() ? /better-sqlite3 is not installed .*; it is what --sqlite-driver better-sqlite3 asks for: npm install better-sqlite3/ : /better-sqlite3 is not installed .*; on Node\.js .* folder-mcp needs it: npm install better-sqlite3/);
    assert.match(lines[0]!, instead);
    assert.ok(readFileSync(db).equals(before), 'the index file changed');
    assert.equal(existsSync(`${db}.lock`), false, 'a lock was left');
  });

  test('auto: node:sqlite where the runtime has it, so a broken better-sqlite3 does not matter there', async () => {
    const unloadable = brokenCopy('auto', 'unloadable');
    if (!nodeSqliteAvailable()) {
      const { status, lines } = run(['--db', db, folder], {}, unloadable);
      assert.equal(status, 2, 'Node without node:sqlite: better-sqlite3 is the only driver');
      assert.match(lines[0]!, /better-sqlite3 cannot be loaded/);
      return;
    }
    const conn = await connect([folder, '--db', db, '--watcher', 'none'], { cli: unloadable });
    try {
      assert.equal(((await conn.request('resources/list', {})).resources as unknown[]).length, 2);
      assert.match(conn.stderr(), /SQLite: node:sqlite \(SQLite 3\.\d+/);
    } finally {
      await conn.close();
    }
  });
});
