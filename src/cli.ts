#!/usr/bin/env node
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { realpathSync, statSync, accessSync, constants } from 'node:fs';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createApp, type App } from './app.ts';
import { USAGE, UsageError, parseCliArgs, type HttpListen } from './config.ts';
import { allowedHostsFor, isLoopbackHost } from './http/guard.ts';
import { loadSecrets, TOKEN_ENV, type Secrets } from './http/secrets.ts';
import type { HttpEndpoint } from './http/serve.ts';
import { assertSqliteLoads, dbFileProblem, NativeModuleError } from './index/db-file.ts';
import { createLogger, type Logger } from './log.ts';
import { StdioTransport } from './protocol/stdio-transport.ts';
import { defaultDbPath, isInsideRoots } from './index/location.ts';
import { makeRoot, type Root } from './uri.ts';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

/** The only module that touches argv, stdio and the exit code. */
async function main(): Promise<void> {
  let parsed;
  let roots: Root[];
  let secrets: Secrets;
  try {
    parsed = parseCliArgs(process.argv.slice(2));
    if (parsed.kind === 'help') return void process.stdout.write(USAGE);
    if (parsed.kind === 'version') return void process.stdout.write(`${VERSION}\n`);
    roots = resolveRoots(parsed.config.folders);
    secrets = loadSecrets(parsed.config, process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`folder-mcp: ${error.message}\n${error.message.startsWith('no folder') ? USAGE : ''}`);
    process.exitCode = 2;
    return;
  }
  const { config } = parsed;
  config.cursorKey = secrets.cursorKey;
  // Security: anyone who can reach a non-loopback address could read the folders.
  if (config.http && !isLoopbackHost(config.http.host) && secrets.token === undefined) {
    process.stderr.write(`folder-mcp: --http ${config.http.host} is not a loopback address: set a bearer token with ${TOKEN_ENV} or --token-file\n`);
    process.exitCode = 2;
    return;
  }
  const log = createLogger(config.logLevel, (line) => process.stderr.write(line));
  const dbFile = config.db ?? defaultDbPath(roots.map((r) => r.path), config);
  // Judged by real paths: a --db spelled through a symlinked folder is where it really lands.
  if (isInsideRoots(dbFile, roots.map((r) => r.path))) {
    process.stderr.write(`folder-mcp: --db ${dbFile} is inside a served folder; the server never writes there\n`);
    process.exitCode = 2;
    return;
  }
  // Before anything is served: a native module built for another Node, a --db typo that would
  // overwrite a file, an unwritable place are each one line and exit 2, not an error on every request.
  try {
    assertSqliteLoads();
  } catch (error) {
    if (!(error instanceof NativeModuleError)) throw error;
    process.stderr.write(`folder-mcp: ${error.message}\n`);
    process.exitCode = 2;
    return;
  }
  const unusable = dbFileProblem(dbFile, config.db === undefined);
  if (unusable !== null) {
    process.stderr.write(`folder-mcp: ${unusable}\n`);
    process.exitCode = 2;
    return;
  }
  log.info(`serving ${roots.map((r) => r.path).join(', ')} (index: ${dbFile})`);
  const app = createApp(config, roots, dbFile, log, { name: 'folder-mcp', version: VERSION, write: config.write });
  if (config.http) return serveOverHttp(app, config.http, config.allowedHosts ?? [], secrets.token, log, config.write);
  const session = app.openSession();
  // The client has gone: whatever hangs (a conversion, a search thread), the process ends.
  const shutdown = shutdownOnce(log, { ms: 10_000, code: 0 }, async () => {
    await handle.close().catch(() => {});
    session.close();
    await app.close();
  });
  // Both protocol eras from one factory: 2026-07-28 (server/discover, listen) and 2025-11-25 and older (initialize).
  const transport = new StdioTransport(process.stdin, process.stdout, {
    onInbound: session.onInbound,
    onEnd: shutdown,
  });
  const handle = serveStdio(() => session.createServer(), {
    legacy: 'serve',
    transport,
    onerror: (error) => log.debug(`stdio: ${error.message}`),
  });
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
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  return (reason) => void shutdown(reason);
}

/** Streamable HTTP until SIGTERM or SIGINT: then stop accepting, drain (bounded), end listen streams, close the index, exit 0. */
async function serveOverHttp(app: App, listen: HttpListen, allowedHosts: string[], token: string | undefined, log: Logger, write: boolean): Promise<void> {
  const info = { name: 'folder-mcp', version: VERSION, write };
  const policy = { allowedHosts: allowedHostsFor(listen.host, allowedHosts), token };
  // Lazy: the HTTP stack (node:http, @modelcontextprotocol/node, hono) loads only with --http; stdio starts without it.
  const { serveHttp } = await import('./http/serve.ts');
  let endpoint: HttpEndpoint;
  try {
    endpoint = await serveHttp({ app, info, listen, policy, log });
  } catch (error) {
    process.stderr.write(`folder-mcp: cannot serve HTTP on ${listen.host}:${listen.port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
    await app.close();
    process.exit(1);
  }
  process.stderr.write(`folder-mcp: serving MCP over Streamable HTTP at ${endpoint.url}\n`);
  // Whatever hangs, the process ends: the drain is bounded, this is the backstop.
  shutdownOnce(log, { ms: 15_000, code: 1 }, async () => {
    await endpoint.close();
    await app.close();
  });
}

/** Real paths of the folders given, deduplicated; a bad folder is a usage error. */
function resolveRoots(folders: readonly string[]): Root[] {
  const roots = new Map<string, Root>();
  for (const folder of folders) {
    let real: string;
    try {
      real = realpathSync(resolve(folder));
      if (!statSync(real).isDirectory()) throw new UsageError(`not a folder: ${folder}`);
      accessSync(real, constants.R_OK | constants.X_OK);
    } catch (error) {
      if (error instanceof UsageError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      throw new UsageError(
        code === 'ENOENT' ? `no such folder: ${folder}` : `cannot read folder ${folder}: ${code ?? (error as Error).message}`,
      );
    }
    roots.set(real, makeRoot(real));
  }
  return [...roots.values()];
}

main().catch((error: unknown) => {
  process.stderr.write(`folder-mcp: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
