// A request body read within a bound, and the answer to one over it.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Of a body refused as too large, what is read and dropped before its connection closes (see refuseBody). */
export const MAX_DISCARDED_BODY_BYTES = 64 * 1024 * 1024;
/** ...and for how long at most. */
const DISCARD_BODY_MS = 5_000;

/** The body as text, or null when it is over `max` bytes (then it is not read further; the answer closes the connection). */
export function readBody(req: IncomingMessage, max: number): Promise<string | null> {
  if (Number(req.headers['content-length']) > max) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      resolve(null);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks, size).toString('utf8')));
    req.once('error', reject);
  });
}

/**
 * 413 for a body over the limit, and the connection closed without a reset.
 * Closing a socket whose client is still sending resets it (RST), and a
 * client busy sending a 1 GB body then saw EPIPE or ECONNRESET instead of the
 * answer. So the whole answer goes out at once (with its length, and
 * `Connection: close`), and the rest of the body is read and dropped until it
 * ends, up to MAX_DISCARDED_BODY_BYTES or DISCARD_BODY_MS; only then does the
 * response end and Node close the connection. A client that sends more than
 * that still has had the whole answer long before its connection closes.
 */
export function refuseBody(req: IncomingMessage, res: ServerResponse, message: string): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } });
  res.writeHead(413, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.write(body);
  if (req.complete) return void res.end();
  let dropped = 0;
  const timer = setTimeout(() => finish(), DISCARD_BODY_MS).unref();
  const finish = () => {
    clearTimeout(timer);
    req.off('data', drop);
    req.off('end', finish);
    req.off('error', finish);
    if (!res.writableEnded) res.end();
  };
  const drop = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > MAX_DISCARDED_BODY_BYTES) finish();
  };
  req.on('data', drop);
  req.once('end', finish);
  req.once('error', finish);
  req.resume();
}
