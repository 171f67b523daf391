/** Log levels in increasing verbosity. Every line goes to stderr: stdout is JSON-RPC only. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logger {
  error(message: string): void;
  warn(message: string): void;
  info(message: string): void;
  debug(message: string): void;
}

export function createLogger(level: LogLevel, write: (line: string) => void): Logger {
  const limit = LOG_LEVELS.indexOf(level);
  const at = (lvl: LogLevel) => (message: string) => {
    if (LOG_LEVELS.indexOf(lvl) <= limit) write(`folder-mcp ${lvl}: ${message}\n`);
  };
  return { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') };
}

/** A logger that drops everything, for tests and benchmarks. */
export const silentLogger: Logger = createLogger('error', () => {});
