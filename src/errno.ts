// The few ways the code reads a failed system call: one place, so that "the
// path names nothing" means the same thing to the scan, the watchers, the
// reconciler and the index file check.

/** The error's errno code (`ENOENT`), if it has one. */
export function errnoCode(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The path names nothing now: it is gone, or a component of it is no longer a directory. */
export function isNoEntry(error: unknown): boolean {
  const code = errnoCode(error);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** What to print of an error: its code when it has one (`EACCES`), else its message. */
export function describeError(error: unknown): string {
  return errnoCode(error) ?? (error as Error | null)?.message ?? String(error);
}

/** Whether a process of this pid runs here: kill(pid, 0) finds it (EPERM: it runs, as another user). */
export function pidRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) !== 'ESRCH';
  }
}
