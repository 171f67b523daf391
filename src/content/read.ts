import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { detectTextEncoding } from './sniff.ts';

/** Typed failures of reading a file; the protocol layer maps them to JSON-RPC errors. */
export class ContentError extends Error {
  constructor(
    readonly reason: 'not-found' | 'too-large' | 'unreadable',
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** The bytes of one file, read once, with its decoded text when it is text. */
export interface FileContent {
  bytes: Buffer;
  /** The text when the bytes are text (UTF-8, or UTF-16 with a BOM), else undefined. */
  text?: string;
  /** Modification time (ms since the epoch) of the file read, from fstat on the open handle. */
  mtimeMs: number;
}

/**
 * Reads a regular file, refusing more than `maxBytes`. Security: O_NOFOLLOW
 * so that a file swapped for a symlink after indexing is not followed out of
 * the root, and fstat on the open handle so what we check is what we read.
 */
export async function readFileContent(path: string, maxBytes: number): Promise<FileContent> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ContentError('not-found', 'not a regular file');
    if (stats.size > maxBytes) {
      throw new ContentError(
        'too-large',
        `Resource is ${stats.size} bytes, over the read limit of ${maxBytes} bytes (--max-read-bytes)`,
        { size: stats.size, limit: maxBytes },
      );
    }
    // Read to the end even if the file grew since fstat, but never past the limit.
    const bytes = await readUpTo(handle, maxBytes);
    return { bytes, text: decodeText(bytes), mtimeMs: stats.mtimeMs };
  } catch (error) {
    if (error instanceof ContentError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') {
      throw new ContentError('not-found', 'file vanished');
    }
    throw new ContentError('unreadable', `Cannot read resource: ${code ?? (error as Error).message}`, {
      code,
    });
  } finally {
    await handle?.close();
  }
}

async function readUpTo(handle: import('node:fs/promises').FileHandle, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const want = Math.min(1 << 20, maxBytes + 1 - total);
    if (want <= 0) break;
    const buffer = Buffer.allocUnsafe(want);
    const { bytesRead } = await handle.read(buffer, 0, want, total);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
  }
  if (total > maxBytes) {
    throw new ContentError(
      'too-large',
      `Resource grew past the read limit of ${maxBytes} bytes (--max-read-bytes) while being read`,
      { limit: maxBytes },
    );
  }
  return Buffer.concat(chunks, total);
}

const decoders = {
  'utf-8': new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }),
  'utf-16le': new TextDecoder('utf-16le', { fatal: true }),
  'utf-16be': new TextDecoder('utf-16be', { fatal: true }),
};

/** Text of a whole file, or undefined when it is not text we can decode losslessly. */
export function decodeText(bytes: Uint8Array): string | undefined {
  const encoding = detectTextEncoding(bytes, true);
  if (encoding === null) return undefined;
  try {
    return decoders[encoding].decode(bytes);
  } catch {
    return undefined;
  }
}
