// The read tool's images and multi-file reads (issue 24, item 5), over stdio
// on both eras. The disk is the oracle: every byte returned is compared with
// the file it came from.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ERAS, serveTree, type LooseResult } from '../helpers.ts';
import { makePdf } from '../fixtures.ts';

// A real 1x1 PNG, and the first bytes of the other formats (only the signature is checked).
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(60, 7)]);
const GIF = Buffer.concat([Buffer.from('GIF89a', 'latin1'), Buffer.alloc(40, 3)]);
const WEBP = Buffer.concat([Buffer.from('RIFF\x20\x00\x00\x00WEBPVP8 ', 'latin1'), Buffer.alloc(20, 1)]);
const NOT_A_PNG = Buffer.from('this is text with a .png name\n');
const BIG_PNG = Buffer.concat([PNG.subarray(0, 8), Buffer.alloc(100_000, 9)]);
const MIB_TEXT = 'x'.repeat(1024 * 1024 - 1) + '\n';

type ToolCall = LooseResult & { content: LooseResult[]; structuredContent?: LooseResult; isError?: boolean };

/** A PDF of ASCII bytes only: makePdf's binary-marker comment made ASCII (same length, so its offsets hold). */
const ASCII_PDF = (() => {
  const pdf = makePdf(['Invoice for the walrus']);
  for (let i = 0; i < 32; i++) if (pdf[i]! >= 0x80) pdf[i] = 0x61;
  return pdf;
})();

for (const era of ERAS) {
  describe(`read tool: images and several files (${era})`, () => {
    const tree = serveTree(
      {
        'img/dot.png': PNG,
        'img/photo.jpg': JPEG,
        'img/anim.gif': GIF,
        'img/pic.webp': WEBP,
        'img/fake.png': NOT_A_PNG,
        'img/big.png': BIG_PNG,
        'notes/a.md': '# A\n',
        'notes/b.md': '# B\n',
        'docs/ascii.pdf': ASCII_PDF,
        ...Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`mib/${i}.txt`, MIB_TEXT])),
      },
      // --max-read-bytes below big.png: an image over it is read in windows.
      ({ root }) => [root, '--db', ':memory:', '--watcher', 'none', '--no-search', '--max-read-bytes', '65536'],
      { era },
    );
    const call = async (args: Record<string, unknown>) => (await tree.conn.request('tools/call', { name: 'read', arguments: args })) as ToolCall;
    const texts = (r: ToolCall) => r.content.filter((c) => c.type === 'text').map((c) => c.text as string);

    test('PNG, JPEG, GIF and WebP come whole as image content', async () => {
      for (const [path, bytes, mimeType] of [
        ['img/dot.png', PNG, 'image/png'],
        ['img/photo.jpg', JPEG, 'image/jpeg'],
        ['img/anim.gif', GIF, 'image/gif'],
        ['img/pic.webp', WEBP, 'image/webp'],
      ] as const) {
        const result = await call({ uri: path });
        const images = result.content.filter((c) => c.type === 'image');
        assert.equal(images.length, 1, path);
        assert.equal(images[0]!.mimeType, mimeType);
        assert.ok(Buffer.from(images[0]!.data as string, 'base64').equals(bytes), path);
        assert.match(texts(result)[0]!, new RegExp(`^${path.replace('.', '\\.')} \\(${mimeType}`));
        assert.deepEqual(result.structuredContent, {
          uri: tree.uriOf(path),
          path,
          type: 'document',
          mimeType,
          encoding: 'image',
          size: bytes.length,
          offset: 0,
          length: bytes.length,
        });
      }
    });

    test('a file named .png that is not one, and an image over the limit, are read as any file', async () => {
      const fake = await call({ uri: 'img/fake.png' });
      assert.equal(fake.content.filter((c) => c.type === 'image').length, 0);
      assert.equal((fake.content[0]!.resource as LooseResult).text, NOT_A_PNG.toString());
      const big = await call({ uri: 'img/big.png', length: 1000 });
      assert.equal(big.content.filter((c) => c.type === 'image').length, 0);
      assert.equal(big.structuredContent!.encoding, 'base64');
      assert.equal(big.structuredContent!.nextOffset, 1000);
    });

    test('paths: each file read, each failure its own, in the order given', async () => {
      const result = await call({ paths: ['notes/a.md', 'nope.md', 'img/dot.png', tree.uriOf('notes/b.md'), '../outside'] });
      assert.equal(result.isError, undefined);
      const results = result.structuredContent!.results as LooseResult[];
      assert.deepEqual(
        results.map((r) => r.path),
        ['notes/a.md', 'nope.md', 'img/dot.png', 'notes/b.md', '../outside'],
      );
      assert.equal(results[0]!.encoding, 'text');
      assert.match(results[1]!.error as string, /^Not found: nope\.md/);
      assert.equal(results[2]!.encoding, 'image');
      assert.match(results[4]!.error as string, /^Not found/);
      const resources = result.content.filter((c) => c.type === 'resource').map((c) => (c.resource as LooseResult).text);
      assert.deepEqual(resources, ['# A\n', '# B\n']);
      assert.equal(result.content.filter((c) => c.type === 'image').length, 1);
    });

    test('paths: every file failing is an error result', async () => {
      const result = await call({ paths: ['nope.md', 'gone/'] });
      assert.equal(result.isError, true);
      assert.equal((result.structuredContent!.results as unknown[]).length, 2);
    });

    test('paths: the call returns at most 4 MiB, and says which files it left out', async () => {
      const paths = Array.from({ length: 5 }, (_, i) => `mib/${i}.txt`);
      const result = await call({ paths, length: 1024 * 1024 });
      const results = result.structuredContent!.results as LooseResult[];
      assert.deepEqual(results.slice(0, 4).map((r) => r.length), [1024 * 1024, 1024 * 1024, 1024 * 1024, 1024 * 1024]);
      assert.match(results[4]!.error as string, /left out: this call already returns 4\.0 MiB/);
    });

    test('a PDF whose bytes are all ASCII is read as its text, not as its source (issue 46)', async () => {
      assert.ok(ASCII_PDF.every((byte) => byte < 0x80), 'the fixture is ASCII only');
      const result = await call({ uri: 'docs/ascii.pdf' });
      assert.equal(result.isError, undefined, texts(result).join(''));
      const body = result.content.map((c) => String(c.text ?? (c.resource as { text?: string } | undefined)?.text ?? '')).join('\n');
      assert.match(body, /Invoice for the walrus/);
      assert.doesNotMatch(body, /%PDF-|endobj/);
    });

    test('bad combinations are tool errors naming the fix', async () => {
      const both = await call({ uri: 'notes/a.md', paths: ['notes/b.md'] });
      assert.equal(both.isError, true);
      assert.match(texts(both).join(''), /give one of uri or path \(one file\), or paths/);
      const neither = await call({});
      assert.equal(neither.isError, true);
      // Issue 46: `{}` said "not both", and `path` (the write tools' name) was an unknown key.
      assert.doesNotMatch(texts(neither).join(''), /not both|Unrecognized key/);
      assert.match(texts(neither).join(''), /give one of uri or path/);
      const byPath = await call({ path: 'notes/a.md' });
      assert.equal(byPath.isError, undefined, texts(byPath).join(''));
      assert.equal(await call({ uri: 'notes/a.md', path: 'notes/a.md' }).then((r) => r.isError), true);
      const offset = await call({ paths: ['notes/a.md'], offset: 2 });
      assert.equal(offset.isError, true);
      assert.match(texts(offset).join(''), /offset applies to uri only/);
      const many = await call({ paths: Array.from({ length: 21 }, () => 'notes/a.md') });
      assert.equal(many.isError, true);
    });
  });
}
