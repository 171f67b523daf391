import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseCliArgs, UsageError } from '../../src/config.ts';

describe('command-line mistakes: one line that says what was wrong and what is allowed', () => {
  const rows: Array<[string[], RegExp]> = [
    [['--max-read-bytes', '-1', '/p'], /^--max-read-bytes needs a positive whole number of bytes, got '-1'$/],
    [['--max-read-bytes', '1k', '/p'], /^--max-read-bytes needs a positive whole number of bytes, got '1k'$/],
    [['--bogus', '/p'], /^unknown option --bogus; --help lists the options$/],
    [['-x', '/p'], /^unknown option -x;/],
    [['--page-size', '0', '/p'], /^--page-size must be between 1 and 10000, got 0$/],
    [['--page-size', 'ten', '/p'], /^--page-size needs a whole number from 1 to 10000, got 'ten'$/],
    [['--poll-interval', '-5', '/p'], /^--poll-interval needs a whole number of milliseconds/],
    [['--watcher', 'inotify', '/p'], /^--watcher must be one of auto, chokidar, dirs, recursive, poll, none$/],
    [['--log-level', 'loud', '/p'], /^--log-level must be one of error, warn, info, debug$/],
    [['/p', '--db'], /^--db needs a file path, or :memory:, and none was given$/],
    // `--db "$DB"` with DB unset: it would make `.lock` and `-wal` in the working folder.
    [['--db', '', '/p'], /^--db needs a file path, or :memory:, got an empty value$/],
    [['--db', ' ', '/p'], /^--db needs a file path, or :memory:, got an empty value$/],
    [['/p', '--exclude'], /^--exclude needs a \.gitignore-style pattern, and none was given$/],
    [['--http', '0'], /^no folder given: --http serves the folders named on the command line/],
    [['--bus', 'redis://h:1'], /^no folder given: --bus serves the folders named on the command line/],
    [['--write', '--max-write-bytes', '0', '/p'], /^--max-write-bytes must be between 1 and/],
    [['--write', '--max-write-bytes', '4M', '/p'], /^--max-write-bytes needs a positive whole number of bytes, got '4M'$/],
    [['--max-write-bytes', '100', '/p'], /^--max-write-bytes applies to --write only$/],
    [['--search-wait-ms', '60001', '/p'], /^--search-wait-ms must be between 0 and 60000, got 60001$/],
    [['--search-wait-ms', '-1', '/p'], /^--search-wait-ms needs a whole number of milliseconds, from 0 to 60000, got '-1'$/],
    [['--embed-url', 'http://h', '/p'], /^--embed-url needs --embed-model too$/],
    [['--embed-model', 'm', '/p'], /^--embed-model needs --embed-url too$/],
    [['--embed-api', 'openai', '/p'], /^--embed-api applies to --embed-url only$/],
    [['--embed-url', 'ftp://h', '--embed-model', 'm', '/p'], /^--embed-url needs an http or https URL, got 'ftp:\/\/h'$/],
    [['--embed-url', 'not a url', '--embed-model', 'm', '/p'], /^--embed-url needs an http or https URL/],
    [['--embed-url', 'http://u:pw@h', '--embed-model', 'm', '/p'], /^--embed-url must not hold a user or password: put the key in FOLDER_MCP_EMBED_KEY$/],
    [['--embed-url', 'http://h', '--embed-model', 'm', '--embed-api', 'cohere', '/p'], /^--embed-api must be one of ollama, openai$/],
    [['--embed-url', 'http://h', '--embed-model', 'm', '--no-search', '/p'], /^--embed-url needs the content index/],
    [['--embed-url', 'http://h', '--embed-model', 'm', '--embed-timeout-ms', '0', '/p'], /^--embed-timeout-ms must be between 1 and 600000, got 0$/],
  ];
  for (const [argv, message] of rows) {
    test(argv.join(' ') || '(nothing)', () => {
      assert.throws(() => parseCliArgs(argv), (error: Error) => error instanceof UsageError && message.test(error.message) && !error.message.includes('\n'));
    });
  }
  test('good arguments parse', () => {
    const parsed = parseCliArgs(['--page-size', '7', '--poll-interval', '250', '--exclude', '*.log', '/p', '/q']);
    assert.equal(parsed.kind, 'run');
    if (parsed.kind === 'run') {
      assert.deepEqual(parsed.config.folders, ['/p', '/q']);
      assert.equal(parsed.config.pageSize, 7);
      assert.equal(parsed.config.pollIntervalMs, 250);
      assert.deepEqual(parsed.config.exclude, ['*.log']);
      assert.equal(parsed.config.write, false, 'read-only unless asked');
    }
    const writable = parseCliArgs(['--write', '--max-write-bytes', '1024', '/p']);
    assert.ok(writable.kind === 'run' && writable.config.write && writable.config.maxWriteBytes === 1024);
    const waits = parseCliArgs(['--search-wait-ms', '0', '/p']);
    assert.ok(waits.kind === 'run' && waits.config.searchWaitMs === 0, '0: a search never waits');
    assert.ok(waits.kind === 'run' && waits.config.embed === undefined, 'no embedding model unless asked');
    const embed = parseCliArgs(['--embed-url', 'http://127.0.0.1:11434', '--embed-model', 'nomic-embed-text', '/p']);
    assert.ok(embed.kind === 'run');
    if (embed.kind === 'run') assert.deepEqual(embed.config.embed, { url: 'http://127.0.0.1:11434', model: 'nomic-embed-text', timeoutMs: 30_000 });
    const defaults = parseCliArgs(['--write', '/p']);
    assert.ok(defaults.kind === 'run' && defaults.config.maxWriteBytes === 4 * 1024 * 1024 && defaults.config.searchWaitMs === 5000);
  });
});
