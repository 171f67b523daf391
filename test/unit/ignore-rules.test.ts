// The one ignore decision (src/index/ignore.ts): each folder's .gitignore
// judges what is beneath it, --exclude everywhere, and the rules a folder's
// entries are judged by are kept per folder, made again when any changes.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { IgnoreRules } from '../../src/index/ignore.ts';
import { makeRoot } from '../../src/uri.ts';
import { tempDir } from '../basics.ts';

describe('IgnoreRules', () => {
  function tree() {
    const dir = tempDir();
    mkdirSync(join(dir.path, 'a', 'b', 'c'), { recursive: true });
    writeFileSync(join(dir.path, '.gitignore'), '*.log\n');
    writeFileSync(join(dir.path, 'a', '.gitignore'), 'secret/\n/only-here.txt\n');
    return { dir, rules: new IgnoreRules([makeRoot(dir.path)], { gitignore: true, exclude: ['*.tmp'] }) };
  }

  test('every ancestor\'s .gitignore judges the path relative to itself, as git does; --exclude applies everywhere', () => {
    const { dir, rules } = tree();
    try {
      const at = (rel: string) => join(dir.path, rel);
      const rows: Array<[string, boolean, boolean]> = [
        ['x.log', false, true],
        ['a/b/c/deep.log', false, true],
        ['a/secret', true, true],
        ['a/b/secret', true, true],
        ['secret', true, false],
        ['a/only-here.txt', false, true],
        ['a/b/only-here.txt', false, false],
        ['a/b/c/x.tmp', false, true],
        ['a/b/c/x.txt', false, false],
        ['a/node_modules', true, true],
        ['a/node_modules/b/c.txt', false, true],
      ];
      for (const [rel, isDir, ignored] of rows) assert.equal(rules.isIgnored(at(rel), isDir), ignored, rel);
    } finally {
      dir.cleanup();
    }
  });

  test('a .gitignore made or changed after its folder\'s entries were judged applies once it is forgotten (invalidate)', () => {
    const { dir, rules } = tree();
    try {
      const deep = join(dir.path, 'a', 'b', 'c', 'build.out');
      assert.equal(rules.isIgnored(deep, false), false);
      writeFileSync(join(dir.path, 'a', 'b', '.gitignore'), '*.out\n');
      rules.invalidate(join(dir.path, 'a', 'b'));
      assert.equal(rules.isIgnored(deep, false), true, 'a new .gitignore between the root and the entry');
      writeFileSync(join(dir.path, 'a', 'b', '.gitignore'), '*.other\n');
      rules.invalidate(join(dir.path, 'a', 'b'));
      assert.equal(rules.isIgnored(deep, false), false, 'its rule taken back');
    } finally {
      dir.cleanup();
    }
  });

  test('rules the scan records (setDirRules) after a folder\'s entries were judged apply to them', () => {
    const { dir, rules } = tree();
    try {
      const deep = join(dir.path, 'a', 'b', 'c', 'build.out');
      assert.equal(rules.isIgnored(deep, false), false);
      rules.setDirRules(join(dir.path, 'a', 'b', 'c'), '*.out\n');
      assert.equal(rules.isIgnored(deep, false), true);
      rules.setDirRules(join(dir.path, 'a', 'b', 'c'), null);
      assert.equal(rules.isIgnored(deep, false), false);
    } finally {
      dir.cleanup();
    }
  });
});
