import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ALWAYS_EXCLUDED, IgnoreRules } from '../src/index/ignore.ts';
import { silentLogger } from '../src/log.ts';
import { makeRoot } from '../src/uri.ts';
import { BACKEND_STARTERS } from '../src/watch/choose.ts';
import type { WatcherBackend } from '../src/watching.ts';

export interface WatcherProbe {
  backend: WatcherBackend;
  /** Time from start to the backend's ready. */
  readyMs: number;
  /** inotify watches this process holds once ready (Linux; -1 elsewhere). */
  inotifyWatches: number;
  /** Resident set size growth from before the start to ready, in MiB. */
  rssDeltaMiB: number;
}

/**
 * Measures one backend on a folder: time to ready, inotify watches, RSS
 * growth. For the auto threshold and for bench/ (run it in a fresh process
 * per backend: RSS and watches are per process).
 */
export async function probeWatcher(backend: WatcherBackend, folder: string): Promise<WatcherProbe> {
  const roots = [makeRoot(folder)];
  const rules = new IgnoreRules(roots, { gitignore: true, exclude: [] });
  // `dirs` takes its directory list from the index in the server; here a walk made before the
  // clock starts stands in for it (the list is read a page at a time there, not held).
  const directories = backend === 'dirs' ? servedDirectories(folder, rules) : undefined;
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const watcher = await BACKEND_STARTERS[backend]({
    roots,
    rules,
    log: silentLogger,
    sink: { changed: () => {}, rescan: async () => {}, fatal: () => {} },
    ...(directories ? { directories: () => directories } : {}),
  });
  const readyMs = performance.now() - started;
  const result: WatcherProbe = {
    backend,
    readyMs: Math.round(readyMs),
    inotifyWatches: countInotifyWatches(),
    rssDeltaMiB: Math.round(((process.memoryUsage().rss - rssBefore) / 2 ** 20) * 10) / 10,
  };
  await watcher.close();
  return result;
}

/** inotify watches held by this process: `inotify wd:` lines in /proc/self/fdinfo of its inotify fds. */
export function countInotifyWatches(): number {
  let fds: string[];
  try {
    fds = readdirSync('/proc/self/fd');
  } catch {
    return -1;
  }
  let watches = 0;
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) !== 'anon_inode:inotify') continue;
      watches += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').filter((l) => l.startsWith('inotify wd:')).length;
    } catch {
      // The fd closed while we looked: it holds no watch now.
    }
  }
  return watches;
}

/** Every directory under `root` that the scan would serve, parents first. */
function servedDirectories(root: string, rules: IgnoreRules): string[] {
  const dirs = [root];
  for (let i = 0; i < dirs.length; i++) {
    for (const entry of readdirSync(dirs[i]!, { withFileTypes: true })) {
      const path = join(dirs[i]!, entry.name);
      if (entry.isDirectory() && !ALWAYS_EXCLUDED.has(entry.name) && !rules.isIgnored(path, true)) dirs.push(path);
    }
  }
  return dirs;
}
