import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { mayBeText, formatListing, listingName } from '../../src/content/collection.ts';
import { textKind } from '../../src/content/mime.ts';
import { docxConverter } from '../../src/content/converters/docx.ts';
import { htmlToMarkdown } from '../../src/content/converters/html-markdown.ts';
import { alternativeMimeTypes, convertersFor, CONVERTERS } from '../../src/content/converters/index.ts';
import { notebookConverter } from '../../src/content/converters/notebook.ts';
import { pdfConverter } from '../../src/content/converters/pdf.ts';
import {
  ConversionError,
  ConversionUnavailable,
  DEFAULT_CONVERSION_LIMITS,
  type ConversionLimits,
  type Converter,
} from '../../src/content/converters/types.ts';
import { checkZip } from '../../src/content/converters/zip.ts';
import { docxParts, makeDocx, makeFlateBombPdf, makeNotebook, makePdf, makePptx, makeXlsx, makeZip, pptxParts, xlsxParts, zlibZeros } from '../fixtures.ts';
import { pptxConverter } from '../../src/content/converters/pptx.ts';
import { columnOf, excelDate, isBuiltInDateFormat, isDateFormat, unescapeXstring, xlsxConverter } from '../../src/content/converters/xlsx.ts';
import { tableCell } from '../../src/content/converters/ooxml.ts';
import { ConversionCache, Formats, truncateUtf8, truncationMarker, type Alternative } from '../../src/content/formats.ts';
import {
  childCommand,
  ConversionWorker,
  cpuMsFromProcStat,
  DEFAULT_CHILD_MEMORY,
  MALLOC_ARENAS,
  exitMessage,
  rssFromProcStatus,
  rssFromPs,
} from '../../src/content/isolate.ts';
import { locatedWithinBudget, withinOutputBudget } from '../../src/content/worker.ts';
import { builtScriptUrl } from '../../src/workers.ts';

/** The built worker script: the conversion process does not load the .ts sources (npm test builds first; a stale one throws). */
const WORKER = builtScriptUrl('worker');
import { decodeText } from '../../src/content/read.ts';
import { openDb } from '../../src/index/db.ts';
import { EntryKind, type EntryRow } from '../../src/entry.ts';
import { createLogger, silentLogger } from '../../src/log.ts';
import { tempDir, waitFor } from '../basics.ts';

const limits = DEFAULT_CONVERSION_LIMITS;

async function convert(converter: Converter, bytes: Buffer, overrides: Partial<ConversionLimits> = {}) {
  return converter.convert({
    name: 'fixture',
    bytes,
    text: decodeText(bytes),
    signal: new AbortController().signal,
    limits: { ...limits, ...overrides },
  });
}

async function rejectsConversion(promise: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ConversionError, `expected a ConversionError, got ${String(error)}`);
    assert.match(error.message, message);
    return true;
  });
}

function entry(name: string, mime: string, uri = `file:///r/${name}`): EntryRow {
  const dot = name.lastIndexOf('.');
  return {
    uri,
    parent: 'file:///r/',
    root: 0,
    name,
    ext: dot === -1 ? '' : name.slice(dot + 1),
    kind: EntryKind.document,
    size: 0,
    mtime: 0,
    ino: 0,
    dev: 0,
    mime,
  };
}

const NOTEBOOK = makeNotebook([
  { cell_type: 'markdown', source: ['# Analysis\n', 'Loads the data.'] },
  {
    cell_type: 'code',
    source: 'print("hi")\nx = 1 + 1\nx',
    outputs: [
      { output_type: 'stream', name: 'stdout', text: ['hi\n'] },
      { output_type: 'execute_result', execution_count: 1, metadata: {}, data: { 'text/plain': ['2'] } },
      {
        output_type: 'display_data',
        metadata: {},
        data: { 'image/png': 'iVBORw0KGgoAAAANSUhEUg==', 'text/plain': ['<Figure size 640x480>'] },
      },
      { output_type: 'stream', name: 'stdout', text: 'y'.repeat(5000) },
      { output_type: 'error', ename: 'ValueError', evalue: 'bad', traceback: ['\u001b[31mValueError\u001b[0m: bad'] },
    ],
  },
  { cell_type: 'code', source: 'print("```")', outputs: [] },
  { cell_type: 'raw', source: 'raw text' },
]);

describe('notebook converter', () => {
  test('cells in order, code fenced with the kernel language, outputs kept or summarised', async () => {
    const md = (await convert(notebookConverter, Buffer.from(NOTEBOOK))) as string;
    const expectedOrder = ['# Analysis\nLoads the data.', '```python\nprint("hi")\nx = 1 + 1\nx\n```', '```output\nhi\n```',
      '```output\n2\n```', '```output\n<Figure size 640x480>\n```', '_[image/png output, 16 bytes, not shown]_',
      '```output\nyyyy', '[... 3000 more characters of output not shown]', '```output\nValueError: bad\n```',
      '````python\nprint("```")\n````', '```\nraw text\n```'];
    let at = 0;
    for (const piece of expectedOrder) {
      const found = md.indexOf(piece, at);
      assert.ok(found >= at, `missing or out of order: ${JSON.stringify(piece)}\n--- got:\n${md}`);
      at = found + piece.length;
    }
    assert.ok(!md.includes('iVBORw0KGgo'), 'image data is not inlined');
    assert.ok(!md.includes('\u001b['), 'ANSI colour codes are stripped');
    assert.ok(!md.includes('y'.repeat(2001)), 'a large output is cut at the budget');
  });

  test('a cell of 200,000 backtick runs is fenced, and the other cells kept (the runs were spread as arguments: stack overflow)', async () => {
    const cells = [
      { cell_type: 'code' as const, source: '` '.repeat(200_000) },
      { cell_type: 'markdown' as const, source: 'findme after the ticks' },
    ];
    const md = (await convert(notebookConverter, Buffer.from(makeNotebook(cells)))) as string;
    assert.match(md, /findme after the ticks/);
    assert.match(md, /^```python\n` ` /m, 'a fence of three: no run inside is longer than one');
  });

  test('the kernel language comes from the notebook', async () => {
    const md = (await convert(notebookConverter, Buffer.from(makeNotebook([{ cell_type: 'code', source: 'x <- 1' }], 'R')))) as string;
    assert.match(md, /^```R\nx <- 1\n```/m);
  });

  test('invalid JSON and non-notebooks are refused', async () => {
    await rejectsConversion(convert(notebookConverter, Buffer.from('{"cells": [')), /not valid JSON/);
    await rejectsConversion(convert(notebookConverter, Buffer.from('{"a": 1}')), /no cells/);
    await rejectsConversion(convert(notebookConverter, Buffer.from([0x00, 0xff, 0x00])), /not UTF-8/);
  });
});

describe('PDF converter', () => {
  test('two pages of text, in order, each under its page line', async () => {
    const text = await convert(pdfConverter, makePdf(['First page\nsecond line', 'Second (page) text']));
    assert.equal(text, '--- page 1 ---\nFirst page\nsecond line\n\n--- page 2 ---\nSecond (page) text\n');
  });

  test('compressed page streams (FlateDecode) read the same', async () => {
    const text = await convert(pdfConverter, makePdf(['Deflated page', 'And another'], { compress: true }));
    assert.equal(text, '--- page 1 ---\nDeflated page\n\n--- page 2 ---\nAnd another\n');
  });

  test('stops at the page budget and says how many pages were left', async () => {
    const pages = Array.from({ length: 12 }, (_, i) => `Body of page ${i + 1}`);
    const text = (await convert(pdfConverter, makePdf(pages), { pdfPages: 5 })) as string;
    assert.ok(text.includes('--- page 5 ---\nBody of page 5'));
    assert.ok(!text.includes('page 6 ---'));
    assert.ok(text.endsWith('--- 7 more pages not extracted ---\n'), text);
  });

  test('a corrupt or truncated PDF is refused', async () => {
    await rejectsConversion(convert(pdfConverter, Buffer.from('%PDF-1.4\nthis is not a pdf at all')), /cannot be parsed/);
    const pdf = makePdf(['a', 'b']);
    await rejectsConversion(convert(pdfConverter, pdf.subarray(0, 40)), /cannot be parsed/);
  });

  test('an encrypted PDF is refused as such', async () => {
    await rejectsConversion(convert(pdfConverter, makePdf(['secret'], { encrypted: true })), /encrypted/);
  });

  test('an aborted conversion stops', async () => {
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(
      pdfConverter.convert({ name: 'x', bytes: makePdf(['a', 'b']), text: undefined, signal: controller.signal, limits }),
    );
  });
});

describe('docx converter', () => {
  test('headings, paragraphs and tables as Markdown, prose unescaped', async () => {
    const md = await convert(
      docxConverter,
      makeDocx([
        { heading: 1, text: 'Quarterly report' },
        'Sales grew (a lot). Costs fell! A & B <c>',
        { table: [['Region', 'Sales'], ['North', '12 | 13']] },
        { heading: 2, text: 'After' },
      ]),
    );
    assert.equal(
      md,
      '# Quarterly report\n\nSales grew (a lot). Costs fell! A & B <c>\n\n| Region | Sales |\n| --- | --- |\n| North | 12 \\| 13 |\n\n## After\n',
    );
  });

  test('a stored (uncompressed) docx works too', async () => {
    const md = await convert(docxConverter, makeZip(docxParts(['plain']).map((p) => ({ ...p, deflate: false }))));
    assert.equal(md, 'plain\n');
  });

  test('a truncated docx is refused before mammoth sees it', async () => {
    const docx = makeDocx(['text']);
    await rejectsConversion(convert(docxConverter, docx.subarray(0, docx.length - 30)), /truncated|not a zip/);
    await rejectsConversion(convert(docxConverter, docx.subarray(0, 200)), /truncated|not a zip/);
  });

  test('a zip bomb is refused: declared sizes over the budget, or an entry inflating past its declaration', async () => {
    const declared = docxParts(['x']).map((p) => (p.name === 'word/document.xml' ? { ...p, declaredSize: 0xfffffff0 } : p));
    await rejectsConversion(convert(docxConverter, makeZip(declared)), /more than 67108864 bytes/);
    const lying = docxParts(['x']).map((p) =>
      p.name === 'word/document.xml' ? { ...p, data: Buffer.alloc(20 * 1024 * 1024, 0x20), declaredSize: 1000 } : p,
    );
    await rejectsConversion(convert(docxConverter, makeZip(lying)), /past its declared size/);
  });

  test('a directory record past the count, or two entries of one name, is refused: JSZip would read the one never checked', async () => {
    const hidden = { name: 'word/document.xml', data: docxParts(['HIDDENTEXT']).find((p) => p.name === 'word/document.xml')!.data };
    const parts = [...docxParts(['CHECKEDTEXT']), hidden];
    await rejectsConversion(convert(docxConverter, makeZip(parts)), /two entries of one name/);
    // The end record counts all but the last record (and its bytes): mammoth converted HIDDENTEXT.
    const zip = makeZip(parts);
    const end = zip.length - 22;
    const lastRecord = 46 + Buffer.byteLength(hidden.name);
    zip.writeUInt16LE(parts.length - 1, end + 8);
    zip.writeUInt16LE(parts.length - 1, end + 10);
    zip.writeUInt32LE(zip.readUInt32LE(end + 12) - lastRecord, end + 12);
    await rejectsConversion(convert(docxConverter, zip), /central directory holds more than its end record says/);
    assert.match((await convert(docxConverter, makeZip(docxParts(['CHECKEDTEXT'])))) as string, /CHECKEDTEXT/);
  });

  test('an honest archive within the budget passes checkZip; one over it does not', () => {
    const zip = makeZip([{ name: 'a.txt', data: 'a'.repeat(1000) }, { name: 'b.txt', data: 'b'.repeat(1000) }]);
    checkZip(zip, { bytes: 2000, entries: 10 });
    assert.throws(() => checkZip(zip, { bytes: 1999, entries: 10 }), ConversionError);
    assert.throws(() => checkZip(zip, { bytes: 2000, entries: 1 }), /2 entries/);
    assert.throws(() => checkZip(Buffer.from('not a zip'), { bytes: 10, entries: 1 }), /not a zip/);
  });

  test('htmlToMarkdown: the HTML mammoth writes', () => {
    assert.equal(
      htmlToMarkdown(
        '<h2>T &amp; <em>x</em></h2><ul><li>a<ul><li>b</li><li>c</li></ul></li><li>d</li></ul>' +
          '<ol><li><p>one</p><p>two</p></li></ol><p><strong>Bold </strong>x <a href="http://e.com">link</a>' +
          '<a id="anchor"></a> <img src="" alt="image: image/png" /></p><table><tr><td><p>a</p><p>b</p></td><td>c</td></tr></table>',
      ),
      '## T & *x*\n\n- a\n  - b\n  - c\n- d\n\n1. one\n\n   two\n\n**Bold** x [link](http://e.com) [image: image/png]\n\n| a b | c |\n| --- | --- |\n',
    );
    assert.equal(htmlToMarkdown(''), '\n');
  });
});

async function located(converter: Converter, bytes: Buffer, overrides: Partial<ConversionLimits> = {}) {
  const input = { name: 'fixture', bytes, text: undefined, signal: new AbortController().signal, limits: { ...limits, ...overrides } };
  const result = await converter.convertLocated!(input);
  // convert is the same text without the places.
  assert.equal(await converter.convert(input), result.text);
  return result;
}

/** Each place points at the heading of its sheet or slide. */
function assertPlacesAtHeadings(result: { text: string; places: { offset: number; unit: string; number: number }[] }, heading: string) {
  for (const place of result.places) {
    assert.ok(result.text.startsWith(`## ${heading} ${place.number}`, place.offset), `${place.unit} ${place.number} at ${place.offset}`);
  }
}

/** A billion-laughs document: entities declared in a DTD, each ten of the one before. */
const ENTITY_BOMB =
  '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">' +
  Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`).join('') +
  ']><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row><c t="inlineStr"><is><t>&lol9;</t></is></c></row></sheetData></worksheet>';

describe('xlsx converter', () => {
  test('each sheet in workbook order under its heading, as a table of the values', async () => {
    const result = await located(
      xlsxConverter,
      makeXlsx([
        { name: 'Budget', rows: [['Item', 'Cost', 'When'], ['Rent | flat', 1200.5, { date: 45352 }], [null, true, { date: 45352.5625 }], ['Fee', null, null, 'far right']] },
        { name: 'Empty', rows: [] },
        { name: 'Odd', hidden: true, rows: [[{ inline: 'inline\ntext' }, { error: '#DIV/0!' }, false, 0.1 + 0.2]] },
      ]),
    );
    assert.equal(
      result.text,
      '## Sheet 1: Budget\n\n| Item | Cost | When |  |\n| --- | --- | --- | --- |\n| Rent \\| flat | 1200.5 | 2024-03-01 |  |\n|  | TRUE | 2024-03-01 13:30:00 |  |\n| Fee |  |  | far right |\n' +
        '\n## Sheet 2: Empty\n\n(empty)\n' +
        '\n## Sheet 3: Odd (hidden)\n\n| inline text | #DIV/0! | FALSE | 0.30000000000000004 |\n| --- | --- | --- | --- |\n',
    );
    assert.deepEqual(
      result.places.map((p) => [p.unit, p.number, p.name]),
      [['sheet', 1, 'Budget'], ['sheet', 2, 'Empty'], ['sheet', 3, 'Odd']],
    );
    assertPlacesAtHeadings(result, 'Sheet');
  });

  test('a table starts at its leftmost used column; a stored (uncompressed) workbook reads the same', async () => {
    const sheets = [{ name: 'S', rows: [[null, null, 'c1', 'd1'], [null, null, null, 'd2']] }];
    const expected = '## Sheet 1: S\n\n| c1 | d1 |\n| --- | --- |\n|  | d2 |\n';
    assert.equal((await located(xlsxConverter, makeXlsx(sheets))).text, expected);
    assert.equal((await located(xlsxConverter, makeZip(xlsxParts(sheets).map((p) => ({ ...p, deflate: false }))))).text, expected);
  });

  test('dates: the 1900 system with its phantom leap day, the 1904 system, times alone', async () => {
    assert.equal(excelDate(1, false), '1900-01-01');
    assert.equal(excelDate(59, false), '1900-02-28');
    assert.equal(excelDate(60, false), '1900-02-29');
    assert.equal(excelDate(61, false), '1900-03-01');
    assert.equal(excelDate(25569, false), '1970-01-01');
    assert.equal(excelDate(45352.75, false), '2024-03-01 18:00:00');
    assert.equal(excelDate(0.5, false), '12:00:00');
    assert.equal(excelDate(0.99999999, false), '1900-01-01', 'a time that rounds up to midnight is the next day');
    assert.equal(excelDate(0, true), '1904-01-01');
    assert.equal(excelDate(1e20, false), '100000000000000000000', 'past the Date range: the number');
    assert.equal(excelDate(2958466, false), '2958466', 'past 9999-12-31: the number');
    assert.equal(excelDate(-1, false), '-1');
    assert.equal(excelDate(43890, true), '2024-03-01');
    const text = (await located(xlsxConverter, makeXlsx([{ name: 'S', rows: [[{ date: 0 }, { date: 1 }]] }], { date1904: true }))).text;
    assert.match(text, /\| 1904-01-01 \| 1904-01-02 \|/);
  });

  test('which number formats are dates', () => {
    for (const id of [14, 15, 22, 45, 47]) assert.equal(isBuiltInDateFormat(id), true, String(id));
    for (const id of [0, 1, 2, 9, 10, 11, 12, 13, 23, 37, 44, 48, 49]) assert.equal(isBuiltInDateFormat(id), false, String(id));
    for (const code of ['yyyy-mm-dd', 'd/m/yy', '[$-409]mmmm d, yyyy;@', 'h:mm:ss AM/PM', '[h]:mm', 'yyyy\\-mm\\-dd;@']) {
      assert.equal(isDateFormat(code), true, code);
    }
    for (const code of ['General', '0.00', '#,##0;[Red]-#,##0', '0.00E+00', '"days" 0', '@', '_-* #,##0_-', '[Color10]0']) {
      assert.equal(isDateFormat(code), false, code);
    }
  });

  test('cell references and escaped characters', () => {
    assert.deepEqual(['A1', 'Z9', 'AA10', 'XFD1048576', '12'].map(columnOf), [0, 25, 26, 16383, undefined]);
    assert.equal(unescapeXstring('a_x000D_b'), 'a\rb');
    assert.equal(unescapeXstring('_x005F_x000D_'), '_x000D_', 'an escaped underscore is not an escape');
    assert.equal(unescapeXstring('plain_x'), 'plain_x');
  });

  test('past the cell budget: what was read, and lines saying what was not', async () => {
    const rows = Array.from({ length: 10 }, (_, r) => [`r${r}a`, `r${r}b`]);
    const result = await located(xlsxConverter, makeXlsx([{ name: 'One', rows }, { name: 'Two', rows }]), { sheetCells: 7 });
    assert.match(result.text, /\| r3a \| {2}\|\n\n\[the rest of this sheet not read: over the conversion budget\]\n\n\[1 more sheet not extracted/);
    assert.doesNotMatch(result.text, /r4a|Sheet 2/);
  });

  test('a sheet far past the output budget is cut by rows, with the count of rows left', async () => {
    const rows = Array.from({ length: 3000 }, (_, r) => [`row ${r}`, 'x'.repeat(100)]);
    const result = await located(xlsxConverter, makeXlsx([{ name: 'Big', rows }]), { outputBytes: 10_000 });
    assert.ok(result.text.length < 12_000, `${result.text.length} chars`);
    assert.match(result.text, /\n\n\[\d+ more rows not shown: over the conversion budget\]\n$/);
  });

  test('only the shared strings the kept cells use are read: a table of millions of strings costs no memory', async () => {
    const sst = `<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">${'<si><t>x</t></si>'.repeat(1_000_000)}</sst>`;
    const parts = xlsxParts([{ name: 'S', rows: [['first']] }]).map((p) =>
      p.name === 'xl/sharedStrings.xml' ? { ...p, data: sst.replace('<si><t>x</t></si>', '<si><r><t>fir</t></r><r><t>st</t></r><rPh><t>ruby</t></rPh></si>') } : p,
    );
    assert.equal((await located(xlsxConverter, makeZip(parts))).text, '## Sheet 1: S\n\n| first |\n| --- |\n');
  });

  test('hostile workbooks are refused: zip bomb, entity bomb, malformed XML, truncated, not a workbook', async () => {
    const declared = xlsxParts([{ name: 'S', rows: [['x']] }]).map((p) => (p.name === 'xl/worksheets/sheet1.xml' ? { ...p, declaredSize: 0xfffffff0 } : p));
    await rejectsConversion(located(xlsxConverter, makeZip(declared)), /more than 67108864 bytes/);
    const lying = xlsxParts([{ name: 'S', rows: [['x']] }]).map((p) =>
      p.name === 'xl/sharedStrings.xml' ? { ...p, data: Buffer.alloc(20 * 1024 * 1024, 0x20), declaredSize: 1000 } : p,
    );
    await rejectsConversion(located(xlsxConverter, makeZip(lying)), /past its declared size/);
    const bomb = makeZip(xlsxParts([{ name: 'S', rows: [] }], { worksheetXml: () => ENTITY_BOMB }));
    await rejectsConversion(located(xlsxConverter, bomb), /sheet1\.xml is not well-formed XML/);
    const broken = makeZip(xlsxParts([{ name: 'S', rows: [] }], { worksheetXml: () => '<worksheet><sheetData><row>' }));
    await rejectsConversion(located(xlsxConverter, broken), /sheet1\.xml is not well-formed XML/);
    const whole = makeXlsx([{ name: 'S', rows: [['x']] }]);
    await rejectsConversion(located(xlsxConverter, whole.subarray(0, whole.length - 30)), /truncated|not a zip/);
    await rejectsConversion(located(xlsxConverter, makeDocx(['a letter'])), /not an Excel workbook/);
  });
});

describe('hostile Office documents, as a red team built them: bounded, and a ConversionError at worst', () => {
  // Each of these took the converter to its time or memory budget, or threw a RangeError, before it was fixed.
  // The ceilings are generous: the quadratic forms took minutes.
  const ws = (body: string) => `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${body}</sheetData></worksheet>`;
  const sheetWith = (body: string, sharedStrings?: string) =>
    makeZip(
      xlsxParts([{ name: 'S', rows: [] }], { worksheetXml: () => ws(body) }).map((p) =>
        sharedStrings !== undefined && p.name === 'xl/sharedStrings.xml' ? { ...p, data: sharedStrings } : p,
      ),
    );

  test('a cell past column XFD is no cell (the table would be 4e15 columns wide)', { timeout: 60_000 }, async () => {
    const text = (await located(xlsxConverter, sheetWith('<row r="1"><c r="A1"><v>1</v></c><c r="AAAAAAAAAAAA1"><v>2</v></c><c r="xfd1"><v>3</v></c></row>'))).text;
    assert.ok(text.length < 200_000, `${text.length} chars`);
    assert.match(text, /^\| 1 \| .*\| 3 \|$/m, 'XFD, the last column, is one (a lowercase reference too)');
    assert.doesNotMatch(text, /\| 2 \|/);
  });

  test('long runs of blanks in a cell, a title or a number format cost linear time', { timeout: 60_000 }, async () => {
    const blanks = ' '.repeat(1_000_000);
    assert.equal(tableCell(`${blanks}x`), 'x');
    assert.equal(tableCell(`a ${blanks}\n${blanks} b|c`), 'a b\\|c');
    assert.equal(isDateFormat('['.repeat(200_000)), false);
    const deck = await located(pptxConverter, makePptx([{ title: `${blanks}Title`, table: [[`${blanks}cell`]] }]));
    assert.match(deck.text, /^## Slide 1: Title\n\n\| cell \|\n$/);
  });

  test('a shared string used many times is charged as shown: the text stays near the output budget', { timeout: 60_000 }, async () => {
    const big = 'y'.repeat(100_000);
    const sst = `<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>${big}</t></si></sst>`;
    const row = Array.from({ length: 300 }, () => '<c t="s"><v>0</v></c>').join('');
    const text = (await located(xlsxConverter, sheetWith(`<row>${row}</row><row>${row}</row>`, sst), { outputBytes: 1_000_000 })).text;
    assert.ok(text.length < 1_300_000, `${text.length} chars`);
  });

  test('a slide of 300,000 paragraphs stops at the budget (it overflowed the stack)', { timeout: 60_000 }, async () => {
    const parts = pptxParts([{ body: ['p'] }]).map((p) =>
      p.name === 'ppt/slides/slide1.xml' ? { ...p, data: String(p.data).replace(/<a:p>.*<\/a:p>/, '<a:p><a:r><a:t>p</a:t></a:r></a:p>'.repeat(300_000)) } : p,
    );
    const text = (await located(pptxConverter, makeZip(parts), { outputBytes: 100_000 })).text;
    assert.ok(text.length <= 100_100, `${text.length} chars`);
  });

  test('sheets and slides that name one part read it once; sheets past 1,000 are counted', { timeout: 60_000 }, async () => {
    const workbook = (count: number) =>
      '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>' +
      Array.from({ length: count }, (_, i) => `<sheet name="s${i}" sheetId="${i + 1}" r:id="rId1"/>`).join('') +
      '</sheets></workbook>';
    const reuse = (count: number) =>
      makeZip(xlsxParts([{ name: 'S', rows: [['only']] }]).map((p) => (p.name === 'xl/workbook.xml' ? { ...p, data: workbook(count) } : p)));
    const three = (await located(xlsxConverter, reuse(3))).text;
    assert.equal((three.match(/\| only \|/g) ?? []).length, 1);
    assert.match(three, /## Sheet 3: s2\n\n\(the same worksheet as sheet 1\)\n/);
    const many = await located(xlsxConverter, reuse(1500));
    assert.equal(many.places.length, 1000);
    assert.match(many.text, /\[500 more sheets not extracted: over the conversion budget\]\n$/);
  });

  test('odd values: an empty or non-decimal shared index is blank, a non-decimal number is shown as written', async () => {
    const text = (await located(xlsxConverter, sheetWith(
      '<row><c t="s"><v></v></c><c t="s"><v>0x0</v></c><c><v>0x10</v></c><c s="1"><v>0x10</v></c><c t="s"><v>0</v></c></row>',
      '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>FIRST</t></si></sst>',
    ))).text;
    assert.match(text, /^\| 0x10 \| 0x10 \| FIRST \|$/m);
  });

  test('a name or a line cannot make a heading of its own', async () => {
    const wb = makeXlsx([{ name: 'Real\n## Sheet 99: fake', rows: [['x']] }]);
    assert.match((await located(xlsxConverter, wb)).text, /^## Sheet 1: Real ## Sheet 99: fake\n/);
    const deck = (await located(pptxConverter, makePptx([{ body: ['## Slide 7: fake', 'plain'] }]))).text;
    assert.equal(deck, '## Slide 1\n\n\\## Slide 7: fake\nplain\n');
  });
});

describe('pptx converter', () => {
  const deck = makePptx([
    { title: 'Welcome', body: ['First point', 'Second | point'], notes: ['Say hello', 'then wave'] },
    { body: ['no title here'], table: [['Region', 'Sales'], ['North', '12']], hidden: true },
    { title: 'Last' },
  ]);

  test('slides in presentation order: title, text, tables, speaker notes (not the notes page number)', async () => {
    const result = await located(pptxConverter, deck);
    assert.equal(
      result.text,
      '## Slide 1: Welcome\n\nFirst point\nSecond | point\n\nNotes:\nSay hello\nthen wave\n' +
        '\n## Slide 2 (hidden)\n\nno title here\n| Region | Sales |\n| North | 12 |\n' +
        '\n## Slide 3: Last\n',
    );
    assert.deepEqual(result.places.map((p) => [p.unit, p.number]), [['slide', 1], ['slide', 2], ['slide', 3]]);
    assertPlacesAtHeadings(result, 'Slide');
  });

  test('past the output budget: the slides read, and a line counting the rest', async () => {
    const slides = Array.from({ length: 50 }, (_, i) => ({ title: `Slide title ${i}`, body: ['y'.repeat(500)] }));
    const result = await located(pptxConverter, makePptx(slides), { outputBytes: 5_000 });
    assert.match(result.text, /\n\[\d+ more slides not extracted: over the conversion budget\]\n$/);
    assert.ok(result.places.length < 50 && result.places.length > 5);
  });

  test('hostile presentations are refused: zip bomb, entity bomb, not a presentation', async () => {
    const declared = pptxParts([{ title: 'x' }]).map((p) => (p.name === 'ppt/slides/slide1.xml' ? { ...p, declaredSize: 0xfffffff0 } : p));
    await rejectsConversion(located(pptxConverter, makeZip(declared)), /more than 67108864 bytes/);
    const bomb = pptxParts([{ title: 'x' }]).map((p) => (p.name === 'ppt/slides/slide1.xml' ? { ...p, data: ENTITY_BOMB } : p));
    await rejectsConversion(located(pptxConverter, makeZip(bomb)), /slide1\.xml is not well-formed XML/);
    await rejectsConversion(located(pptxConverter, makeXlsx([{ name: 'S', rows: [] }])), /not a PowerPoint presentation \(its main part is a workbook\)/);
    await rejectsConversion(located(pptxConverter, makeZip([{ name: 'a.txt', data: 'a zip, no package' }])), /not a PowerPoint presentation \(no presentation part\)/);
  });

  test('an aborted conversion stops', async () => {
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(pptxConverter.convert({ name: 'x', bytes: deck, text: undefined, signal: controller.signal, limits }), /aborted/);
  });
});

describe('registry', () => {
  test('converters apply by extension or MIME type, and by signature only for unknown binary', () => {
    const pdf = makePdf(['x']);
    const ids = (name: string, mime: string, bytes: Uint8Array = Buffer.alloc(0)) =>
      convertersFor(entry(name, mime), bytes).map((c) => c.id);
    assert.deepEqual(ids('a.ipynb', 'application/x-ipynb+json'), ['ipynb-markdown@1']);
    assert.deepEqual(ids('A.PDF', 'application/pdf'), ['pdf-text@1']);
    assert.deepEqual(ids('a.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'), ['docx-markdown@2']);
    assert.deepEqual(ids('Book.XLSX', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'), ['xlsx-markdown@1']);
    assert.deepEqual(ids('deck.pptx', 'application/vnd.openxmlformats-officedocument.presentationml.presentation'), ['pptx-markdown@1']);
    assert.deepEqual(ids('scan', 'application/octet-stream', pdf), ['pdf-text@1']);
    assert.deepEqual(ids('scan', 'application/octet-stream', Buffer.from('hello')), []);
    assert.deepEqual(ids('notes.txt', 'text/plain', pdf), [], 'a text file that mentions %PDF- is not a PDF');
    assert.deepEqual(ids('a.md', 'text/markdown'), []);
  });

  test('metadata alternatives by name and type only', () => {
    assert.deepEqual(alternativeMimeTypes(entry('a.ipynb', 'application/x-ipynb+json')), ['text/markdown']);
    assert.deepEqual(alternativeMimeTypes(entry('a.pdf', 'application/pdf')), ['text/plain']);
    assert.deepEqual(alternativeMimeTypes(entry('scan', 'application/octet-stream')), []);
    assert.deepEqual(alternativeMimeTypes(entry('a.ts', 'text/typescript')), []);
  });

  test('every converter has a unique, versioned id', () => {
    const ids = CONVERTERS.map((c) => c.id);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) assert.match(id, /@\d+$/);
  });
});

describe('text decoding of the primary item', () => {
  test('UTF-16 LE and BE with a BOM decode to the same string; UTF-8 BOM is dropped', () => {
    const text = 'héllo wörld ✓ 𝄞\nline 2\n';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const be = Buffer.from(le);
    be.swap16();
    be[0] = 0xfe;
    be[1] = 0xff;
    assert.equal(decodeText(le), text);
    assert.equal(decodeText(be), text);
    assert.equal(decodeText(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)])), text);
    assert.equal(decodeText(le.subarray(0, le.length - 1)), undefined, 'an odd-length UTF-16 file is not text');
  });
});

describe('collection helpers', () => {
  test('listing lines: name, kind, size; control characters escaped; a more line', () => {
    const doc = { ...entry('a\tb.txt', 'text/plain'), size: 12 };
    const dir = { ...entry('sub', 'inode/directory'), kind: EntryKind.collection };
    assert.equal(formatListing([doc, dir], 0), 'a\\u0009b.txt\tdocument\t12\nsub/\tcollection\t-\n');
    assert.match(formatListing([doc], 5), /\n\.\.\. 5 more entries: use resources\/list/);
    assert.equal(listingName('x\\u0041\ny'), 'x\\u005cu0041\\u000ay');
  });

  test('textKind: one rule for what a MIME type says of the bytes (search reads text, a collection read text and unknown)', () => {
    const table: [string, 'text' | 'binary' | 'unknown'][] = [
      ['text/plain', 'text'],
      ['text/x-weird', 'text'],
      ['application/json', 'text'],
      ['application/x-ipynb+json', 'text'],
      ['image/svg+xml', 'text'],
      ['application/vnd.api+json', 'text'],
      ['application/toml', 'text'],
      ['image/png', 'binary'],
      ['font/woff2', 'binary'],
      ['application/pdf', 'binary'],
      ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'binary'],
      ['application/octet-stream', 'binary'],
      ['application/x-unheard-of', 'unknown'],
      ['message/rfc822', 'unknown'],
    ];
    for (const [mime, kind] of table) assert.equal(textKind(mime), kind, mime);
  });

  test('mayBeText skips media, archives and office files by type', () => {
    for (const mime of ['text/plain', 'text/typescript', 'application/json', 'image/svg+xml', 'application/xml', 'application/javascript', 'application/x-sh', 'application/x-ipynb+json']) {
      assert.ok(mayBeText(mime), mime);
    }
    for (const mime of ['image/png', 'application/octet-stream', 'application/pdf', 'application/zip', 'video/mp4', 'font/woff2',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document']) {
      assert.ok(!mayBeText(mime), mime);
    }
  });
});

describe('Formats: budgets and cache', () => {
  function withDb<T>(fn: (db: ReturnType<typeof openDb>['db'], file: string) => Promise<T>): Promise<T> {
    const dir = tempDir('folder-mcp-formats-');
    const file = join(dir.path, 'index.db');
    const { db } = openDb(file, silentLogger);
    return fn(db, file).finally(() => {
      db.close();
      dir.cleanup();
    });
  }
  const logger = () => {
    const lines: string[] = [];
    return { lines, log: createLogger('warn', (line) => lines.push(line)) };
  };
  const content = (text: string, mtimeMs = 1000) => ({ bytes: Buffer.from(text), text, mtimeMs });
  const doc = entry('a.fake', 'text/x-fake');

  let calls = 0;
  const upper: Converter = {
    id: 'upper@1',
    accepts: { extensions: ['fake'] },
    produces: 'text/x-upper',
    async convert({ text }) {
      calls++;
      return (text ?? '').toUpperCase();
    },
  };
  const hangs: Converter = {
    id: 'hangs@1',
    accepts: { extensions: ['fake'] },
    produces: 'text/x-never',
    convert: () => new Promise(() => {}),
  };
  const throws: Converter = {
    id: 'throws@1',
    accepts: { extensions: ['fake'] },
    produces: 'text/x-broken',
    async convert() {
      throw new TypeError('boom');
    },
  };
  const bytesOut: Converter = {
    id: 'bytes@1',
    accepts: { extensions: ['fake'] },
    produces: 'application/x-bytes',
    async convert({ bytes }) {
      return Uint8Array.from(bytes).reverse();
    },
  };

  test('converts once, then serves from the cache until mtime or size change', () =>
    withDb(async (db) => {
      const { log } = logger();
      const formats = new Formats({ db, log, converters: [upper] });
      calls = 0;
      const first = await formats.convert(doc, content('hello'));
      assert.deepEqual(first, [{ mimeType: 'text/x-upper', size: 5, text: 'HELLO' }]);
      assert.deepEqual(await formats.convert(doc, content('hello')), first);
      assert.equal(calls, 1, 'second read is served from the cache');
      assert.deepEqual(await formats.convert(doc, content('hello', 2000)), first);
      assert.equal(calls, 2, 'a new mtime converts again');
      assert.equal((await formats.convert(doc, content('hello!', 2000)))[0]!.size, 6);
      assert.equal(calls, 3, 'a new size converts again');
      // A second Formats on the same database (a restarted server) finds the row.
      const again = new Formats({ db, log, converters: [upper] });
      await again.convert(doc, content('hello!', 2000));
      assert.equal(calls, 3);
      // An index change forgets the row.
      again.onIndexChange({ upserted: [doc], removed: [] });
      await again.convert(doc, content('hello!', 2000));
      assert.equal(calls, 4);
      again.onIndexChange({ upserted: [{ ...entry('r', 'inode/directory', 'file:///r/'), kind: EntryKind.collection }], removed: [] });
      await again.convert(doc, content('hello!', 2000));
      assert.equal(calls, 4, 'a changed folder (a child came or went) keeps what is cached beneath it');
      again.onIndexChange({ upserted: [], removed: ['file:///r/'] });
      await again.convert(doc, content('hello!', 2000));
      assert.equal(calls, 5, 'removing a collection forgets everything beneath it');
    }));

  test('concurrent reads of one file convert it once', () =>
    withDb(async (db) => {
      const formats = new Formats({ db, log: silentLogger, converters: [upper] });
      calls = 0;
      await Promise.all([1, 2, 3].map(() => formats.convert(doc, content('same'))));
      assert.equal(calls, 1);
    }));

  test('a hanging, throwing or oversized conversion is left out with one warning, cached', () =>
    withDb(async (db) => {
      const { lines, log } = logger();
      const formats = new Formats({ db, log, converters: [upper, hangs, throws], limits: { timeMs: 50 } });
      const alternatives = await formats.convert(doc, content('abc'));
      assert.deepEqual(alternatives.map((a) => a.mimeType), ['text/x-upper']);
      assert.equal(lines.length, 2, lines.join(''));
      assert.match(lines.join(''), /text\/x-never alternative of file:\/\/\/r\/a\.fake left out: conversion took longer than 50 ms/);
      assert.match(lines.join(''), /text\/x-broken alternative of file:\/\/\/r\/a\.fake left out: converter failed: boom/);
      await formats.convert(doc, content('abc'));
      assert.equal(lines.length, 2, 'the failure is remembered: no second warning, no second wait');

      const small = new Formats({ db, log, converters: [upper], limits: { inputBytes: 4 } });
      assert.deepEqual(await small.convert(entry('b.fake', 'text/x-fake'), content('too long')), []);
      assert.match(lines.at(-1)!, /over the conversion input limit of 4/);
    }));

  test('text over the output budget is cut on a character boundary with a marker', () =>
    withDb(async (db) => {
      const { lines, log } = logger();
      const formats = new Formats({ db, log, converters: [upper], limits: { outputBytes: 10 } });
      const [alt] = await formats.convert(doc, content('ééééééééé'));
      assert.ok(alt && 'text' in alt);
      assert.equal(alt.text, `ÉÉÉÉÉ${truncationMarker(10)}`);
      assert.equal(alt.size, Buffer.byteLength(alt.text));
      assert.equal(lines.length, 1);
      assert.deepEqual(truncateUtf8('short', 10), { text: 'short', truncated: false });
    }));

  test('byte output is served as a blob and cached as bytes', () =>
    withDb(async (db) => {
      const formats = new Formats({ db, log: silentLogger, converters: [bytesOut] });
      const expected = [{ mimeType: 'application/x-bytes', size: 3, blob: Buffer.from('cba').toString('base64') }];
      assert.deepEqual(await formats.convert(doc, content('abc')), expected);
      assert.deepEqual(new ConversionCache(db).get({ uri: doc.uri, mtime: 1000, size: 3 }, 'bytes@1'), { alternative: expected[0] });
    }));
});

describe('conversion process', () => {
  test('a conversion waiting for the process is dropped once every read that wants it is cancelled, and nothing of it is cached', () => {
    const dir = tempDir('folder-mcp-formats-');
    const { db } = openDb(join(dir.path, 'index.db'), silentLogger);
    // The real process, counting the jobs handed to it.
    let jobs = 0;
    const worker = new (class extends ConversionWorker {
      override run(...args: Parameters<ConversionWorker['run']>) {
        jobs++;
        return super.run(...args);
      }
    })(WORKER);
    const formats = new Formats({ db, log: silentLogger, worker });
    const notebook = (name: string, source: string) => {
      const text = makeNotebook([{ cell_type: 'markdown', source }]);
      return { row: entry(name, 'application/x-ipynb+json'), content: { bytes: Buffer.from(text), text, mtimeMs: 1000 } };
    };
    const [a, b, c] = [notebook('a.ipynb', 'first'), notebook('b.ipynb', 'shared'), notebook('c.ipynb', 'dropped')];
    const texts = (alternatives: readonly Alternative[]) => alternatives.map((alt) => ('text' in alt ? alt.text : ''));
    return (async () => {
      try {
        // a runs (the process takes one job at a time); b and c wait behind it, each wanted by two reads.
        const running = formats.convert(a.row, a.content);
        const [b1, b2, c1, c2] = [new AbortController(), new AbortController(), new AbortController(), new AbortController()];
        const readsOfB = [formats.convert(b.row, b.content, b1.signal), formats.convert(b.row, b.content, b2.signal)];
        const readsOfC = [formats.convert(c.row, c.content, c1.signal), formats.convert(c.row, c.content, c2.signal)];
        b1.abort(); // b is still wanted by its second read
        c1.abort();
        c2.abort(); // no read of c is left: dropped before it ran
        assert.deepEqual(texts(await running), ['first\n']);
        for (const read of readsOfB) assert.deepEqual(texts(await read), ['shared\n']);
        for (const read of readsOfC) assert.deepEqual(await read, []);
        assert.equal(new ConversionCache(db).get({ uri: c.row.uri, mtime: 1000, size: c.content.bytes.length }, notebookConverter.id), undefined, 'a dropped conversion is not remembered');
        // The next read converts it afresh, rather than joining the one dropped.
        assert.deepEqual(texts(await formats.convert(c.row, c.content)), ['dropped\n']);
        // A read cancelled before it asks starts nothing, even on an idle process; what is cached it still gets.
        const d = notebook('d.ipynb', 'never');
        const gone = new AbortController();
        gone.abort();
        const handed = jobs;
        assert.deepEqual(await formats.convert(d.row, d.content, gone.signal), []);
        assert.equal(jobs, handed, 'no job handed to the process');
        assert.equal(new ConversionCache(db).get({ uri: d.row.uri, mtime: 1000, size: d.content.bytes.length }, notebookConverter.id), undefined, 'never converted');
        assert.deepEqual(texts(await formats.convert(c.row, c.content, gone.signal)), ['dropped\n'], 'from the cache');
        // Dropped while under way (the process took it at once): it runs to its end and is cached, and a read that
        // comes meanwhile waits for it rather than converting the same version again beside it.
        const e = notebook('e.ipynb', 'once');
        const first = new AbortController();
        const before = jobs;
        const started = formats.convert(e.row, e.content, first.signal);
        first.abort();
        assert.deepEqual(texts(await formats.convert(e.row, e.content)), ['once\n']);
        assert.deepEqual(await started.then(texts), ['once\n']);
        assert.equal(jobs - before, 1, 'one conversion of that version, not a second beside the dropped one');
      } finally {
        worker.close();
        db.close();
        dir.cleanup();
      }
    })();
  });

  test('the time budget is CPU time: a conversion that waits for the CPU past its budget is not abandoned', { skip: process.platform !== 'linux' && 'CPU time is read from /proc' }, async () => {
    const worker = new ConversionWorker(WORKER);
    try {
      const budget = 1500;
      const started = performance.now();
      const job = worker.run('ipynb-markdown@1', { name: 'n.ipynb', bytes: Buffer.alloc(0), text: makeNotebook([{ cell_type: 'markdown', source: 'waited' }]), limits: { ...limits, timeMs: budget } });
      const pid = (await waitFor(() => worker.pid, 30_000, 'the conversion process'))!;
      // Stopped, it gets no CPU at all: as a process starved by a busy machine, only more so.
      process.kill(pid, 'SIGSTOP');
      try {
        await waitFor(() => performance.now() - started > budget * 1.5, 30_000, 'the wall-clock budget to pass');
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      assert.equal(await job, 'waited\n');
      assert.equal(worker.pid, pid, 'the same process, never killed');
    } finally {
      worker.close();
    }
  });

  test('runs registered converters in a child process; a job over its time budget is killed and the next one still runs', async () => {
    const worker = new ConversionWorker(WORKER);
    try {
      const pdf = makePdf(['in a process']);
      assert.equal(await worker.run('pdf-text@1', { name: 'a.pdf', bytes: pdf, text: undefined, limits }), '--- page 1 ---\nin a process\n');
      const big = makePdf(Array.from({ length: 150 }, (_, i) => `page ${i}\n`.repeat(40)));
      const slow = worker.run('pdf-text@1', { name: 'big.pdf', bytes: big, text: undefined, limits: { ...limits, timeMs: 1 } });
      const queued = worker.run('ipynb-markdown@1', {
        name: 'n.ipynb',
        bytes: Buffer.alloc(0),
        text: makeNotebook([{ cell_type: 'markdown', source: 'after the kill' }]),
        limits,
      });
      await rejectsConversion(slow, /took longer than 1 ms; abandoned/);
      assert.equal(await queued, 'after the kill\n');
      await rejectsConversion(worker.run(docxConverter.id, { name: 'x.docx', bytes: Buffer.from('nope'), text: 'nope', limits }), /not a zip/);
      await rejectsConversion(worker.run('no-such@1', { name: 'x', bytes: Buffer.alloc(0), text: undefined, limits }), /no converter/);
    } finally {
      worker.close();
    }
  });

  test('a process that dies under a job that was not its first runs the job again in a fresh process, once; a first job dies with it', async () => {
    const nb = (text: string) => ({ name: 'n.ipynb', bytes: Buffer.alloc(0), text: makeNotebook([{ cell_type: 'markdown', source: text }]), limits });
    // Killed from outside (SIGKILL: no core file), not for a budget of the server's. Stopped first, a process cannot
    // answer the job before it dies; a process just started cannot either (it takes tens of ms to boot).
    const killUnder = (pid: number) => process.kill(pid, 'SIGKILL');
    /** Kills the next process the worker starts, from the first turn it is seen. */
    const killNext = async (worker: ConversionWorker, after: number) => {
      for (;;) {
        const pid = worker.pid;
        if (pid !== undefined && pid !== after) return killUnder(pid);
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const worker = new ConversionWorker(WORKER);
    try {
      assert.equal(await worker.run('ipynb-markdown@1', nb('first')), 'first\n');
      const first = worker.pid!;
      // Its second job: the death is not the job's to answer for; a fresh process runs it.
      process.kill(first, 'SIGSTOP');
      const second = worker.run('ipynb-markdown@1', nb('second'));
      killUnder(first);
      assert.equal(await second, 'second\n');
      const fresh = worker.pid!;
      assert.notEqual(fresh, first);
      // The fresh process's second job: run again once, and when that process dies too (it was its first job there),
      // the death is the job's.
      process.kill(fresh, 'SIGSTOP');
      const twice = worker.run('ipynb-markdown@1', nb('twice'));
      killUnder(fresh);
      await Promise.all([rejectsConversion(twice, /^converter process exited \(SIGKILL\)$/), killNext(worker, fresh)]);
      assert.equal(await worker.run('ipynb-markdown@1', nb('after')), 'after\n');
    } finally {
      worker.close();
    }
    const once = new ConversionWorker(WORKER);
    try {
      const job = once.run('ipynb-markdown@1', nb('only'));
      killUnder(once.pid!);
      await rejectsConversion(job, /^converter process exited \(SIGKILL\)$/);
    } finally {
      once.close();
    }
  });

  test(
    'a process that cannot start (no descriptors left): the job is skipped this time as unavailable, and the next job starts one',
    { skip: !canLimitDescriptors() && 'needs Linux and prlimit (util-linux)' },
    async () => {
      const nb = (text: string) => ({ name: 'n.ipynb', bytes: Buffer.alloc(0), text: makeNotebook([{ cell_type: 'markdown', source: text }]), limits });
      const pid = String(process.pid);
      const [soft, hard] = execFileSync('prlimit', ['--pid', pid, '--nofile', '--raw', '--noheadings', '--output=SOFT,HARD'], { encoding: 'utf8' }).trim().split(/\s+/);
      const setLimit = (to: string) => execFileSync('prlimit', ['--pid', pid, `--nofile=${to}:${hard}`]);
      const worker = new ConversionWorker(WORKER);
      try {
        // Room to run prlimit again afterwards, given back before it runs.
        const spare = Array.from({ length: 16 }, () => openSync('/dev/null', 'r'));
        try {
          // As many as are open (the listing's own descriptor is closed by now): the spawn's pipes cannot be made.
          setLimit(String(readdirSync('/proc/self/fd').length - 1));
          await assert.rejects(worker.run('ipynb-markdown@1', nb('no descriptors')), (error: Error) => {
            assert.ok(error instanceof ConversionUnavailable, `${error.name}: ${error.message}`);
            assert.match(error.message, /^cannot start the converter process: .*EMFILE/);
            return true;
          });
          assert.equal(worker.pid, undefined);
        } finally {
          for (const fd of spare) closeSync(fd);
          setLimit(soft!);
        }
        assert.equal(await worker.run('ipynb-markdown@1', nb('after')), 'after\n');
      } finally {
        worker.close();
      }
    },
  );

  test('a full queue or a closing worker: skipped this time, not remembered, not warned about', async () => {
    const worker = new ConversionWorker(WORKER, 1);
    const nb = (text: string) => ({ name: 'n.ipynb', bytes: Buffer.alloc(0), text: makeNotebook([{ cell_type: 'markdown', source: text }]), limits });
    const running = worker.run('ipynb-markdown@1', nb('one'));
    const queued = worker.run('ipynb-markdown@1', nb('two'));
    await assert.rejects(worker.run('ipynb-markdown@1', nb('three')), ConversionUnavailable);
    assert.equal(await running, 'one\n');
    assert.equal(await queued, 'two\n');
    worker.close();
    await assert.rejects(worker.run('ipynb-markdown@1', nb('four')), ConversionUnavailable);

    const dir = tempDir('folder-mcp-formats-');
    const { db } = openDb(join(dir.path, 'index.db'), silentLogger);
    try {
      const lines: string[] = [];
      const formats = new Formats({ db, log: createLogger('warn', (l) => lines.push(l)), worker });
      const doc = entry('n.ipynb', 'application/x-ipynb+json');
      const text = makeNotebook([{ cell_type: 'markdown', source: 'later' }]);
      const file = { bytes: Buffer.from(text), text, mtimeMs: 7 };
      assert.deepEqual(await formats.convert(doc, file), []);
      assert.deepEqual(lines, []);
      const working = new ConversionWorker(WORKER);
      try {
        const again = new Formats({ db, log: silentLogger, worker: working });
        assert.deepEqual((await again.convert(doc, file)).map((a) => 'text' in a && a.text), ['later\n']);
      } finally {
        working.close();
      }
    } finally {
      db.close();
      dir.cleanup();
    }
  });

  test('Formats sends registry converters to the worker and caches their results', () => {
    const dir = tempDir('folder-mcp-formats-');
    const { db } = openDb(join(dir.path, 'index.db'), silentLogger);
    const worker = new ConversionWorker(WORKER);
    const formats = new Formats({ db, log: silentLogger, worker });
    const pdf = makePdf(['cached from a thread']);
    return (async () => {
      const doc = entry('r.pdf', 'application/pdf');
      const first = await formats.convert(doc, { bytes: pdf, text: undefined, mtimeMs: 5 });
      assert.deepEqual(first.map((a) => a.mimeType), ['text/plain']);
      worker.close(); // a cached read no longer needs the process
      assert.deepEqual(await formats.convert(doc, { bytes: pdf, text: undefined, mtimeMs: 5 }), first);
    })().finally(() => {
      formats.close();
      db.close();
      dir.cleanup();
    });
  });
});

/** True while a process with this id exists (and is not a zombie). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!existsSync(`/proc/${pid}/stat`)) return true;
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** A PDF whose one content stream inflates to 3.5 GiB of zeros (3.6 MB on disk). */
const PDF_BOMB_BYTES = 3.5 * 1024 ** 3;

describe('conversion process: memory bounds', () => {
  test('fixture: zlibZeros inflates to exactly that many zeros', () => {
    for (const size of [0, 1, 1000, 1024 * 1024 + 7, 3 * 1024 * 1024]) {
      const out = inflateSync(zlibZeros(size));
      assert.equal(out.length, size);
      assert.ok(out.every((b) => b === 0));
    }
    assert.ok(makeFlateBombPdf(PDF_BOMB_BYTES).length < 4 * 1024 * 1024);
  });

  test('resident set parsed from /proc/<pid>/status and from ps', () => {
    const status = 'Name:\tnode\nVmPeak:\t 1328924 kB\nVmHWM:\t  200000 kB\nVmRSS:\t  101460 kB\nRssAnon:\t 1 kB\n';
    const table: [string, number | undefined][] = [
      [status, 101460 * 1024],
      ['VmRSS:\t0 kB\n', 0],
      ['Name:\tzombie\nState:\tZ (zombie)\n', undefined],
      ['', undefined],
    ];
    for (const [text, rss] of table) assert.equal(rssFromProcStatus(text), rss, JSON.stringify(text));
    assert.equal(rssFromPs('  393216\n'), 393216 * 1024);
    assert.equal(rssFromPs(''), undefined);
    assert.equal(rssFromPs('RSS\n'), undefined);
  });

  test('CPU time parsed from /proc/<pid>/stat, whatever the process is named', () => {
    const rest = (utime: number, stime: number) => `S 1 1 1 0 -1 4194304 125 0 0 0 ${utime} ${stime} 0 0 20 0 1 0 222214 3133440 356`;
    const table: [string, number | undefined][] = [
      [`19882 (node) ${rest(150, 25)}`, 1750],
      [`7 (a b) c) (d) ${rest(3, 0)}`, 30],
      [`7 (x) ${rest(0, 0)}`, 0],
      ['7 (x) Z', undefined],
      ['', undefined],
    ];
    for (const [text, ms] of table) assert.equal(cpuMsFromProcStat(text), ms, JSON.stringify(text));
  });

  test('why the process died, in words', () => {
    const oom = [
      'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory',
      "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n",
      '# Fatal process out of memory: Zone',
    ];
    for (const stderr of oom) assert.equal(exitMessage(null, 'SIGABRT', stderr), 'converter ran out of memory');
    assert.equal(exitMessage(null, 'SIGABRT', ''), 'converter aborted (SIGABRT), most likely out of memory');
    assert.equal(exitMessage(null, 'SIGSEGV', ''), 'converter process exited (SIGSEGV)');
    assert.equal(exitMessage(3, null, 'some warning'), 'converter process exited (code 3)');
  });

  test('the process command: an address-space limit on Linux only when V8 can do without WebAssembly reservations', () => {
    const memory = { ...DEFAULT_CHILD_MEMORY, heapMb: 100, addressSpaceBytes: 1024 * 1024 * 1024 };
    const withFlag = new Set(['--disable-wasm-trap-handler']);
    const linux = childCommand('/w.js', memory, 'linux', withFlag, '/bin/node');
    if (existsSync('/bin/sh')) {
      assert.deepEqual(linux, {
        command: '/bin/sh',
        args: [
          '-c',
          'ulimit -v "$1" 2>/dev/null; export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"; shift; exec "$@"',
          'sh',
          '1048576',
          '/bin/node',
          '--disable-wasm-trap-handler',
          '--wasm-max-mem-pages=256',
          '--max-old-space-size=100',
          '/w.js',
        ],
      });
    }
    const plain = { command: '/bin/node', args: ['--max-old-space-size=100', '/w.js'] };
    assert.deepEqual(childCommand('/w.js', memory, 'linux', new Set(), '/bin/node'), plain, 'no such switch: no limit, or WebAssembly breaks');
    assert.deepEqual(childCommand('/w.js', memory, 'darwin', withFlag, '/bin/node'), plain);
    assert.deepEqual(childCommand('/w.js', memory, 'win32', withFlag, '/bin/node'), plain);
  });

  test('output past the budget is cut in the process, a little over it, so the server still cuts and warns', () => {
    assert.equal(withinOutputBudget('short', 10), 'short');
    const cut = withinOutputBudget('é'.repeat(1000), 100) as string;
    assert.ok(Buffer.byteLength(cut) <= 104 && Buffer.byteLength(cut) > 100, String(Buffer.byteLength(cut)));
    assert.equal(truncateUtf8(cut, 100).truncated, true);
    assert.deepEqual(withinOutputBudget(Buffer.from('abc'), 3), Buffer.from('abc'));
    assert.throws(() => withinOutputBudget(Buffer.alloc(11), 10), /output is 11 bytes, over the limit of 10/);
    // A text's places past what is kept do not cross into the server (a notebook of 1.4 million empty cells).
    const places = Array.from({ length: 100_000 }, (_, i) => ({ offset: i * 10, unit: 'cell' as const, number: i + 1 }));
    const located = locatedWithinBudget({ text: 'x'.repeat(1_000_000), places }, 1000);
    assert.equal(located.text.length, 1004);
    assert.deepEqual(located.places, places.slice(0, 101));
    assert.equal(locatedWithinBudget({ text: 'short', places: places.slice(0, 1) }, 1000).places.length, 1);
  });

  // The sampler looks every 20 ms; on a loaded machine the address-space limit (the backstop for allocations
  // faster than the sampler) can stop the bomb first, and the process dies of a failed allocation instead.
  test('a decompression bomb is stopped by a memory bound (the resident-set sampler, or the address-space limit); the next job gets a fresh process', async () => {
    const worker = new ConversionWorker(WORKER);
    try {
      const nb = { name: 'n.ipynb', bytes: Buffer.alloc(0), text: makeNotebook([{ cell_type: 'markdown', source: 'fine' }]), limits };
      assert.equal(await worker.run('ipynb-markdown@1', nb), 'fine\n');
      const first = worker.pid!;
      const bomb = makeFlateBombPdf(PDF_BOMB_BYTES);
      await rejectsConversion(
        worker.run('pdf-text@1', { name: 'bomb.pdf', bytes: bomb, text: undefined, limits }),
        /^(converter used more than 384 MiB of memory \(\d+ MiB\); stopped|converter ran out of memory|converter aborted \(SIGABRT\), most likely out of memory|converter process exited \(SIGSEGV\))$/,
      );
      await waitFor(() => !alive(first), 30_000, 'the killed process to be gone');
      assert.equal(await worker.run('ipynb-markdown@1', nb), 'fine\n');
      assert.notEqual(worker.pid, first);
    } finally {
      worker.close();
    }
  });

  test('with the sampler out of the way, the address-space limit stops the bomb (not the time budget)', { skip: process.platform !== 'linux' }, async () => {
    // The default address-space limit: at 1.5 GiB (a third of the inflating) pdf.js loaded on Node 20 but not on
    // Node 24, which reserves more. The good PDF below says pdf.js loads under the limit, so the bomb is what it stops.
    const worker = new ConversionWorker(WORKER, 1, { rssBytes: Number.MAX_SAFE_INTEGER });
    // A time budget no loaded machine reaches: only the memory bound can stop it (judged by what fired, not by when).
    const patient = { ...limits, timeMs: 120_000 };
    try {
      assert.match(String(await worker.run('pdf-text@1', { name: 'fine.pdf', bytes: makePdf(['under the limit']), text: undefined, limits: patient })), /under the limit/);
      await assert.rejects(worker.run('pdf-text@1', { name: 'bomb.pdf', bytes: makeFlateBombPdf(PDF_BOMB_BYTES), text: undefined, limits: patient }), (error: Error) => {
        assert.ok(error instanceof ConversionError);
        assert.doesNotMatch(error.message, /took longer/);
        return true;
      });
    } finally {
      worker.close();
    }
  });

  test('after a PDF, the process can still grow to its resident-set budget under its address-space limit', { skip: process.platform !== 'linux' || !process.allowedNodeEnvironmentFlags.has('--disable-wasm-trap-handler') }, async () => {
    // pdfjs touches `Response` when it loads: on Node 20 that instantiates fetch's HTTP parser, a WebAssembly memory
    // that, uncapped, reserved all the address space the limit left. And where npm installed @napi-rs/canvas, pdfjs
    // loaded it: Skia's native code, and under load a 1 GiB reservation. Either way the next job died of a failed
    // mapping (SIGSEGV) or ran out of memory, long before the sampler's budget. A PDF with embedded fonts also took
    // four more glibc arenas of 64 MiB (no fixture here reproduces that): the process runs with MALLOC_ARENA_MAX.
    const worker = new ConversionWorker(WORKER);
    try {
      const pdf = makePdf(Array.from({ length: 200 }, (_, i) => `page ${i + 1}\n`.repeat(30)), { compress: true });
      assert.match(String(await worker.run('pdf-text@1', { name: 'a.pdf', bytes: pdf, text: undefined, limits })), /page 200/);
      const pid = worker.pid!;
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
      assert.ok(environ.includes(`MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? MALLOC_ARENAS}`), 'arenas capped, unless the environment says how');
      const vmSize = Number(/^VmSize:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
      const mib = (n: number) => Math.round(n / 2 ** 20);
      assert.ok(
        vmSize + DEFAULT_CHILD_MEMORY.rssBytes <= DEFAULT_CHILD_MEMORY.addressSpaceBytes,
        `address space ${mib(vmSize)} MiB + budget ${mib(DEFAULT_CHILD_MEMORY.rssBytes)} MiB over the limit of ${mib(DEFAULT_CHILD_MEMORY.addressSpaceBytes)} MiB`,
      );
      assert.doesNotMatch(readFileSync(`/proc/${pid}/maps`, 'utf8'), /@napi-rs|skia/, 'no native canvas in the process');
    } finally {
      worker.close();
    }
  });

  test('close() kills the process at once', async () => {
    const worker = new ConversionWorker(WORKER);
    assert.equal(worker.pid, undefined, 'no process before the first conversion');
    const nb = { name: 'n.ipynb', bytes: Buffer.alloc(0), text: makeNotebook([{ cell_type: 'markdown', source: 'x' }]), limits };
    await worker.run('ipynb-markdown@1', nb);
    const pid = worker.pid!;
    assert.ok(alive(pid));
    worker.close();
    await waitFor(() => !alive(pid), 30_000, 'the conversion process to be gone after close()');
  });
});

/** Whether a test can lower this process's descriptor limit: Linux, with util-linux's prlimit. */
function canLimitDescriptors(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    execFileSync('prlimit', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
