// The cluster of `npm run test:cluster` (and the bench's HTTP capacity
// through nginx): real nginx (Debian's package) with the shipped
// deploy/nginx/folder-mcp.conf, real redis-server, and folder-mcp replicas
// started from the built dist/cli.js, each on a fixed free port of
// 127.0.0.1 so that one can be killed and started again where nginx expects it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI } from './helpers.ts';

export const NGINX_CONF = fileURLToPath(new URL('../deploy/nginx/folder-mcp.conf', import.meta.url));
/** The placeholders of the shipped config: replica addresses and the listen port. */
const REPLICA_PLACEHOLDERS = ['127.0.0.1:8081', '127.0.0.1:8082', '127.0.0.1:8083'];

/** Why the cluster cannot run here (no nginx or no redis-server on PATH), or null. */
export function clusterMissing(tools: readonly string[] = ['nginx', 'redis-server']): string | null {
  const missing = tools.filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  return missing.length === 0 ? null : `${missing.join(' and ')} not installed (apt-get install -y nginx redis-server)`;
}

/** A free TCP port on 127.0.0.1 (bound and released: another process could take it in between, which is unlikely). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on 127.0.0.1:port (tries again on refusal until `timeoutMs`). */
export async function waitForPort(port: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A child process with its output kept, and a stop that waits for its exit. */
export interface Running {
  readonly child: ChildProcess;
  output(): string;
  /** Sends `signal` (unless it has exited) and resolves once it has. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Resolves once `pattern` has appeared in its output `count` times. */
  waitForOutput(pattern: RegExp, timeoutMs?: number, count?: number): Promise<void>;
}

function track(child: ChildProcess, what: string): Running {
  let output = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    child.once('exit', () => {
      for (const waiter of waiters) waiter();
      resolve();
    });
  });
  return {
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
    waitForOutput(pattern, timeoutMs = 30_000, count = 1) {
      const global = new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`);
      const seen = () => (output.match(global)?.length ?? 0) >= count;
      if (seen()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${what}: no ${pattern} (x${count}) within ${timeoutMs} ms; output:\n${output.slice(-4000)}`));
        }, timeoutMs);
        const check = () => {
          if (seen()) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`${what} exited (${child.exitCode ?? child.signalCode}) before ${pattern}; output:\n${output.slice(-4000)}`));
          }
        };
        waiters.add(check);
      });
    },
  };
}

export interface Replica extends Running {
  readonly id: string;
  readonly port: number;
  /** http://127.0.0.1:PORT/mcp, straight to this replica. */
  readonly url: string;
}

export interface ReplicaOptions {
  id: string;
  port: number;
  folder: string;
  db: string;
  /** More options (the shared ones: --token-file, --cursor-key-file, --bus...). */
  args: string[];
  node?: string;
}

/** Starts `folder-mcp --http 127.0.0.1:PORT --replica-id ID --db DB ARGS FOLDER` and waits for its URL line. */
export async function startReplica(options: ReplicaOptions): Promise<Replica> {
  const child = spawn(
    options.node ?? process.execPath,
    [CLI, '--http', `127.0.0.1:${options.port}`, '--replica-id', options.id, '--db', options.db, ...options.args, options.folder],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, FOLDER_MCP_TOKEN: '', FOLDER_MCP_CURSOR_KEY: '' } },
  );
  const running = track(child, `replica ${options.id}`);
  await running.waitForOutput(/serving MCP over Streamable HTTP at http:\/\/127\.0\.0\.1:\d+\/mcp/);
  return { ...running, id: options.id, port: options.port, url: `http://127.0.0.1:${options.port}/mcp` };
}

export interface Nginx extends Running {
  readonly port: number;
  /** http://127.0.0.1:PORT/mcp, through nginx. */
  readonly url: string;
}

/**
 * Runs nginx (in the foreground, its own prefix under `dir`) with the shipped
 * config, its placeholders replaced: the replicas' ports and the listen port.
 * Nothing else of the shipped file changes.
 */
export async function startNginx(dir: string, replicaPorts: readonly number[], port: number): Promise<Nginx> {
  let conf = readFileSync(NGINX_CONF, 'utf8');
  REPLICA_PLACEHOLDERS.forEach((placeholder, i) => {
    conf = conf.replaceAll(placeholder, `127.0.0.1:${replicaPorts[i]}`);
  });
  if (!conf.includes('    listen 8080;')) throw new Error('the shipped config has no `listen 8080;` placeholder');
  conf = conf.replace('    listen 8080;', `    listen 127.0.0.1:${port};`);
  // nginx's workers run as nobody when nginx is started as root: its temp folders must be theirs to write.
  chmodSync(dir, 0o755);
  const temp = join(dir, 'temp');
  mkdirSync(temp, { recursive: true });
  chmodSync(temp, 0o777);
  writeFileSync(join(dir, 'folder-mcp.conf'), conf);
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      'daemon off;',
      'worker_processes 1;',
      `pid ${join(dir, 'nginx.pid')};`,
      'error_log stderr warn;',
      'events { worker_connections 1024; }',
      'http {',
      `  access_log ${join(dir, 'access.log')};`,
      `  client_body_temp_path ${join(temp, 'body')};`,
      `  proxy_temp_path ${join(temp, 'proxy')};`,
      `  fastcgi_temp_path ${join(temp, 'fastcgi')};`,
      `  uwsgi_temp_path ${join(temp, 'uwsgi')};`,
      `  scgi_temp_path ${join(temp, 'scgi')};`,
      `  include ${join(dir, 'folder-mcp.conf')};`,
      '}',
      '',
    ].join('\n'),
  );
  const args = ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'];
  const check = spawnSync('nginx', [...args, '-t'], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx -t refused the config:\n${check.stderr}`);
  const child = spawn('nginx', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const running = track(child, 'nginx');
  await waitForPort(port);
  return { ...running, port, url: `http://127.0.0.1:${port}/mcp` };
}

export interface RedisServer extends Running {
  readonly port: number;
  readonly url: string;
}

/** redis-server on 127.0.0.1:port, nothing saved (`--save '' --appendonly no`), its files under `dir`. */
export async function startRedis(dir: string, port: number): Promise<RedisServer> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const running = track(child, 'redis-server');
  await running.waitForOutput(/Ready to accept connections/);
  return { ...running, port, url: `redis://127.0.0.1:${port}` };
}

/** GET http://127.0.0.1:port/path: the status, or 0 when nothing answers. */
export async function getStatus(port: number, path: string): Promise<number> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5_000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/**
 * A fetch for the SDK clients' transports that notes which replica answered
 * each request (the X-Folder-Mcp-Replica header, from --replica-id), in order.
 */
export function recordingFetch(): { fetch: typeof fetch; answeredBy: string[] } {
  const answeredBy: string[] = [];
  return {
    answeredBy,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const method = init?.method ?? 'GET';
      if (method === 'POST') answeredBy.push(response.headers.get('x-folder-mcp-replica') ?? `(none: ${response.status})`);
      return response;
    },
  };
}
