import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
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
    value = readSecretFile(option, file);
  } else {
    value = env[variable]?.trim() || undefined;
  }
  if (value !== undefined && value.length < MIN_SECRET_CHARS) {
    throw new UsageError(`${file !== undefined ? option : variable} must be at least ${MIN_SECRET_CHARS} characters`);
  }
  return value;
}

/** A secret file is a few dozen bytes; this many is far past any, and what `/dev/zero` given by mistake is cut to. */
const MAX_SECRET_FILE_BYTES = 4096;

/**
 * The text of a secret file: a regular file of at most MAX_SECRET_FILE_BYTES.
 * `/dev/zero` given by mistake had the server read until its memory ran out
 * (4.4 GiB in 12 s, no message), and a FIFO no one writes held its start for
 * good (red-team findings). Opened without blocking, looked at through the
 * descriptor, read up to one byte past the limit.
 */
function readSecretFile(option: string, file: string): string {
  const refuse = (why: string) => new UsageError(`cannot read ${option} ${file}: ${why}`);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    throw refuse((error as NodeJS.ErrnoException).code ?? (error as Error).message);
  }
  try {
    if (!fstatSync(fd).isFile()) throw refuse('not a regular file');
    const buffer = Buffer.alloc(MAX_SECRET_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const n = length < buffer.length ? readSync(fd, buffer, length, buffer.length - length, null) : 0;
      if (n === 0) break;
      length += n;
    }
    if (length > MAX_SECRET_FILE_BYTES) throw refuse(`larger than ${MAX_SECRET_FILE_BYTES} bytes, which no secret is`);
    return buffer.toString('utf8', 0, length).trim();
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw refuse((error as NodeJS.ErrnoException).code ?? (error as Error).message);
  } finally {
    closeSync(fd);
  }
}
