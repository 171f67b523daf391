/**
 * Coalescing in time, on both edges. A trigger after a quiet spell (nothing
 * pending, nothing fired for `quietMs`) fires at once, so a single change is
 * told without delay; triggers that follow are gathered and fire `quietMs`
 * after the last of them, but never later than `maxDelayMs` after the first.
 * So a burst of 10,000 changes yields a handful of calls, and a steady
 * stream still yields one at least every `maxDelayMs`.
 */
export class Coalescer {
  private timer: NodeJS.Timeout | undefined;
  private firstAt = 0;
  private lastFiredAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly fire: () => void,
    private readonly quietMs: number,
    private readonly maxDelayMs: number,
  ) {}

  trigger(): void {
    const now = performance.now();
    if (this.timer === undefined && now - this.lastFiredAt >= this.quietMs) {
      this.lastFiredAt = now;
      this.fire();
      return;
    }
    if (this.timer === undefined) this.firstAt = now;
    else clearTimeout(this.timer);
    const delay = Math.max(0, Math.min(this.quietMs, this.firstAt + this.maxDelayMs - now));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.lastFiredAt = performance.now();
      this.fire();
    }, delay);
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
