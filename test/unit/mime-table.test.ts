import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import mime from 'mime-types';
import { mimeTypesModule } from '../../scripts/mime-types-table.mjs';
import { tempDir } from '../basics.ts';

// The bundles carry mime-types' extension table computed at build time (scripts/build.mjs, mimeTypesTable),
// not mime-types itself: it must answer as mime-types does, for every name.
test('the build-time table answers lookup() as mime-types does, for every extension mime-db knows', async () => {
  const dir = tempDir('folder-mcp-mime-');
  try {
    const file = join(dir.path, 'mime-types.mjs');
    writeFileSync(file, mimeTypesModule());
    const table = (await import(pathToFileURL(file).href)) as { lookup: (path: unknown) => string | false; default: { lookup: unknown } };
    assert.equal(table.default.lookup, table.lookup);
    // mime-db as mime-types itself loads it (it is mime-types' dependency, not ours).
    const require = createRequire(import.meta.url);
    const db = createRequire(require.resolve('mime-types'))('mime-db') as Record<string, { extensions?: string[] }>;
    const extensions = new Set(Object.values(db).flatMap((entry) => entry.extensions ?? []));
    assert.ok(extensions.size > 1000, `${extensions.size} extensions in mime-db`);
    for (const ext of extensions) {
      for (const name of [`a.${ext}`, `A.${ext.toUpperCase()}`, `dir.v2/x.tar.${ext}`]) {
        assert.equal(table.lookup(name), mime.lookup(name), name);
      }
    }
    for (const name of ['', 'README', 'a.', '.gitignore', 'x.nosuchext', 'a.constructor', 'a.__proto__', 'a.toString', 'a.hasOwnProperty', 'C:\\dir\\a.json', 'a.b.c.md']) {
      assert.equal(table.lookup(name), mime.lookup(name), JSON.stringify(name));
    }
    for (const odd of [undefined, null, 42, {}]) assert.equal(table.lookup(odd), false);
  } finally {
    dir.cleanup();
  }
});
