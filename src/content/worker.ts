import { parentPort } from 'node:worker_threads';
import { CONVERTERS } from './converters/index.ts';
import { ConversionError, type ConversionLimits } from './converters/types.ts';

/**
 * Entry point of the conversion worker thread (see isolate.ts): runs one
 * registered converter per message. Parsing untrusted documents here keeps
 * the server's event loop free, lets a conversion past its time budget be
 * killed outright, and caps the memory a hostile file can take.
 */
export interface WorkerJob {
  id: number;
  converter: string;
  name: string;
  bytes: Uint8Array;
  text: string | undefined;
  limits: ConversionLimits;
}

export type WorkerReply =
  | { id: number; ok: true; output: string | Uint8Array }
  | { id: number; ok: false; conversionError: boolean; message: string };

const port = parentPort;
if (port) {
  port.on('message', async (job: WorkerJob) => {
    let reply: WorkerReply;
    try {
      const converter = CONVERTERS.find((c) => c.id === job.converter);
      if (!converter) throw new ConversionError(`no converter ${job.converter}`);
      const output = await converter.convert({
        name: job.name,
        bytes: Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength),
        text: job.text,
        // The parent enforces the time budget by terminating this thread.
        signal: new AbortController().signal,
        limits: job.limits,
      });
      reply = { id: job.id, ok: true, output };
    } catch (error) {
      reply = {
        id: job.id,
        ok: false,
        conversionError: error instanceof ConversionError,
        message: (error as Error)?.message ?? String(error),
      };
    }
    port.postMessage(reply);
  });
}
