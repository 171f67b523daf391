import { CONVERTERS } from './converters/index.ts';
import { ConversionError, type ConversionLimits, type LocatedText } from './converters/types.ts';

/**
 * Entry point of the conversion process (see isolate.ts): runs one registered
 * converter per IPC message. Parsing untrusted documents in a process of its
 * own keeps the server's event loop free, lets a conversion past its time
 * budget be killed outright, and bounds the memory a hostile file can take,
 * external buffers included, then gives it back to the system when killed.
 */
export interface WorkerJob {
  id: number;
  converter: string;
  name: string;
  bytes: Uint8Array;
  text: string | undefined;
  limits: ConversionLimits;
  /** Asks for the text with its places (Converter.convertLocated), for the content index. */
  located?: boolean;
}

export type WorkerOutput = string | Uint8Array | LocatedText;

export type WorkerReply =
  | { id: number; ok: true; output: WorkerOutput }
  | { id: number; ok: false; conversionError: boolean; message: string };

async function runJob(job: WorkerJob): Promise<WorkerReply> {
  try {
    const converter = CONVERTERS.find((c) => c.id === job.converter);
    if (!converter) throw new ConversionError(`no converter ${job.converter}`);
    const input = {
      name: job.name,
      bytes: Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength),
      text: job.text,
      // The parent enforces the time budget by killing this process.
      signal: new AbortController().signal,
      limits: job.limits,
    };
    if (job.located && converter.convertLocated) {
      return { id: job.id, ok: true, output: locatedWithinBudget(await converter.convertLocated(input), job.limits.outputBytes) };
    }
    const output = await converter.convert(input);
    return { id: job.id, ok: true, output: withinOutputBudget(output, job.limits.outputBytes) };
  } catch (error) {
    return {
      id: job.id,
      ok: false,
      conversionError: error instanceof ConversionError,
      message: (error as Error)?.message ?? String(error),
    };
  }
}

/**
 * What the server would keep of an output, and a little more, so that a
 * converter's huge output never crosses into the server: text past the budget
 * is cut a few bytes over it (the server cuts it at the budget on a character
 * boundary, adds its marker and warns); bytes past it are an error there too.
 */
export function withinOutputBudget(output: string | Uint8Array, limit: number): string | Uint8Array {
  if (typeof output !== 'string') {
    if (output.length > limit) throw new ConversionError(`output is ${output.length} bytes, over the limit of ${limit}`);
    return output;
  }
  if (output.length * 3 <= limit) return output;
  const bytes = Buffer.from(output, 'utf8');
  return bytes.length <= limit ? output : bytes.toString('utf8', 0, limit + 4);
}

if (process.send) {
  const send = process.send.bind(process);
  process.on('message', (job: WorkerJob) => {
    void runJob(job).then((reply) => send(reply));
  });
  // The server is gone (exited, or killed without a chance to kill us): so are we.
  process.on('disconnect', () => process.exit(0));
}

/**
 * withinOutputBudget for a text with its places: the places past the text
 * kept go too. A notebook of 1.4 million empty cells sent every cell's
 * place across, and the server, decoding them, peaked at 388 MiB and
 * answered a ping after a second, to keep 105,000 of them (a red-team
 * finding).
 */
export function locatedWithinBudget(located: LocatedText, limit: number): LocatedText {
  const text = withinOutputBudget(located.text, limit) as string;
  return { text, places: text.length === located.text.length ? located.places : located.places.filter((p) => p.offset < text.length) };
}
