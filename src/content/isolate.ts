import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ConversionError, ConversionUnavailable, type ConversionLimits } from './converters/types.ts';
import type { WorkerJob, WorkerOutput, WorkerReply } from './worker.ts';
import { JobQueue, refusalText } from '../job-queue.ts';

/**
 * Memory budgets of the conversion process. Its resident set is what counts:
 * pdf.js and zlib decode into buffers outside the V8 heap, so a heap cap alone
 * let a 3.6 MB PDF take the server to 1.7 GB.
 */
export interface ChildMemoryLimits {
  /** Resident set past which the process is killed (sampled while a job runs). */
  rssBytes: number;
  /** V8 old-generation cap (--max-old-space-size): a parser's object graph dies here first. */
  heapMb: number;
  /**
   * Linux address-space limit (ulimit -v), the backstop for allocations
   * faster than the sampler. Node reserves about 1.3 GB of address space by
   * itself once pdf.js is loaded, so this is well above rssBytes.
   */
  addressSpaceBytes: number;
  /** How often the resident set is sampled while a job runs. */
  sampleMs: number;
}

export const DEFAULT_CHILD_MEMORY: ChildMemoryLimits = {
  rssBytes: 384 * 1024 * 1024,
  heapMb: 256,
  addressSpaceBytes: 2048 * 1024 * 1024,
  sampleMs: 20,
};

/** Jobs waiting for the process (each holds its input in memory); past it a read goes without alternatives. */
const MAX_QUEUED = 32;

/** An idle conversion process is stopped after this long, so what it grew to goes back to the system. */
const IDLE_MS = 30_000;

/** A conversion that used less CPU than its time budget is still ended after this many times the budget of wall time. */
const WALL_BACKSTOP = 10;
/** Under its CPU budget at the end of its wall budget, a conversion's CPU time is looked at again at most this often. */
const CPU_RECHECK_MS = 20;
/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on every Linux that Node runs on). */
const USER_HZ = 100;

/** Characters of the process's stderr kept, to say why it died. */
const STDERR_TAIL = 4096;

/** The running job's timers: its time budget, and the memory sampler. */
interface Running {
  timer: NodeJS.Timeout;
  sampler: NodeJS.Timeout;
}

/**
 * Runs registered converters in one child process, one job at a time. A job
 * past its time budget, or a process whose resident set passes the memory
 * budget, is killed (SIGKILL: synchronous parsing cannot be interrupted, and
 * only the death of the process gives its memory back), the job fails with a
 * ConversionError, and the next job gets a fresh process. A process that
 * dies of anything else under a job that was not its first runs that job
 * once more, as the first of a fresh process. The process is started on
 * first use, so start-up never pays for it; it never keeps the server alive,
 * and it dies with the server (killed on exit, and it exits itself when its
 * IPC channel closes).
 */
export class ConversionWorker {
  private child: ChildProcess | undefined;
  private stderrTail = '';
  private readonly jobs: JobQueue<WorkerJob, WorkerOutput>;
  private current: Running | undefined;
  private idle: NodeJS.Timeout | undefined;
  /** A sample is being taken (`ps` is asynchronous): the next tick does not start another. */
  private sampling = false;
  private nextId = 1;
  private readonly memory: ChildMemoryLimits;
  /** Jobs started in the running process: a death under its first job is that job's. */
  private jobsInChild = 0;

  constructor(
    private readonly workerUrl: URL,
    private readonly maxQueued = MAX_QUEUED,
    memory: Partial<ChildMemoryLimits> = {},
    /**
     * Scheduling niceness of the process (0: as the server). Background work
     * (the content index) runs nicer, so that on a busy machine the server's
     * own requests get the CPU first.
     */
    private readonly niceness = 0,
  ) {
    this.memory = { ...DEFAULT_CHILD_MEMORY, ...memory };
    this.jobs = new JobQueue<WorkerJob, WorkerOutput>({
      maxWaiting: maxQueued,
      refused: (reason) => new ConversionUnavailable(refusalText(reason, `${maxQueued} conversions are already waiting`)),
      start: (job) => this.start(job),
      // Nothing left to convert: stop the process after a while, so what it grew to goes back to the system.
      drained: () => {
        if (!this.child) return;
        this.idle = setTimeout(() => this.kill(new ConversionUnavailable('idle')), IDLE_MS);
        this.idle.unref();
      },
    });
  }

  /** The conversion process's id while one runs (for tests and diagnostics). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** `signal`: a job still waiting when it aborts leaves the queue (ConversionUnavailable); one under way runs to its limits. */
  run(converter: string, input: { name: string; bytes: Uint8Array; text: string | undefined; limits: ConversionLimits }, signal?: AbortSignal): Promise<string | Uint8Array> {
    return this.enqueue(converter, input, signal) as Promise<string | Uint8Array>;
  }

  /** The converter's text with its places when it has them (Converter.convertLocated), else its plain output. */
  runLocated(converter: string, input: { name: string; bytes: Uint8Array; text: string | undefined; limits: ConversionLimits }): Promise<WorkerOutput> {
    return this.enqueue(converter, { ...input, located: true });
  }

  private enqueue(converter: string, input: Omit<WorkerJob, 'id' | 'converter'>, signal?: AbortSignal): Promise<WorkerOutput> {
    return this.jobs.add({ id: this.nextId++, converter, ...input }, signal);
  }

  close(): void {
    this.jobs.close();
    clearTimeout(this.idle);
    this.kill(new ConversionUnavailable('server is closing'));
  }

  /** Starts `job` in the process (started first if need be); a process that cannot start fails the job. */
  private start(job: WorkerJob): void {
    clearTimeout(this.idle);
    let child: ChildProcess;
    try {
      child = this.ensureChild();
    } catch (error) {
      throw new ConversionUnavailable(`cannot start the converter process: ${(error as Error).message}`);
    }
    this.jobsInChild++;
    // It did not start (no descriptors or processes left): its 'error' event, on the next turn, fails the job.
    if (child.pid === undefined) return;
    // The time budget is CPU time where it can be read (/proc): a conversion that waited for the CPU (a busy
    // machine, or the background process's lower priority) is not a hostile file, and a timeout is remembered
    // for that version of the file. The wall clock still ends it, at WALL_BACKSTOP times the budget.
    const budget = job.limits.timeMs;
    const pid = child.pid;
    const cpuAtStart = pid === undefined ? undefined : cpuMsOf(pid);
    /** CPU the job has used so far; undefined where it cannot be read (then the wall clock judges). */
    const cpuUsed = (): number | undefined => {
      if (pid === undefined || cpuAtStart === undefined) return undefined;
      const now = cpuMsOf(pid);
      return now === undefined ? undefined : now - cpuAtStart;
    };
    const started = performance.now();
    const expire = () => {
      const used = cpuUsed();
      const waited = performance.now() - started;
      if (used !== undefined && used < budget && waited < budget * WALL_BACKSTOP) {
        running.timer = setTimeout(expire, Math.min(Math.max(budget - used, CPU_RECHECK_MS), budget * WALL_BACKSTOP - waited));
        return;
      }
      this.kill(new ConversionError(`conversion took longer than ${budget} ms; abandoned`));
    };
    const running: Running = {
      timer: setTimeout(expire, budget),
      sampler: setInterval(() => this.checkMemory(child), samplePeriod(this.memory.sampleMs)),
    };
    this.current = running;
    const unreachable = (error: Error | null) => {
      if (error && this.child === child) this.kill(new ConversionError(`converter process unreachable: ${error.message}`));
    };
    try {
      child.send(job, unreachable);
    } catch (error) {
      unreachable(error as Error);
    }
  }

  private checkMemory(child: ChildProcess): void {
    if (this.child !== child || child.pid === undefined || this.sampling) return;
    this.sampling = true;
    sampleRss(child.pid, (rss) => {
      this.sampling = false;
      if (rss === undefined || this.child !== child || rss <= this.memory.rssBytes) return;
      const mib = (n: number) => Math.round(n / (1024 * 1024));
      this.kill(new ConversionError(`converter used more than ${mib(this.memory.rssBytes)} MiB of memory (${mib(rss)} MiB); stopped`));
    });
  }

  private ensureChild(): ChildProcess {
    if (this.child) return this.child;
    const script = fileURLToPath(this.workerUrl);
    const { command, args } = childCommand(script, this.memory);
    const child = spawn(command, args, {
      // stdout must never reach the protocol stream; stderr is kept to say why the process died.
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    if (this.niceness !== 0 && child.pid !== undefined) {
      try {
        setPriority(child.pid, this.niceness);
      } catch {
        // Not permitted here: it runs at the server's priority.
      }
    }
    this.stderrTail = '';
    this.jobsInChild = 0;
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      if (this.child === child) this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL);
    });
    child.on('message', (reply: WorkerReply) => {
      if (this.child !== child || reply.id !== this.jobs.current?.id) return;
      if (reply.ok) this.finish(undefined, reply.output);
      else this.finish(reply.conversionError ? new ConversionError(reply.message) : new Error(reply.message));
    });
    // A process killed for its budget is no longer this.child: its late
    // events must not settle the job now running on its successor.
    child.on('error', (error) => {
      if (this.child !== child) return;
      this.forget(child);
      // A process that never started says nothing of the file: the job is skipped this time, not remembered.
      this.finish(
        child.pid === undefined
          ? new ConversionUnavailable(`cannot start the converter process: ${error.message}`)
          : new ConversionError(`converter process failed: ${error.message}`),
      );
    });
    // 'close', not 'exit': by then stderr is read to its end (V8's out-of-memory report).
    child.on('close', (code, signal) => {
      if (this.child !== child) return;
      this.forget(child);
      const job = this.jobs.current;
      if (job && this.jobsInChild > 1) {
        // It died of nothing this side did, under a job that was not its first: what killed it may be what
        // earlier jobs left in it, and the verdict is remembered for that version of the file. Once more, as
        // the first job of a fresh process, where a death is the job's own.
        this.again(job);
        return;
      }
      this.finish(new ConversionError(exitMessage(code, signal, this.stderrTail)));
    });
    // Neither the process nor its pipes keep the server alive; a running job's timers do.
    child.unref();
    child.channel?.unref();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    process.on('exit', this.killOnExit);
    this.child = child;
    return child;
  }

  /** Bound once: the server's exit takes the conversion process with it. */
  private readonly killOnExit = (): void => {
    this.child?.kill('SIGKILL');
  };

  private forget(child: ChildProcess): void {
    if (this.child !== child) return;
    this.child = undefined;
    process.removeListener('exit', this.killOnExit);
  }

  /** Kills the process (a job over a budget, an idle or closing worker) and settles the job it ran. */
  private kill(error: Error): void {
    const child = this.child;
    if (child) {
      this.forget(child);
      child.kill('SIGKILL');
    }
    this.finish(error);
  }

  private finish(error: Error | undefined, output?: WorkerOutput): void {
    this.stopTimers();
    this.jobs.finish(error, output);
  }

  /** Starts the running job again, in a fresh process; one that cannot start fails it. */
  private again(job: WorkerJob): void {
    this.stopTimers();
    try {
      this.start(job);
    } catch (error) {
      this.finish(error as Error);
    }
  }

  private stopTimers(): void {
    const current = this.current;
    this.current = undefined;
    if (current) {
      clearTimeout(current.timer);
      clearInterval(current.sampler);
    }
  }
}

/**
 * The most 64 KiB pages a WebAssembly memory of the conversion process may
 * have (16 MiB). Nothing it runs needs more: pdfjs, given no `wasmUrl`,
 * decodes with its JavaScript fallbacks, and Node's HTTP parser takes a few
 * pages.
 */
export const WASM_MAX_PAGES = 256;

/** glibc malloc arenas in the conversion process, unless the environment says otherwise. */
export const MALLOC_ARENAS = 2;

/**
 * How to start the conversion process: node with a heap cap and, on Linux,
 * through /bin/sh to set an address-space limit first. V8 reserves about
 * 10 GB of address space per WebAssembly memory for its trap handler, which
 * no such limit admits; without the trap handler (bounds checks instead) it
 * needs no guard region, so the limit is set only when node has that switch.
 * Two more reservations took the limit's headroom, and a job then died of a
 * failed mapping (SIGSEGV) or ran out of memory:
 * - V8 reserves a WebAssembly memory's maximum up front, and short of that as
 *   much as the limit leaves. Node 20's fetch loads its HTTP parser as one,
 *   and pdfjs touches `Response`: it took all that was left. Hence
 *   WASM_MAX_PAGES.
 * - glibc gives each thread that allocates beside another an arena of its
 *   own, 64 MiB of address space each: four more after an ordinary PDF.
 *   Hence MALLOC_ARENA_MAX.
 */
export function childCommand(
  script: string,
  memory: ChildMemoryLimits,
  platform: NodeJS.Platform = process.platform,
  nodeFlags: ReadonlySet<string> = process.allowedNodeEnvironmentFlags,
  node: string = process.execPath,
): { command: string; args: string[] } {
  const nodeArgs = [`--max-old-space-size=${memory.heapMb}`];
  const limitAddressSpace = platform === 'linux' && nodeFlags.has('--disable-wasm-trap-handler') && existsSync('/bin/sh');
  if (!limitAddressSpace) return { command: node, args: [...nodeArgs, script] };
  const kib = Math.ceil(memory.addressSpaceBytes / 1024);
  // A hard limit already lower than ours makes ulimit fail: run under that one.
  return {
    command: '/bin/sh',
    args: [
      '-c',
      `ulimit -v "$1" 2>/dev/null; export MALLOC_ARENA_MAX="\${MALLOC_ARENA_MAX:-${MALLOC_ARENAS}}"; shift; exec "$@"`,
      'sh',
      String(kib),
      node,
      '--disable-wasm-trap-handler',
      `--wasm-max-mem-pages=${WASM_MAX_PAGES}`,
      ...nodeArgs,
      script,
    ],
  };
}

/** Why the conversion process died, in words for the warning. */
export function exitMessage(code: number | null, signal: NodeJS.Signals | null, stderr: string): string {
  if (/out of memory|allocation failed|bad_alloc/i.test(stderr)) return 'converter ran out of memory';
  // Under the address-space limit an allocation can fail where V8 has no words left to say so: it aborts.
  if (signal === 'SIGABRT') return 'converter aborted (SIGABRT), most likely out of memory';
  return `converter process exited (${signal ?? `code ${code}`})`;
}

/** The CPU time (user + system, ms) a process has used, from /proc; undefined elsewhere, or once it is gone. */
function cpuMsOf(pid: number): number | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    return cpuMsFromProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** User + system CPU time in ms from the text of /proc/<pid>/stat (fields 14 and 15, after a name that may hold spaces and parentheses). */
export function cpuMsFromProcStat(text: string): number | undefined {
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? (ticks * 1000) / USER_HZ : undefined;
}

/** Resident set in bytes from the text of /proc/<pid>/status (its VmRSS line, in kB). */
export function rssFromProcStatus(text: string): number | undefined {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(text);
  return match ? Number(match[1]) * 1024 : undefined;
}

/** Resident set in bytes from `ps -o rss= -p <pid>` (KiB). */
export function rssFromPs(stdout: string): number | undefined {
  const kib = Number.parseInt(stdout.trim(), 10);
  return Number.isFinite(kib) ? kib * 1024 : undefined;
}

/** /proc is cheap to read often; `ps` is a process per sample. */
function samplePeriod(sampleMs: number): number {
  return process.platform === 'linux' ? sampleMs : Math.max(sampleMs, 250);
}

/**
 * Samples a process's resident set from outside it: a child busy in
 * synchronous parsing cannot report on itself. /proc where there is one
 * (synchronous, a few microseconds), `ps` elsewhere.
 */
function sampleRss(pid: number, done: (rss: number | undefined) => void): void {
  if (process.platform === 'linux') {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      return done(undefined); // it just died: its exit event says why
    }
    return done(rssFromProcStatus(text));
  }
  execFile('ps', ['-o', 'rss=', '-p', String(pid)], (error, stdout) => done(error ? undefined : rssFromPs(stdout)));
}

