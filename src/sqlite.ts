// The storage seam: the one module that imports a SQLite driver. Everything
// else holds a `Database` from here and its statements, and never learns
// which driver is underneath.
//
// Two drivers, one behaviour:
//   node            Node's built-in `node:sqlite` (Node >= 22.16: the first
//                   with FTS5): no native module, so one bundle runs on
//                   every platform.
//   better-sqlite3  the native module, for Node 20 - 22.15 (an optional
//                   dependency: nothing to compile where it is not needed).
// The choice is made once per process (chooseDriver, at start-up; a worker
// thread is told the choice in its workerData) and logged once by the caller.
// An index file written by one opens with the other: both are SQLite 3 files,
// and this module gives both the same settings (WAL is chosen by the index).
//
// What differs, and how it is made the same here:
//   transactions   better-sqlite3 has db.transaction(fn); node:sqlite has
//                  none. One implementation for both (BEGIN / SAVEPOINT).
//   pragmas        better-sqlite3 has db.pragma(); here `pragma(text)`
//                  runs `PRAGMA text` and returns the first column of the
//                  first row (better-sqlite3's `simple: true`).
//   rows as arrays better-sqlite3 stmt.raw(true); node:sqlite
//                  stmt.setReturnArrays(true).
//   busy timeout   better-sqlite3 waits 5 s for a lock by default,
//                  node:sqlite not at all: every connection gets 5 s here.
//   errors         better-sqlite3 throws SqliteError, node:sqlite an Error
//                  with code ERR_SQLITE_ERROR: `isSqliteError` knows both.
//   blobs          better-sqlite3 returns Buffer, node:sqlite Uint8Array:
//                  callers take a Uint8Array.
// The same in both, and relied on: numbers bind as REAL (an INTEGER column's
// affinity stores an integral value as an integer; FTS5 rowids are bound
// through CAST), rows read numbers (not BigInt), `get()` of no row is
// undefined, a named parameter object must name exactly the statement's
// parameters (node:sqlite refuses an unknown key: bind positionally).
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

export type SqliteDriverName = 'node' | 'better-sqlite3';
export type SqliteDriverChoice = 'auto' | SqliteDriverName;
export const SQLITE_DRIVER_CHOICES: readonly SqliteDriverChoice[] = ['auto', 'node', 'better-sqlite3'];

/** A value SQLite stores or returns (numbers bind as REAL; see above). */
export type SqlValue = null | number | bigint | string | Uint8Array;

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** A prepared statement: the methods both drivers' statements share, with the same meaning. */
export interface Statement {
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
}

/** A statement whose rows are arrays of column values, in the SELECT's order. */
export interface RowsStatement {
  all(...params: unknown[]): SqlValue[][];
}

export interface FunctionOptions {
  deterministic?: boolean;
}

export interface OpenOptions {
  /** Opens an existing file for reading only (never creates one). */
  readOnly?: boolean;
}

/** How long a connection waits for another connection's lock (better-sqlite3's default). */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * The first Node release whose node:sqlite has everything the index uses:
 * FTS5 (22.13-22.15 have node:sqlite unflagged but no FTS5), user functions
 * and rows as arrays. Found by probing, not by this number (see
 * nodeSqliteProblem); the number is for messages.
 */
export const NODE_SQLITE_SINCE = '22.16';

/** A driver that cannot be used in this process, with what to do about it. */
export class SqliteDriverError extends Error {
  override name = 'SqliteDriverError';
}

// --- the two drivers, as much of each as this module uses ------------------

interface NativeStatement extends Statement {
  raw?(toggle: boolean): unknown; // better-sqlite3
  setReturnArrays?(toggle: boolean): void; // node:sqlite
  readonly reader?: boolean; // better-sqlite3: whether the statement returns rows
}

interface NativeDatabase {
  prepare(sql: string): NativeStatement;
  exec(sql: string): unknown;
  close(): unknown;
  function(name: string, options: FunctionOptions, fn: (...args: never[]) => unknown): unknown;
}

interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { readOnly?: boolean }) => NativeDatabase;
}

type BetterSqliteConstructor = (new (path: string, options?: { readonly?: boolean; fileMustExist?: boolean; timeout?: number }) => NativeDatabase) & {
  SqliteError: new (...args: never[]) => Error;
};

/** Whether this runtime's node:sqlite can hold the index (see NODE_SQLITE_SINCE). */
export function nodeSqliteAvailable(): boolean {
  return nodeSqliteProblem() === null;
}

// The drivers as loaded and probed, memoised for the process (the only module-level state left, with
// dot-kernel.ts's compiled kernel, both on purpose): what they hold can never differ between callers. One runtime
// has one node:sqlite and one better-sqlite3 native module, which Node caches itself; loading either again
// would find the same, and probing node:sqlite again would only swap process.emitWarning once more.
let nodeSqlite: NodeSqliteModule | undefined;
let nodeSqliteChecked: string | null | undefined;

/** Why node:sqlite cannot hold the index in this runtime, or null when it can. Probed once. */
function nodeSqliteProblem(): string | null {
  if (nodeSqliteChecked !== undefined) return nodeSqliteChecked;
  // Node 22 warns on first use that SQLite is experimental; it is stable
  // enough for an index that is a cache of the disk, and the line would
  // land in every MCP host's log. Only that one warning is dropped.
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (/SQLite is an experimental feature/.test(text)) return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    const module = process.getBuiltinModule?.('node:sqlite') as NodeSqliteModule | undefined;
    nodeSqliteChecked = module ? probe(module) : 'it has no node:sqlite';
    if (nodeSqliteChecked === null) nodeSqlite = module;
  } catch (error) {
    nodeSqliteChecked = `node:sqlite failed: ${(error as Error).message}`;
  } finally {
    process.emitWarning = emit;
  }
  return nodeSqliteChecked;
}

function probe(module: NodeSqliteModule): string | null {
  const db = new module.DatabaseSync(':memory:');
  try {
    if (typeof db.function !== 'function') return 'its node:sqlite has no user functions';
    if (typeof db.prepare('SELECT 1').setReturnArrays !== 'function') return 'its node:sqlite cannot return rows as arrays';
    try {
      db.exec('CREATE VIRTUAL TABLE temp.probe USING fts5(body)');
    } catch {
      return 'its SQLite has no FTS5';
    }
    return null;
  } finally {
    db.close();
  }
}

/**
 * Where to run `npm rebuild better-sqlite3`: the folder whose node_modules
 * holds it (for npx, its cache entry, `~/.npm/_npx/<hash>`, which a first
 * start cut short while compiling leaves unbuilt), as `in DIR: `; '' when
 * it cannot be told.
 */
function rebuildWhere(): string {
  try {
    const pkg = createRequire(import.meta.url).resolve('better-sqlite3/package.json');
    return `in ${dirname(dirname(dirname(pkg)))}: `;
  } catch {
    return '';
  }
}

/** better-sqlite3 once it loaded (see above); a failure is not kept: asking again reports it again. */
let betterSqlite: BetterSqliteConstructor | null = null;
function loadBetterSqlite(): BetterSqliteConstructor {
  if (betterSqlite) return betterSqlite;
  try {
    const Better = createRequire(import.meta.url)('better-sqlite3') as BetterSqliteConstructor;
    // Loading the JavaScript is not loading the native module: open one database to be sure.
    new Better(':memory:').close();
    betterSqlite = Better;
    return Better;
  } catch (error) {
    const detail = (error as Error).message.split('\n')[0];
    const missing = (error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND';
    // Issue 46: on a Node.js that has node:sqlite, the way out is the built-in driver, not another Node.
    const instead = nodeSqliteAvailable()
      ? `or leave --sqlite-driver at auto: this Node.js has SQLite built in (node:sqlite)`
      : `or run on Node.js >= ${NODE_SQLITE_SINCE}, which has SQLite built in`;
    throw new SqliteDriverError(
      missing
        ? `better-sqlite3 is not installed (${detail}); ${nodeSqliteAvailable() ? 'it is what --sqlite-driver better-sqlite3 asks for' : `on Node.js ${process.version} folder-mcp needs it`}: npm install better-sqlite3 (a C++ toolchain may be needed), ${instead}`
        : `better-sqlite3 cannot be loaded by this Node.js ${process.version} (${detail}); rebuild it for this Node (${rebuildWhere()}npm rebuild better-sqlite3), ${instead}`,
    );
  }
}

/**
 * The driver for `choice`: `auto` is node:sqlite where the runtime has it,
 * else better-sqlite3. Loads it (throws SqliteDriverError when it cannot be
 * used), so that a missing or mis-built driver is reported at start-up,
 * never taken for a corrupt index at the first open.
 */
export function chooseDriver(choice: SqliteDriverChoice = 'auto'): SqliteDriverName {
  if (choice === 'node' || (choice === 'auto' && nodeSqliteAvailable())) {
    const problem = nodeSqliteProblem();
    if (problem !== null) {
      throw new SqliteDriverError(`node:sqlite cannot hold the index on Node.js ${process.version} (${problem}); it needs Node.js >= ${NODE_SQLITE_SINCE} (use --sqlite-driver better-sqlite3 or auto)`);
    }
    return 'node';
  }
  loadBetterSqlite();
  return 'better-sqlite3';
}

/** The driver and its SQLite, for the start-up log line. */
export function describeDriver(driver: SqliteDriverName): string {
  const probe = openDatabase(':memory:', driver);
  try {
    const { v } = probe.prepare('SELECT sqlite_version() AS v').get() as { v: string };
    return `${driver === 'node' ? 'node:sqlite' : 'better-sqlite3'} (SQLite ${v}) on Node.js ${process.version}`;
  } finally {
    probe.close();
  }
}

/** Whether `error` is SQLite's own (a corrupt file, a constraint, a lock), as opposed to a bug or the OS. */
export function isSqliteError(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  if ((error as NodeJS.ErrnoException).code === 'ERR_SQLITE_ERROR') return true;
  return betterSqlite !== null && error instanceof betterSqlite.SqliteError;
}

/** Opens a database file (or ':memory:') with `driver` (see chooseDriver). */
export function openDatabase(file: string, driver: SqliteDriverName, options: OpenOptions = {}): Database {
  const native =
    driver === 'node'
      ? new (nodeSqliteProblem() === null ? nodeSqlite! : unavailable()).DatabaseSync(file, options.readOnly ? { readOnly: true } : {})
      : new (loadBetterSqlite())(file, options.readOnly ? { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS } : { timeout: BUSY_TIMEOUT_MS });
  const db = new Database(native, driver, file);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

function unavailable(): never {
  throw new SqliteDriverError(`node:sqlite cannot hold the index on Node.js ${process.version} (${nodeSqliteProblem()})`);
}

/** One connection. Not shared between threads: each thread opens its own. */
export class Database {
  /** ':memory:' or the path opened. */
  readonly file: string;
  readonly memory: boolean;
  private depth = 0;
  private closed = false;
  private readonly control = new Map<string, NativeStatement>();

  constructor(
    private readonly native: NativeDatabase,
    readonly driver: SqliteDriverName,
    file: string,
  ) {
    this.file = file;
    this.memory = file === ':memory:' || file === '';
  }

  prepare(sql: string): Statement {
    return this.native.prepare(sql);
  }

  /** A statement whose rows come back as arrays (the page reader's hot path: no object per row). */
  prepareRows(sql: string): RowsStatement {
    const stmt = this.native.prepare(sql);
    if (typeof stmt.raw === 'function') {
      stmt.raw(true);
      return stmt as unknown as RowsStatement;
    }
    stmt.setReturnArrays!(true);
    return stmt as unknown as RowsStatement;
  }

  exec(sql: string): void {
    this.native.exec(sql);
  }

  /** Runs `PRAGMA text`; returns the first column of the first row, or undefined when there is none. */
  pragma(text: string): SqlValue | undefined {
    const stmt = this.native.prepare(`PRAGMA ${text}`);
    // better-sqlite3 refuses get() on a statement that returns no rows (`PRAGMA synchronous = OFF`).
    if (stmt.reader === false) {
      stmt.run();
      return undefined;
    }
    const row = stmt.get() as Record<string, SqlValue> | undefined;
    return row === undefined ? undefined : Object.values(row)[0];
  }

  /**
   * `fn` as one transaction: committed when it returns, rolled back when it
   * throws (and the error rethrown). A transaction inside another is a
   * savepoint of it, as in better-sqlite3. Synchronous: await outside.
   */
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
    return (...args: A): R => {
      const outer = this.depth === 0;
      const savepoint = `folder_mcp_${this.depth}`;
      this.run(outer ? 'BEGIN' : `SAVEPOINT ${savepoint}`);
      this.depth++;
      let result: R;
      try {
        result = fn(...args);
      } catch (error) {
        this.depth--;
        this.rollback(outer, savepoint);
        throw error;
      }
      this.depth--;
      try {
        this.run(outer ? 'COMMIT' : `RELEASE ${savepoint}`);
      } catch (error) {
        this.rollback(outer, savepoint);
        throw error;
      }
      return result;
    };
  }

  /** A deterministic or plain SQL function implemented in JavaScript. */
  function(name: string, options: FunctionOptions, fn: (...args: never[]) => unknown): void {
    this.native.function(name, options, fn);
  }

  /** False once closed. */
  get open(): boolean {
    return !this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.control.clear();
    this.native.close();
  }

  private run(sql: string): void {
    let stmt = this.control.get(sql);
    if (!stmt) {
      stmt = this.native.prepare(sql);
      this.control.set(sql, stmt);
    }
    stmt.run();
  }

  private rollback(outer: boolean, savepoint: string): void {
    try {
      if (outer) this.run('ROLLBACK');
      else {
        this.run(`ROLLBACK TO ${savepoint}`);
        this.run(`RELEASE ${savepoint}`);
      }
    } catch {
      // SQLite already rolled the transaction back (a full disk, an I/O error): nothing is left open.
    }
  }
}
