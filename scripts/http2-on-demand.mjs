// What @hono/node-server imports of node:http2, bundled in its place by
// scripts/build.mjs: the module is loaded when a value is first checked
// against it, not at every start (see ON_DEMAND_BUILTINS there). folder-mcp
// serves HTTP/1.1 only, so that is never, and Http2ServerRequest's
// instanceof checks answer as the real class's would.
const http2 = () => process.getBuiltinModule('node:http2');

export class Http2ServerRequest {
  static [Symbol.hasInstance](value) {
    return value instanceof http2().Http2ServerRequest;
  }
}

export const constants = new Proxy(
  {},
  {
    get: (_, key) => http2().constants[key],
    has: (_, key) => key in http2().constants,
    ownKeys: () => Reflect.ownKeys(http2().constants),
    getOwnPropertyDescriptor: (_, key) => Reflect.getOwnPropertyDescriptor(http2().constants, key),
  },
);
