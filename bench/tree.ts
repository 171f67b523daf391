import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Bump when the generator's output changes: cached trees with another version are rebuilt. */
export const GENERATOR_VERSION = 2;

export interface BenchTree {
  /** Absolute path of the tree's root folder. */
  root: string;
  size: number;
  seed: number;
  /** Entries the tree holds (files + directories, the root excluded). */
  files: number;
  dirs: number;
  /** Some paths the scenarios ask about (relative to root, '/'-separated). */
  deepDir: string;
  siblingDirs: [string, string];
  bigText: string;
  binary: string;
  pdf: string;
  notebook: string;
  /** A word present in about one file in 50. */
  needle: string;
}

export function benchHome(): string {
  return join(tmpdir(), 'folder-mcp-bench');
}

/** A small deterministic PRNG (mulberry32): the same seed gives the same tree on every machine. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOP = ['src', 'docs', 'tests', 'assets', 'scripts', 'data', 'packages'];
/** Share of directories (and so of files) under each top-level folder. */
const TOP_WEIGHT = [0.35, 0.15, 0.15, 0.08, 0.05, 0.07, 0.15];
const WORDS = ['core', 'util', 'api', 'model', 'view', 'store', 'auth', 'http', 'parse', 'render', 'cache', 'queue',
  'config', 'event', 'user', 'order', 'index', 'graph', 'math', 'io'];
const ODD_NAMES = ['read me', 'café', 'naïve plan', '日本語', 'résumé final', 'über', 'space  twice', 'Ωmega'];
const EXTS = ['.ts', '.ts', '.ts', '.js', '.md', '.md', '.json', '.py', '.txt', ''];
export const NEEDLE = 'zebrafinch';

function pick<T>(r: () => number, items: readonly T[]): T {
  return items[Math.floor(r() * items.length)]!;
}

function baseName(r: () => number, i: number): string {
  if (r() < 0.02) return `${pick(r, ODD_NAMES)} ${i}`;
  return `${pick(r, WORDS)}-${pick(r, WORDS)}-${i}`;
}

function content(r: () => number, ext: string, i: number): string {
  const word = `${pick(r, WORDS)}${i}`;
  const extra = i % 50 === 7 ? ` ${NEEDLE}` : '';
  switch (ext) {
    case '.ts':
      return `export const ${word.replace(/\W/g, '_')} = ${i};${extra ? ` // ${NEEDLE}` : ''}\n`;
    case '.js':
      return `module.exports = { ${word.replace(/\W/g, '_')}: ${i} };${extra ? ` // ${NEEDLE}` : ''}\n`;
    case '.json':
      return JSON.stringify({ id: i, name: word, note: extra.trim() }) + '\n';
    case '.py':
      return `def ${word.replace(/\W/g, '_')}():\n    return ${i}  #${extra}\n`;
    case '.md':
      return `# ${word}\n\nNotes on ${word}.${extra}\n`;
    default:
      return `${word} ${i}${extra}\n`;
  }
}

/**
 * The directory skeleton: top-level folders, then each new directory goes
 * under a random existing one at depth < 8, so depths spread over 3..8 as in
 * real projects. Returns '/'-separated relative paths and their depths.
 */
function skeleton(r: () => number, dirCount: number): { path: string; depth: number }[] {
  const dirs: { path: string; depth: number }[] = [];
  const byTop: { path: string; depth: number }[][] = TOP.map((t) => {
    const d = { path: t, depth: 1 };
    dirs.push(d);
    return [d];
  });
  // A fixed deep chain under src/ so "a deep prefix" means the same thing at every size.
  let chain = 'src';
  for (const part of ['core', 'engine', 'pipeline', 'stages', 'late']) {
    chain += `/${part}`;
    const d = { path: chain, depth: chain.split('/').length };
    dirs.push(d);
    byTop[0]!.push(d);
  }
  for (const sib of ['docs/guide', 'docs/guides']) {
    const d = { path: sib, depth: 2 };
    dirs.push(d);
    byTop[1]!.push(d);
  }
  let n = 0;
  while (dirs.length < dirCount) {
    let x = r();
    let t = 0;
    while (t < TOP_WEIGHT.length - 1 && x >= TOP_WEIGHT[t]!) x -= TOP_WEIGHT[t++]!;
    const pool = byTop[t]!;
    // A uniformly random parent (a random recursive tree): depth grows like log(size), capped at 8.
    const parent = pool[Math.floor(pool.length * r())]!;
    if (parent.depth >= 8) continue;
    const d = { path: `${parent.path}/${r() < 0.03 ? pick(r, ODD_NAMES) : pick(r, WORDS)}-${n++}`, depth: parent.depth + 1 };
    dirs.push(d);
    pool.push(d);
  }
  return dirs;
}

/**
 * Generates (or reuses) the synthetic tree of `size` files for `seed`, outside
 * the repository. A marker beside the tree names the generator version; a
 * tree without a matching marker is deleted and regenerated.
 */
export function ensureTree(size: number, seed: number, log: (line: string) => void): BenchTree {
  const home = join(benchHome(), 'trees');
  const root = join(home, `${size}-${seed}`);
  const marker = `${root}.done.json`;
  if (existsSync(marker)) {
    const cached = JSON.parse(readFileSync(marker, 'utf8')) as BenchTree & { version: number };
    if (cached.version === GENERATOR_VERSION && existsSync(root)) return cached;
  }
  rmSync(marker, { force: true });
  rmSync(root, { recursive: true, force: true });
  const started = performance.now();
  log(`generating a ${size}-file tree in ${root} (once; cached) ...`);
  const r = rng(seed);
  const dirs = skeleton(r, Math.max(20, Math.round(size / 20)));
  for (const d of dirs) mkdirSync(join(root, d.path), { recursive: true });
  const special = {
    bigText: 'docs/big-text-1mb.txt',
    binary: 'assets/blob-1mb.bin',
    pdf: 'docs/sample.pdf',
    notebook: 'docs/analysis.ipynb',
  };
  writeFileSync(join(root, special.bigText), bigText(r));
  writeFileSync(join(root, special.binary), randomBytes(r, 1 << 20));
  writeFileSync(join(root, 'assets/blob-small.bin'), randomBytes(r, 4096));
  writeFileSync(join(root, 'assets/noext-binary'), randomBytes(r, 2048));
  writeFileSync(join(root, special.pdf), minimalPdf(`folder-mcp bench ${NEEDLE}`));
  writeFileSync(join(root, special.notebook), notebook());
  let files = 6;
  for (let i = 0; files < size; i++, files++) {
    const dir = dirs[Math.floor(r() * dirs.length)]!;
    const ext = pick(r, EXTS);
    writeFileSync(join(root, dir.path, baseName(r, i) + ext), content(r, ext, i));
    if (i % 100_000 === 99_999) log(`  ${i + 1} files ...`);
  }
  const tree: BenchTree = {
    root,
    size,
    seed,
    files,
    dirs: dirs.length,
    deepDir: 'src/core/engine/pipeline/stages/late',
    siblingDirs: ['docs/guide', 'docs/guides'],
    ...special,
    needle: NEEDLE,
  };
  writeFileSync(marker, JSON.stringify({ ...tree, version: GENERATOR_VERSION }, null, 2));
  log(`generated ${files} files in ${dirs.length} dirs in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return tree;
}

function randomBytes(r: () => number, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i += 4) b.writeUInt32LE(Math.floor(r() * 4294967296), i);
  b[0] = 0; // a NUL early: unmistakably binary
  return b;
}

function bigText(r: () => number): string {
  const lines: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < 1 << 20; i++) {
    const line = `${i} ${pick(r, WORDS)} ${pick(r, WORDS)} ${pick(r, WORDS)} lorem ipsum dolor sit amet\n`;
    lines.push(line);
    bytes += line.length;
  }
  return lines.join('');
}

/** A one-page PDF with one line of text, byte offsets computed so the xref is valid. */
export function minimalPdf(text: string): Buffer {
  const stream = `BT /F1 18 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

function notebook(): string {
  return JSON.stringify({
    cells: [
      { cell_type: 'markdown', metadata: {}, source: ['# Analysis\n', 'A bench notebook.'] },
      { cell_type: 'code', metadata: {}, execution_count: 1, outputs: [], source: ['print(1 + 1)'] },
    ],
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    nbformat: 4,
    nbformat_minor: 5,
  });
}
