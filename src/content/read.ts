import type { Root } from '../uri.ts';
import { ContentError } from './content-error.ts';
import { openVerified, type OpenedFile } from './safe-open.ts';
import { detectTextEncoding } from './sniff.ts';

export { ContentError } from './content-error.ts';

/** The bytes of one file, read once, with its decoded text when it is text. */
export interface FileContent {
  bytes: Buffer;
  /** The text when the bytes are text (UTF-8, or UTF-16 with a BOM), else undefined. */
  text?: string;
  /** Modification time (ms since the epoch) of the file read, from fstat on the open handle. */
  mtimeMs: number;
}

/**
 * The size of the representation served for `content` (docs/resources.md, Reading):
 * the UTF-8 bytes of its text when it is text (a UTF-16 file is served as
 * UTF-8 text), else its bytes on disk.
 */
export function representationSize(content: FileContent): number {
  return content.text === undefined ? content.bytes.length : Buffer.byteLength(content.text, 'utf8');
}

/**
 * Reads the regular file the index names at `path`, refusing more than
 * `maxBytes`. Security: through openVerified, so a path that now goes through
 * a symlink, leads out of `roots`, or is a FIFO, socket or device is refused
 * before a byte is read.
 */
export async function readFileContent(path: string, maxBytes: number, roots: readonly Root[]): Promise<FileContent> {
  const file = await openVerified(path, roots);
  try {
    return await readOpenedContent(file, maxBytes, 'to-end');
  } finally {
    await file.handle.close();
  }
}

/**
 * The content of a file opened by openVerified. `to-end` reads on if the file
 * grew since fstat, refusing it past `maxBytes` (a document is served whole or
 * not at all); `as-opened` reads the size fstat saw, so a file that grows while
 * it is read (a log) is read as it was (the read tool's windows).
 */
export async function readOpenedContent(file: OpenedFile, maxBytes: number, extent: 'to-end' | 'as-opened'): Promise<FileContent> {
  if (file.size > maxBytes) {
    throw new ContentError(
      'too-large',
      `Resource is ${file.size} bytes, over the read limit of ${maxBytes} bytes (--max-read-bytes)`,
      { size: file.size, limit: maxBytes },
    );
  }
  let bytes: Buffer;
  try {
    bytes = await readUpTo(file.handle, extent === 'to-end' ? maxBytes + 1 : file.size);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ContentError('unreadable', `Cannot read resource: ${code ?? (error as Error).message}`, { code });
  }
  if (bytes.length > maxBytes) {
    throw new ContentError(
      'too-large',
      `Resource grew past the read limit of ${maxBytes} bytes (--max-read-bytes) while being read`,
      { limit: maxBytes },
    );
  }
  return { bytes, text: decodeText(bytes), mtimeMs: file.mtimeMs };
}

/** Up to `limit` bytes from the start, reading until the end of the file (a short read) or the limit. */
async function readUpTo(handle: import('node:fs/promises').FileHandle, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const want = Math.min(1 << 20, limit - total);
    if (want <= 0) break;
    const buffer = Buffer.allocUnsafe(want);
    const { bytesRead } = await handle.read(buffer, 0, want, total);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
    // A regular file reads short only at its end: no second read to find it.
    if (bytesRead < want) break;
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

/**
 * The text of a file of at most `maxBytes`, in one read sized by fstat (most
 * files are small: a fixed 1 MiB read buffer per file would dominate the
 * build). Security as readFileContent: O_NOFOLLOW, and fstat on the handle.
 */
export async function readSmallText(path: string, maxBytes: number, roots: readonly Root[]): Promise<string | undefined> {
  const { handle } = await openVerified(path, roots); // Security: no symlinked folder, FIFO or device (safe-open.ts)
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > maxBytes) return undefined;
    // One byte more than fstat said: a file that grew meanwhile is noticed, not cut.
    const buffer = Buffer.allocUnsafe(stats.size + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === buffer.length) return (await readFileContent(path, maxBytes, roots)).text;
    }
    return decodeText(buffer.subarray(0, length));
  } finally {
    await handle.close();
  }
}
