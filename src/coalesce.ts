import { realClock, type Clock, type ClockTimer } from './clock.ts';

export interface CoalescerOptions {
  /**
   * What a trigger after a quiet spell does: `now`, fire within `trigger()`
   * (a single change is told without delay); `next-turn`, fire on the next
   * turn of the loop (the rest of a synchronous batch of triggers goes with
   * it); `none`, no leading edge: every firing waits (a batch gathered for
   * a fixed time from its first trigger, when quietMs >= maxDelayMs).
   * Default `now`.
   */
  leading?: 'now' | 'next-turn' | 'none';
  /** How long without a firing makes the next trigger a leading edge (default `quietMs`). */
  spellMs?: number;
  /** The timer does not keep the process alive. */
  background?: boolean;
  clock?: Clock;
}

/**
 * Coalescing in time, on both edges. A trigger after a quiet spell (nothing
 * pending, nothing fired for `spellMs`) is the leading edge (see
 * `leading`); triggers that follow are gathered and fire `quietMs` after
 * the last of them, but never later than `maxDelayMs` after the first. So a
 * burst of 10,000 changes yields a handful of calls, and a steady stream
 * still yields one at least every `maxDelayMs`.
 *
 * The one primitive for delayed and coalesced work: the watcher's event
 * batches (sync/batcher.ts), the notifications (protocol/notify.ts), new
 * directories walked again (sync/rechecks.ts) and the bus's outgoing hints
 * (replicas/bus.ts) all gather so. The last two have no leading edge and
 * quietMs = maxDelayMs: they fire a fixed time after the first trigger.
 */
export class Coalescer {
  private timer: ClockTimer | undefined;
  /** When the timer set fires (the clock's time). */
  private due = 0;
  private firstAt = 0;
  private lastFiredAt = Number.NEGATIVE_INFINITY;
  private readonly spellMs: number;
  private readonly leading: 'now' | 'next-turn' | 'none';
  private readonly background: boolean;
  private readonly clock: Clock;
  /** The timer set is a next-turn leading edge. */
  private leadingPending = false;

  constructor(
    private readonly fire: () => void,
    private readonly quietMs: number,
    private readonly maxDelayMs: number,
    options: CoalescerOptions = {},
  ) {
    this.spellMs = options.spellMs ?? quietMs;
    this.leading = options.leading ?? 'now';
    this.background = options.background ?? false;
    this.clock = options.clock ?? realClock;
  }

  trigger(): void {
    // The leading edge of this turn is already set to fire: it takes this trigger too.
    if (this.leadingPending) return;
    const now = this.clock.now();
    const leading = this.leading !== 'none' && this.timer === undefined && now - this.lastFiredAt >= this.spellMs;
    if (leading && this.leading === 'now') {
      this.lastFiredAt = now;
      this.fire();
      return;
    }
    if (this.timer === undefined) this.firstAt = now;
    const due = leading ? now : Math.max(now, Math.min(now + this.quietMs, this.firstAt + this.maxDelayMs));
    // Already set for then (a fixed delay, or the longest one reached): a burst of triggers costs no timers.
    if (this.timer !== undefined && due === this.due) return;
    this.clock.clearTimeout(this.timer);
    this.leadingPending = leading;
    this.due = due;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.leadingPending = false;
        this.lastFiredAt = this.clock.now();
        this.fire();
      },
      due - now,
      { background: this.background },
    );
  }

  cancel(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.leadingPending = false;
  }
}
