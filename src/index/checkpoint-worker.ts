// The checkpoint thread (see checkpoint.ts): one connection to the index
// file that runs a passive checkpoint each time the main thread asks.
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import type { CheckpointReply } from './checkpoint.ts';

const port = parentPort!;
const post = (reply: CheckpointReply) => port.postMessage(reply);
const db = new Database((workerData as { file: string }).file, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
// Under NORMAL a checkpoint fsyncs the WAL before it copies and the database after: here, off the event loop.
db.pragma('synchronous = NORMAL');

port.on('message', (message: 'checkpoint' | 'close') => {
  if (message === 'close') {
    db.close();
    port.close();
    return;
  }
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    post({ type: 'done', frames: row?.log ?? 0, checkpointed: row?.checkpointed ?? 0 });
  } catch (error) {
    post({ type: 'error', message: (error as Error).message });
  }
});
post({ type: 'ready' });
