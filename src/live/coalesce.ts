/**
 * Trailing-edge coalescing in time: `trigger()` schedules `fire` `quietMs`
 * after the last trigger, but never later than `maxDelayMs` after the first
 * one of a burst. So a burst of 10,000 changes yields a handful of calls,
 * and a steady stream still yields one at least every `maxDelayMs`.
 */
export class Coalescer {
  private timer: NodeJS.Timeout | undefined;
  private firstAt = 0;

  constructor(
    private readonly fire: () => void,
    private readonly quietMs: number,
    private readonly maxDelayMs: number,
  ) {}

  trigger(): void {
    const now = performance.now();
    if (this.timer === undefined) this.firstAt = now;
    else clearTimeout(this.timer);
    const delay = Math.max(0, Math.min(this.quietMs, this.firstAt + this.maxDelayMs - now));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.fire();
    }, delay);
  }

  /** Fires now if something is pending (used on shutdown), then stops. */
  flush(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.fire();
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
