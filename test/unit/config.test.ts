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
    [['--watcher', 'inotify', '/p'], /^--watcher must be one of auto, chokidar, dirs, poll, none$/],
    [['--log-level', 'loud', '/p'], /^--log-level must be one of error, warn, info, debug$/],
    [['/p', '--db'], /^--db needs a file path, or :memory:, and none was given$/],
    [['/p', '--exclude'], /^--exclude needs a \.gitignore-style pattern, and none was given$/],
    [[], /^no folder given$/],
    [['--write', '--max-write-bytes', '0', '/p'], /^--max-write-bytes must be between 1 and/],
    [['--write', '--max-write-bytes', '4M', '/p'], /^--max-write-bytes needs a positive whole number of bytes, got '4M'$/],
    [['--max-write-bytes', '100', '/p'], /^--max-write-bytes applies to --write only$/],
    [['--search-wait-ms', '60001', '/p'], /^--search-wait-ms must be between 0 and 60000, got 60001$/],
    [['--search-wait-ms', '-1', '/p'], /^--search-wait-ms needs a whole number of milliseconds, from 0 to 60000, got '-1'$/],
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
    const defaults = parseCliArgs(['--write', '/p']);
    assert.ok(defaults.kind === 'run' && defaults.config.maxWriteBytes === 4 * 1024 * 1024 && defaults.config.searchWaitMs === 5000);
  });
});
