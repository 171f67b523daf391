import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Lru } from '../../src/query/lru.ts';

describe('Lru', () => {
  it('keeps the most recently used entries, reads counting as use', () => {
    const lru = new Lru<string, number>(2);
    lru.set('a', 1);
    lru.set('b', 2);
    assert.equal(lru.get('a'), 1); // a is now newer than b
    lru.set('c', 3); // evicts b
    assert.equal(lru.size, 2);
    assert.equal(lru.get('b'), undefined);
    assert.equal(lru.get('a'), 1);
    assert.equal(lru.get('c'), 3);
  });

  it('replacing a key keeps one entry for it', () => {
    const lru = new Lru<string, number>(2);
    lru.set('a', 1);
    lru.set('a', 2);
    lru.set('b', 3);
    assert.equal(lru.size, 2);
    assert.equal(lru.get('a'), 2);
  });

  it('never grows past its capacity', () => {
    const lru = new Lru<number, number>(8);
    for (let i = 0; i < 1000; i++) lru.set(i, i);
    assert.equal(lru.size, 8);
    assert.equal(lru.get(999), 999);
    assert.equal(lru.get(991), undefined);
  });
});
