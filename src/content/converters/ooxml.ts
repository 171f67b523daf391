// What the Office Open XML readers (xlsx.ts, pptx.ts) share: the package's
// parts, unzipped within the zip budget; its relationships; and a streaming
// XML reader (sax) that stops when the reader has enough.
import { posix } from 'node:path';
import sax from 'sax';
import { ConversionError, type ConvertInput } from './types.ts';
import { readZip } from './zip.ts';

/** The XML parts of an Office package, by name (part names are case-insensitive). */
export class OfficePackage {
  private readonly parts = new Map<string, Buffer>();
  private readonly rels = new Map<string, Map<string, Relationship>>();

  constructor(input: ConvertInput) {
    // Media (images, embedded files) is checked by readZip but not kept.
    const parts = readZip(input.bytes, { bytes: input.limits.zipBytes, entries: input.limits.zipEntries }, (name) => /\.(xml|rels)$/i.test(name));
    for (const [name, data] of parts) this.parts.set(name.toLowerCase(), data);
  }

  get(part: string): Buffer | undefined {
    return this.parts.get(part.toLowerCase());
  }

  /** The part the package's root relationship of this type names (the workbook, the presentation). */
  mainPart(typeSuffix: string, fallback: string): string {
    const main = [...this.relationships('').values()].find((r) => r.type.endsWith(typeSuffix));
    return main?.target ?? fallback;
  }

  /**
   * The relationships of a part (`''` for the package's own), by id, targets
   * resolved to part names. External targets (links, files elsewhere) are left
   * out: nothing outside the package is ever opened.
   */
  relationships(part: string): Map<string, Relationship> {
    const cached = this.rels.get(part);
    if (cached) return cached;
    const dir = posix.dirname(part);
    const relsPart = posix.join(dir === '.' ? '' : dir, '_rels', `${posix.basename(part)}.rels`);
    const found = new Map<string, Relationship>();
    this.rels.set(part, found);
    const xml = this.get(relsPart);
    if (!xml) return found;
    readXml(xml, relsPart, {
      open(name, attrs) {
        if (name !== 'Relationship' || attrs.TargetMode === 'External' || !attrs.Id || !attrs.Target) return;
        if (found.size >= MAX_RELATIONSHIPS) throw new StopReading();
        const target = attrs.Target.startsWith('/') ? attrs.Target.slice(1) : posix.join(dir === '.' ? '' : dir, attrs.Target);
        // Kept strings are copied flat: sax builds attribute values a character at a time (a rope 25 times their size).
        found.set(flat(attrs.Id), { type: flat(attrs.Type ?? ''), target: flat(posix.normalize(target)) });
      },
    });
    return found;
  }
}

export interface Relationship {
  /** The relationship type URI; its last segment says what the target is (`/worksheet`, `/slide`, `/notesSlide`). */
  type: string;
  /** The target part's name. */
  target: string;
}

export interface XmlEvents {
  /** An element opens: its local name (no prefix) and its attributes as written. */
  open?(name: string, attrs: Record<string, string>): void;
  close?(name: string): void;
  text?(text: string): void;
}

/** Thrown by an XmlEvents handler to stop reading a part early (the reader has what it needs). */
export class StopReading extends Error {}

/** Relationships kept of one part: more than any real document has (a workbook of 1,000 sheets has about 1,010). */
const MAX_RELATIONSHIPS = 10_000;

/** Bytes handed to the parser at a time: the time budget is looked at between two. */
const CHUNK = 256 * 1024;

/**
 * Reads one XML part as a stream of events (sax, strict). No DTD is
 * processed, so an entity-expansion bomb is an unknown entity: a
 * ConversionError, never gigabytes of text. A part that is not well-formed is
 * a ConversionError too; a handler's StopReading ends the read quietly.
 */
export function readXml(bytes: Uint8Array, part: string, events: XmlEvents, signal?: AbortSignal): void {
  const parser = sax.parser(true, { trim: false, normalize: false, position: true });
  parser.onopentag = (tag) => events.open?.(localName(tag.name), tag.attributes as Record<string, string>);
  parser.onclosetag = (name) => events.close?.(localName(name));
  parser.ontext = (text) => events.text?.(text);
  parser.oncdata = (text) => events.text?.(text);
  parser.onerror = (error) => {
    throw new ConversionError(`${part} is not well-formed XML: ${error.message.split('\n')[0]}`);
  };
  const decoder = new TextDecoder('utf-8');
  try {
    for (let at = 0; at < bytes.length; at += CHUNK) {
      if (signal?.aborted) throw new ConversionError('aborted');
      parser.write(decoder.decode(bytes.subarray(at, at + CHUNK), { stream: true }));
    }
    parser.write(decoder.decode());
    parser.close();
  } catch (error) {
    if (error instanceof StopReading) return;
    throw error;
  }
}

function localName(name: string): string {
  return name.slice(name.indexOf(':') + 1);
}

/** A relationship id attribute: `r:id`, else the first `*:id` (another prefix for the same namespace). */
export function relationshipId(attrs: Record<string, string>): string | undefined {
  if (attrs['r:id'] !== undefined) return attrs['r:id'];
  for (const [key, value] of Object.entries(attrs)) if (key.endsWith(':id')) return value;
  return undefined;
}

/** Text on one line: line breaks and the blanks around them become one space. Linear (no backtracking regex). */
export function oneLine(text: string): string {
  if (!text.includes('\n') && !text.includes('\r')) return text.trim();
  return text
    .split(/[\r\n]+/)
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join(' ');
}

/** One Markdown table cell: on one line, backslashes and pipes escaped. */
export function tableCell(text: string): string {
  return oneLine(text).replace(/[\\|]/g, (c) => `\\${c}`);
}

/** A copy of `text` in one piece (V8 flattens a string it slices), to keep beyond the parse. */
export function flat(text: string): string {
  return text.length === 0 ? text : (' ' + text).slice(1);
}

/**
 * Runs a reader, turning what a hostile part can make the engine throw
 * (RangeError: a string or stack past its limit) into a ConversionError.
 */
export async function officeConversion<T>(what: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof ConversionError) throw error;
    throw new ConversionError(`${what} cannot be read: ${(error as Error)?.message ?? String(error)}`);
  }
}
