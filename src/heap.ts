import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/**
 * V8's heap, sized for a server that walks a whole tree and drops what it
 * read. Each setting was measured at 1M files (docs/benchmarks.md, table
 * 19); every one is set at run time, so they apply however the server is
 * started (the bin, `node dist/folder-mcp.js`, Windows, the .mcpb).
 */

/** Where the main thread's new space (both semi-spaces) is held on Node >= 22 (holdNewSpace): half of Node 20's most, 32 MiB. */
export const HELD_NEW_SPACE = 16 * 1024 * 1024;

/** V8's own growth factor of the young generation (its flag's default), given back below the hold. */
const GROWTH_FACTOR = 2;

/** A size of the young generation chosen by the user (NODE_OPTIONS, node's flags), in either spelling: theirs wins. */
const YOUNG_FLAG = /^--(?:max|min)[-_]semi[-_]space[-_]size|^--semi[-_]space[-_]growth[-_]factor/;

export function tuneHeap(nodeMajor: number, nodeFlags: readonly string[]): void {
  // After a major GC, V8 lets the old generation grow to several times what
  // it left (up to 4x on a large machine) before it collects again. A warm
  // start at 1M files on Node 24 peaked at 459-521 MiB of RSS with 92 MiB
  // live, and at 368-375 MiB when the heap may grow by half of what is left,
  // in the same CPU time. V8 reads this at every GC.
  setFlagsFromString('--heap-growing-percent=50');

  // Node >= 22 sizes V8's young generation from the machine's memory: up to
  // 128 MiB of new space where Node 20 stops at 32, and at 1M files the
  // server peaked at 572 MiB of RSS on Node 24 against 384 with Node 20's
  // size. V8 reads the maximum only when it starts, which took a second
  // start of the process with the flag (execve, about 25 ms on Node 24, and
  // none on Windows). Held at 16 MiB from here instead, at 1M files on Node
  // 24 a warm start peaked at 307-311 MiB against 343-361 with the second
  // start, and a settled listing took 2.2-2.4 µs of CPU an item against
  // 2.5-3.6 (0-1 major GCs against 0-11), side by side.
  if (holdsNewSpace(nodeMajor, nodeFlags)) holdNewSpace(HELD_NEW_SPACE);

  // Worker threads (the walk of a warm start's catch-up, the search thread)
  // each have a heap of their own, whose young generation was the main
  // thread's size: 32 MiB of new space each, touched and kept. V8 reads the
  // semi-space size when an isolate is made, and the flag wins over a
  // Worker's resourceLimits, so it is set here, after the main isolate took
  // its own: each worker made from now on has 4 MiB semi-spaces. At 1M files
  // on Node 24, a warm start peaked at 356-358 MiB against 371-391 without
  // it, side by side; a 100k content index took as long (9.3-10.2 s either
  // way).
  setFlagsFromString('--max-semi-space-size=4');
}

/** Whether the server holds its new space: Node >= 22 (Node 20's young generation is 32 MiB at most), and no size given. */
export function holdsNewSpace(nodeMajor: number, nodeFlags: readonly string[]): boolean {
  return nodeMajor >= 22 && !nodeFlags.some((flag) => YOUNG_FLAG.test(flag));
}

/**
 * Holds the main thread's new space once it has grown to `bytes`: V8 grows
 * it (doubling, up to its maximum) when much of it survives scavenges, and
 * takes its growth factor from its flag at each growth. After each GC, the
 * factor is set to 1 while the new space is at least `bytes`, and given
 * back below (V8 shrinks it when the process is idle, and it must be able
 * to grow again: a new space held at its first 1 MiB took the peak at 1M
 * files to 555 MiB). GC entries reach the observer a task or two after the
 * GC, so it can end a growth or more above `bytes`: a task that keeps more
 * alive than the new space holds grows it before the factor is set (a
 * server's requests keep far less; at 1M files it stayed at 16 MiB). The
 * flag is the process's, so worker threads grow theirs (4 MiB semi-spaces at
 * most) only while the main thread's is below `bytes`: at 1M files a warm
 * start's content-index check and a cold start's content index took no
 * longer (the catch-up's walk was not timed apart).
 */
export function holdNewSpace(bytes: number): { held(): boolean; stop(): void } {
  let held = false;
  const hold = (on: boolean) => {
    held = on;
    setFlagsFromString(`--semi-space-growth-factor=${on ? 1 : GROWTH_FACTOR}`);
  };
  const observer = new PerformanceObserver(() => {
    const size = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
    if (size >= bytes !== held) hold(!held);
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    held: () => held,
    stop: () => {
      observer.disconnect();
      if (held) hold(false);
    },
  };
}
