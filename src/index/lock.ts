// One server per index file. Two processes scanning into one database would
// undo each other's work (a cold scan starts by emptying the table), so the
// first takes `<db>.lock` (its pid, created exclusively) and a second, while
// that process lives, keeps its index in memory instead. A lock left by a
// process that died is taken over.
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export type LockResult = { acquired: true; release(): void } | { acquired: false; heldBy: number };

/** Whether `pid` is a live folder-mcp: it exists, and where /proc tells, runs our CLI (a zombie or a reused pid does not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false; // EPERM: alive, someone else's
  }
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
    let holder = NaN;
    try {
      holder = Number(readFileSync(path, 'utf8').trim());
    } catch {
      continue; // released meanwhile: try again
    }
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) return { acquired: false, heldBy: holder };
    try {
      unlinkSync(path); // stale: its process is gone (or the file is garbage)
    } catch {
      // someone else took it over first
    }
  }
  return { acquired: false, heldBy: NaN };
}
