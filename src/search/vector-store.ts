// Every stored vector of meaning search, in memory, as one contiguous int8
// array in WebAssembly memory (a chunk's vector at slot i is bytes
// [i * padded, (i + 1) * padded)), scanned whole for each query by the SIMD
// kernel of dot-kernel.ts, then the best documents re-ranked exactly. A
// document's chunks occupy consecutive slots; writing a document again marks
// its old slots dead and appends, and the array is compacted once a quarter
// of it is dead. Pure: it knows nothing of SQLite (meaning-reader.ts keeps it
// in step with the index). At 100k chunks of 768 dimensions: 77 MB of
// vectors plus 16 bytes a chunk.
import { DOT_LANES, dotKernel, wasmMemory, type DotFunction, type WasmMemory } from './dot-kernel.ts';
import { cosineInt8 } from './vectors.ts';

/** Vectors per kernel call: the dots of a block land in a scratch area of this many int32. */
const BLOCK = 4096;
const PAGE = 65536;
/** Slots at first; the capacity doubles as it fills. */
const FIRST_CAPACITY = 1024;
/** WebAssembly memory is at most 65536 pages (4 GiB) on 32-bit addressing. */
const MAX_PAGES = 65536;

/** A chunk as loaded: its id in search_chunks and its vector's bytes (one signed byte per dimension). */
export interface StoredChunk {
  id: number;
  bytes: Int8Array;
}

/** A document's nearest chunk, by exact cosine of the query and its stored bytes. */
export interface Nearest {
  doc: number;
  chunk: number;
  score: number;
}

export class VectorStore {
  /** Bytes per slot: the dimension rounded up to the kernel's step, zero-padded. */
  readonly padded: number;
  private readonly memory: WasmMemory;
  private readonly dots: DotFunction;
  private readonly queryAt = 0;
  private readonly outAt: number;
  private readonly base: number;
  private capacity = 0;
  /** Slots used, dead ones included. */
  private used = 0;
  private deadSlots = 0;
  private slotDoc = new Int32Array(0);
  private slotChunk = new Float64Array(0);
  /** 1 / |bytes| of each slot (0 for a zero vector): cosine = dot * this, the query being unit length. */
  private slotInvNorm = new Float32Array(0);
  /** Each document's slots: [first, end). */
  private readonly runs = new Map<number, { first: number; end: number }>();

  constructor(readonly dimension: number) {
    if (!Number.isInteger(dimension) || dimension <= 0) throw new RangeError(`dimension ${dimension}`);
    this.padded = Math.ceil(dimension / DOT_LANES) * DOT_LANES;
    this.outAt = align(this.padded * 2, 64);
    this.base = align(this.outAt + BLOCK * 4, 64);
    this.memory = wasmMemory(Math.ceil((this.base + FIRST_CAPACITY * this.padded) / PAGE), MAX_PAGES);
    this.dots = dotKernel(this.memory);
    this.grow(FIRST_CAPACITY);
  }

  /** Chunks held (live ones). */
  get size(): number {
    return this.used - this.deadSlots;
  }

  get documents(): number {
    return this.runs.size;
  }

  /** Bytes held: the WebAssembly memory and the per-slot arrays. */
  get bytes(): number {
    return this.memory.buffer.byteLength + this.capacity * (4 + 8 + 4);
  }

  has(doc: number): boolean {
    return this.runs.has(doc);
  }

  /** The documents held, for a comparison with the index. */
  docs(): IterableIterator<number> {
    return this.runs.keys();
  }

  /** Sets `doc`'s chunks, replacing any it had. Vectors of another length are skipped. */
  put(doc: number, chunks: readonly StoredChunk[]): void {
    this.remove(doc);
    const kept = chunks.filter((c) => c.bytes.length === this.dimension);
    if (kept.length === 0) return;
    if (this.used + kept.length > this.capacity) this.grow(this.used + kept.length);
    const heap = new Int8Array(this.memory.buffer);
    const first = this.used;
    for (const c of kept) {
      const at = this.base + this.used * this.padded;
      heap.set(c.bytes, at);
      let sum = 0;
      for (let i = 0; i < c.bytes.length; i++) sum += c.bytes[i]! * c.bytes[i]!;
      this.slotDoc[this.used] = doc;
      this.slotChunk[this.used] = c.id;
      this.slotInvNorm[this.used] = sum === 0 ? 0 : 1 / Math.sqrt(sum);
      this.used++;
    }
    this.runs.set(doc, { first, end: this.used });
  }

  remove(doc: number): void {
    const run = this.runs.get(doc);
    if (!run) return;
    this.runs.delete(doc);
    this.slotDoc.fill(-1, run.first, run.end);
    this.deadSlots += run.end - run.first;
    if (this.deadSlots > 1024 && this.deadSlots * 4 > this.used) this.compact();
  }

  /**
   * The `k` documents nearest `unitQuery` (unit length, `dimension` long),
   * best first, among those `allowed` admits (null: all). The whole array is
   * scanned with an int16 copy of the query (ranking errors of ~1e-4);
   * the best documents, with some to spare, are then scored exactly (float
   * query, stored bytes), each by its best chunk.
   */
  nearest(unitQuery: Float32Array, k: number, allowed: ((doc: number) => boolean) | null = null): Nearest[] {
    if (unitQuery.length !== this.dimension || k <= 0 || this.runs.size === 0) return [];
    this.writeQuery(unitQuery);
    const pool = Math.min(this.runs.size, k + Math.max(16, k));
    // A bounded min-heap of (score, doc) over each document's best approximate score.
    const heapScore = new Float64Array(pool);
    const heapDoc = new Float64Array(pool);
    let heapSize = 0;
    const out = new Int32Array(this.memory.buffer, this.outAt, BLOCK);
    let runDoc = -1;
    let runBest = -Infinity;
    let runAllowed = false;
    const offer = (doc: number, score: number) => {
      if (heapSize < pool) {
        let i = heapSize++;
        while (i > 0) {
          const parent = (i - 1) >> 1;
          if (heapScore[parent]! <= score) break;
          heapScore[i] = heapScore[parent]!;
          heapDoc[i] = heapDoc[parent]!;
          i = parent;
        }
        heapScore[i] = score;
        heapDoc[i] = doc;
      } else if (score > heapScore[0]!) {
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          if (l >= heapSize) break;
          const c = l + 1 < heapSize && heapScore[l + 1]! < heapScore[l]! ? l + 1 : l;
          if (heapScore[c]! >= score) break;
          heapScore[i] = heapScore[c]!;
          heapDoc[i] = heapDoc[c]!;
          i = c;
        }
        heapScore[i] = score;
        heapDoc[i] = doc;
      }
    };
    for (let start = 0; start < this.used; start += BLOCK) {
      const n = Math.min(BLOCK, this.used - start);
      this.dots(this.base + start * this.padded, n, this.padded, this.queryAt, this.outAt);
      for (let j = 0; j < n; j++) {
        const slot = start + j;
        const doc = this.slotDoc[slot]!;
        if (doc < 0) continue;
        if (doc !== runDoc) {
          if (runAllowed) offer(runDoc, runBest);
          runDoc = doc;
          runBest = -Infinity;
          runAllowed = allowed === null || allowed(doc);
        }
        if (!runAllowed) continue;
        const score = out[j]! * this.slotInvNorm[slot]!;
        if (score > runBest) runBest = score;
      }
    }
    if (runAllowed) offer(runDoc, runBest);
    const found: Nearest[] = [];
    const heap = new Int8Array(this.memory.buffer);
    for (let h = 0; h < heapSize; h++) {
      const doc = heapDoc[h]!;
      const run = this.runs.get(doc)!;
      let best: Nearest = { doc, chunk: -1, score: -Infinity };
      for (let slot = run.first; slot < run.end; slot++) {
        const at = this.base + slot * this.padded;
        const score = cosineInt8(unitQuery, heap.subarray(at, at + this.dimension));
        if (score > best.score) best = { doc, chunk: this.slotChunk[slot]!, score };
      }
      found.push(best);
    }
    return found.sort((a, b) => b.score - a.score || a.doc - b.doc).slice(0, k);
  }

  /** The query as the kernel reads it: int16, scaled so that no sum of products can overflow int32. */
  private writeQuery(unitQuery: Float32Array): void {
    let max = 0;
    for (let i = 0; i < unitQuery.length; i++) max = Math.max(max, Math.abs(unitQuery[i]!));
    const limit = Math.min(32767, Math.floor(0x7fffffff / (127 * this.padded)));
    const scale = max === 0 ? 0 : limit / max;
    const q = new Int16Array(this.memory.buffer, this.queryAt, this.padded);
    q.fill(0);
    for (let i = 0; i < unitQuery.length; i++) q[i] = Math.round(unitQuery[i]! * scale);
  }

  private grow(slots: number): void {
    let capacity = Math.max(this.capacity, FIRST_CAPACITY);
    while (capacity < slots) capacity *= 2;
    const pages = Math.ceil((this.base + capacity * this.padded) / PAGE);
    const have = this.memory.buffer.byteLength / PAGE;
    if (pages > MAX_PAGES) throw new RangeError(`meaning search: ${capacity} vectors of ${this.dimension} dimensions exceed 4 GiB`);
    if (pages > have) this.memory.grow(pages - have);
    this.slotDoc = resized(this.slotDoc, capacity, Int32Array);
    this.slotChunk = resized(this.slotChunk, capacity, Float64Array);
    this.slotInvNorm = resized(this.slotInvNorm, capacity, Float32Array);
    this.capacity = capacity;
  }

  /** Moves the live slots down over the dead ones, keeping each document's slots together. */
  private compact(): void {
    const heap = new Int8Array(this.memory.buffer);
    let to = 0;
    for (let from = 0; from < this.used; ) {
      const doc = this.slotDoc[from]!;
      if (doc < 0) {
        from++;
        continue;
      }
      const run = this.runs.get(doc)!;
      const length = run.end - run.first;
      if (to !== run.first) {
        heap.copyWithin(this.base + to * this.padded, this.base + run.first * this.padded, this.base + run.end * this.padded);
        this.slotDoc.copyWithin(to, run.first, run.end);
        this.slotChunk.copyWithin(to, run.first, run.end);
        this.slotInvNorm.copyWithin(to, run.first, run.end);
      }
      this.runs.set(doc, { first: to, end: to + length });
      to += length;
      from = run.end;
    }
    this.used = to;
    this.deadSlots = 0;
  }
}

function align(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}

function resized<T extends Int32Array | Float64Array | Float32Array>(a: T, length: number, make: new (n: number) => T): T {
  const out = new make(length);
  out.set(a.subarray(0, Math.min(a.length, length)) as never);
  return out;
}
