// A clock the test moves (src/clock.ts): timers fire only in advance(), in
// the order they are due, each at its own time; nothing waits on the
// machine, so a 60 s floor is checked in no time on any machine at any load.
import type { Clock, ClockTimer } from '../src/clock.ts';

interface Pending {
  due: number;
  /** Set order: timers due at the same time fire in it, as Node's do. */
  seq: number;
  fire: () => void;
  background: boolean;
}

export class TestClock implements Clock {
  private time: number;
  private seq = 0;
  private readonly timers = new Set<Pending>();

  constructor(start = 1_000_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fire: () => void, ms: number, options?: { background?: boolean }): ClockTimer {
    const timer: Pending = { due: this.time + Math.max(0, ms), seq: this.seq++, fire, background: options?.background ?? false };
    this.timers.add(timer);
    return timer as unknown as ClockTimer;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    if (timer !== undefined) this.timers.delete(timer as unknown as Pending);
  }

  /**
   * Moves time on by `ms`, firing every timer due by then at its due time,
   * earliest first (one set by a firing timer fires too when it falls due
   * within `ms`).
   */
  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      let next: Pending | undefined;
      for (const timer of this.timers) {
        if (timer.due <= until && (next === undefined || timer.due < next.due || (timer.due === next.due && timer.seq < next.seq))) next = timer;
      }
      if (next === undefined) break;
      this.timers.delete(next);
      this.time = Math.max(this.time, next.due);
      next.fire();
    }
    this.time = until;
  }

  /** Timers set and not yet fired or cleared; `background` ones (unref'ed on the real clock) only, when asked. */
  pending(which: 'all' | 'background' | 'foreground' = 'all'): number {
    let n = 0;
    for (const timer of this.timers) if (which === 'all' || timer.background === (which === 'background')) n++;
    return n;
  }
}
