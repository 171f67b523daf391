// Meaning search's background work: the documents of the content index
// (search_docs, so exactly the files it reads: never an ignored, excluded or
// unreadable file, nor one over the search size limit) cut into chunks and
// embedded by the user's provider, a document at a time, its chunks' vectors
// written in one transaction. A chunk whose text is unchanged keeps its
// vector; a new model starts over. A failing provider is logged once per
// failure streak and retried with exponential back-off; the documents stay
// queued (they are simply not marked embedded).
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { getMeta, setMeta, type Db } from '../index/db.ts';
import type { Logger } from '../log.ts';
import { chunkText } from './chunks.ts';
import { DimensionError, EMBED_BATCH, EmbedError, type EmbedProvider } from './embed-provider.ts';
import { parsePlaces } from './search-reader.ts';
import { normalise, quantise } from './vectors.ts';

/** Requests of one document in flight at once: a local model serves one at a time anyway, and a remote one is not flooded. */
const MAX_IN_FLIGHT = 2;
/** Documents fetched per look at the queue. */
const QUEUE_BATCH = 16;
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 60_000;
/** A search that can do without the provider asks it again no sooner than this after a failure (or the back-off then, if longer). */
const QUERY_RETRY_MIN_MS = 10_000;
const PROGRESS_LOG_MS = 2000;
/** What is embedded to ask a model its dimension again (no file text). */
const PROBE_TEXT = 'folder-mcp dimension check';
const MODEL_KEY = 'embed_model';
const DIMENSION_KEY = 'embed_dimension';
/**
 * The next search_chunks id. Ids only grow, never reused (SQLite's rowid
 * takes max + 1, which reuses the ids of the last document removed): the
 * search thread keeps the vectors in memory and reads what was written
 * since by id (meaning-reader.ts).
 */
const NEXT_CHUNK_KEY = 'embed_next_chunk';

export interface MeaningStatus {
  /** Documents with text, and those of them whose chunks are current. */
  docs: number;
  embedded: number;
  /** Why the provider fails, in a fixed short text of ours (EmbedError.reason), while it keeps failing; null once it answers again. */
  failing: string | null;
}

interface QueuedDoc {
  id: number;
  mtime: number;
  size: number;
  places: string | null;
}

export class Embeddings {
  private closed = false;
  private wake: (() => void) | null = null;
  private dirty = true;
  private worker: Promise<void> | null = null;
  private dimension: number | undefined;
  private failing: string | null = null;
  private retryMs = RETRY_FIRST_MS;
  /** Until when a search that can do without the provider asks it nothing (see queryHold), and why. */
  private queryRetryAt = 0;
  private queryFailure: string | null = null;
  private readonly stmts;
  private idleWaiters: (() => void)[] = [];
  private isIdle = false;
  private readonly abort = new AbortController();
  /** The counts of status(), kept until something changes: a search asks for them, and they cost a scan of search_docs. */
  private counts: { docs: number; embedded: number } | null = null;
  /** A query's answer had another dimension than the index's (all its vectors alike): the worker asks the model again. */
  private suspect: number | null = null;

  constructor(
    private readonly db: Db,
    private readonly provider: EmbedProvider,
    private readonly log: Logger,
  ) {
    this.stmts = {
      queue: db.prepare(
        `SELECT d.id AS id, d.mtime AS mtime, d.size AS size, d.places AS places FROM search_docs d LEFT JOIN search_embedded e ON e.doc = d.id
         WHERE d.id > ? AND d.text = 1 AND (e.doc IS NULL OR e.mtime <> d.mtime OR e.size <> d.size) ORDER BY d.id LIMIT ${QUEUE_BATCH}`,
      ),
      body: db.prepare(`SELECT body FROM search_fts WHERE rowid = CAST(? AS INTEGER)`),
      doc: db.prepare(`SELECT mtime, size, text FROM search_docs WHERE id = ?`),
      chunks: db.prepare(`SELECT hash, scale, vec FROM search_chunks WHERE doc = ?`),
      deleteChunks: db.prepare(`DELETE FROM search_chunks WHERE doc = ?`),
      insertChunk: db.prepare(
        `INSERT INTO search_chunks (id, doc, start, length, line_start, line_end, place, hash, scale, vec) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      maxChunk: db.prepare(`SELECT max(id) AS n FROM search_chunks`),
      embedded: db.prepare(
        `INSERT INTO search_embedded (doc, mtime, size) VALUES (?, ?, ?) ON CONFLICT (doc) DO UPDATE SET mtime = excluded.mtime, size = excluded.size`,
      ),
      countDocs: db.prepare(`SELECT count(*) AS n FROM search_docs WHERE text = 1`),
      countEmbedded: db.prepare(
        `SELECT count(*) AS n FROM search_embedded e JOIN search_docs d ON d.id = e.doc WHERE d.text = 1 AND e.mtime = d.mtime AND e.size = d.size`,
      ),
    };
  }

  get model(): string {
    return this.provider.model;
  }

  /** Checks the model the index was embedded with (another one: everything is embedded again), then works in the background. */
  start(): void {
    if (this.worker) return;
    if (getMeta(this.db, MODEL_KEY) !== this.provider.model) this.startOver();
    this.log.info(`search by meaning: indexed text is sent to ${this.provider.origin} to be embedded with ${this.provider.model}`);
    const dim = Number(getMeta(this.db, DIMENSION_KEY));
    this.dimension = Number.isInteger(dim) && dim > 0 ? dim : undefined;
    this.worker = this.run().catch((error: unknown) => {
      if (!this.closed) this.log.error(`embeddings stopped: ${(error as Error).message}`);
    });
  }

  /** The content index wrote or removed a document: look at the queue again. */
  changed(): void {
    this.counts = null;
    this.dirty = true;
    this.isIdle = false;
    this.wake?.();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.abort.abort();
    this.wake?.();
    await this.worker;
    for (const done of this.idleWaiters.splice(0)) done();
  }

  status(): MeaningStatus {
    this.counts ??= {
      docs: (this.stmts.countDocs.get() as { n: number }).n,
      embedded: (this.stmts.countEmbedded.get() as { n: number }).n,
    };
    return { ...this.counts, failing: this.failing };
  }

  /**
   * The query's vector, unit length, in the dimension of the index's. Throws
   * EmbedError; when the answer has another dimension, the background worker
   * checks whether the model changed (then everything is embedded again).
   */
  async embedQuery(text: string): Promise<Float32Array> {
    let vector: Float32Array;
    try {
      [vector] = (await this.provider.embed([text], this.dimension)) as [Float32Array];
      // All zeros scores every passage 0: the ranking would be the scan's order, shown as hits (a red-team finding).
      if (vector.every((x) => x === 0)) throw new EmbedError("the query's vector is all zeros", 'an unusable vector');
    } catch (error) {
      if (error instanceof DimensionError && error.expected === this.dimension) {
        // Another model under the name, maybe: checked and embedded again, not a failure to wait out.
        this.suspect = error.answered;
        this.changed();
      } else if (error instanceof EmbedError) this.holdQueries(error.reason, QUERY_RETRY_MIN_MS);
      throw error;
    }
    this.queryRetryAt = 0;
    this.queryFailure = null;
    return normalise(vector);
  }

  /**
   * Why a search that can do without meaning (hybrid) should not ask the
   * provider for its query's vector now, or null to ask it: not for 10 s (or
   * the back-off then, if longer) after a document's or a query's failure.
   * Each ask had waited up to the timeout (30 s by default) before the answer
   * came from text (a red-team finding); asked again after, a provider back
   * up is found by a search too, not only by a document to embed (there may
   * be none).
   */
  queryHold(now = performance.now()): string | null {
    if (now >= this.queryRetryAt) return null;
    return this.failing ?? this.queryFailure;
  }

  private holdQueries(reason: string, ms: number): void {
    this.queryFailure = reason;
    this.queryRetryAt = performance.now() + ms;
  }

  /**
   * Resolves true once every document is embedded, false after `timeoutMs`
   * or as soon as the provider fails (or on close); `onProgress` is called
   * every `everyMs` meanwhile (a search waiting on a small folder's
   * embeddings, telling its client how far they got).
   */
  async whenEmbedded(timeoutMs: number, everyMs: number, onProgress: (status: MeaningStatus) => void): Promise<boolean> {
    const caughtUp = () => {
      const s = this.status();
      return s.embedded >= s.docs;
    };
    const deadline = performance.now() + timeoutMs;
    while (!this.closed && this.failing === null && !caughtUp() && performance.now() < deadline) {
      onProgress(this.status());
      // Idle and still short (nothing left it can embed): waiting longer would not help.
      if (this.isIdle) break;
      const wait = Math.min(everyMs, deadline - performance.now());
      await Promise.race([this.idle(), sleep(Math.max(0, wait))]);
    }
    return caughtUp();
  }

  /** Resolves when the queue is empty (for tests and benchmarks); content index writes after it start a new round. */
  idle(): Promise<void> {
    if (this.isIdle || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async run(): Promise<void> {
    let after = 0;
    let roundStart = performance.now();
    let roundDocs = 0;
    let roundChunks = 0;
    let lastLog = performance.now();
    while (!this.closed) {
      if (this.suspect !== null) {
        const answered = this.suspect;
        this.suspect = null;
        const checked = await this.checkDimension(answered);
        if (checked === 'changed') after = 0;
        else if (checked !== 'same' && !this.closed) {
          this.fail(checked);
          await this.waitToRetry();
        }
        continue;
      }
      if (this.dirty && after === 0) this.dirty = false;
      const docs = this.stmts.queue.all(after) as QueuedDoc[];
      if (docs.length === 0) {
        if (after > 0) {
          after = 0;
          continue;
        }
        if (roundDocs > 0) {
          const { docs: total, embedded } = this.status();
          this.log.info(
            `embeddings: ${roundDocs} documents (${roundChunks} chunks) embedded in ${Math.round(performance.now() - roundStart)} ms with ${this.provider.model}` +
              ` (dimension ${this.dimension ?? '?'}); ${embedded} of ${total} documents searchable by meaning`,
          );
        }
        roundDocs = 0;
        roundChunks = 0;
        if (!this.dirty) {
          this.isIdle = true;
          for (const done of this.idleWaiters.splice(0)) done();
          await new Promise<void>((resolve) => (this.wake = resolve));
          this.wake = null;
        }
        roundStart = performance.now();
        continue;
      }
      for (const doc of docs) {
        if (this.closed) return;
        try {
          roundChunks += await this.embedDoc(doc);
          roundDocs++;
          after = doc.id;
        } catch (error) {
          if (this.closed) return;
          after = 0;
          // Anything else too is a failure to wait out, not the end of the embedder: a TypeError from an answer no
          // check foresaw stopped it for good, and every search by meaning then waited its whole --search-wait-ms.
          let failure = error instanceof EmbedError ? { message: error.message, reason: error.reason } : unexpected(error);
          if (error instanceof DimensionError && error.expected === this.dimension) {
            const checked = await this.checkDimension(error.answered);
            if (checked === 'changed') break;
            if (checked !== 'same') failure = checked;
          }
          if (this.closed) return;
          this.fail(failure);
          await this.waitToRetry();
          break;
        }
        if (this.failing !== null) {
          this.log.info(`embeddings: ${this.provider.origin} answers again`);
          this.failing = null;
          this.retryMs = RETRY_FIRST_MS;
          this.queryRetryAt = 0;
        }
        if (performance.now() - lastLog >= PROGRESS_LOG_MS) {
          lastLog = performance.now();
          const { docs: total, embedded } = this.status();
          this.log.info(`embeddings: ${embedded} of ${total} documents embedded`);
        }
      }
    }
  }

  /**
   * An answer had dimension `answered`, not the index's: asks the model once
   * more. The same answer again means the model behind the name changed (its
   * vectors cannot be compared with the index's): everything is embedded
   * again, as for another model ('changed'). The index's dimension this time
   * is a passing fluke ('same'); anything else, a failing provider (the
   * message to log).
   */
  private async checkDimension(answered: number): Promise<'changed' | 'same' | { message: string; reason: string }> {
    const held = this.dimension;
    let again: number;
    try {
      const [probe] = await this.provider.embed([PROBE_TEXT]);
      again = probe!.length;
    } catch (error) {
      // As in run(): whatever failed is a failure to wait out, never the end of the embedder.
      return error instanceof EmbedError ? { message: error.message, reason: error.reason } : unexpected(error);
    }
    if (this.closed || held !== this.dimension || again === held) return 'same';
    if (again !== answered) {
      const message = `the model answers vectors of dimension ${answered}, then ${again} (the index holds ${held})`;
      return { message, reason: message };
    }
    this.log.warn(
      `embeddings: ${this.provider.model} now answers vectors of dimension ${answered}, the index holds ${held}: another model under the same name; every document is embedded again`,
    );
    this.startOver();
    return 'changed';
  }

  /** Drops every vector (another model, or another dimension): everything is embedded again. */
  private startOver(): void {
    this.db.transaction(() => {
      this.db.exec(`DELETE FROM search_chunks; DELETE FROM search_embedded; DELETE FROM meta WHERE key = '${DIMENSION_KEY}'`);
      setMeta(this.db, MODEL_KEY, this.provider.model);
    })();
    this.dimension = undefined;
    this.counts = null;
    this.dirty = true;
    this.isIdle = false;
  }

  /**
   * `message` goes to the log (the operator's); `reason`, a fixed short text
   * of ours, is what status() tells, and so what a search note tells a model:
   * nothing the provider sent.
   */
  private fail({ message, reason }: { message: string; reason: string }): void {
    // One line per failure streak: a provider that stays down must not fill the log.
    if (this.failing === null) {
      this.log.warn(
        `embeddings: ${this.provider.origin} failed: ${message}; search by meaning is unavailable until it answers (retrying with back-off, text search unaffected)`,
      );
    } else this.log.debug(`embeddings: still failing: ${message}`);
    this.failing = reason;
    this.holdQueries(reason, Math.max(QUERY_RETRY_MIN_MS, this.retryMs));
  }

  private async waitToRetry(): Promise<void> {
    const ms = this.retryMs;
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    try {
      await sleep(ms, undefined, { signal: this.abort.signal });
    } catch {
      // closed
    }
  }

  /** Embeds one document's chunks (those whose text is new) and writes them; returns the chunks embedded. */
  private async embedDoc(doc: QueuedDoc): Promise<number> {
    const row = this.stmts.body.get(doc.id) as { body: string } | undefined;
    const chunks = row ? chunkText(row.body, doc.places ? parsePlaces(doc.places) : []) : [];
    const hashes = chunks.map((c) => createHash('sha256').update(c.text).digest('base64'));
    const known = new Map<string, { scale: number; vec: Uint8Array }>();
    for (const c of this.stmts.chunks.all(doc.id) as { hash: string; scale: number; vec: Uint8Array }[]) {
      // A vector of another length is never reused: it would stay unsearchable until its text changed.
      if (this.dimension === undefined || c.vec.byteLength === this.dimension) known.set(c.hash, c);
    }
    const missing = [...new Set(hashes.filter((h) => !known.has(h)))];
    const textOf = new Map(hashes.map((h, i) => [h, chunks[i]!.text]));
    const fresh = new Map<string, { scale: number; vec: Uint8Array }>();
    const batches: string[][] = [];
    for (let i = 0; i < missing.length; i += EMBED_BATCH) batches.push(missing.slice(i, i + EMBED_BATCH));
    for (let i = 0; i < batches.length; i += MAX_IN_FLIGHT) {
      const group = batches.slice(i, i + MAX_IN_FLIGHT);
      const answers = await Promise.all(group.map((batch) => this.provider.embed(batch.map((h) => textOf.get(h)!), this.dimension)));
      if (this.closed) return 0;
      // Requests sent at once before the dimension was known are each checked against nothing: one length for all,
      // or none is kept (a provider answering 64 and 128 at once put both in the index, the 128s never searched).
      const lengths = new Set(answers.flatMap((vectors) => vectors.map((v) => v.length)));
      if (lengths.size > 1) throw new EmbedError(`answers of ${[...lengths].join(' and ')} dimensions at once`, 'vectors of different dimensions');
      group.forEach((batch, b) =>
        batch.forEach((hash, j) => {
          const vector = answers[b]![j]!;
          if (this.dimension === undefined) {
            this.dimension = vector.length;
            setMeta(this.db, DIMENSION_KEY, String(vector.length));
          }
          const q = quantise(vector);
          fresh.set(hash, { scale: q.scale, vec: new Uint8Array(q.bytes.buffer, q.bytes.byteOffset, q.bytes.length) });
        }),
      );
    }
    // The document may have changed while its chunks were embedded: then it is queued again, and this is dropped.
    const now = this.stmts.doc.get(doc.id) as { mtime: number; size: number; text: number } | undefined;
    if (!now || now.mtime !== doc.mtime || now.size !== doc.size || now.text !== 1) return 0;
    this.db.transaction(() => {
      this.stmts.deleteChunks.run(doc.id);
      const max = (this.stmts.maxChunk.get() as { n: number | null }).n ?? 0;
      let next = Math.max(max + 1, Number(getMeta(this.db, NEXT_CHUNK_KEY) ?? 0) || 0);
      chunks.forEach((c, i) => {
        const v = fresh.get(hashes[i]!) ?? known.get(hashes[i]!)!;
        const place = c.place ? JSON.stringify(c.place.name !== undefined ? [c.place.unit, c.place.number, c.place.name] : [c.place.unit, c.place.number]) : null;
        this.stmts.insertChunk.run(next++, doc.id, c.offset, c.text.length, c.lineStart, c.lineEnd, place, hashes[i]!, v.scale, v.vec);
      });
      setMeta(this.db, NEXT_CHUNK_KEY, String(next));
      this.stmts.embedded.run(doc.id, doc.mtime, doc.size);
    })();
    this.counts = null;
    return missing.length;
  }
}

/** A failure that is no EmbedError (a bug, or an answer no check foresaw), as run() reports one: the reason a model reads is ours. */
function unexpected(error: unknown): { message: string; reason: string } {
  return { message: `unexpected: ${(error as Error)?.message ?? String(error)}`, reason: 'an unexpected error' };
}
