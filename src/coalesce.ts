/**
 * Coalescing in time, on both edges. A trigger after a quiet spell (nothing
 * pending, nothing fired for `spellMs`, by default `quietMs`) fires at once,
 * so a single change is told without delay; triggers that follow are
 * gathered and fire `quietMs` after the last of them, but never later than
 * `maxDelayMs` after the first. So a burst of 10,000 changes yields a
 * handful of calls, and a steady stream still yields one at least every
 * `maxDelayMs`. The notifiers (notify.ts) and the watcher's event batches
 * (batcher.ts) both coalesce so.
 */
export class Coalescer {
  private timer: NodeJS.Timeout | undefined;
  private firstAt = 0;
  private lastFiredAt = Number.NEGATIVE_INFINITY;
  private readonly spellMs: number;
  private readonly nextTurn: boolean;
  private readonly now: () => number;
  /** The timer set is a next-turn leading edge. */
  private leadingPending = false;

  constructor(
    private readonly fire: () => void,
    private readonly quietMs: number,
    private readonly maxDelayMs: number,
    options: {
      /** How long without a firing makes the next trigger a leading edge (default `quietMs`). */
      spellMs?: number;
      /** The leading edge fires on the next turn of the loop, not within `trigger()`: the rest of a synchronous batch of triggers goes with it. */
      leadingOnNextTurn?: boolean;
      /** The clock (a test's mocked one). */
      now?: () => number;
    } = {},
  ) {
    this.spellMs = options.spellMs ?? quietMs;
    this.nextTurn = options.leadingOnNextTurn ?? false;
    this.now = options.now ?? (() => performance.now());
  }

  trigger(): void {
    // The leading edge of this turn is already set to fire: it takes this trigger too.
    if (this.leadingPending) return;
    const now = this.now();
    const leading = this.timer === undefined && now - this.lastFiredAt >= this.spellMs;
    if (leading && !this.nextTurn) {
      this.lastFiredAt = now;
      this.fire();
      return;
    }
    if (this.timer === undefined) this.firstAt = now;
    else clearTimeout(this.timer);
    this.leadingPending = leading;
    const delay = leading ? 0 : Math.max(0, Math.min(this.quietMs, this.firstAt + this.maxDelayMs - now));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.leadingPending = false;
      this.lastFiredAt = this.now();
      this.fire();
    }, delay);
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.leadingPending = false;
  }
}
