// Shared by the tests of the cold scan's watches (src/watch/scan-watch.ts): a
// temp folder, an in-memory index of it that watches as it scans (the
// record handed to it as app.ts does), a debug log, and the live sync a
// test starts; all closed and removed after.
import { FolderIndex, type FolderIndexOptions } from '../src/index/folder-index.ts';
import { Live, type LiveOptions } from '../src/sync/live.ts';
import { ScanChangeRecord } from '../src/watch/scan-changes.ts';
import { superviseWatcher, type WatchSetup } from '../src/watch/supervisor.ts';
import { createLogger, type Logger } from '../src/log.ts';
import { makeRoot } from '../src/uri.ts';
import { tempDir } from './basics.ts';

export interface ScanIndexContext {
  /** The temp folder (the served root unless `roots` says otherwise). */
  dir: string;
  index: FolderIndex;
  log: Logger;
  /** Every line logged so far. */
  logs: string[];
  /** Makes the live sync of this index (closed after the test); it takes the scan's record, if any. */
  sync(options: Omit<LiveSetup, 'index' | 'log' | 'scanChanges'>): Live;
}

/** What a test says of a live sync: Live's own options and its watcher's, as app.ts gives them to both. */
export type LiveSetup = Omit<LiveOptions, 'watch' | 'scanChanges'> & WatchSetup;

/**
 * The live sync app.ts makes: a WatcherSupervisor for `setup.watcher`
 * handed to Live; the scan's record and the clock go to both.
 */
export function liveSync(setup: LiveSetup): Live {
  const { watcher, starters, pollIntervalMs, scanChanges, ...options } = setup;
  const watch = superviseWatcher({
    index: setup.index,
    log: setup.log,
    watcher,
    ...(starters ? { starters } : {}),
    ...(pollIntervalMs !== undefined ? { pollIntervalMs } : {}),
    ...(scanChanges ? { scanChanges } : {}),
    ...(setup.clock ? { clock: setup.clock } : {}),
  });
  return new Live({ ...options, watch, ...(scanChanges ? { scanChanges } : {}) });
}

/**
 * Runs `prepare` on a fresh temp folder, then starts the index (its scan
 * runs in the background: `run` awaits `index.readiness.reached('scanned')` itself) and `run`.
 */
export async function withScanIndex(
  prepare: (dir: string) => void,
  run: (ctx: ScanIndexContext) => Promise<void>,
  options: Partial<Pick<FolderIndexOptions, 'scanSlicesHere'>> & { roots?: (dir: string) => string[]; watchScan?: boolean } = {},
): Promise<void> {
  const dir = tempDir();
  const logs: string[] = [];
  const log = createLogger('debug', (line) => logs.push(line));
  let index: FolderIndex | undefined;
  let live: Live | undefined;
  const { roots = (d: string) => [d], watchScan = true, ...rest } = options;
  const scanChanges = watchScan ? new ScanChangeRecord() : undefined;
  try {
    prepare(dir.path);
    index = new FolderIndex({ roots: roots(dir.path).map((p) => makeRoot(p)), dbFile: ':memory:', log, gitignore: true, exclude: [], ...(scanChanges ? { scanObserver: scanChanges } : {}), ...rest });
    const made = index;
    await run({
      dir: dir.path,
      index,
      log,
      logs,
      sync: (syncOptions) => (live = liveSync({ index: made, log, ...syncOptions, ...(scanChanges ? { scanChanges } : {}) })),
    });
  } finally {
    await live?.close();
    scanChanges?.close();
    index?.close();
    dir.cleanup();
  }
}
