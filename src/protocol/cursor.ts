// Opaque keyset cursors: the last key examined plus the filter's fingerprint,
// signed. Never an offset: a page after inserts or deletes resumes at the same
// key, so no untouched row is skipped or repeated.
//
// Layout (base64url): version u8 | fingerprint length u8 | fingerprint |
// key (UTF-8) | HMAC-SHA256(secret, "folder-mcp cursor" | all before)[0..16).
import { createHmac, timingSafeEqual } from 'node:crypto';

const VERSION = 1;
const MAC_BYTES = 16;
const DOMAIN = 'folder-mcp cursor';
/** Keys are URIs (at most 8 KiB, src/uri.ts); anything far longer is not ours. */
const MAX_CURSOR_CHARS = 16_384;

export const INVALID_CURSOR = 'Invalid cursor';
export const FILTER_CHANGED = 'Filter parameters must not change between paginated requests';

/** Both messages map to JSON-RPC -32602 as they are. */
export class CursorError extends Error {
  constructor(message: typeof INVALID_CURSOR | typeof FILTER_CHANGED) {
    super(message);
    this.name = 'CursorError';
  }
}

export interface CursorState {
  key: string;
  fingerprint: string;
}

/** `secret` is the index's `cursor_secret` (meta table): cursors die with the index. */
export type CursorSecret = string | Uint8Array;

/**
 * The key cursors are signed with: `secret` (the index's, or the one
 * replicas share) for this set of served folders, so that a cursor from
 * another set is invalid. An index emptied for other folders kept its
 * secret: an old cursor that sorted after the new folders' URIs gave a
 * silent empty last page, and one before them pages of the wrong listing
 * (a red-team finding). Replicas serving the same folders share the key.
 */
export function cursorKeyFor(secret: string, rootPaths: readonly string[]): Uint8Array {
  return createHmac('sha256', secret).update(`${DOMAIN} roots\0${JSON.stringify(rootPaths)}`).digest();
}

export function encodeCursor(state: CursorState, secret: CursorSecret): string {
  const fp = Buffer.from(state.fingerprint, 'utf8');
  if (fp.length > 255) throw new RangeError('cursor fingerprint longer than 255 bytes');
  const body = Buffer.concat([Buffer.from([VERSION, fp.length]), fp, Buffer.from(state.key, 'utf8')]);
  return Buffer.concat([body, mac(secret, body)]).toString('base64url');
}

/** The key to resume after; throws CursorError. */
export function decodeCursor(cursor: unknown, secret: CursorSecret, expectedFingerprint: string): string {
  const invalid = () => new CursorError(INVALID_CURSOR);
  if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw invalid();
  }
  const raw = Buffer.from(cursor, 'base64url');
  // Node's decoder ignores trailing bits; insisting on the canonical spelling
  // makes every edit of the string an invalid cursor, not just most.
  if (raw.toString('base64url') !== cursor || raw.length < 2 + MAC_BYTES) throw invalid();
  const body = raw.subarray(0, raw.length - MAC_BYTES);
  // Security: check the signature before reading anything the client could have forged.
  if (!timingSafeEqual(raw.subarray(raw.length - MAC_BYTES), mac(secret, body))) throw invalid();
  const fpEnd = 2 + body[1]!;
  if (body[0] !== VERSION || fpEnd > body.length) throw invalid();
  let key: string;
  try {
    key = new TextDecoder('utf-8', { fatal: true }).decode(body.subarray(fpEnd));
  } catch {
    throw invalid(); // signed by us, so unreachable unless the secret leaked; still not a 500
  }
  if (body.subarray(2, fpEnd).toString('utf8') !== expectedFingerprint) throw new CursorError(FILTER_CHANGED);
  return key;
}

function mac(secret: CursorSecret, body: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(DOMAIN).update(body).digest().subarray(0, MAC_BYTES);
}
