import { officeConversion, OfficePackage, readXml, relationshipId, StopReading, tableCell } from './ooxml.ts';
import { ConversionError, type ConvertInput, type Converter, type LocatedText, type Place } from './types.ts';

/**
 * PowerPoint presentations (.pptx) as Markdown: each slide, in presentation
 * order, under a `## Slide N: title` heading, with the text of its shapes
 * (a paragraph a line, a table a row a line) and its speaker notes. Layouts,
 * masters, images and charts are not read. The zip is checked against its
 * budget first; slides past the output budget are counted in a closing
 * line. The slide is the place of a search hit.
 */
export const pptxConverter: Converter = {
  id: 'pptx-markdown@1',
  accepts: {
    extensions: ['pptx'],
    mimeTypes: ['application/vnd.openxmlformats-officedocument.presentationml.presentation'],
  },
  produces: 'text/markdown',
  convert: async (input) => (await pptxToLocatedMarkdown(input)).text,
  convertLocated: (input) => officeConversion('PowerPoint presentation', () => pptxToLocatedMarkdown(input)),
};

/** Slides read of one presentation; the rest are counted in a closing line. */
const MAX_SLIDES = 5000;

const REL = { presentation: '/officeDocument', slide: '/slide', notes: '/notesSlide' };

export async function pptxToLocatedMarkdown(input: ConvertInput): Promise<LocatedText> {
  const pkg = new OfficePackage(input);
  const presentationPart = pkg.mainPart(REL.presentation, 'ppt/presentation.xml');
  const presentation = pkg.get(presentationPart);
  if (!presentation) throw new ConversionError('not a PowerPoint presentation (no presentation part)');
  const rels = pkg.relationships(presentationPart);
  const slideParts: string[] = [];
  let more = 0;
  let root = true;
  readXml(presentation, presentationPart, {
    open(name, attrs) {
      if (root && name !== 'presentation') throw new ConversionError(`not a PowerPoint presentation (its main part is a ${name})`);
      root = false;
      if (name !== 'sldId') return;
      const rel = rels.get(relationshipId(attrs) ?? '');
      if (!rel?.type.endsWith(REL.slide)) return;
      if (slideParts.length < MAX_SLIDES) slideParts.push(rel.target);
      else more++;
    },
    close(name) {
      if (name === 'sldIdLst') throw new StopReading();
    },
  });

  const parts: string[] = [];
  const places: Place[] = [];
  let offset = 0;
  let chars = 0;
  let read = 0;
  /** Each slide part is read once, whatever number of slide ids name it. */
  const readParts = new Map<string, number>();
  for (const [i, part] of slideParts.entries()) {
    if (chars > input.limits.outputBytes) break;
    if (input.signal.aborted) throw new ConversionError('aborted');
    const room = input.limits.outputBytes - chars;
    const sameAs = readParts.get(part.toLowerCase());
    const xml = sameAs === undefined ? pkg.get(part) : undefined;
    if (xml) readParts.set(part.toLowerCase(), i + 1);
    const slide = xml ? readShapes(xml, part, room, input.signal) : { title: '', lines: [], hidden: false };
    const notesPart = xml ? [...pkg.relationships(part).values()].find((r) => r.type.endsWith(REL.notes))?.target : undefined;
    const notesXml = notesPart === undefined ? undefined : pkg.get(notesPart);
    // In a notes page, the notes are the body placeholder; the others are the slide's image, number, header.
    const notes = notesXml ? readShapes(notesXml, notesPart!, room, input.signal, (placeholder) => placeholder === 'body').lines : [];
    const title = slide.title ? `: ${tableCell(slide.title)}` : '';
    let text = `## Slide ${i + 1}${title}${slide.hidden ? ' (hidden)' : ''}\n`;
    if (sameAs !== undefined) text += `\n(the same slide as slide ${sameAs})\n`;
    if (slide.lines.length > 0) text += `\n${slide.lines.join('\n')}\n`;
    if (notes.length > 0) text += `\nNotes:\n${notes.join('\n')}\n`;
    places.push({ offset, unit: 'slide', number: i + 1 });
    offset += text.length + 1; // parts are joined with '\n'
    chars += text.length;
    parts.push(text);
    read++;
  }
  const left = slideParts.length + more - read;
  if (left > 0) parts.push(`[${left} more slide${left === 1 ? '' : 's'} not extracted: over the conversion budget]\n`);
  if (slideParts.length === 0) parts.push('(no slides)\n');
  return { text: parts.join('\n'), places };
}

/**
 * The text of a slide's (or notes page's) shapes, in document order: each
 * paragraph a line, each table row a line of cells. The title placeholder's
 * text is the title, not a line. `keep` chooses shapes by their placeholder
 * type (`''` for a shape that is no placeholder).
 */
function readShapes(
  xml: Buffer,
  part: string,
  maxChars: number,
  signal: AbortSignal,
  keep: (placeholder: string) => boolean = () => true,
): { title: string; lines: string[]; hidden: boolean } {
  const lines: string[] = [];
  let chars = 0;
  let title = '';
  let hidden = false;
  let placeholder = '';
  let shapeLines: string[] = [];
  let paragraph = '';
  let inText = false;
  let cells: string[] | undefined;
  let cell: string[] | undefined;
  readXml(
    xml,
    part,
    {
      open(name, attrs) {
        if (name === 'sld') hidden = attrs.show === '0' || attrs.show === 'false';
        else if (name === 'sp' || name === 'graphicFrame') {
          placeholder = '';
          shapeLines = [];
        } else if (name === 'ph') placeholder = attrs.type ?? 'body';
        else if (name === 'p') paragraph = '';
        else if (name === 't') inText = true;
        else if (name === 'br') paragraph += '\n';
        else if (name === 'tr') cells = [];
        else if (name === 'tc') cell = [];
      },
      close(name) {
        if (name === 't') inText = false;
        else if (name === 'p') {
          // A line break inside a paragraph (<a:br/>) stays one.
          const text = paragraph
            .split('\n')
            .map((line) => line.trim())
            .join('\n')
            .trim();
          if (text === '') return;
          // Past the room left, the rest of the slide would be cut anyway.
          chars += text.length + 1;
          if (chars > maxChars) throw new StopReading();
          if (cell) cell.push(text);
          // A line that starts like a heading is text, not a heading (the headings say where each slide starts).
          else shapeLines.push(text.startsWith('#') ? `\\${text}` : text);
        } else if (name === 'tc' && cells && cell) {
          cells.push(tableCell(cell.join(' ')));
          cell = undefined;
        } else if (name === 'tr' && cells) {
          if (cells.some((c) => c !== '')) shapeLines.push(`| ${cells.join(' | ')} |`);
          cells = undefined;
        } else if (name === 'sp' || name === 'graphicFrame') {
          if (placeholder === 'title' || placeholder === 'ctrTitle') title = title || shapeLines.join(' ');
          else if (keep(placeholder)) for (const line of shapeLines) lines.push(line);
          shapeLines = [];
        }
      },
      text(text) {
        if (inText) paragraph += text;
      },
    },
    signal,
  );
  return { title, lines, hidden };
}
