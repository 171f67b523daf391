// Liveness and readiness for load balancers and Kubernetes: `GET /healthz`
// (the process answers) and `GET /readyz` (the index is open and caught up
// with the disk). Served without the bearer token, since a balancer's probe
// has none, but behind the Host and Origin checks like every request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FolderIndex } from '../index/folder-index.ts';
import { checkRequest, headersOf, type GuardPolicy } from './guard.ts';

export const HEALTH_PATH = '/healthz';
export const READY_PATH = '/readyz';
const PROBE_METHODS = ['GET', 'HEAD'];

/**
 * What /readyz says. `starting`: the first scan (or a warm start's catch-up)
 * is not over; `stopping`: the server is draining on SIGTERM; `failed`: the
 * first scan failed, so every request that reads the index fails too.
 */
export type ProbeState = 'ready' | 'starting' | 'stopping' | 'failed';

/** How long a balancer should wait before it probes again, by state (failed: no hint, it will not recover). */
const RETRY_AFTER_S: Partial<Record<ProbeState, string>> = { starting: '1', stopping: '5' };

/**
 * The two probe endpoints of one HTTP listener. The bodies say a state and
 * nothing else (`{"status":"ok"}`): no path, no count of files, nothing an
 * unauthenticated caller could learn about the folders.
 */
export class HealthProbes {
  private index: FolderIndex | undefined;

  constructor(
    private readonly policy: GuardPolicy,
    private readonly closing: () => boolean,
  ) {}

  /** The index whose first scan readiness waits for (the services start once the port is bound). */
  follow(index: FolderIndex): void {
    this.index = index;
  }

  get readiness(): ProbeState {
    if (this.closing()) return 'stopping';
    const readiness = this.index?.readiness;
    if (readiness?.state === 'failed') return 'failed';
    // A warm start of a small index holds requests until it has caught up with the disk (app.ts): not ready either.
    if (readiness === undefined || readiness.state === 'scanning' || readiness.held !== undefined) return 'starting';
    return 'ready';
  }

  /** Answers `req` when it is a probe, and returns true; false for anything else (then nothing was written). */
  answer(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    if (path !== HEALTH_PATH && path !== READY_PATH) return false;
    // Security: the token is not asked (a probe has none), but Host and Origin are, as for /mcp: a DNS-rebinding
    // page must not even learn that the server is there. A probe sends the Host it dialled: Kubernetes sends the
    // pod's IP, which a bind to 0.0.0.0 does not name, so give the probe `Host: localhost` or pass --allowed-host.
    const refusal = checkRequest({ ...this.policy, token: undefined }, { ...headersOf(req), authorization: undefined });
    if (refusal) {
      send(req, res, refusal.status, { error: refusal.message }, refusal.headers);
      return true;
    }
    if (!PROBE_METHODS.includes(req.method ?? '')) {
      send(req, res, 405, { error: 'Method Not Allowed' }, { allow: PROBE_METHODS.join(', ') });
      return true;
    }
    const draining: Record<string, string> = this.closing() ? { connection: 'close' } : {};
    if (path === HEALTH_PATH) {
      send(req, res, 200, { status: 'ok' }, draining);
      return true;
    }
    const state = this.readiness;
    const retryAfter = RETRY_AFTER_S[state];
    if (state === 'ready') send(req, res, 200, { status: 'ok' }, draining);
    else send(req, res, 503, { status: state }, retryAfter === undefined ? draining : { ...draining, 'retry-after': retryAfter });
    return true;
  }
}

function send(req: IncomingMessage, res: ServerResponse, status: number, body: Record<string, string>, headers: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    // A state of this moment: no cache between the balancer and us may keep it.
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(req.method === 'HEAD' ? undefined : text);
}
