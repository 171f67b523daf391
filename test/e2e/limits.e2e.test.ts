// What is listed is readable, however long its URI; and a query with a NUL is
// answered (issue 23, items 14 and 15). Over stdio on both eras.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ERAS, serveTree, waitFor, type LooseResult } from '../helpers.ts';

// 18 folders of 80 two-byte characters: a legal path of about 2,900 bytes whose URI, each
// byte percent-encoded, is over 8,700 characters (8,192 was the old limit).
const SEGMENT = 'é'.repeat(80);
const DEEP = Array.from({ length: 18 }, () => SEGMENT).join('/');

for (const era of ERAS) {
  describe(`limits (${era})`, () => {
    const tree = serveTree(
      (root) => {
        mkdirSync(join(root, DEEP), { recursive: true });
        writeFileSync(join(root, DEEP, 'deep.txt'), 'found at the bottom\n');
        writeFileSync(join(root, 'plain.txt'), 'needle here\n');
      },
      ({ root }) => [root, '--db', ':memory:', '--watcher', 'none'],
      { era },
    );

    test('a file whose URI is over 8,192 characters is listed, read, described and read by the tool', async () => {
      const uri = pathToFileURL(join(tree.root, DEEP, 'deep.txt')).href;
      assert.ok(uri.length > 8700, String(uri.length));
      const { resources } = await tree.conn.request('resources/list', { prefix: uri });
      assert.deepEqual((resources as LooseResult[]).map((r) => r.uri), [uri]);
      const { contents } = await tree.conn.request('resources/read', { uri });
      assert.equal((contents as LooseResult[])[0]!.text, 'found at the bottom\n');
      const { resource } = await tree.conn.request('resources/metadata', { uri });
      assert.equal((resource as LooseResult).size, 20);
      const tool = (await tree.conn.request('tools/call', { name: 'read', arguments: { uri } })) as { content: LooseResult[]; isError?: boolean };
      assert.equal(tool.isError, undefined);
      assert.equal((tool.content[0]!.resource as LooseResult).text, 'found at the bottom\n');
    });

    test('a search with a NUL in it is answered as if it were a space', async () => {
      const result = (await waitFor(async () => {
        const r = (await tree.conn.request('tools/call', { name: 'search', arguments: { query: 'needle\u0000here' } })) as LooseResult & {
          structuredContent: { results: unknown[]; indexing?: unknown };
          isError?: boolean;
        };
        return r.isError || (r.structuredContent.indexing === undefined && r.structuredContent.results.length > 0) ? r : null;
      }, 20_000, 'the content index'))!;
      assert.equal(result.isError, undefined, JSON.stringify(result.content));
      assert.deepEqual(result.structuredContent.results.length, 1);
    });
  });
}
