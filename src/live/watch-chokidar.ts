import type { Stats } from 'node:fs';
import { join } from 'node:path';
import { isResourceExhausted, type StartWatcher, type Watcher, type WatchStart } from './watcher.ts';

/**
 * chokidar 5 never says `ready` when a directory it is reading during its
 * first walk is replaced meanwhile (a file or another directory of the same
 * name): 9 of 20 starts on a small tree changed 0-4 ms after the start. The
 * server's catch-up waits for the backend to be ready, so it waited for good
 * (the fuzzer found it). chokidar looks at every path of its walk through our
 * `ignored` filter, so that is its progress: past this long without a look
 * and without `ready`, the start is taken as done. What the walk missed is
 * what the catch-up's look at the disk then finds (each directory it finds
 * new, or of another identity, is added to chokidar: `rewatch`).
 */
const STALLED_MS = 2000;

/**
 * chokidar: one fs.watch (inotify watch) per directory and per file, so it is
 * exact but costs a watch and some memory per entry. Ignored directories are
 * pruned through the same IgnoreRules as the scan, so `build/` or
 * `node_modules/` never cost a watch.
 */
export function chokidarWatcher(options: { stalledMs?: number } = {}): StartWatcher {
  const stalledMs = options.stalledMs ?? STALLED_MS;
  return (start) => startChokidar(start, stalledMs);
}

export const startChokidarWatcher: StartWatcher = chokidarWatcher();

const startChokidar = async ({ roots, rules, sink, log }: WatchStart, stalledMs: number): Promise<Watcher> => {
  // Loaded here, not at import: start-up does not wait for a backend that may not be chosen (auto runs dirs above 1,000 entries).
  const { watch } = await import('chokidar');
  return new Promise<Watcher>((resolve, reject) => {
    let ready = false;
    let closed = false;
    let lastLook = performance.now();
    const watcher = watch(
      roots.map((r) => r.path),
      {
        ignoreInitial: true,
        followSymlinks: false,
        persistent: true,
        // chokidar's atomic mode hides editor temp files (`x~`, `.x.swp`) that
        // the scan serves; we stat every path anyway, so a save that arrives
        // as unlink + add still ends as one updated row.
        atomic: false,
        // Without stats chokidar has not decided yet what the path is; a
        // directory-only rule (`build/`) is checked again when stats come.
        ignored: (path: string, stats?: Stats) => {
          lastLook = performance.now();
          return rules.isIgnored(path, stats?.isDirectory() ?? false);
        },
      },
    );
    const changed = (path: string) => {
      if (!closed) sink.changed(path);
    };
    for (const event of ['add', 'addDir', 'change', 'unlink', 'unlinkDir'] as const) watcher.on(event, changed);
    // chokidar's own events come from comparing names, so a directory replaced
    // by a file of the same name (or back) between two of its reads is
    // reported by nobody. Its raw events are every fs.watch event, each a hint
    // like the dirs backend's: the watched path and the name in it. On a
    // file's own watch the name is the file's, so both paths are looked at
    // (one of them does not exist: looking costs an lstat).
    watcher.on('raw', (_event, name: string | null, details: unknown) => {
      const watched = (details as { watchedPath?: unknown } | undefined)?.watchedPath;
      if (closed || typeof watched !== 'string') return;
      sink.changed(watched);
      if (name) sink.changed(join(watched, name));
    });
    watcher.on('error', (error: unknown) => {
      if (closed) return;
      if (isResourceExhausted(error)) {
        if (ready) return sink.fatal(error as Error);
        closed = true;
        clearInterval(stallCheck);
        void watcher.close();
        return reject(error);
      }
      // e.g. EACCES on one directory: that subtree is not watched, the rest is.
      log.warn(`watcher (chokidar): ${(error as Error).message ?? String(error)}`);
    });
    const started = () => {
      if (closed || ready) return;
      ready = true;
      clearInterval(stallCheck);
      resolve({
        backend: 'chokidar',
        rewatch(dir) {
          // chokidar walks the new directories it sees itself, but not always in
          // time: a directory made while it was getting ready, or re-made under a
          // watched one, can stay unwatched for good (the fuzzer found both).
          // Adding one it already watches costs a listener and a readdir.
          if (!closed) watcher.add(dir);
        },
        async close() {
          closed = true;
          await watcher.close();
        },
      });
    };
    watcher.on('ready', started);
    const stallCheck = setInterval(() => {
      if (closed || ready || performance.now() - lastLook < stalledMs) return;
      log.info(`watcher (chokidar): its first walk stalled without \`ready\` (a directory replaced while it read it); going on`);
      started();
    }, stalledMs / 4);
    stallCheck.unref();
  });
};
