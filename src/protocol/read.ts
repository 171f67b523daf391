import { ALTERNATIVES_META_KEY, alternativeMimeTypes } from '../content/converters/index.ts';
import { DEFAULT_COLLECTION_LIMITS, formatListing, mayBeText, type CollectionReadLimits } from '../content/collection.ts';
import { ContentError, readFileContent, representationSize } from '../content/read.ts';
import { jsonTextBytes, ReadBusyError, wireBytes, type ReadShare } from '../content/read-budget.ts';
import { EntryKind, type EntryRow } from '../entry.ts';
import { lookupEntry } from '../index/lookup.ts';
import { toResource, type ResourceObject } from '../resource.ts';
import { uriToPath } from '../uri.ts';
import { DEFER_BLOB_BYTES, type AnswerBlobs } from './sdk/answer-blobs.ts';
import type { ServerContext } from './context.ts';
import { ErrorCode, internalError, invalidParams, ProtocolError, resourceNotFound } from './errors.ts';
import type { HoldAnswer } from './answer-holds.ts';

export type ContentItem = ResourceObject & ({ text: string } | { blob: string });

/** `mcp:` URIs are protocol-internal (SEP-1292): never a file, answered by the catalog's groups. */
export function isReservedUri(uri: unknown): uri is string {
  return typeof uri === 'string' && /^mcp:/i.test(uri);
}

/**
 * `resources/metadata` (SEP-2093): the resource object, without reading
 * content. A document with format alternatives lists their MIME types under
 * `_meta["folder-mcp/alternatives"]`, decided by name and type alone.
 */
export async function resourceMetadata(ctx: ServerContext, params: unknown): Promise<{ resource: ResourceObject }> {
  const entry = await findEntry(ctx, uriParam(params));
  const resource = toResource(entry, ctx.roots);
  if (entry.kind === EntryKind.document) {
    const alternatives = alternativeMimeTypes(entry);
    if (alternatives.length > 0) resource._meta = { [ALTERNATIVES_META_KEY]: alternatives };
  }
  return { resource };
}

/**
 * `resources/read`: a document with its format alternatives, or a collection (docs/resources.md, Reading).
 * `holdAnswer` (stdio): the answer keeps its share of the read budget until it is written.
 */
export async function readResource(ctx: ServerContext, params: unknown, blobs?: AnswerBlobs, holdAnswer?: HoldAnswer, signal?: AbortSignal): Promise<{ contents: ContentItem[] }> {
  const uri = uriParam(params);
  const entry = await findEntry(ctx, uri);
  // The answer's bytes on the wire, within the process's read budget: base64's until read, then exactly.
  const bytes = wireBytes(entry.kind === EntryKind.collection ? DEFAULT_COLLECTION_LIMITS.childBytes : Math.min(entry.size, ctx.maxReadBytes));
  try {
    return await ctx.readBudget.run(bytes, async (share) => {
      if (holdAnswer) holdAnswer(share.hold());
      const contents = entry.kind === EntryKind.collection ? await readCollection(ctx, entry) : await readDocument(ctx, entry, blobs, share, signal);
      share.grow(contentsWireBytes(contents));
      return { contents };
    });
  } catch (error) {
    if (error instanceof ReadBusyError) throw new ProtocolError(ErrorCode.ServerBusy, error.message, { uri: entry.uri });
    throw error;
  }
}

export async function findEntry(ctx: ServerContext, uri: unknown): Promise<EntryRow> {
  const entry = await lookupEntry(uri, {
    store: ctx.index.store,
    roots: ctx.roots,
    followSymlinks: ctx.followSymlinks,
  });
  if (!entry) throw resourceNotFound(uri);
  return entry;
}

export function uriParam(params: unknown): string {
  const uri = (params as { uri?: unknown } | undefined)?.uri;
  if (typeof uri !== 'string') throw invalidParams('Invalid params: uri must be a string');
  return uri;
}

/** Answers of files over this size take a turn of the event loop each (ServerContext.largeAnswers). */
const LARGE_ANSWER_BYTES = 1024 * 1024;

/** What `contents` weigh on the wire: their text JSON-escaped, their base64 (resource fields are small, not counted). */
function contentsWireBytes(contents: readonly ContentItem[]): number {
  let bytes = 0;
  for (const item of contents) bytes += typeof item.text === 'string' ? jsonTextBytes(item.text) : typeof item.blob === 'string' ? item.blob.length : 0;
  return bytes;
}

/** `share`: the read's share of the budget, kept by a deferred blob until it is written. */
async function readDocument(ctx: ServerContext, entry: EntryRow, blobs?: AnswerBlobs, share?: ReadShare, signal?: AbortSignal): Promise<ContentItem[]> {
  const resource = toResource(entry, ctx.roots);
  let content;
  try {
    content = await readFileContent(uriToPath(entry.uri), ctx.maxReadBytes, ctx.roots);
  } catch (error) {
    throw contentErrorToProtocol(error, entry.uri);
  }
  // Over HTTP a large binary content is encoded as the answer is sent, a piece at a time (AnswerBlobs).
  const deferred = blobs !== undefined && content.text === undefined && content.bytes.length > DEFER_BLOB_BYTES;
  // Any other large answer waits for a turn of the event loop of its own: its encoding and its JSON are tens of
  // milliseconds that would otherwise run back to back with the next large one's, every other client waiting behind.
  if (!deferred && content.bytes.length > LARGE_ANSWER_BYTES) await ctx.largeAnswers.next();
  // Converted first: a deferred content's share of the read budget is let go when its answer is not taken within a
  // few seconds of the defer (answer-blobs.ts), and a conversion's time is not its client's.
  const alternatives = await ctx.convert(entry, content, signal);
  const primary: ContentItem =
    content.text !== undefined
      ? { ...resource, size: representationSize(content), text: content.text }
      : { ...resource, size: representationSize(content), blob: deferred ? blobs.defer(content.bytes, share?.hold()) : content.bytes.toString('base64') };
  return [primary, ...alternatives.map((alt) => ({ ...resource, ...alt }))];
}

/**
 * A collection's listing first, then its direct text children in URI order
 * within a byte and count budget. Incomplete by design: `resources/list` with
 * `uri` is the complete, paged view.
 */
async function readCollection(
  ctx: ServerContext,
  entry: EntryRow,
  limits: CollectionReadLimits = DEFAULT_COLLECTION_LIMITS,
): Promise<ContentItem[]> {
  const store = ctx.index.store;
  const children = store.children(entry.uri, '', limits.listingEntries + 1);
  const named = children.slice(0, limits.listingEntries);
  const more = children.length > named.length ? store.countChildren(entry.uri) - named.length : 0;
  const listing = formatListing(named, more);
  const items: ContentItem[] = [
    { ...toResource(entry, ctx.roots), text: listing },
  ];
  let bytes = 0;
  let count = 0;
  for (const child of named) {
    if (count >= limits.childCount) break;
    // A child over the remaining budget is skipped, not a stop: smaller ones after it still fit.
    if (child.kind !== EntryKind.document || child.size > limits.childBytes - bytes || !mayBeText(child.mime)) continue;
    let content;
    try {
      content = await readFileContent(uriToPath(child.uri), Math.min(ctx.maxReadBytes, limits.childBytes - bytes), ctx.roots);
    } catch {
      continue; // vanished, grew, or unreadable since indexing: it is simply not embedded
    }
    if (content.text === undefined) continue;
    items.push({ ...toResource(child, ctx.roots), size: representationSize(content), text: content.text });
    bytes += content.bytes.length;
    count++;
  }
  return items;
}

function contentErrorToProtocol(error: unknown, uri: string): Error {
  if (error instanceof ContentError) {
    if (error.reason === 'not-found') return resourceNotFound(uri);
    if (error.reason === 'too-large') return invalidParams(error.message, { uri, ...error.details });
    return internalError(error.message, { uri, ...error.details });
  }
  return error as Error;
}
