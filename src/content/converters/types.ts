/** What a converter is told about the document it converts. */
export interface ConvertInput {
  /** Basename, for messages. */
  name: string;
  /** The whole file, already read and within the input budget. */
  bytes: Buffer;
  /** The file as text, when it decoded as text (UTF-8, or UTF-16 with a BOM). */
  text: string | undefined;
  /** Aborted when the time budget runs out: stop work at the next chance. */
  signal: AbortSignal;
  limits: ConversionLimits;
}

/** Budgets every conversion runs within (see docs/formats.md, "Budgets"). */
export interface ConversionLimits {
  /** Largest input handed to a converter, in bytes. */
  inputBytes: number;
  /** Largest output kept, in UTF-8 bytes for text; longer text is cut with a marker. */
  outputBytes: number;
  /** Wall-clock budget of one conversion; past it the conversion is abandoned. */
  timeMs: number;
  /** PDF pages extracted; the rest are counted in a closing line. */
  pdfPages: number;
  /** Sum of the uncompressed sizes of a zip container's entries (.docx, .xlsx, .pptx). */
  zipBytes: number;
  /** Entries of a zip container. */
  zipEntries: number;
  /** Spreadsheet cells kept (.xlsx); the rest are counted in a closing line. */
  sheetCells: number;
  /** Characters kept of one notebook cell output. */
  notebookOutputChars: number;
}

export const DEFAULT_CONVERSION_LIMITS: ConversionLimits = {
  inputBytes: 32 * 1024 * 1024,
  outputBytes: 1024 * 1024,
  timeMs: 10_000,
  pdfPages: 200,
  zipBytes: 64 * 1024 * 1024,
  zipEntries: 10_000,
  sheetCells: 200_000,
  notebookOutputChars: 2_000,
};

/** Which documents a converter takes. Any match is enough. */
export interface Accepts {
  /** Primary MIME types (as the index has them). */
  mimeTypes?: readonly string[];
  /** File extensions, lower case, without the dot. */
  extensions?: readonly string[];
  /**
   * A content signature, for files whose name says nothing. Only consulted on
   * read (metadata never reads content), and only for documents whose type is
   * not known from the name (`application/octet-stream`).
   */
  signature?: (bytes: Uint8Array) => boolean;
}

/**
 * One format alternative producer. Adding a format is one file exporting a
 * Converter and one line in ./index.ts.
 */
export interface Converter {
  /** Stable id; part of the cache key, so bump its version suffix when its output changes. */
  id: string;
  accepts: Accepts;
  /** The MIME type of what it produces. */
  produces: string;
  /** Text (served as `text`) or bytes (served as base64 `blob`). */
  convert(input: ConvertInput): Promise<string | Uint8Array>;
  /**
   * The same text as `convert`, with where each page or cell of the document
   * starts in it: the content index says where a match is. Formats whose
   * text has no such places leave it out, and `convert` is used.
   */
  convertLocated?(input: ConvertInput): Promise<LocatedText>;
}

/** The kinds of place a converted text is made of. */
export const PLACE_UNITS = ['page', 'cell', 'sheet', 'slide'] as const;

/** Where a part of a converted text comes from: a PDF page, a notebook cell, a workbook's sheet, a slide (all 1-based). */
export interface Place {
  /** Offset in the text (UTF-16 code units) at which the page, cell, sheet or slide starts. */
  offset: number;
  unit: (typeof PLACE_UNITS)[number];
  number: number;
  /** A sheet's name. */
  name?: string;
}

/** A converted text and the places in it, in offset order. */
export interface LocatedText {
  text: string;
  places: Place[];
}

/** The place `offset` falls in: the last one starting at or before it. */
export function placeAt(places: readonly Place[], offset: number): Place | undefined {
  let found: Place | undefined;
  for (const place of places) {
    if (place.offset > offset) break;
    found = place;
  }
  return found;
}

/** A conversion that cannot produce its alternative: the message goes to the warning. */
export class ConversionError extends Error {}

/**
 * A conversion that did not happen for reasons that say nothing about the file
 * (the server is closing, the conversion queue is full): not cached, not
 * warned about; the next read tries again.
 */
export class ConversionUnavailable extends Error {}
