// What the MCP SDK imports as `@modelcontextprotocol/server/_shims`, bundled
// in place of its Node shim (dist/shimsNode.mjs) by scripts/build.mjs: the
// same two exports, with the JSON Schema validator's ajv evaluated when a
// schema is first checked, not at every start. The SDK's server checks one
// only to validate what a client answers to an elicitation, which
// folder-mcp never asks for; ajv's evaluation cost every start about 8 ms.
import process from 'node:process';

export class DefaultJsonSchemaValidator {
  #validator;

  getValidator(schema) {
    // esbuild bundles this require() as a module evaluated on this first call; an import is evaluated at every start.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    this.#validator ??= new (require('@modelcontextprotocol/server/validators/ajv').AjvJsonSchemaValidator)();
    return this.#validator.getValidator(schema);
  }
}

export { process };
