#!/usr/bin/env node
// Which room of src/ imports which, and which imports run up a floor.
// A room is a folder of src/ (`index/`) or a top-level file (`uri`). The
// floors below are the intended order, lowest first; an import from a room
// to a room on a higher floor is "up". docs/design.md draws this output.
//   node scripts/layers.mjs          rooms, edges with counts, upward imports
//   node scripts/layers.mjs --markdown   the floors and the room-to-room table of docs/design.md
//   node scripts/layers.mjs --check      one line, plus any import that points up or closes a cycle (npm test runs this)
// Exits 1 when an import points up, when modules import each other (a cycle of value imports), or when
// type imports close a circle not in KNOWN_TYPE_CIRCLES (issue 47).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const FLOORS = [
  ['keys', 'log', 'heap', 'fs-path', 'uri', 'sqlite', 'config', 'entry', 'errno', 'json-depth', 'workers', 'job-queue', 'clock', 'turns', 'coalesce', 'watching'],
  ['content/'],
  ['index/'],
  ['query/', 'resource', 'search/', 'watch/', 'sync/', 'replicas/'],
  ['protocol/'],
  ['catalog/'],
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
/** Module -> the modules it imports for their values (a type-only import is erased, so it makes no cycle at run time). */
const valueImports = new Map(files.map((f) => [f, []]));
/** Module -> every module it imports, types included: a circle of these still ties the modules' designs together. */
const allImports = new Map(files.map((f) => [f, []]));
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(IMPORT)) {
    const target = resolve(dirname(file), m[2] ?? m[3]);
    const module = target.endsWith('.ts') ? target : `${target}.ts`;
    if (!m[1]) valueImports.get(file).push(module);
    allImports.get(file).push(module);
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
 * (Tarjan's strongly connected components over `graph`). Over value imports,
 * a cycle makes the order of module evaluation matter, so none is allowed,
 * within a room as between rooms; over all imports, a circle made by type
 * imports ties two designs together (issue 47), and no new one is allowed.
 */
function importCycles(graph) {
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
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
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
    if (group.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}
const cycles = importCycles(valueImports);
/**
 * Circles that type imports close, known and waiting for issue 47's rework:
 * each is named by its modules, sorted. A circle not in this list fails the
 * check; one in it that is gone is reported, to be taken off.
 */
const KNOWN_TYPE_CIRCLES = new Set([
]);
const valueCircles = new Set(cycles.map((c) => c.join(' ')));
const typeCircles = importCycles(allImports).filter((c) => !valueCircles.has(c.join(' ')));
const newTypeCircles = typeCircles.filter((c) => !KNOWN_TYPE_CIRCLES.has(c.join(' ')));
const goneTypeCircles = [...KNOWN_TYPE_CIRCLES].filter((known) => !typeCircles.some((c) => c.join(' ') === known));

if (markdown) {
  printMarkdown();
} else if (check) {
  console.log(
    `layers: ${files.length} modules in ${FLOORS.flat().length} rooms on ${FLOORS.length} floors, ${up.length} import(s) pointing up, ` +
      `${cycles.length} import cycle(s), ${typeCircles.length} circle(s) of type imports (${newTypeCircles.length} new)`,
  );
  for (const u of up) console.log(`  ${u}`);
  for (const c of cycles) console.log(`  cycle: ${c.join(' -> ')}`);
  for (const c of typeCircles) console.log(`  ${KNOWN_TYPE_CIRCLES.has(c.join(' ')) ? 'known' : 'NEW'} circle of type imports: ${c.join(', ')}`);
  for (const c of goneTypeCircles) console.log(`  gone (take it off KNOWN_TYPE_CIRCLES): ${c}`);
} else {
  console.log('floors, lowest first:');
  FLOORS.forEach((rooms, i) => console.log(`  ${i}: ${rooms.join(', ')}`));
  console.log('\nimports between rooms (import statements):');
  for (const [key, n] of [...edges].sort()) console.log(`  ${key}  ${n}`);
  console.log(`\nimports that point up: ${up.length}`);
  for (const u of up) console.log(`  ${u}`);
}
process.exitCode = up.length > 0 || cycles.length > 0 || newTypeCircles.length > 0 ? 1 : 0;

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
