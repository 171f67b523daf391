// A model-based fuzzer of folder-mcp's one promise: what it lists is what is
// on disk. Random operations on a temp tree (create, write, grow with the
// mtime put back, delete, rename, swap two folders, a folder replaced by a
// file and back, a folder swapped for a link to a folder outside and back,
// the served folder deleted and made again, a served folder inside another
// moved away and back, hard links written through another name, folders
// and files made unreadable and readable again), with the built server
// running over stdio (as nobody when run as root: root reads a folder of
// mode 000),
// restarted, SIGKILLed at random moments (mid-scan among them) and changed
// behind its back between runs. At each check the server gets a
// few seconds to settle (8 s, times the load average per core on a busy
// machine, at most 40 s: far less than its 60 s safety diff, which would
// hide a lost change), then every page of resources/list must equal a walk
// of the disk (URI, and size for documents), and resources/read of the
// files written since the last check must return what the disk holds.
//
//   npm run fuzz -- --seed 1 --ops 60 --backend dirs [--seeds 200] [--verbose] [--progress: a line per seed]
//   npm run fuzz -- --seed 1 --backend poll --replay ops.jsonl   (the operations a failure printed)
//
// On a difference it prints the seed, the difference and the operations,
// shrunk to fewer that still fail. test/e2e/fuzz.e2e.test.ts runs a few
// seeds per backend in npm test.
import { appendFileSync, chmodSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { rng } from '../bench/tree.ts';
import { connect, shareWith, tempDir, unprivilegedUser, type Connected } from './helpers.ts';

export type Backend = 'dirs' | 'recursive' | 'poll' | 'chokidar';
export const BACKENDS: readonly Backend[] = ['dirs', 'recursive', 'poll', 'chokidar'];

/** One operation, concrete (paths relative to the served folder), so a run can be replayed and shrunk. */
export type Op =
  | { t: 'write'; path: string; size: number }
  | { t: 'grow-keep-mtime'; path: string; size: number }
  | { t: 'truncate-keep-mtime'; path: string }
  | { t: 'rm'; path: string }
  | { t: 'mkdir'; path: string }
  | { t: 'mv'; from: string; to: string }
  | { t: 'swap'; a: string; b: string }
  | { t: 'dir-to-file'; path: string }
  | { t: 'file-to-dir'; path: string }
  | { t: 'dir-to-link'; path: string }
  | { t: 'link-to-dir'; path: string; file: string }
  | { t: 'remake-root'; files: string[] }
  | { t: 'inner-away' }
  | { t: 'inner-back' }
  | { t: 'hardlink'; from: string; to: string }
  | { t: 'append'; path: string; size: number }
  | { t: 'lock'; path: string }
  | { t: 'unlock'; path: string }
  | { t: 'lock-file'; path: string }
  | { t: 'unlock-file'; path: string }
  | { t: 'start' }
  | { t: 'stop' }
  | { t: 'kill'; afterMs: number }
  | { t: 'check' };

export interface FuzzOptions {
  seed: number;
  ops: number;
  backend: Backend;
  /** How long the server may take to list what is on disk after a check starts. */
  settleMs?: number;
  /** Shrink the operations of a failing run (default true; each try is a run). */
  shrink?: boolean;
  log?: (line: string) => void;
}

export interface FuzzFailure {
  /** Which check failed, and how the listing differs from the disk. */
  message: string;
  ops: Op[];
}

const NAMES = ['a', 'b', 'c.txt', 'd.md', 'e f.txt', 'é.txt', 'g-h', 'i_j.txt'];
/** The second served folder, inside the first (a root inside a root). */
const INNER = 'inner';
const MAX_DEPTH = 3;
/** Who the server runs as: as root, nobody, so that a folder of mode 000 is unreadable to it. */
const USER = unprivilegedUser();

interface Place {
  /** The served folder. */
  root: string;
  /** Where the inner served folder goes when moved away. */
  away: string;
  /** A folder outside the served ones (never changed) that links lead to: nothing in it is ever listed. */
  outside: string;
  dbFile: string;
}

/** Files, folders and links under the served folder, relative (links are not followed, nor listed by the server). */
function walk(root: string): { files: string[]; dirs: string[]; links: string[] } {
  const files: string[] = [];
  const dirs: string[] = [];
  const links: string[] = [];
  const visit = (rel: string) => {
    for (const d of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel === '' ? d.name : `${rel}/${d.name}`;
      if (d.isDirectory()) {
        dirs.push(path);
        visit(path);
      } else if (d.isFile()) {
        files.push(path);
      } else if (d.isSymbolicLink()) {
        links.push(path);
      }
    }
  };
  visit('');
  return { files, dirs, links };
}

/** What resources/list must give: every entry's URI, with the size of documents. */
function expected(place: Place): Map<string, number | null> {
  const out = new Map<string, number | null>();
  const base = pathToFileURL(place.root).href;
  out.set(`${base}/`, null);
  const { files, dirs } = walk(place.root);
  for (const dir of dirs) out.set(`${pathToFileURL(join(place.root, dir)).href}/`, null);
  for (const file of files) out.set(pathToFileURL(join(place.root, file)).href, lstatSync(join(place.root, file)).size);
  return out;
}

function content(size: number, salt: number): string {
  let text = '';
  for (let i = 0; i < size; i++) text += String.fromCharCode(97 + ((i * 7 + salt) % 26));
  return text;
}

/** Generates the next operation from the disk as it is (so every operation applies). */
function nextOp(rand: () => number, place: Place, up: boolean, kinds: OpKinds): Op {
  const innerAway = innerIsAway(place);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const { files, dirs, links } = walk(place.root);
  const movable = dirs.filter((d) => d !== INNER);
  const depth = (p: string) => p.split('/').length;
  const newPath = (): string => {
    const parents = ['', ...dirs.filter((d) => depth(d) < MAX_DEPTH)];
    const parent = pick(parents);
    return parent === '' ? pick(NAMES) : `${parent}/${pick(NAMES)}`;
  };
  const free = (): string | null => {
    for (let i = 0; i < 10; i++) {
      const path = newPath();
      if (!files.includes(path) && !dirs.includes(path)) return path;
    }
    return null;
  };
  const roll = rand();
  if (!up) {
    if (innerAway && roll < 0.5) return { t: 'inner-back' };
    if (roll < 0.25 && !innerAway) return rand() < 0.3 ? { t: 'kill', afterMs: Math.floor(rand() * 150) } : { t: 'start' };
  } else {
    if (roll < 0.05) return { t: 'stop' };
    if (roll < 0.09) return { t: 'kill', afterMs: 0 };
    if (roll < 0.2) return { t: 'check' };
  }
  // Issue 34's operations, a fifth of the disk operations.
  const r2 = rand() < 0.2 ? rand() : 1;
  if (r2 < 0.25 && files.length > 0) {
    const to = free();
    if (to) return { t: 'hardlink', from: pick(files), to };
  }
  if (r2 < 0.45 && files.length > 0) {
    // Mostly through a name of a hard-linked file: its other names are what no event names.
    const linked = files.filter((f) => lstatSync(join(place.root, f)).nlink > 1);
    // Issue 44: now and then truncated through that name with its mtime put back, the name's folder perhaps
    // made unreadable since the link (a lock below): only the inode the index knows leads to the other names.
    if (linked.length > 0 && rand() < 0.25) return { t: 'truncate-keep-mtime', path: pick(linked) };
    return { t: 'append', path: pick(linked.length > 0 && rand() < 0.7 ? linked : files), size: 1 + Math.floor(rand() * 8) };
  }
  if (r2 < 0.65 && movable.length > 0 && kinds.unreadable) return { t: 'lock', path: pick(movable) };
  if (r2 < 0.8) {
    const locked = dirs.filter((d) => (lstatSync(join(place.root, d)).mode & 0o777) === 0);
    if (locked.length > 0) return { t: 'unlock', path: pick(locked) };
  }
  if (r2 < 0.9 && files.length > 0 && kinds.unreadable) return { t: 'lock-file', path: pick(files) };
  if (r2 < 1 && files.length > 0) return { t: 'unlock-file', path: pick(files) };
  const r = rand();
  if (r < 0.25 || files.length === 0) {
    const path = rand() < 0.5 && files.length > 0 ? pick(files) : free();
    if (path) return { t: 'write', path, size: Math.floor(rand() * 64) };
  }
  if (r < 0.33 && files.length > 0) {
    const path = pick(files);
    return { t: 'grow-keep-mtime', path, size: lstatSync(join(place.root, path)).size + 1 + Math.floor(rand() * 16) };
  }
  if (r < 0.43 && files.length + movable.length > 0) return { t: 'rm', path: pick([...files, ...movable]) };
  if (r < 0.53) {
    const path = free();
    if (path) return { t: 'mkdir', path };
  }
  if (r < 0.68 && files.length + movable.length > 0) {
    const from = pick([...files, ...movable]);
    const to = free();
    if (to && !to.startsWith(`${from}/`)) return { t: 'mv', from, to };
  }
  if (r < 0.76 && movable.length >= 2) {
    const a = pick(movable);
    const b = pick(movable);
    if (a !== b && !a.startsWith(`${b}/`) && !b.startsWith(`${a}/`)) return { t: 'swap', a, b };
  }
  if (r < 0.82 && movable.length > 0 && kinds.replaced) return { t: 'dir-to-file', path: pick(movable) };
  if (r < 0.88 && files.length > 0 && kinds.replaced) return { t: 'file-to-dir', path: pick(files) };
  if (r < 0.91) return { t: 'remake-root', files: [pick(NAMES), `${pick(NAMES.filter((n) => !n.includes('.')))}/${pick(NAMES)}`] };
  if (r < 0.95) return innerAway ? { t: 'inner-back' } : { t: 'inner-away' };
  if (r < 0.97 && movable.length > 0 && kinds.links) return { t: 'dir-to-link', path: pick(movable) };
  if (r < 0.99 && links.length > 0 && kinds.links) return { t: 'link-to-dir', path: pick(links), file: pick(NAMES) };
  const path = free();
  return path ? { t: 'write', path, size: Math.floor(rand() * 64) } : { t: 'check' };
}

/** Whether the inner served folder is away (then the server cannot start: a served folder must exist). */
function innerIsAway(place: Place): boolean {
  return lstatOrNull(join(place.root, INNER)) === null;
}

/** Errors of an operation that no longer applies (in a replayed, shrunk run): it is skipped. */
const NOT_APPLICABLE = new Set(['ENOENT', 'ERR_FS_EISDIR', 'EEXIST', 'ENOTDIR', 'EISDIR', 'ENOTEMPTY', 'EINVAL']);

/**
 * On Windows a folder cannot be renamed or removed while any program holds a
 * file in it open, the server among them (it reads what changed): the call
 * fails with EPERM, EBUSY or EACCES for as long as that lasts, as it does for
 * a user's own tools. The fuzzer's operations wait that out, for up to 5 s.
 * A removal reported busy can still complete (the entry was pending delete
 * while a handle held it), and the retry then finds nothing: `force` there,
 * where the operation was picked from what was on disk a moment before (the
 * Windows lane failed once so, under load, removing a folder a hard link
 * was made in).
 */
const BUSY_RETRIES = process.platform === 'win32' ? { maxRetries: 50, retryDelay: 100, force: true } : {};

function renameBusy(from: string, to: string): void {
  for (let waited = 0; ; waited += 50) {
    try {
      return renameSync(from, to);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (process.platform !== 'win32' || waited >= 5_000 || (code !== 'EPERM' && code !== 'EBUSY' && code !== 'EACCES')) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    }
  }
}

/**
 * Applies a disk operation (server operations do nothing here); returns the
 * files it wrote (read back at the next check), or null when it does not
 * apply. Used to generate a run (on a scratch copy) and to run it.
 */
function applyDiskOp(place: Place, op: Op, i: number): string[] | null {
  const path = (rel: string) => join(place.root, rel);
  const write = (rel: string, size: number) => {
    mkdirSync(join(path(rel), '..'), { recursive: true });
    writeFileSync(path(rel), content(size, i));
  };
  try {
    switch (op.t) {
      case 'write':
        write(op.path, op.size);
        return [op.path];
      case 'grow-keep-mtime': {
        const before = statSync(path(op.path));
        write(op.path, op.size);
        utimesSync(path(op.path), before.atime, before.mtime);
        return [op.path];
      }
      case 'truncate-keep-mtime': {
        if (!lstatSync(path(op.path)).isFile()) return null;
        const before = statSync(path(op.path));
        truncateSync(path(op.path), 0);
        utimesSync(path(op.path), before.atime, before.mtime);
        return [op.path];
      }
      case 'rm':
        rmSync(path(op.path), { recursive: true, ...BUSY_RETRIES });
        return [];
      case 'mkdir':
        mkdirSync(path(op.path));
        return [];
      case 'mv':
        renameBusy(path(op.from), path(op.to));
        return [];
      case 'swap':
        renameBusy(path(op.a), path(`${op.a}.swap`));
        renameBusy(path(op.b), path(op.a));
        renameBusy(path(`${op.a}.swap`), path(op.b));
        return [];
      case 'dir-to-file':
        rmSync(path(op.path), { recursive: true, ...BUSY_RETRIES });
        write(op.path, 9);
        return [op.path];
      case 'file-to-dir':
        rmSync(path(op.path), BUSY_RETRIES);
        mkdirSync(path(op.path));
        return [];
      case 'dir-to-link':
        // As a checkout does it: the link made beside, then renamed into place (one atomic step).
        symlinkSync(place.outside, path(`${op.path}.lnk`));
        renameBusy(path(op.path), path(`${op.path}.old`));
        renameBusy(path(`${op.path}.lnk`), path(op.path));
        return [];
      case 'link-to-dir':
        // The other way (a checkout back to the branch before): a folder again where the link was, with a file in it.
        if (!lstatSync(path(op.path)).isSymbolicLink()) return null;
        rmSync(path(op.path), BUSY_RETRIES);
        write(`${op.path}/${op.file}`, 11);
        return [`${op.path}/${op.file}`];
      case 'remake-root':
        if (innerIsAway(place)) return null; // the inner folder would be lost with it
        rmSync(place.root, { recursive: true, ...BUSY_RETRIES });
        mkdirSync(path(INNER), { recursive: true });
        for (const file of op.files) write(file, 5);
        return op.files;
      case 'inner-away':
        if (innerIsAway(place)) return null;
        renameBusy(path(INNER), place.away);
        return [];
      case 'inner-back':
        if (!innerIsAway(place)) return null;
        rmSync(path(INNER), { recursive: true, force: true, ...BUSY_RETRIES });
        renameBusy(place.away, path(INNER));
        return [];
      case 'hardlink':
        // Then written through either name by later writes and appends (both keep the inode).
        if (!lstatSync(path(op.from)).isFile()) return null;
        linkSync(path(op.from), path(op.to));
        return [];
      case 'append':
        if (!lstatSync(path(op.path)).isFile()) return null;
        appendFileSync(path(op.path), content(op.size, i));
        return [op.path];
      case 'lock':
        if (!lstatSync(path(op.path)).isDirectory()) return null;
        chmodSync(path(op.path), 0o000);
        return [];
      case 'unlock':
        if (!lstatSync(path(op.path)).isDirectory()) return null;
        chmodSync(path(op.path), 0o755);
        return [];
      case 'lock-file':
        if (!lstatSync(path(op.path)).isFile()) return null;
        chmodSync(path(op.path), 0o000);
        return [];
      case 'unlock-file':
        if (!lstatSync(path(op.path)).isFile()) return null;
        chmodSync(path(op.path), 0o644);
        return [];
      default:
        return [];
    }
  } catch (error) {
    if (NOT_APPLICABLE.has((error as NodeJS.ErrnoException).code ?? '')) return null;
    throw error;
  }
}

/** Runs operations against a server; resolves to the first difference found, or null. */
async function run(place: Place, backend: Backend, ops: readonly Op[], settleMs: number, log: (line: string) => void): Promise<string | null> {
  let server: Connected | null = null;
  /** Files written since the last check (read back at the next one). */
  const written = new Set<string>();
  const args = () => [place.root, join(place.root, INNER), '--db', place.dbFile, '--watcher', backend, '--poll-interval', '100', '--no-search', '--log-level', 'info'];
  const start = async () => {
    if (server || innerIsAway(place)) return false;
    // The legacy era: one process per connection (the modern client may start another for a probe).
    server = await connect(args(), { era: 'legacy', ...(USER ? { user: USER } : {}) });
    return true;
  };
  const stop = async (kill: boolean) => {
    const s = server as Connected | null;
    if (!s) return;
    server = null;
    if (kill && s.pid !== undefined) process.kill(s.pid, 'SIGKILL');
    await s.close().catch(() => {});
  };
  const check = async (s: Connected) =>
    settle(s, place, written, settleMs).catch((error: Error) => {
      throw new Error(`${error.message}; the server's stderr:\n${s.stderr()}`);
    });
  try {
    for (const [i, op] of ops.entries()) {
      log(`${i}: ${JSON.stringify(op)}`);
      switch (op.t) {
        case 'start':
          await start();
          break;
        case 'stop':
          await stop(false);
          break;
        case 'kill':
          if (!server && !(await start())) break;
          if (op.afterMs > 0) await new Promise((resolve) => setTimeout(resolve, op.afterMs));
          await stop(true);
          break;
        case 'check': {
          if (!server) break;
          const difference = await check(server);
          if (difference) return `check at op ${i}: ${difference}${stderrTail(server)}`;
          written.clear();
          break;
        }
        default: {
          const wrote = applyDiskOp(place, op, i);
          if (wrote === null) log('  skipped: does not apply');
          for (const file of wrote ?? []) written.add(file);
        }
      }
    }
    applyDiskOp(place, { t: 'inner-back' }, ops.length);
    if (!server) await start();
    const difference = await check(server!);
    return difference ? `final check: ${difference}${stderrTail(server!)}` : null;
  } finally {
    await stop(false);
  }
}

/** The server's last log lines (what it did, and when), for a failure's message. */
function stderrTail(server: Connected, lines = 12): string {
  const tail = server.stderr().trimEnd().split('\n').slice(-lines);
  return `\n  the server's last log lines:\n${tail.map((line) => `    ${line}`).join('\n')}`;
}

/**
 * How long folders stay locked at a check before they are made readable: past
 * the sync layer's last look again at reported paths (1 s, sync/batcher.ts),
 * so the permission given back (a ctime moved) is the only hint left.
 */
const LOCKED_HOLD_MS = 1500;

/** Makes every folder of mode 000 beneath `root` readable again (root's walk reads them whatever their mode). */
async function unlockFolders(root: string): Promise<void> {
  const locked = walk(root).dirs.map((dir) => join(root, dir)).filter((path) => (lstatSync(path).mode & 0o777) === 0);
  if (locked.length === 0) return;
  await new Promise((resolve) => setTimeout(resolve, LOCKED_HOLD_MS));
  for (const path of locked) if (lstatOrNull(path)?.isDirectory()) chmodSync(path, 0o755);
}

/** Waits until the listing equals the disk (then reads the files written back); the last difference at the deadline. */
async function settle(server: Connected, place: Place, written: Set<string>, settleMs: number): Promise<string | null> {
  // A locked folder's entries are listed as last seen (docs/live-updates.md): every folder is made readable
  // again first, and the listing must then catch up with what changed while it was not.
  await unlockFolders(place.root);
  const deadline = Date.now() + scaledSettle(settleMs);
  let difference: string | null = null;
  let onDisk: Map<string, number | null>;
  for (;;) {
    onDisk = expected(place);
    difference = compare(await listAll(server), onDisk);
    if (!difference) break;
    if (Date.now() > deadline) return `${difference} (after ${scaledSettle(settleMs)} ms at load ${loadavg()[0]!.toFixed(1)})`;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (const rel of written) {
    const file = join(place.root, rel);
    // Beneath a folder swapped for a link since: not served, and not listed (the comparison says so).
    if (!onDisk.has(pathToFileURL(file).href)) continue;
    let st;
    try {
      st = lstatSync(file);
    } catch {
      continue;
    }
    if (!st.isFile() || (st.mode & 0o444) === 0) continue; // unreadable to the server: listed, not read
    const disk = readFileSync(file, 'utf8');
    const result = await server.request('resources/read', { uri: pathToFileURL(file).href });
    const text = (result.contents as { text?: string }[] | undefined)?.[0]?.text;
    if (text !== disk) return `resources/read ${rel}: ${JSON.stringify(text)} where the disk holds ${JSON.stringify(disk)}`;
  }
  return null;
}

/** Longest settle, however busy the machine: well below the 60 s safety diff, which would hide a lost change. */
const SETTLE_CAP_MS = 40_000;

/**
 * The settle time, scaled by how busy the machine is: with more runnable
 * processes than cores the server's timers, watcher callbacks and polls
 * (whose pause grows with what the last one cost) run that much later, and a
 * fixed 8 s failed correct servers at a load of 15-20 on 2 cores.
 */
function scaledSettle(settleMs: number): number {
  const busy = loadavg()[0]! / availableParallelism();
  return Math.min(SETTLE_CAP_MS, Math.round(settleMs * Math.max(1, busy)));
}

async function listAll(server: Connected): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>();
  let cursor: string | undefined;
  do {
    const page = await server.request('resources/list', cursor ? { cursor } : {});
    for (const r of page.resources as { uri: string; size?: number }[]) out.set(r.uri, r.uri.endsWith('/') ? null : (r.size ?? -1));
    cursor = page.nextCursor as string | undefined;
  } while (cursor);
  return out;
}

function compare(listed: Map<string, number | null>, disk: Map<string, number | null>): string | null {
  const lines: string[] = [];
  for (const [uri, size] of disk) {
    if (!listed.has(uri)) lines.push(`missing ${uri}`);
    else if (listed.get(uri) !== size) lines.push(`size of ${uri}: listed ${listed.get(uri)}, on disk ${size}`);
  }
  for (const uri of listed.keys()) if (!disk.has(uri)) lines.push(`listed but not on disk ${uri}`);
  return lines.length === 0 ? null : lines.slice(0, 12).join('; ') + (lines.length > 12 ? `; and ${lines.length - 12} more` : '');
}

/** A fresh place with the seed's first tree. */
function freshPlace(seed: number): { place: Place; cleanup: () => void } {
  const dir = tempDir('folder-mcp-fuzz-');
  shareWith(dir.path, USER);
  const place: Place = { root: join(dir.path, 'tree'), away: join(dir.path, 'away'), outside: join(dir.path, 'outside'), dbFile: join(dir.path, 'index.db') };
  const rand = rng(seed ^ 0x5eed);
  // Names the served tree uses too, so a path looked at through a link finds something.
  mkdirSync(join(place.outside, 'a'), { recursive: true });
  for (const name of ['c.txt', 'd.md', 'a/c.txt', 'outside-only.txt']) writeFileSync(join(place.outside, name), 'outside\n');
  mkdirSync(join(place.root, INNER), { recursive: true });
  for (let i = 0; i < 12; i++) {
    const parts = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => NAMES[Math.floor(rand() * NAMES.length)]!);
    const file = join(place.root, ...(rand() < 0.3 ? [INNER, ...parts] : parts));
    try {
      mkdirSync(join(file, '..'), { recursive: true });
      writeFileSync(file, content(1 + Math.floor(rand() * 40), i));
    } catch {
      // a name already taken by a folder (or a file where a folder would go): fine, fewer files
    }
  }
  return { place, cleanup: dir.cleanup };
}

/** Generates and runs `ops` operations from `seed`; returns the failure (ops shrunk) or null. */
/** Which kinds of operation a run makes besides the plain ones. */
interface OpKinds {
  /** Files and folders made unreadable to the server (mode 000, the server run as nobody). */
  unreadable: boolean;
  /** Folders turned into symlinks and back. */
  links: boolean;
  /** A folder replaced by a file of its name, a file by a folder. */
  replaced: boolean;
}

/**
 * Every kind, but for `recursive` on Linux. Node emulates a recursive
 * fs.watch there with a watch per file and folder, which differs from the
 * backend on macOS (FSEvents) and Windows (ReadDirectoryChangesW), both of
 * which watch a tree whatever its modes and links: the emulation's walk of a
 * folder stops, silently, at the first entry it may not watch (EACCES); a
 * symlink it watched stays known after it is replaced by a folder of the same
 * name, whose files it then never reports; and so does a folder replaced by a
 * file and then by a folder again (its watch was on the first folder's inode).
 * Seeds 5010, 6044 and 6074 found these. The runs on Linux are there for the backend's own code path
 * (docs/live-updates.md); the other backends run every kind.
 */
function opKinds(backend: Backend): OpKinds {
  const emulated = backend === 'recursive' && process.platform === 'linux';
  // Windows: a symlink needs a privilege (or Developer Mode) that Claude Desktop's users rarely have, and a mode
  // of 000 is only the read-only attribute there (still readable): neither kind means there what it means here.
  const windows = process.platform === 'win32';
  return { unreadable: !emulated && !windows, links: !emulated && !windows, replaced: !emulated };
}

export async function fuzz(options: FuzzOptions): Promise<FuzzFailure | null> {
  const { seed, backend, settleMs = 8000, log = () => {} } = options;
  const rand = rng(seed);
  const ops: Op[] = [{ t: 'start' }];
  // Operations are generated from the disk as it is: generated against a scratch copy run without a server.
  const scratch = freshPlace(seed);
  try {
    let up = true;
    for (let i = 0; i < options.ops; i++) {
      const op = nextOp(rand, scratch.place, up, opKinds(backend));
      ops.push(op);
      applyDiskOp(scratch.place, op, i + 1);
      if (op.t === 'start') up = true;
      if (op.t === 'stop' || op.t === 'kill') up = false;
    }
  } finally {
    scratch.cleanup();
  }
  ops.push({ t: 'check' });
  const failed = await attempt(seed, backend, ops, settleMs, log).catch((error: Error) => `the run failed: ${error.message}`);
  if (!failed) return null;
  if (options.shrink === false) return { message: failed, ops };
  log(`seed ${seed} (${backend}) failed: ${failed}; shrinking`);
  return { message: failed, ops: await shrink(seed, backend, ops, settleMs, log) };
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

async function attempt(seed: number, backend: Backend, ops: readonly Op[], settleMs: number, log: (line: string) => void): Promise<string | null> {
  const { place, cleanup } = freshPlace(seed);
  try {
    return await run(place, backend, ops, settleMs, log);
  } finally {
    cleanup();
  }
}

/** Drops chunks of operations, then single ones, while the run still fails (a bounded number of runs). */
async function shrink(seed: number, backend: Backend, ops: Op[], settleMs: number, log: (line: string) => void, budget = 40): Promise<Op[]> {
  let current = ops;
  let runs = 0;
  for (let chunk = Math.floor(current.length / 2); chunk >= 1 && runs < budget; chunk = Math.floor(chunk / 2)) {
    for (let at = 1; at < current.length - 1 && runs < budget; ) {
      const candidate = [...current.slice(0, at), ...current.slice(at + chunk)];
      runs++;
      if (await attempt(seed, backend, candidate, settleMs, () => {}).catch(() => 'failed')) {
        current = candidate;
        log(`  shrunk to ${current.length} operations`);
      } else {
        at += chunk;
      }
    }
  }
  return current;
}

function parseArgs(argv: string[]): { seeds: number[]; ops: number; backends: Backend[]; verbose: boolean; progress: boolean; settleMs: number } {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i === -1 ? undefined : argv[i + 1];
  };
  const seed = Number(value('--seed') ?? 1);
  const count = Number(value('--seeds') ?? 1);
  const backend = value('--backend');
  if (backend !== undefined && !BACKENDS.includes(backend as Backend) && backend !== 'all') {
    throw new Error(`--backend: one of ${BACKENDS.join(', ')}, all`);
  }
  return {
    seeds: Array.from({ length: count }, (_, i) => seed + i),
    ops: Number(value('--ops') ?? 60),
    backends: backend === undefined || backend === 'all' ? [...BACKENDS] : [backend as Backend],
    verbose: argv.includes('--verbose'),
    progress: argv.includes('--progress'),
    settleMs: Number(value('--settle-ms') ?? 8000),
  };
}

/** Replays a list of operations (as printed on a failure) from `--replay FILE` against one backend. */
export async function replay(seed: number, backend: Backend, ops: readonly Op[], settleMs: number, log: (line: string) => void): Promise<string | null> {
  return attempt(seed, backend, ops, settleMs, log).catch((error: Error) => `the run failed: ${error.message}`);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const replayFile = process.argv.indexOf('--replay');
  if (replayFile !== -1) {
    const ops = readFileSync(process.argv[replayFile + 1]!, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as Op);
    for (const backend of args.backends) {
      const failure = await replay(args.seeds[0]!, backend, ops, args.settleMs, args.verbose ? (line) => console.log(line) : () => {});
      console.log(`${backend}: ${failure ?? 'no difference'}`);
      if (failure) process.exitCode = 1;
    }
    return;
  }
  let failures = 0;
  for (const backend of args.backends) {
    let passed = 0;
    const started = performance.now();
    for (const seed of args.seeds) {
      const failure = await fuzz({ seed, ops: args.ops, backend, settleMs: args.settleMs, ...(args.verbose ? { log: (line) => console.log(line) } : {}) });
      if (!failure) {
        passed++;
        if (args.progress) console.log(`seed ${seed} backend ${backend}: ok`);
        continue;
      }
      failures++;
      console.log(`FAIL seed ${seed} backend ${backend}: ${failure.message}`);
      console.log(`  replay: npm run fuzz -- --seed ${seed} --ops ${args.ops} --backend ${backend} --verbose`);
      console.log(`  shrunk to ${failure.ops.length} operations:`);
      for (const op of failure.ops) console.log(`    ${JSON.stringify(op)}`);
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`${backend}: ${passed}/${args.seeds.length} seeds passed, ${args.ops} operations each (${seconds} s)`);
  }
  process.exitCode = failures > 0 ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
