import { parseArgs, type ParseArgsConfig } from 'node:util';
import { LOG_LEVELS, type LogLevel } from './log.ts';
import { SQLITE_DRIVER_CHOICES, type SqliteDriverChoice } from './sqlite.ts';

/** The embedding APIs of `--embed-api` (src/search/embed-provider.ts speaks them). */
export const EMBED_API_CHOICES = ['ollama', 'openai'] as const;
export type EmbedApiChoice = (typeof EMBED_API_CHOICES)[number];
/** `--embed-timeout-ms`: one embedding request's whole time. */
export const DEFAULT_EMBED_TIMEOUT_MS = 30_000;

/** Meaning search's provider (`--embed-url`, `--embed-model`): opt-in, because file text is sent to that URL. */
export interface EmbedConfig {
  url: string;
  model: string;
  /** Absent: openai when the URL's path ends in /v1, else ollama. */
  api?: EmbedApiChoice;
  timeoutMs: number;
  /** FOLDER_MCP_EMBED_KEY, set by launch.ts: sent as a bearer token. */
  key?: string;
}

export const WATCHER_KINDS = ['auto', 'chokidar', 'dirs', 'recursive', 'poll', 'none'] as const;
export type WatcherKind = (typeof WATCHER_KINDS)[number];

export interface Config {
  /** Folders as given on the command line (resolved to real paths by the caller). */
  folders: string[];
  /** Index file; undefined means the default location in the user's cache dir. */
  db: string | undefined;
  /** `--sqlite-driver`: auto (node:sqlite where the runtime has it, else better-sqlite3), or one forced for diagnosis. */
  sqliteDriver: SqliteDriverChoice;
  pageSize: number;
  exclude: string[];
  gitignore: boolean;
  followSymlinks: boolean;
  maxReadBytes: number;
  /** `--write`: the tools that change files (write, edit, mkdir, move); off by default. */
  write: boolean;
  /** `--max-write-bytes`: the largest file the write tools write (an edit's result included). */
  maxWriteBytes: number;
  logLevel: LogLevel;
  watcher: WatcherKind;
  /** `--poll-interval`: with the poll watcher, the shortest pause between two walks of the tree. */
  pollIntervalMs: number;
  /** Full-text content index and the `search` tool (`--no-search` turns both off). */
  search: boolean;
  /** Time one search may take before its result is cut short (ms). */
  searchBudgetMs: number;
  /** How long a search sent while a small folder's first content build runs waits for it (ms; 0: never). */
  searchWaitMs: number;
  /** Search by meaning through the user's embedding model; absent: text search only, and no content leaves the process. */
  embed?: EmbedConfig;
  /** `--http [HOST:]PORT`: serve Streamable HTTP at /mcp instead of stdio. */
  http?: HttpListen;
  /** `--metrics [HOST:]PORT`: serve /metrics (Prometheus) on a listener of its own, beside stdio or --http. */
  metrics?: HttpListen;
  /** `--allowed-host NAME`: Host/Origin names accepted besides loopback (a proxy's public name). */
  allowedHosts?: string[];
  /** `--token-file PATH`: the bearer token's file (FOLDER_MCP_TOKEN otherwise; read by cli.ts). */
  tokenFile?: string;
  /** `--cursor-key-file PATH`: the shared cursor key's file (FOLDER_MCP_CURSOR_KEY otherwise; read by cli.ts). */
  cursorKeyFile?: string;
  /**
   * The resolved cursor key (set by cli.ts from the file or the environment):
   * replicas serving one folder with one key accept each other's cursors.
   * Absent: the index's own secret.
   */
  cursorKey?: string;
  /** Where index files are kept by default (set at launch from the environment): never served (index/location.ts). */
  indexFolders?: string[];
  /**
   * `--replica-id NAME`: this replica's name behind a load balancer. Its
   * 2025-era session ids start with `NAME.` (so the balancer can route a
   * session to the replica that made it: deploy/nginx/folder-mcp.conf), its
   * answers carry `X-Folder-Mcp-Replica: NAME`, and its bus messages name it.
   */
  replicaId?: string;
  /** `--bus redis://HOST:PORT`: share change hints with the other replicas over Redis pub/sub (src/replicas/bus.ts). */
  bus?: string;
}

export interface HttpListen {
  host: string;
  port: number;
}

/** With `--watcher poll` (or when the watchers degrade to it): at least this long between two walks. */
export const DEFAULT_POLL_INTERVAL_MS = 2000;

/** Keeps a whole read well under the SDK's 10 MiB stdio message limit, even as base64. */
export const DEFAULT_MAX_READ_BYTES = 4 * 1024 * 1024;
/** The largest file `write` or `edit` produces: a model's whole-file write, well under the stdio message limit. */
export const DEFAULT_MAX_WRITE_BYTES = 4 * 1024 * 1024;
/**
 * 2,000: a v2 SDK client's listResources() follows at most 64 pages, so this
 * lists a 128,000-entry folder whole, while a page stays near 20 ms
 * (bench table 12). Larger folders: filter, or raise --page-size.
 */
export const DEFAULT_PAGE_SIZE = 2000;
export const MAX_PAGE_SIZE = 10_000;
/** `--search-budget-ms`: the time one search may take (src/search/content-query.ts). */
export const DEFAULT_SEARCH_BUDGET_MS = 2000;
/** `--search-wait-ms`: how long an early search on a small folder waits for the first build, and a search by meaning for the embeddings (src/search/content-search.ts). */
export const DEFAULT_SEARCH_WAIT_MS = 5000;

/** Every command-line option: the README's option table and USAGE name each one (test/unit/docs-claims.test.ts). */
export const CLI_OPTIONS = {
  db: { type: 'string' },
  'page-size': { type: 'string' },
  exclude: { type: 'string', multiple: true },
  'no-gitignore': { type: 'boolean' },
  'follow-symlinks': { type: 'boolean' },
  'max-read-bytes': { type: 'string' },
  write: { type: 'boolean' },
  'max-write-bytes': { type: 'string' },
  watcher: { type: 'string' },
  'poll-interval': { type: 'string' },
  'no-search': { type: 'boolean' },
  'search-budget-ms': { type: 'string' },
  'search-wait-ms': { type: 'string' },
  'embed-url': { type: 'string' },
  'embed-model': { type: 'string' },
  'embed-api': { type: 'string' },
  'embed-timeout-ms': { type: 'string' },
  'log-level': { type: 'string' },
  'sqlite-driver': { type: 'string' },
  http: { type: 'string' },
  metrics: { type: 'string' },
  'allowed-host': { type: 'string', multiple: true },
  'token-file': { type: 'string' },
  'cursor-key-file': { type: 'string' },
  'replica-id': { type: 'string' },
  bus: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const satisfies ParseArgsConfig['options'];

export const USAGE = `Usage: folder-mcp [options] <folder>...

Serve one or more folders as MCP resources over stdio (or Streamable HTTP: --http).
With no folder (stdio only), serve the client's roots and follow their changes
(clients of MCP 2025-11-25 that offer roots, e.g. VS Code).

Options:
  --db PATH              index file (default: one per set of folders and options
                         in the user's cache folder: $XDG_CACHE_HOME/folder-mcp,
                         else ~/.cache/folder-mcp, %LOCALAPPDATA%\\folder-mcp on
                         Windows, ~/Library/Caches/folder-mcp on macOS);
                         ':memory:' keeps it in memory
  --page-size N          items per list page (default ${DEFAULT_PAGE_SIZE}, max ${MAX_PAGE_SIZE})
  --exclude PATTERN      leave out paths matching a .gitignore-style pattern
                         (repeatable)
  --no-gitignore         do not honour .gitignore files
  --follow-symlinks      resolve URIs through symlinks whose target is inside a
                         served folder (links out of the folders never resolve)
  --max-read-bytes N     largest file resources/read returns (default ${DEFAULT_MAX_READ_BYTES})
  --write                add the tools that change files: write, edit, mkdir,
                         move (default: read-only)
  --max-write-bytes N    largest file the write tools write (default ${DEFAULT_MAX_WRITE_BYTES})
  --watcher KIND         auto | chokidar | dirs | recursive | poll | none (default auto)
  --poll-interval MS     with the poll watcher, at least MS between two walks of the tree (default ${DEFAULT_POLL_INTERVAL_MS})
  --no-search            no full-text content index and no search tool
  --search-budget-ms N   time one search may take; past it the result is cut
                         short and says so (default ${DEFAULT_SEARCH_BUDGET_MS})
  --search-wait-ms N     how long a search sent while the first content index
                         build runs waits for it (when at most 2,000 files are
                         left), and a search by meaning for the embeddings; 0
                         never waits (default ${DEFAULT_SEARCH_WAIT_MS})
  --embed-url URL        also search by meaning: embed the indexed text with the
                         model served at URL (Ollama, or OpenAI-compatible at
                         .../v1). File text is sent to URL. Key: FOLDER_MCP_EMBED_KEY
  --embed-model NAME     the embedding model (with --embed-url), e.g. nomic-embed-text
  --embed-api API        ollama | openai (default: openai when URL ends in /v1)
  --embed-timeout-ms N   one embedding request's time limit (default ${DEFAULT_EMBED_TIMEOUT_MS})
  --sqlite-driver NAME   auto | node | better-sqlite3: the SQLite driver (default
                         auto: Node's built-in node:sqlite on Node >= 22.16,
                         else better-sqlite3)
  --log-level LEVEL      error | warn | info | debug (default info); logs go to stderr
  --http [HOST:]PORT     serve Streamable HTTP at http://HOST:PORT/mcp instead of
                         stdio (HOST default 127.0.0.1; PORT 0 picks a free one)
  --metrics [HOST:]PORT  serve Prometheus metrics at http://HOST:PORT/metrics on a
                         listener of its own (HOST default 127.0.0.1), with stdio
                         or --http (which also serves /metrics next to /mcp)
  --allowed-host NAME    accept this Host/Origin name besides loopback (a reverse
                         proxy's public name; repeatable)
  --token-file PATH      bearer token clients must send (else FOLDER_MCP_TOKEN);
                         required to bind an address that is not loopback
  --cursor-key-file PATH cursor signing key shared by replicas (else
                         FOLDER_MCP_CURSOR_KEY; default: one per index)
  --replica-id NAME      this replica's name behind a load balancer: prefixes its
                         2025 session ids (NAME.) and names it in a response header
  --bus redis://HOST:PORT
                         tell the other replicas what changed here, and hear what
                         changed there, over Redis pub/sub (hints: each checks its disk)
  -h, --help             show this help
  -v, --version          show the version
`;

/** A command-line mistake: the CLI prints the message and exits with code 2. */
export class UsageError extends Error {}

export type ParsedArgs = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; config: Config };

export function parseCliArgs(argv: readonly string[]): ParsedArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: CLI_OPTIONS,
    });
  } catch (error) {
    throw new UsageError(usageMessage(error as Error & { code?: string }, argv));
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  // With no folder, a stdio server serves its one client's roots; an HTTP server has many clients, and
  // replicas on a bus must serve one tree.
  if (positionals.length === 0 && (values.http !== undefined || values.bus !== undefined)) {
    throw new UsageError(`no folder given: ${values.http !== undefined ? '--http' : '--bus'} serves the folders named on the command line (only a stdio server can serve its client's roots)`);
  }
  const logLevel = values['log-level'] ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const watcher = values.watcher ?? 'auto';
  if (!(WATCHER_KINDS as readonly string[]).includes(watcher)) {
    throw new UsageError(`--watcher must be one of ${WATCHER_KINDS.join(', ')}`);
  }
  const sqliteDriver = values['sqlite-driver'] ?? 'auto';
  if (!(SQLITE_DRIVER_CHOICES as readonly string[]).includes(sqliteDriver)) {
    throw new UsageError(`--sqlite-driver must be one of ${SQLITE_DRIVER_CHOICES.join(', ')}`);
  }
  if (values['max-write-bytes'] !== undefined && !values.write) throw new UsageError('--max-write-bytes applies to --write only');
  // `--db "$DB"` with DB unset: the lock and SQLite's files would be `.lock`, `-wal`... in the working folder.
  if (values.db !== undefined && values.db.trim() === '') throw new UsageError(`--db needs ${OPTION_VALUES['--db']}, got an empty value`);
  const http = values.http === undefined ? undefined : parseHttpListen(values.http);
  const metrics = values.metrics === undefined ? undefined : parseHttpListen(values.metrics, '--metrics');
  if (!http) {
    const httpOnly = (['replica-id', 'bus'] as const).find((name) => values[name] !== undefined);
    if (httpOnly) throw new UsageError(`--${httpOnly} applies to --http only`);
    if (!metrics && (values['allowed-host'] || values['token-file'])) {
      throw new UsageError(`--${values['allowed-host'] ? 'allowed-host' : 'token-file'} applies to --http and --metrics only`);
    }
  }
  const replicaId = values['replica-id'];
  // Security and routing: the name goes into session ids and a header, and a load balancer matches it with a regex.
  if (replicaId !== undefined && !REPLICA_ID.test(replicaId)) {
    throw new UsageError(`--replica-id needs ${OPTION_VALUES['--replica-id']}, got '${replicaId}'`);
  }
  const bus = values.bus === undefined ? undefined : parseBusUrl(values.bus);
  const embed = embedConfig(values, !values['no-search']);
  return {
    kind: 'run',
    config: {
      folders: positionals,
      db: values.db,
      sqliteDriver: sqliteDriver as SqliteDriverChoice,
      pageSize: positiveInt(values['page-size'], '--page-size', DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
      exclude: values.exclude ?? [],
      gitignore: !values['no-gitignore'],
      followSymlinks: values['follow-symlinks'] ?? false,
      maxReadBytes: positiveInt(values['max-read-bytes'], '--max-read-bytes', DEFAULT_MAX_READ_BYTES),
      write: values.write ?? false,
      maxWriteBytes: positiveInt(values['max-write-bytes'], '--max-write-bytes', DEFAULT_MAX_WRITE_BYTES),
      logLevel: logLevel as LogLevel,
      watcher: watcher as WatcherKind,
      pollIntervalMs: positiveInt(values['poll-interval'], '--poll-interval', DEFAULT_POLL_INTERVAL_MS, 3_600_000),
      search: !values['no-search'],
      searchBudgetMs: positiveInt(values['search-budget-ms'], '--search-budget-ms', DEFAULT_SEARCH_BUDGET_MS, 60_000),
      searchWaitMs: positiveInt(values['search-wait-ms'], '--search-wait-ms', DEFAULT_SEARCH_WAIT_MS, 60_000, 0),
      ...(embed && { embed }),
      ...(http && { http }),
      ...(metrics && { metrics }),
      ...(values['allowed-host'] && { allowedHosts: values['allowed-host'].map(allowedHostName) }),
      ...(values['token-file'] !== undefined && { tokenFile: values['token-file'] }),
      ...(values['cursor-key-file'] !== undefined && { cursorKeyFile: values['cursor-key-file'] }),
      ...(replicaId !== undefined && { replicaId }),
      ...(bus !== undefined && { bus }),
    },
  };
}

/** What each option takes, for messages that say what is allowed. */
const OPTION_VALUES: Record<string, string> = {
  '--db': 'a file path, or :memory:',
  '--page-size': `a whole number from 1 to ${MAX_PAGE_SIZE}`,
  '--exclude': 'a .gitignore-style pattern',
  '--max-read-bytes': 'a positive whole number of bytes',
  '--max-write-bytes': 'a positive whole number of bytes',
  '--watcher': WATCHER_KINDS.join(' | '),
  '--sqlite-driver': SQLITE_DRIVER_CHOICES.join(' | '),
  '--poll-interval': 'a whole number of milliseconds, from 1 to 3600000',
  '--search-budget-ms': 'a whole number of milliseconds, from 1 to 60000',
  '--search-wait-ms': 'a whole number of milliseconds, from 0 to 60000',
  '--embed-url': 'an http or https URL',
  '--embed-model': 'a model name',
  '--embed-api': EMBED_API_CHOICES.join(' | '),
  '--embed-timeout-ms': 'a whole number of milliseconds, from 1 to 600000',
  '--http': '[HOST:]PORT',
  '--metrics': '[HOST:]PORT',
  '--allowed-host': 'a host name',
  '--token-file': 'a file path',
  '--cursor-key-file': 'a file path',
  '--replica-id': '1 to 32 letters, digits, _ or -',
  '--bus': 'a redis://HOST:PORT URL',
  '--log-level': LOG_LEVELS.join(' | '),
};

/** node:util parseArgs's errors, said in one line with what is allowed. */
function usageMessage(error: Error & { code?: string }, argv: readonly string[]): string {
  const option = /Option '(--?[\w-]+)/.exec(error.message)?.[1] ?? /Unknown option '([^']+)'/.exec(error.message)?.[1];
  const allowed = option !== undefined ? OPTION_VALUES[option] : undefined;
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option ?? ''}; --help lists the options`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const given = option !== undefined ? argv[argv.indexOf(option) + 1] : undefined;
      if (given !== undefined && given.startsWith('-')) {
        return `${option} needs ${allowed ?? 'a value'}, got '${given}'`;
      }
      return `${option ?? 'an option'} needs ${allowed ?? 'a value'}${error.message.includes('missing') ? ', and none was given' : ''}`;
    }
    default:
      return error.message.split('\n')[0]!;
  }
}

/** The --embed-* options: both URL and model, or neither (and none of the others). */
function embedConfig(values: Record<string, string | boolean | string[] | undefined>, search: boolean): EmbedConfig | undefined {
  const url = values['embed-url'] as string | undefined;
  const model = values['embed-model'] as string | undefined;
  const api = values['embed-api'] as string | undefined;
  const timeout = values['embed-timeout-ms'] as string | undefined;
  if (url === undefined && model === undefined) {
    if (api !== undefined || timeout !== undefined) throw new UsageError(`--${api !== undefined ? 'embed-api' : 'embed-timeout-ms'} applies to --embed-url only`);
    return undefined;
  }
  if (url === undefined || model === undefined) throw new UsageError(`--${url === undefined ? 'embed-model' : 'embed-url'} needs --${url === undefined ? 'embed-url' : 'embed-model'} too`);
  if (!search) throw new UsageError('--embed-url needs the content index: it cannot be used with --no-search');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--embed-url needs an http or https URL, got '${url}'`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--embed-url needs an http or https URL, got '${url}'`);
  if (parsed.username || parsed.password) throw new UsageError('--embed-url must not hold a user or password: put the key in FOLDER_MCP_EMBED_KEY');
  if (model.trim() === '') throw new UsageError('--embed-model needs a model name');
  if (api !== undefined && !(EMBED_API_CHOICES as readonly string[]).includes(api)) {
    throw new UsageError(`--embed-api must be one of ${EMBED_API_CHOICES.join(', ')}`);
  }
  return {
    url,
    model,
    ...(api !== undefined && { api: api as EmbedApiChoice }),
    timeoutMs: positiveInt(timeout, '--embed-timeout-ms', DEFAULT_EMBED_TIMEOUT_MS, 600_000),
  };
}

/** `--http` (or `--metrics`): `PORT`, `HOST:PORT` or `[IPv6]:PORT`. */
export function parseHttpListen(text: string, flag = '--http'): HttpListen {
  const match = /^(?:(\[[0-9A-Fa-f:.]+\]|[^:\s]+):)?(\d{1,5})$/.exec(text);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65_535) throw new UsageError(`${flag} must be [HOST:]PORT (PORT 0-65535), got '${text}'`);
  return { host: match[1]?.replace(/^\[|\]$/g, '') ?? '127.0.0.1', port };
}

const REPLICA_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** `--bus`: `redis://HOST[:PORT]` (a password, if any, in the URL's user part; a database number as its path is ignored: pub/sub spans them). */
function parseBusUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--bus needs ${OPTION_VALUES['--bus']}, got '${text}'`);
  }
  if (url.protocol !== 'redis:' || url.hostname === '') throw new UsageError(`--bus needs ${OPTION_VALUES['--bus']}, got '${text}'`);
  return text;
}

/** `--allowed-host`: a bare hostname as a Host header names it (no scheme, port or path); IPv6 in brackets. */
function allowedHostName(name: string): string {
  const lower = name.toLowerCase();
  if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)$/.test(lower)) {
    throw new UsageError(`--allowed-host must be a host name without scheme or port, got '${name}'`);
  }
  return lower;
}

function positiveInt(text: string | undefined, flag: string, fallback: number, max = Number.MAX_SAFE_INTEGER, min = 1): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text)) throw new UsageError(`${flag} needs ${OPTION_VALUES[flag] ?? 'a positive whole number'}, got '${text}'`);
  const n = Number(text);
  if (n < min || n > max) throw new UsageError(`${flag} must be between ${min} and ${max}, got ${text}`);
  return n;
}
