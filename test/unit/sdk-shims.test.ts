// The bundles carry scripts/sdk-shims-node.mjs in place of the MCP SDK's Node shim (scripts/build.mjs,
// sdkShimsNode): its JSON Schema validator loads ajv on first use. Bundled as the build bundles it, it must
// validate as the SDK's own validator does.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { build } from 'esbuild';
import { tempDir } from '../basics.ts';

type Validate = (input: unknown) => { valid: boolean; data: unknown; errorMessage: string | undefined };
type Validator = { getValidator(schema: Record<string, unknown>): Validate };

test('the bundled shim validates as the SDK validator does: types, required keys, formats, draft-07', async () => {
  const dir = tempDir('folder-mcp-shims-');
  try {
    const shim = resolve('scripts/sdk-shims-node.mjs');
    const out = join(dir.path, 'shim.mjs');
    // As scripts/build.mjs bundles it: an ES module for Node, its require() from the banner (made for the bundle's place).
    await build({
      stdin: { contents: `export { DefaultJsonSchemaValidator, process } from ${JSON.stringify(shim)};`, resolveDir: process.cwd(), loader: 'js' },
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: out,
      banner: { js: `import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(${JSON.stringify(pathToFileURL(out).href)});` },
      logLevel: 'silent',
    });
    const bundled = (await import(pathToFileURL(out).href)) as { DefaultJsonSchemaValidator: new () => Validator; process: NodeJS.Process };
    assert.equal(bundled.process, process);
    const ours = new bundled.DefaultJsonSchemaValidator();
    const sdks: Validator = new AjvJsonSchemaValidator();
    const cases: Array<[Record<string, unknown>, unknown[]]> = [
      [{ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, [{ name: 'a' }, {}, { name: 1 }, 'x']],
      [{ type: 'string', format: 'email' }, ['me@example.com', 'not an email']],
      [{ $schema: 'http://json-schema.org/draft-07/schema#', type: 'integer', minimum: 2 }, [3, 1, 2.5]],
    ];
    for (const [schema, inputs] of cases) {
      const [a, b] = [ours.getValidator(schema), sdks.getValidator(schema)];
      for (const input of inputs) assert.deepEqual(a(input), b(input), `${JSON.stringify(schema)} on ${JSON.stringify(input)}`);
    }
    assert.equal(ours.getValidator(cases[0]![0])({}).valid, false);
  } finally {
    dir.cleanup();
  }
});
