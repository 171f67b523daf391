#!/usr/bin/env node
// Checks every relative Markdown link and #anchor in README.md,
// CONTRIBUTING.md and docs/*.md: the file must exist, and an anchor must be
// the GitHub slug of a heading in the target. Also every path of this
// repository named in a code span (`src/sync/live.ts`, `test/helpers.ts:40`)
// or in a comment of the code, and manifest.json's entry point: it must
// exist, so neither the docs nor the code can go on naming a file that
// moved. Plain Node, no dependencies.
//   node scripts/check-links.mjs [--allow-missing docs/http.md,docs/install.md]
// A file named in --allow-missing may be absent (a page another branch adds);
// links to it, and anchors in it, are then not checked. Exit code 1 on any
// broken link.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const args = process.argv.slice(2);
const allowAt = args.indexOf('--allow-missing');
const allowMissing = new Set(
  allowAt >= 0 ? (args[allowAt + 1] ?? '').split(',').filter(Boolean).map((p) => normalize(p)) : [],
);

const files = ['README.md', 'CONTRIBUTING.md'];
if (existsSync(join(ROOT, 'docs'))) {
  for (const name of readdirSync(join(ROOT, 'docs')).sort()) if (name.endsWith('.md')) files.push(`docs/${name}`);
}

/** Markdown text without fenced code blocks and inline code spans (links there are not links). */
function prose(text) {
  const out = [];
  let fence = null;
  for (const line of text.split('\n')) {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence === null && m) { fence = m[1][0].repeat(m[1].length); out.push(''); continue; }
    if (fence !== null) { if (line.trim().startsWith(fence)) fence = null; out.push(''); continue; }
    out.push(line.replace(/(`+)(?:(?!\1).)+?\1/g, ''));
  }
  return out;
}

/** GitHub's heading slug: lowercase, drop punctuation except - and _, spaces to -. */
function slug(heading) {
  return heading
    .trim()
    .replace(/<[^>]+>/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

const anchorCache = new Map();
function anchorsOf(path) {
  if (anchorCache.has(path)) return anchorCache.get(path);
  const anchors = new Set();
  const seen = new Map();
  let fence = null;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence === null && f) { fence = f[1][0].repeat(f[1].length); continue; }
    if (fence !== null) { if (line.trim().startsWith(fence)) fence = null; continue; }
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    // Inline code keeps its text in the slug; only the backticks go.
    const base = slug(h[1].replace(/`/g, ''));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of readFileSync(path, 'utf8').matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  anchorCache.set(path, anchors);
  return anchors;
}

const LINK = /!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
let checked = 0;
const broken = [];
const skipped = new Set();
for (const file of files) {
  const abs = join(ROOT, file);
  if (!existsSync(abs)) continue;
  prose(readFileSync(abs, 'utf8')).forEach((line, i) => {
    for (const m of line.matchAll(LINK)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      checked++;
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
      const dest = pathPart === '' ? abs : resolve(dirname(abs), pathPart);
      const rel = relative(ROOT, dest);
      const where = `${file}:${i + 1}`;
      if (!existsSync(dest)) {
        if (allowMissing.has(normalize(rel))) { skipped.add(rel); continue; }
        broken.push(`${where}: ${target}: no such file ${rel}`);
        continue;
      }
      if (anchor === null) continue;
      if (statSync(dest).isDirectory() || !dest.endsWith('.md')) {
        broken.push(`${where}: ${target}: an anchor into something that is not a Markdown file`);
        continue;
      }
      if (!anchorsOf(dest).has(anchor)) broken.push(`${where}: ${target}: no heading #${anchor} in ${rel}`);
    }
  });
}

/**
 * Code spans that name a path of this repository: under one of its top-level
 * folders, with no spaces, no glob or placeholder characters. A `:line`
 * suffix or an `#anchor` is dropped. Generated folders (dist/, bench/.trees/)
 * are not in the repository, so they are not checked.
 */
const REPO_DIRS = /^(src|test|bench|scripts|docs|\.ci)\//;
const NOT_A_PATH = /[\s*?{}<>$|\\]|\.\.\./;
const GENERATED = /^bench\/(\.trees|results\/(?!latest\.json))/;
function codePaths(text) {
  const found = [];
  let fence = null;
  text.split('\n').forEach((line, i) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence === null && m) { fence = m[1][0].repeat(m[1].length); return; }
    if (fence !== null) { if (line.trim().startsWith(fence)) fence = null; return; }
    for (const span of line.matchAll(/(?<!`)`([^`]+)`(?!`)/g)) {
      const path = span[1].replace(/#.*$/, '').replace(/:\d+(-\d+)?$/, '');
      if (REPO_DIRS.test(path) && !NOT_A_PATH.test(path) && !GENERATED.test(path)) found.push({ path, line: i + 1 });
    }
  });
  return found;
}
let paths = 0;
for (const file of files) {
  const abs = join(ROOT, file);
  if (!existsSync(abs)) continue;
  for (const { path, line } of codePaths(readFileSync(abs, 'utf8'))) {
    paths++;
    if (!existsSync(join(ROOT, path)) && !allowMissing.has(normalize(path))) broken.push(`${file}:${line}: \`${path}\`: no such file or folder`);
  }
}

/**
 * Paths of this repository named in the comments of its code (`// see
 * src/sync/live.ts`, ` * test/unit/uri.test.ts`), and in manifest.json (the
 * bundle's entry point): they must exist too, so a comment cannot go on
 * naming a file that moved. A path is a repository folder, then path
 * characters; one in backticks is an example, and a relative one
 * (`./worker.js`) or one under a generated folder is not checked.
 */
const COMMENT_PATH = /(?<![\w./-])((?:src|test|bench|scripts|docs|\.ci)\/[\w./-]*[\w/])/g;
function commentPaths(text) {
  const found = [];
  text.split('\n').forEach((line, i) => {
    const comment = /^\s*(?:\/\/|\*|\/\*)(.*)$/.exec(line) ?? /\s\/\/\s(.*)$/.exec(line);
    if (!comment) return;
    // In backticks a path is an example (`src/ut` -> `src/util/`), bare it names a file.
    for (const m of comment[1].replace(/`[^`]*`/g, '').matchAll(COMMENT_PATH)) {
      const path = m[1].replace(/[.]$/, '');
      if (!GENERATED.test(path) && !/\.\.\.|\/\.\//.test(path)) found.push({ path, line: i + 1 });
    }
  });
  return found;
}
const sources = [];
(function walk(dir) {
  for (const name of readdirSync(join(ROOT, dir)).sort()) {
    const rel = dir ? `${dir}/${name}` : name;
    if (statSync(join(ROOT, rel)).isDirectory()) {
      if (!['node_modules', 'dist', 'build', '.git', 'results'].includes(name)) walk(rel);
    } else if (/\.(ts|mjs|js)$/.test(name)) sources.push(rel);
  }
})('');
let commentChecked = 0;
for (const file of [...sources.filter((f) => REPO_DIRS.test(f) || /^[\w.-]+\.(mjs|js|ts)$/.test(f)), '.ci/run']) {
  if (!existsSync(join(ROOT, file))) continue;
  for (const { path, line } of commentPaths(readFileSync(join(ROOT, file), 'utf8'))) {
    commentChecked++;
    if (!existsSync(join(ROOT, path))) broken.push(`${file}:${line}: comment names ${path}: no such file or folder`);
  }
}
if (existsSync(join(ROOT, 'manifest.json'))) {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'manifest.json'), 'utf8'));
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  // The bundle's entry point is the package's bin, which the build writes (dist/ is not in the repository).
  if (manifest.server?.entry_point !== pkg.bin?.['folder-mcp']) broken.push(`manifest.json: server.entry_point ${manifest.server?.entry_point} is not the package's bin ${pkg.bin?.['folder-mcp']}`);
  commentChecked++;
}

for (const b of broken) console.log(b);
const note = skipped.size ? `; allowed missing: ${[...skipped].sort().join(', ')}` : '';
console.log(`${files.length} files, ${checked} relative links and ${paths} paths in code spans, ${broken.length} broken${note}; ${commentChecked} paths named in code comments and the manifest`);
process.exit(broken.length ? 1 : 0);
