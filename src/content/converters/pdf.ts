import Module from 'node:module';
import { ConversionError, type ConvertInput, type Converter, type LocatedText, type Place } from './types.ts';

/**
 * PDF text with pdfjs-dist (legacy build, the one that runs on Node), page by
 * page, each page under a `--- page N ---` line. Stops at the page budget and
 * at the output budget; abandons the document when the time budget aborts.
 * Encrypted and corrupt files are refused with a ConversionError.
 */
export const pdfConverter: Converter = {
  id: 'pdf-text@1',
  accepts: {
    extensions: ['pdf'],
    mimeTypes: ['application/pdf'],
    signature: (bytes) => Buffer.from(bytes.subarray(0, 1024)).includes('%PDF-'),
  },
  produces: 'text/plain',
  convert: pdfToText,
  convertLocated: pdfToLocatedText,
};

interface TextItem {
  str?: string;
  hasEOL?: boolean;
}

/**
 * pdfjs makes a DOMMatrix when its module loads (rendering's scale matrix),
 * and Node has none. It borrows one from its optional native @napi-rs/canvas,
 * which the .mcpb bundle leaves out (no native module ships: scripts/bundle.ts)
 * and which an install without a prebuilt binary lacks. Text extraction never
 * computes with it, so a pure-JavaScript DOMMatrix (@thednp/dommatrix) is
 * given first, on every install alike.
 */
async function provideDomMatrix(): Promise<void> {
  if ('DOMMatrix' in globalThis) return;
  const { default: DOMMatrix } = await import('@thednp/dommatrix');
  Object.defineProperty(globalThis, 'DOMMatrix', { value: DOMMatrix, configurable: true, writable: true });
}

/** What pdfjs asks for on Node and never gets here (refuseNativeCanvas). */
const NATIVE_CANVAS = '@napi-rs/canvas';

/**
 * pdfjs requires @napi-rs/canvas when its module loads on Node, to borrow
 * DOMMatrix, ImageData and Path2D for rendering; text extraction draws
 * nothing. Where npm installed it (an optional dependency), loading it cost
 * the conversion process Skia's native code and, under load, a 1 GiB
 * reservation of address space by its allocator: half the process's limit
 * (isolate.ts), so a later job's allocation could fail and the process die of
 * SIGSEGV. It is refused as if absent, as in the .mcpb: pdfjs warns on stderr
 * and goes on. Only that one name is refused, and only once pdfjs is wanted.
 */
function refuseNativeCanvas(): void {
  const loader = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string; folderMcpRefusesCanvas?: true };
  if (loader.folderMcpRefusesCanvas) return;
  const resolve = loader._resolveFilename;
  loader._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
    if (request === NATIVE_CANVAS) {
      throw Object.assign(new Error(`Cannot find module '${request}': folder-mcp extracts text and does not load it`), { code: 'MODULE_NOT_FOUND' });
    }
    return resolve.call(this, request, ...rest);
  };
  loader.folderMcpRefusesCanvas = true;
}

export async function pdfToText(input: ConvertInput): Promise<string> {
  return (await pdfToLocatedText(input)).text;
}

/** pdfToText's text, with the offset of each page's `--- page N ---` line (counted as built, not searched for: a page may contain such a line). */
export async function pdfToLocatedText(input: ConvertInput): Promise<LocatedText> {
  // Loaded on first use: start-up must not pay for pdfjs.
  await provideDomMatrix();
  refuseNativeCanvas();
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const task = pdfjs.getDocument({
    // pdfjs takes ownership of (and may detach) the buffer it is given.
    data: new Uint8Array(input.bytes),
    // Text only: no eval'd font programs, no font loading, no fetching of
    // standard font or CMap data, and errors (not console) for diagnostics:
    // pdfjs's console output must never reach stdout, which is JSON-RPC.
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    useWorkerFetch: false,
    isOffscreenCanvasSupported: false,
    stopAtErrors: false,
    verbosity: pdfjs.VerbosityLevel.ERRORS,
  });
  const abort = () => void task.destroy().catch(() => {});
  input.signal.addEventListener('abort', abort, { once: true });
  try {
    let doc;
    try {
      doc = await task.promise;
    } catch (error) {
      const name = (error as Error).name;
      if (name === 'PasswordException') throw new ConversionError('PDF is encrypted (password required)');
      throw new ConversionError(`PDF cannot be parsed: ${(error as Error).message}`);
    }
    const pages = Math.min(doc.numPages, input.limits.pdfPages);
    const parts: string[] = [];
    const places: Place[] = [];
    let offset = 0;
    let bytes = 0;
    let page = 1;
    for (; page <= pages; page++) {
      if (input.signal.aborted) throw new ConversionError('aborted');
      const pdfPage = await doc.getPage(page);
      const content = await pdfPage.getTextContent();
      pdfPage.cleanup();
      let text = '';
      for (const item of content.items as TextItem[]) {
        if (typeof item.str !== 'string') continue;
        text += item.str;
        if (item.hasEOL) text += '\n';
      }
      const part = `--- page ${page} ---\n${text.trimEnd()}\n`;
      places.push({ offset, unit: 'page', number: page });
      // Parts are joined with '\n'.
      offset += part.length + 1;
      parts.push(part);
      bytes += Buffer.byteLength(part);
      // Past the output budget the rest would be cut anyway: stop reading pages.
      if (bytes > input.limits.outputBytes) {
        page++;
        break;
      }
    }
    const left = doc.numPages - (page - 1);
    if (left > 0) parts.push(`--- ${left} more page${left === 1 ? '' : 's'} not extracted ---\n`);
    return { text: parts.join('\n'), places };
  } finally {
    input.signal.removeEventListener('abort', abort);
    await task.destroy().catch(() => {});
  }
}
