import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { realClock, type Clock, type ClockTimer } from './clock.ts';

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
 * them, admitting large request bodies, encoding large answers as they are
 * sent, requests past their turn's arrival budget). Requests waiting to
 * start (`arrival`) go before work already under way: a ping that missed
 * its turn's arrival budget waited behind every slice of 47 listens' folding
 * (60 ms) when the two took turns alike. Callers of one kind resume in the
 * order they yielded.
 */
export class TurnBudget {
  private started: number;
  /** Turns in which somebody resumed: the first to resume in a turn starts its budget. */
  private turns = 0;
  /** The turn in which a waiter last went: the first that may go in a turn always does. */
  private wentIn = -1;
  /** A slice was let through and has not started yet. */
  private granted = false;
  /** Arrivals waiting: work waits while there are any. */
  private arrivals = 0;

  constructor(
    private readonly budgetMs: number,
    private readonly clock: Pick<Clock, 'now'> = realClock,
  ) {
    this.started = clock.now();
  }

  /**
   * Resolves when this turn has budget left: at once, or in a later turn
   * (where the first that may go always does). `arrival`: a request that has
   * not started, ahead of `work` (the default) in every turn.
   */
  async slice(kind: 'arrival' | 'work' = 'work'): Promise<void> {
    const arrival = kind === 'arrival';
    const mayGo = () => arrival || this.arrivals === 0;
    if (arrival) this.arrivals++;
    try {
      for (;;) {
        if (mayGo() && !this.granted && this.clock.now() - this.started < this.budgetMs) break;
        // Every waiter resumes in the same turn (one setImmediate each): only the first restarts the budget, the rest
        // wait again unless it left some. Each restarting it as it resumed let 50 listens fold 50 ms a turn.
        const turn = this.turns;
        await yieldToLoop();
        if (this.turns === turn) {
          this.turns++;
          this.started = this.clock.now();
        }
        if (mayGo() && this.wentIn !== this.turns) break;
      }
    } finally {
      if (arrival) this.arrivals--;
    }
    this.wentIn = this.turns;
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
 * Requests arriving in one turn share `budgetMs`; the first always goes.
 * Past the budget they wait, as arrivals of the TurnBudget (ahead of the
 * work it bounds), in groups that take turns: one request of each group in
 * turn, a new group joining the round. A client the server knows (a 2025
 * session: `client`) has a group of its own while it has requests waiting;
 * requests of no known client are grouped by the turn they arrived in. So
 * a burst waits for itself: a request arriving in a later turn is admitted
 * in that turn's own budget, or, if it misses it, after at most one request
 * of each group waiting, and a session's request read in the same turn as
 * a burst of stateless ones is not one of them (first come first served, a
 * ping that missed its turn's budget waited 73 ms behind 48 others of one
 * burst; in the burst's group, 30 ms). A lone request never waits.
 */
export class ArrivalGate {
  /** When this turn's first request was admitted; null when none has been this turn. */
  private opened: number | null = null;
  /** Requests waiting (each resolves its own wait), in groups (a known client's, or a turn's), in the order groups take turns. */
  private readonly groups: Array<Array<() => void>> = [];
  /** The group whose first request goes next. */
  private next = 0;
  /** This turn's group of requests of no known client, once one of them waits. */
  private current: Array<() => void> | null = null;
  /** The groups of known clients with requests waiting. */
  private readonly clients = new Map<string, Array<() => void>>();
  /** A waiting request was told it is next (it waits for the backlog's slice): only it takes slices, one at a time. */
  private woken = false;

  constructor(
    private readonly budgetMs: number,
    private readonly backlog: TurnBudget,
    private readonly clock: Pick<Clock, 'now'> = realClock,
  ) {}

  /**
   * Resolves when the request may be handled: at once, or in its group's
   * turn when the backlog's budget lets it. `client`: who sent it, when the
   * server knows (its session); requests of one client share a group.
   */
  async admit(client?: string): Promise<void> {
    const now = this.clock.now();
    if (this.opened === null) {
      this.opened = now;
      // Requests are read in the poll phase; this turn's check phase ends the turn's admissions.
      setImmediate(() => {
        this.opened = null;
        this.current = null;
      });
      return;
    }
    if (now - this.opened < this.budgetMs) return;
    const next = new Promise<void>((resolve) => {
      let group = client === undefined ? this.current : this.clients.get(client);
      if (group === null || group === undefined) {
        group = [];
        if (client === undefined) this.current = group;
        else this.clients.set(client, group);
        // A new group joins the round just before the group that goes next: it goes after every group waiting.
        this.groups.splice(this.next, 0, group);
        if (this.groups.length > 1) this.next++;
      }
      group.push(resolve);
    });
    if (!this.woken) this.wakeNext();
    await next;
    await this.backlog.slice('arrival');
    // Gone: the next group's first is next.
    const group = this.groups[this.next]!;
    group.shift();
    if (group.length > 0) this.next++;
    else {
      this.groups.splice(this.next, 1);
      if (group === this.current) this.current = null;
      if (client !== undefined && this.clients.get(client) === group) this.clients.delete(client);
    }
    if (this.next >= this.groups.length) this.next = 0;
    // Not at once: its continuation would ask for a slice before this request's handling (which runs once this
    // returns) is on the clock, and be let through. In a later turn, the budget has counted it.
    setImmediate(() => this.wakeNext());
  }

  private wakeNext(): void {
    const first = this.groups[this.next]?.[0];
    this.woken = first !== undefined;
    first?.();
  }
}

/** A background slice runs this long at most before it waits for its next turn. */
const BACKGROUND_SLICE_MS = 4;
/** After a client's message arrives or its answer goes out, background work waits this long for the next one. */
const FOREGROUND_QUIET_MS = 20;
/** ...but never longer than this since its last slice: under a steady load it still gets a slice this often. */
const BACKGROUND_STARVE_MS = 100;
/** ...and once the client has left no quiet moment for this long, this often (about a sixth of the thread). */
const LONG_BUSY_MS = 2_000;
const LONG_BUSY_STARVE_MS = 20;

/**
 * Client requests go before the server's own background work (issue 45):
 * start-up catch-up, the watcher's start, the content index build. A client
 * that starts the server and lists at once (Claude Desktop and Claude Code
 * at every launch) waited behind them: a warm start's first page came 1.5 to
 * 2.6 times later than a cold one's, and a whole listing right after a spawn
 * took 2.8 times what it takes on a settled server.
 *
 * Every inbound message says when it arrives, and every request when its
 * answer is built; on stdio every answer, the SDK's own (initialize's)
 * included, also says when it starts out and when it is out, and background
 * work waits in between (a 530 KB page goes out only as fast as the client
 * reads it). Background work calls `turn()` between small pieces: it
 * returns at once while its slice is younger than BACKGROUND_SLICE_MS, else
 * waits until no message came and no answer went for FOREGROUND_QUIET_MS
 * (the gap between a client's answer and its next request), or until
 * BACKGROUND_STARVE_MS since its last slice, so that it never stops under a
 * steady load; LONG_BUSY_STARVE_MS once the client has left no quiet moment
 * for LONG_BUSY_MS (a client sending a cheap request every 5 ms held the
 * content index build to a 4 ms slice every 104 ms, about 4%: 6,421 of
 * 10,021 documents in after 37 s, against 3.3 s before this rule; a listing
 * right after a spawn, the case the rule is for, is over before that). A
 * request waiting for background work (a list waiting for the
 * scan, a search for the content index) does not hold it back: only the
 * moments when messages come and go do. One per App.
 */
export class Foreground {
  /** When a message last arrived or an answer was last built. */
  private lastActivity = -Infinity;
  private sliceStarted: number;
  private readonly waiting: Array<() => void> = [];
  private timer: ClockTimer | undefined;
  /** Requests being handled, and who waits for there to be none (a move of the served folders). */
  private active = 0;
  private readonly idle: Array<() => void> = [];
  /** Requests waiting for the background work itself (a held warm start): while any, it runs as foreground. */
  private urgent = 0;
  /** When the client was last found quiet (FOREGROUND_QUIET_MS without a message): LONG_BUSY_MS after, slices come oftener. */
  private lastQuiet: number;
  /** Answers going out and not yet handed to the OS (see answering). */
  private sending = 0;

  constructor(private readonly clock: Clock = realClock) {
    this.sliceStarted = clock.now();
    this.lastQuiet = this.sliceStarted;
  }

  private now(): number {
    return this.clock.now();
  }

  /** A client's message came in (a request or a notification). */
  arrived(): void {
    this.lastActivity = this.now();
  }

  /**
   * An answer starts going out to a client (stdio: the SDK's own, such as
   * initialize's, included). A large page goes out only as fast as the client
   * reads it; background work waits until it is out (`answered`).
   */
  answering(): void {
    this.sending++;
    this.lastActivity = this.now();
  }

  /** That answer is out (handed to the OS) or failed: the client's next request is likely on its way. */
  answered(): void {
    if (this.sending > 0) this.sending--;
    this.lastActivity = this.now();
    // The wait set while it went out was for the starvation bound; the quiet moment may now come first.
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.wake();
  }

  /** A request starts: call the function returned once its answer is built. */
  enter(): () => void {
    this.lastActivity = this.now();
    this.active++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.lastActivity = this.now();
      if (--this.active === 0) for (const resolve of this.idle.splice(0)) resolve();
      this.wake();
    };
  }

  /** Resolves once no request is being handled (at once if none is), or after `maxMs`. */
  async whenIdle(maxMs: number): Promise<void> {
    if (this.active === 0) return;
    let timer: ClockTimer | undefined;
    await new Promise<void>((resolve) => {
      this.idle.push(resolve);
      timer = this.clock.setTimeout(resolve, maxMs);
    });
    this.clock.clearTimeout(timer);
  }

  /** A request waits for the background work to finish: it runs unthrottled until the function returned is called. */
  urge(): () => void {
    this.urgent++;
    for (const resolve of this.waiting.splice(0)) resolve();
    return () => {
      this.urgent--;
    };
  }

  /**
   * Between two pieces of background work: resolves when the next piece may
   * run. `fresh`: a new task's first piece, which always waits its turn (a
   * start-up task begins while the client's first requests come in).
   */
  async turn(fresh = false): Promise<void> {
    if (!fresh && this.now() - this.sliceStarted < BACKGROUND_SLICE_MS) return;
    // Always a turn of the event loop: what arrived meanwhile is read, and says it arrived.
    await new Promise((resolve) => setImmediate(resolve));
    if (!this.mayRun()) {
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        this.wake();
      });
    }
    this.sliceStarted = this.now();
  }

  private mayRun(): boolean {
    const now = this.now();
    const quiet = this.sending === 0 && now - this.lastActivity >= FOREGROUND_QUIET_MS;
    if (quiet) this.lastQuiet = now;
    return this.urgent > 0 || quiet || now - this.sliceStarted >= this.starveMs(now) + BACKGROUND_SLICE_MS;
  }

  /** How long background work may wait for its next slice now. */
  private starveMs(now: number): number {
    return now - this.lastQuiet >= LONG_BUSY_MS ? LONG_BUSY_STARVE_MS : BACKGROUND_STARVE_MS;
  }

  /** Lets the waiting background go once it may, checking again at the earliest moment that could change. */
  private wake(): void {
    if (this.waiting.length === 0 || this.timer) return;
    const now = this.now();
    // While an answer goes out, its end (answered) wakes the waiting work again.
    const quietIn = this.sending > 0 ? Infinity : FOREGROUND_QUIET_MS - (now - this.lastActivity);
    const starveIn = this.starveMs(now) + BACKGROUND_SLICE_MS - (now - this.sliceStarted);
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        if (!this.mayRun()) return this.wake();
        for (const resolve of this.waiting.splice(0)) resolve();
      },
      Math.max(1, Math.ceil(Math.min(quietIn, starveIn))),
    );
  }
}

/**
 * Turns of the event loop handed out one after another: `next()` resolves in
 * a turn no earlier caller has, with I/O polled between two. Large read
 * answers take one each (src/protocol/read.ts), so that two never build in
 * the same turn. One per server.
 */
export class TurnChain {
  private last: Promise<void> = Promise.resolve();

  next(): Promise<void> {
    const turn = this.last.then(() => new Promise<void>((resolve) => setImmediate(resolve)));
    this.last = turn;
    return turn;
  }
}

/**
 * The items of `items`, one a turn of the event loop: after each is taken,
 * the loop turns (I/O is read, timers run) before the next is asked for,
 * however many are ready. An async iterator's items that are ready already
 * come in microtasks, one after the other, with nothing else between them.
 */
export async function* oneEachTurn<T>(items: AsyncIterable<T>): AsyncGenerator<T> {
  for await (const item of items) {
    yield item;
    await yieldToLoop();
  }
}
