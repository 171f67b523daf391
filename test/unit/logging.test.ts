// The log relay: which lines reach which client (src/log.ts, src/protocol/logging.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger, type LogLevel } from '../../src/log.ts';
import { Connection } from '../../src/protocol/connection.ts';
import { DEFAULT_CLIENT_LOG_LEVEL, relayLogLine, setLogLevel } from '../../src/protocol/logging.ts';

/** A connection whose server records what it is asked to send, negotiated at `revision`. */
function connectionAt(revision: string | undefined) {
  const sent: { level: string; data: unknown }[] = [];
  const connection = new Connection();
  connection.server = {
    sendResourceUpdated: async () => {},
    sendResourceListChanged: async () => {},
    sendLoggingMessage: async (params) => void sent.push({ level: params.level, data: params.data }),
    getNegotiatedProtocolVersion: () => revision,
  };
  return { connection, sent };
}

describe('relayLogLine', () => {
  const LEVELS: LogLevel[] = ['error', 'warn', 'info', 'debug'];
  const cases: [setLevel: string | undefined, relayed: LogLevel[]][] = [
    [undefined, ['error', 'warn']],
    ['debug', ['error', 'warn', 'info', 'debug']],
    ['info', ['error', 'warn', 'info']],
    ['notice', ['error', 'warn']],
    ['warning', ['error', 'warn']],
    ['error', ['error']],
    ['emergency', []],
  ];
  for (const [level, relayed] of cases) {
    test(`a client at ${level ?? `the default (${DEFAULT_CLIENT_LOG_LEVEL})`} hears ${relayed.join(', ') || 'nothing'}`, () => {
      const { connection, sent } = connectionAt('2025-11-25');
      if (level !== undefined) setLogLevel(connection, { level });
      for (const l of LEVELS) relayLogLine(connection, l, `a ${l} line`);
      assert.deepEqual(
        sent.map((s) => s.data),
        relayed.map((l) => `a ${l} line`),
      );
    });
  }

  test('MCP names for our levels', () => {
    const { connection, sent } = connectionAt('2025-06-18');
    setLogLevel(connection, { level: 'debug' });
    for (const l of LEVELS) relayLogLine(connection, l, l);
    assert.deepEqual(sent.map((s) => s.level), ['error', 'warning', 'info', 'debug']);
  });

  test('nothing before initialize, nor on 2026-07-28', () => {
    for (const revision of [undefined, '2026-07-28']) {
      const { connection, sent } = connectionAt(revision);
      relayLogLine(connection, 'error', 'x');
      assert.deepEqual(sent, [], String(revision));
    }
  });

  test('while the output is full, lines are counted, not queued; once it takes more, one line says how many (a red-team finding)', async () => {
    const { connection, sent } = connectionAt('2025-11-25');
    let drained!: () => void;
    const full = new Promise<void>((resolve) => (drained = resolve));
    let isFull = true;
    connection.outputFull = () => (isFull ? full : null);
    for (let i = 0; i < 1000; i++) relayLogLine(connection, 'warn', `cannot read directory ${i}`);
    relayLogLine(connection, 'debug', 'below the level: not counted');
    assert.deepEqual(sent, []);
    isFull = false;
    drained();
    await full;
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent, [{ level: 'warning', data: '1000 log line(s) not sent while this client did not read what the server wrote; stderr has them' }]);
    relayLogLine(connection, 'error', 'after');
    assert.deepEqual(sent.at(-1), { level: 'error', data: 'after' });
    assert.equal(connection.logLinesDropped, 0);
  });

  test('a failing send neither throws nor logs', async () => {
    const connection = new Connection();
    connection.server = {
      sendResourceUpdated: async () => {},
      sendResourceListChanged: async () => {},
      sendLoggingMessage: async () => {
        throw new Error('gone');
      },
      getNegotiatedProtocolVersion: () => '2025-11-25',
    };
    relayLogLine(connection, 'error', 'x');
    await new Promise((resolve) => setImmediate(resolve)); // an unhandled rejection would fail the test
  });
});

describe('createLogger listeners', () => {
  test('hear the lines the level lets through, until stopped', () => {
    const lines: string[] = [];
    const log = createLogger('info', (line) => lines.push(line));
    const heard: string[] = [];
    const stop = log.listen((level, message) => heard.push(`${level}:${message}`));
    log.info('one');
    log.debug('hidden');
    stop();
    log.warn('two');
    assert.deepEqual(heard, ['info:one']);
    assert.deepEqual(lines, ['folder-mcp info: one\n', 'folder-mcp warn: two\n']);
  });

  test('a listener that logs does not hear itself, and one that throws does not stop the others', () => {
    const log = createLogger('debug', () => {});
    const heard: string[] = [];
    log.listen(() => {
      throw new Error('broken listener');
    });
    log.listen((_level, message) => {
      heard.push(message);
      log.debug(`relayed: ${message}`);
    });
    log.warn('w');
    assert.deepEqual(heard, ['w']);
  });
});
