/**
 * Markdown from the small, well-formed HTML that mammoth writes (p, h1-h6,
 * strong, em, s, sup, sub, u, a, img, br, ul/ol/li, table/tr/td/th): not a
 * general HTML converter. Tables become GFM tables, which mammoth's own
 * Markdown writer drops; prose is left unescaped, since it is read, not
 * re-rendered.
 */

interface Element {
  tag: string;
  attrs: Record<string, string>;
  children: Node[];
}
type Node = Element | string;

const VOID = new Set(['br', 'img', 'hr']);

export function htmlToMarkdown(html: string): string {
  const blocks = renderBlocks(parse(html).children, '');
  return `${blocks.join('\n\n').replace(/\n{3,}/g, '\n\n').trim()}\n`;
}

function parse(html: string): Element {
  const root: Element = { tag: '#root', attrs: {}, children: [] };
  const stack: Element[] = [root];
  const token = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s+[^\s=>/]+(?:="[^"]*")?)*)\s*(\/?)>|([^<]+)|</g;
  for (let m = token.exec(html); m !== null; m = token.exec(html)) {
    const top = stack[stack.length - 1]!;
    if (m[5] !== undefined || m[2] === undefined) {
      top.children.push(decodeEntities(m[5] ?? '<'));
      continue;
    }
    const tag = m[2].toLowerCase();
    if (m[1]) {
      // Close the nearest matching element (mammoth's HTML is well formed; this is only defensive).
      const at = stack.map((e) => e.tag).lastIndexOf(tag);
      if (at > 0) stack.length = at;
      continue;
    }
    const element: Element = { tag, attrs: parseAttrs(m[3] ?? ''), children: [] };
    top.children.push(element);
    if (!m[4] && !VOID.has(tag)) stack.push(element);
  }
  return root;
}

function parseAttrs(text: string): Record<string, string> {
  const attrs: Record<string, string> = {};
  for (const m of text.matchAll(/([^\s=]+)(?:="([^"]*)")?/g)) attrs[m[1]!.toLowerCase()] = decodeEntities(m[2] ?? '');
  return attrs;
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos|nbsp);/g, (_, e: string) => {
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' }[e]!;
  });
}

const BLOCK = /^(p|h[1-6]|ul|ol|table|div|blockquote|pre|hr)$/;
const LIST_START = /^(- |\d+\. )/;

/** Block-level children, each a Markdown block; inline runs between blocks become paragraphs. */
function renderBlocks(nodes: readonly Node[], indent: string): string[] {
  const out: string[] = [];
  let inline: Node[] = [];
  const flush = () => {
    const text = renderInline(inline).trim();
    if (text) out.push(text);
    inline = [];
  };
  for (const node of nodes) {
    if (typeof node === 'string' || !BLOCK.test(node.tag)) {
      inline.push(node);
      continue;
    }
    flush();
    const block = renderBlock(node, indent);
    if (block) out.push(block);
  }
  flush();
  return out;
}

function renderBlock(el: Element, indent: string): string {
  const heading = /^h([1-6])$/.exec(el.tag);
  if (heading) return `${'#'.repeat(Number(heading[1]))} ${renderInline(el.children).trim()}`;
  if (el.tag === 'ul' || el.tag === 'ol') return renderList(el, indent);
  if (el.tag === 'table') return renderTable(el);
  if (el.tag === 'hr') return '---';
  if (el.tag === 'blockquote') {
    return renderBlocks(el.children, '')
      .join('\n\n')
      .split('\n')
      .map((l) => `> ${l}`)
      .join('\n');
  }
  if (el.tag === 'pre') return `\`\`\`\n${textOf(el)}\n\`\`\``;
  return renderBlocks(el.children, indent).join('\n\n'); // p, div
}

function renderList(list: Element, indent: string): string {
  const items = list.children.filter((c): c is Element => typeof c !== 'string' && c.tag === 'li');
  return items
    .map((item, i) => {
      const marker = list.tag === 'ol' ? `${i + 1}. ` : '- ';
      const pad = ' '.repeat(marker.length);
      const blocks = renderBlocks(item.children, '');
      // A nested list follows its item's text directly (a tight list); paragraphs are apart.
      const body = blocks.reduce((acc, block, n) => (n === 0 ? block : `${acc}${LIST_START.test(block) ? '\n' : '\n\n'}${block}`), '');
      // Continuation lines (a second paragraph, a nested list) are indented under the marker.
      return marker + body.split('\n').map((l, n) => (n === 0 || l === '' ? l : pad + l)).join('\n');
    })
    .map((line) => indent + line)
    .join('\n');
}

function renderTable(table: Element): string {
  const rows: Element[] = [];
  const collect = (el: Element) => {
    for (const c of el.children) {
      if (typeof c === 'string') continue;
      if (c.tag === 'tr') rows.push(c);
      else if (c.tag === 'thead' || c.tag === 'tbody' || c.tag === 'tfoot') collect(c);
    }
  };
  collect(table);
  if (rows.length === 0) return '';
  const cells = rows.map((row) =>
    row.children
      .filter((c): c is Element => typeof c !== 'string' && (c.tag === 'td' || c.tag === 'th'))
      .map((cell) =>
        renderBlocks(cell.children, '')
          .join(' ')
          .replace(/\s*\n\s*/g, ' ')
          .replace(/\|/g, '\\|')
          .trim(),
      ),
  );
  const width = Math.max(...cells.map((r) => r.length));
  const line = (r: string[]) => `| ${Array.from({ length: width }, (_, i) => r[i] ?? '').join(' | ')} |`;
  // GFM needs a header row: the table's first row is it.
  return [line(cells[0]!), `|${' --- |'.repeat(width)}`, ...cells.slice(1).map(line)].join('\n');
}

function renderInline(nodes: readonly Node[]): string {
  let out = '';
  for (const node of nodes) {
    if (typeof node === 'string') {
      out += node.replace(/\s+/g, ' ');
      continue;
    }
    const inner = () => renderInline(node.children);
    switch (node.tag) {
      case 'strong':
      case 'b':
        out += wrap(inner(), '**');
        break;
      case 'em':
      case 'i':
        out += wrap(inner(), '*');
        break;
      case 's':
      case 'del':
        out += wrap(inner(), '~~');
        break;
      case 'br':
        out += '\n';
        break;
      case 'img':
        out += `[${node.attrs.alt || 'image'}]`;
        break;
      case 'a': {
        const text = inner();
        const href = node.attrs.href;
        out += href && text.trim() && !href.startsWith('#') ? `[${text}](${href})` : text;
        break;
      }
      default:
        // u, sup, sub, span and blocks met inline: their text.
        out += BLOCK.test(node.tag) ? ` ${renderBlocks([node], '').join(' ')} ` : inner();
    }
  }
  return out;
}

/** Emphasis markers hug the text (`**bold** word`, not `** bold **`), else they are literal asterisks. */
function wrap(text: string, marker: string): string {
  const m = /^(\s*)([\s\S]*?)(\s*)$/.exec(text)!;
  return m[2] ? `${m[1]}${marker}${m[2]}${marker}${m[3]}` : text;
}

function textOf(node: Node): string {
  return typeof node === 'string' ? node : node.children.map(textOf).join('');
}
