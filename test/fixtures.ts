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
