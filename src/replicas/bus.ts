// Hints across replicas (`--bus`): each replica tells the others which paths
// changed in its index (what its tools wrote, what its watcher saw), and
// treats what they tell it as a watcher's event: a hint to look at that path
// on its own disk (docs/live-updates.md: the disk is the truth). A hint never
// writes the index; the worst a forged or stale one can do is make a replica
// look at a path of its own folder. The transport (Redis pub/sub:
// ./redis-transport.ts) only carries text.
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { realClock, type Clock, type ClockTimer } from '../clock.ts';
import { Coalescer } from '../coalesce.ts';
import { basename, below, childPrefix, dirname, HOST_FLAVOUR, type Flavour } from '../fs-path.ts';
import type { CommittedChange } from '../index/folder-index.ts';
import type { Logger } from '../log.ts';
import { findRoot, isForbiddenWin32Segment, isPathInside, PATH_MAX_BYTES, uriToPath, type Root } from '../uri.ts';

/** The pub/sub channel every replica publishes to and listens on. */
export const HINT_CHANNEL = 'folder-mcp:hints';
/** A message longer than this (UTF-8 bytes) is dropped unread, and none is sent: a larger change goes as a `tree` hint. */
export const MAX_HINT_MESSAGE_BYTES = 64 * 1024;
/** Paths one message names at most; more changed under a root in one flush: a `tree` hint for that root instead. */
export const MAX_HINT_PATHS = 256;
/** Paths gathered this long before they are sent (a burst of changes goes as one message). */
const FLUSH_MS = 50;
/**
 * Paths taken from other replicas' hints per second, all senders together;
 * past it the rest of that second becomes one tree hint per root (a diff of
 * the root, which finds whatever they named).
 */
const MAX_INBOUND_PATHS_PER_SECOND = 5_000;
/**
 * Messages read per second, all senders together (a replica flushes at most
 * every FLUSH_MS, so 20 a second each); past it the rest of that second is
 * dropped unread and every root gets a tree hint instead. A flood then costs
 * Redis's own parsing, not a JSON parse and a check of each message (issue 44:
 * 100,000 messages a second kept 4.8 CPU-seconds of every 10 busy).
 */
const MAX_INBOUND_MESSAGES_PER_SECOND = 2_000;
/** A root is diffed for a tree hint at most once this often (a replica sending them in a loop costs one diff a second). */
const TREE_HINT_MIN_INTERVAL_MS = 1_000;
/**
 * ...and at most a tenth of the time: the next diff of a root waits this many
 * times as long as its last one took (issue 44: on 20,000 files, tree hints
 * once a second kept diffs running 5.7 s of every 10).
 */
const TREE_HINT_DUTY_FACTOR = 10;
/**
 * A path this replica looks at because of a hint is not sent back out when
 * that look changes the index: the replica that sent it knows (without this
 * each change would echo once through every replica). From the hint until
 * the look is done, and never longer than this. It was this long whatever
 * the look found: a file changed again on the disk within 5 s of a write
 * through another replica was never announced, and replicas that poll
 * served the old text until their next poll (a red-team finding).
 */
const ECHO_MS = 5_000;
/** Paths remembered for ECHO_MS at most (the oldest go first). */
const MAX_ECHO_PATHS = 10_000;

/** One message on the channel (JSON). */
export interface HintMessage {
  /** Version of this shape. */
  v: 1;
  /** The sender's replica id (`--replica-id`, or a random one): a replica ignores its own messages. */
  origin: string;
  /** The sending process, at random: two replicas given one `--replica-id` tell each other apart by it. */
  process?: string;
  /** The root's absolute path, as the sender serves it: replicas share hints for roots they serve at the same path. */
  root: string;
  /** Paths relative to the root (`''` is the root), `/`-separated. */
  paths: string[];
  /** More changed under the root than `paths` says: diff the whole root. */
  tree?: true;
}

/** A validated hint, in this replica's terms. */
export interface Hint {
  origin: string;
  process: string | undefined;
  root: Root;
  /** Absolute paths inside `root`. */
  paths: string[];
  tree: boolean;
}

/**
 * Reads one message from the channel, which is untrusted input (anyone who
 * can publish to the Redis server can write one): null unless it is small,
 * well-formed, names a root this replica serves and only paths inside it.
 * Paths must be relative and already normalised (no `..`, `.`, empty or
 * absolute segments, no NUL): a path that would need resolving is refused,
 * not resolved, and the result is checked with the same containment test as
 * a client's URI (uri.ts isPathInside).
 */
export function decodeHint(text: string, roots: readonly Root[], flavour: Flavour = HOST_FLAVOUR): Hint | null {
  if (Buffer.byteLength(text) > MAX_HINT_MESSAGE_BYTES) return null;
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return null;
  const { v, origin, process: sender, root: rootPath, paths, tree } = message as Record<string, unknown>;
  if (v !== 1 || typeof origin !== 'string' || origin.length === 0 || origin.length > 64) return null;
  if (sender !== undefined && (typeof sender !== 'string' || sender.length > 64)) return null;
  if (typeof rootPath !== 'string' || !Array.isArray(paths) || paths.length > MAX_HINT_PATHS) return null;
  if (tree !== undefined && tree !== true) return null;
  const root = roots.find((r) => r.path === rootPath);
  if (!root) return null;
  const absolute: string[] = [];
  for (const rel of paths) {
    const path = resolveRelative(root, rel, flavour);
    if (path === null) return null;
    absolute.push(path);
  }
  return { origin, process: sender, root, paths: absolute, tree: tree === true };
}

function resolveRelative(root: Root, rel: unknown, flavour: Flavour = HOST_FLAVOUR): string | null {
  if (typeof rel !== 'string' || Buffer.byteLength(rel) > PATH_MAX_BYTES) return null;
  if (rel === '') return root.path;
  // Security: only a path that needs no resolving: `a/../../etc` or `/etc` is refused outright.
  if (rel.startsWith('/') || rel.includes('\0') || posix.normalize(rel) !== rel || rel === '..' || rel.startsWith('../') || rel.endsWith('/')) {
    return null;
  }
  // Security: on Windows '\\' separates too (`a\\..\\..\\x` would climb out), and a stream, a device or a trailing dot
  // names another file than it reads: none is a name a replica's own index would send.
  if (flavour === 'win32' && (rel.includes('\\') || rel.split('/').some(isForbiddenWin32Segment))) return null;
  const path = childPrefix(root.path) + rel;
  return isPathInside(root.path, path) ? path : null;
}

/** Encodes what changed under `root`: one message, or a tree hint when the paths do not fit in one. */
export function encodeHints(origin: string, root: Root, relPaths: ReadonlySet<string>, process?: string): string {
  const base = { v: 1 as const, origin, ...(process !== undefined && { process }), root: root.path };
  if (relPaths.size <= MAX_HINT_PATHS) {
    const text = JSON.stringify({ ...base, paths: [...relPaths] } satisfies HintMessage);
    if (Buffer.byteLength(text) <= MAX_HINT_MESSAGE_BYTES) return text;
  }
  return JSON.stringify({ ...base, paths: [], tree: true } satisfies HintMessage);
}

/** Carries messages between replicas; ./redis-transport.ts over Redis pub/sub. */
export interface HintTransport {
  /** Sends one message; dropped while the transport is down (each replica's own watcher covers the gap). */
  publish(text: string): void;
  close(): Promise<void>;
}

/** Opens a transport that calls `deliver` with each message from the channel (its own included). */
export type OpenHintTransport = (deliver: (text: string) => void) => HintTransport;

export interface HintBusOptions {
  origin: string;
  roots: readonly Root[];
  log: Logger;
  /** Calls its listener after each committed change to the index (FolderIndex.onChange). */
  onChange(listener: (change: CommittedChange) => void): () => void;
  /** Looks at these paths (Live.hint), resolving once they have been looked at... */
  hint(paths: Iterable<string>): Promise<void>;
  /** ...or diffs this root (Live.hintTree). */
  hintTree(dir: string): Promise<void>;
  open: OpenHintTransport;
  /** The time its delays and rate limits go by (default the real one). */
  clock?: Clock;
}

/** One replica's end of the bus: what changed here goes out, what changed elsewhere comes in as hints. */
export class HintBus {
  /** Root path -> paths relative to it, changed here and not yet sent. */
  private outgoing = new Map<string, Set<string>>();
  /** Sends what changed here FLUSH_MS after the first change of a batch. */
  private readonly flushing: Coalescer;
  private readonly clock: Clock;
  /** Absolute path -> when a hint for it stops counting as the reason of a change (ECHO_MS). */
  private readonly hinted = new Map<string, number>();
  private inboundSecond = 0;
  private inboundPaths = 0;
  private inboundMessages = 0;
  /** Root path -> when its last tree hint ran (started, then ended). */
  private readonly treeLast = new Map<string, number>();
  /** Root path -> how long its last tree hint's diff took (ms). */
  private readonly treeCost = new Map<string, number>();
  /** Roots whose tree hint's diff runs now, and those asked for again meanwhile. */
  private readonly treeRunning = new Set<string>();
  private readonly treeAgain = new Set<string>();
  /** Roots with a tree hint scheduled. */
  private readonly treePending = new Set<string>();
  private readonly treeTimers = new Set<ClockTimer>();
  private readonly transport: HintTransport;
  private readonly stopListening: () => void;
  private closed = false;
  /** This process, in every message it sends (HintMessage.process). */
  private readonly process = randomBytes(8).toString('hex');
  /** Whether another process's messages under this replica's id were seen (said once). */
  private sharedOrigin = false;
  /** Messages dropped as invalid (for tests and the log). */
  rejected = 0;
  /** Hints taken from other replicas (for tests). */
  received = 0;

  constructor(private readonly options: HintBusOptions) {
    this.clock = options.clock ?? realClock;
    this.flushing = new Coalescer(() => this.flush(), FLUSH_MS, FLUSH_MS, { leading: 'none', clock: this.clock });
    this.transport = options.open((text) => this.deliver(text));
    this.stopListening = options.onChange((change) => this.changed(change));
  }

  private changed(change: CommittedChange): void {
    if (this.closed) return;
    const now = this.clock.now();
    for (const uri of [...change.removed, ...change.upserted.map((row) => row.uri)]) {
      const path = uriToPath(uri);
      if ((this.hinted.get(path) ?? 0) <= now) this.send(path);
    }
  }

  /** `path` goes out with the next flush (FLUSH_MS from the first of a batch). */
  private send(path: string): void {
    const root = findRoot(this.options.roots, path);
    if (!root) return;
    let set = this.outgoing.get(root.path);
    if (!set) this.outgoing.set(root.path, (set = new Set()));
    // Past one message's worth the root goes as a tree hint: no need to hold more.
    if (set.size <= MAX_HINT_PATHS) set.add(below(root.path, path));
    this.flushing.trigger();
  }

  /**
   * Changes this replica's own tools made (write, edit, mkdir, move): always
   * announced, even to a path that came as a hint a moment ago. Echo
   * suppression is for the commits a hint causes; a write here after one is
   * news to every other replica (issue 44: r1's write 1.5 s after r2's went
   * unheard, and r2, polling hourly, served its own old text).
   */
  announce(paths: readonly string[]): void {
    if (this.closed) return;
    for (const path of paths) {
      for (const p of [path, dirname(path)]) this.hinted.delete(p);
      this.send(path);
    }
  }

  private flush(): void {
    const outgoing = this.outgoing;
    this.outgoing = new Map();
    for (const [rootPath, paths] of outgoing) {
      const root = this.options.roots.find((r) => r.path === rootPath)!;
      this.transport.publish(encodeHints(this.options.origin, root, paths, this.process));
    }
  }

  private deliver(text: string): void {
    if (this.closed) return;
    const second = Math.floor(this.clock.now() / 1000);
    if (second !== this.inboundSecond) {
      this.inboundSecond = second;
      this.inboundPaths = 0;
      this.inboundMessages = 0;
    }
    if (++this.inboundMessages > MAX_INBOUND_MESSAGES_PER_SECOND) {
      // Every unread message is followed by a diff that starts after it (tree() is a Set lookup while one is
      // scheduled, and marks one to follow while one runs): a diff that ran before it cannot have seen its change.
      for (const root of this.options.roots) this.tree(root);
      return;
    }
    const hint = decodeHint(text, this.options.roots);
    if (hint === null) {
      // Said once at warn level, then at debug: a flood of bad messages must not flood the log.
      if (this.rejected++ === 0) this.options.log.warn('bus: a message that is not a valid hint for the folders served here was dropped (more at debug level)');
      else this.options.log.debug('bus: an invalid message was dropped');
      return;
    }
    if (hint.origin === this.options.origin) {
      // Ours, or (from a replica before `process`) taken as ours. Another process under our id hides each of us from
      // the other's hints, and a balancer sends both one's sessions: said once, and its hints taken.
      if (hint.process === undefined || hint.process === this.process) return;
      if (!this.sharedOrigin) {
        this.sharedOrigin = true;
        this.options.log.warn(`bus: another replica uses --replica-id ${this.options.origin}: give each replica its own (a load balancer routes sessions by it)`);
      }
    }
    this.received++;
    this.inboundPaths += hint.paths.length;
    if (hint.tree || this.inboundPaths > MAX_INBOUND_PATHS_PER_SECOND) return this.tree(hint.root);
    // A .gitignore's change re-walks its folder: from a hint, that is a diff like a tree hint's, and is rate-limited
    // as one (issue 44: hints naming a .gitignore re-walked its folder every time, 8.66 CPU-seconds per 10 s).
    const paths = hint.paths.filter((path) => basename(path) !== '.gitignore');
    if (paths.length < hint.paths.length) this.tree(hint.root);
    if (paths.length === 0) return;
    const until = this.remember(paths);
    void this.options.hint(paths).then(() => this.forget(paths, until));
  }

  /**
   * A tree hint for `root`: at once, or once TREE_HINT_MIN_INTERVAL_MS (and
   * TREE_HINT_DUTY_FACTOR times its last diff's time) have passed since the
   * last one ended; those in between make one.
   */
  private tree(root: Root): void {
    if (this.treePending.has(root.path)) return;
    // One running: another after it (its time is not known until it ends).
    if (this.treeRunning.has(root.path)) return void this.treeAgain.add(root.path);
    const gap = Math.max(TREE_HINT_MIN_INTERVAL_MS, TREE_HINT_DUTY_FACTOR * (this.treeCost.get(root.path) ?? 0));
    const wait = Math.max(0, (this.treeLast.get(root.path) ?? -Infinity) + gap - this.clock.now());
    this.treePending.add(root.path);
    const timer = this.clock.setTimeout(() => {
      this.treeTimers.delete(timer);
      this.treePending.delete(root.path);
      if (this.closed) return;
      this.treeLast.set(root.path, this.clock.now());
      const until = this.remember([root.path]);
      const started = this.clock.now();
      this.treeRunning.add(root.path);
      void this.options
        .hintTree(root.path)
        .catch((error: unknown) => this.options.log.debug(`bus: diff of ${root.path} failed: ${(error as Error).message}`))
        .finally(() => {
          this.forget([root.path], until);
          this.treeRunning.delete(root.path);
          this.treeCost.set(root.path, this.clock.now() - started);
          this.treeLast.set(root.path, this.clock.now());
          if (this.treeAgain.delete(root.path) && !this.closed) this.tree(root);
        });
    }, wait);
    this.treeTimers.add(timer);
  }

  /** Paths (and their folders, whose mtime the change moves) that a change here may now come from a hint; returns until when. */
  private remember(paths: readonly string[]): number {
    const until = this.clock.now() + ECHO_MS;
    for (const path of paths) {
      for (const p of [path, dirname(path)]) {
        this.hinted.delete(p);
        this.hinted.set(p, until);
      }
    }
    const now = this.clock.now();
    for (const [path, expires] of this.hinted) {
      if (this.hinted.size <= MAX_ECHO_PATHS && expires > now) break;
      this.hinted.delete(path);
    }
    return until;
  }

  /** The look a hint asked for is done: a change to those paths from now on is news (a later hint's entry stays). */
  private forget(paths: readonly string[], until: number): void {
    for (const path of paths) {
      for (const p of [path, dirname(path)]) if (this.hinted.get(p) === until) this.hinted.delete(p);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopListening();
    this.flushing.cancel();
    for (const timer of this.treeTimers) this.clock.clearTimeout(timer);
    await this.transport.close();
  }
}
