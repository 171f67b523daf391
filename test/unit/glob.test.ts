import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileGlob, GlobSyntaxError, mapGlobLiterals } from '../../src/query/glob.ts';

// [pattern, text, expected]
const MATCHES: [string, string, boolean][] = [
  ['foo.txt', 'foo.txt', true],
  ['foo.txt', 'foo.txT', false], // case-sensitive
  ['*.txt', 'a.txt', true],
  ['*.txt', '.txt', true],
  ['*.txt', 'a/b.txt', false], // * does not cross '/'
  ['*/x', '/x', true],
  ['*/x', 'a/x', true],
  ['*/x', 'a/b/x', false],
  ['*', '.env', true], // leading dots are ordinary
  ['*', '', true],
  ['*', 'a/b', false],
  ['.*', '.env', true],
  ['a*', 'abc', true],
  ['a*', 'a/c', false],
  ['a**', 'a/b/c', true],
  ['**', 'a/b/c', true],
  ['**', '', true],
  ['a/**/b', 'a/b', true],
  ['a/**/b', 'a/x/b', true],
  ['a/**/b', 'a/x/y/b', true],
  ['a/**/b', 'a/xb', false],
  ['a/**/b', 'ab', false],
  ['**/x', 'x', true],
  ['**/x', 'a/b/x', true],
  ['**/x', 'a/bx', false],
  ['a/**', 'a/', true],
  ['a/**', 'a/b/c', true],
  ['a/**', 'a', false],
  ['a**b', 'a/x/b', true],
  ['file:///r/**/*.md', 'file:///r/a.md', true],
  ['file:///r/**/*.md', 'file:///r/x/y/a.md', true],
  ['file:///r/**/*.md', 'file:///r/x/y/a.mdx', false],
  ['?', 'a', true],
  ['?', '/', false],
  ['?', '', false],
  ['?', 'ab', false],
  ['?', '😀', true], // one code point
  ['a?c', 'abc', true],
  ['[abc]', 'b', true],
  ['[abc]', 'd', false],
  ['[a-z]x', 'qx', true],
  ['[a-z]x', 'Qx', false],
  ['[!a]', 'b', true],
  ['[!a]', 'a', false],
  ['[^a]', 'b', true],
  ['[!a]', '/', false], // classes never match '/'
  ['[]]', ']', true],
  ['[!]]', ']', false],
  ['[a-]', '-', true],
  ['[\\]]', ']', true],
  ['[é]', 'é', true],
  ['{a,b}', 'a', true],
  ['{a,b}', 'b', true],
  ['{a,b}', 'c', false],
  ['*.{md,txt}', 'x.txt', true],
  ['*.{md,txt}', 'x.rs', false],
  ['{a,{b,c}d}', 'cd', true],
  ['{a,{b,c}d}', 'c', false],
  ['{a,}x', 'x', true],
  ['{{{{{{{{{{a}}}}}}}}}}', 'a', true],
  ['a,b', 'a,b', true], // commas outside braces are literal
  ['a}', 'a}', true],
  ['\\*', '*', true],
  ['\\*', 'a', false],
  ['a/\\\\\\\\', 'a/\\\\', true],
  ['\\{a,b\\}', '{a,b}', true],
  ['*a*a*a*a*b', 'aaaaaaaaab', true],
  ['*a*a*a*a*b', 'aaaaaaaaaa', false],
];

describe('glob matching', () => {
  for (const [pattern, text, expected] of MATCHES) {
    it(`${JSON.stringify(pattern)} ${expected ? 'matches' : 'rejects'} ${JSON.stringify(text)}`, () => {
      assert.equal(compileGlob(pattern).match(text), expected);
    });
  }
});

describe('glob syntax errors', () => {
  const INVALID: [string, RegExp][] = [
    ['', /empty pattern/],
    ['[abc', /unclosed '\['/],
    ['[', /unclosed '\['/],
    ['[]', /unclosed '\['/],
    ['{a,b', /unclosed '\{'/],
    ['a{b', /unclosed '\{'/],
    ['abc\\', /trailing '\\' escapes nothing/],
    ['[z-a]', /invalid range 'z-a'/],
    ['x'.repeat(257), /maximum length of 256/],
    ['{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}', /exceeds 64 alternatives/], // 128
  ];
  for (const [pattern, detail] of INVALID) {
    it(`rejects ${JSON.stringify(pattern.slice(0, 40))}`, () => {
      assert.throws(
        () => compileGlob(pattern),
        (e: unknown) => e instanceof GlobSyntaxError && detail.test(e.detail) && e.pattern === pattern,
      );
    });
  }
  it('accepts exactly 256 characters and exactly 64 alternatives', () => {
    assert.ok(compileGlob('x'.repeat(256)).match('x'.repeat(256)));
    assert.ok(compileGlob('{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}').match('abbaba'));
  });
  it('maxLength can be raised for normalised patterns', () => {
    assert.ok(compileGlob('x'.repeat(300), { maxLength: Infinity }).match('x'.repeat(300)));
  });
});

describe('literalHead and extensions', () => {
  const TABLE: [string, string, string[] | null][] = [
    ['file:///r/src/*.ts', 'file:///r/src/', ['ts']],
    ['file:///r/src/**', 'file:///r/src/', null],
    ['file:///r/{a,b}/x.md', 'file:///r/', ['md']],
    ['file:///r/\\*x', 'file:///r/*x', null],
    ['*.{md,txt,md}', '', ['md', 'txt']],
    ['*.tar.gz', '', ['gz']],
    ['*.{tar.gz,zip}', '', ['gz', 'zip']],
    ['*.md*', '', null],
    ['*[.]md', '', null],
    ['Makefile', 'Makefile', null],
    ['.gitignore', '.gitignore', ['gitignore']],
    ['*.{md,}', '', null],
    ['*.c++', '', null],
    ['*.my_ext-2', '', ['my_ext-2']],
    ['{a}b*', 'ab', null], // a one-way group is plain text
    ['?x', '', null],
  ];
  for (const [pattern, head, exts] of TABLE) {
    it(pattern, () => {
      const g = compileGlob(pattern);
      assert.equal(g.literalHead, head);
      assert.deepEqual(g.extensions, exts);
    });
  }
});

describe('literals (for the name index)', () => {
  const TABLE: [string, string[] | null][] = [
    ['Makefile', ['Makefile']],
    ['{package,tsconfig}.json', ['package.json', 'tsconfig.json']],
    ['{a,{b,a}}', ['a', 'b']],
    ['br\\[1\\].txt', ['br[1].txt']],
    ['what\\?', ['what?']],
    ['{}', ['']],
    ['*.md', null],
    ['a?', null],
    ['[ab]', null],
    ['{a,b*}', null],
    ['**', null],
  ];
  for (const [pattern, literals] of TABLE) {
    it(pattern, () => assert.deepEqual(compileGlob(pattern).literals, literals));
  }
});

describe('automaton (what a compiled glob may hold in its MatchCache room)', () => {
  const TABLE: [string, boolean][] = [
    ['Makefile', false],
    ['*.md', false],
    ['src/*', false],
    ['file:///r/src/**', false],
    ['file:///r/src/**/*.md', true],
    ['*a*b', true],
    ['{a,b}.md', true],
    ['[ab]', true],
  ];
  for (const [pattern, automaton] of TABLE) {
    it(pattern, () => assert.equal(compileGlob(pattern).automaton, automaton));
  }
});

describe('mapGlobLiterals', () => {
  const upper = (s: string) => s.toUpperCase();
  it('maps literal runs only, keeping metachars and classes', () => {
    assert.equal(mapGlobLiterals('ab*cd?[ef]{gh,ij}/**/k', upper), 'AB*CD?[ef]{GH,IJ}/**/K');
  });
  it('re-escapes metachars that are literal', () => {
    assert.equal(mapGlobLiterals('a\\*b\\,c', (s) => s), 'a\\*b\\,c');
    const respelled = mapGlobLiterals('[!\\]a-]x', (s) => s);
    assert.ok(compileGlob(respelled).match('bx'));
    assert.ok(!compileGlob(respelled).match(']x'));
  });
  it('round-trips to the same matcher', () => {
    for (const [pattern, text, expected] of MATCHES) {
      if (pattern === '') continue;
      assert.equal(compileGlob(mapGlobLiterals(pattern, (s) => s)).match(text), expected, pattern);
    }
  });
});

describe('hostile patterns are bounded', () => {
  const big = 'a'.repeat(4096);
  const HOSTILE = [
    'a/\\\\\\\\',
    'a/\\\\\\\\\\\\\\\\\\\\\\\\',
    '*********a',
    '{{{{{{{{{{a}}}}}}}}}}',
    '{'.repeat(100) + 'a' + '}'.repeat(100),
    '**/**/**/**/**/x',
    '*a*a*a*a*a*a*a*a*b',
    '*a'.repeat(128),
    '**a'.repeat(85),
    '?'.repeat(256),
    '['.repeat(256),
    '{a,'.repeat(85),
    '{a,b,c,d,e,f,g,h}{a,b,c,d,e,f,g,h}', // 64
    '{a,b,c,d,e,f,g,h}{a,b,c,d,e,f,g,h}{a,b}', // 128: rejected
    '{' + 'a,'.repeat(127) + 'a}', // 128 alternatives: rejected
    '{' + '{a,b},'.repeat(30) + '}',
    '[!a-z]*'.repeat(36),
    '\\'.repeat(256),
    '\\'.repeat(255),
  ];
  for (const pattern of HOSTILE) {
    it(`${JSON.stringify(pattern.slice(0, 30))}${pattern.length > 30 ? '…' : ''} (${pattern.length} chars)`, () => {
      let g;
      try {
        g = compileGlob(pattern);
      } catch (e) {
        assert.ok(e instanceof GlobSyntaxError);
        return;
      }
      // Any answer will do; the point is that there is one.
      for (const text of [big, big + 'b', big.slice(0, 2048) + '/' + big.slice(0, 2047) + 'x', 'a/\\\\', '']) {
        assert.equal(typeof g.match(text), 'boolean');
      }
    });
  }
  it('*a*a*a*a*a*a*a*a*b against 4 KB answers correctly', () => {
    const g = compileGlob('*a*a*a*a*a*a*a*a*b');
    assert.equal(g.match(big), false);
    assert.equal(g.match(big + 'b'), true);
  });
});

describe('differential check against a regex reference on tiny inputs', () => {
  // [glob, equivalent regex]; stars are never adjacent (they would merge).
  const PIECES: [string, string][] = [
    ['a', 'a'],
    ['b', 'b'],
    ['/', '/'],
    ['.', '\\.'],
    ['é', 'é'],
    ['*', '[^/]*'],
    ['?', '[^/]'],
    ['[ab]', '[ab]'],
    ['[!a]', '[^a/]'],
    ['[a-b]', '[ab]'],
    ['{a,b/}', '(?:a|b/)'],
    ['{,a}', '(?:|a)'],
    ['{a,{b,.}}', '(?:a|(?:b|\\.))'],
    ['\\*', '\\*'],
    ['\\{', '\\{'],
    ['**', ''], // context-dependent, see below
  ];
  function randomPattern(rand: () => number): [string, string] {
    const picks: string[] = [];
    const n = 1 + Math.floor(rand() * 6);
    while (picks.length < n) {
      const [glob] = PIECES[Math.floor(rand() * PIECES.length)]!;
      const prev = picks.at(-1);
      if ((glob === '*' || glob === '**') && (prev === '*' || prev === '**')) continue;
      picks.push(glob);
    }
    let glob = '';
    let regex = '';
    for (let i = 0; i < picks.length; i++) {
      const piece = picks[i]!;
      glob += piece;
      if (piece !== '**') {
        regex += PIECES.find(([g]) => g === piece)![1];
        continue;
      }
      const segStart = i === 0 || picks[i - 1] === '/';
      if (segStart && picks[i + 1] === '/') {
        glob += '/';
        regex += '(?:.*/)?';
        i++;
      } else regex += '.*';
    }
    return [glob, regex];
  }
  function rng(seed: number) {
    let s = seed;
    return () => {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      return s / 2 ** 32;
    };
  }
  it('3,000 random patterns x 40 texts: NFA == regex, respelled == original', () => {
    const rand = rng(42);
    const CHARS = ['a', 'b', '/', '.', '*', 'é', '{'];
    for (let p = 0; p < 3000; p++) {
      const [glob, source] = randomPattern(rand);
      const reference = new RegExp(`^${source}$`, 'u');
      let g;
      try {
        g = compileGlob(glob);
      } catch (e) {
        assert.match((e as Error).message, /exceeds 64 alternatives/); // the only way these can fail
        continue;
      }
      const respelled = compileGlob(mapGlobLiterals(glob, (s) => s));
      for (let t = 0; t < 40; t++) {
        const text = Array.from({ length: Math.floor(rand() * 8) }, () => CHARS[Math.floor(rand() * CHARS.length)]).join('');
        const expected = reference.test(text);
        assert.equal(g.match(text), expected, `${glob} (${source}) on ${JSON.stringify(text)}`);
        assert.equal(respelled.match(text), expected, `respelled ${mapGlobLiterals(glob, (s) => s)} on ${text}`);
      }
    }
  });
  it('respelling keeps `**` + literal / and merged stars apart from `**/`', () => {
    for (const pattern of ['a**\\/b', '*{*}', '{*}**', 'x{**/a}', '{**/a,b}', 'a/{**/b}']) {
      const original = compileGlob(pattern);
      const respelled = compileGlob(mapGlobLiterals(pattern, (s) => s));
      for (const text of ['a/b', 'a//b', 'ab', 'a/x/b', 'x/a', 'xa', 'a', 'b', 'x/y/a', 'a/c/d']) {
        assert.equal(respelled.match(text), original.match(text), `${pattern} on ${text}`);
      }
    }
  });
});
