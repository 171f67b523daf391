import { ConversionError, type ConvertInput, type Converter } from './types.ts';
import { htmlToMarkdown } from './html-markdown.ts';
import { checkZip } from './zip.ts';

/**
 * Word documents (.docx) as Markdown with mammoth: headings, lists, tables,
 * emphasis, links. The zip is checked against the budget first (mammoth unpacks it in
 * memory), images become a placeholder instead of inline base64, and
 * external files referenced by the document are never opened.
 */
export const docxConverter: Converter = {
  id: 'docx-markdown@2',
  accepts: {
    extensions: ['docx'],
    mimeTypes: ['application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  },
  produces: 'text/markdown',
  convert: docxToMarkdown,
};

interface Mammoth {
  convertToHtml(input: { buffer: Buffer }, options: Record<string, unknown>): Promise<{ value: string; messages: unknown[] }>;
  images: { imgElement(f: (image: { contentType: string }) => Promise<{ src: string; alt?: string }>): unknown };
}

export async function docxToMarkdown(input: ConvertInput): Promise<string> {
  checkZip(input.bytes, { bytes: input.limits.zipBytes, entries: input.limits.zipEntries });
  if (input.signal.aborted) throw new ConversionError('aborted');
  // Loaded on first use: start-up must not pay for mammoth.
  const mammoth = ((await import('mammoth')) as unknown as { default: Mammoth }).default;
  let result;
  try {
    // HTML, then our Markdown: mammoth's own Markdown writer is deprecated,
    // drops tables and backslash-escapes every punctuation mark.
    result = await mammoth.convertToHtml(
      { buffer: input.bytes },
      {
        externalFileAccess: false,
        convertImage: mammoth.images.imgElement(async (image) => ({ src: '', alt: `image: ${image.contentType}` })),
      },
    );
  } catch (error) {
    throw new ConversionError(`Word document cannot be read: ${(error as Error).message}`);
  }
  return htmlToMarkdown(result.value);
}
