// Table tests for src/uri.ts: the pure parsing, canonicalisation and containment
// rules, then resolveUri against real folders, files and symlinks in a temp dir.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import {
  MAX_URI_LENGTH,
  childUri,
  canonicalUriText,
  findRoot,
  isPathInside,
  makeRoot,
  parseFileUri,
  pathToUri,
  resolveUri,
  uriToPath,
  type ResolveFs,
  type Root,
} from '../../src/uri.ts';

const ASCII = /^[\x21-\x7e]*$/;

describe('parseFileUri', () => {
  type Parsed = { path: string; trailingSlash: boolean } | null;
  const ok = (path: string, trailingSlash = false): Parsed => ({ path, trailingSlash });
  const rows: Array<{ input: unknown; expected: Parsed; why?: string }> = [
    // accepted shapes
    { input: 'file:///r/a.txt', expected: ok('/r/a.txt') },
    { input: 'file:///r/dir/', expected: ok('/r/dir', true) },
    { input: 'file:///', expected: ok('/', true) },
    { input: 'FILE:///r/a', expected: ok('/r/a'), why: 'scheme is case-insensitive' },
    { input: 'File:///r/a', expected: ok('/r/a') },
    { input: 'file://localhost/r/a', expected: ok('/r/a'), why: 'localhost is this machine' },
    { input: 'file://LocalHost/r/a', expected: ok('/r/a'), why: 'hosts are case-insensitive' },
    { input: 'file:/r/a', expected: ok('/r/a'), why: 'RFC 8089 form without authority' },
    { input: 'file:////etc/passwd', expected: ok('/etc/passwd'), why: 'empty segments collapse' },
    { input: 'file:///r//a///b', expected: ok('/r/a/b') },
    // schemes and hosts
    { input: 'http://localhost/r/a', expected: null },
    { input: 'https:///r/a', expected: null },
    { input: 'mcp://groups/tools', expected: null },
    { input: 'data:text/plain,hello', expected: null },
    { input: 'javascript:alert(1)', expected: null },
    { input: 'filex:///r/a', expected: null },
    { input: 'fil:///r/a', expected: null },
    { input: ' file:///r/a', expected: null, why: 'no trimming, unlike WHATWG URL' },
    { input: '/r/a', expected: null, why: 'a bare path is not a URI' },
    { input: 'file://evil/etc/passwd', expected: null },
    { input: 'file://127.0.0.1/etc/passwd', expected: null },
    { input: 'file://user@localhost/r/a', expected: null },
    { input: 'file://localhost:80/r/a', expected: null },
    { input: 'file://local%68ost/r/a', expected: null, why: 'no decoding in the host' },
    { input: 'file://localhost', expected: null, why: 'no path' },
    { input: 'file://', expected: null },
    { input: 'file:', expected: null },
    { input: 'file:r/a', expected: null, why: 'not absolute' },
    { input: 'file:./r', expected: null },
    // query and fragment
    { input: 'file:///r/a?x=1', expected: null },
    { input: 'file:///r/a?', expected: null },
    { input: 'file:///r/a#frag', expected: null },
    { input: 'file:///r/a#', expected: null },
    { input: 'file:///r/dir/?', expected: null },
    // encoded separators, backslash, NUL
    { input: 'file:///r/a%2Fb', expected: null },
    { input: 'file:///r/a%2fb', expected: null },
    { input: 'file:///r/..%2Fetc', expected: null },
    { input: 'file:///r/%2e%2e%2fetc', expected: null },
    { input: 'file:///r/a%5Cb', expected: { path: '/r/a\\b', trailingSlash: false } },
    { input: 'file:///r/a%5cb', expected: { path: '/r/a\\b', trailingSlash: false } },
    { input: 'file:///r/a\\b', expected: null, why: 'WHATWG would make it a /' },
    { input: 'file:///r/..\\..\\etc', expected: null },
    { input: 'file:///r/a\0b', expected: null },
    { input: 'file:///r/a.txt\0.png', expected: null },
    { input: 'file:///r/a%00b', expected: null },
    // invalid percent-encoding and invalid UTF-8
    { input: 'file:///r/%', expected: null },
    { input: 'file:///r/100%', expected: null },
    { input: 'file:///r/%2', expected: null },
    { input: 'file:///r/%G1', expected: null },
    { input: 'file:///r/%C3', expected: null, why: 'truncated UTF-8' },
    { input: 'file:///r/%C0%AF', expected: null, why: 'overlong UTF-8 for /' },
    { input: 'file:///r/%C0%AE%C0%AE/etc', expected: null, why: 'overlong UTF-8 for ..' },
    { input: 'file:///r/%ED%A0%80', expected: null, why: 'encoded surrogate' },
    { input: 'file:///r/%FF', expected: null },
    { input: 'file:///r/\uD800', expected: null, why: 'raw lone surrogate' },
    { input: 'file:///r/x\uDE00', expected: null },
    // non-ASCII in both spellings
    { input: 'file:///r/caf%C3%A9', expected: ok('/r/café') },
    { input: 'file:///r/caf%c3%a9', expected: ok('/r/café') },
    { input: 'file:///r/café', expected: ok('/r/café') },
    { input: 'file:///r/cafe\u0301', expected: ok('/r/cafe\u0301'), why: 'no Unicode normalisation: NFD stays NFD' },
    { input: 'file:///r/%E6%97%A5%E6%9C%AC/x', expected: ok('/r/日本/x') },
    { input: 'file:///r/日本/x', expected: ok('/r/日本/x') },
    { input: 'file:///r/%F0%9F%98%80', expected: ok('/r/😀') },
    { input: 'file:///r/😀', expected: ok('/r/😀') },
    // dot segments, raw and encoded
    { input: 'file:///r/../etc/passwd', expected: ok('/etc/passwd') },
    { input: 'file:///r/%2e%2e/etc/passwd', expected: ok('/etc/passwd') },
    { input: 'file:///r/%2E%2E/etc/passwd', expected: ok('/etc/passwd') },
    { input: 'file:///r/.%2E/etc', expected: ok('/etc') },
    { input: 'file:///r/%2e./etc', expected: ok('/etc') },
    { input: 'file:///../../../etc', expected: ok('/etc'), why: '.. clamps at /' },
    { input: 'file:///r/./a', expected: ok('/r/a') },
    { input: 'file:///r/%2e/a', expected: ok('/r/a') },
    { input: 'file:///r/a/..', expected: ok('/r', true), why: 'a final .. names a directory' },
    { input: 'file:///r/a/.', expected: ok('/r/a', true) },
    { input: 'file:///r/a/%2E', expected: ok('/r/a', true) },
    { input: 'file:///r/...', expected: ok('/r/...'), why: 'three dots is a name' },
    { input: 'file:///r/..a', expected: ok('/r/..a') },
    // names with space, %, #, ?, controls
    { input: 'file:///r/with%20space.txt', expected: ok('/r/with space.txt') },
    { input: 'file:///r/with space.txt', expected: ok('/r/with space.txt') },
    { input: 'file:///r/100%25', expected: ok('/r/100%') },
    { input: 'file:///r/%252F', expected: ok('/r/%2F'), why: 'decoded exactly once' },
    { input: 'file:///r/a%23b', expected: ok('/r/a#b') },
    { input: 'file:///r/q%3Fx', expected: ok('/r/q?x') },
    { input: 'file:///r/a%0Ab', expected: ok('/r/a\nb') },
    { input: 'file:///r/a\nb', expected: ok('/r/a\nb'), why: 'kept, WHATWG would drop it' },
    { input: 'file:///r/a\tb', expected: ok('/r/a\tb') },
    // Windows drive letters
    { input: 'file:///C:/Windows/win.ini', expected: null },
    { input: 'file:///c|/x', expected: null },
    { input: 'file:///C%3A/x', expected: null },
    { input: 'file://C:/x', expected: null },
    { input: 'C:\\Windows', expected: null },
    { input: 'file:///r/C:/x', expected: ok('/r/C:/x'), why: 'only a first segment is a drive' },
    // length
    { input: 'file:///' + 'a/'.repeat(MAX_URI_LENGTH), expected: null },
    { input: 'file:///' + 'a'.repeat(MAX_URI_LENGTH - 8), expected: ok('/' + 'a'.repeat(MAX_URI_LENGTH - 8)) },
    { input: 'file:///' + 'a'.repeat(MAX_URI_LENGTH - 7), expected: null },
    // not strings
    { input: undefined, expected: null },
    { input: null, expected: null },
    { input: 42, expected: null },
    { input: {}, expected: null },
    { input: ['file:///r/a'], expected: null },
    { input: new URL('file:///r/a'), expected: null, why: 'a URL object is not a string' },
  ];
  for (const { input, expected, why } of rows) {
    const label = typeof input === 'string' ? JSON.stringify(input.length > 60 ? input.slice(0, 40) + '…' : input) : String(input);
    it(`${label}${why ? ` (${why})` : ''}`, () => {
      assert.deepEqual(parseFileUri(input), expected);
    });
  }
});

describe('isPathInside', () => {
  const rows: Array<{ root: string; candidate: string; expected: boolean }> = [
    { root: '/srv/app', candidate: '/srv/app', expected: true },
    { root: '/srv/app', candidate: '/srv/app/x', expected: true },
    { root: '/srv/app', candidate: '/srv/app/x/y/z.txt', expected: true },
    { root: '/srv/app', candidate: '/srv/app/.hidden', expected: true },
    { root: '/srv/app', candidate: '/srv/app/..x', expected: true },
    { root: '/srv/app', candidate: '/srv/app-secrets', expected: false },
    { root: '/srv/app', candidate: '/srv/app-secrets/key', expected: false },
    { root: '/srv/app', candidate: '/srv/application', expected: false },
    { root: '/srv/app', candidate: '/srv/ap', expected: false },
    { root: '/srv/app', candidate: '/srv', expected: false },
    { root: '/srv/app', candidate: '/', expected: false },
    { root: '/srv/app', candidate: '/SRV/APP/x', expected: false },
    { root: '/srv/app/', candidate: '/srv/app/x', expected: true },
    { root: '/srv/app/', candidate: '/srv/app', expected: true },
    { root: '/srv/app/', candidate: '/srv/app-secrets', expected: false },
    { root: '/', candidate: '/', expected: true },
    { root: '/', candidate: '/etc/passwd', expected: true },
    { root: '/', candidate: 'etc/passwd', expected: false },
    { root: '/srv/app', candidate: '/srv/app/../etc', expected: false },
    { root: '/srv/app', candidate: '/srv/app/./x', expected: false },
    { root: '/srv/app', candidate: '/srv/app//x', expected: false },
    { root: '/srv/app', candidate: '/srv/app/x\0', expected: false },
    { root: '/srv/app', candidate: 'srv/app/x', expected: false },
    { root: '/srv/app', candidate: '', expected: false },
    { root: '', candidate: '/srv/app', expected: false },
    { root: 'srv/app', candidate: 'srv/app/x', expected: false },
    { root: '/srv/../etc', candidate: '/etc/x', expected: false },
  ];
  for (const { root, candidate, expected } of rows) {
    it(`${JSON.stringify(root)} ⊇ ${JSON.stringify(candidate)} is ${expected}`, () => {
      assert.equal(isPathInside(root, candidate), expected);
    });
  }
});

describe('findRoot', () => {
  const roots = ['/srv/app', '/srv/app-secrets', '/srv/app/vendor', '/data'].map((p) => makeRoot(p));
  const rows: Array<{ path: string; expected: string | undefined }> = [
    { path: '/srv/app/src/main.ts', expected: '/srv/app' },
    { path: '/srv/app', expected: '/srv/app' },
    { path: '/srv/app-secrets/key', expected: '/srv/app-secrets' },
    { path: '/srv/app/vendor/lib.js', expected: '/srv/app/vendor' },
    { path: '/srv/app/vendor', expected: '/srv/app/vendor' },
    { path: '/srv/app/vendorx', expected: '/srv/app' },
    { path: '/srv', expected: undefined },
    { path: '/database', expected: undefined },
    { path: '/srv/app/../app-secrets/key', expected: undefined },
  ];
  for (const { path, expected } of rows) {
    it(`${path} -> ${expected}`, () => {
      assert.equal(findRoot(roots, path)?.path, expected);
    });
  }
  it('deepest wins whatever the order of roots', () => {
    assert.equal(findRoot([...roots].reverse(), '/srv/app/vendor/x')?.path, '/srv/app/vendor');
  });
});

describe('pathToUri / uriToPath', () => {
  const rows: Array<{ path: string; dir: boolean; uri: string; clientReadable?: false; nodeAgrees?: false }> = [
    { path: '/r/a.txt', dir: false, uri: 'file:///r/a.txt' },
    { path: '/r/dir', dir: true, uri: 'file:///r/dir/' },
    { path: '/', dir: true, uri: 'file:///' },
    { path: '/r/café', dir: false, uri: 'file:///r/caf%C3%A9' },
    { path: '/r/cafe\u0301', dir: false, uri: 'file:///r/cafe%CC%81' },
    { path: '/r/日本', dir: true, uri: 'file:///r/%E6%97%A5%E6%9C%AC/' },
    { path: '/r/😀.txt', dir: false, uri: 'file:///r/%F0%9F%98%80.txt' },
    { path: '/r/with space.txt', dir: false, uri: 'file:///r/with%20space.txt' },
    { path: '/r/100%', dir: false, uri: 'file:///r/100%25' },
    { path: '/r/%2F', dir: false, uri: 'file:///r/%252F' },
    { path: '/r/a#b', dir: false, uri: 'file:///r/a%23b' },
    { path: '/r/q?x', dir: false, uri: 'file:///r/q%3Fx' },
    { path: '/r/a\nb', dir: false, uri: 'file:///r/a%0Ab' },
    { path: '/r/a\tb\r', dir: false, uri: 'file:///r/a%09b%0D' },
    { path: '/r/a\x7fb', dir: false, uri: 'file:///r/a%7Fb' },
    // Node's pathToFileURL drops a trailing C0 control ('/r/a\x01' -> 'file:///r/a'),
    // so two files would share one URI; our encoder keeps it.
    { path: '/r/a\x01', dir: false, uri: 'file:///r/a%01', nodeAgrees: false },
    { path: '/r/a\x1f', dir: true, uri: 'file:///r/a%1F/', nodeAgrees: false },
    { path: '/r/[x]{y}|^`"<>~', dir: false, uri: 'file:///r/%5Bx%5D%7By%7D%7C%5E%60%22%3C%3E%7E' },
    { path: "/r/it's;a,b=c&d+e$f@g:h!(i)*", dir: false, uri: "file:///r/it's;a,b=c&d+e$f@g:h!(i)*" },
    // '\' is an ordinary POSIX name character: canonical as %5C, and readable.
    { path: '/r/a\\b', dir: false, uri: 'file:///r/a%5Cb' },
  ];
  for (const { path, dir, uri, clientReadable, nodeAgrees } of rows) {
    it(`${JSON.stringify(path)}${dir ? '/' : ''} <-> ${uri}`, () => {
      const got = pathToUri(path, dir);
      assert.equal(got, uri);
      assert.match(got, ASCII);
      assert.equal(uriToPath(got), path);
      // Canonical spelling is a fixed point of prefix canonicalisation.
      assert.equal(canonicalUriText(got), got);
      // A client that sends back what we listed reaches the same path.
      assert.deepEqual(parseFileUri(got), clientReadable === false ? null : { path, trailingSlash: dir });
      // Our spelling is the one docs/resources.md names: pathToFileURL's, on this Node.
      const href = pathToFileURL(path).href;
      const nodeUri = dir && !href.endsWith('/') ? href + '/' : href;
      if (nodeAgrees === false) assert.notEqual(got, nodeUri);
      else assert.equal(got, nodeUri);
    });
  }
  it('drops a trailing slash of the input path', () => {
    assert.equal(pathToUri('/r/dir/', true), 'file:///r/dir/');
    assert.equal(pathToUri('/r/dir/', false), 'file:///r/dir');
  });
  it('refuses a relative path instead of resolving it against cwd', () => {
    assert.throws(() => pathToUri('r/a', false), TypeError);
  });
  it('encodes a lone surrogate as U+FFFD, like pathToFileURL', () => {
    assert.equal(pathToUri('/r/\uD800x', false), 'file:///r/%EF%BF%BDx');
  });
  it('JS string order of URIs is their byte order (SQLite BINARY), unlike raw paths', () => {
    // U+FFFD vs an astral char: UTF-16 and UTF-8 disagree on raw strings.
    assert.ok('/r/\uFFFD' > '/r/😀');
    assert.ok(Buffer.compare(Buffer.from('/r/\uFFFD'), Buffer.from('/r/😀')) < 0);
    const uris = ['/r/z', '/r/é', '/r/日', '/r/😀', '/r/A', '/r/a b', '/r/\uFFFD', '/r/~', '/r/a'].map((p) => pathToUri(p, false));
    const byJs = [...uris].sort(cmp);
    const byBytes = [...uris].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    assert.deepEqual(byJs, byBytes);
  });
  it('makeRoot', () => {
    assert.deepEqual(makeRoot('/srv/app'), { path: '/srv/app', uri: 'file:///srv/app/', name: 'app' });
    assert.deepEqual(makeRoot('/srv/café/'), { path: '/srv/café', uri: 'file:///srv/caf%C3%A9/', name: 'café' });
    assert.deepEqual(makeRoot('/'), { path: '/', uri: 'file:///', name: '/' });
    assert.throws(() => makeRoot('srv'), TypeError);
  });
});

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

describe('canonicalUriText', () => {
  const rows: Array<{ input: string; expected: string; why?: string }> = [
    { input: 'file:///r/café', expected: 'file:///r/caf%C3%A9' },
    { input: 'file:///r/caf%c3%a9', expected: 'file:///r/caf%C3%A9' },
    { input: 'file:///r/caf%C3%a9', expected: 'file:///r/caf%C3%A9' },
    { input: 'file:///r/日本', expected: 'file:///r/%E6%97%A5%E6%9C%AC' },
    { input: 'file:///r/😀', expected: 'file:///r/%F0%9F%98%80' },
    { input: 'file:///r/cafe\u0301', expected: 'file:///r/cafe%CC%81' },
    { input: 'a b', expected: 'a%20b' },
    { input: '\t\n\r', expected: '%09%0A%0D' },
    { input: '\0\x1f\x7f', expected: '%00%1F%7F' },
    { input: '\u0080\u00ff', expected: '%C2%80%C3%BF' },
    { input: '\uD800', expected: '%EF%BF%BD' },
    { input: '\uDC00', expected: '%EF%BF%BD' },
    { input: 'x\uD83D', expected: 'x%EF%BF%BD', why: 'half an emoji, cut off' },
    { input: '\uDE00\uD83D', expected: '%EF%BF%BD%EF%BF%BD' },
    // A '%' that begins no escape is the character itself, as a file named `100%` is listed (`100%25`).
    { input: '%', expected: '%25' },
    { input: '%2', expected: '%252' },
    { input: '%zz', expected: '%25zz' },
    { input: '%%41', expected: '%25%41' },
    { input: '%e6%97', expected: '%E6%97' },
    { input: '%2f%5c', expected: '%2F%5C' },
    // As URI paths spell them (`backup~` is listed `backup%7E`); `?` and `#` stay URI syntax.
    { input: '#?[]{}*!~\\', expected: '#?%5B%5D%7B%7D*!%7E%5C' },
    { input: '"<>^`|', expected: '%22%3C%3E%5E%60%7C' },
    { input: 'FILE:///R/', expected: 'FILE:///R/' },
    { input: '', expected: '' },
  ];
  for (const { input, expected, why } of rows) {
    it(`${JSON.stringify(input)} -> ${expected}${why ? ` (${why})` : ''}`, () => {
      const got = canonicalUriText(input);
      assert.equal(got, expected);
      assert.equal(canonicalUriText(got), got, 'idempotent');
    });
  }
  it('agrees with pathToUri on any prefix of a raw URI, non-ASCII and the ASCII paths encode', () => {
    const raw = 'file:///r/日本/café 😀/dir~/x^y|z "q" <a> {b} [c] `d` 100%.txt';
    const canonical = pathToUri('/r/日本/café 😀/dir~/x^y|z "q" <a> {b} [c] `d` 100%.txt', false);
    assert.equal(canonicalUriText(raw), canonical);
    // Every code-point prefix of the raw text maps to a prefix of the canonical URI.
    const chars = [...raw];
    for (let n = 0; n <= chars.length; n++) {
      assert.ok(canonical.startsWith(canonicalUriText(chars.slice(0, n).join(''))), `prefix of ${n} chars`);
    }
  });
});

describe('resolveUri (real folders)', () => {
  let tmp = '';
  let roots: Root[] = [];
  let hasFifo = false;

  before(() => {
    // realpath: on macOS os.tmpdir() is itself behind a symlink (/var -> /private/var).
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'folder-mcp-uri-')));
    const file = (rel: string, body = rel) => writeFileSync(join(tmp, rel), body);
    for (const dir of ['root', 'root/sub', 'root/日本', 'root/nested', 'root/empty dir', 'app', 'app-secrets', 'outside', 'outside/dir'])
      mkdirSync(join(tmp, dir));
    for (const rel of [
      'root/a.txt',
      'root/café.txt',
      'root/日本/doc.md',
      'root/😀.txt',
      'root/sub/inner.txt',
      'root/nested/n.txt',
      'root/with space.txt',
      'root/100%.txt',
      'root/a#b.txt',
      'root/q?x.txt',
      'root/[x]~.txt',
      'app/main.ts',
      'app-secrets/key.pem',
      'outside/secret.txt',
      'outside/dir/deep.txt',
    ])
      file(rel);
    symlinkSync('sub/inner.txt', join(tmp, 'root/link-in'));
    symlinkSync('sub', join(tmp, 'root/dirlink-in'));
    symlinkSync('../outside/secret.txt', join(tmp, 'root/link-out'));
    symlinkSync(join(tmp, 'outside/secret.txt'), join(tmp, 'root/link-out-abs'));
    symlinkSync('../outside', join(tmp, 'root/dirlink-out'));
    symlinkSync('../app-secrets', join(tmp, 'app/secrets-link'));
    symlinkSync('../app/main.ts', join(tmp, 'root/link-to-other-root'));
    symlinkSync('missing.txt', join(tmp, 'root/dangling'));
    symlinkSync('loop', join(tmp, 'root/loop'));
    try {
      execFileSync('mkfifo', [join(tmp, 'root/fifo')]);
      hasFifo = true;
    } catch {
      hasFifo = false; // no mkfifo on this system: that row is skipped, not failed
    }
    roots = ['root', 'app', 'root/nested'].map((rel) => makeRoot(join(tmp, rel)));
  });

  after(() => {
    rmSync(tmp, { recursive: true, force: true });
  });

  /** `{T}` is the temp folder's URI (no trailing '/'), `{P}` its raw path. */
  const expand = (s: string) => s.replaceAll('{T}', pathToUri(tmp, false)).replaceAll('{P}', tmp);
  type Want = { rel: string; dir: boolean; root: string } | null;
  const rows: Array<{ uri: string; expected: Want; why: string }> = [
    { uri: '{T}/root/a.txt', expected: { rel: 'root/a.txt', dir: false, root: 'root' }, why: 'a plain file' },
    { uri: '{T}/root/', expected: { rel: 'root', dir: true, root: 'root' }, why: 'the root itself' },
    { uri: '{T}/root', expected: { rel: 'root', dir: true, root: 'root' }, why: 'the root without its slash' },
    { uri: '{T}/root/sub/', expected: { rel: 'root/sub', dir: true, root: 'root' }, why: 'trailing slash on a directory' },
    { uri: '{T}/root/sub', expected: { rel: 'root/sub', dir: true, root: 'root' }, why: 'directory without slash gets one' },
    { uri: '{T}/root/a.txt/', expected: null, why: 'trailing slash on a file' },
    { uri: '{T}/root/a.txt/.', expected: null, why: 'a file is not a directory' },
    { uri: '{T}/root/sub/..', expected: { rel: 'root', dir: true, root: 'root' }, why: '.. inside the root' },
    { uri: '{T}/root/sub/../a.txt', expected: { rel: 'root/a.txt', dir: false, root: 'root' }, why: '.. inside the root' },
    { uri: '{T}/root/%2e%2e/outside/secret.txt', expected: null, why: '%2e%2e escaping' },
    { uri: '{T}/root/%2E%2E/outside/secret.txt', expected: null, why: '%2E%2E escaping' },
    { uri: '{T}/root/../outside/secret.txt', expected: null, why: '.. escaping' },
    { uri: '{T}/root/sub/../../outside/secret.txt', expected: null, why: 'deeper .. escaping' },
    { uri: '{T}/root/..', expected: null, why: 'parent of the root' },
    { uri: '{T}/root/../../../../../../../../etc/passwd', expected: null, why: '.. to /etc' },
    { uri: 'file:///etc/passwd', expected: null, why: 'absolute outside' },
    { uri: '{T}/outside/secret.txt', expected: null, why: 'existing outside' },
    { uri: '{T}/outside/nope.txt', expected: null, why: 'missing outside' },
    { uri: '{T}/root/nope.txt', expected: null, why: 'missing inside' },
    { uri: '{T}/root/nope/', expected: null, why: 'missing directory inside' },
    { uri: '{T}/root/a.txt/x', expected: null, why: 'below a file (ENOTDIR)' },
    { uri: '{T}/root/..%2Foutside/secret.txt', expected: null, why: 'encoded slash' },
    { uri: '{T}/root/sub%2Finner.txt', expected: null, why: 'encoded slash, even to an inside file' },
    { uri: '{T}/root/..%5Coutside%5Csecret.txt', expected: null, why: 'encoded backslash' },
    { uri: '{T}/root/a.txt%00.png', expected: null, why: 'encoded NUL' },
    { uri: '{T}/root/a.txt\0.png', expected: null, why: 'raw NUL' },
    { uri: '{T}/root/caf%C3%A9.txt', expected: { rel: 'root/café.txt', dir: false, root: 'root' }, why: 'uppercase escapes' },
    { uri: '{T}/root/caf%c3%a9.txt', expected: { rel: 'root/café.txt', dir: false, root: 'root' }, why: 'lowercase escapes' },
    { uri: '{T}/root/café.txt', expected: { rel: 'root/café.txt', dir: false, root: 'root' }, why: 'raw non-ASCII' },
    { uri: '{T}/root/cafe\u0301.txt', expected: null, why: 'NFD is another name on Linux' },
    { uri: '{T}/root/%E6%97%A5%E6%9C%AC/doc.md', expected: { rel: 'root/日本/doc.md', dir: false, root: 'root' }, why: 'CJK encoded' },
    { uri: '{T}/root/日本/', expected: { rel: 'root/日本', dir: true, root: 'root' }, why: 'CJK raw directory' },
    { uri: '{T}/root/%F0%9F%98%80.txt', expected: { rel: 'root/😀.txt', dir: false, root: 'root' }, why: 'emoji encoded' },
    { uri: '{T}/root/😀.txt', expected: { rel: 'root/😀.txt', dir: false, root: 'root' }, why: 'emoji raw' },
    { uri: '{T}/root/with%20space.txt', expected: { rel: 'root/with space.txt', dir: false, root: 'root' }, why: 'space encoded' },
    { uri: '{T}/root/with space.txt', expected: { rel: 'root/with space.txt', dir: false, root: 'root' }, why: 'space raw' },
    { uri: '{T}/root/empty%20dir', expected: { rel: 'root/empty dir', dir: true, root: 'root' }, why: 'directory with a space' },
    { uri: '{T}/root/100%25.txt', expected: { rel: 'root/100%.txt', dir: false, root: 'root' }, why: '% in a name' },
    { uri: '{T}/root/100%.txt', expected: null, why: 'raw % is invalid encoding' },
    { uri: '{T}/root/a%23b.txt', expected: { rel: 'root/a#b.txt', dir: false, root: 'root' }, why: '# in a name' },
    { uri: '{T}/root/a#b.txt', expected: null, why: 'raw # is a fragment' },
    { uri: '{T}/root/q%3Fx.txt', expected: { rel: 'root/q?x.txt', dir: false, root: 'root' }, why: '? in a name' },
    { uri: '{T}/root/q?x.txt', expected: null, why: 'raw ? is a query' },
    { uri: '{T}/root/a.txt?download=1', expected: null, why: 'query on an existing file' },
    { uri: '{T}/root/a.txt#top', expected: null, why: 'fragment on an existing file' },
    { uri: '{T}/root/[x]~.txt', expected: { rel: 'root/[x]~.txt', dir: false, root: 'root' }, why: 'raw [ ] ~' },
    { uri: '{T}/root/%5Bx%5D%7E.txt', expected: { rel: 'root/[x]~.txt', dir: false, root: 'root' }, why: 'encoded [ ] ~' },
    { uri: '{T}/root/link-in', expected: { rel: 'root/sub/inner.txt', dir: false, root: 'root' }, why: 'symlink inside -> inside' },
    { uri: '{T}/root/dirlink-in/', expected: { rel: 'root/sub', dir: true, root: 'root' }, why: 'dir symlink inside -> inside' },
    { uri: '{T}/root/dirlink-in/inner.txt', expected: { rel: 'root/sub/inner.txt', dir: false, root: 'root' }, why: 'through a dir symlink' },
    { uri: '{T}/root/link-out', expected: null, why: 'symlink inside -> outside (relative)' },
    { uri: '{T}/root/link-out-abs', expected: null, why: 'symlink inside -> outside (absolute)' },
    { uri: '{T}/root/dirlink-out/', expected: null, why: 'dir symlink escaping' },
    { uri: '{T}/root/dirlink-out/secret.txt', expected: null, why: 'file through an escaping dir symlink' },
    { uri: '{T}/root/dirlink-out/dir/deep.txt', expected: null, why: 'deep through an escaping dir symlink' },
    { uri: '{T}/root/dirlink-out/nope.txt', expected: null, why: 'missing through an escaping dir symlink' },
    { uri: '{T}/root/dangling', expected: null, why: 'dangling symlink' },
    { uri: '{T}/root/loop', expected: null, why: 'symlink loop (ELOOP)' },
    { uri: '{T}/root/link-to-other-root', expected: { rel: 'app/main.ts', dir: false, root: 'app' }, why: 'symlink into another served root' },
    { uri: '{T}/app/main.ts', expected: { rel: 'app/main.ts', dir: false, root: 'app' }, why: 'second root' },
    { uri: '{T}/app-secrets/key.pem', expected: null, why: 'sibling-prefix trap' },
    { uri: '{T}/app-secrets/', expected: null, why: 'sibling-prefix trap, directory' },
    { uri: '{T}/app/../app-secrets/key.pem', expected: null, why: 'sibling prefix via ..' },
    { uri: '{T}/app/secrets-link/key.pem', expected: null, why: 'sibling prefix via symlink' },
    { uri: '{T}/root/nested/n.txt', expected: { rel: 'root/nested/n.txt', dir: false, root: 'root/nested' }, why: 'nested root: deepest wins' },
    { uri: '{T}/root/nested/', expected: { rel: 'root/nested', dir: true, root: 'root/nested' }, why: 'nested root itself' },
    { uri: 'file://localhost{P}/root/a.txt', expected: { rel: 'root/a.txt', dir: false, root: 'root' }, why: 'localhost host' },
    { uri: 'FILE://LOCALHOST{P}/root/a.txt', expected: { rel: 'root/a.txt', dir: false, root: 'root' }, why: 'upper-case scheme and host' },
    { uri: 'file://evil{P}/root/a.txt', expected: null, why: 'another host' },
    { uri: 'file://evil/etc/passwd', expected: null, why: 'another host, outside' },
    { uri: 'http://localhost{P}/root/a.txt', expected: null, why: 'http scheme' },
    { uri: 'mcp://{P}/root/a.txt', expected: null, why: 'mcp scheme' },
    { uri: 'data:text/plain,{P}/root/a.txt', expected: null, why: 'data scheme' },
    { uri: '{P}/root/a.txt', expected: null, why: 'a bare path' },
    { uri: '{T}/root/' + 'x/'.repeat(MAX_URI_LENGTH / 2), expected: null, why: 'overlong' },
  ];
  for (const { uri, expected, why } of rows) {
    it(`${why}: ${uri.length > 70 ? uri.slice(0, 60) + '…' : uri}`, async () => {
      const got = await resolveUri(expand(uri), roots);
      if (expected === null) {
        assert.equal(got, null);
        return;
      }
      const path = join(tmp, expected.rel);
      assert.deepEqual(got, {
        uri: pathToUri(path, expected.dir),
        path,
        root: roots.find((r) => r.path === join(tmp, expected.root)),
        isDirectory: expected.dir,
      });
      assert.match(got.uri, ASCII);
    });
  }

  it('a FIFO is neither a file nor a directory', async (t) => {
    if (!hasFifo) return t.skip('mkfifo not available');
    assert.equal(await resolveUri(expand('{T}/root/fifo'), roots), null);
  });

  it('never touches the disk for a path outside every root', async () => {
    const calls: string[] = [];
    const spy: ResolveFs = {
      realpath: (p) => (calls.push(`realpath ${p}`), realpath(p)),
      stat: (p) => (calls.push(`stat ${p}`), stat(p)),
    };
    for (const uri of ['{T}/outside/secret.txt', '{T}/outside/nope.txt', '{T}/root/../outside/secret.txt', '{T}/app-secrets/key.pem'])
      assert.equal(await resolveUri(expand(uri), roots, spy), null);
    assert.deepEqual(calls, []);
  });

  it('outside-existing and outside-missing through a symlink answer alike', async () => {
    const existing = await resolveUri(expand('{T}/root/dirlink-out/secret.txt'), roots);
    const missing = await resolveUri(expand('{T}/root/dirlink-out/nope.txt'), roots);
    assert.equal(existing, missing);
  });

  it('throws file system faults instead of calling them not found', async () => {
    const eio = Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
    const broken: ResolveFs = { realpath: () => Promise.reject(eio), stat };
    await assert.rejects(resolveUri(expand('{T}/root/a.txt'), roots, broken), /EIO/);
  });

  it('with no roots, nothing resolves', async () => {
    assert.equal(await resolveUri(expand('{T}/root/a.txt'), []), null);
  });

  it('every resolved uri resolves to itself', async () => {
    for (const rel of ['root/a.txt', 'root/café.txt', 'root/日本', 'root/q?x.txt', 'root/100%.txt', 'root/[x]~.txt']) {
      const first = await resolveUri(expand(`{T}/${rel.split('/').map(encodeURIComponent).join('/')}`), roots);
      assert.ok(first, rel);
      const again = await resolveUri(first.uri, roots);
      assert.deepEqual(again, first);
    }
  });
});

describe('pathToUri agrees with pathToFileURL for every ASCII character inside a name', () => {
  // Guards the fast path (names with nothing to encode skip the per-character encoder).
  it('0x01..0x7f', () => {
    for (let code = 1; code < 0x80; code++) {
      const char = String.fromCharCode(code);
      if (char === '/') continue;
      const path = `/r/a${char}b`;
      assert.equal(pathToUri(path, false), pathToFileURL(path).href, `char ${code}`);
    }
  });
});

describe('childUri equals pathToUri of the joined path', () => {
  const names = ['a.txt', 'with space', 'café', '日本', '%41', '#x?y', 'a\\b', '[x]{y}', "it's", '\u0001c', '😀', '.hidden', '...'];
  for (const parent of ['/', '/r', '/r/sub dir', '/r/caf\u00e9']) {
    for (const name of names) {
      for (const dir of [false, true]) {
        it(`${parent} + ${JSON.stringify(name)}${dir ? '/' : ''}`, () => {
          const joined = parent === '/' ? `/${name}` : `${parent}/${name}`;
          assert.equal(childUri(pathToUri(parent, true), name, dir), pathToUri(joined, dir));
        });
      }
    }
  }
});
