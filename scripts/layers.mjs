#!/usr/bin/env node
// Which room of src/ imports which, and which imports run up a floor.
// A room is a folder of src/ (`index/`) or a top-level file (`uri`). The
// floors below are the intended order, lowest first; an import from a room
// to a room on a higher floor is "up". docs/design.md draws this output.
//   node scripts/layers.mjs          rooms, edges with counts, upward imports
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const FLOORS = [
  ['keys', 'log', 'uri', 'config', 'entry'],
  ['content/'],
  ['index/'],
  ['query/', 'resource'],
  ['protocol/'],
  ['catalog/', 'live/'],
  ['server'],
  ['app'],
  ['http/'],
  ['cli'],
];

const SRC = resolve(process.argv[2] ?? 'src');
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

const IMPORT = /^(?:import|export)\s+(type\s+)?[^;]*?\sfrom\s+'(\.{1,2}\/[^']+)'/gms;
const edges = new Map();
const up = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(IMPORT)) {
    const target = resolve(dirname(file), m[2]);
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

console.log('floors, lowest first:');
FLOORS.forEach((rooms, i) => console.log(`  ${i}: ${rooms.join(', ')}`));
console.log('\nimports between rooms (import statements):');
for (const [key, n] of [...edges].sort()) console.log(`  ${key}  ${n}`);
console.log(`\nimports that point up: ${up.length}`);
for (const u of up) console.log(`  ${u}`);
