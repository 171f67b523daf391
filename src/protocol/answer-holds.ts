/** Keeps `release` until the request's answer has left the process (or never will), then calls it. */
export type HoldAnswer = (release: () => void) => void;

/**
 * The read budget's shares that answers keep until they have left the
 * process, by request, for one stdio connection. A read's answer outlives
 * its handler: the SDK serialises it, and the transport queues its bytes for
 * a pipe the client may read slowly. Giving the share back when the handler
 * returned let 16 concurrent 4 MiB text reads hold 509 MiB of answers being
 * written; held until the transport has written the answer
 * (StdioTransport's `onAnswered`), the answers in flight are within the
 * budget.
 */
export class AnswerHolds {
  private readonly byRequest = new Map<string, (() => void)[]>();

  /** Keeps `release` until the answer to `id` is written (or dropped: cancelled, the connection gone). */
  hold(id: string | number, release: () => void): void {
    const key = requestKey(id);
    const held = this.byRequest.get(key);
    if (held) held.push(release);
    else this.byRequest.set(key, [release]);
  }

  /** The answer to `id` has been written, or will never be: its shares go back. */
  answered(id: string | number): void {
    const key = requestKey(id);
    const held = this.byRequest.get(key);
    if (!held) return;
    this.byRequest.delete(key);
    for (const release of held) release();
  }

  /** Everything held goes back (the connection ended). */
  releaseAll(): void {
    const all = [...this.byRequest.values()];
    this.byRequest.clear();
    for (const held of all) for (const release of held) release();
  }
}

/** Typed: a request with id 1 and one with id "1" are two requests. */
function requestKey(id: string | number): string {
  return `${typeof id}:${String(id)}`;
}
