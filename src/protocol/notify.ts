import type { Clock } from '../clock.ts';
import { Coalescer } from '../coalesce.ts';
import type { CommittedChange, FolderIndex } from '../index/folder-index.ts';
import type { Logger } from '../log.ts';
import type { Connection } from './connection.ts';

/**
 * Notifications of every change committed to `index` (FolderIndex.onChange,
 * the one hub for committed changes) go to `connection` until the returned
 * function is called.
 */
export function notifyConnection(index: Pick<FolderIndex, 'onChange'>, connection: Connection, log: Logger, timings: NotifyTimings = DEFAULT_NOTIFY_TIMINGS): () => void {
  const notifier = new ResourceNotifier(connection, log, timings);
  const stop = index.onChange((change) => notifier.onCommitted(change));
  return () => {
    stop();
    notifier.cancel();
  };
}

export interface NotifyTimings {
  /** list_changed goes out this long after the last change of a burst... */
  listQuietMs: number;
  /** ...but no later than this after the first. */
  listMaxDelayMs: number;
  updatedQuietMs: number;
  updatedMaxDelayMs: number;
  /** The time the windows go by (default the real one). */
  clock?: Clock;
}

export const DEFAULT_NOTIFY_TIMINGS: NotifyTimings = {
  listQuietMs: 200,
  listMaxDelayMs: 1000,
  updatedQuietMs: 100,
  updatedMaxDelayMs: 500,
};

/**
 * Turns committed index changes into one connection's MCP notifications,
 * coalesced in time (the SDK only coalesces within one tick): `list_changed`
 * when the set of resources changed, `updated {uri, title}` once per
 * subscribed URI per window. Sent through the connection's server instance:
 * on 2025-11-25 and older the SDK sends them as they are; on 2026-07-28 it
 * routes them onto the listen streams that asked for them.
 */
export class ResourceNotifier {
  private readonly pendingUpdated = new Set<string>();
  private readonly list: Coalescer;
  private readonly updated: Coalescer;
  /**
   * While the connection's output is full (Connection.outputFull: a stdio
   * client not reading stdout), no window hands it more: what changes
   * meanwhile waits in `pendingUpdated` (one entry a subscribed URI) and
   * `listWaiting`, and goes out once it takes more. Every window's
   * notifications were queued as JSON behind the full pipe: 1.38 GiB after
   * 90 s of 2,000 subscribed files changing (a red-team finding). Only the
   * output's fullness holds a window, never a send in flight: holding on
   * those put each `updated` behind the `list_changed` sent a moment before
   * it, one quiet spell (100 ms) later (the bench's change-to-updated went
   * from 22 to 123 ms).
   */
  private listWaiting = false;
  private waitingForOutput = false;
  private cancelled = false;

  constructor(
    private readonly connection: Connection,
    private readonly log: Logger,
    timings: NotifyTimings = DEFAULT_NOTIFY_TIMINGS,
  ) {
    const clock = timings.clock ? { clock: timings.clock } : {};
    this.list = new Coalescer(() => this.sendListChanged(), timings.listQuietMs, timings.listMaxDelayMs, clock);
    this.updated = new Coalescer(() => this.sendUpdated(), timings.updatedQuietMs, timings.updatedMaxDelayMs, clock);
  }

  /** An IndexChangeListener. */
  readonly onCommitted = (change: CommittedChange): void => {
    if (change.listChanged) this.list.trigger();
    const affected = this.connection.subscriptions.affectedBy(change);
    if (affected.size === 0) return;
    for (const uri of affected) this.pendingUpdated.add(uri);
    this.updated.trigger();
  };

  cancel(): void {
    this.cancelled = true;
    this.updated.cancel();
    this.list.cancel();
  }

  /** Whether the output is full: then what changes waits, and a resume is due when it takes more. */
  private held(): boolean {
    if (this.waitingForOutput) return true;
    const full = this.connection.outputFull?.();
    if (!full) return false;
    this.waitingForOutput = true;
    void full.then(() => {
      this.waitingForOutput = false;
      this.resume();
    });
    return true;
  }

  private resume(): void {
    if (this.cancelled || this.held()) return;
    if (this.pendingUpdated.size > 0) this.updated.trigger();
    if (this.listWaiting) {
      this.listWaiting = false;
      this.list.trigger();
    }
  }

  private sendListChanged(): void {
    const server = this.connection.server;
    if (!server) return;
    if (this.held()) return void (this.listWaiting = true);
    server.sendResourceListChanged().catch((error: unknown) => this.dropped('list_changed', error));
  }

  private sendUpdated(): void {
    const { server, subscriptions } = this.connection;
    if (!server) return void this.pendingUpdated.clear();
    if (this.held()) return; // kept: sent when the transport has written out what it holds
    const uris = [...this.pendingUpdated];
    this.pendingUpdated.clear();
    for (const uri of uris) {
      // Unsubscribed while the window was open: the client asked for silence.
      const title = subscriptions.titleOf(uri);
      if (title === undefined) continue;
      for (const spelling of subscriptions.spellingsOf(uri)) {
        // The spec's params carry `title`; the SDK's type for them lacks it.
        server.sendResourceUpdated({ uri: spelling, title } as { uri: string }).catch((error: unknown) => this.dropped('updated', error));
      }
    }
  }

  private dropped(what: string, error: unknown): void {
    // Not connected (yet, or any more): there is nobody to tell.
    this.log.debug(`notification ${what} not sent: ${(error as Error).message ?? String(error)}`);
  }
}
