// The index path at start-up, through the built binary (issue 23, items 1-5):
// a --db typo never destroys a file, and every unusable place is one stderr
// line and exit 2 before anything is served.
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';

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
    const db = new Database(at('app.sqlite'));
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

  test('an index of ours is used, and one of another schema version rebuilt with a warning', async () => {
    const db = at('index.db');
    await withServer([folder, '--db', db, '--watcher', 'none'], async (first) => {
      assert.equal(((await first.request('resources/list', {})).resources as unknown[]).length, 2);
    });
    const old = new Database(db);
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

describe('better-sqlite3 built for another Node is never taken for a corrupt index', () => {
  const dir = tempDir();
  after(dir.cleanup);

  test('exit 2 with how to rebuild it; the index file and its folder left as they were', async () => {
    const folder = join(dir.path, 'notes');
    mkdirSync(folder);
    writeFileSync(join(folder, 'a.md'), '# a\n');
    const db = join(dir.path, 'index.db');
    await withServer([folder, '--db', db, '--watcher', 'none'], (made) => made.request('resources/list', {}));
    const before = readFileSync(db);
    // A copy of the built server whose better-sqlite3 has a native module that cannot load
    // (as one built for another Node's NODE_MODULE_VERSION cannot); every other package as installed.
    const repo = dirname(dirname(CLI));
    const copy = join(dir.path, 'server');
    cpSync(join(repo, 'dist'), join(copy, 'dist'), { recursive: true });
    cpSync(join(repo, 'package.json'), join(copy, 'package.json'));
    const modules = join(repo, 'node_modules');
    mkdirSync(join(copy, 'node_modules'));
    for (const name of readdirSync(modules)) {
      if (name !== 'better-sqlite3') symlinkSync(join(modules, name), join(copy, 'node_modules', name));
    }
    const sqlite = join(copy, 'node_modules', 'better-sqlite3');
    cpSync(join(modules, 'better-sqlite3', 'lib'), join(sqlite, 'lib'), { recursive: true });
    cpSync(join(modules, 'better-sqlite3', 'package.json'), join(sqlite, 'package.json'));
    mkdirSync(join(sqlite, 'build', 'Release'), { recursive: true });
    writeFileSync(join(sqlite, 'build', 'Release', 'better_sqlite3.node'), 'not a shared object');
    const { status, lines } = run(['--db', db, folder], {}, join(copy, 'dist', 'cli.js'));
    assert.equal(status, 2);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /better-sqlite3 cannot be loaded by this Node\.js .*; rebuild better-sqlite3 for this Node: npm rebuild better-sqlite3$/);
    assert.ok(readFileSync(db).equals(before), 'the index file changed');
    assert.equal(existsSync(`${db}.lock`), false, 'a lock was left');
  });
});

