// Server log lines as MCP log messages (`notifications/message`), per client,
// at the level the client asked for with `logging/setLevel`.
import type { Server } from '@modelcontextprotocol/server';
import type { LogLevel } from '../log.ts';
import { invalidParams } from './errors.ts';

/** The MCP log levels (RFC 5424 severities), least severe first. */
export const MCP_LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type McpLogLevel = (typeof MCP_LOG_LEVELS)[number];

/** Our stderr levels as MCP levels. */
const AS_MCP: Record<LogLevel, McpLogLevel> = { error: 'error', warn: 'warning', info: 'info', debug: 'debug' };

/**
 * What a client hears before it sends `logging/setLevel`: warnings and
 * errors (a watcher that degraded, an unreadable folder, a scan that failed),
 * not the progress lines of a long scan, which stderr already carries to the
 * host's log file. The spec lets the server choose here.
 */
export const DEFAULT_CLIENT_LOG_LEVEL: McpLogLevel = 'warning';

/**
 * The first revision without unsolicited log messages: on 2026-07-28 a
 * server speaks only in answer to a request or on a listen stream, and
 * `logging/setLevel` is deprecated (SEP-2577). Such clients read stderr.
 */
const FIRST_STATELESS_REVISION = '2026-07-28';

/** The `logger` field of every message. */
const LOGGER_NAME = 'folder-mcp';

/**
 * What logging needs of a client's connection (src/protocol/connection.ts
 * has it): the level it asked for, and where its log messages go. Declared
 * here, so that this module does not import the connection that imports it.
 */
export interface LoggedConnection {
  logLevel: McpLogLevel | undefined;
  readonly server: { sendLoggingMessage?: Server['sendLoggingMessage']; getNegotiatedProtocolVersion?: Server['getNegotiatedProtocolVersion'] } | undefined;
  /** On stdio: while stdout is full, when it takes more; lines are not queued meanwhile, only counted. */
  readonly outputFull?: (() => Promise<void> | null) | undefined;
  /** Lines not sent while the output was full, told in one line once it takes more. */
  logLinesDropped: number;
}

/** `logging/setLevel`: from now on this client hears lines at `level` or above. */
export function setLogLevel(connection: Pick<LoggedConnection, 'logLevel'>, params: Record<string, unknown>): Record<string, never> {
  const level = params.level;
  if (typeof level !== 'string' || !(MCP_LOG_LEVELS as readonly string[]).includes(level)) {
    throw invalidParams(`Invalid params: level must be one of ${MCP_LOG_LEVELS.join(', ')}`);
  }
  connection.logLevel = level as McpLogLevel;
  return {};
}

/**
 * Relays one log line to the client if its level lets it through. Never
 * throws and never logs: a failed send would log, and that line be relayed.
 */
export function relayLogLine(connection: LoggedConnection, level: LogLevel, message: string): void {
  const server = connection.server;
  const send = server?.sendLoggingMessage;
  if (!send) return; // an HTTP stateless client has no stream to carry it
  // Revision dates compare as strings. Nothing before initialize, nor to a 2026-07-28 client.
  const revision = server.getNegotiatedProtocolVersion?.();
  if (revision === undefined || revision >= FIRST_STATELESS_REVISION) return;
  const mcpLevel = AS_MCP[level];
  const threshold = connection.logLevel ?? DEFAULT_CLIENT_LOG_LEVEL;
  if (MCP_LOG_LEVELS.indexOf(mcpLevel) < MCP_LOG_LEVELS.indexOf(threshold)) return;
  // A client that does not read: each line waited in memory for stdout, without end (0.5 MiB/s of warnings
  // about a folder flipping between readable and not, a red-team finding). Counted instead, and told once.
  const full = connection.outputFull?.();
  if (full) {
    if (connection.logLinesDropped++ === 0) {
      void full.then(() => {
        const dropped = connection.logLinesDropped;
        connection.logLinesDropped = 0;
        const data = `${dropped} log line(s) not sent while this client did not read what the server wrote; stderr has them`;
        send.call(server, { level: 'warning', logger: LOGGER_NAME, data }).catch(() => {});
      });
    }
    return;
  }
  send.call(server, { level: mcpLevel, logger: LOGGER_NAME, data: message }).catch(() => {});
}
