import { readFileSync } from 'node:fs';
import { UsageError, type Config } from '../config.ts';
import { MIN_SECRET_CHARS } from './guard.ts';

export interface Secrets {
  /** The bearer token HTTP clients must send; undefined: none asked. */
  token: string | undefined;
  /** The key cursors are signed with, shared by replicas; undefined: the index's own. */
  cursorKey: string | undefined;
}

export const TOKEN_ENV = 'FOLDER_MCP_TOKEN';
export const CURSOR_KEY_ENV = 'FOLDER_MCP_CURSOR_KEY';

/** RFC 6750's b64token: what an `Authorization: Bearer` header can carry. */
const TOKEN_CHARS = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * The token and the cursor key, from their files (`--token-file`,
 * `--cursor-key-file`) or else the environment. A file wins over the
 * environment; surrounding whitespace (a trailing newline) is dropped. A
 * secret too short to resist guessing is a usage error, not a warning.
 */
export function loadSecrets(config: Pick<Config, 'tokenFile' | 'cursorKeyFile' | 'http' | 'metrics'>, env: NodeJS.ProcessEnv): Secrets {
  // A token guards HTTP listeners: --http's, and --metrics's (also beside a stdio server).
  const token = config.http || config.metrics ? secret('--token-file', config.tokenFile, TOKEN_ENV, env) : undefined;
  if (token !== undefined && !TOKEN_CHARS.test(token)) {
    throw new UsageError(`the bearer token (--token-file or ${TOKEN_ENV}) may only hold letters, digits and -._~+/ (then =)`);
  }
  return { token, cursorKey: secret('--cursor-key-file', config.cursorKeyFile, CURSOR_KEY_ENV, env) };
}

function secret(option: string, file: string | undefined, variable: string, env: NodeJS.ProcessEnv): string | undefined {
  let value: string | undefined;
  if (file !== undefined) {
    try {
      value = readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw new UsageError(`cannot read ${option} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  } else {
    value = env[variable]?.trim() || undefined;
  }
  if (value !== undefined && value.length < MIN_SECRET_CHARS) {
    throw new UsageError(`${file !== undefined ? option : variable} must be at least ${MIN_SECRET_CHARS} characters`);
  }
  return value;
}
