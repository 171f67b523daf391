// One server per index file. Two processes scanning into one database would
// undo each other's work (a cold scan starts by emptying the table), so the
// first takes `<db>.lock` (its pid, created exclusively) and a second, while
// that process lives, keeps its index in memory instead. A lock left by a
// process that died is taken over.
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { pidRuns } from '../errno.ts';

export type LockResult = { acquired: true; release(): void } | { acquired: false; heldBy: number };

/** Whether `pid` is a live folder-mcp: it exists, and where /proc tells, runs our CLI (a zombie or a reused pid does not). */
function alive(pid: number): boolean {
  if (!pidRuns(pid)) return false;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('folder-mcp') || cmdline.includes('cli.js');
  } catch {
    return true; // no /proc: trust the signal check
  }
}

export function acquireDbLock(dbFile: string, isAlive: (pid: number) => boolean = alive): LockResult {
  const path = `${dbFile}.lock`;
  mkdirSync(dirname(dbFile), { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return {
        acquired: true,
        release() {
          try {
            if (readFileSync(path, 'utf8').trim() === String(process.pid)) unlinkSync(path);
          } catch {
            // already gone
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      continue; // released meanwhile: try again
    }
    // Not a lock of ours (a project's Cargo.lock, for --db Cargo): never deleted. The start-up check refuses such a
    // path (db-file.ts); one that appears afterwards leaves this server's index in memory.
    if (!isLockText(text)) return { acquired: false, heldBy: NaN };
    const holder = Number(text.trim());
    if (holder > 0 && holder !== process.pid && isAlive(holder)) return { acquired: false, heldBy: holder };
    try {
      unlinkSync(path); // stale: its process is gone (or died before writing its pid)
    } catch {
      // someone else took it over first
    }
  }
  return { acquired: false, heldBy: NaN };
}

/** What a lock of ours holds: its process's id, or nothing (a process that died between creating it and writing). */
export function isLockText(text: string): boolean {
  return /^\d{0,10}$/.test(text.trim()) && text.length <= 16;
}
