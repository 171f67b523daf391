import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CursorError, decodeCursor, encodeCursor, FILTER_CHANGED, INVALID_CURSOR } from '../../src/protocol/cursor.ts';

const SECRET = 'a3f1'.repeat(16);
const FP = 'Zm9vYmFyYmF6cXV4';
const isError = (message: string) => (e: unknown) => e instanceof CursorError && e.message === message;

describe('cursor codec', () => {
  it('round-trips keys, including empty, non-ASCII and long ones', () => {
    for (const key of ['', 'file:///r/a.txt', 'file:///r/caf%C3%A9/', 'ünïcödé 😀', 'x'.repeat(8192), 'a\u0000b']) {
      const cursor = encodeCursor({ key, fingerprint: FP }, SECRET);
      assert.match(cursor, /^[A-Za-z0-9_-]+$/);
      assert.equal(decodeCursor(cursor, SECRET, FP), key);
    }
  });

  it('accepts a Buffer secret', () => {
    const secret = Buffer.from(SECRET, 'hex');
    assert.equal(decodeCursor(encodeCursor({ key: 'k', fingerprint: FP }, secret), secret, FP), 'k');
  });

  it('rejects a change to any character', () => {
    const cursor = encodeCursor({ key: 'file:///r/some/long/enough/key.txt', fingerprint: FP }, SECRET);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let i = 0; i < cursor.length; i++) {
      for (const c of [alphabet[(alphabet.indexOf(cursor[i]!) + 1) % 64]!, alphabet[(alphabet.indexOf(cursor[i]!) + 33) % 64]!]) {
        const tampered = cursor.slice(0, i) + c + cursor.slice(i + 1);
        assert.throws(() => decodeCursor(tampered, SECRET, FP), isError(INVALID_CURSOR), `position ${i}`);
      }
    }
  });

  it('rejects a change to any byte of the decoded cursor', () => {
    const raw = Buffer.from(encodeCursor({ key: 'file:///r/k', fingerprint: FP }, SECRET), 'base64url');
    for (let i = 0; i < raw.length; i++) {
      const copy = Buffer.from(raw);
      copy[i] = copy[i]! ^ 0x01;
      assert.throws(() => decodeCursor(copy.toString('base64url'), SECRET, FP), isError(INVALID_CURSOR), `byte ${i}`);
    }
  });

  it('rejects truncation and extension', () => {
    const cursor = encodeCursor({ key: 'file:///r/k', fingerprint: FP }, SECRET);
    for (let n = 0; n < cursor.length; n++) {
      assert.throws(() => decodeCursor(cursor.slice(0, n), SECRET, FP), isError(INVALID_CURSOR), `length ${n}`);
    }
    assert.throws(() => decodeCursor(cursor + 'A', SECRET, FP), isError(INVALID_CURSOR));
    assert.throws(() => decodeCursor(cursor + 'AAAA', SECRET, FP), isError(INVALID_CURSOR));
  });

  it('rejects a cursor made with another secret', () => {
    const cursor = encodeCursor({ key: 'k', fingerprint: FP }, 'other secret');
    assert.throws(() => decodeCursor(cursor, SECRET, FP), isError(INVALID_CURSOR));
  });

  it('a valid cursor with another filter says the filter changed', () => {
    const cursor = encodeCursor({ key: 'k', fingerprint: FP }, SECRET);
    assert.throws(() => decodeCursor(cursor, SECRET, 'another-fingerprt'), isError(FILTER_CHANGED));
    assert.equal(FILTER_CHANGED, 'Filter parameters must not change between paginated requests');
  });

  it('rejects garbage without throwing anything else', () => {
    const GARBAGE: unknown[] = ['', '=', 'abc=', 'not base64!', '////', '💥', 'a'.repeat(20000), 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 42, null, {}, [], '0'];
    for (const cursor of GARBAGE) {
      assert.throws(() => decodeCursor(cursor, SECRET, FP), isError(INVALID_CURSOR), JSON.stringify(cursor));
    }
    // Base64url of random bytes, long enough to hold a MAC.
    for (let i = 0; i < 200; i++) {
      const junk = Buffer.from(Array.from({ length: 18 + (i % 40) }, (_, j) => (i * 31 + j * 7) & 0xff)).toString('base64url');
      assert.throws(() => decodeCursor(junk, SECRET, FP), isError(INVALID_CURSOR));
    }
  });
});
