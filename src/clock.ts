/**
 * What scheduled work asks of time: the time now, and a call once later.
 * Everything that delays or coalesces work takes one (the Coalescer, the
 * watcher's rechecks, the periodic diff, the poll backend, the bus, the
 * Foreground turn-taker), defaulting to `realClock`; a test hands in a
 * clock it moves itself (test/test-clock.ts), so a 60 s floor or a 500 ms
 * longest delay is checked on any machine at any load without waiting.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale: only differences mean anything. */
  now(): number;
  /**
   * Calls `fire` once, `ms` from now. `background`: the timer does not keep
   * the process alive (Node's `unref`): a recheck due in a minute must not
   * hold a server whose client has gone.
   */
  setTimeout(fire: () => void, ms: number, options?: { background?: boolean }): ClockTimer;
  /** Harmless on a timer that fired, was cleared, or is undefined. */
  clearTimeout(timer: ClockTimer | undefined): void;
}

/** A timer of some clock: only that clock's clearTimeout knows what it is. */
export interface ClockTimer {
  readonly [timerOf]: 'ClockTimer';
}
declare const timerOf: unique symbol;

/** The process's own time: performance.now() and Node's timers. */
export const realClock: Clock = Object.freeze({
  now: () => performance.now(),
  setTimeout(fire: () => void, ms: number, options?: { background?: boolean }): ClockTimer {
    const timer = setTimeout(fire, ms);
    if (options?.background) timer.unref();
    return timer as unknown as ClockTimer;
  },
  clearTimeout(timer: ClockTimer | undefined): void {
    clearTimeout(timer as unknown as NodeJS.Timeout | undefined);
  },
});

/**
 * Calls `tick` every `ms` until `stop()`, as setInterval does (the next one
 * is set as one fires, before its tick runs), on `clock`. Always in the
 * background: a sweep or a poll never keeps the process alive.
 */
export function every(clock: Clock, ms: number, tick: () => void): { stop(): void } {
  let timer: ClockTimer | undefined;
  let stopped = false;
  const schedule = () => {
    timer = clock.setTimeout(
      () => {
        if (stopped) return;
        schedule();
        tick();
      },
      ms,
      { background: true },
    );
  };
  schedule();
  return {
    stop() {
      stopped = true;
      clock.clearTimeout(timer);
    },
  };
}
