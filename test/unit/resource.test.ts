import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EntryKind } from '../../src/entry.ts';
import { isoTime, relativeTitle, toResource, type ResourceRow } from '../../src/resource.ts';
import { makeRoot } from '../../src/uri.ts';

const YEAR_10000_MS = Date.UTC(10000, 0, 1);

describe('isoTime', () => {
  it('equals Date#toISOString at the edges', () => {
    const edges = [
      0,
      -0,
      0.5,
      1.999,
      -0.5, // truncates to 0, as Date does
      Date.UTC(2000, 1, 28, 23, 59, 59, 999),
      Date.UTC(2000, 1, 29),
      Date.UTC(2100, 1, 28, 12),
      Date.UTC(2100, 2, 1),
      Date.UTC(1999, 11, 31, 23, 59, 59, 999),
      Date.UTC(2024, 11, 31, 23, 59, 59, 999) + 0.9999,
      YEAR_10000_MS - 1,
      YEAR_10000_MS - 0.5,
      // Outside 1970..9999: Date's own formatting (six-digit and negative years)
      YEAR_10000_MS,
      8.64e15,
      -1,
      -1.5,
      Date.UTC(1969, 11, 31, 23, 59, 59, 999),
      -8.64e15,
    ];
    for (const ms of edges) assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
  });

  it('equals Date#toISOString on every day of 1970..2200 and on random times', () => {
    for (let day = 0; day < 84_000; day++) {
      const ms = day * 86_400_000 + ((day * 7_919_993) % 86_400_000);
      assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
    }
    let seed = 12345;
    const rand = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    for (let i = 0; i < 100_000; i++) {
      const ms = rand() * YEAR_10000_MS;
      assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
    }
  });

  it('throws for an invalid time, as Date does', () => {
    for (const ms of [NaN, Infinity, 8.64e15 + 1]) assert.throws(() => isoTime(ms), RangeError);
  });
});

describe('relativeTitle', () => {
  const root = makeRoot('/srv/proj');
  it('is the decoded path under the root, without a trailing slash', () => {
    assert.equal(relativeTitle('file:///srv/proj/', root), 'proj');
    assert.equal(relativeTitle('file:///srv/proj/src/main.ts', root), 'src/main.ts');
    assert.equal(relativeTitle('file:///srv/proj/src/', root), 'src');
    assert.equal(relativeTitle('file:///srv/proj/caf%C3%A9/a%20b.md', root), 'café/a b.md');
    assert.equal(relativeTitle('file:///srv/proj/100%25.txt', root), '100%.txt');
  });
  it('keeps text that does not decode as it is', () => {
    assert.equal(relativeTitle('file:///srv/proj/bad%E9.txt', root), 'bad%E9.txt');
  });
});

describe('toResource', () => {
  const roots = [makeRoot('/srv/proj')];
  const row = (over: Partial<ResourceRow>): ResourceRow => ({
    uri: 'file:///srv/proj/src/a.ts',
    root: 0,
    name: 'a.ts',
    kind: EntryKind.document,
    size: 12,
    mtime: Date.UTC(2026, 10, 23, 13, 37, 57, 101) + 0.25,
    mime: 'text/typescript',
    ...over,
  });

  it('a document: every field, size last', () => {
    const resource = toResource(row({}), roots);
    assert.deepEqual(resource, {
      uri: 'file:///srv/proj/src/a.ts',
      name: 'a.ts',
      title: 'src/a.ts',
      mimeType: 'text/typescript',
      resourceType: 'document',
      capabilities: { subscribe: true },
      annotations: { lastModified: '2026-11-23T13:37:57.101Z' },
      size: 12,
    });
    assert.deepEqual(Object.keys(resource), ['uri', 'name', 'title', 'mimeType', 'resourceType', 'capabilities', 'annotations', 'size']);
  });

  it('a collection: list capability, no size; a root is titled by its name', () => {
    const resource = toResource(row({ uri: 'file:///srv/proj/', name: 'proj', kind: EntryKind.collection, size: 0, mime: 'inode/directory' }), roots);
    assert.deepEqual(resource, {
      uri: 'file:///srv/proj/',
      name: 'proj',
      title: 'proj',
      mimeType: 'inode/directory',
      resourceType: 'collection',
      capabilities: { list: true, subscribe: true },
      annotations: { lastModified: '2026-11-23T13:37:57.101Z' },
    });
  });

  it('objects are not shared between calls (callers spread and extend them)', () => {
    const a = toResource(row({}), roots);
    const b = toResource(row({}), roots);
    assert.notEqual(a.capabilities, b.capabilities);
    assert.notEqual(a.annotations, b.annotations);
  });
});
