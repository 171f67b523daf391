// SDK workaround (@modelcontextprotocol/server 2.4): the spec schema strips the proposals' params.
// When it can go: test/unit/sdk-workarounds.test.ts, "loose params", fails.

/**
 * A Standard Schema that accepts any params object as it is. The two-argument
 * `setRequestHandler(method, handler)` parses params with the spec schema,
 * which strips the proposals' params (`prefix`, `filter`, `filters`, `uri` on
 * lists) and turns a bad param into -32603; with this schema in the
 * three-argument form the handler sees every param and validates them itself
 * (-32602 with the SEP-2564 messages).
 */
export const LOOSE_PARAMS = {
  '~standard': {
    version: 1 as const,
    vendor: 'folder-mcp',
    validate: (value: unknown) => ({ value: (value ?? {}) as Record<string, unknown> }),
  },
};
