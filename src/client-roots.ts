// With no folder on the command line, a stdio server serves its client's
// roots, as the reference filesystem server does: VS Code and other clients
// that know the workspace name it there. Roots exist in MCP 2025-11-25 only
// (2026-07-28 deprecates them and has no server-to-client request), so this
// follows the 2025 lifecycle: the client's `initialize` must offer the roots
// capability, `roots/list` is asked once the client says `initialized`, and
// again on each `notifications/roots/list_changed`.
import type { Server } from '@modelcontextprotocol/server';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { App } from './app.ts';
import type { Logger } from './log.ts';
import { errorResponse, type Era, type ErrorResponse } from './protocol/wire.ts';
import type { Root } from './uri.ts';

export interface ClientRootsOptions {
  app: App;
  log: Logger;
  /** A folder's real path as a root, or why it cannot be served (launch.ts resolveFolder). */
  resolve(folder: string): { root: Root } | { problem: string };
  /** Where the index of a set of roots lives, or why it cannot be there (launch.ts indexFileFor). */
  indexFor(roots: readonly Root[]): { dbFile: string } | { problem: string };
  /** The client cannot name roots: this line goes to stderr, and the process exits 2 (cli.ts). */
  refuse(line: string): void;
}

 /**
 * roots/list's answer, loosely: each root is judged on its own (folderOf), so
 * that one root a client names by another scheme (`vscode-vfs:`) does not
 * fail the whole answer, as the SDK's own result schema (file: URIs only) would.
 */
const LOOSE_ROOTS = z.looseObject({ roots: z.array(z.looseObject({ uri: z.unknown() })) });
/**
 * Roots served at most: a multi-root workspace has a handful; past this the
 * rest are left out with a warning (2,000 roots blocked a ping for 510 ms:
 * each path's root is found by a look through them all).
 */
export const MAX_CLIENT_ROOTS = 100;
/** How long the client has to answer roots/list (the SDK's default is 60 s, during which requests wait for the roots). */
const ROOTS_TIMEOUT_MS = 10_000;

/** JSON-RPC "Method not found": a 2025-only server's answer to the 2026-07-28 probe, which sends a client in auto mode to `initialize`. */
const METHOD_NOT_FOUND = -32601;
const INVALID_REQUEST = -32600;

/**
 * One stdio client's roots, followed. `inbound` sees every message before
 * the SDK (launch.ts serveStdioStreams); `serverBuilt` is handed each server
 * instance the SDK builds, the one to ask `roots/list` through.
 */
export class ClientRoots {
  private server: Pick<Server, 'request'> | undefined;
  /** The roots served now, by real path, to tell a change from a repeat. */
  private served: string | undefined;
  /** A roots/list is under way; `again` asks once more when it is done (a change arrived meanwhile). */
  private asking = false;
  private again = false;

  constructor(private readonly options: ClientRootsOptions) {}

  serverBuilt(server: Pick<Server, 'request'>): void {
    this.server = server;
  }

  inbound(message: Record<string, unknown>, era: Era): ErrorResponse | undefined {
    const { method, id } = message;
    if (typeof method !== 'string') return undefined;
    if (method === 'server/discover' && isRequestId(id)) {
      // Answered as a 2025-only server would: a client in auto mode falls back to initialize, which has roots.
      return errorResponse(id, METHOD_NOT_FOUND, 'server/discover: folder-mcp was started with no folder, so it serves the client\'s roots, which only MCP 2025-11-25 has: connect with initialize');
    }
    if (era === 'modern' && isRequestId(id) && method !== 'ping') {
      return this.refuse(id, 'no folder given, and a client of MCP 2026-07-28 has no roots: give the folders to serve on the command line');
    }
    if (method === 'initialize' && isRequestId(id)) {
      if (!offersRoots(message.params)) {
        return this.refuse(id, "no folder given, and this client does not offer roots (its initialize has no roots capability): give the folders to serve on the command line");
      }
      return undefined;
    }
    // After the SDK has taken the notification in: the lifecycle is then complete on its side too.
    if (method === 'notifications/initialized' || method === 'notifications/roots/list_changed') setImmediate(() => void this.ask());
    return undefined;
  }

  private refuse(id: string | number, why: string): ErrorResponse {
    this.options.refuse(`folder-mcp: ${why}\n`);
    return errorResponse(id, INVALID_REQUEST, why);
  }

  /** roots/list, then the services move to the set it names; one at a time, the last change always asked. */
  private async ask(): Promise<void> {
    if (this.asking) {
      this.again = true;
      return;
    }
    this.asking = true;
    try {
      do {
        this.again = false;
        await this.askOnce();
      } while (this.again);
    } finally {
      this.asking = false;
    }
  }

  private async askOnce(): Promise<void> {
    const { log } = this.options;
    let listed: { uri: unknown }[];
    try {
      if (!this.server) throw new Error('no server instance yet');
      listed = (await this.server.request({ method: 'roots/list' }, LOOSE_ROOTS, { timeout: ROOTS_TIMEOUT_MS })).roots;
    } catch (error) {
      // The roots served so far stay; with none yet, requests are told there is no folder rather than wait for good.
      const first = this.served === undefined;
      log.error(`roots/list failed: ${(error as Error).message}; ${first ? "serving no folder until the client's roots change" : 'the roots served so far stay'}`);
      if (!first) return;
      listed = [];
    }
    const roots = this.rootsOf(listed);
    const key = JSON.stringify(roots.map((r) => r.path));
    if (key === this.served) return;
    this.served = key;
    if (roots.length === 0) {
      log.warn("the client's roots name no folder that can be served");
      return this.options.app.place([], ':memory:');
    }
    const placed = this.options.indexFor(roots);
    let dbFile = ':memory:';
    if ('problem' in placed) log.warn(`${placed.problem}; this set of roots is indexed in memory`);
    else dbFile = placed.dbFile;
    log.info(`serving the client's roots: ${roots.map((r) => r.path).join(', ')} (index: ${dbFile})`);
    await this.options.app.place(roots, dbFile);
  }

  /** The roots that are folders here, by real path, each once; the others are logged and left out. */
  private rootsOf(listed: readonly { uri: unknown }[]): Root[] {
    const roots = new Map<string, Root>();
    if (listed.length > MAX_CLIENT_ROOTS) {
      this.options.log.warn(`the client named ${listed.length} roots: the first ${MAX_CLIENT_ROOTS} are served, the rest left out`);
    }
    for (const { uri } of listed.slice(0, MAX_CLIENT_ROOTS)) {
      const found = folderOf(uri);
      const resolved = 'problem' in found ? found : this.options.resolve(found.folder);
      if ('problem' in resolved) {
        this.options.log.warn(`root ${typeof uri === 'string' ? uri : JSON.stringify(uri)} is left out: ${resolved.problem}`);
        continue;
      }
      roots.set(resolved.root.path, resolved.root);
    }
    return [...roots.values()];
  }
}

/** A root's URI as a local path; roots are file: URIs (spec), anything else names no folder here. */
export function folderOf(uri: unknown): { folder: string } | { problem: string } {
  if (typeof uri !== 'string') return { problem: 'its uri is not a string' };
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return { problem: 'not a URI' };
  }
  if (url.protocol !== 'file:') return { problem: `only file: roots name a folder, not ${url.protocol}` };
  try {
    return { folder: fileURLToPath(url) };
  } catch (error) {
    // A host that is not this machine's (file://server/x on POSIX), an encoded separator.
    return { problem: (error as Error).message };
  }
}

function offersRoots(params: unknown): boolean {
  if (typeof params !== 'object' || params === null) return false;
  const capabilities = (params as { capabilities?: unknown }).capabilities;
  return typeof capabilities === 'object' && capabilities !== null && typeof (capabilities as { roots?: unknown }).roots === 'object' && (capabilities as { roots?: unknown }).roots !== null;
}

function isRequestId(id: unknown): id is string | number {
  return typeof id === 'string' || typeof id === 'number';
}
