// `npm run test:cluster` (not part of npm test): folder-mcp as a team would
// deploy it for availability. nginx (Debian's package) with the shipped
// deploy/nginx/folder-mcp.conf in front of three `--http` replicas of one
// folder (built dist/cli.js; each its own --db; one token, one cursor key),
// and redis-server carrying the replicas' hints (--bus). Checked through
// nginx with the SDK clients of both eras: a large listing paged across
// replicas, 2025 sessions that stay on their replica, a listen stream that
// hears a change, hints across replicas (and Redis going away and coming
// back), a replica killed mid-run and started again.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { tempDir, waitFor } from '../helpers.ts';
import { collectNotes, connectHttp, type HttpClient } from '../http-helpers.ts';
import {
  clusterMissing,
  freePort,
  getStatus,
  recordingFetch,
  startNginx,
  startRedis,
  startReplica,
  type Nginx,
  type RedisServer,
  type Replica,
} from '../cluster-helpers.ts';

/** Files in big/: the listing paged across replicas. */
const BIG_FILES = 2_000;
/** Items per page (--page-size): 40 pages for big/. */
const PAGE_SIZE = 50;
/** B and C poll this rarely (--poll-interval): a change reaches them within the test only as a hint over the bus. */
const SLOW_POLL_MS = 3_600_000;

// Skipped where nginx or redis-server is missing, except in CI (.ci/run installs both), where that is a failure.
const missing = clusterMissing();
if (missing && process.env.CI) throw new Error(`npm run test:cluster in CI: ${missing}`);

describe('three replicas behind nginx, hints over Redis', { skip: missing ?? false, timeout: 900_000 }, () => {
  const token = randomBytes(24).toString('base64url');
  let work: ReturnType<typeof tempDir>;
  let folder: string;
  let rootUri: string;
  let redis: RedisServer;
  let nginx: Nginx;
  const replicas: Replica[] = [];
  const clients: HttpClient[] = [];
  let replicaArgs: (id: string) => string[];

  const byId = (id: string) => replicas.find((r) => r.id === id)!;
  const connect = async (url: string, era: 'legacy' | 'modern', recording?: typeof globalThis.fetch) => {
    const conn = await connectHttp(url, era, token, recording ? { fetch: recording } : {});
    clients.push(conn);
    return conn;
  };
  const sessionId = (conn: HttpClient) => ((conn.client as V1Client).transport as V1Transport).sessionId ?? '';
  const start = (id: string, port: number) =>
    startReplica({ id, port, folder, db: join(work.path, `${id}.db`), args: replicaArgs(id) });
  /** Ready: /readyz answers 200 (the index is open and the first scan done). */
  const ready = (replica: Replica) => waitFor(async () => (await getStatus(replica.port, '/readyz')) === 200, 120_000, `${replica.id} ready (/readyz 200)`);

  before(async () => {
    work = tempDir();
    folder = join(work.path, 'folder');
    mkdirSync(join(folder, 'big'), { recursive: true });
    mkdirSync(join(folder, 'docs'), { recursive: true });
    for (let i = 0; i < BIG_FILES; i++) writeFileSync(join(folder, 'big', `f${String(i).padStart(4, '0')}.txt`), `file ${i}\n`);
    for (let i = 0; i < 20; i++) writeFileSync(join(folder, 'docs', `d${i}.md`), `# doc ${i}\nalpha beta ${i}\n`);
    folder = realpathSync(folder);
    rootUri = `${pathToFileURL(folder).href}/`;
    writeFileSync(join(work.path, 'token'), `${token}\n`);
    writeFileSync(join(work.path, 'cursor-key'), `${randomBytes(32).toString('hex')}\n`);
    mkdirSync(join(work.path, 'redis'));
    mkdirSync(join(work.path, 'nginx'));
    const [redisPort, nginxPort, ...ports] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
    redis = await startRedis(join(work.path, 'redis'), redisPort!);
    replicaArgs = (id) => [
      '--write',
      '--page-size', String(PAGE_SIZE),
      '--token-file', join(work.path, 'token'),
      '--cursor-key-file', join(work.path, 'cursor-key'),
      '--bus', redis.url,
      // A sees changes with its watcher; B and C only through the bus (or in an hour).
      ...(id === 'r1' ? [] : ['--watcher', 'poll', '--poll-interval', String(SLOW_POLL_MS)]),
    ];
    replicas.push(...(await Promise.all(['r1', 'r2', 'r3'].map((id, i) => start(id, ports[i]!)))));
    await Promise.all(replicas.map(ready));
    await Promise.all(replicas.map((r) => r.waitForOutput(/bus: connected to redis:\/\//)));
    nginx = await startNginx(join(work.path, 'nginx'), replicas.map((r) => r.port), nginxPort!);
  });

  after(async () => {
    for (const conn of clients) await conn.close().catch(() => {});
    await nginx?.stop('SIGTERM');
    await Promise.all(replicas.map((r) => r.stop('SIGTERM')));
    await redis?.stop('SIGTERM');
    work?.cleanup();
  });

  test('a listing of 2,000 files paged through nginx: pages from every replica, no gap, no repeat', async () => {
    const recording = recordingFetch();
    const conn = await connect(nginx.url, 'modern', recording.fetch);
    const seen: string[] = [];
    const pagesBy: string[] = [];
    let cursor: string | undefined;
    do {
      const before = recording.answeredBy.length;
      const page = await conn.request('resources/list', { prefix: `${rootUri}big/`, ...(cursor !== undefined && { cursor }) });
      pagesBy.push(...recording.answeredBy.slice(before));
      for (const item of page.resources as { uri: string }[]) seen.push(item.uri);
      cursor = page.nextCursor as string | undefined;
    } while (cursor !== undefined);
    const expected = [`${rootUri}big/`, ...Array.from({ length: BIG_FILES }, (_, i) => `${rootUri}big/f${String(i).padStart(4, '0')}.txt`)];
    assert.equal(new Set(seen).size, seen.length, 'no item twice');
    assert.deepEqual(seen, expected, 'every item, in order, none missing');
    assert.ok(pagesBy.length >= Math.ceil(expected.length / PAGE_SIZE), `one answer per page (${pagesBy.length})`);
    assert.deepEqual(new Set(pagesBy), new Set(['r1', 'r2', 'r3']), `the pages came from every replica: ${pagesBy.join(' ')}`);
    assert.ok(pagesBy.some((by, i) => i > 0 && by !== pagesBy[i - 1]), 'a page continued on another replica than the one before');
  });

  test('2025-11-25 sessions stay on the replica that made them: many requests each, all answered there', async () => {
    const sessions = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const recording = recordingFetch();
        const conn = await connect(nginx.url, 'legacy', recording.fetch);
        return { conn, recording, id: sessionId(conn) };
      }),
    );
    await Promise.all(
      sessions.map(async ({ conn }, n) => {
        for (let i = 0; i < 25; i++) {
          const page = await conn.request('resources/list', { prefix: `${rootUri}docs/` });
          assert.equal((page.resources as unknown[]).length, 21);
          const read = await conn.request('resources/read', { uri: `${rootUri}docs/d${(n + i) % 20}.md` });
          assert.match((read.contents as { text: string }[])[0]!.text, /^# doc/);
        }
      }),
    );
    const homes = new Set<string>();
    for (const { id, recording } of sessions) {
      const home = /^(r[123])\./.exec(id)?.[1];
      assert.ok(home, `the session id names its replica: ${id}`);
      homes.add(home);
      // Every POST of the session (initialize included) was answered by its replica.
      assert.ok(recording.answeredBy.length >= 51, `${recording.answeredBy.length} answers`);
      assert.deepEqual(new Set(recording.answeredBy), new Set([home]), `session ${id} answered by ${[...new Set(recording.answeredBy)].join(', ')}`);
    }
    assert.ok(homes.size >= 2, `the initializes went round robin: ${[...homes].join(', ')}`);
  });

  test('a listen stream through nginx hears `updated` for a file written through nginx', async () => {
    const listener = await connect(nginx.url, 'modern');
    const notes = collectNotes(listener);
    await (listener.client as Client).listen({ resourceSubscriptions: [`${rootUri}docs/`] });
    const writer = await connect(nginx.url, 'modern');
    await writer.request('tools/call', { name: 'write', arguments: { path: 'docs/through-nginx.md', content: 'hello\n' } });
    // Wherever the listen and the write landed: on the same replica directly, on another through the bus.
    await waitFor(() => notes.updated.includes(`${rootUri}docs/`), 30_000, 'updated for docs/ on the listen stream');
  });

  test('hints over Redis: a write through A reaches a listener on B (which polls hourly); Redis away and back', async () => {
    const [a, b] = [byId('r1'), byId('r2')];
    const listener = await connect(b.url, 'modern');
    const notes = collectNotes(listener);
    await (listener.client as Client).listen({ resourceSubscriptions: [`${rootUri}docs/`], resourcesListChanged: true });
    const writer = await connect(a.url, 'modern');
    const write = (name: string) => writer.request('tools/call', { name: 'write', arguments: { path: `docs/${name}`, content: `${name}\n` } });
    const listed = async (replica: Replica, name: string) => {
      const conn = await connect(replica.url, 'modern');
      const page = await conn.request('resources/list', { prefix: `${rootUri}docs/${name}` });
      await conn.close();
      return (page.resources as unknown[]).length === 1;
    };

    await write('bus-1.md');
    await waitFor(() => notes.updated.includes(`${rootUri}docs/`), 30_000, 'B heard of the write on A');
    assert.ok(await listed(b, 'bus-1.md'), 'B lists the new file');
    await waitFor(() => listed(byId('r3'), 'bus-1.md'), 30_000, 'C lists it too');

    // Redis goes away: each replica says so once and serves on.
    await redis.stop('SIGKILL');
    await Promise.all(replicas.map((r) => r.waitForOutput(/bus: redis:\/\/\S+ is unreachable/)));
    const conn = await connect(nginx.url, 'modern');
    for (let i = 0; i < 10; i++) assert.ok(((await conn.request('resources/list', { prefix: `${rootUri}docs/` })).resources as unknown[]).length > 0);
    await write('bus-2.md');

    // Back on the same port: each replica reconnects by itself, says so once, and hints flow again.
    redis = await startRedis(join(work.path, 'redis'), redis.port);
    await Promise.all(replicas.map((r) => r.waitForOutput(/bus: redis:\/\/\S+ is back/, 60_000)));
    for (const replica of replicas) {
      assert.equal(replica.output().match(/is unreachable/g)?.length, 1, `${replica.id} said once that Redis was away`);
    }
    notes.updated.length = 0;
    await write('bus-3.md');
    await waitFor(() => notes.updated.includes(`${rootUri}docs/`), 30_000, 'B heard of a write on A after Redis came back');
    // The updated may be another replica's hint for bus-2.md (written while Redis was away, found by C's
    // look at docs/): what must follow is that B lists bus-3.md, with no poll (B polls hourly).
    await waitFor(() => listed(b, 'bus-3.md'), 30_000, 'B lists the file written after Redis came back');
  });

  test('two replicas write one file in turn: each hears the other, B polling hourly (issue 44: the second write went unheard)', async () => {
    // A (r1) also has a watcher, and C polls hourly too: nobody but A can tell B of A's write.
    const [b, c] = [byId('r2'), byId('r1')];
    const onB = await connect(b.url, 'modern');
    const onC = await connect(c.url, 'modern');
    const write = (conn: HttpClient, content: string) => conn.request('tools/call', { name: 'write', arguments: { path: 'docs/turns.md', content } });
    const sizeOn = async (conn: HttpClient) =>
      ((await conn.request('resources/list', { prefix: `${rootUri}docs/turns.md` })).resources as Array<{ size?: number }>)[0]?.size;
    await write(onB, 'one\n');
    await waitFor(async () => (await sizeOn(onC)) === 4, 30_000, "A heard B's write");
    // A writes the same file at once, while B's hint is fresh on A: A's own write must still go out.
    await write(onC, 'the second write\n');
    await waitFor(async () => (await sizeOn(onB)) === 17, 30_000, "B heard A's write (B polls hourly)");
    await write(onB, 'three\n');
    await waitFor(async () => (await sizeOn(onC)) === 6, 30_000, "A heard B's next write");
  });

  test('nginx retries a 2026 read that a replica dropped after it got it, never a write', async () => {
    // Real requests, as the SDK client sends them (headers and body), captured on the way to r2.
    const sent: { body: string; headers: [string, string][] }[] = [];
    const capture: typeof fetch = async (input, init) => {
      if (init?.method === 'POST' && typeof init.body === 'string') sent.push({ body: init.body, headers: [...new Headers(init.headers).entries()] });
      return fetch(input, init);
    };
    const direct = await connect(byId('r2').url, 'modern', capture);
    await direct.request('resources/list', { prefix: `${rootUri}docs/` });
    await direct.request('tools/call', { name: 'write', arguments: { path: 'docs/retry.md', content: 'once\n' } });
    const list = sent.find((r) => r.body.includes('"resources/list"'))!;
    const write = sent.find((r) => r.body.includes('"tools/call"'))!;
    assert.ok(list && write, 'both requests captured');
    assert.ok(list.headers.some(([name, value]) => name === 'mcp-method' && value === 'resources/list'), 'the SDK sends Mcp-Method (SEP-2243)');
    // A "replica" that reads a request and drops the connection: sent, then failed mid-way.
    let hits = 0;
    const dropper = createServer((socket) => socket.once('data', () => (hits++, socket.destroy())));
    await new Promise<void>((resolve) => dropper.listen(0, '127.0.0.1', resolve));
    const dropperPort = (dropper.address() as AddressInfo).port;
    // A fresh nginx picks its first server first (round robin from the start): the dropper.
    const replay = async (request: typeof list) => {
      const dir = join(work.path, `nginx-drop-${hits}`);
      mkdirSync(dir);
      const proxy = await startNginx(dir, [dropperPort, byId('r2').port, byId('r3').port], await freePort());
      try {
        const response = await fetch(proxy.url, { method: 'POST', headers: request.headers, body: request.body });
        return { status: response.status, text: await response.text() };
      } finally {
        await proxy.stop('SIGTERM');
      }
    };
    try {
      const listed = await replay(list);
      assert.equal(hits, 1, 'the list went to the dropper first');
      assert.equal(listed.status, 200, 'and was retried on another replica');
      assert.match(listed.text, /docs\/d0\.md/);
      const written = await replay(write);
      assert.equal(hits, 2, 'the write went to the dropper first');
      assert.equal(written.status, 502, 'and was not sent again: a write must not run twice');
    } finally {
      dropper.close();
    }
  });

  test('a replica killed mid-run: 2026 clients go on, a 2025 client re-initializes; started again, it is ready and gets traffic', async () => {
    const victim = byId('r3');
    // A 2025 client whose session is on the replica about to die (initializes go round robin).
    let doomed: HttpClient | undefined;
    for (let i = 0; i < 12 && !doomed; i++) {
      const conn = await connect(nginx.url, 'legacy');
      if (sessionId(conn).startsWith(`${victim.id}.`)) doomed = conn;
      else await conn.close();
    }
    assert.ok(doomed, 'a session landed on r3');
    await doomed.request('resources/list', { prefix: `${rootUri}docs/` });

    // Three 2026 clients page, read and search in a loop through nginx, before, during and after the kill.
    let stop = false;
    let done = 0;
    const errors: string[] = [];
    const answeredBy: string[] = [];
    const workers = Array.from({ length: 3 }, async (_, w) => {
      const recording = recordingFetch();
      const conn = await connect(nginx.url, 'modern', recording.fetch);
      let cursor: string | undefined;
      for (let i = 0; !stop; i++) {
        try {
          if (i % 3 === 0) {
            const page = await conn.request('resources/list', { prefix: `${rootUri}big/`, ...(cursor !== undefined && { cursor }) });
            cursor = page.nextCursor as string | undefined;
          } else if (i % 3 === 1) {
            await conn.request('resources/read', { uri: `${rootUri}docs/d${(w + i) % 20}.md` });
          } else {
            await conn.request('tools/call', { name: 'find', arguments: { glob: 'docs/*.md' } });
          }
          done++;
        } catch (error) {
          errors.push(`worker ${w}, request ${i}: ${(error as Error).message}`);
        }
      }
      answeredBy.push(...recording.answeredBy);
    });
    await waitFor(() => done >= 30, 60_000, '30 requests before the kill');
    await victim.stop('SIGKILL');
    const atKill = done;

    // The 2025 session was on r3: its next request is answered 404 (by a backup), so the client starts over.
    await assert.rejects(doomed.request('resources/list', { prefix: `${rootUri}docs/` }), (error: Error) => /404|Session not found/i.test(error.message));
    const again = await connect(nginx.url, 'legacy');
    assert.doesNotMatch(sessionId(again), /^r3\./, 'the new session is on a live replica');
    for (let i = 0; i < 20; i++) assert.equal(((await again.request('resources/list', { prefix: `${rootUri}docs/` })).resources as unknown[]).length > 0, true);

    await waitFor(() => done >= atKill + 60, 120_000, '60 requests after the kill');
    // Started again where nginx expects it, on its own index: ready, then in the rotation again.
    const restarted = await start(victim.id, victim.port);
    replicas[replicas.indexOf(victim)] = restarted;
    await ready(restarted);
    const seenAfter = answeredBy.length;
    const recording = recordingFetch();
    const probe = await connect(nginx.url, 'modern', recording.fetch);
    await waitFor(
      async () => {
        await probe.request('resources/list', { prefix: `${rootUri}docs/` });
        return recording.answeredBy.includes(victim.id);
      },
      60_000,
      'a request through nginx answered by the restarted r3',
    );
    stop = true;
    await Promise.all(workers);
    assert.deepEqual(errors, [], `no 2026 request failed (${done} done)`);
    assert.ok(answeredBy.length > seenAfter || done > atKill, 'the workers ran through the kill');
  });
});
