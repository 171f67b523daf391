#!/usr/bin/env node
// Which room of src/ imports which, and which imports run up a floor.
// A room is a folder of src/ (`index/`) or a top-level file (`uri`). The
// floors below are the intended order, lowest first; an import from a room
// to a room on a higher floor is "up". docs/design.md draws this output.
//   node scripts/layers.mjs          rooms, edges with counts, upward imports
//   node scripts/layers.mjs --markdown   the floors and the room-to-room table of docs/design.md
//   node scripts/layers.mjs --check      one line, plus any import that points up or closes a cycle (npm test runs this)
// Exits 1 when an import points up, or when modules import each other (a cycle of value imports).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const FLOORS = [
  ['keys', 'log', 'fs-path', 'uri', 'sqlite', 'config', 'entry', 'errno', 'workers', 'job-queue', 'turns'],
  ['content/'],
  ['index/'],
  ['query/', 'resource', 'search/'],
  ['protocol/'],
  ['catalog/', 'live/'],
  ['server'],
  ['app'],
  ['http/', 'client-roots'],
  ['launch'],
  ['cli'],
];

const args = process.argv.slice(2);
const markdown = args.includes('--markdown');
const check = args.includes('--check');
const SRC = resolve(args.find((a) => !a.startsWith('--')) ?? 'src');
const floorOf = new Map(FLOORS.flatMap((rooms, i) => rooms.map((r) => [r, i])));
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (path.endsWith('.ts')) files.push(path);
  }
})(SRC);

function roomOf(path) {
  const rel = relative(SRC, path);
  const slash = rel.indexOf('/');
  return slash < 0 ? rel.replace(/\.ts$/, '') : `${rel.slice(0, slash)}/`;
}

// Static imports and re-exports, and dynamic `import('./...')` (a lazy load is an import all the same).
const IMPORT = /^(?:import|export)\s+(type\s+)?[^;]*?\sfrom\s+'(\.{1,2}\/[^']+)'|\bimport\('(\.{1,2}\/[^']+)'\)/gms;
const edges = new Map();
const up = [];
/** Module -> the modules it imports for their values (a type-only import is erased, so it makes no cycle). */
const valueImports = new Map(files.map((f) => [f, []]));
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(IMPORT)) {
    const target = resolve(dirname(file), m[2] ?? m[3]);
    if (!m[1]) valueImports.get(file).push(target.endsWith('.ts') ? target : `${target}.ts`);
    const from = roomOf(file);
    const to = roomOf(target);
    if (from === to) continue;
    const key = `${from} -> ${to}`;
    edges.set(key, (edges.get(key) ?? 0) + 1);
    const a = floorOf.get(from);
    const b = floorOf.get(to);
    if (a === undefined || b === undefined) throw new Error(`room not on a floor: ${a === undefined ? from : to}`);
    if (b > a) {
      const line = text.slice(0, m.index).split('\n').length;
      up.push(`src/${relative(SRC, file)}:${line} -> src/${relative(SRC, target)}${m[1] ? ' (type only)' : ''}`);
    }
  }
}

/**
 * Groups of modules that import each other, directly or around a loop
 * (Tarjan's strongly connected components over value imports): a cycle makes
 * the order of module evaluation matter, so none is allowed, within a room
 * as between rooms.
 */
function importCycles() {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of valueImports.get(v) ?? []) {
      if (!valueImports.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const group = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      group.push(`src/${relative(SRC, w)}`);
    } while (w !== v);
    if (group.length > 1 || (valueImports.get(v) ?? []).includes(v)) cycles.push(group.sort());
  };
  for (const v of valueImports.keys()) if (!index.has(v)) visit(v);
  return cycles;
}
const cycles = importCycles();

if (markdown) {
  printMarkdown();
} else if (check) {
  console.log(`layers: ${files.length} modules in ${FLOORS.flat().length} rooms on ${FLOORS.length} floors, ${up.length} import(s) pointing up, ${cycles.length} import cycle(s)`);
  for (const u of up) console.log(`  ${u}`);
  for (const c of cycles) console.log(`  cycle: ${c.join(' -> ')}`);
} else {
  console.log('floors, lowest first:');
  FLOORS.forEach((rooms, i) => console.log(`  ${i}: ${rooms.join(', ')}`));
  console.log('\nimports between rooms (import statements):');
  for (const [key, n] of [...edges].sort()) console.log(`  ${key}  ${n}`);
  console.log(`\nimports that point up: ${up.length}`);
  for (const u of up) console.log(`  ${u}`);
}
process.exitCode = up.length > 0 || cycles.length > 0 ? 1 : 0;

/** The floors, highest first, and one row per importing room (highest floor first), one column per room imported. */
function printMarkdown() {
  const label = (room) => (room.endsWith('/') ? room : `${room}.ts`);
  console.log('```');
  for (let i = FLOORS.length - 1; i >= 0; i--) console.log(`${String(i).padStart(2)}  ${FLOORS[i].map(label).map((r) => r.padEnd(14)).join('  ').trimEnd()}`);
  console.log('```\n');
  const rooms = FLOORS.slice().reverse().flat();
  const targets = rooms.filter((to) => [...edges.keys()].some((key) => key.endsWith(` -> ${to}`)));
  console.log(`| from → to | ${targets.map((t) => `\`${t}\``).join(' | ')} |`);
  console.log(`|---|${targets.map(() => '---').join('|')}|`);
  for (const from of rooms) {
    const cells = targets.map((to) => String(edges.get(`${from} -> ${to}`) ?? ''));
    if (cells.every((c) => c === '')) continue;
    console.log(`| \`${from}\` | ${cells.join(' | ')} |`);
  }
  console.log(`\nImports that point up: ${up.length}`);
}
