#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { createApp, type App } from './app.ts';
import { USAGE, type Config, type HttpListen } from './config.ts';
import { tuneHeap } from './heap.ts';
import { allowedHostsFor, guardPolicy } from './http/guard.ts';
import type { Metrics } from './http/metrics.ts';
import type { MetricsEndpoint } from './http/metrics-serve.ts';
import type { HttpEndpoint } from './http/serve.ts';
import { followClientRoots, prepareLaunch, serveStdioStreams } from './launch.ts';
import { createLogger, type Logger } from './log.ts';
import { describeDriver } from './sqlite.ts';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

// V8's heap limits, young generation and workers' semi-spaces, before anything is allocated in earnest.
tuneHeap(Number(process.versions.node.split('.')[0]), [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]);

/** The only module that touches argv, stdio and the exit code. */
async function main(): Promise<void> {
  const launch = prepareLaunch(process.argv.slice(2), process.env, VERSION);
  if (launch.kind === 'print') return void process.stdout.write(launch.text);
  if (launch.kind === 'refuse') {
    process.stderr.write(launch.text);
    process.exitCode = 2;
    return;
  }
  const { config, roots, dbFile } = launch;
  // Typed at a terminal with no folder: no client is there to name roots.
  if (dbFile === null && process.stdin.isTTY) {
    process.stderr.write(`folder-mcp: no folder given\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const log = createLogger(config.logLevel, (line) => process.stderr.write(line));
  // The driver is named once, here: which SQLite a bug report ran on. Over HTTP, once the port is bound: a port in
  // use is then one line, as docs/http.md says (issue 46).
  const serving =
    dbFile === null
      ? `no folder given: serving the client's roots (SQLite: ${describeDriver(launch.sqliteDriver)})`
      : `serving ${roots.map((r) => r.path).join(', ')} (index: ${dbFile}; SQLite: ${describeDriver(launch.sqliteDriver)})`;
  if (!config.http) log.info(serving);
  // Lazy: prom-client loads only when something serves the metrics (--http, --metrics).
  const metrics = config.http || config.metrics ? new (await import('./http/metrics.ts')).Metrics() : undefined;
  const app = createApp(config, roots, dbFile, log, { name: 'folder-mcp', version: VERSION, write: config.write }, metrics?.observe);
  metrics?.followApp(app);
  // Bound before the index is opened, as --http is: a port in use opens nothing.
  const metricsEndpoint = config.metrics && metrics ? await serveMetricsOrExit(metrics, config.metrics, config.allowedHosts ?? [], launch.token, log, app) : undefined;
  if (config.http) return serveOverHttp(app, config, config.http, launch.token, log, metrics, metricsEndpoint, serving);
  // The client has gone: whatever hangs (a conversion, a search thread), the process ends.
  const shutdown = shutdownOnce(log, { ms: 10_000, code: 0 }, async () => {
    await metricsEndpoint?.close();
    await stdio.close();
    await app.close();
  });
  // A client that cannot name roots: its answer written, then exit 2.
  const refuse = (line: string) => {
    process.stderr.write(line);
    process.exitCode = 2;
    setImmediate(() => process.stdout.write('', () => shutdown('the client has no roots')));
  };
  const clientRoots = dbFile === null ? followClientRoots(app, launch, process.env, log, refuse) : undefined;
  const stdio = serveStdioStreams(app, process.stdin, process.stdout, log, shutdown, clientRoots);
  // Typed at a terminal: nothing else would say that the server is waiting for an MCP client's JSON-RPC.
  if (process.stdin.isTTY) log.info(terminalHint(process.argv[1] ?? 'dist/cli.js', config.folders));
}

/** What someone who started the server from a terminal reads: what it is waiting for, and how to try it. */
export function terminalHint(bin: string, folders: readonly string[]): string {
  const quote = (arg: string) => (/^[\w./:@%+=,-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`);
  const command = ['node', bin, ...folders].map(quote).join(' ');
  return (
    'this is an MCP server: it waits for a client to speak JSON-RPC on stdin and stdout (Ctrl-C ends it). ' +
    `To try it (Node.js >= 22.19): npx -y @modelcontextprotocol/inspector@2.12.0 --cli ${command} --method resources/list; ` +
    'to use it, add it to Claude Desktop or Claude Code (README: Quick start)'
  );
}

/**
 * Registers SIGTERM and SIGINT, and returns the same trigger for other ends
 * (stdin closed): the first runs `close` once, then the process exits 0. If
 * `close` hangs, `backstop.ms` later the process exits with `backstop.code`.
 */
function shutdownOnce(log: Logger, backstop: { ms: number; code: number }, close: () => Promise<void>): (reason: string) => void {
  let closing = false;
  const shutdown = async (reason: string) => {
    if (closing) return;
    closing = true;
    log.debug(`shutting down: ${reason}`);
    setTimeout(() => process.exit(backstop.code), backstop.ms).unref();
    await close();
    // 0, unless a refusal set another code (a client without roots: 2).
    process.exit();
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  return (reason) => void shutdown(reason);
}

/** `--metrics`: the metrics' own listener, or exit 2 (as for --http) when its address cannot be bound. */
async function serveMetricsOrExit(
  metrics: Metrics,
  listen: HttpListen,
  allowedHosts: string[],
  token: string | undefined,
  log: Logger,
  app: App,
): Promise<MetricsEndpoint> {
  const { serveMetrics } = await import('./http/metrics-serve.ts');
  try {
    const endpoint = await serveMetrics({ metrics, listen, policy: guardPolicy(allowedHostsFor(listen.host, allowedHosts), token), log });
    process.stderr.write(`folder-mcp: serving metrics at ${endpoint.url}\n`);
    return endpoint;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = `${code ?? (error as Error).message}${code === 'EADDRINUSE' ? ' (the port is in use: pick another, or 0 for a free one)' : ''}`;
    process.stderr.write(`folder-mcp: cannot serve metrics on ${listen.host}:${listen.port}: ${why}\n`);
    await app.close();
    process.exit(2);
  }
}

/** Streamable HTTP until SIGTERM or SIGINT: then stop accepting, drain (bounded), end listen streams, close the index, exit 0. */
async function serveOverHttp(
  app: App,
  config: Config,
  listen: HttpListen,
  token: string | undefined,
  log: Logger,
  metrics: Metrics | undefined,
  metricsEndpoint: MetricsEndpoint | undefined,
  serving: string,
): Promise<void> {
  const info = { name: 'folder-mcp', version: VERSION, write: config.write };
  const policy = guardPolicy(allowedHostsFor(listen.host, config.allowedHosts ?? []), token);
  // Lazy: the HTTP stack (node:http, @modelcontextprotocol/node, hono) loads only with --http; stdio starts without it.
  const { serveHttp, HttpListenError } = await import('./http/serve.ts');
  let endpoint: HttpEndpoint;
  try {
    endpoint = await serveHttp({ app, info, listen, policy, log, ...(metrics && { metrics }), ...(config.replicaId !== undefined && { replicaId: config.replicaId }) });
  } catch (error) {
    // A port in use (or an address not this machine's) is a command-line mistake: exit 2, as for any other, and
    // nothing was opened. An index that cannot be opened after the bind is a failure of the server: exit 1.
    const listenFailed = error instanceof HttpListenError;
    const why = listenFailed ? `${error.code ?? error.message}${error.code === 'EADDRINUSE' ? ' (the port is in use: pick another, or 0 for a free one)' : ''}` : (error as Error).message;
    process.stderr.write(`folder-mcp: cannot serve HTTP on ${listen.host}:${listen.port}: ${why}\n`);
    await metricsEndpoint?.close();
    await app.close();
    process.exit(listenFailed ? 2 : 1);
  }
  log.info(serving);
  process.stderr.write(`folder-mcp: serving MCP over Streamable HTTP at ${endpoint.url}\n`);
  // Whatever hangs, the process ends: the drain is bounded, this is the backstop.
  shutdownOnce(log, { ms: 15_000, code: 1 }, async () => {
    await endpoint.close();
    await metricsEndpoint?.close();
    await app.close();
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`folder-mcp: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
