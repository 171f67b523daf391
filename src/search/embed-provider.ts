// The embedding model the user already runs, over HTTP: Ollama's
// POST {url}/api/embed or an OpenAI-compatible POST {url}/embeddings (LM
// Studio, llama.cpp's server, vLLM, OpenAI). Opt-in (--embed-url): file text
// is sent to that URL, so nothing here runs unless the user named one.
// Every way a provider can fail becomes one EmbedError, so that the caller
// logs it once, keeps the files queued and answers searches from text.

import type { EmbedApiChoice } from '../config.ts';

export type EmbedApi = EmbedApiChoice;

export interface EmbedOptions {
  url: string;
  model: string;
  api: EmbedApi;
  /** Bearer token (FOLDER_MCP_EMBED_KEY), sent only to `url`'s origin. */
  key?: string;
  /** One request's whole time, response body included. */
  timeoutMs: number;
}

/** Texts per request: bounded so that one request's body and answer stay small, and a slow model answers within the timeout. */
export const EMBED_BATCH = 16;
/** Largest answer read (a 4096-dimension float vector as JSON is ~80 KiB; 16 of them well under this). */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

export class EmbedError extends Error {
  override name = 'EmbedError';
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
    super(`vector of dimension ${answered}, expected ${expected}`);
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
      throw new EmbedError(`--embed-url must be http or https, got ${this.endpoint.protocol}`);
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
    let response: Response;
    let text: string;
    try {
      // Security: redirect 'error', so a provider (or whatever answers at its address) cannot
      // send file text, or the key, on to another origin.
      response = await fetch(this.endpoint, {
        method: 'POST',
        headers,
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      const e = error as Error & { cause?: { code?: string; message?: string } };
      if (e.name === 'TimeoutError' || e.name === 'AbortError') throw new EmbedError(`no answer within ${this.options.timeoutMs} ms`);
      throw new EmbedError(`request failed: ${e.cause?.code ?? e.cause?.message ?? e.message}`);
    }
    if (!response.ok) throw new EmbedError(`HTTP ${response.status}${text ? `: ${oneLine(text)}` : ''}`);
    if (text.length > MAX_RESPONSE_BYTES) throw new EmbedError('answer too large');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new EmbedError('answer is not JSON');
    }
    const vectors = this.options.api === 'ollama' ? ollamaVectors(json) : openaiVectors(json, texts.length);
    return checkVectors(vectors, texts.length, dimension);
  }
}

function ollamaVectors(json: unknown): unknown[] {
  const embeddings = (json as { embeddings?: unknown } | null)?.embeddings;
  if (!Array.isArray(embeddings)) throw new EmbedError('answer has no "embeddings" array');
  return embeddings;
}

function openaiVectors(json: unknown, count: number): unknown[] {
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new EmbedError('answer has no "data" array');
  // The spec gives each item its index; servers may answer out of order.
  const out: unknown[] = new Array<unknown>(count);
  data.forEach((item: unknown, i) => {
    const index = (item as { index?: unknown })?.index;
    const at = typeof index === 'number' ? index : i;
    if (!Number.isInteger(at) || at < 0 || at >= count) throw new EmbedError(`answer has an item with index ${String(index)}`);
    out[at] = (item as { embedding?: unknown })?.embedding;
  });
  return out;
}

/** Validates the vectors of one answer (exported for its table test). */
export function checkVectors(vectors: unknown[], count: number, dimension?: number): Float32Array[] {
  if (vectors.length !== count) throw new EmbedError(`answer has ${vectors.length} vectors for ${count} texts`);
  const first = Array.isArray(vectors[0]) ? vectors[0].length : 0;
  const want = dimension ?? first;
  if (want === 0) throw new EmbedError('answer has an empty or missing vector');
  if (first > 0 && first !== want && vectors.every((v) => Array.isArray(v) && v.length === first)) throw new DimensionError(first, want);
  return vectors.map((v) => {
    if (!Array.isArray(v)) throw new EmbedError('answer has a missing vector');
    if (v.length !== want) throw new EmbedError(`vector of dimension ${v.length}, expected ${want}`);
    const out = new Float32Array(want);
    for (let i = 0; i < want; i++) {
      const x: unknown = v[i];
      if (typeof x !== 'number' || !Number.isFinite(x)) throw new EmbedError('vector holds a value that is not a finite number (NaN?)');
      out[i] = x;
    }
    return out;
  });
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
