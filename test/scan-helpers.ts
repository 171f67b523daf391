// Shared by the tests of the cold scan's watches (src/index/scan-watch.ts): a
// temp folder, an in-memory index of it that watches as it scans, a debug
// log, and the live sync a test starts; all closed and removed after.
import { FolderIndex, type FolderIndexOptions } from '../src/index/folder-index.ts';
import { Live, type LiveOptions } from '../src/live/live.ts';
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
  /** Makes the live sync of this index (closed after the test). */
  sync(options: Omit<LiveOptions, 'index' | 'log'>): Live;
}

/**
 * Runs `prepare` on a fresh temp folder, then starts the index (its scan
 * runs in the background: `run` awaits `index.ready` itself) and `run`.
 */
export async function withScanIndex(
  prepare: (dir: string) => void,
  run: (ctx: ScanIndexContext) => Promise<void>,
  options: Partial<Pick<FolderIndexOptions, 'watchScan' | 'scanSlicesHere'>> & { roots?: (dir: string) => string[] } = {},
): Promise<void> {
  const dir = tempDir();
  const logs: string[] = [];
  const log = createLogger('debug', (line) => logs.push(line));
  let index: FolderIndex | undefined;
  let live: Live | undefined;
  try {
    prepare(dir.path);
    const { roots = (d: string) => [d], watchScan = true, ...rest } = options;
    index = new FolderIndex({ roots: roots(dir.path).map((p) => makeRoot(p)), dbFile: ':memory:', log, gitignore: true, exclude: [], watchScan, ...rest });
    const made = index;
    await run({
      dir: dir.path,
      index,
      log,
      logs,
      sync: (syncOptions) => (live = new Live({ index: made, log, ...syncOptions })),
    });
  } finally {
    await live?.close();
    index?.close();
    dir.cleanup();
  }
}
