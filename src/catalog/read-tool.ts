// The `read` tool: one resource, a window of at most `length` bytes starting at
// `offset`, as an embedded resource; an image whole, as image content the
// model can see; or several files in one call (`paths`), each bounded and
// each failing on its own. A window, not the whole file, because a model's
// context is the scarce thing; `nextOffset` says where the rest starts.
import { echo } from '../protocol/errors.ts';
import { z } from 'zod';
import { formatListing } from '../content/collection.ts';
import { convertersByName } from '../content/converters/index.ts';
import { ContentError, readOpenedContent, type FileContent } from '../content/read.ts';
import { jsonTextBytes, ReadBusyError, wireBytes } from '../content/read-budget.ts';
import { openVerified, type OpenedFile } from '../content/safe-open.ts';
import { detectTextEncoding, SNIFF_BYTES } from '../content/sniff.ts';
import { EntryKind, type EntryRow } from '../entry.ts';
import type { ServerContext } from '../protocol/context.ts';
import { toResource } from '../resource.ts';
import { uriToPath } from '../uri.ts';
import { displayPath, resolveTarget } from './paths.ts';
import { formatSize, ToolFailure, type ContentBlock, type ToolContext, type ToolDefinition, type ToolResult } from './tool.ts';

export const READ_DEFAULT_LENGTH = 64 * 1024;
export const READ_MAX_LENGTH = 1024 * 1024;
const LISTING_ENTRIES = 1000;
/** What a folder's listing of LISTING_ENTRIES names may weigh, for the read budget (names of 100 bytes or so). */
const LISTING_BYTES = 128 * 1024;
/** Files one call may name in `paths`. */
export const READ_MAX_PATHS = 20;
/**
 * Bytes one call returns in all (text, and images as they are on disk): a
 * call naming many files stops adding them past this, and says which it
 * left out. As much as one largest window of a single read plus three
 * images at their largest.
 */
export const READ_MAX_TOTAL_BYTES = 4 * 1024 * 1024;
/**
 * Largest image returned as image content (and never more than
 * --max-read-bytes). About what hosts accept per image (Claude: 5 MB of
 * base64); a larger one is read as base64 windows like any binary file.
 */
export const READ_MAX_IMAGE_BYTES = 3 * 1024 * 1024;

/** Images a model can see, each with the bytes it must start with (so a misnamed file is not sent as one). */
const IMAGE_SIGNATURES: Record<string, (head: Buffer) => boolean> = {
  'image/png': (h) => h.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (h) => h[0] === 0xff && h[1] === 0xd8 && h[2] === 0xff,
  'image/gif': (h) => ['GIF87a', 'GIF89a'].includes(h.subarray(0, 6).toString('latin1')),
  'image/webp': (h) => h.subarray(0, 4).toString('latin1') === 'RIFF' && h.subarray(8, 12).toString('latin1') === 'WEBP',
};

const target = z.string().min(1);
const input = z
  .strictObject({
    uri: target.optional().describe('A file:// URI from find/search/tree, or a path relative to a served folder (`src/main.ts`).'),
    // The write tools name their file `path`; a model that says `path` here means the same (issue 46).
    path: target.optional().describe('The same as uri (the write tools call it path): give one of them.'),
    paths: z
      .array(target)
      .min(1)
      .max(READ_MAX_PATHS)
      .optional()
      .describe(`Several files at once (URIs or relative paths, at most ${READ_MAX_PATHS}), each read from its start up to \`length\` bytes; instead of uri.`),
    offset: z.number().int().min(0).default(0).describe('Byte offset to start at (0 = the beginning); use nextOffset of a previous read. With uri only.'),
    length: z
      .number()
      .int()
      .min(1)
      .max(READ_MAX_LENGTH)
      .default(READ_DEFAULT_LENGTH)
      .describe(`At most this many bytes (default ${READ_DEFAULT_LENGTH}, max ${READ_MAX_LENGTH}); per file with paths.`),
  })
  .refine((a) => [a.uri, a.path, a.paths].filter((v) => v !== undefined).length === 1, {
    message: 'give one of uri or path (one file), or paths (several files)',
  })
  .refine((a) => a.paths === undefined || a.offset === 0, { message: 'offset applies to uri only: read the rest of one file with uri and offset', path: ['offset'] });

const fileResult = z.object({
  uri: z.string(),
  path: z.string(),
  type: z.enum(['document', 'collection']),
  mimeType: z.string().describe('of the returned representation'),
  encoding: z.enum(['text', 'base64', 'image']).describe('image: returned whole as image content'),
  size: z.number().describe('bytes of the whole representation'),
  offset: z.number(),
  length: z.number().describe('bytes returned'),
  nextOffset: z.number().optional().describe('where the rest starts; absent when this window reaches the end'),
});
// An object at the top, as MCP requires of an output schema: one file's fields with `uri`, its results with `paths`.
const output = fileResult.partial().extend({
  results: z
    .array(z.union([fileResult, z.object({ path: z.string().describe('as given'), error: z.string() })]))
    .optional()
    .describe('with paths: one per path given, in order'),
});
type FileResult = z.infer<typeof fileResult>;

export interface Window {
  mimeType: string;
  text?: string;
  blob?: string;
  size: number;
  offset: number;
  length: number;
}

/** One file read: its content blocks, what structuredContent says of it, and the bytes it returns. */
interface FileRead {
  blocks: ContentBlock[];
  result: FileResult;
  bytes: number;
}

export const readTool: ToolDefinition<z.infer<typeof input>> = {
  name: 'read',
  title: 'Read a file',
  description:
    `Read one file (or a folder's listing) by URI or relative path: up to \`length\` bytes (default ${READ_DEFAULT_LENGTH / 1024} KiB) from \`offset\`, ` +
    'with nextOffset to continue. Text comes as text; documents with a text form (e.g. PDF) come as that text; PNG, JPEG, GIF and WebP images ' +
    `up to ${READ_MAX_IMAGE_BYTES / 1024 / 1024} MiB come whole as images; other binary files as base64. ` +
    `\`paths\` reads up to ${READ_MAX_PATHS} files in one call, each from its start.`,
  input,
  output,
  async run(tc, args) {
    if (args.paths !== undefined) return readMany(tc, args.paths, args.length);
    const entry = await resolveOrFail(tc.ctx, (args.uri ?? args.path)!);
    const read = await budgeted(tc, [entry], args.length, () => readOne(tc.ctx, entry, args.offset, args.length, READ_MAX_TOTAL_BYTES, tc.signal));
    return { content: read.blocks, structuredContent: read.result };
  },
};

/** `paths`: each file on its own (a failure is that file's, not the call's), within READ_MAX_TOTAL_BYTES in all. */
async function readMany(tc: ToolContext, paths: readonly string[], length: number): Promise<ToolResult> {
  const ctx = tc.ctx;
  const found = await Promise.all(paths.map((path) => resolveOrFail(ctx, path).catch((error: unknown) => error)));
  const entries = found.filter((f): f is EntryRow => !(f instanceof Error));
  // One share of the read budget for the whole call, taken before any file is read: a call that held the
  // windows it read while waiting for more could wait for ever on others doing the same.
  return budgeted(tc, entries, length, async () => {
    const content: ContentBlock[] = [];
    const results: (FileResult | { path: string; error: string })[] = [];
    let budget = READ_MAX_TOTAL_BYTES;
    // One at a time: at most one file's window is held beyond what is already answered.
    for (const [i, path] of paths.entries()) {
      // Cancelled: its answer is dropped, so the files left are not read (nor converted).
      if (tc.signal?.aborted) break;
      if (budget <= 0) {
        const error = `left out: this call already returns ${formatSize(READ_MAX_TOTAL_BYTES)}; read it in another call`;
        results.push({ path, error });
        content.push({ type: 'text', text: `${String(echo(path))}: ${error}` });
        continue;
      }
      try {
        const entry = found[i];
        if (entry instanceof Error) throw entry;
        const read = await readOne(ctx, entry as EntryRow, 0, Math.min(length, budget), budget, tc.signal);
        budget -= read.bytes;
        results.push(read.result);
        content.push(...read.blocks);
      } catch (error) {
        if (!(error instanceof ToolFailure)) throw error;
        results.push({ path, error: error.message });
        content.push({ type: 'text', text: error.message });
      }
    }
    const failed = results.filter((r) => 'error' in r).length;
    return { content, structuredContent: { results }, ...(failed === results.length ? { isError: true } : {}) };
  });
}

/**
 * A call within the process's read budget (src/content/read-budget.ts): what
 * its answer may weigh on the wire (base64 of at most READ_MAX_TOTAL_BYTES,
 * and of at most `length` of each file that is not an image), plus one
 * whole-file read at a time (a file that is not UTF-8 text is read whole, up
 * to --max-read-bytes, to be decoded or converted). On stdio the share is
 * kept until the answer is written; it grows to the answer's exact size.
 */
async function budgeted<T extends { blocks: ContentBlock[] } | ToolResult>(tc: ToolContext, entries: readonly EntryRow[], length: number, read: () => Promise<T>): Promise<T> {
  const { ctx } = tc;
  const documents = entries.filter((e) => e.kind === EntryKind.document);
  const wholeRead = Math.max(0, ...documents.map((e) => Math.min(e.size, ctx.maxReadBytes)));
  const returned = entries.reduce((sum, e) => sum + (e.kind === EntryKind.document ? Math.min(e.size, IMAGE_SIGNATURES[e.mime] ? READ_MAX_IMAGE_BYTES : length) : LISTING_BYTES), 0);
  try {
    return await ctx.readBudget.run(wholeRead + wireBytes(Math.min(returned, READ_MAX_TOTAL_BYTES)), async (share) => {
      if (tc.holdAnswer) tc.holdAnswer(share.hold());
      const answer = await read();
      share.grow(blocksWireBytes((answer as { blocks?: ContentBlock[] }).blocks ?? (answer as ToolResult).content));
      return answer;
    });
  } catch (error) {
    if (error instanceof ReadBusyError) throw new ToolFailure(error.message);
    throw error;
  }
}

/** What content blocks weigh on the wire: text JSON-escaped, base64 as it is (names and fields are small, not counted). */
function blocksWireBytes(blocks: readonly ContentBlock[]): number {
  let bytes = 0;
  for (const block of blocks) {
    const resource = block.resource as { text?: unknown; blob?: unknown } | undefined;
    for (const value of [block.text, block.data, resource?.text, resource?.blob]) {
      if (typeof value === 'string') bytes += block.type === 'image' || value === resource?.blob ? value.length : jsonTextBytes(value);
    }
  }
  return bytes;
}

async function resolveOrFail(ctx: ServerContext, given: string): Promise<EntryRow> {
  const entry = await resolveTarget(ctx, given);
  if (!entry) throw new ToolFailure(`Not found: ${String(echo(given))} (not a file or folder in the served folders)`);
  return entry;
}

/** One file or folder: an image whole when it is one (and `imageBudget` allows), else a window. Throws ToolFailure. */
async function readOne(ctx: ServerContext, entry: EntryRow, offset: number, length: number, imageBudget: number, signal?: AbortSignal): Promise<FileRead> {
  const resource = toResource(entry, ctx.roots);
  // The path as every tool prints it (with several folders, the folder's label first), not the resource's title.
  const shown = displayPath(entry, ctx.roots);
  const base = { uri: entry.uri, path: shown, type: resource.resourceType };
  if (offset === 0) {
    const image = await imageOf(ctx, entry, Math.min(imageBudget, READ_MAX_IMAGE_BYTES));
    if (image) {
      return {
        // The image has no name of its own: the line before it says which file it is.
        blocks: [
          { type: 'text', text: `${shown} (${image.mimeType}, ${formatSize(image.bytes.length)}):` },
          { type: 'image', data: image.bytes.toString('base64'), mimeType: image.mimeType },
        ],
        result: { ...base, mimeType: image.mimeType, encoding: 'image', size: image.bytes.length, offset: 0, length: image.bytes.length },
        bytes: image.bytes.length,
      };
    }
  }
  const window = await readWindow(ctx, entry, offset, length, signal);
  const end = window.offset + window.length;
  const nextOffset = entry.kind === EntryKind.document && end < window.size ? end : undefined;
  const body = window.text !== undefined ? { text: window.text } : { blob: window.blob! };
  const block: ContentBlock = {
    type: 'resource',
    // SEP-2093: the full resource object on the content item, annotations included.
    resource: { ...resource, mimeType: window.mimeType, ...body },
    annotations: { lastModified: resource.annotations.lastModified },
  };
  const note =
    nextOffset !== undefined
      ? `Bytes ${window.offset}–${end} of ${window.size} (${formatSize(window.size)}); the rest: read with offset ${nextOffset}.`
      : window.offset > 0
        ? `Bytes ${window.offset}–${end} of ${window.size}: the end.`
        : null;
  return {
    blocks: note ? [block, { type: 'text', text: note }] : [block],
    result: {
      ...base,
      mimeType: window.mimeType,
      encoding: window.text !== undefined ? 'text' : 'base64',
      size: window.size,
      offset: window.offset,
      length: window.length,
      ...(nextOffset !== undefined ? { nextOffset } : {}),
    },
    bytes: window.length,
  };
}

/**
 * The whole image, when `entry` is a PNG, JPEG, GIF or WebP file (by its
 * type and its first bytes) of at most `limit` bytes and --max-read-bytes;
 * else null, and the caller reads it as any file.
 */
async function imageOf(ctx: ServerContext, entry: EntryRow, limit: number): Promise<{ mimeType: string; bytes: Buffer } | null> {
  const looksLike = IMAGE_SIGNATURES[entry.mime];
  if (entry.kind !== EntryKind.document || !looksLike || entry.size > Math.min(limit, ctx.maxReadBytes)) return null;
  let file: OpenedFile;
  try {
    // Security: openVerified, as every read.
    file = await openVerified(uriToPath(entry.uri), ctx.roots);
  } catch (error) {
    throw readFailure(error, entry.uri);
  }
  try {
    // The size the open descriptor has now, not the index's: it may have grown past the limit since.
    if (file.size > Math.min(limit, ctx.maxReadBytes)) return null;
    const { bytes } = await readOpenedContent(file, ctx.maxReadBytes, 'as-opened');
    return looksLike(bytes) ? { mimeType: entry.mime, bytes } : null;
  } catch (error) {
    throw readFailure(error, entry.uri);
  } finally {
    await file.handle.close();
  }
}

/** A window of a document, or a collection's listing; shared with the explain prompt. */
export async function readWindow(ctx: ServerContext, entry: EntryRow, offset: number, length: number, signal?: AbortSignal): Promise<Window> {
  return entry.kind === EntryKind.collection ? collectionWindow(ctx, entry) : documentWindow(ctx, entry, offset, length, signal);
}

function collectionWindow(ctx: ServerContext, entry: EntryRow): Window {
  const children = ctx.index.store.children(entry.uri, '', LISTING_ENTRIES + 1);
  const named = children.slice(0, LISTING_ENTRIES);
  const more = children.length > named.length ? ctx.index.store.countChildren(entry.uri) - named.length : 0;
  const text = formatListing(named, more).replace(/use resources\/list with this uri/, 'use the find tool with this prefix');
  const size = Buffer.byteLength(text);
  return { mimeType: entry.mime, text, size, offset: 0, length: size };
}

async function documentWindow(ctx: ServerContext, entry: EntryRow, offset: number, length: number, signal?: AbortSignal): Promise<Window> {
  let file: OpenedFile;
  try {
    // Security: openVerified, as every read: no folder that became a symlink, no FIFO, socket or device.
    file = await openVerified(uriToPath(entry.uri), ctx.roots);
  } catch (error) {
    throw readFailure(error, entry.uri);
  }
  // A document whose text is a conversion (a PDF, a .docx) is read as that text even when its bytes happen to be
  // text: a PDF of ASCII only came back as its raw source (issue 46).
  const converted = !/^text\/|json/.test(entry.mime) && convertersByName(entry).length > 0;
  let content: FileContent;
  try {
    const { handle, size } = file;
    const head = Buffer.alloc(Math.min(SNIFF_BYTES, size));
    await handle.read(head, 0, head.length, 0);
    const encoding = detectTextEncoding(head, size <= SNIFF_BYTES);
    if (encoding === 'utf-8' && !(converted && size <= ctx.maxReadBytes)) {
      // 3 bytes either side let the window move to whole UTF-8 characters.
      const from = Math.max(0, offset - 3);
      const buffer = Buffer.alloc(Math.max(0, Math.min(length + 6, size - from)));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, from);
      const text = utf8Window(buffer.subarray(0, bytesRead), from, offset, length, size);
      if (text) return { mimeType: entry.mime, ...text, size };
    }
    if (size > ctx.maxReadBytes) {
      // Too large to convert or decode whole: a window of the raw bytes, so any file can be read in parts.
      const start = Math.min(offset, size);
      const buffer = Buffer.alloc(Math.min(length, size - start));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
      const slice = buffer.subarray(0, bytesRead);
      return { mimeType: entry.mime, blob: slice.toString('base64'), size, offset: start, length: slice.length };
    }
    // UTF-16 text, binary, or bytes that are not UTF-8 after all, within --max-read-bytes: the whole file,
    // decoded or converted (a PDF's text), then the window. From this same handle and as large as fstat
    // said: a file that grows while it is read is read as it was opened, not refused.
    content = await readOpenedContent(file, ctx.maxReadBytes, 'as-opened');
  } catch (error) {
    throw readFailure(error, entry.uri);
  } finally {
    await file.handle.close();
  }
  if (content.text !== undefined && !converted) return textWindow(entry.mime, Buffer.from(content.text, 'utf8'), offset, length);
  const alternatives = await ctx.convert(entry, content, signal).catch(() => []);
  for (const alt of alternatives) {
    if ('text' in alt) return textWindow(alt.mimeType, Buffer.from(alt.text, 'utf8'), offset, length);
  }
  if (content.text !== undefined) return textWindow(entry.mime, Buffer.from(content.text, 'utf8'), offset, length);
  const start = Math.min(offset, content.bytes.length);
  const slice = content.bytes.subarray(start, start + length);
  return { mimeType: entry.mime, blob: slice.toString('base64'), size: content.bytes.length, offset: start, length: slice.length };
}

function textWindow(mimeType: string, bytes: Buffer, offset: number, length: number): Window {
  const from = Math.max(0, offset - 3);
  const text = utf8Window(bytes.subarray(from, offset + length + 3), from, offset, length, bytes.length)!;
  return { mimeType, ...text, size: bytes.length };
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The text of [offset, offset+length) of a UTF-8 file, moved to character
 * boundaries: the start forward past continuation bytes, the end back. `buffer`
 * holds the file's bytes from `from`. Undefined when the bytes are not UTF-8.
 */
function utf8Window(
  buffer: Buffer,
  from: number,
  offset: number,
  length: number,
  total: number,
): { text: string; offset: number; length: number } | undefined {
  let start = Math.min(offset, total);
  while (start < total && start - from < buffer.length && (buffer[start - from]! & 0xc0) === 0x80) start++;
  let end = Math.min(start + length, total);
  const continuation = (at: number) => at - from < buffer.length && (buffer[at - from]! & 0xc0) === 0x80;
  while (end > start && end < total && continuation(end)) end--;
  // A window shorter than the character at its start still returns that character, so paging always advances.
  if (end === start && start < total) for (end = start + 1; end < total && continuation(end); ) end++;
  try {
    const text = strictUtf8.decode(buffer.subarray(start - from, end - from));
    return { text, offset: start, length: end - start };
  } catch {
    return undefined;
  }
}

function readFailure(error: unknown, uri: string): ToolFailure {
  if (error instanceof ContentError) {
    if (error.reason === 'not-found') return new ToolFailure(`Not found: ${uri} (it was deleted or moved)`);
    return new ToolFailure(`Cannot read ${uri}: ${error.message.replace(/^Cannot read resource: /, '')}`);
  }
  return new ToolFailure(`Cannot read ${uri}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
}
