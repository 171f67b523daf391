// The server in the test's own process: the same start-up (src/launch.ts) and
// the same stdio wire (our StdioTransport) as the built binary, over a pair of
// in-memory streams instead of a child's pipes. The era and watcher matrices
// run here; a few smoke tests per era go through the binary (connect).
import { ReadBuffer, serializeMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { createApp } from '../src/app.ts';
import { followClientRoots, prepareLaunch, serveStdioStreams } from '../src/launch.ts';
import { createLogger } from '../src/log.ts';

/** A server started in this process, and the client end of its wire. */
export interface InProcessServer {
  /** Not yet started: hand it to an SDK client's connect(). */
  transport: Transport;
  /** What the server logged (its stderr, had it been a process). */
  stderr(): string;
  /** Closes the server (the client's end closing does too): its session, then the App. */
  close(): Promise<void>;
  /** 2 once the server refused its client (no folder, and a client without roots), as the binary exits 2. */
  exitCode(): number | undefined;
}

/**
 * Starts the server on `args` (as the CLI reads them). `env` is the
 * environment the start-up reads (XDG_CACHE_HOME, the secrets); the process's
 * own is not changed. What the binary would print and exit 2 for is thrown,
 * with that text.
 */
export function startInProcess(args: string[], env: Record<string, string> = {}): InProcessServer {
  const launch = prepareLaunch(args, { ...process.env, ...env }, '0.0.0-test');
  if (launch.kind !== 'serve') throw new Error(`the server would not start: ${launch.text}`);
  const { config, roots, dbFile } = launch;
  if (config.http) throw new Error('startInProcess serves stdio only; use startHttp for --http');
  let stderr = '';
  const log = createLogger(config.logLevel, (line) => {
    stderr += line;
  });
  const app = createApp(config, roots, dbFile, log, { name: 'folder-mcp', version: '0.0.0-test', write: config.write });
  const toServer = new PassThrough();
  const toClient = new PassThrough();
  let closed: Promise<void> | undefined;
  // Once, whoever ends first: the client closing its end (as stdin ends), or close().
  const close = () =>
    (closed ??= (async () => {
      await serving.close();
      await app.close();
      toClient.end();
    })());
  let exitCode: number | undefined;
  // As cli.ts: the refusal's answer goes out, then the server ends.
  const refuse = (line: string) => {
    stderr += line;
    exitCode = 2;
    setImmediate(() => void close());
  };
  const clientRoots = dbFile === null ? followClientRoots(app, launch, { ...process.env, ...env }, log, refuse) : undefined;
  const serving = serveStdioStreams(app, toServer, toClient, log, () => void close(), clientRoots);
  return { transport: new StreamClientTransport(toClient, toServer), stderr: () => stderr, close, exitCode: () => exitCode };
}

/** A client transport over a pair of byte streams: newline-delimited JSON, as the SDK's stdio transports write it. */
class StreamClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly buffer = new ReadBuffer();
  private closed = false;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
  ) {}

  async start(): Promise<void> {
    this.input.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (error) {
          this.onerror?.(error as Error);
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    this.input.on('end', () => void this.close());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error('the transport is closed');
    this.output.write(serializeMessage(message));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.output.end();
    this.onclose?.();
  }
}
