import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { displayPath, rootLabels } from '../../src/catalog/paths.ts';
import { listingName } from '../../src/content/collection.ts';
import { makeRoot } from '../../src/uri.ts';

describe('rootLabels', () => {
  const rows: Array<[string[], string[], string]> = [
    [['/w/proj'], ['proj'], 'one root: its folder name'],
    [['/w/proj', '/w/notes'], ['proj', 'notes'], 'distinct names stay short'],
    [['/w/a/proj', '/w/b/proj'], ['a/proj', 'b/proj'], 'same names: one parent more'],
    [['/x/a/proj', '/y/a/proj', '/z/notes'], ['x/a/proj', 'y/a/proj', 'notes'], 'as many parents as it takes, only where needed'],
    [['/proj', '/w/proj'], ['proj', 'w/proj'], 'a root at the top keeps what it has'],
    [['/', '/w'], ['/', 'w'], 'the file-system root'],
    [['/w/proj', '/w/proj/sub/proj'], ['w/proj', 'sub/proj'], 'nested roots'],
  ];
  for (const [paths, labels, why] of rows) test(why, () => assert.deepEqual(rootLabels(paths), labels));
  test('labels are unique whenever the paths are', () => {
    const paths = ['/a/x/p', '/b/x/p', '/a/y/p', '/p', '/c/p'];
    assert.equal(new Set(rootLabels(paths)).size, paths.length);
  });
});

describe('displayPath', () => {
  const one = [makeRoot('/w/proj')];
  const two = [makeRoot('/w/a/proj'), makeRoot('/w/b/proj')];
  test('one root: the path relative to it; the root by its name', () => {
    assert.equal(displayPath({ uri: 'file:///w/proj/src/a.ts', root: 0 }, one), 'src/a.ts');
    assert.equal(displayPath({ uri: 'file:///w/proj/', root: 0 }, one), 'proj');
  });
  test('several roots: the label first', () => {
    assert.equal(displayPath({ uri: 'file:///w/b/proj/src/a.ts', root: 1 }, two), 'b/proj/src/a.ts');
    assert.equal(displayPath({ uri: 'file:///w/a/proj/', root: 0 }, two), 'a/proj');
  });
  test('control characters in a name are escaped: one entry, one line', () => {
    assert.equal(displayPath({ uri: 'file:///w/proj/a%0Ab.txt', root: 0 }, one), 'a\\u000ab.txt');
    assert.equal(displayPath({ uri: 'file:///w/proj/x%1B%5B31m.txt', root: 0 }, one), 'x\\u001b[31m.txt');
  });
});

describe('listingName', () => {
  const rows: Array<[string, string]> = [
    ['plain.txt', 'plain.txt'],
    ['tab\there', 'tab\\u0009here'],
    ['new\nline', 'new\\u000aline'],
    ['esc\u001b[2J', 'esc\\u001b[2J'],
    ['del\u007f', 'del\\u007f'],
    ['c1\u0085nel', 'c1\\u0085nel'],
    ['ls\u2028ps\u2029', 'ls\\u2028ps\\u2029'],
    ['looks\\u0041like', 'looks\\u005cu0041like'],
    ['back\\slash', 'back\\slash'],
    ['café ✓', 'café ✓'],
  ];
  for (const [name, shown] of rows) test(JSON.stringify(name), () => assert.equal(listingName(name), shown));
});
