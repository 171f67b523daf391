// The edit tool's pure parts (src/catalog/write-tools.ts): exact-text
// replacements that must each match once, and the unified diff it returns,
// checked by applying it (the diff library's applyPatch) to the old text.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyPatch } from 'diff';
import { applyEdits, unifiedDiff } from '../../src/catalog/write-tools.ts';
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
