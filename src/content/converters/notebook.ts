import { ConversionError, type ConvertInput, type Converter, type LocatedText, type Place } from './types.ts';

/**
 * Jupyter notebooks (nbformat 4, and the list-of-lines or string `source`
 * of any version) as Markdown: cells in order, code fenced with the kernel
 * language, text outputs kept (each cut at a budget), images and other
 * binary outputs summarised by type and size.
 */
export const notebookConverter: Converter = {
  id: 'ipynb-markdown@1',
  accepts: { extensions: ['ipynb'], mimeTypes: ['application/x-ipynb+json'] },
  produces: 'text/markdown',
  async convert(input) {
    return notebookToMarkdown(input);
  },
  async convertLocated(input) {
    return notebookToLocatedMarkdown(input);
  },
};

interface Cell {
  cell_type?: unknown;
  source?: unknown;
  outputs?: unknown;
}

export function notebookToMarkdown(input: Pick<ConvertInput, 'text' | 'limits' | 'signal'>): string {
  return notebookToLocatedMarkdown(input).text;
}

/** notebookToMarkdown's text, with where each cell starts (cells counted from 1, empty ones too, as the notebook numbers them). */
export function notebookToLocatedMarkdown(input: Pick<ConvertInput, 'text' | 'limits' | 'signal'>): LocatedText {
  if (input.text === undefined) throw new ConversionError('notebook is not UTF-8 text');
  let notebook: { cells?: unknown; worksheets?: unknown; metadata?: Record<string, unknown> };
  try {
    notebook = JSON.parse(input.text) as typeof notebook;
  } catch (error) {
    throw new ConversionError(`notebook is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof notebook !== 'object' || notebook === null) throw new ConversionError('notebook is not a JSON object');
  // nbformat 3 kept cells under worksheets[].cells.
  const cells: unknown[] = Array.isArray(notebook.cells)
    ? notebook.cells
    : Array.isArray(notebook.worksheets)
      ? (notebook.worksheets as { cells?: unknown[] }[]).flatMap((w) => (Array.isArray(w?.cells) ? w.cells : []))
      : [];
  if (!Array.isArray(notebook.cells) && !Array.isArray(notebook.worksheets)) {
    throw new ConversionError('notebook has no cells');
  }
  const language = kernelLanguage(notebook.metadata);
  const parts: string[] = [];
  const places: Place[] = [];
  let offset = 0;
  for (const [index, raw] of cells.entries()) {
    if (input.signal.aborted) throw new ConversionError('aborted');
    const cell = (raw ?? {}) as Cell;
    const first = parts.length;
    const source = joinText(cell.source ?? (cell as { input?: unknown }).input);
    if (cell.cell_type === 'markdown' || cell.cell_type === 'heading') {
      parts.push(source.trimEnd());
    } else if (cell.cell_type === 'code') {
      parts.push(fence(source, language));
      const outputs = Array.isArray(cell.outputs) ? cell.outputs : [];
      for (const output of outputs) {
        const rendered = renderOutput(output as Record<string, unknown>, input.limits.notebookOutputChars);
        if (rendered) parts.push(rendered);
      }
    } else {
      parts.push(fence(source, ''));
    }
    // Empty parts are dropped and the rest joined with a blank line: offsets count what is kept.
    const kept = parts.splice(first).filter((p) => p !== '');
    if (kept.length === 0) continue;
    if (parts.length > 0) offset += 2;
    places.push({ offset, unit: 'cell', number: index + 1 });
    offset += kept.join('\n\n').length;
    parts.push(...kept);
  }
  return { text: `${parts.join('\n\n')}\n`, places };
}

function kernelLanguage(metadata: Record<string, unknown> | undefined): string {
  const kernelspec = metadata?.kernelspec as { language?: unknown } | undefined;
  const info = metadata?.language_info as { name?: unknown } | undefined;
  const language = kernelspec?.language ?? info?.name ?? metadata?.language;
  return typeof language === 'string' && /^[\w+#.-]{1,40}$/.test(language) ? language : '';
}

/** nbformat stores text as a string or a list of lines (each keeping its '\n'). */
function joinText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.filter((v) => typeof v === 'string').join('');
  return '';
}

/** A fenced block whose fence is longer than any backtick run inside it. */
function fence(body: string, info: string): string {
  // A loop, not Math.max(...runs): a cell of 200,000 backtick runs passed as many arguments overflowed the stack,
  // and the whole notebook's text was left out.
  let longest = 0;
  for (const run of body.matchAll(/`+/g)) longest = Math.max(longest, run[0].length);
  const ticks = '`'.repeat(Math.max(3, longest + 1));
  return `${ticks}${info}\n${body.replace(/\n$/, '')}\n${ticks}`;
}

function renderOutput(output: Record<string, unknown>, maxChars: number): string {
  const type = output.output_type;
  if (type === 'stream') return outputBlock(joinText(output.text), maxChars);
  if (type === 'error') {
    const traceback = joinText(
      Array.isArray(output.traceback) ? (output.traceback as unknown[]).map((l) => `${String(l)}\n`) : [],
    );
    const text = traceback || `${String(output.ename ?? 'Error')}: ${String(output.evalue ?? '')}`;
    return outputBlock(stripAnsi(text), maxChars);
  }
  if (type === 'execute_result' || type === 'display_data' || type === 'pyout') {
    const data = (output.data ?? {}) as Record<string, unknown>;
    const pieces: string[] = [];
    for (const [mime, value] of Object.entries(data)) {
      if (mime === 'text/plain' || mime === 'text/markdown') continue;
      const body = value !== null && typeof value === 'object' && !Array.isArray(value) ? JSON.stringify(value) : joinText(value);
      const size = mime.startsWith('text/') || mime.includes('json') || mime.includes('xml')
        ? `${body.length} characters`
        : `${base64Bytes(body)} bytes`;
      pieces.push(`[${mime} output, ${size}, not shown]`);
    }
    const text = joinText(data['text/markdown']) || joinText(data['text/plain']) || joinText(output.text);
    const block = text ? outputBlock(text, maxChars) : '';
    return [block, ...pieces.map((p) => `_${p}_`)].filter(Boolean).join('\n\n');
  }
  return '';
}

function outputBlock(text: string, maxChars: number): string {
  if (text === '') return '';
  let body = text;
  if (body.length > maxChars) {
    body = `${body.slice(0, maxChars)}\n[... ${body.length - maxChars} more characters of output not shown]`;
  }
  return fence(body, 'output');
}

function stripAnsi(text: string): string {
  return text.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '');
}

/** Decoded size of base64 text, without decoding it. */
function base64Bytes(base64: string): number {
  const compact = base64.replace(/\s/g, '');
  const padding = compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0;
  return Math.floor((compact.length * 3) / 4) - padding;
}
