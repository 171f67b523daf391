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
    const dir = posix.dirname(part);
    const relsPart = posix.join(dir === '.' ? '' : dir, '_rels', `${posix.basename(part)}.rels`);
    const found = new Map<string, Relationship>();
    const xml = this.get(relsPart);
    if (!xml) return found;
    readXml(xml, relsPart, {
      open(name, attrs) {
        if (name !== 'Relationship' || attrs.TargetMode === 'External' || !attrs.Id || !attrs.Target) return;
        const target = attrs.Target.startsWith('/') ? attrs.Target.slice(1) : posix.join(dir === '.' ? '' : dir, attrs.Target);
        found.set(attrs.Id, { type: attrs.Type ?? '', target: posix.normalize(target) });
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

/** A relationship id attribute (`r:id`, whatever the prefix). */
export function relationshipId(attrs: Record<string, string>): string | undefined {
  for (const [key, value] of Object.entries(attrs)) if (key.endsWith(':id')) return value;
  return undefined;
}

/** One Markdown table cell: on one line, pipes escaped. */
export function tableCell(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').replace(/\\/g, '\\\\').replace(/\|/g, '\\|').trim();
}
