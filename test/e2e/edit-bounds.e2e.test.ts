// A large edit stalls no one (issue 33): 100 replacements of 24 lines each in
// a 3.5 MiB file of unique lines, through the SDK client. The diff stops at
// DIFF_MAX_BYTES and says how many hunks it left out; and while the edit
// runs, the server answers the same client's pings (counted, not timed: the
// edit gives the event loop back between replacements and diff regions, where
// it used to hold it for seconds). bench/scenarios/edit-responsiveness.ts
// measures the other client's ping times.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { connect, serveTree, type LooseResult } from '../helpers.ts';

type ToolCall = LooseResult & { content: LooseResult[]; structuredContent?: LooseResult; isError?: boolean };

const lines = Array.from({ length: 50_000 }, (_, i) => `line ${i} ${randomBytes(6).toString('hex')} and some more text to make a longer line\n`);
const step = Math.floor(lines.length / 100);
const edits = Array.from({ length: 100 }, (_, e) => {
  const old = lines.slice(e * step, e * step + 24).join('');
  return { old_text: old, new_text: old.replace(/line /g, 'LINE ') };
});

describe('a large edit is bounded', () => {
  const tree = serveTree(
    (root) => writeFileSync(join(root, 'big.txt'), lines.join('')),
    ({ root, state }) => [root, '--db', join(state, 'index.db'), '--write', '--max-write-bytes', String(8 * 1024 * 1024)],
    // The built server in a process of its own: in this process, the pings' round trips would share the edit's event loop.
    { connect },
  );
  const edit = (dry_run: boolean) => tree.conn.request('tools/call', { name: 'edit', arguments: { path: 'big.txt', edits, dry_run } }) as Promise<ToolCall>;

  test('its diff stops at 256 KiB and says how many hunks it left out', async () => {
    const result = await edit(true);
    assert.equal(result.isError, undefined);
    const diff = result.structuredContent!.diff as string;
    const omitted = result.structuredContent!.diffOmittedHunks as number;
    assert.ok(Buffer.byteLength(diff) <= 256 * 1024, `${Buffer.byteLength(diff)} bytes`);
    assert.equal((diff.match(/^@@/gm)?.length ?? 0) + omitted, 100);
    assert.ok(omitted > 0);
    const text = result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    assert.match(text, new RegExp(`The diff stops at 256 KiB: ${omitted} more hunks not shown`));
  });

  test('while it runs, the server keeps answering', async () => {
    let done = false;
    // A dry run: nothing but the text work (no write, no index refresh, whose own waits would let pings through anyway).
    const editing = edit(true).finally(() => (done = true));
    let answered = 0;
    // Bounded: the edit ends (at worst when it fails), and each ping is answered or times out.
    while (!done) {
      await tree.conn.request('ping', {});
      if (!done) answered++;
    }
    assert.equal((await editing).isError, undefined);
    // Counted, not timed: between its 100 replacements and its diff regions the event loop runs, so pings go through.
    assert.ok(answered >= 5, `${answered} pings answered while the edit ran`);
  });

  test('and it applies: the file holds all 100 replacements', async () => {
    const result = await edit(false);
    assert.equal(result.isError, undefined);
    const expected = lines.map((line, i) => (i < 100 * step && i % step < 24 ? line.replace('line ', 'LINE ') : line)).join('');
    assert.equal(readFileSync(join(tree.root, 'big.txt'), 'utf8'), expected);
    assert.equal(result.structuredContent!.size, Buffer.byteLength(expected));
  });
});
