import { constants as zlibConstants, crc32, deflateRawSync, deflateSync } from 'node:zlib';

/**
 * Tiny, valid documents built in memory, for tests and benchmarks of the
 * format converters: no binary fixtures to commit, and any size on demand.
 * Pure functions; nothing here touches the disk.
 */

/**
 * A PDF with one page per string (Helvetica, one text line per '\n'-separated
 * line). `compress` deflates the page streams (/FlateDecode), as most real
 * PDFs do; `encrypted` adds a standard security handler whose password is not
 * empty (and unknown): readers must refuse it.
 */
export function makePdf(pages: readonly string[], options: { encrypted?: boolean; compress?: boolean } = {}): Buffer {
  const objects: string[] = [];
  // 1: catalog, 2: page tree, 3: font, then per page a page object and its content stream.
  const pageIds = pages.map((_, i) => 4 + i * 2);
  objects.push('<< /Type /Catalog /Pages 2 0 R >>');
  objects.push(`<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`);
  objects.push('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  for (const [i, text] of pages.entries()) {
    const lines = text.split('\n');
    const ops = ['BT', '/F1 12 Tf', '14 TL', '72 720 Td'];
    for (const [n, line] of lines.entries()) {
      if (n > 0) ops.push('T*');
      ops.push(`(${escapePdfString(line)}) Tj`);
    }
    ops.push('ET');
    const stream = ops.join('\n');
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${pageIds[i]! + 1} 0 R >>`,
    );
    if (options.compress) {
      const data = deflateSync(Buffer.from(stream, 'latin1')).toString('latin1');
      objects.push(`<< /Length ${data.length} /Filter /FlateDecode >>\nstream\n${data}\nendstream`);
    } else {
      objects.push(`<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`);
    }
  }
  const encrypt = options.encrypted
    ? ` /Encrypt << /Filter /Standard /V 1 /R 2 /O <${'ab'.repeat(32)}> /U <${'ab'.repeat(32)}> /P -4 >> /ID [<${'01'.repeat(16)}> <${'01'.repeat(16)}>]`
    : '';
  return serializePdf(objects, encrypt);
}

/**
 * A one-page PDF whose content stream is a Flate stream of `inflatedBytes`
 * zero bytes (NUL is white space to a PDF lexer): a decompression bomb of a
 * few MB that a reader decoding the whole stream inflates to gigabytes.
 */
export function makeFlateBombPdf(inflatedBytes: number): Buffer {
  const data = zlibZeros(inflatedBytes).toString('latin1');
  return serializePdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [4 0 R] /Count 1 >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>',
    `<< /Length ${data.length} /Filter /FlateDecode >>\nstream\n${data}\nendstream`,
  ]);
}

/**
 * A zlib stream of `size` zero bytes, built from one compressed MiB repeated:
 * each piece ends in a full flush (byte-aligned, no back references), so the
 * pieces concatenate, and the zeros are never held in memory (about 1 KiB of
 * output per MiB of input).
 */
export function zlibZeros(size: number): Buffer {
  const MIB = 1024 * 1024;
  const piece = (n: number) => deflateRawSync(Buffer.alloc(n), { level: 9, finishFlush: zlibConstants.Z_FULL_FLUSH });
  const whole = piece(MIB);
  const parts: Buffer[] = [Buffer.from([0x78, 0xda])];
  for (let left = size; left > 0; left -= MIB) parts.push(left >= MIB ? whole : piece(left));
  parts.push(deflateRawSync(Buffer.alloc(0))); // the final (empty) block
  // Adler-32 of zeros: a stays 1, b adds a (1) per byte.
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE((((size % 65521) << 16) | 1) >>> 0);
  parts.push(adler);
  return Buffer.concat(parts);
}

/** Numbers the objects, writes the cross-reference table and the trailer. */
function serializePdf(objects: readonly string[], trailerExtra = ''): Buffer {
  // The comment of high bytes after the header marks the file as binary, as real PDFs do
  // (without it this all-ASCII PDF would be served as text).
  let out = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets: number[] = [];
  for (const [i, body] of objects.entries()) {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  }
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) out += `${String(offset).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R${trailerExtra} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

function escapePdfString(text: string): string {
  return text.replace(/[\\()]/g, (c) => `\\${c}`).replace(/[^\x20-\x7e]/g, '?');
}

export interface ZipEntryInput {
  name: string;
  data: string | Uint8Array;
  /** Deflate the entry (default true); false stores it. */
  deflate?: boolean;
  /** Lie about the uncompressed size in the headers (to build zip-bomb-like files). */
  declaredSize?: number;
}

/** A zip archive (no ZIP64, no extras): enough for .docx fixtures, honest or not. */
export function makeZip(entries: readonly ZipEntryInput[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const raw = typeof entry.data === 'string' ? Buffer.from(entry.data, 'utf8') : Buffer.from(entry.data);
    const deflate = entry.deflate ?? true;
    const stored = deflate ? deflateRawSync(raw) : raw;
    const name = Buffer.from(entry.name, 'utf8');
    const crc = crc32(raw);
    const size = entry.declaredSize ?? raw.length;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(deflate ? 8 : 0, 8);
    local.writeUInt32LE(0, 10); // time, date
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(stored.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(deflate ? 8 : 0, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(stored.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, stored);
    centrals.push(central, name);
    offset += local.length + name.length + stored.length;
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

/** Blocks makeDocx understands: a paragraph, a heading, or a table of text cells. */
export type DocxParagraph = string | { heading: 1 | 2 | 3; text: string } | { table: string[][] };

/** The minimal parts of a Word document, ready for makeZip (to corrupt or inflate them). */
export function docxParts(paragraphs: readonly DocxParagraph[]): ZipEntryInput[] {
  const run = (text: string) => `<w:r><w:t xml:space="preserve">${escapeXml(text)}</w:t></w:r>`;
  const body = paragraphs
    .map((p) => {
      if (typeof p !== 'string' && 'table' in p) {
        const rows = p.table.map((row) => `<w:tr>${row.map((cell) => `<w:tc><w:p>${run(cell)}</w:p></w:tc>`).join('')}</w:tr>`);
        return `<w:tbl>${rows.join('')}</w:tbl>`;
      }
      const { text, style } = typeof p === 'string' ? { text: p, style: '' } : { text: p.text, style: `Heading${p.heading}` };
      const pPr = style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : '';
      return `<w:p>${pPr}${run(text)}</w:p>`;
    })
    .join('');
  const styles = [1, 2, 3]
    .map(
      (n) =>
        `<w:style w:type="paragraph" w:styleId="Heading${n}"><w:name w:val="heading ${n}"/></w:style>`,
    )
    .join('');
  return [
    {
      name: '[Content_Types].xml',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
        '<Default Extension="xml" ContentType="application/xml"/>' +
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
        '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>' +
        '</Types>',
    },
    {
      name: '_rels/.rels',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
        '</Relationships>',
    },
    {
      name: 'word/_rels/document.xml.rels',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>' +
        '</Relationships>',
    },
    {
      name: 'word/styles.xml',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
        `<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">${styles}</w:styles>`,
    },
    {
      name: 'word/document.xml',
      data:
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
        `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`,
    },
  ];
}

/** A .docx with the given paragraphs. */
export function makeDocx(paragraphs: readonly DocxParagraph[]): Buffer {
  return makeZip(docxParts(paragraphs));
}

const XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>';
const RELS_NS = 'http://schemas.openxmlformats.org/package/2006/relationships';
const DOC_REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

function rels(targets: readonly [id: string, type: string, target: string][]): string {
  const items = targets.map(([id, type, target]) => `<Relationship Id="${id}" Type="${DOC_REL}/${type}" Target="${target}"/>`);
  return `${XML_HEAD}<Relationships xmlns="${RELS_NS}">${items.join('')}</Relationships>`;
}

/** A cell of makeXlsx: text (a shared string), a number, a boolean, or a number shown as a date (a date style). */
export type XlsxCell = string | number | boolean | null | { date: number } | { inline: string } | { error: string };

export interface XlsxSheet {
  name: string;
  rows: XlsxCell[][];
  hidden?: boolean;
}

/** The parts of an Excel workbook, ready for makeZip: shared strings, a date style, one worksheet per sheet. */
export function xlsxParts(sheets: readonly XlsxSheet[], options: { date1904?: boolean; worksheetXml?: (i: number) => string } = {}): ZipEntryInput[] {
  const strings: string[] = [];
  const shared = (text: string) => {
    const at = strings.indexOf(text);
    return at === -1 ? strings.push(text) - 1 : at;
  };
  const column = (i: number) => {
    let name = '';
    for (let n = i + 1; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
    return name;
  };
  const worksheet = (sheet: XlsxSheet) => {
    const rows = sheet.rows.map((row, r) => {
      const cells = row.map((cell, c) => {
        const ref = `${column(c)}${r + 1}`;
        if (cell === null) return '';
        if (typeof cell === 'string') return `<c r="${ref}" t="s"><v>${shared(cell)}</v></c>`;
        if (typeof cell === 'number') return `<c r="${ref}"><v>${cell}</v></c>`;
        if (typeof cell === 'boolean') return `<c r="${ref}" t="b"><v>${cell ? 1 : 0}</v></c>`;
        if ('date' in cell) return `<c r="${ref}" s="1"><v>${cell.date}</v></c>`;
        if ('inline' in cell) return `<c r="${ref}" t="inlineStr"><is><t>${escapeXml(cell.inline)}</t></is></c>`;
        return `<c r="${ref}" t="e"><v>${escapeXml(cell.error)}</v></c>`;
      });
      return `<row r="${r + 1}">${cells.join('')}</row>`;
    });
    return `${XML_HEAD}<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${rows.join('')}</sheetData></worksheet>`;
  };
  const sheetXml = sheets.map((sheet, i) => options.worksheetXml?.(i) ?? worksheet(sheet));
  const workbook =
    `${XML_HEAD}<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="${DOC_REL}">` +
    `<workbookPr${options.date1904 ? ' date1904="1"' : ''}/><sheets>` +
    sheets.map((s, i) => `<sheet name="${escapeXml(s.name)}" sheetId="${i + 1}"${s.hidden ? ' state="hidden"' : ''} r:id="rId${i + 1}"/>`).join('') +
    '</sheets></workbook>';
  const sst =
    `${XML_HEAD}<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="${strings.length}">` +
    strings.map((t) => `<si><t xml:space="preserve">${escapeXml(t)}</t></si>`).join('') +
    '</sst>';
  const styles =
    `${XML_HEAD}<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
    '<numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy\\-mm\\-dd;@"/></numFmts>' +
    '<cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="164" applyNumberFormat="1"/></cellXfs></styleSheet>';
  return [
    { name: '[Content_Types].xml', data: `${XML_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>` },
    { name: '_rels/.rels', data: rels([['rId1', 'officeDocument', 'xl/workbook.xml']]) },
    {
      name: 'xl/_rels/workbook.xml.rels',
      data: rels([
        ...sheets.map((_, i) => [`rId${i + 1}`, 'worksheet', `worksheets/sheet${i + 1}.xml`] as [string, string, string]),
        ['rIdS', 'sharedStrings', 'sharedStrings.xml'],
        ['rIdT', 'styles', '/xl/styles.xml'],
      ]),
    },
    { name: 'xl/workbook.xml', data: workbook },
    ...sheetXml.map((data, i) => ({ name: `xl/worksheets/sheet${i + 1}.xml`, data })),
    { name: 'xl/sharedStrings.xml', data: sst },
    { name: 'xl/styles.xml', data: styles },
  ];
}

/** An .xlsx with the given sheets. */
export function makeXlsx(sheets: readonly XlsxSheet[], options: { date1904?: boolean } = {}): Buffer {
  return makeZip(xlsxParts(sheets, options));
}

export interface PptxSlide {
  title?: string;
  /** Paragraphs of a body text box. */
  body?: string[];
  /** A table, a row of cells each. */
  table?: string[][];
  notes?: string[];
  hidden?: boolean;
}

/** The parts of a PowerPoint presentation, ready for makeZip: slides in order, notes pages where given. */
export function pptxParts(slides: readonly PptxSlide[]): ZipEntryInput[] {
  const A = 'http://schemas.openxmlformats.org/drawingml/2006/main';
  const P = 'http://schemas.openxmlformats.org/presentationml/2006/main';
  const para = (text: string) => `<a:p><a:r><a:rPr lang="en-US"/><a:t>${escapeXml(text)}</a:t></a:r></a:p>`;
  const shape = (type: string | null, paragraphs: readonly string[]) =>
    `<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/><p:nvPr>${type === null ? '' : `<p:ph type="${type}"/>`}</p:nvPr></p:nvSpPr>` +
    `<p:txBody><a:bodyPr/>${paragraphs.map(para).join('')}</p:txBody></p:sp>`;
  const table = (rows: readonly string[][]) =>
    `<p:graphicFrame><a:graphic><a:graphicData><a:tbl>${rows
      .map((row) => `<a:tr>${row.map((cell) => `<a:tc><a:txBody>${para(cell)}</a:txBody></a:tc>`).join('')}</a:tr>`)
      .join('')}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`;
  const parts: ZipEntryInput[] = [
    { name: '[Content_Types].xml', data: `${XML_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>` },
    { name: '_rels/.rels', data: rels([['rId1', 'officeDocument', 'ppt/presentation.xml']]) },
    {
      name: 'ppt/_rels/presentation.xml.rels',
      // Listed out of order: the order of the slides is sldIdLst's.
      data: rels(slides.map((_, i) => [`rId${i + 1}`, 'slide', `slides/slide${i + 1}.xml`] as [string, string, string]).reverse()),
    },
    {
      name: 'ppt/presentation.xml',
      data:
        `${XML_HEAD}<p:presentation xmlns:a="${A}" xmlns:p="${P}" xmlns:r="${DOC_REL}"><p:sldIdLst>` +
        slides.map((_, i) => `<p:sldId id="${256 + i}" r:id="rId${i + 1}"/>`).join('') +
        '</p:sldIdLst></p:presentation>',
    },
  ];
  slides.forEach((slide, i) => {
    const shapes = [
      slide.title !== undefined ? shape('title', [slide.title]) : '',
      slide.body ? shape(null, slide.body) : '',
      slide.table ? table(slide.table) : '',
    ].join('');
    parts.push({
      name: `ppt/slides/slide${i + 1}.xml`,
      data: `${XML_HEAD}<p:sld xmlns:a="${A}" xmlns:p="${P}"${slide.hidden ? ' show="0"' : ''}><p:cSld><p:spTree>${shapes}</p:spTree></p:cSld></p:sld>`,
    });
    if (slide.notes) {
      parts.push({ name: `ppt/slides/_rels/slide${i + 1}.xml.rels`, data: rels([['rId1', 'notesSlide', `../notesSlides/notesSlide${i + 1}.xml`]]) });
      parts.push({
        name: `ppt/notesSlides/notesSlide${i + 1}.xml`,
        data:
          `${XML_HEAD}<p:notes xmlns:a="${A}" xmlns:p="${P}"><p:cSld><p:spTree>` +
          `${shape('sldImg', [])}${shape('body', slide.notes)}${shape('sldNum', [String(i + 1)])}</p:spTree></p:cSld></p:notes>`,
      });
    }
  });
  return parts;
}

/** A .pptx with the given slides. */
export function makePptx(slides: readonly PptxSlide[]): Buffer {
  return makeZip(pptxParts(slides));
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);
}

export type NotebookCell =
  | { cell_type: 'markdown' | 'raw'; source: string | string[] }
  | { cell_type: 'code'; source: string | string[]; outputs?: unknown[]; execution_count?: number | null };

/** An nbformat 4 notebook (JSON text) with the given cells and kernel language. */
export function makeNotebook(cells: readonly NotebookCell[], language = 'python'): string {
  return JSON.stringify(
    {
      nbformat: 4,
      nbformat_minor: 5,
      metadata: {
        kernelspec: { name: language === 'python' ? 'python3' : language, display_name: language, language },
        language_info: { name: language },
      },
      cells: cells.map((cell, i) =>
        cell.cell_type === 'code'
          ? { id: `c${i}`, metadata: {}, execution_count: null, outputs: [], ...cell }
          : { id: `c${i}`, metadata: {}, ...cell },
      ),
    },
    null,
    1,
  );
}
