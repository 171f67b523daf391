// A real embedding provider for the tests: node:http on 127.0.0.1:0 speaking
// both APIs folder-mcp calls (Ollama's POST /api/embed, OpenAI's POST
// /v1/embeddings), with a small deterministic embedder the tests own: each
// word of a synonym group adds to its group's dimension, any other word to a
// hashed one, so "expired" is near "lifetime" and near nothing else. Its
// `mode` turns it into each bad provider of issue 35.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const TEST_DIMENSION = 64;
const SYNONYMS = [
  ['expired', 'expiry', 'lifetime', 'stale'],
  ['automobile', 'car', 'vehicle'],
  ['invoice', 'bill', 'receipt'],
  ['forecast', 'prediction', 'outlook'],
];
const GROUP_OF = new Map(SYNONYMS.flatMap((group, i) => group.map((w) => [w, i])));

/** The test embedder: synonym groups share a dimension, other words hash into the rest; unit length. */
export function testEmbedding(text: string, dimension = TEST_DIMENSION): number[] {
  const v = new Array<number>(dimension).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const group = GROUP_OF.get(word);
    if (group !== undefined) v[group]! += 1;
    else {
      let h = 2166136261;
      for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619) >>> 0;
      v[SYNONYMS.length + (h % (dimension - SYNONYMS.length))]! += 0.5;
    }
  }
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}

/**
 * How the server answers: `ok`; `slow` (past any timeout the tests give);
 * `delayed` (ok, after `delayMs`); `wrong-dimension` (ok, every vector of
 * dimension 32: another model under the same name); `unstable-dimension`
 * (each answer of another dimension than the one before, never 64: a broken
 * model); `http-500`; `model-not-found` (Ollama's 404 for a model not
 * pulled); `nan`; `past-float32` (a value of 1e39: a finite number, and
 * Infinity as a float32); `zero` (every vector all zeros); `redirect` (to
 * `redirectTo`, another origin).
 */
export type EmbedServerMode =
  | 'ok'
  | 'slow'
  | 'delayed'
  | 'wrong-dimension'
  | 'unstable-dimension'
  | 'http-500'
  | 'model-not-found'
  | 'nan'
  | 'past-float32'
  | 'zero'
  | 'redirect';

export interface EmbedServer {
  /** Base URL for --embed-url: `${origin}` (Ollama) or `${origin}/v1` (OpenAI). */
  readonly origin: string;
  mode: EmbedServerMode;
  /** Where `redirect` sends the client (another origin). */
  redirectTo: string;
  /** How long `delayed` waits before it answers. */
  delayMs: number;
  /** Every text asked to embed, in order. */
  readonly texts: string[];
  /** Requests answered, and the Authorization headers seen. */
  readonly requests: { api: 'ollama' | 'openai'; authorization: string | undefined }[];
  close(): Promise<void>;
}

/**
 * `dimension`: of the vectors answered (a benchmark asks for a real model's,
 * 768); `record`: keep every text asked (false for a benchmark's 100k chunks).
 */
export async function startEmbedServer(options: { dimension?: number; record?: boolean } = {}): Promise<EmbedServer> {
  const state: EmbedServer & { dimension: number; record: boolean } = {
    dimension: options.dimension ?? TEST_DIMENSION,
    record: options.record ?? true,
    origin: '',
    mode: 'ok',
    redirectTo: 'http://127.0.0.1:9/elsewhere',
    delayMs: 300,
    texts: [],
    requests: [],
    close: async () => {},
  };
  const server: Server = createServer((req, res) => void handle(state, req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(state, {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return state;
}

/** A server that counts what reaches it and answers nothing useful: the target of a redirect. */
export async function startCountingServer(): Promise<{ origin: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    hits: () => hits,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** A port nothing listens on (bound, then closed): a provider that is down. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The dimension of `unstable-dimension`'s next answer: 16, 17, ... 63, 65, ... 127, 16, ...: never twice the same in a row, never 64. */
let unstable = 15;
function nextUnstableDimension(): number {
  unstable = unstable >= 127 ? 16 : unstable + 1;
  if (unstable === TEST_DIMENSION) unstable++;
  return unstable;
}

async function handle(state: EmbedServer, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const api = req.url === '/api/embed' ? 'ollama' : req.url === '/v1/embeddings' ? 'openai' : null;
  if (req.method !== 'POST' || api === null) {
    res.writeHead(404).end('not found');
    return;
  }
  let body: { model?: unknown; input?: unknown };
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
  } catch {
    res.writeHead(400).end('bad json');
    return;
  }
  const input = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? (body.input as string[]) : [];
  const own = state as EmbedServer & { dimension: number; record: boolean };
  if (own.record) {
    state.requests.push({ api, authorization: req.headers.authorization });
    state.texts.push(...input);
  }
  switch (state.mode) {
    case 'http-500':
      res.writeHead(500, { 'content-type': 'text/plain' }).end('model crashed');
      return;
    case 'model-not-found':
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `model "${String(body.model)}" not found, try pulling it first` }));
      return;
    case 'delayed':
      await new Promise((r) => setTimeout(r, state.delayMs).unref());
      break;
    case 'redirect':
      res.writeHead(307, { location: state.redirectTo }).end();
      return;
    case 'slow':
      // Longer than any timeout the tests give; the client gives up first, and close() ends it.
      await new Promise((r) => setTimeout(r, 30_000).unref());
      if (!res.writableEnded) res.writeHead(500).end();
      return;
    default:
  }
  const dimension = state.mode === 'wrong-dimension' ? own.dimension / 2 : state.mode === 'unstable-dimension' ? nextUnstableDimension() : own.dimension;
  const vectors = input.map((text) => {
    const v = testEmbedding(text, dimension);
    if (state.mode === 'nan') v[0] = NaN; // JSON has no NaN: it goes out as null, as a broken model's would
    if (state.mode === 'past-float32') v[0] = 1e39;
    return state.mode === 'zero' ? v.map(() => 0) : v;
  });
  const answer = api === 'ollama' ? { model: body.model, embeddings: vectors } : { object: 'list', model: body.model, data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })).reverse() };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
}
