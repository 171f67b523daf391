// Bundled in place of mime-types (scripts/build.mjs, mimeTypesTable): the one function folder-mcp calls,
// mime.lookup, over the table mime-types would build at every start. mime-types builds it from all of
// mime-db (228 KiB in each bundle that names a file's type), scoring each type's claim to each extension:
// about 6 ms of every start, warm or cold. The table, computed here when the bundle is built, is the same
// answer for every extension (test/unit/mime-table.test.ts), in 40 KiB.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The module's source: mime-types' own extension table, and lookup() as mime-types 3 defines it. */
export function mimeTypesModule() {
  const mime = require('mime-types');
  const own = createRequire(require.resolve('mime-types'));
  const versions = `mime-types ${own('./package.json').version}, mime-db ${own('mime-db/package.json').version}`;
  const types = Object.fromEntries(Object.entries(mime.types).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return `// Written by scripts/mime-types-table.mjs from ${versions}: the extension table mime-types builds.
import { extname } from 'node:path';

const types = ${JSON.stringify(types)};

/** The MIME type of a path's extension, or false (mime-types' lookup). */
export function lookup(path) {
  if (!path || typeof path !== 'string') return false;
  const extension = extname('x.' + path).toLowerCase().slice(1);
  if (!extension || !Object.hasOwn(types, extension)) return false;
  return types[extension];
}

export default { lookup };
`;
}
