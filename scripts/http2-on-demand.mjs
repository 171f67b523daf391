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

// Read by name only (`constants.NGHTTP2_NO_ERROR`, on an HTTP/2 stream).
export const constants = new Proxy({}, { get: (_, key) => http2().constants[key] });
