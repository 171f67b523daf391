// What the content index keeps of a document, and how it gets it: a text file
// read as it is, a document a converter takes (PDF, Office documents,
// notebooks) as the text a read shows of it, anything else left out.
import type { SearchText } from '../content/formats.ts';
import { textKind } from '../content/mime.ts';
import { readFileContent, readSmallText, type FileContent } from '../content/read.ts';
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

  /** A text file's text; undefined when it cannot be read now. */
  async read(row: EntryRow): Promise<string | undefined> {
    try {
      return await readSmallText(uriToPath(row.uri), this.maxFileBytes, this.roots);
    } catch {
      // Vanished, grew past the cap, or unreadable since it was indexed: no
      // text now; the watcher's next event for it brings it back.
      return undefined;
    }
  }

  /** The text a read shows of a converted document; undefined when there is none (logged at debug: nobody asked for this file). */
  async convert(row: EntryRow): Promise<IndexedText | undefined> {
    let content: FileContent;
    try {
      content = await readFileContent(uriToPath(row.uri), this.maxConvertBytes, this.roots);
    } catch {
      return undefined; // as read()
    }
    const result = await this.converter!.searchText(row, content);
    if ('skipped' in result) {
      this.log.debug(`content index: ${row.uri} skipped: ${result.skipped}`);
      return undefined;
    }
    return { text: result.text, form: result.mimeType, places: result.places };
  }
}
