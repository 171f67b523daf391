// The hint bus between replicas (src/replicas/bus.ts): messages from Redis are
// untrusted input, so decoding is a table of hostile messages; and two ends
// joined by an in-memory channel (the transport seam) show what goes out,
// what comes in, and what is not echoed back.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseCliArgs } from '../../src/config.ts';
import type { CommittedChange } from '../../src/index/folder-index.ts';
import { decodeHint, encodeHints, HintBus, MAX_HINT_MESSAGE_BYTES, MAX_HINT_PATHS, type HintTransport } from '../../src/replicas/bus.ts';
import { publicBusName, retryDelayMs } from '../../src/replicas/redis-transport.ts';
import { silentLogger } from '../../src/log.ts';
import { makeRoot, pathToUri } from '../../src/uri.ts';
import { waitFor } from '../basics.ts';

const root = makeRoot('/srv/app');
const roots = [root, makeRoot('/')];
const message = (fields: Record<string, unknown>) => JSON.stringify({ v: 1, origin: 'r1', root: '/srv/app', paths: ['a.txt'], ...fields });

describe('decodeHint under Windows rules', () => {
  const roots = [makeRoot('C:\\srv\\r', 'win32')];
  const hint = (paths: string[]) => JSON.stringify({ v: 1, origin: 'x', root: 'C:/srv/r', paths });
  test('a path inside the folder is taken', () => {
    assert.deepEqual(decodeHint(hint(['a/b.txt']), roots, 'win32')?.paths, ['C:/srv/r/a/b.txt']);
  });
  for (const bad of ['a\\..\\..\\Windows\\win.ini', 'a\\b.txt', 'x.txt:stream', 'CON', 'd/nul.txt', 'trailing.', 'a/b ']) {
    test(`refused: ${JSON.stringify(bad)}`, () => assert.equal(decodeHint(hint([bad]), roots, 'win32'), null));
  }
  test('on POSIX a backslash is a character of a name', () => {
    const posixRoots = [makeRoot('/srv/r', 'posix')];
    const text = JSON.stringify({ v: 1, origin: 'x', root: '/srv/r', paths: ['a\\b.txt'] });
    assert.deepEqual(decodeHint(text, posixRoots, 'posix')?.paths, ['/srv/r/a\\b.txt']);
  });
});

describe('decodeHint: what another replica may say', () => {
  const valid: Array<[string, string, string[], boolean]> = [
    ['a file', message({}), ['/srv/app/a.txt'], false],
    ['nested paths and the root itself', message({ paths: ['src/main.ts', ''] }), ['/srv/app/src/main.ts', '/srv/app'], false],
    ['a tree hint', message({ paths: [], tree: true }), [], true],
    ['a name with dots that is no segment', message({ paths: ['..hidden', 'a..b', '.env'] }), ['/srv/app/..hidden', '/srv/app/a..b', '/srv/app/.env'], false],
    ['the root /', JSON.stringify({ v: 1, origin: 'r1', root: '/', paths: ['etc/hosts'] }), ['/etc/hosts'], false],
  ];
  for (const [name, text, paths, tree] of valid) {
    test(`accepts ${name}`, () => {
      const hint = decodeHint(text, roots);
      assert.ok(hint);
      assert.deepEqual(hint.paths, paths);
      assert.equal(hint.tree, tree);
    });
  }

  const refused: Array<[string, string]> = [
    ['not JSON', '{"v":1,'],
    ['an array', '[1,2]'],
    ['null', 'null'],
    ['another version', message({ v: 2 })],
    ['no origin', message({ origin: undefined })],
    ['an empty origin', message({ origin: '' })],
    ['an origin of 65 characters', message({ origin: 'x'.repeat(65) })],
    ['a root not served here', message({ root: '/srv/other' })],
    ['a sibling-prefix root', message({ root: '/srv/app-secrets' })],
    ['a root spelled with a trailing slash', message({ root: '/srv/app/' })],
    ['paths not an array', message({ paths: 'a.txt' })],
    ['a path that is not a string', message({ paths: [1] })],
    ['an absolute path', message({ paths: ['/etc/passwd'] })],
    ['a path up and out', message({ paths: ['../app-secrets/key'] })],
    ['..', message({ paths: ['..'] })],
    ['a path that needs resolving', message({ paths: ['a/../../etc'] })],
    ['a dot segment', message({ paths: ['./a'] })],
    ['an empty segment', message({ paths: ['a//b'] })],
    ['a trailing slash', message({ paths: ['a/'] })],
    ['a NUL', message({ paths: ['a\u0000b'] })],
    ['a path over PATH_MAX', message({ paths: ['a'.repeat(4097)] })],
    ['too many paths', message({ paths: Array.from({ length: MAX_HINT_PATHS + 1 }, (_, i) => `f${i}`) })],
    ['tree not true', message({ tree: 'yes' })],
    ['a message over the size bound', message({ paths: ['a.txt'], pad: 'x'.repeat(MAX_HINT_MESSAGE_BYTES) })],
  ];
  for (const [name, text] of refused) {
    test(`refuses ${name}`, () => assert.equal(decodeHint(text, roots), null));
  }
});

describe('encodeHints', () => {
  test('a few paths go as they are; more than a message holds go as a tree hint', () => {
    assert.deepEqual(JSON.parse(encodeHints('r1', root, new Set(['a.txt', '']))), { v: 1, origin: 'r1', root: '/srv/app', paths: ['a.txt', ''] });
    const many = new Set(Array.from({ length: MAX_HINT_PATHS + 1 }, (_, i) => `f${i}`));
    assert.deepEqual(JSON.parse(encodeHints('r1', root, many)), { v: 1, origin: 'r1', root: '/srv/app', paths: [], tree: true });
    const long = new Set(Array.from({ length: 100 }, (_, i) => `${'d'.repeat(1000)}/${i}`));
    assert.equal(JSON.parse(encodeHints('r1', root, long)).tree, true, 'over the byte bound: a tree hint');
    for (const text of [encodeHints('r1', root, many), encodeHints('r1', root, long)]) assert.ok(decodeHint(text, roots), 'what is sent decodes');
  });
});

/** Two or more HintBus ends joined by an in-memory channel, each with a fake index and Live that record. */
/** One replica's end of a bus of `joined`. */
type End = ReturnType<typeof joined>['ends'][0];

function joined(origins: string[]) {
  const transports = new Set<(text: string) => void>();
  const ends = origins.map((origin) => {
    const changeListeners = new Set<(change: CommittedChange) => void>();
    const end = {
      hinted: [] as string[],
      trees: [] as string[],
      treeTimes: [] as number[],
      /** How long each diff of the root takes. */
      treeDelayMs: 0,
      sent: [] as string[],
      /** The looks hints asked for and not yet done. */
      looks: [] as (() => void)[],
      /** The index changes; the looks asked for so far are done (what they found is this change). */
      commit(paths: string[]) {
        const change: CommittedChange = { upserted: [], removed: paths.map((p) => pathToUri(p, false)), listChanged: true };
        for (const listener of changeListeners) listener(change);
        end.looked();
      },
      /** The looks asked for so far are done. */
      looked() {
        for (const done of end.looks.splice(0)) done();
      },
      bus: undefined as unknown as HintBus,
    };
    end.bus = new HintBus({
      origin,
      roots: [root],
      log: silentLogger,
      onChange: (listener) => {
        changeListeners.add(listener);
        return () => changeListeners.delete(listener);
      },
      hint: (paths) => {
        end.hinted.push(...paths);
        return new Promise<void>((resolve) => end.looks.push(resolve));
      },
      hintTree: async (dir) => {
        end.trees.push(dir);
        end.treeTimes.push(Date.now());
        if (end.treeDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, end.treeDelayMs));
      },
      open: (deliver): HintTransport => {
        transports.add(deliver);
        return {
          publish: (text) => {
            end.sent.push(text);
            for (const other of transports) other(text);
          },
          close: async () => void transports.delete(deliver),
        };
      },
    });
    return end;
  });
  return { ends, close: () => Promise.all(ends.map((end) => end.bus.close())), deliverRaw: (text: string) => transports.forEach((d) => d(text)) };
}

describe('HintBus', () => {
  test("what one replica commits reaches the others as hints, batched; its own messages it ignores", async () => {
    const { ends, close } = joined(['a', 'b', 'c']);
    const [a, b, c] = ends as [End, End, End];
    a.commit(['/srv/app/x.txt']);
    a.commit(['/srv/app/sub/y.txt']);
    await waitFor(() => b.hinted.length === 2 && c.hinted.length === 2, 30_000, 'b and c hinted');
    assert.equal(a.sent.length, 1, 'two commits in one flush: one message');
    assert.deepEqual(b.hinted, ['/srv/app/x.txt', '/srv/app/sub/y.txt']);
    assert.deepEqual(a.hinted, [], 'its own message is not a hint');
    // b looks at the paths, and its index changes: that is not sent back out.
    b.commit(['/srv/app/x.txt']);
    c.commit(['/srv/app/other.txt']);
    await waitFor(() => a.hinted.length === 1, 30_000, 'c\'s own change reached a');
    assert.equal(b.sent.length, 0, 'a change that came from a hint is not echoed');
    await close();
  });

  test("a replica's own tool write is announced even right after a hint for the same file (issue 44: r1's write went unheard)", async () => {
    const { ends, close } = joined(['r1', 'r2']);
    const [r1, r2] = ends as [End, End];
    r2.commit(['/srv/app/f.txt']); // r2's tool wrote f.txt
    await waitFor(() => r1.hinted.length === 1, 30_000, 'r1 hinted');
    r1.commit(['/srv/app/f.txt']); // r1 looked: the commit the hint caused is not echoed
    // r1's own tool writes f.txt again, within the echo window: its refresh commits, and announces.
    r1.commit(['/srv/app/f.txt']);
    r1.bus.announce(['/srv/app/f.txt']);
    await waitFor(() => r2.hinted.length === 1, 30_000, "r1's write reached r2");
    assert.deepEqual(r2.hinted, ['/srv/app/f.txt']);
    await close();
  });

  test("a change after the hint's look is news, however soon: the next edit of a file written through another replica (it went unheard for 5 s)", async () => {
    const { ends, close } = joined(['r1', 'r2', 'r3']);
    const [r1, r2, r3] = ends as [End, End, End];
    r2.commit(['/srv/app/f.txt']); // a write through r2
    await waitFor(() => r1.hinted.length === 1 && r3.hinted.length === 1, 30_000, 'the hint');
    // r1's watcher had already seen it on the shared disk: the hint's look finds nothing.
    r1.looked();
    r3.commit(['/srv/app/f.txt']); // r3's look commits it: not sent back out
    await new Promise((resolve) => setImmediate(resolve));
    // Another program edits f.txt on the shared disk a moment later; r1's watcher commits it.
    r1.commit(['/srv/app/f.txt']);
    await waitFor(() => r3.hinted.length === 2, 30_000, "r1's change reached r3");
    assert.equal(r3.sent.length, 0, "r3's look of r2's hint was not echoed");
    await close();
  });

  test('two replicas given one --replica-id still hear each other (each ignored the other\'s hints as its own)', async () => {
    const { ends, close } = joined(['r1', 'r1']);
    const [first, second] = ends as [End, End];
    first.commit(['/srv/app/f.txt']);
    await waitFor(() => second.hinted.length === 1, 30_000, "the first's change reached the second");
    assert.deepEqual(first.hinted, [], 'its own message is still not a hint');
    await close();
  });

  test('hints naming a .gitignore are diffs of the root, rate-limited as tree hints (issue 44: each re-walked its folder)', async () => {
    const { ends, close, deliverRaw } = joined(['a']);
    const [a] = ends as [End];
    for (let i = 0; i < 50; i++) deliverRaw(message({ origin: 'z', paths: ['d/.gitignore', `d/f${i}.txt`] }));
    await waitFor(() => a.trees.length === 1, 30_000, 'one diff of the root');
    assert.equal(a.hinted.filter((p) => p.endsWith('.gitignore')).length, 0, 'no .gitignore path is looked at alone');
    assert.equal(a.hinted.length, 50, 'the other paths are');
    for (let i = 0; i < 50; i++) deliverRaw(message({ origin: 'z', paths: ['.gitignore'] }));
    await waitFor(() => a.trees.length === 2, 30_000, 'one more diff for those that came after it');
    assert.ok(a.treeTimes[1]! - a.treeTimes[0]! >= 990, `the second diff ${a.treeTimes[1]! - a.treeTimes[0]!} ms after the first`);
    await close();
  });

  test('a root whose diff takes long is diffed at most a tenth of the time', async () => {
    const { ends, close, deliverRaw } = joined(['a']);
    const [a] = ends as [End];
    a.treeDelayMs = 200;
    deliverRaw(message({ origin: 'z', paths: [], tree: true }));
    await waitFor(() => a.trees.length === 1, 30_000, 'the first diff');
    deliverRaw(message({ origin: 'z', paths: [], tree: true }));
    await waitFor(() => a.trees.length === 2, 30_000, 'the second diff');
    // Ten times the 200 ms the first took, after it ended (a lower bound: safe on a slow machine).
    assert.ok(a.treeTimes[1]! - a.treeTimes[0]! >= 200 + 2000 - 10, `the second diff ${a.treeTimes[1]! - a.treeTimes[0]!} ms after the first began`);
    await close();
  });

  test('past 2,000 messages in a second the rest go unread, and the root is diffed instead (issue 44: a flood cost 4.8 CPU-s of 10)', async () => {
    const { ends, close, deliverRaw } = joined(['a']);
    const [a] = ends as [End];
    // 4,500 in a burst: one second boundary at most falls inside it, so at most 2 x 2,000 are read.
    for (let i = 0; i < 4500; i++) deliverRaw(message({ origin: 'z', paths: [`f${i}.txt`] }));
    assert.ok(a.hinted.length <= 4000, `${a.hinted.length} paths looked at`);
    assert.ok(a.hinted.length >= 2000);
    await waitFor(() => a.trees.length >= 1, 30_000, 'the diff that finds what the unread ones named');
    assert.equal(a.trees[0], '/srv/app');
    await close();
  });

  test('a hint left unread past the cap is followed by a diff that starts after it, even when one already started', async () => {
    const { ends, close, deliverRaw } = joined(['a']);
    const [a] = ends as [End];
    a.treeDelayMs = 50;
    // Until one goes unread: 2,001 within one second of the clock (a loaded machine can send them across a boundary).
    let sent = 0;
    while (a.hinted.length === sent && sent < 1_000_000) deliverRaw(message({ origin: 'z', paths: [`f${sent++}.txt`] }));
    assert.equal(a.hinted.length, sent - 1, 'one message went unread');
    await waitFor(() => a.trees.length >= 1, 30_000, 'the diff for the first unread message');
    // A replica's real change, past the cap: unread (or, past a second boundary, read).
    deliverRaw(message({ origin: 'r2', paths: ['real.txt'] }));
    await waitFor(() => a.hinted.includes('/srv/app/real.txt') || a.trees.length >= 2, 30_000, 'a look at real.txt: the path, or a diff after it');
    await close();
  });

  test('invalid messages are dropped, tree hints run at most once a second per root', async () => {
    const { ends, close, deliverRaw } = joined(['a']);
    const [a] = ends as [End];
    deliverRaw(message({ origin: 'evil', paths: ['../../etc/passwd'] }));
    deliverRaw('not json');
    assert.equal(a.bus.rejected, 2);
    assert.deepEqual(a.hinted, []);
    // Fifty before the first diff starts: that one diff looks after all of them.
    for (let i = 0; i < 50; i++) deliverRaw(message({ origin: 'z', paths: [], tree: true }));
    await waitFor(() => a.trees.length === 1, 30_000, 'one tree hint ran');
    // More after it started: one more diff, a second after the first at the earliest (a lower bound: safe on a slow machine).
    for (let i = 0; i < 50; i++) deliverRaw(message({ origin: 'z', paths: [], tree: true }));
    await waitFor(() => a.trees.length === 2, 30_000, 'the ones that came after it: one more diff');
    assert.deepEqual(a.trees, ['/srv/app', '/srv/app']);
    assert.ok(a.treeTimes[1]! - a.treeTimes[0]! >= 990, `the second diff ${a.treeTimes[1]! - a.treeTimes[0]!} ms after the first`);
    await close();
  });
});

describe('--bus and --replica-id', () => {
  test('options: checked at the command line', () => {
    const run = (args: string[]) => parseCliArgs([...args, '/srv']);
    const ok = run(['--http', '0', '--bus', 'redis://127.0.0.1:6379', '--replica-id', 'r-1_a']);
    assert.equal(ok.kind === 'run' && ok.config.bus, 'redis://127.0.0.1:6379');
    assert.equal(ok.kind === 'run' && ok.config.replicaId, 'r-1_a');
    assert.throws(() => run(['--bus', 'redis://h:1']), /--bus applies to --http only/);
    assert.throws(() => run(['--replica-id', 'r1']), /--replica-id applies to --http only/);
    assert.throws(() => run(['--http', '0', '--bus', 'http://h:1']), /--bus needs a redis:\/\/HOST:PORT URL/);
    assert.throws(() => run(['--http', '0', '--bus', 'nonsense']), /--bus needs/);
    assert.throws(() => run(['--http', '0', '--replica-id', 'r.1']), /--replica-id needs 1 to 32 letters/);
    assert.throws(() => run(['--http', '0', '--replica-id', 'x'.repeat(33)]), /--replica-id needs/);
  });

  test('reconnection back-off doubles up to 5 s, with jitter; logs never carry a password', () => {
    assert.equal(retryDelayMs(1, () => 0.5), 100);
    assert.equal(retryDelayMs(4, () => 0.5), 800);
    assert.equal(retryDelayMs(100, () => 0.5), 5_000);
    assert.ok(retryDelayMs(100, () => 1) <= 6_000 && retryDelayMs(100, () => 0) >= 4_000);
    assert.equal(publicBusName('redis://user:secret@cache.internal:6380/2'), 'redis://cache.internal:6380');
  });
});
