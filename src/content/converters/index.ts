import { BINARY_FALLBACK_MIME } from '../mime.ts';
import { docxConverter } from './docx.ts';
import { notebookConverter } from './notebook.ts';
import { pdfConverter } from './pdf.ts';
import { pptxConverter } from './pptx.ts';
import type { Converter } from './types.ts';
import { xlsxConverter } from './xlsx.ts';

/**
 * Every format converter, in the order their alternatives follow the primary
 * content. To add a format: write a Converter in its own file and list it here.
 */
export const CONVERTERS: readonly Converter[] = [notebookConverter, pdfConverter, docxConverter, xlsxConverter, pptxConverter];

/** What the registry needs to know of a document: its name and primary type (an index row has both). */
export interface DocumentKind {
  ext: string;
  mime: string;
}

/** Converters that take this document by its name or MIME type alone (no content read). */
export function convertersByName(doc: DocumentKind, converters: readonly Converter[] = CONVERTERS): Converter[] {
  const ext = doc.ext.toLowerCase();
  return converters.filter(
    (c) =>
      c.produces !== doc.mime &&
      ((c.accepts.extensions?.includes(ext) ?? false) || (c.accepts.mimeTypes?.includes(doc.mime) ?? false)),
  );
}

/**
 * Converters that apply on read: those taking the document by name or type,
 * plus, for a document whose name says nothing (sniffed binary), those whose
 * content signature matches.
 */
export function convertersFor(
  doc: DocumentKind,
  bytes: Uint8Array,
  converters: readonly Converter[] = CONVERTERS,
): Converter[] {
  const byName = convertersByName(doc, converters);
  if (doc.mime !== BINARY_FALLBACK_MIME) return byName;
  const bySignature = converters.filter((c) => !byName.includes(c) && c.accepts.signature?.(bytes));
  return converters.filter((c) => byName.includes(c) || bySignature.includes(c));
}

/**
 * MIME types of the alternatives a document offers, for `resources/metadata`,
 * decided by name and type only. A file recognised only by its content (a PDF
 * without `.pdf`) gets its alternative on read but is not announced here.
 */
export function alternativeMimeTypes(doc: DocumentKind, converters: readonly Converter[] = CONVERTERS): string[] {
  return [...new Set(convertersByName(doc, converters).map((c) => c.produces))];
}

/** The `_meta` key under which `resources/metadata` lists a document's alternative MIME types. */
export const ALTERNATIVES_META_KEY = 'folder-mcp/alternatives';
