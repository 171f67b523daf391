/** Typed failures of reading a file; the protocol layer maps them to JSON-RPC errors. */
export class ContentError extends Error {
  constructor(
    readonly reason: 'not-found' | 'too-large' | 'unreadable',
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
