// The edit tool's text work (src/catalog/edit-text.ts): exact-text
// replacements that must each match once, the spans they change, and the
// unified diff made from those spans, checked by applying it (the diff
// library's applyPatch) to the old text; and its bounds on a 4 MiB file.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyPatch } from 'diff';
import { applyEdits, applyEditsAsync, editDiff, recordChange, unifiedDiff } from '../../src/catalog/edit-text.ts';
import { ToolFailure } from '../../src/catalog/tool.ts';

describe('applyEdits', () => {
  test('replacements apply in order, each to the text the previous ones left', () => {
    const edits = [
      { old_text: 'a = 1', new_text: 'a = 2' },
      { old_text: 'a = 2\nb', new_text: 'a = 3\nb' },
    ];
    assert.equal(applyEdits('a = 1\nb = 1\n', edits, 'x.ts'), 'a = 3\nb = 1\n');
  });
  const rows: Array<[string, string, RegExp]> = [
    ['absent', 'zzz', /^Edit 1 of 1: old_text matches 0 times in x\.ts; it must match exactly once \(copy it exactly/],
    ['twice', 'x = 1', /^Edit 1 of 1: old_text matches 2 times in x\.ts; .*add surrounding lines/],
    ['overlapping occurrences count', 'aa', /matches 2 times/],
  ];
  for (const [why, old, message] of rows) {
    test(why, () => {
      assert.throws(
        () => applyEdits('x = 1\nx = 1\naaa\n', [{ old_text: old, new_text: '' }], 'x.ts'),
        (error: Error) => error instanceof ToolFailure && message.test(error.message),
      );
    });
  }
  test('the failing edit is named among several', () => {
    assert.throws(
      () => applyEdits('one two', [{ old_text: 'one', new_text: '1' }, { old_text: 'three', new_text: '3' }], 'f'),
      (error: Error) => /^Edit 2 of 2: old_text matches 0 times/.test(error.message),
    );
  });
});

describe('unifiedDiff', () => {
  test('a small edit: three lines of context, a/ and b/ names, no rule line', () => {
    const before = 'l1\nl2\nl3\nl4\nl5\nl6\nl7\n';
    const after = before.replace('l4', 'L4');
    const diff = unifiedDiff('src/x.txt', before, after);
    assert.equal(diff, '--- a/src/x.txt\n+++ b/src/x.txt\n@@ -1,7 +1,7 @@\n l1\n l2\n l3\n-l4\n+L4\n l5\n l6\n l7\n');
    assert.equal(applyPatch(before, diff), after);
  });

  test('no trailing newline either side', () => {
    const diff = unifiedDiff('f', 'a\nb', 'a\nc');
    assert.equal(applyPatch('a\nb', diff), 'a\nc');
  });

  test('a rewrite past the differ\'s bound comes as one hunk, which still applies', () => {
    const lines = (tag: string) => Array.from({ length: 6000 }, (_, i) => `${tag} ${i}`).join('\n');
    const before = `head\n${lines('old')}\ntail\n`;
    const after = `head\n${lines('new')}\ntail\n`;
    const diff = unifiedDiff('big.txt', before, after);
    assert.equal(diff.match(/^@@/gm)?.length, 1);
    assert.equal(applyPatch(before, diff), after);
  });
});

describe('recordChange: the spans an edit changed', () => {
  test('disjoint, shifted, merged when they meet', () => {
    let spans = recordChange([], 10, 2, 5); // [10,15) was 2 bytes
    assert.deepEqual(spans, [{ start: 10, end: 15, beforeLength: 2 }]);
    spans = recordChange(spans, 0, 1, 0); // before it: shifts it by -1
    assert.deepEqual(spans, [{ start: 0, end: 0, beforeLength: 1 }, { start: 9, end: 14, beforeLength: 2 }]);
    spans = recordChange(spans, 12, 4, 1); // overlaps its tail and 2 clean bytes after it
    assert.deepEqual(spans, [{ start: 0, end: 0, beforeLength: 1 }, { start: 9, end: 13, beforeLength: 4 }]);
  });
});

/** A seeded generator, so a failure names the case that failed. */
function random(seed: number): () => number {
  let x = seed;
  return () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

describe('the diff from spans is exactly what was applied', () => {
  for (let seed = 1; seed <= 300; seed++) {
    test(`random edits, seed ${seed}`, async () => {
      const rnd = random(seed);
      const lines = Array.from({ length: 1 + Math.floor(rnd() * 60) }, (_, i) => `l${i}${'x'.repeat(Math.floor(rnd() * 3))}`);
      const before = lines.join('\n') + (rnd() < 0.5 ? '\n' : '');
      let text = before;
      const edits: { old_text: string; new_text: string }[] = [];
      for (let k = 0; k < 1 + Math.floor(rnd() * 6); k++) {
        // A unique piece of the current text: a whole line number token, with what follows up to a random length.
        const i = Math.floor(rnd() * lines.length);
        const at = text.indexOf(`l${i}`);
        if (at < 0) continue;
        const old = text.slice(at, Math.min(text.length, at + 2 + String(i).length + Math.floor(rnd() * 12)));
        if (text.indexOf(old) !== at || text.indexOf(old, at + 1) >= 0) continue;
        const replacement = ['', 'NEW', 'a\nb\n', '\n', old + '\nadded'][Math.floor(rnd() * 5)]!;
        edits.push({ old_text: old, new_text: replacement });
        text = text.slice(0, at) + replacement + text.slice(at + old.length);
      }
      if (edits.length === 0) return;
      const { after, spans } = await applyEditsAsync(Buffer.from(before), edits, 'f');
      assert.equal(after.toString(), text);
      const { diff } = editDiff('f', Buffer.from(before), after, spans);
      if (before === text) return;
      assert.equal(applyPatch(before, diff), text, diff);
    });
  }
});

describe('a 4 MiB file, 100 edits of 24 lines each', () => {
  const lines = Array.from({ length: 100_000 }, (_, i) => `line ${i} ${'unique content '.repeat(2)}\n`);
  const before = Buffer.from(lines.join(''));
  const step = 1000;
  const edits = Array.from({ length: 100 }, (_, e) => {
    const old = lines.slice(e * step, e * step + 24).join('');
    return { old_text: old, new_text: old.replace(/line /g, 'LINE ') };
  });

  test('one hunk per edit, and it applies', async () => {
    const { after, spans } = await applyEditsAsync(before, edits, 'big.txt');
    assert.equal(spans.length, 100);
    const { diff, omittedHunks } = editDiff('big.txt', before, after, spans, Number.MAX_SAFE_INTEGER);
    assert.equal(omittedHunks, 0);
    assert.equal(diff.match(/^@@/gm)?.length, 100);
    assert.equal(applyPatch(before.toString(), diff), after.toString());
  });

  test('past the size budget the diff stops at a hunk and counts what it left out', async () => {
    const { after, spans } = await applyEditsAsync(before, edits, 'big.txt');
    const { diff, omittedHunks } = editDiff('big.txt', before, after, spans, 64 * 1024);
    assert.ok(Buffer.byteLength(diff) <= 64 * 1024 + 4096, String(Buffer.byteLength(diff)));
    const shown = diff.match(/^@@/gm)?.length ?? 0;
    assert.equal(shown + omittedHunks, 100);
    assert.ok(omittedHunks > 0);
  });
});
