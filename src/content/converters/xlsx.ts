import { flat, officeConversion, oneLine, OfficePackage, readXml, relationshipId, StopReading, tableCell } from './ooxml.ts';
import { ConversionError, type ConvertInput, type Converter, type LocatedText, type Place } from './types.ts';

/**
 * Excel workbooks (.xlsx, .xlsm) as Markdown: each sheet, in workbook order,
 * under a `## Sheet N: name` heading, as a table of the values Excel last
 * computed (shared and inline strings, numbers, booleans, errors; dates in
 * a date format as ISO dates). Formulas, styles, charts and macros are not
 * read. The zip is checked against its budget first; the cells kept are
 * bounded by `sheetCells` and the output budget, the rest counted in a
 * closing line. The sheet is the place of a search hit.
 */
export const xlsxConverter: Converter = {
  id: 'xlsx-markdown@1',
  accepts: {
    extensions: ['xlsx', 'xlsm'],
    mimeTypes: ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'application/vnd.ms-excel.sheet.macroenabled.12'],
  },
  produces: 'text/markdown',
  convert: async (input) => (await xlsxToLocatedMarkdown(input)).text,
  convertLocated: (input) => officeConversion('Excel workbook', () => xlsxToLocatedMarkdown(input)),
};

/** Sheets read of one workbook; the rest are counted in a closing line. */
const MAX_SHEETS = 1000;
/** The last column Excel has (XFD, 0-based); a cell said to be further right is not a cell of the sheet. */
const MAX_COLUMN = 16_383;
/** Characters Excel keeps in one cell; a longer shared string is cut here as it is read. */
const MAX_CELL_CHARS = 32_767;
/** Characters a sheet name shows (Excel allows 31). */
const MAX_SHEET_NAME = 100;
/** Excel's longest number format code; a longer one is no format Excel wrote. */
const MAX_FORMAT_CODE = 255;

const REL = {
  workbook: '/officeDocument',
  worksheet: '/worksheet',
  sharedStrings: '/sharedStrings',
  styles: '/styles',
};

interface SheetRef {
  name: string;
  hidden: boolean;
  part: string | undefined;
}

/** A kept cell: its text, or the index of its text in the shared string table (looked up once every sheet is read). */
type CellText = string | { shared: number };

interface Row {
  cells: Map<number, CellText>;
}

export async function xlsxToLocatedMarkdown(input: ConvertInput): Promise<LocatedText> {
  const pkg = new OfficePackage(input);
  const workbookPart = pkg.mainPart(REL.workbook, 'xl/workbook.xml');
  const workbook = pkg.get(workbookPart);
  if (!workbook) throw new ConversionError('not an Excel workbook (no workbook part)');
  const rels = pkg.relationships(workbookPart);
  const partOf = (suffix: string) => [...rels.values()].find((r) => r.type.endsWith(suffix))?.target;

  const { sheets, more, date1904 } = readWorkbook(workbook, workbookPart, (id) => {
    const rel = id === undefined ? undefined : rels.get(id);
    return rel?.type.endsWith(REL.worksheet) ? rel.target : undefined;
  });
  const dateStyles = readDateStyles(pkg, partOf(REL.styles));
  const value = (raw: string, type: string, style: number): string => cellValue(raw, type, style, { dateStyles, date1904 });

  // The sheets first, then only the shared strings their kept cells use: a
  // table of millions of strings costs a read, not memory.
  const budget = { cells: input.limits.sheetCells, chars: input.limits.outputBytes };
  const read: ({ heading: string } & ({ rows: { rows: Row[]; cut: boolean } } | { note: string }))[] = [];
  /** Each worksheet part is read once, whatever number of sheets name it. */
  const readParts = new Map<string, number>();
  for (const [i, sheet] of sheets.entries()) {
    if (budget.cells <= 0 || budget.chars <= 0) break;
    const heading = `## Sheet ${i + 1}: ${sheet.name}${sheet.hidden ? ' (hidden)' : ''}\n\n`;
    budget.chars -= heading.length;
    const sameAs = sheet.part === undefined ? undefined : readParts.get(sheet.part.toLowerCase());
    if (sameAs !== undefined) {
      read.push({ heading, note: `(the same worksheet as sheet ${sameAs})` });
      continue;
    }
    const xml = sheet.part === undefined ? undefined : pkg.get(sheet.part);
    if (!xml) {
      read.push({ heading, note: sheet.part === undefined ? '(not a worksheet: a chart or dialog sheet)' : '(its worksheet is missing from the file)' });
      continue;
    }
    readParts.set(sheet.part!.toLowerCase(), i + 1);
    read.push({ heading, rows: readSheet(xml, sheet.part!, value, budget, input.signal) });
  }
  const wanted = new Set<number>();
  for (const sheet of read) {
    if (!('rows' in sheet)) continue;
    for (const row of sheet.rows.rows) for (const cell of row.cells.values()) if (typeof cell !== 'string') wanted.add(cell.shared);
  }
  const strings = readSharedStrings(pkg, partOf(REL.sharedStrings), wanted, 4 * input.limits.outputBytes, input.signal);

  const parts: string[] = [];
  const places: Place[] = [];
  let offset = 0;
  let chars = 0;
  for (const [i, sheet] of read.entries()) {
    const body =
      'note' in sheet ? `${sheet.note}\n` : renderTable(sheet.rows.rows, strings, Math.max(0, input.limits.outputBytes - chars), sheet.rows.cut);
    const part = sheet.heading + body;
    places.push({ offset, unit: 'sheet', number: i + 1, name: sheets[i]!.name });
    offset += part.length + 1; // parts are joined with '\n'
    chars += part.length;
    parts.push(part);
  }
  const left = sheets.length + more - read.length;
  if (left > 0) parts.push(`[${left} more sheet${left === 1 ? '' : 's'} not extracted: over the conversion budget]\n`);
  if (sheets.length + more === 0) parts.push('(no sheets)\n');
  return { text: parts.join('\n'), places };
}

function readWorkbook(xml: Buffer, part: string, worksheetPart: (id: string | undefined) => string | undefined) {
  const sheets: SheetRef[] = [];
  let more = 0;
  let date1904 = false;
  let root = true;
  readXml(xml, part, {
    open(name, attrs) {
      if (root && name !== 'workbook') throw new ConversionError(`not an Excel workbook (its main part is a ${name})`);
      root = false;
      if (name === 'workbookPr') date1904 = attrs.date1904 === '1' || attrs.date1904 === 'true';
      else if (name === 'sheet') {
        if (sheets.length >= MAX_SHEETS) {
          more++;
          return;
        }
        sheets.push({
          // On one line: a name is a heading, and a line break in it would make another.
          name: flat(oneLine(attrs.name ?? '').slice(0, MAX_SHEET_NAME)) || `Sheet${sheets.length + 1}`,
          hidden: attrs.state === 'hidden' || attrs.state === 'veryHidden',
          part: worksheetPart(relationshipId(attrs)),
        });
      }
    },
    close(name) {
      if (name === 'sheets') throw new StopReading();
    },
  });
  return { sheets, more, date1904 };
}

/**
 * The `wanted` entries of the shared string table: each `<si>`'s text, its
 * phonetic runs (`<rPh>`) left out, cut at Excel's cell limit. Past
 * `maxChars` kept in all, the rest show as `…` (the output is cut well before).
 */
function readSharedStrings(pkg: OfficePackage, part: string | undefined, wanted: Set<number>, maxChars: number, signal: AbortSignal): Map<number, string> {
  const xml = part === undefined ? undefined : pkg.get(part);
  const strings = new Map<number, string>();
  if (!xml || wanted.size === 0) return strings;
  let last = 0;
  for (const index of wanted) last = Math.max(last, index);
  let index = -1;
  let current = '';
  let kept = 0;
  let inText = false;
  let phonetic = 0;
  readXml(
    xml,
    part!,
    {
      open(name) {
        if (name === 'si') {
          index++;
          current = '';
        }
        else if (name === 'rPh') phonetic++;
        else if (name === 't' && phonetic === 0) inText = true;
      },
      close(name) {
        if (name === 'si') {
          if (wanted.has(index)) {
            if (kept > maxChars) strings.set(index, '…');
            else {
              const text = flat(unescapeXstring(current));
              kept += text.length;
              strings.set(index, text);
            }
          }
          if (index >= last) throw new StopReading();
        }
        else if (name === 'rPh') phonetic--;
        else if (name === 't') inText = false;
      },
      text(text) {
        if (inText && wanted.has(index) && current.length < MAX_CELL_CHARS) current += text.slice(0, MAX_CELL_CHARS - current.length);
      },
    },
    signal,
  );
  return strings;
}

/** Which cell styles (`s`, an index into `<cellXfs>`) show a number as a date or time. */
function readDateStyles(pkg: OfficePackage, part: string | undefined): boolean[] {
  const xml = part === undefined ? undefined : pkg.get(part);
  const styles: boolean[] = [];
  if (!xml) return styles;
  const custom = new Map<string, boolean>();
  let inCellXfs = false;
  readXml(xml, part!, {
    open(name, attrs) {
      // Judged once per format, not once per style that uses it.
      if (name === 'numFmt' && attrs.numFmtId !== undefined) custom.set(flat(attrs.numFmtId), isDateFormat(attrs.formatCode ?? ''));
      else if (name === 'cellXfs') inCellXfs = true;
      else if (name === 'xf' && inCellXfs) {
        const id = attrs.numFmtId ?? '0';
        styles.push(custom.get(id) ?? isBuiltInDateFormat(Number(id)));
      }
    },
    close(name) {
      if (name === 'cellXfs') throw new StopReading();
    },
  });
  return styles;
}

/** Excel's built-in number formats that are dates or times (ECMA-376 18.8.30, with the East Asian ones). */
export function isBuiltInDateFormat(id: number): boolean {
  return (id >= 14 && id <= 22) || (id >= 27 && id <= 36) || (id >= 45 && id <= 47) || (id >= 50 && id <= 58);
}

/** A custom format code shows a date or time when, quoted text, escapes, fills and colours aside, it has d, m, y, h or s. */
export function isDateFormat(code: string): boolean {
  if (code.length > MAX_FORMAT_CODE) return false;
  const bare = code
    .replace(/"[^"]*"/g, '')
    .replace(/\\./g, '')
    .replace(/[_*]./g, '')
    .replace(/\[(?![hms]+\])[^\]]*\]/gi, '');
  return /[dmyhs]/i.test(bare);
}

interface CellContext {
  dateStyles: boolean[];
  date1904: boolean;
}

/** The text of one cell, a shared string (`t="s"`) aside, from its `<v>` (or inline string), its type `t` and its style `s`. */
export function cellValue(raw: string, type: string, style: number, ctx: CellContext): string {
  switch (type) {
    case 'b':
      return raw === '1' ? 'TRUE' : raw === '0' ? 'FALSE' : raw;
    case 'inlineStr':
    case 'str':
      return unescapeXstring(raw);
    case 'e':
    case 'd':
      return raw;
    default: {
      if (raw === '') return '';
      // A decimal number, as Excel writes one; anything else (0x10, Infinity) is shown as written.
      if (!DECIMAL.test(raw)) return raw;
      const n = Number(raw);
      if (!Number.isFinite(n)) return raw;
      return ctx.dateStyles[style] ? excelDate(n, ctx.date1904) : String(n);
    }
  }
}

/** Excel writes characters XML cannot hold as `_xHHHH_` (ST_Xstring); `_x005F_` is an escaped underscore. */
export function unescapeXstring(text: string): string {
  if (!text.includes('_x')) return text;
  return text.replace(/_x([0-9A-Fa-f]{4})_/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

const DECIMAL = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;

const DAY_MS = 86_400_000;

/**
 * An Excel date serial as ISO text: `2024-03-01`, `2024-03-01 13:30:00`, or a
 * time alone (`13:30:00`) for a serial under one day. The 1900 system counts
 * the 29 February 1900 that never was (serial 60), as Excel does.
 */
export function excelDate(serial: number, date1904: boolean): string {
  if (serial < 0) return String(serial);
  let days = Math.floor(serial);
  let seconds = Math.round((serial - days) * 86_400);
  if (seconds === 86_400) {
    days++;
    seconds = 0;
  }
  const time = `${pad(Math.floor(seconds / 3600))}:${pad(Math.floor((seconds % 3600) / 60))}:${pad(seconds % 60)}`;
  if (days === 0 && !date1904) return time;
  let date: string;
  if (!date1904 && days === 60) date = '1900-02-29';
  else {
    // Serial 25569 is 1970-01-01 in the 1900 system (past the phantom leap day), 24107 in the 1904 one.
    const epochDays = date1904 ? days - 24107 : days < 60 ? days - 25568 : days - 25569;
    const when = new Date(epochDays * DAY_MS);
    // Past year 9999 Excel shows #####; past the Date range there is no ISO form at all.
    if (Number.isNaN(when.getTime()) || when.getUTCFullYear() > 9999) return String(serial);
    date = when.toISOString().slice(0, 10);
  }
  return seconds === 0 ? date : `${date} ${time}`;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** `B12` -> 1 (0-based column); undefined when the reference has no column letters. */
export function columnOf(ref: string): number | undefined {
  let col = 0;
  let i = 0;
  for (; i < ref.length; i++) {
    const c = ref.charCodeAt(i);
    if (c < 65 || c > 90) break;
    col = col * 26 + (c - 64);
  }
  return i === 0 ? undefined : col - 1;
}

/**
 * The non-empty rows of a worksheet, within the budget (cells and characters
 * left for the whole workbook, spent here). `cut` is true when the budget
 * ran out in this sheet.
 */
function readSheet(
  xml: Buffer,
  part: string,
  value: (raw: string, type: string, style: number) => string,
  budget: { cells: number; chars: number },
  signal: AbortSignal,
): { rows: Row[]; cut: boolean } {
  const rows: Row[] = [];
  let row: Row | undefined;
  let col = -1;
  let cell: { type: string; style: number; raw: string } | undefined;
  let capture = false;
  let phonetic = 0;
  let cut = false;
  readXml(
    xml,
    part,
    {
      open(name, attrs) {
        if (name === 'row') {
          row = { cells: new Map() };
          col = -1;
        } else if (name === 'c') {
          const at = attrs.r === undefined ? undefined : columnOf(attrs.r.toUpperCase());
          col = at ?? col + 1;
          // Past XFD: no cell of a sheet (a hostile reference would make a table millions of columns wide).
          if (col > MAX_COLUMN) {
            cell = undefined;
            return;
          }
          cell = { type: attrs.t ?? 'n', style: Number(attrs.s ?? 0), raw: '' };
        } else if (cell && name === 'rPh') phonetic++;
        else if (cell && phonetic === 0 && (name === 'v' || (name === 't' && cell.type === 'inlineStr'))) capture = true;
      },
      close(name) {
        if (name === 'v' || name === 't') capture = false;
        else if (name === 'rPh') phonetic--;
        else if (name === 'c' && cell && row) {
          const shared = cell.type === 's' ? (/^\d{1,9}$/.test(cell.raw.trim()) ? Number(cell.raw.trim()) : -1) : undefined;
          const text: CellText = shared === undefined ? tableCell(value(cell.raw, cell.type, cell.style)) : shared >= 0 ? { shared } : '';
          cell = undefined;
          if (text === '') return;
          row.cells.set(col, text);
          budget.cells--;
          budget.chars -= (typeof text === 'string' ? text.length : 1) + 3;
          if (budget.cells <= 0 || budget.chars <= 0) {
            cut = true;
            rows.push(row);
            throw new StopReading();
          }
        } else if (name === 'row' && row) {
          if (row.cells.size > 0) rows.push(row);
          row = undefined;
        } else if (name === 'sheetData') throw new StopReading();
      },
      text(text) {
        if (capture && cell) cell.raw += text;
      },
    },
    signal,
  );
  return { rows, cut };
}

/** The rows as a Markdown table: the first row is the header, columns from the leftmost to the rightmost used. */
function renderTable(rows: Row[], strings: Map<number, string>, maxChars: number, cut: boolean): string {
  if (rows.length === 0) return '(empty)\n';
  let first = Infinity;
  let last = -1;
  for (const row of rows) {
    for (const col of row.cells.keys()) {
      if (col < first) first = col;
      if (col > last) last = col;
    }
  }
  // A line stops where the budget does, even within a row (a row can be 16,384 cells of 32,767 characters).
  const line = (row: Row, room: number) => {
    let text = '|';
    for (let col = first; col <= last; col++) {
      if (text.length > room) return `${text} … |\n`;
      const cell = row.cells.get(col);
      text += ` ${cell === undefined ? '' : typeof cell === 'string' ? cell : tableCell(strings.get(cell.shared) ?? '')} |`;
    }
    return `${text}\n`;
  };
  let out = line(rows[0]!, maxChars);
  out += `|${' --- |'.repeat(last - first + 1)}\n`; // at most 16,384 columns: about 100 KB
  let shown = 1;
  for (; shown < rows.length && out.length <= maxChars; shown++) out += line(rows[shown]!, maxChars - out.length);
  const left = rows.length - shown;
  if (left > 0) out += `\n[${left} more row${left === 1 ? '' : 's'} not shown: over the conversion budget]\n`;
  else if (cut) out += '\n[the rest of this sheet not read: over the conversion budget]\n';
  return out;
}
