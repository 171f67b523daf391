import type { StartWatcher } from './watcher.ts';

/** `--watcher none`: the index changes only through the start-up reconcile. */
export const startNoneWatcher: StartWatcher = async () => ({ backend: 'none', close: async () => {} });
