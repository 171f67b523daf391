/** Log levels in increasing verbosity. Every line goes to stderr: stdout is JSON-RPC only. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logger {
  error(message: string): void;
  warn(message: string): void;
  info(message: string): void;
  debug(message: string): void;
}

/** The process's logger (createLogger) also tells listeners of each line; a worker thread's posts its lines to it. */
export interface RelayingLogger extends Logger {
  /**
   * Calls `listener` with each line written from now on (the lines the
   * level lets through), e.g. to relay them to clients as MCP log messages.
   * Returns the function that stops it.
   */
  listen(listener: LogListener): () => void;
}

export type LogListener = (level: LogLevel, message: string) => void;

export function createLogger(level: LogLevel, write: (line: string) => void): RelayingLogger {
  const limit = LOG_LEVELS.indexOf(level);
  const listeners = new Set<LogListener>();
  // A listener that logs (a failed send reported at debug level) must not feed itself.
  let relaying = false;
  const at = (lvl: LogLevel) => (message: string) => {
    if (LOG_LEVELS.indexOf(lvl) > limit) return;
    write(`folder-mcp ${lvl}: ${message}\n`);
    if (relaying || listeners.size === 0) return;
    relaying = true;
    try {
      for (const listener of listeners) {
        try {
          listener(lvl, message);
        } catch {
          // A client that cannot be told is no reason to lose the line: it is on stderr already.
        }
      }
    } finally {
      relaying = false;
    }
  };
  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** A logger that drops everything, for tests and benchmarks. */
export const silentLogger: RelayingLogger = createLogger('error', () => {});
