// The checkpoint thread (see checkpoint.ts): runs a passive checkpoint each
// time the main thread asks, on a connection opened for it and closed after,
// so that when the main connection closes it is the last one (and SQLite
// checkpoints and removes the WAL) unless a checkpoint is running: the main
// thread waits for that one (the state word below).
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { CheckpointState, type CheckpointReply } from './checkpoint.ts';

const port = parentPort!;
const post = (reply: CheckpointReply) => port.postMessage(reply);
const { file, state: buffer } = workerData as { file: string; state: SharedArrayBuffer };
const state = new Int32Array(buffer);

port.on('message', () => {
  // idle -> busy, unless the main thread has closed the index.
  if (Atomics.compareExchange(state, 0, CheckpointState.idle, CheckpointState.busy) !== CheckpointState.idle) return;
  try {
    const db = new Database(file, { fileMustExist: true });
    try {
      db.pragma('busy_timeout = 1000');
      // Under NORMAL a checkpoint fsyncs the WAL before it copies and the database after: here, off the event loop.
      db.pragma('synchronous = NORMAL');
      const [row] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
      post({ type: 'done', frames: row?.log ?? 0, checkpointed: row?.checkpointed ?? 0 });
    } finally {
      db.close();
    }
  } catch (error) {
    post({ type: 'error', message: (error as Error).message });
  } finally {
    Atomics.store(state, 0, CheckpointState.idle);
    Atomics.notify(state, 0);
  }
});
post({ type: 'ready' });
