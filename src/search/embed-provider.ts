// The embedding model the user already runs, over HTTP: Ollama's
// POST {url}/api/embed or an OpenAI-compatible POST {url}/embeddings (LM
// Studio, llama.cpp's server, vLLM, OpenAI). Opt-in (--embed-url): file text
// is sent to that URL, so nothing here runs unless the user named one.
// Every way a provider can fail becomes one EmbedError, so that the caller
// logs it once, keeps the files queued and answers searches from text.

import type { EmbedApiChoice } from '../config.ts';
import { nestedDeeperThan } from '../json-depth.ts';

export type EmbedApi = EmbedApiChoice;

export interface EmbedOptions {
  url: string;
  model: string;
  api: EmbedApi;
  /** Bearer token (FOLDER_MCP_EMBED_KEY), sent only to `url`'s origin. */
  key?: string;
  /** One request's whole time, response body included. */
  timeoutMs: number;
  /** Until the answer's headers (default DEFAULT_CONNECT_TIMEOUT_MS, and never past timeoutMs). */
  connectTimeoutMs?: number;
  /** Largest answer body read (default MAX_RESPONSE_BYTES). */
  maxResponseBytes?: number;
}

/** Texts per request: bounded so that one request's body and answer stay small, and a slow model answers within the timeout. */
export const EMBED_BATCH = 16;
/**
 * Largest answer read, as a stream: past it the request is cancelled, so a
 * provider (or whatever answers at its address) that streams without end
 * costs this much memory and no more. A 4096-dimension float vector as JSON
 * is ~80 KiB; 16 of them are well under it.
 */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/** Longest vector taken: the largest models answer 4096 dimensions; the index keeps a byte per dimension per chunk. */
export const MAX_DIMENSION = 8192;
/** How long the provider may take to start answering (headers), whatever --embed-timeout-ms allows the whole. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** How much of an error answer's body is read, for the log line. */
const ERROR_BODY_BYTES = 1024;

/**
 * A provider's failure. `message` is for the log (it may quote the
 * provider's answer, on one line, 200 characters at most); `reason` is a
 * fixed short text, the only thing a model ever reads of it (search notes):
 * nothing a provider sends reaches the model.
 */
export class EmbedError extends Error {
  override name = 'EmbedError';
  constructor(
    message: string,
    readonly reason: string = 'the provider answered something unusable',
  ) {
    super(message);
  }
}

/**
 * Every vector of an answer has one length, not the one expected: the model
 * behind the name may have changed (embeddings.ts asks again to tell a
 * change from a fluke).
 */
export class DimensionError extends EmbedError {
  override name = 'DimensionError';
  constructor(
    readonly answered: number,
    readonly expected: number,
  ) {
    super(`vector of dimension ${answered}, expected ${expected}`, `vectors of dimension ${answered}, not ${expected}`);
  }
}

/** openai when the URL's path ends in /v1 (how OpenAI-compatible servers are named), else ollama. */
export function defaultEmbedApi(url: string): EmbedApi {
  const path = new URL(url).pathname.replace(/\/+$/, '');
  return path.endsWith('/v1') ? 'openai' : 'ollama';
}

/** The endpoint of `api` under `url` (its path kept: a proxy may serve the API under one). */
export function embedEndpoint(url: string, api: EmbedApi): URL {
  const base = new URL(url);
  base.pathname = base.pathname.replace(/\/+$/, '') + (api === 'ollama' ? '/api/embed' : '/embeddings');
  base.search = '';
  base.hash = '';
  return base;
}

export class EmbedProvider {
  private readonly endpoint: URL;

  constructor(private readonly options: EmbedOptions) {
    this.endpoint = embedEndpoint(options.url, options.api);
    if (this.endpoint.protocol !== 'http:' && this.endpoint.protocol !== 'https:') {
      throw new EmbedError(`--embed-url must be http or https, got ${this.endpoint.protocol}`, 'not an http or https URL');
    }
  }

  get model(): string {
    return this.options.model;
  }

  /** The endpoint's origin, for log lines (never the key). */
  get origin(): string {
    return this.endpoint.origin;
  }

  /**
   * One vector per text, in order, each of `dimension` finite numbers when
   * given (else of one common length). Throws EmbedError for anything else.
   */
  async embed(texts: string[], dimension?: number): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const body = JSON.stringify({ model: this.options.model, input: texts });
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.options.key) headers.authorization = `Bearer ${this.options.key}`;
    const { timeoutMs } = this.options;
    const connectMs = Math.min(this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, timeoutMs);
    const cap = Math.min(this.options.maxResponseBytes ?? MAX_RESPONSE_BYTES, answerBytesFor(texts.length));
    const abort = new AbortController();
    /** The limit that passed first, if one did; and whether the headers had come by then. */
    let late: number | null = null;
    let headersCame = false;
    const whole = setTimeout(() => ((late ??= timeoutMs), abort.abort()), timeoutMs);
    const connect = setTimeout(() => ((late ??= connectMs), abort.abort()), connectMs);
    let text: string;
    let response: Response;
    try {
      // Security: redirect 'error', so a provider (or whatever answers at its address) cannot
      // send file text, or the key, on to another origin.
      response = await fetch(this.endpoint, { method: 'POST', headers, body, redirect: 'error', signal: abort.signal });
      headersCame = true;
      clearTimeout(connect);
      if (!response.ok) {
        const start = await readBody(response, ERROR_BODY_BYTES, false, abort.signal);
        throw new EmbedError(`HTTP ${response.status}${start ? `: ${oneLine(start)}` : ''}`, `HTTP ${response.status}`);
      }
      text = await readBody(response, cap, true, abort.signal);
    } catch (error) {
      if (error instanceof EmbedError) throw error;
      const e = error as Error & { cause?: { code?: string; message?: string } };
      if (late !== null && !headersCame) throw new EmbedError(`no answer within ${late} ms`, 'no answer in time');
      if (late !== null) throw new EmbedError(`the answer took longer than ${timeoutMs} ms`, 'no answer in time');
      throw new EmbedError(`request failed: ${e.cause?.code ?? e.cause?.message ?? e.message}`, 'request failed (unreachable, refused or redirected)');
    } finally {
      clearTimeout(whole);
      clearTimeout(connect);
    }
    // An answer is an object holding arrays of numbers: a few levels. Millions of `[` under the cap cost JSON.parse
    // seconds of the event loop and most of a gigabyte (a red-team finding).
    if (nestedDeeperThan(text, MAX_ANSWER_DEPTH)) throw new EmbedError(`answer nested deeper than ${MAX_ANSWER_DEPTH} levels`, 'an answer that is not JSON');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new EmbedError('answer is not JSON', 'an answer that is not JSON');
    }
    const vectors = this.options.api === 'ollama' ? ollamaVectors(json) : openaiVectors(json, texts.length);
    return checkVectors(vectors, texts.length, dimension);
  }
}

/** Bytes a number of a vector may take in an answer's JSON (`-0.012345678901234567,` is 22). */
const ANSWER_BYTES_PER_VALUE = 32;
/** Levels of nesting an answer may have: Ollama's is 3 (`{"embeddings":[[`), OpenAI's 4. */
const MAX_ANSWER_DEPTH = 8;

/**
 * The largest answer taken for `texts` texts: their vectors at MAX_DIMENSION,
 * and room for the rest. 4.06 MiB for a batch of 16, 320 KiB for a query,
 * where one cap of 16 MiB for every request let a provider hand each search
 * 16 MiB to parse.
 */
export function answerBytesFor(texts: number): number {
  return 64 * 1024 + texts * MAX_DIMENSION * ANSWER_BYTES_PER_VALUE;
}

/**
 * An answer's body as text, read as a stream and never more than `cap`
 * bytes: past it the rest is cancelled unread, and (`strict`) the answer is
 * refused, or (for an error's body, read for the log only) cut there. Each
 * read also ends when `signal` aborts: on Node 20 a fetch's signal stopped
 * reaching its body once a GC had run after the headers came, and a
 * provider that sent its headers and then nothing held a search for ever
 * (16 of them, every request: the stdio transport reads no more than 16 at
 * once).
 */
async function readBody(response: Response, cap: number, strict: boolean, signal: AbortSignal): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (strict && Number.isFinite(declared) && declared > cap) {
    await response.body?.cancel().catch(() => {});
    throw new EmbedError(`answer of ${declared} bytes, more than the ${cap} read`, 'answer too large');
  }
  const reader = response.body?.getReader();
  if (!reader) return '';
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => {
      reject(signal.reason as Error);
      reader.cancel().catch(() => {});
    };
  });
  aborted.catch(() => {}); // an abort while no read waits is seen at the next one
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), aborted]);
      if (done) break;
      if (size + value.byteLength > cap) {
        await reader.cancel().catch(() => {});
        if (strict) throw new EmbedError(`answer of more than ${cap} bytes (cancelled there)`, 'answer too large');
        chunks.push(value.subarray(0, cap - size));
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function ollamaVectors(json: unknown): unknown[] {
  const embeddings = (json as { embeddings?: unknown } | null)?.embeddings;
  if (!Array.isArray(embeddings)) throw new EmbedError('answer has no "embeddings" array');
  return embeddings;
}

function openaiVectors(json: unknown, count: number): unknown[] {
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new EmbedError('answer has no "data" array');
  // The spec gives each item its index; servers may answer out of order. Each index once: fewer items, or one
  // index twice, left holes that no length check saw (a red-team finding: the embedder stopped for good).
  if (data.length !== count) throw new EmbedError(`answer has ${data.length} vectors for ${count} texts`, 'not one vector per text');
  const out: unknown[] = new Array<unknown>(count);
  const seen = new Set<number>();
  data.forEach((item: unknown, i) => {
    const index = (item as { index?: unknown })?.index;
    const at = typeof index === 'number' ? index : i;
    if (!Number.isInteger(at) || at < 0 || at >= count || seen.has(at)) throw new EmbedError(`answer has an item with index ${String(index)}`, 'not one vector per text');
    seen.add(at);
    out[at] = (item as { embedding?: unknown })?.embedding;
  });
  return out;
}

/** Validates the vectors of one answer (exported for its table test). */
export function checkVectors(vectors: unknown[], count: number, dimension?: number): Float32Array[] {
  if (vectors.length !== count) throw new EmbedError(`answer has ${vectors.length} vectors for ${count} texts`, 'not one vector per text');
  const first = Array.isArray(vectors[0]) ? vectors[0].length : 0;
  const want = dimension ?? first;
  if (want === 0) throw new EmbedError('answer has an empty or missing vector', 'an empty or missing vector');
  if (first > MAX_DIMENSION) throw new EmbedError(`vector of dimension ${first}, more than the ${MAX_DIMENSION} taken`, `vectors of more than ${MAX_DIMENSION} dimensions`);
  // Plain loops, not every() and map(): they skip an array's holes.
  let sameLength = first > 0;
  for (let k = 0; k < count; k++) sameLength &&= Array.isArray(vectors[k]) && (vectors[k] as unknown[]).length === first;
  if (first > 0 && first !== want && sameLength) throw new DimensionError(first, want);
  const out: Float32Array[] = [];
  for (let k = 0; k < count; k++) {
    const v = vectors[k];
    if (!Array.isArray(v)) throw new EmbedError('answer has a missing vector', 'an empty or missing vector');
    if (v.length !== want) throw new EmbedError(`vector of dimension ${v.length}, expected ${want}`, `vectors of dimension ${v.length}, not ${want}`);
    const vector = new Float32Array(want);
    for (let i = 0; i < want; i++) {
      const x: unknown = v[i];
      // As float32, which is what is kept: 1e39 is finite as a number and Infinity as a float32.
      if (typeof x !== 'number' || !Number.isFinite(Math.fround(x))) {
        throw new EmbedError('vector holds a value that is not a finite float32 number (NaN? past 3.4e38?)', 'a vector value that is not a finite number');
      }
      vector[i] = x;
    }
    out.push(vector);
  }
  return out;
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
