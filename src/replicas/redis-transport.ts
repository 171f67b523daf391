// The bus over Redis pub/sub (`--bus redis://HOST:PORT`), with ioredis, the
// ecosystem's pure-JS client. Loaded only when --bus is given (app.ts).
// Two connections: a subscribed one cannot publish. Redis down, at start or
// later, is said once; the replica goes on with its own watcher, ioredis
// reconnects with back-off (and subscribes again), and the return is said
// once. Messages published while it is down are dropped, not queued: the
// other replicas' watchers see those changes themselves, later.
import type { Redis } from 'ioredis';
import type { Logger } from '../log.ts';
import { HINT_CHANNEL, MAX_HINT_MESSAGE_BYTES, type HintTransport } from './bus.ts';

/** Reconnection back-off: doubling from this... */
const RETRY_FIRST_MS = 100;
/** ...up to this, with jitter so that replicas do not reconnect in step. */
const RETRY_MAX_MS = 5_000;

/** Exponential back-off with ±20% jitter, for attempt `times` (1, 2, ...). */
export function retryDelayMs(times: number, random = Math.random): number {
  const base = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(times - 1, 16));
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** `redis://user:secret@host:6379/0` as `redis://host:6379`: log lines never carry a password. */
export function publicBusName(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}`;
}

/**
 * The Redis client class, loaded on first use: bundled, a static import of
 * an external package is hoisted to the top of dist/folder-mcp.js and loaded
 * at every start (ioredis cost about 300 ms of CPU a start, with no --bus).
 */
export async function loadRedis(): Promise<typeof Redis> {
  return (await import('ioredis')).Redis;
}

export function openRedisTransport(Client: typeof Redis, url: string, log: Logger, deliver: (text: string) => void): HintTransport {
  const name = publicBusName(url);
  const common = { retryStrategy: (times: number) => retryDelayMs(times), lazyConnect: false };
  // The subscriber queues its SUBSCRIBE until the first connection, whenever that is, and ioredis subscribes again
  // after each reconnection.
  const subscriber = new Client(url, { ...common, maxRetriesPerRequest: null, autoResubscribe: true });
  // The publisher drops what it cannot send now.
  const publisher = new Client(url, { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  // Up when both connections are ready (hints go both ways); down when either is lost. Each change is said once.
  let state: 'starting' | 'up' | 'down' = 'starting';
  let closing = false;
  const down = (why: string) => {
    if (closing || state === 'down') return;
    state = 'down';
    log.warn(`bus: ${name} is unreachable (${why}): this replica goes on with its own watcher, and reconnects with back-off`);
  };
  const ready = () => {
    if (closing || state === 'up' || subscriber.status !== 'ready' || publisher.status !== 'ready') return;
    log.info(state === 'starting' ? `bus: connected to ${name} (channel ${HINT_CHANNEL})` : `bus: ${name} is back: hints flow again`);
    state = 'up';
  };
  for (const connection of [subscriber, publisher]) {
    connection.on('error', (error: NodeJS.ErrnoException) => {
      log.debug(`bus: ${error.message}`);
      down(error.code ?? error.message);
    });
    connection.on('close', () => down('connection closed'));
    connection.on('ready', ready);
  }
  subscriber.on('messageBuffer', (channel: Buffer, message: Buffer) => {
    // Untrusted: a message over the bound is not even decoded (bus.ts validates the rest).
    if (message.length > MAX_HINT_MESSAGE_BYTES || channel.toString() !== HINT_CHANNEL) return;
    deliver(message.toString('utf8'));
  });
  subscriber.subscribe(HINT_CHANNEL).catch((error: Error) => log.debug(`bus: subscribe: ${error.message}`));
  return {
    publish(text) {
      if (publisher.status !== 'ready') return;
      publisher.publish(HINT_CHANNEL, text).catch((error: Error) => log.debug(`bus: publish: ${error.message}`));
    },
    async close() {
      closing = true;
      subscriber.disconnect();
      publisher.disconnect();
    },
  };
}
