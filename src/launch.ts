// What the binary does before it serves, and how it serves a stdio client,
// without touching the process: cli.ts hands these argv, the environment and
// its stdin/stdout, and acts on the answer (print, exit 2, serve); the tests
// hand them in-memory streams (test/in-process.ts) and so run, in their own
// process, the same start-up and the same stdio wire as the built binary.
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { accessSync, constants, fstatSync, realpathSync, statSync, type Stats } from 'node:fs';
import { resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { App } from './app.ts';
import { USAGE, UsageError, parseCliArgs, type Config } from './config.ts';
import { isLoopbackHost } from './http/guard.ts';
import { loadSecrets, TOKEN_ENV } from './http/secrets.ts';
import { dbFileProblem } from './index/db-file.ts';
import { chooseDriver, SqliteDriverError, type SqliteDriverName } from './sqlite.ts';
import { defaultDbPath, indexFolders, isInsideRoots, realPathOf } from './index/location.ts';
import type { Logger } from './log.ts';
import { AnswerHolds } from './protocol/answer-holds.ts';
import { StdioTransport } from './protocol/sdk/stdio-transport.ts';
import { makeRoot, type Root } from './uri.ts';
import { toSlashPath } from './fs-path.ts';
import { ClientRoots } from './client-roots.ts';
import type { Era } from './protocol/wire.ts';

/** What to do with a command line. */
export type Launch =
  /** --help, --version: print this to stdout and exit 0. */
  | { kind: 'print'; text: string }
  /** A usage error or an unusable set-up: print this to stderr and exit 2, having touched nothing. */
  | { kind: 'refuse'; text: string }
  /**
   * Serve. With no folder on the command line (stdio only), `roots` is empty
   * and `dbFile` null: the folders are the client's roots (src/client-roots.ts).
   */
  | { kind: 'serve'; config: Config; roots: Root[]; dbFile: string | null; token: string | undefined; sqliteDriver: SqliteDriverName };

/**
 * Reads a command line and checks, before anything is served, everything
 * that would otherwise fail on every request: the folders, the secrets, a
 * non-loopback address without a token, the native SQLite module, and an
 * index path that is inside a served folder or is not ours to overwrite.
 */
/** The bearer token sent to the --embed-url provider. */
export const EMBED_KEY_ENV = 'FOLDER_MCP_EMBED_KEY';

export function prepareLaunch(argv: readonly string[], env: NodeJS.ProcessEnv, version: string): Launch {
  let config: Config;
  let roots: Root[];
  let token: string | undefined;
  try {
    const parsed = parseCliArgs(argv);
    if (parsed.kind === 'help') return { kind: 'print', text: USAGE };
    if (parsed.kind === 'version') return { kind: 'print', text: `${version}\n` };
    config = parsed.config;
    roots = resolveRoots(config.folders);
    const secrets = loadSecrets(config, env);
    config.cursorKey = secrets.cursorKey;
    config.indexFolders = indexFolders(env);
    token = secrets.token;
    // The embedding provider's key comes from the environment only: a flag would show in `ps`.
    const embedKey = env[EMBED_KEY_ENV];
    if (config.embed && embedKey) config.embed.key = embedKey;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return refuse(`${error.message}\n${error.message.startsWith('no folder') ? USAGE : ''}`);
  }
  // Security: anyone who can reach a non-loopback address could read the folders.
  if (config.http && !isLoopbackHost(config.http.host) && token === undefined) {
    return refuse(`--http ${config.http.host} is not a loopback address: set a bearer token with ${TOKEN_ENV} or --token-file\n`);
  }
  // The same for the metrics: how large the folders are, what is asked of them, and when.
  if (config.metrics && !isLoopbackHost(config.metrics.host) && token === undefined) {
    return refuse(`--metrics ${config.metrics.host} is not a loopback address: set a bearer token with ${TOKEN_ENV} or --token-file\n`);
  }
  // No usable SQLite driver (better-sqlite3 missing or built for another Node, on a Node without
  // node:sqlite): one line and exit 2, not an error on every request.
  let sqliteDriver: SqliteDriverName;
  try {
    sqliteDriver = chooseDriver(config.sqliteDriver);
  } catch (error) {
    if (!(error instanceof SqliteDriverError)) throw error;
    return refuse(`${error.message}\n`);
  }
  if (roots.length === 0) return { kind: 'serve', config, roots, dbFile: null, token, sqliteDriver };
  const placed = indexFileFor(roots, config, env, sqliteDriver);
  if ('problem' in placed) return refuse(`${placed.problem}\n`);
  return { kind: 'serve', config, roots, dbFile: placed.dbFile, token, sqliteDriver };
}

/**
 * Where the index of a set of roots lives (--db, or one file per set in the
 * user's cache), or why it cannot be there: a --db inside a served folder, a
 * --db typo that would overwrite a file, an unwritable place.
 *
 * A --db is taken by its real path (realPathOf), and the server uses that
 * path from here on. SQLite follows a symlinked --db and puts its -wal and
 * -journal beside the target, so the checks of those files, the lock and the
 * probe must look there too: through `link.db -> data/real.db`, the checks
 * looked beside the link and SQLite deleted the user's `data/real.db-wal`;
 * a link inside a served folder got its lock there; and two spellings of
 * one index were two locks. A process's own files (`/dev/stdout`,
 * `/proc/self/fd/1`) are refused: they name whatever it writes to.
 */
export function indexFileFor(roots: readonly Root[], config: Config, env: NodeJS.ProcessEnv, driver: SqliteDriverName): { dbFile: string } | { problem: string } {
  const paths = roots.map((r) => r.path);
  if (config.db !== undefined && PROCESS_FILE.test(toSlashPath(resolve(config.db)))) {
    return { problem: `--db ${config.db} is one of this process's own files, not a place for an index: give a file path` };
  }
  const dbFile = config.db === undefined ? defaultDbPath(paths, config, env) : config.db === ':memory:' ? ':memory:' : realPathOf(config.db);
  // The same through a symlink to /dev/stdout: the file it resolves to is the one this process writes its answers to.
  if (config.db !== undefined && dbFile !== ':memory:' && isStandardStream(dbFile)) {
    return { problem: `--db ${config.db} is the file this process's standard input, output or error is, not a place for an index: give a file path` };
  }
  if (isInsideRoots(dbFile, paths)) return { problem: `--db ${dbFile} is inside a served folder; the server never writes there` };
  const unusable = dbFileProblem(dbFile, config.db === undefined, driver);
  return unusable === null ? { dbFile } : { problem: unusable };
}

/** Whether `path` is the regular file behind this process's stdin, stdout or stderr (by device and inode). */
function isStandardStream(path: string): boolean {
  let file: Stats;
  try {
    file = statSync(path);
  } catch {
    return false;
  }
  // An inode of 0 is a file system that has none (never matched: it would match every file there).
  if (!file.isFile() || file.ino === 0) return false;
  return [0, 1, 2].some((fd) => {
    try {
      const stream = fstatSync(fd);
      return stream.isFile() && stream.dev === file.dev && stream.ino === file.ino;
    } catch {
      return false;
    }
  });
}

/** Paths that name what a process reads or writes (its standard streams, its descriptors), not a file of their own. */
const PROCESS_FILE = /^\/proc\/(self|thread-self|\d+)\/fd\/|^\/dev\/fd\/|^\/dev\/std(in|out|err)$/;

function refuse(message: string): Launch {
  return { kind: 'refuse', text: `folder-mcp: ${message}` };
}

/** Real paths of the folders given, deduplicated; a bad folder is a usage error. */
function resolveRoots(folders: readonly string[]): Root[] {
  const roots = new Map<string, Root>();
  for (const folder of folders) {
    const found = resolveFolder(folder);
    if ('problem' in found) throw new UsageError(found.problem);
    roots.set(found.root.path, found.root);
  }
  return [...roots.values()];
}

/**
 * A folder to serve, by its real path, or why it cannot be served (missing,
 * not a folder, unreadable): the command line's folders and a client's roots
 * alike.
 */
export function resolveFolder(folder: string): { root: Root } | { problem: string } {
  let real: string;
  try {
    // realpath(3) itself, not Node's JS walk: on Windows and macOS it spells the path as the disk does (case,
    // long names for 8.3 ones), so a folder given as `c:\users\me` and as `C:\Users\Me` is one root.
    real = toSlashPath(realpathSync.native(resolve(folder)));
    if (!statSync(real).isDirectory()) return { problem: `not a folder: ${folder}` };
    accessSync(real, constants.R_OK | constants.X_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { problem: code === 'ENOENT' ? `no such folder: ${folder}` : `cannot read folder ${folder}: ${code ?? (error as Error).message}` };
  }
  return { root: makeRoot(real) };
}

/**
 * A launch with no folder (`dbFile` null): the stdio client's roots are the
 * folders, each set indexed where a command line naming them would have it.
 * `refuse` gets the one line to print before exiting 2 (a client without
 * roots).
 */
export function followClientRoots(
  app: App,
  launch: Extract<Launch, { kind: 'serve' }>,
  env: NodeJS.ProcessEnv,
  log: Logger,
  refuse: (line: string) => void,
): ClientRoots {
  return new ClientRoots({
    app,
    log,
    resolve: resolveFolder,
    indexFor: (roots) => indexFileFor(roots, launch.config, env, launch.sqliteDriver),
    refuse,
  });
}

/** One stdio client being served; close() ends it (the App stays open). */
export interface StdioServing {
  close(): Promise<void>;
}

/**
 * Serves one client over a pair of byte streams: both protocol eras from one
 * factory (2026-07-28's server/discover and listen; 2025-11-25 and older's
 * initialize), on our StdioTransport (src/protocol/sdk/stdio-transport.ts says
 * why not the SDK's). `onEnd` is called once when the input ends or fails.
 */
export function serveStdioStreams(
  app: App,
  input: Readable,
  output: Writable,
  log: Logger,
  onEnd: (reason: string) => void,
  /** With no folder on the command line: the client's roots, followed (followClientRoots). */
  roots?: ClientRoots,
): StdioServing {
  const session = app.openSession();
  // Answers keep their share of the read budget until written (src/protocol/answer-holds.ts).
  const holds = new AnswerHolds();
  session.connection.answerHolds = holds;
  const onInbound = roots ? (message: Record<string, unknown>, era: Era) => roots.inbound(message, era) ?? session.onInbound(message, era) : session.onInbound;
  const answered = (id: string | number) => {
    holds.answered(id);
    session.answered(id);
  };
  const transport = new StdioTransport(input, output, { onInbound, onEnd, onAnswering: () => session.answering(), onAnswered: answered });
  session.connection.outputFull = () => transport.whenWritable();
  session.connection.handlerSettled = (id) => transport.settled(id);
  const build = () => {
    const server = session.createServer();
    roots?.serverBuilt(server);
    return server;
  };
  const handle = serveStdio(build, {
    legacy: 'serve',
    transport,
    onerror: (error) => log.debug(`stdio: ${error.message}`),
  });
  return {
    async close() {
      await handle.close().catch(() => {});
      session.close();
    },
  };
}
