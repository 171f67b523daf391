import type { FolderIndex } from '../index/folder-index.ts';

/** How often a waiting request hears how far the scan got. */
export const PROGRESS_INTERVAL_MS = 500;

/** The part of the SDK's RequestHandlerExtra that waiting needs. */
export interface WaitExtra {
  _meta?: { progressToken?: string | number; [key: string]: unknown };
  sendNotification(notification: { method: 'notifications/progress'; params: Record<string, unknown> }): Promise<void>;
}

/**
 * Tells the client how far a long request got (`notifications/progress`):
 * `progress` only grows; `total` when known. Only a request that sent a
 * progress token has one.
 */
export type ProgressSink = (progress: number, total: number | undefined, message: string) => void;

/** The request's progress sink, or undefined when it sent no progress token. */
export function progressSink(extra: WaitExtra): ProgressSink | undefined {
  const token = extra._meta?.progressToken;
  if (token === undefined) return undefined;
  return (progress, total, message) => {
    extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress, ...(total !== undefined ? { total } : {}), message },
      })
      .catch(() => {}); // the client went away: nothing to tell
  };
}

/**
 * Waits for the first scan. When the request carries a progress token, sends
 * `notifications/progress` (progress = entries indexed so far; the total is
 * unknown until the walk ends) now and then until the scan is done.
 */
export function waitForIndex(index: FolderIndex, extra: WaitExtra | undefined): Promise<void> {
  return whileScanning(index, extra, () => index.readiness.reached('scanned'));
}

/**
 * Runs `work` (a request that may wait on the first scan), telling a request
 * with a progress token how far the scan got, as waitForIndex does, until
 * `work` is done or the scan is over.
 */
export async function whileScanning<T>(index: FolderIndex, extra: WaitExtra | undefined, work: () => Promise<T>): Promise<T> {
  const token = extra?._meta?.progressToken;
  // A warm or finished index answers at once, with no progress at all.
  if (token === undefined || !extra || index.readiness.state !== 'scanning') return work();
  let done = false;
  let last = -1;
  const report = () => {
    if (done || index.readiness.state !== 'scanning' || index.scanned === last) return;
    last = index.scanned;
    extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: last, message: `indexing: ${last} entries so far` },
      })
      .catch(() => {}); // the client went away: nothing to tell
  };
  report();
  const timer = setInterval(report, PROGRESS_INTERVAL_MS);
  try {
    return await work();
  } finally {
    done = true;
    clearInterval(timer);
  }
}
