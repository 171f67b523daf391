// The checks every HTTP request passes before any MCP handler sees it (pure:
// headers in, a refusal or null out; table-tested in test/unit/http-guard.test.ts).
import { localhostAllowedHostnames, validateHostHeader, validateOriginHeader } from '@modelcontextprotocol/server';
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

/** Who may talk to the endpoint. */
export interface GuardPolicy {
  /** Hostnames a Host or Origin header may name (lowercase; IPv6 in brackets). */
  allowedHosts: readonly string[];
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  token: ExpectedToken | undefined;
}

/** A policy with `token` (when there is one) hashed once, for every request it guards. */
export function guardPolicy(allowedHosts: readonly string[], token: string | undefined): GuardPolicy {
  return { allowedHosts, token: token === undefined ? undefined : new ExpectedToken(token) };
}

export interface RequestHeaders {
  host: string | undefined;
  /** How many Host lines the request had: Node keeps the first of several. 1 when not given. */
  hostLines?: number;
  origin: string | undefined;
  authorization: string | undefined;
  /** How many Authorization lines the request had: Node keeps the first of several too. 1 when not given. */
  authorizationLines?: number;
}

/** The headers checkRequest looks at, from a request as Node parsed it (`rawHeaders` counts the Host and Authorization lines). */
export function headersOf(req: { headers: Record<string, string | string[] | undefined>; rawHeaders: readonly string[] }): RequestHeaders {
  let hostLines = 0;
  let authorizationLines = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]?.toLowerCase();
    if (name === 'host') hostLines++;
    else if (name === 'authorization') authorizationLines++;
  }
  const one = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(', ') : value);
  return { host: one(req.headers.host), hostLines, origin: one(req.headers.origin), authorization: one(req.headers.authorization), authorizationLines };
}

export interface Refusal {
  status: 400 | 401 | 403;
  message: string;
  headers: Record<string, string>;
}

const REALM = 'Bearer realm="folder-mcp"';

/**
 * Security: DNS rebinding first (a page on evil.example that resolves its own
 * name to 127.0.0.1 sends `Host: evil.example`), then cross-site requests from
 * browsers (a foreign `Origin`), then the bearer token. Host and Origin are
 * checked even with a token: a browser never has the token, but a rebinding
 * page must not even learn that the endpoint exists.
 */
export function checkRequest(policy: GuardPolicy, headers: RequestHeaders): Refusal | null {
  const allowed = [...policy.allowedHosts];
  // RFC 9112, 3.2: more than one Host line is a 400. Node keeps the first, and a proxy in front may have routed by another.
  if ((headers.hostLines ?? 1) > 1) return { status: 400, message: 'Bad Request: more than one Host header', headers: {} };
  // A host name and port, nothing else: `evil.com@localhost` parses as localhost with credentials.
  if (headers.host !== undefined && !HOST_HEADER.test(headers.host)) return { status: 403, message: 'Forbidden: Host not allowed', headers: {} };
  if (!validateHostHeader(headers.host, allowed).ok) return { status: 403, message: 'Forbidden: Host not allowed', headers: {} };
  if (!validateOriginHeader(headers.origin, allowed).ok) return { status: 403, message: 'Forbidden: Origin not allowed', headers: {} };
  if (policy.token === undefined) return null;
  // Node keeps the first of two Authorization lines; a proxy in front that checks the last would disagree with us.
  if ((headers.authorizationLines ?? 1) > 1) return { status: 400, message: 'Bad Request: more than one Authorization header', headers: {} };
  const given = bearerToken(headers.authorization);
  if (given === undefined) return { status: 401, message: 'Unauthorized: bearer token required', headers: { 'www-authenticate': REALM } };
  if (!policy.token.matches(given)) {
    return { status: 401, message: 'Unauthorized: invalid token', headers: { 'www-authenticate': `${REALM}, error="invalid_token"` } };
  }
  return null;
}

/** A Host header as RFC 9110 has it: a name or an IPv4 address, or an IPv6 address in brackets, and an optional port. */
const HOST_HEADER = /^(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, RFC 6750). */
export function bearerToken(authorization: string | undefined): string | undefined {
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization ?? '');
  return match?.[1];
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/**
 * The server's own token, hashed once (a hash costs some 30 µs, on every
 * request). Held by the policy that asks for it: two endpoints of one
 * process with two tokens each keep their own.
 */
export class ExpectedToken {
  private readonly digest: Buffer;

  constructor(token: string) {
    this.digest = digest(token);
  }

  /** Security: constant time in the token's content and length (both sides hashed to 32 bytes first). */
  matches(given: string): boolean {
    return timingSafeEqual(digest(given), this.digest);
  }
}

/** True for addresses only this machine can reach: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true;
  const v4 = bare.startsWith('::ffff:') ? bare.slice('::ffff:'.length) : bare;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/**
 * The names a Host header may carry: loopback's, the bound address when it is
 * a specific one (not 0.0.0.0 or ::, whose clients use names we cannot know),
 * and the `--allowed-host` names (a reverse proxy's public name).
 */
export function allowedHostsFor(bindHost: string, extra: readonly string[] = []): string[] {
  const names = new Set(localhostAllowedHostnames());
  const bare = bindHost.toLowerCase();
  if (bare !== '0.0.0.0' && bare !== '::' && bare !== '') {
    names.add(isIP(bare) === 6 ? `[${bare}]` : bare);
    // As a Host header's parser spells it: [::ffff:127.0.0.1] is [::ffff:7f00:1], so the URL printed is accepted.
    if (isIP(bare) === 6) names.add(new URL(`http://[${bare}]/`).hostname);
  }
  for (const name of extra) names.add(name.toLowerCase());
  return [...names];
}

/** The minimum length of a bearer token or cursor key: shorter ones are guessable. */
export const MIN_SECRET_CHARS = 16;
