import { setImmediate as yieldToLoop } from 'node:timers/promises';

/**
 * How long work that many clients' requests share may run before the event
 * loop turns: every caller awaits `slice()` before a piece of that work, and
 * once this turn has spent `budgetMs` they wait for a later one. A request of
 * another client needs several turns to be answered (its head, its body, the
 * SDK's steps), each of them waiting behind whatever the turn runs; without a
 * shared budget, 50 listens arriving together each folded their URIs in the
 * same turn (a ping waited a second behind them), and yielding per listen
 * still let each of them fold a slice every turn.
 *
 * One per server, shared by the work it bounds (folding listens, releasing
 * them, admitting large request bodies). Callers resume in the order they
 * yielded.
 */
export class TurnBudget {
  private started = performance.now();
  /** Turns in which somebody resumed: the first to resume in a turn starts its budget. */
  private turns = 0;
  /** A slice was let through and has not started yet. */
  private granted = false;

  constructor(private readonly budgetMs: number) {}

  /** Resolves when this turn has budget left: at once, or in a later turn (where the first to resume always may go). */
  async slice(): Promise<void> {
    for (;;) {
      if (!this.granted && performance.now() - this.started < this.budgetMs) break;
      // Every waiter resumes in the same turn (one setImmediate each): only the first restarts the budget, the rest
      // wait again unless it left some. Each restarting it as it resumed let 50 listens fold 50 ms a turn.
      const turn = this.turns;
      await yieldToLoop();
      if (this.turns === turn) {
        this.turns++;
        this.started = performance.now();
        break;
      }
    }
    // Until the caller's slice has run (its continuation is the next microtask but one), the time it takes is not
    // on the clock: callers asking in the same synchronous run would all be let through. They wait a turn.
    this.granted = true;
    queueMicrotask(() => (this.granted = false));
  }
}

/**
 * Admits requests as they arrive. Node reads every ready socket in one turn
 * of the event loop, and a request's handling runs as one chain of
 * microtasks up to its first real wait: 50 clients' `server/discover`
 * arriving together ran back to back in one turn (85 ms in bench attack 7),
 * as did 37 `notifications/cancelled`, and another client's ping, read in
 * the next turn, waited behind all of them.
 *
 * Requests arriving in one turn share `budgetMs`; the first always goes, and
 * the rest, once it is spent, wait for the TurnBudget (in its order, with the
 * other work it bounds). A request arriving in a later turn is admitted in
 * that turn's own budget, ahead of what waits: a burst waits for itself, not
 * other clients for it. A lone request never waits.
 */
export class ArrivalGate {
  /** When this turn's first request was admitted; null when none has been this turn. */
  private opened: number | null = null;

  constructor(
    private readonly budgetMs: number,
    private readonly backlog: TurnBudget,
  ) {}

  /** Resolves when the request may be handled: at once, or when the backlog's budget lets it. */
  async admit(): Promise<void> {
    const now = performance.now();
    if (this.opened === null) {
      this.opened = now;
      // Requests are read in the poll phase; this turn's check phase ends the turn's admissions.
      setImmediate(() => (this.opened = null));
      return;
    }
    if (now - this.opened < this.budgetMs) return;
    await this.backlog.slice();
  }
}
