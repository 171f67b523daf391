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

/**
 * Bytes the subscriber may read past its last message. ioredis buffers a
 * reply whole before anything here sees it, and then allocates twice its
 * length: a hostile endpoint's one bulk string of 2.2 GB killed the process
 * (a RangeError out of the parser), and a stream with no line end held the
 * event loop, copied again at every chunk (a red-team finding). Past this the
 * connection is dropped, and made again with back-off.
 */
export const MAX_UNREAD_BYTES = 16 * MAX_HINT_MESSAGE_BYTES;
/**
 * Bytes of published hints not yet answered: past it (a Redis that stopped
 * reading) more are dropped. Room for one flush of 64 roots' largest messages.
 */
export const MAX_PUBLISHING_BYTES = 64 * MAX_HINT_MESSAGE_BYTES;
/** A connection up for less than this counts as a flap: the back-off keeps growing... */
const STABLE_MS = 5_000;
/** ...and from this many flaps in a row the log says so once a minute (FLAP_LOG_MS), not twice a flap. */
const QUIET_AFTER_FLAPS = 3;
const FLAP_LOG_MS = 60_000;

export function openRedisTransport(Client: typeof Redis, url: string, log: Logger, deliver: (text: string) => void): HintTransport {
  const name = publicBusName(url);
  // ioredis counts its attempts from each connection made: one that drops at once must not reset the back-off.
  let flaps = 0;
  let upSince = 0;
  const common = { retryStrategy: (times: number) => retryDelayMs(times + flaps), lazyConnect: false, commandTimeout: 10_000 };
  // The subscriber subscribes on each connection made ready (below). Not ioredis's own autoResubscribe: it sends
  // SUBSCRIBE with no handler for its promise, and a connection lost before the answer rejected it unhandled, which
  // ends a Node process (seen as a failing test beside a Redis that sends 2.2 GB and is cut off again and again).
  const subscriber = new Client(url, { ...common, maxRetriesPerRequest: null, autoResubscribe: false });
  // The publisher drops what it cannot send now.
  const publisher = new Client(url, { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  // Up when both connections are ready (hints go both ways); down when either is lost. Each change is said once.
  let state: 'starting' | 'up' | 'down' = 'starting';
  let closing = false;
  // A Redis that drops each connection soon after making it (or a publisher making it drop them) is said at the third
  // flap and then once a minute, not twice a flap; its return once a connection has stayed up STABLE_MS.
  let lastFlapSaid = -Infinity;
  let stable: NodeJS.Timeout | undefined;
  const down = (why: string) => {
    if (closing || state === 'down') return;
    const now = performance.now();
    flaps = state === 'up' && now - upSince < STABLE_MS ? Math.min(flaps + 1, 16) : 0;
    state = 'down';
    clearTimeout(stable);
    const line = `bus: ${name} is unreachable (${why}): this replica goes on with its own watcher, and reconnects with back-off`;
    if (flaps < QUIET_AFTER_FLAPS) return void log.warn(line);
    log.debug(line);
    if (now - lastFlapSaid < FLAP_LOG_MS) return;
    lastFlapSaid = now;
    log.warn(`bus: ${name} keeps dropping the connection soon after making it: hints are lost meanwhile (said again in a minute, and when it stays up)`);
  };
  const ready = () => {
    if (closing || state === 'up' || subscriber.status !== 'ready' || publisher.status !== 'ready') return;
    const back = state === 'starting' ? `bus: connected to ${name} (channel ${HINT_CHANNEL})` : `bus: ${name} is back: hints flow again`;
    state = 'up';
    upSince = performance.now();
    if (flaps < QUIET_AFTER_FLAPS) return void log.info(back);
    log.debug(back);
    // down() clears it: when it fires, the connection has stayed up all along.
    stable = setTimeout(() => {
      if (closing) return;
      flaps = 0;
      log.info(`${back} (up ${STABLE_MS / 1000} s after dropping the connection again and again)`);
    }, STABLE_MS);
    stable.unref();
  };
  for (const connection of [subscriber, publisher]) {
    connection.on('error', (error: NodeJS.ErrnoException) => {
      log.debug(`bus: ${error.message}`);
      down(error.code ?? error.message);
    });
    connection.on('close', () => down('connection closed'));
    connection.on('ready', ready);
  }
  // Security: what the subscriber reads is bounded before ioredis buffers it whole (MAX_UNREAD_BYTES).
  let unread = 0;
  subscriber.on('connect', () => {
    unread = 0;
    subscriber.stream.on('data', (chunk: Buffer) => {
      unread += chunk.length;
      if (unread <= MAX_UNREAD_BYTES || closing) return;
      unread = 0;
      down(`more than ${MAX_UNREAD_BYTES} bytes without a message`);
      // As a lost connection: made again with back-off (a disconnect(true) would come back at once, to read as much again).
      subscriber.stream.destroy();
    });
  });
  subscriber.on('messageBuffer', (channel: Buffer, message: Buffer) => {
    unread = 0;
    // Untrusted: a message over the bound is not even decoded (bus.ts validates the rest).
    if (message.length > MAX_HINT_MESSAGE_BYTES || channel.toString() !== HINT_CHANNEL) return;
    deliver(message.toString('utf8'));
  });
  subscriber.on('ready', () => {
    if (!closing) subscriber.subscribe(HINT_CHANNEL).catch((error: Error) => log.debug(`bus: subscribe: ${error.message}`));
  });
  // A Redis that stops reading (stopped, paused, a zero window) must not grow this replica: what is not answered is
  // counted, and past the bound more is dropped, as when it is down (each replica's own watcher covers the gap).
  let publishing = 0;
  let dropped = 0;
  return {
    publish(text) {
      if (publisher.status !== 'ready') return;
      const bytes = Buffer.byteLength(text);
      if (publishing + bytes > MAX_PUBLISHING_BYTES) {
        if (dropped++ === 0) log.warn(`bus: ${name} is not taking hints (${publishing} bytes unanswered): dropping them until it does`);
        return;
      }
      if (dropped > 0) log.info(`bus: ${name} takes hints again (${dropped} dropped)`);
      dropped = 0;
      publishing += bytes;
      publisher
        .publish(HINT_CHANNEL, text)
        .catch((error: Error) => {
          log.debug(`bus: publish: ${error.message}`);
          // Unanswered for commandTimeout: a Redis that stopped reading. ioredis keeps the command (and the socket its
          // bytes), so the connection is dropped and made again, which lets them go (a review finding: 1 MiB more
          // every 10 s).
          if (/timed out/i.test(error.message)) publisher.stream?.destroy();
        })
        .finally(() => (publishing -= bytes));
    },
    async close() {
      closing = true;
      clearTimeout(stable);
      subscriber.disconnect();
      publisher.disconnect();
    },
  };
}
