// What each request came to, for the metrics (src/http/metrics.ts): every
// handler a server instance has, the SDK's own (initialize, ping,
// server/discover) and ours, on every transport, is timed and its outcome
// told to one observer. Nothing here knows of Prometheus.
import type { JSONRPCRequest, ServerContext } from '@modelcontextprotocol/server';
import { ErrorCode, ProtocolError } from './errors.ts';
import { FolderServer } from './sdk/tool-results.ts';

/** ok: a result; error: a JSON-RPC error or a tool's `isError` result; refused: a bound said busy (-32000). */
export type RequestOutcome = 'ok' | 'error' | 'refused';

export interface RequestEvent {
  /** The JSON-RPC method as sent; null for a method the server does not have. */
  method: string | null;
  /** For tools/call: the tool's name or URI as sent (unchecked). */
  tool?: string;
  outcome: RequestOutcome;
  /** From the handler's start to its result: waiting for the index included, queueing and sending not. */
  seconds: number;
}

export type RequestObserver = (event: RequestEvent) => void;

type Handler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Record<string, unknown>>;

/**
 * FolderServer with every request handler timed. The SDK's `_wrapHandler`
 * hook (documented for subclasses) wraps each handler as it is registered,
 * the SDK's own too; a method the server does not have reaches the fallback
 * handler, which answers what the SDK would (-32601) and is counted as
 * unknown.
 */
export class ObservedServer extends FolderServer {
  /** Read when a request comes, not when a handler is wrapped: the SDK registers its own during super(). */
  private observer: RequestObserver | undefined;

  constructor(observer: RequestObserver | undefined, ...args: ConstructorParameters<typeof FolderServer>) {
    super(...args);
    this.observer = observer;
    if (observer) {
      this.fallbackRequestHandler = async () => {
        observer({ method: null, outcome: 'error', seconds: 0 });
        throw new ProtocolError(ErrorCode.MethodNotFound, 'Method not found');
      };
    }
  }

  /** Told when each request's handler ends, answered or not (Connection.handlerSettled). */
  settled: ((id: string | number) => void) | undefined;

  protected override _wrapHandler(method: string, handler: Handler): Handler {
    const observed = this.observed(method, super._wrapHandler(method, handler));
    return async (request, ctx) => {
      try {
        return await observed(request, ctx);
      } finally {
        this.settled?.(request.id);
      }
    };
  }

  /** `wrapped`, timed and told to the observer. */
  private observed(method: string, wrapped: Handler): Handler {
    return async (request, ctx) => {
      const observer = this.observer;
      if (!observer) return wrapped(request, ctx);
      const started = performance.now();
      const tool = method === 'tools/call' ? toolName(request) : undefined;
      const tell = (outcome: RequestOutcome) =>
        observer({ method, outcome, seconds: (performance.now() - started) / 1000, ...(tool !== undefined && { tool }) });
      let result: Record<string, unknown>;
      try {
        result = await wrapped(request, ctx);
      } catch (error) {
        tell((error as { code?: unknown }).code === ErrorCode.ServerBusy ? 'refused' : 'error');
        throw error;
      }
      tell(result.isError === true ? 'error' : 'ok');
      return result;
    };
  }
}

function toolName(request: JSONRPCRequest): string | undefined {
  const name = (request.params as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : undefined;
}
