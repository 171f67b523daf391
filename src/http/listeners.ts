import type { ServerNotifier } from '@modelcontextprotocol/server';
import { Connection } from '../protocol/connection.ts';
import type { ServerContext } from '../protocol/context.ts';
import { trackListensInTurns } from '../protocol/listen.ts';
import { notifyConnection } from '../protocol/notify.ts';
import type { ErrorResponse } from '../protocol/wire.ts';
import type { TurnBudget } from '../turns.ts';

/**
 * The HTTP endpoint's `subscriptions/listen` streams, as one notification
 * target. The SDK's listen router answers each listen with an SSE stream and
 * delivers `notify.resourceUpdated(uri)` to the streams whose filter names
 * `uri` character for character; it does not tell us what is listened to. So
 * the endpoint shows us each listen request (with an id of our own: clients'
 * JSON-RPC ids collide), we keep what it names in one Subscriptions (the
 * holder is the stream), and one ResourceNotifier on the index's hub turns a
 * committed change into `resourceUpdated(spelling)` for every affected
 * spelling: a listened collection hears of changes beneath it, and `café`
 * hears of `caf%C3%A9`, as on stdio. Notifications are coalesced once for the
 * process, not once per client. A stream that ends releases what only it
 * asked for.
 */
export class HttpListeners {
  private readonly connection = new Connection();
  private readonly track: (message: Record<string, unknown>) => Promise<ErrorResponse | undefined>;
  private readonly detach: () => void;
  private readonly streams = new Set<string>();
  /** Streams ended whose URIs are still being released (a few turns). */
  private releasing = 0;
  private next = 0;

  constructor(
    ctx: Pick<ServerContext, 'index' | 'roots' | 'log'>,
    notify: ServerNotifier,
    private readonly turns: TurnBudget,
  ) {
    this.track = trackListensInTurns(ctx, this.connection.subscriptions, turns);
    this.connection.server = {
      // The bus carries the URI only: `title` does not travel on HTTP listen streams.
      sendResourceUpdated: async ({ uri }) => notify.resourceUpdated(uri),
      sendResourceListChanged: async () => notify.resourcesChanged(),
    };
    this.detach = notifyConnection(ctx.index, this.connection, ctx.log);
  }

  /**
   * A listen request arrived: returns the id its stream is known by, for
   * `release`, or the error to answer instead (over MAX_LISTEN_URIS), with
   * nothing kept. The request's own `resourceSubscriptions` are folded in
   * place, before the SDK reads them (see trackListensInTurns: a slice at a
   * time, other clients' requests answered between two).
   */
  async open(message: Record<string, unknown>): Promise<{ stream: string } | { refused: ErrorResponse }> {
    const stream = `http-listen-${++this.next}`;
    // Known before the first slice: a stream that ends meanwhile releases what was folded so far.
    this.streams.add(stream);
    // The same params object: folding it folds the request the SDK then serves.
    const refused = await this.track({ ...message, id: stream });
    if (refused) {
      this.release(stream);
      return { refused: { ...refused, id: message.id as string | number } };
    }
    return { stream };
  }

  /** The stream ended (closed by the client, cut, refused, or the server shut down); harmless twice. */
  release(stream: string): void {
    if (!this.streams.delete(stream)) return;
    // A stream's id is never used again (see open), so its URIs may go over a few turns.
    this.releasing++;
    void this.connection.subscriptions.releaseInTurns({ listen: stream }, this.turns).finally(() => this.releasing--);
  }

  /** Streams open or still being released, and the URIs they listen to (for tests and the bench: both return to 0). */
  get size(): { streams: number; uris: number } {
    return { streams: this.streams.size + this.releasing, uris: this.connection.subscriptions.size };
  }

  close(): void {
    this.detach();
    this.connection.close();
    this.streams.clear();
  }
}
