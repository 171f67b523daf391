import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** Accepts any result and keeps every field: the SDK's own schemas strip non-spec fields. */
export const Loose = z.looseObject({});
export type LooseResult = Record<string, unknown>;

/** A fresh temp folder, removed by the returned cleanup. */
export function tempDir(prefix = 'folder-mcp-test-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Writes files (path -> content) under `root`, creating folders; a path ending in '/' is a folder. */
export function writeTree(root: string, files: Record<string, string | Uint8Array>): void {
  for (const [rel, content] of Object.entries(files)) {
    const path = join(root, rel);
    if (rel.endsWith('/')) {
      mkdirSync(path, { recursive: true });
      continue;
    }
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  }
}

export interface Connected {
  client: Client;
  stderr: () => string;
  /** Sends a request and returns the raw result, every field kept. */
  request(method: string, params?: Record<string, unknown>): Promise<LooseResult>;
  close(): Promise<void>;
}

/** Spawns the built CLI over real stdio and connects the SDK Client. */
export async function connect(args: string[], options: { env?: Record<string, string> } = {}): Promise<Connected> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, ...args],
    stderr: 'pipe',
    env: { ...(process.env as Record<string, string>), ...options.env },
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'folder-mcp-test', version: '0.0.0' });
  await client.connect(transport);
  return {
    client,
    stderr: () => stderr,
    request: (method, params) => client.request({ method, params } as never, Loose) as Promise<LooseResult>,
    close: () => client.close(),
  };
}

/** Waits until `condition` returns a truthy value, polling; throws after `timeoutMs`. */
export async function waitFor<T>(condition: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Pages through a list method to the end, returning every item and the pages seen. */
export async function listAll(
  conn: Connected,
  method: string,
  key: string,
  params: Record<string, unknown> = {},
): Promise<{ items: LooseResult[]; pages: number }> {
  const items: LooseResult[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const result = await conn.request(method, cursor ? { ...params, cursor } : params);
    items.push(...(result[key] as LooseResult[]));
    cursor = result.nextCursor as string | undefined;
    pages++;
    if (pages > 100_000) throw new Error('pagination does not end');
  } while (cursor);
  return { items, pages };
}

/** Expects a JSON-RPC error with `code` (and a message containing `message`). */
export async function rejectsWith(promise: Promise<unknown>, code: number, message?: string | RegExp): Promise<{ code: number; message: string; data?: unknown }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { code: number; message: string; data?: unknown };
    if (e.code !== code) throw new Error(`expected error code ${code}, got ${e.code}: ${e.message}`);
    if (message !== undefined) {
      const ok = typeof message === 'string' ? e.message.includes(message) : message.test(e.message);
      if (!ok) throw new Error(`expected message ${String(message)}, got: ${e.message}`);
    }
    return e;
  }
  throw new Error(`expected error ${code}, but the request succeeded`);
}

/**
 * Every URI that should be served under `root`: a plain walk of the disk that
 * skips .git, node_modules and the names in `skip` (the test trees' ignore rules).
 */
export function diskUris(root: string, skip: (name: string, isDir: boolean) => boolean = () => false): string[] {
  const out: string[] = [pathToFileURL(root).href + '/'];
  const walk = (dir: string) => {
    for (const dirent of readdirSync(dir, { withFileTypes: true })) {
      if (dirent.name === '.git' || dirent.name === 'node_modules' || skip(dirent.name, dirent.isDirectory())) continue;
      const path = join(dir, dirent.name);
      if (dirent.isDirectory()) {
        out.push(pathToFileURL(path).href + '/');
        walk(path);
      } else if (dirent.isFile()) {
        out.push(pathToFileURL(path).href);
      }
    }
  };
  walk(root);
  return out.sort();
}
