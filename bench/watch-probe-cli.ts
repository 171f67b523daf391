// `node --import tsx bench/watch-probe-cli.ts <chokidar|dirs|poll|none> <folder>` prints one
// JSON line: {backend, readyMs, inotifyWatches, rssDeltaMiB}. One backend per
// process, since watches and RSS are per process (for bench/ and the auto threshold).
import { probeWatcher } from './watch-probe.ts';
import { WATCHER_BACKENDS, type WatcherBackend } from '../src/watching.ts';

const [backend, folder] = process.argv.slice(2);
if (!folder || !(WATCHER_BACKENDS as readonly string[]).includes(backend ?? '')) {
  process.stderr.write(`usage: watch-probe-cli <${WATCHER_BACKENDS.join('|')}> <folder>\n`);
  process.exitCode = 2;
} else {
  probeWatcher(backend as WatcherBackend, folder).then(
    (result) => process.stdout.write(`${JSON.stringify({ folder, ...result })}\n`),
    (error: unknown) => {
      process.stderr.write(`probe failed: ${(error as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
