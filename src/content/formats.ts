import { succ } from '../keys.ts';
import { EntryKind, type EntryRow, type IndexChange } from '../entry.ts';
import type { Logger } from '../log.ts';
import { CONVERTERS, convertersByName, convertersFor } from './converters/index.ts';
import {
  ConversionError,
  ConversionUnavailable,
  DEFAULT_CONVERSION_LIMITS,
  type ConversionLimits,
  type Converter,
  type ConvertInput,
  type LocatedText,
} from './converters/types.ts';
import { builtScriptUrl } from '../workers.ts';
import type { Database, Statement } from '../sqlite.ts';
import { ConversionWorker } from './isolate.ts';
import type { FileContent } from './read.ts';

type Db = Database;

/** A format alternative of a document (SEP-2093): same uri, another representation. */
export type Alternative = { mimeType: string; size: number } & ({ text: string } | { blob: string });

/** The version of the file a conversion was made from: a changed mtime or size is a changed file. */
export interface FileVersion {
  uri: string;
  mtime: number;
  size: number;
}

/** One cached outcome: the alternative, or the reason it was left out (warned about once). */
export type CachedConversion = { alternative: Alternative } | { error: string };

/**
 * Conversions in SQLite, one row per (uri, converter), valid only for the
 * (mtime, size) it was made from. The table is created on first use by this
 * module; the index drops every table when it rebuilds, so it never outlives
 * the index it belongs to.
 */
export class ConversionCache {
  private stmts:
    | {
        get: Statement;
        put: Statement;
        forget: Statement;
        forgetRange: Statement;
      }
    | undefined;

  constructor(private readonly db: Db) {}

  private prepared() {
    if (this.stmts) return this.stmts;
    this.stmts = {
      get: this.db.prepare(
        `SELECT mime, text, blob, error FROM conversions WHERE uri = ? AND converter = ? AND mtime = ? AND size = ?`,
      ),
      put: this.db.prepare(
        `INSERT INTO conversions (uri, converter, mtime, size, mime, text, blob, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (uri, converter) DO UPDATE SET mtime = excluded.mtime, size = excluded.size, mime = excluded.mime,
           text = excluded.text, blob = excluded.blob, error = excluded.error`,
      ),
      forget: this.db.prepare(`DELETE FROM conversions WHERE uri = ?`),
      forgetRange: this.db.prepare(`DELETE FROM conversions WHERE uri >= ? AND uri < ?`),
    };
    return this.stmts;
  }

  get(file: FileVersion, converter: string): CachedConversion | undefined {
    const row = this.prepared().get.get(file.uri, converter, file.mtime, file.size) as
      | { mime: string; text: string | null; blob: Uint8Array | null; error: string | null }
      | undefined;
    if (!row) return undefined;
    if (row.error !== null) return { error: row.error };
    if (row.text !== null) {
      return { alternative: { mimeType: row.mime, size: Buffer.byteLength(row.text), text: row.text } };
    }
    // A Uint8Array from node:sqlite, a Buffer from better-sqlite3: viewed as a Buffer without a copy.
    const blob = row.blob ? Buffer.from(row.blob.buffer, row.blob.byteOffset, row.blob.byteLength) : Buffer.alloc(0);
    return { alternative: { mimeType: row.mime, size: blob.length, blob: blob.toString('base64') } };
  }

  put(file: FileVersion, converter: Converter, outcome: CachedConversion, bytes?: Uint8Array): void {
    const text = 'alternative' in outcome && 'text' in outcome.alternative ? outcome.alternative.text : null;
    const error = 'error' in outcome ? outcome.error : null;
    this.prepared().put.run(
      file.uri,
      converter.id,
      file.mtime,
      file.size,
      converter.produces,
      text,
      bytes && text === null && error === null ? Buffer.from(bytes) : null,
      error,
    );
  }

  /** Drops the rows of these URIs; a collection URI (ending in '/') drops everything beneath it. */
  forget(uris: Iterable<string>): void {
    const stmts = this.prepared();
    this.db.transaction(() => {
      for (const uri of uris) {
        // A collection URI ends in '/', so succ() is never null here.
        if (uri.endsWith('/')) stmts.forgetRange.run(uri, succ(uri)!);
        else stmts.forget.run(uri);
      }
    })();
  }
}

export interface FormatsOptions {
  db: Db;
  log: Logger;
  converters?: readonly Converter[];
  limits?: Partial<ConversionLimits>;
  /**
   * Runs the registered converters (src/content/converters/index.ts) in this
   * conversion process (src/content/isolate.ts); converters outside the registry, and all of them when
   * absent, run on the main thread under a timer.
   */
  worker?: ConversionWorker;
  /**
   * Runs the content index's conversions (searchText), apart from the reads'
   * so that a read never waits behind the background build; `worker` when absent.
   */
  backgroundWorker?: ConversionWorker;
}

/** What searchText makes of a document: its text and places, or why there is none. */
export type SearchText = (LocatedText & { mimeType: string }) | { skipped: string };

/** The alternative a conversion made, if it made one (not the error it was left out for). */
function alternativeOf(conversion: CachedConversion | undefined): Alternative | undefined {
  return conversion && 'alternative' in conversion ? conversion.alternative : undefined;
}

/** One conversion that concurrent reads of a file share: how many of them still want it (Infinity: one that cannot be cancelled). */
interface SharedConversion {
  result: Promise<Alternative | undefined>;
  wanted: number;
  controller: AbortController;
}

/**
 * Produces a document's format alternatives (SEP-2093) within budgets, through
 * the cache. Never throws: a conversion that fails, times out or is over a
 * budget is left out with one warning (per file version), and the primary
 * content is served regardless.
 */
export class Formats {
  readonly cache: ConversionCache;
  readonly limits: ConversionLimits;
  private readonly converters: readonly Converter[];
  private readonly log: Logger;
  private readonly worker: ConversionWorker | undefined;
  private readonly backgroundWorker: ConversionWorker | undefined;
  /** Conversions under way, so that concurrent reads of one file convert it once. */
  private readonly running = new Map<string, SharedConversion>();
  /** Conversions no read wanted any more, until they settle (a job already under way runs to its end). */
  private readonly dropped = new Map<string, Promise<void>>();

  constructor(options: FormatsOptions) {
    this.cache = new ConversionCache(options.db);
    this.log = options.log;
    this.converters = options.converters ?? CONVERTERS;
    this.limits = { ...DEFAULT_CONVERSION_LIMITS, ...options.limits };
    this.worker = options.worker;
    this.backgroundWorker = options.backgroundWorker ?? options.worker;
  }

  /** Stops the conversion processes, if any. */
  close(): void {
    this.worker?.close();
    this.backgroundWorker?.close();
  }

  /** True when a converter with text output takes this document by its name or type (the content index converts it). */
  hasSearchText(doc: { ext: string; mime: string }): boolean {
    return textConverters(convertersByName(doc, this.converters)).length > 0;
  }

  /**
   * The text the content index keeps of a document: what its first text
   * converter makes of it (the alternative a read shows), with the places
   * (pages, cells) in it, within the same budgets as a read. For the
   * background build: it runs on the background worker, does not touch the
   * cache (the index keeps the text itself, and a read's first conversion of
   * a bad file still warns), and never throws.
   */
  readonly searchText = async (entry: EntryRow, content: FileContent): Promise<SearchText> => {
    const converter = textConverters(convertersFor(entry, content.bytes, this.converters))[0];
    if (!converter) return { skipped: 'no converter takes it' };
    const limits = this.limits;
    if (content.bytes.length > limits.inputBytes) {
      return { skipped: `file is ${content.bytes.length} bytes, over the conversion input limit of ${limits.inputBytes}` };
    }
    let output: string | Uint8Array | LocatedText;
    try {
      const input = { name: entry.name, bytes: content.bytes, text: content.text, limits };
      const worker = this.backgroundWorker;
      output =
        worker && CONVERTERS.includes(converter)
          ? await worker.runLocated(converter.id, input)
          : await runInline(converter, input, converter.convertLocated);
    } catch (error) {
      return { skipped: (error as Error)?.message ?? String(error) };
    }
    if (output instanceof Uint8Array) return { skipped: 'the converter made bytes, not text' };
    const located = typeof output === 'string' ? { text: output, places: [] } : output;
    const { text } = truncateUtf8(located.text, limits.outputBytes);
    return { text, places: located.places.filter((p) => p.offset < text.length), mimeType: converter.produces };
  };

  /**
   * The alternatives of a document just read, in registry order. `signal`: the read's request; a
   * conversion still waiting for the conversion process is dropped once every
   * read that wants it is cancelled (one under way runs to its limits), and
   * nothing is cached of it.
   */
  readonly convert = async (entry: EntryRow, content: FileContent, signal?: AbortSignal): Promise<Alternative[]> => {
    const converters = convertersFor(entry, content.bytes, this.converters);
    if (converters.length === 0) return [];
    const file: FileVersion = { uri: entry.uri, mtime: content.mtimeMs, size: content.bytes.length };
    const results = await Promise.all(converters.map((c) => this.alternative(entry, file, content, c, signal)));
    return results.filter((a): a is Alternative => a !== undefined);
  };

  /** Index listener: forgets the conversions of changed and removed files. */
  readonly onIndexChange = (change: IndexChange): void => {
    try {
      // An upserted collection is only a directory whose mtime moved (a child
      // came or went): what is cached beneath it stays valid.
      const changedDocuments = change.upserted.filter((row) => row.kind === EntryKind.document).map((row) => row.uri);
      this.cache.forget([...change.removed, ...changedDocuments]);
    } catch (error) {
      this.log.debug(`conversion cache: ${(error as Error).message}`);
    }
  };

  private alternative(
    entry: EntryRow,
    file: FileVersion,
    content: FileContent,
    converter: Converter,
    signal: AbortSignal | undefined,
  ): Promise<Alternative | undefined> {
    const key = `${file.uri}\0${converter.id}\0${file.mtime}\0${file.size}`;
    let shared = this.running.get(key);
    // A read cancelled already starts nothing: on an idle process its job would have started before any abort was seen.
    if (!shared && signal?.aborted) return Promise.resolve(alternativeOf(this.cached(file, converter)));
    if (!shared) {
      const controller = new AbortController();
      const made: SharedConversion = { wanted: 0, controller, result: Promise.resolve(undefined) };
      // After a dropped conversion of the same version, if any: one already under way runs to its end and is cached,
      // and this one finds it there rather than converting again beside it.
      const dropped = this.dropped.get(key);
      const convert = () => this.cachedOrConvert(entry, file, content, converter, controller.signal);
      made.result = (dropped ? dropped.then(convert) : convert()).finally(() => {
        if (this.running.get(key) === made) this.running.delete(key);
      });
      this.running.set(key, (shared = made));
    }
    // Stopped only once every read that wants it is cancelled: a read without a signal wants it to the end.
    const joined = shared;
    if (signal === undefined) joined.wanted = Infinity;
    else if (!signal.aborted) {
      joined.wanted++;
      const cancelled = () => {
        if (--joined.wanted === 0) this.drop(key, joined);
      };
      signal.addEventListener('abort', cancelled, { once: true });
      // Not held past the conversion: the listener would keep its result (up to the output budget) for the request's life.
      const forget = () => signal.removeEventListener('abort', cancelled);
      joined.result.then(forget, forget);
    }
    return joined.result;
  }

  /** No read wants the conversion any more: a job still waiting leaves the process's queue, and later reads start afresh. */
  private drop(key: string, shared: SharedConversion): void {
    shared.controller.abort();
    if (this.running.get(key) === shared) this.running.delete(key);
    const settled = shared.result.then(
      () => undefined,
      () => undefined,
    );
    this.dropped.set(key, settled);
    void settled.then(() => {
      if (this.dropped.get(key) === settled) this.dropped.delete(key);
    });
  }

  /** What the cache holds of this version (an alternative, or the error it was left out for), converting nothing. */
  private cached(file: FileVersion, converter: Converter): CachedConversion | undefined {
    try {
      return this.cache.get(file, converter.id);
    } catch (error) {
      this.log.debug(`conversion cache: ${(error as Error).message}`);
      return undefined;
    }
  }

  private async cachedOrConvert(
    entry: EntryRow,
    file: FileVersion,
    content: FileContent,
    converter: Converter,
    signal: AbortSignal,
  ): Promise<Alternative | undefined> {
    const cached = this.cached(file, converter);
    if (cached) return alternativeOf(cached);

    const { outcome, bytes } = await this.run(entry, content, converter, signal);
    if (!outcome) return undefined; // did not happen this time; nothing to remember
    if ('error' in outcome) {
      this.log.warn(`${converter.produces} alternative of ${entry.uri} left out: ${outcome.error}`);
    }
    try {
      this.cache.put(file, converter, outcome, bytes);
    } catch (error) {
      this.log.debug(`conversion cache: ${(error as Error).message}`);
    }
    return alternativeOf(outcome);
  }

  /** One conversion within the budgets; failures become an outcome, never an exception. */
  private async run(
    entry: EntryRow,
    content: FileContent,
    converter: Converter,
    signal: AbortSignal,
  ): Promise<{ outcome?: CachedConversion; bytes?: Uint8Array }> {
    const limits = this.limits;
    if (content.bytes.length > limits.inputBytes) {
      return { outcome: { error: `file is ${content.bytes.length} bytes, over the conversion input limit of ${limits.inputBytes}` } };
    }
    let output: string | Uint8Array;
    try {
      const input = { name: entry.name, bytes: content.bytes, text: content.text, limits };
      output =
        this.worker && CONVERTERS.includes(converter)
          ? await this.worker.run(converter.id, input, signal)
          : await runInline(converter, input);
    } catch (error) {
      if (error instanceof ConversionUnavailable) {
        this.log.debug(`${converter.produces} alternative of ${entry.uri} skipped: ${error.message}`);
        return {};
      }
      const message = error instanceof ConversionError ? error.message : `converter failed: ${(error as Error)?.message ?? String(error)}`;
      return { outcome: { error: message } };
    }
    if (typeof output === 'string') {
      const { text, truncated } = truncateUtf8(output, limits.outputBytes);
      if (truncated) {
        this.log.warn(`${converter.produces} alternative of ${entry.uri} truncated at ${limits.outputBytes} bytes`);
      }
      return { outcome: { alternative: { mimeType: converter.produces, size: Buffer.byteLength(text), text } } };
    }
    if (output.length > limits.outputBytes) {
      return { outcome: { error: `output is ${output.length} bytes, over the limit of ${limits.outputBytes}` } };
    }
    return {
      outcome: { alternative: { mimeType: converter.produces, size: output.length, blob: Buffer.from(output).toString('base64') } },
      bytes: output,
    };
  }
}

/**
 * A conversion on the main thread, raced against the time budget: past it the
 * converter's signal is aborted and its result, if it ever comes, ignored.
 */
async function runInline<T = string | Uint8Array>(
  converter: Converter,
  input: { name: string; bytes: Buffer; text: string | undefined; limits: ConversionLimits },
  convert: (input: ConvertInput) => Promise<T> = converter.convert as (input: ConvertInput) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new ConversionError(`conversion took longer than ${input.limits.timeMs} ms; abandoned`));
    }, input.limits.timeMs);
  });
  try {
    return await Promise.race([convert.call(converter, { ...input, signal: controller.signal }), timeout]);
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** Converters whose output is text (what can be searched). */
function textConverters(converters: Converter[]): Converter[] {
  return converters.filter((c) => c.produces.startsWith('text/'));
}

/** The line that ends a truncated alternative. */
export function truncationMarker(limit: number): string {
  return `\n[... truncated by folder-mcp: conversion output over ${limit} bytes]\n`;
}

/** Cuts text to at most `limit` UTF-8 bytes on a character boundary, adding the marker when cut. */
export function truncateUtf8(text: string, limit: number): { text: string; truncated: boolean } {
  // Cheap exit: a string of n UTF-16 units is at most 3n UTF-8 bytes.
  if (text.length * 3 <= limit) return { text, truncated: false };
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return { text, truncated: false };
  let end = limit;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // do not split a character
  return { text: bytes.toString('utf8', 0, end) + truncationMarker(limit), truncated: true };
}

/**
 * The `ServerContext.convert` hook for an index: conversions cached in its
 * database, forgotten when the index sees a file change. `close` stops the
 * conversion worker.
 */
export function createConvert(
  index: { db: Db; onChange(listener: (change: IndexChange) => void): () => void },
  log: Logger,
): { convert: Formats['convert']; formats: Formats; close(): Promise<void> } {
  const workerUrl = builtScriptUrl('worker');
  const worker = new ConversionWorker(workerUrl);
  // The content index converts one document at a time, in a process of its own running nicer than the server.
  const backgroundWorker = new ConversionWorker(workerUrl, 2, {}, BACKGROUND_NICENESS);
  const formats = new Formats({ db: index.db, log, worker, backgroundWorker });
  const stopListening = index.onChange(formats.onIndexChange);
  return {
    convert: formats.convert,
    formats,
    async close() {
      stopListening();
      formats.close();
    },
  };
}

/** Niceness of the content index's conversion process. */
const BACKGROUND_NICENESS = 10;
