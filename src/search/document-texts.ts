// What the content index keeps of a document, and how it gets it: a text file
// read as it is, a document a converter takes (PDF, Office documents,
// notebooks) as the text a read shows of it, anything else left out.
import type { SearchText } from '../content/formats.ts';
import { textKind } from '../content/mime.ts';
import { ContentError } from '../content/content-error.ts';
import { readFileContent, readSmallText, type FileContent } from '../content/read.ts';
import { errnoCode } from '../errno.ts';
import type { EntryRow } from '../entry.ts';
import type { Logger } from '../log.ts';
import { uriToPath, type Root } from '../uri.ts';
import type { IndexedText } from './content-store.ts';

/** Files larger than this are not indexed (their text is rarely what a search wants, and it would bloat the index). */
export const SEARCH_MAX_FILE_BYTES = 1024 * 1024;

/** MIME types whose files are read as text and searched: the known text types (content/mime.ts: textKind). */
export function isTextMime(mimeType: string): boolean {
  return textKind(mimeType) === 'text';
}

/** Turns documents into the text the index keeps (content/formats.ts's Formats), when conversions are on. */
export interface SearchConverter {
  /** True when the document is converted rather than read as text (decided by name and type). */
  hasSearchText(doc: { ext: string; mime: string }): boolean;
  searchText(entry: EntryRow, content: FileContent): Promise<SearchText>;
}

/** How a document is indexed: converted (a converter takes it), read as text, or not at all (null). */
export type HowIndexed = 'convert' | 'text' | null;

export class DocumentTexts {
  constructor(
    private readonly roots: readonly Root[],
    private readonly log: Logger,
    private readonly maxFileBytes: number,
    /** Converts PDF, Office documents and notebooks to their text; without it they are left out (notebooks are then read as JSON text). */
    private readonly converter: SearchConverter | undefined,
    /** Largest document converted: what a read converts (--max-read-bytes). */
    private readonly maxConvertBytes: number,
  ) {}

  /** How a document is indexed, decided by its type, name and size. */
  how(doc: { mime: string; ext: string; size: number }): HowIndexed {
    if (this.converter?.hasSearchText(doc)) return doc.size <= this.maxConvertBytes ? 'convert' : null;
    return doc.size <= this.maxFileBytes && isTextMime(doc.mime) ? 'text' : null;
  }

  /** A text file's text; undefined when it has none now; HELD when it could not be read for a while (isHeld). */
  async read(row: EntryRow): Promise<string | undefined | typeof HELD> {
    try {
      return await readSmallText(uriToPath(row.uri), this.maxFileBytes, this.roots);
    } catch (error) {
      // Vanished or grew past the cap since it was indexed: no text now; the
      // watcher's next event for it brings it back.
      return isHeld(error) ? HELD : undefined;
    }
  }

  /** The text a read shows of a converted document; undefined when there is none (logged at debug: nobody asked for this file). */
  async convert(row: EntryRow): Promise<IndexedText | undefined | typeof HELD> {
    let content: FileContent;
    try {
      content = await readFileContent(uriToPath(row.uri), this.maxConvertBytes, this.roots);
    } catch (error) {
      return isHeld(error) ? HELD : undefined; // as read()
    }
    const result = await this.converter!.searchText(row, content);
    if ('skipped' in result) {
      this.log.debug(`content index: ${row.uri} skipped: ${result.skipped}`);
      return undefined;
    }
    return { text: result.text, form: result.mimeType, places: result.places };
  }
}

/** A document that could not be read for now: the content index tries it again later, and records nothing meanwhile. */
export const HELD = Symbol('held');

/**
 * Errors that pass without the file changing: another program holding it
 * (Windows: EBUSY, EPERM), permissions given back (chmod moves no mtime), no
 * descriptors left. Recorded as "no text" at the file's mtime and size, such a
 * file was never read again until it changed: a file locked while the index
 * read it stayed unsearchable after the lock went, restarts included (a
 * red-team pass on Windows).
 */
const HELD_CODES = new Set(['EBUSY', 'EAGAIN', 'EACCES', 'EPERM', 'EMFILE', 'ENFILE', 'ETXTBSY']);

function isHeld(error: unknown): boolean {
  const code = error instanceof ContentError ? error.details.code : errnoCode(error);
  return typeof code === 'string' && HELD_CODES.has(code);
}
