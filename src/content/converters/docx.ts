import { ConversionError, type ConvertInput, type Converter } from './types.ts';
import { checkZip } from './zip.ts';

/**
 * Word documents (.docx) as Markdown with mammoth: headings, lists, emphasis,
 * links. The zip is checked against the budget first (mammoth unpacks it in
 * memory), images become a placeholder instead of inline base64, and
 * external files referenced by the document are never opened.
 */
export const docxConverter: Converter = {
  id: 'docx-markdown@1',
  accepts: {
    extensions: ['docx'],
    mimeTypes: ['application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  },
  produces: 'text/markdown',
  convert: docxToMarkdown,
};

interface Mammoth {
  convertToMarkdown(
    input: { buffer: Buffer },
    options: Record<string, unknown>,
  ): Promise<{ value: string; messages: unknown[] }>;
  images: { imgElement(f: (image: { contentType: string }) => Promise<{ src: string; alt?: string }>): unknown };
}

export async function docxToMarkdown(input: ConvertInput): Promise<string> {
  checkZip(input.bytes, { bytes: input.limits.zipBytes, entries: input.limits.zipEntries });
  if (input.signal.aborted) throw new ConversionError('aborted');
  // Loaded on first use: start-up must not pay for mammoth.
  const mammoth = ((await import('mammoth')) as unknown as { default: Mammoth }).default;
  let result;
  try {
    result = await mammoth.convertToMarkdown(
      { buffer: input.bytes },
      {
        externalFileAccess: false,
        convertImage: mammoth.images.imgElement(async (image) => ({ src: '', alt: `[${image.contentType} image]` })),
      },
    );
  } catch (error) {
    throw new ConversionError(`Word document cannot be read: ${(error as Error).message}`);
  }
  return `${unescapeProse(result.value).trimEnd()}\n`;
}

/**
 * mammoth escapes every Markdown punctuation character (`end\.`, `\(see\)`),
 * which is noise to a reader. Punctuation that means nothing in the middle of
 * a line is unescaped; the first word of each line keeps its escapes, so
 * `1\.` and `\#` there still do not become a list or a heading.
 */
export function unescapeProse(markdown: string): string {
  return markdown
    .split('\n')
    .map((line) => {
      const lead = /^\s*\S*/.exec(line)![0];
      return lead + line.slice(lead.length).replace(/\\([.!(){}+\-#])/g, '$1');
    })
    .join('\n');
}
