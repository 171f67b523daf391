import type { Server } from '@modelcontextprotocol/server';
import type { AnswerHolds } from './answer-holds.ts';
import type { McpLogLevel } from './logging.ts';
import { Subscriptions } from './subscriptions.ts';

/**
 * One client's state: its subscriptions (both eras), and the server instance
 * the SDK pinned for it. On stdio the SDK may build a throw-away instance for
 * a `server/discover` probe before the one that serves; notifications go to
 * the latest.
 */
export class Connection {
  readonly subscriptions = new Subscriptions();
  /** Where notifications go: the SDK server instance (stdio), or the HTTP endpoint's listen streams (src/http/listeners.ts). */
  server: (Pick<Server, 'sendResourceUpdated' | 'sendResourceListChanged'> & Partial<Pick<Server, 'sendLoggingMessage' | 'getNegotiatedProtocolVersion'>>) | undefined;
  /** Set by `logging/setLevel`: the least severe log line this client hears (see src/protocol/logging.ts). */
  logLevel: McpLogLevel | undefined;
  /** On stdio: the read budget's shares kept until answers are written (the transport says when). */
  answerHolds: AnswerHolds | undefined;
  /** On stdio: while stdout is full, when it takes more (StdioTransport.whenWritable); notifications wait for it. */
  outputFull: (() => Promise<void> | null) | undefined;
  /** Log lines not relayed while the output was full (src/protocol/logging.ts). */
  logLinesDropped = 0;
  /** On stdio: a request's handler has ended, answered or not (StdioTransport.settled: a cancelled one frees its place then). */
  handlerSettled: ((id: string | number) => void) | undefined;

  close(): void {
    this.answerHolds?.releaseAll();
    this.subscriptions.clear();
    this.server = undefined;
  }
}
