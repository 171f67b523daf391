// Our own glob dialect (docs/listing.md, Glob dialect), compiled to a Thompson NFA and
// run state-set by state-set, so matching costs O(pattern x text) whatever the
// pattern: patterns come from clients. Not picomatch: 4.0.7 never returns from
// compiling `a/\\\\`, and any translation to a backtracking regex can blow up
// on `*a*a*a*a*b`.
//
// Dialect: case-sensitive; `*` any run without '/'; `**` any run (as a whole
// segment, `a/**/b` also matches `a/b`); `?` one char but '/'; classes `[abc]`,
// `[a-z]`, `[!x]`, `[^x]` (never match '/'); braces `{a,b}`, nested, at most
// 64 alternatives in all (`{a}` is a one-way alternation, not literal text);
// `\` escapes the next char. Leading dots are ordinary chars. Text and pattern
// are walked by code point, so `?` matches one emoji.

export const MAX_PATTERN_LENGTH = 256;
export const MAX_BRACE_ALTERNATIVES = 64;

/** A client's glob is malformed; `detail` says how, for the SEP-2564 message. */
export class GlobSyntaxError extends Error {
  constructor(
    readonly pattern: string,
    readonly detail: string,
  ) {
    super(`invalid glob '${shownPattern(pattern)}': ${detail}`);
    this.name = 'GlobSyntaxError';
  }
}

/**
 * A pattern as an error repeats it: its first MAX_PATTERN_LENGTH characters
 * (a longer one is refused anyway), then its length. A 900 KB pattern was
 * echoed whole, a 921,749-byte error (a red-team finding).
 */
export function shownPattern(pattern: string): string {
  return pattern.length <= MAX_PATTERN_LENGTH ? pattern : `${pattern.slice(0, MAX_PATTERN_LENGTH)}… (${pattern.length} characters)`;
}

export interface CompiledGlob {
  readonly source: string;
  /** Text every match starts with: the pattern up to its first metachar (or brace), unescaped. */
  readonly literalHead: string;
  /** Every possible `ext` of a matching name, when each alternative ends in `.LIT`; else null. */
  readonly extensions: string[] | null;
  /** Every text the pattern matches, when it has no wildcard or class (braces allowed); else null. */
  readonly literals: string[] | null;
  /**
   * The work match() has done so far, in steps (automaton states visited per
   * char, plus a fixed cost per run; the string-method shapes count far less).
   * The pager charges it to its scan budget, so costly patterns give short
   * pages, not a stalled server.
   */
  readonly work: number;
  /** True when match() runs the automaton, whose cache of state sets takes room in the MatchCache. */
  readonly automaton: boolean;
  match(text: string): boolean;
}

export interface GlobOptions {
  /** Length limit in UTF-16 units; normalised patterns (percent-encoded) may exceed the wire limit. */
  maxLength?: number;
  /** Room for cached state sets, shared by the patterns of one query (default: a room of this pattern's own). */
  cache?: MatchCache;
}

/**
 * Room for the state sets and moves that matchers cache, in units of about
 * one array slot. Shared by the globs of one query, so 200 costly patterns
 * hold a few MB at most, not a few hundred; a matcher that finds no room
 * drops its own cache and works on uncached (slower, never wrong).
 */
export class MatchCache {
  constructor(public room = 1 << 18) {}
}

type Atom =
  | { readonly k: 'lit'; readonly cp: number }
  | { readonly k: 'one' } // ?
  | { readonly k: 'star' } // *
  | { readonly k: 'globstar' } // ** anywhere but a whole segment
  | { readonly k: 'dirs' } // `**/` as a whole segment: '' or any run ending in '/'
  | { readonly k: 'class'; readonly negate: boolean; readonly ranges: readonly number[] }
  | { readonly k: 'alt'; readonly alts: readonly Atom[][] };

const SLASH = 0x2f;
const EXT_RE = /^[A-Za-z0-9_-]+$/;

export function compileGlob(pattern: string, options: GlobOptions = {}): CompiledGlob {
  const maxLength = options.maxLength ?? MAX_PATTERN_LENGTH;
  if (pattern.length === 0) throw new GlobSyntaxError(pattern, 'empty pattern');
  if (pattern.length > maxLength) {
    throw new GlobSyntaxError(pattern, `pattern exceeds maximum length of ${maxLength} characters`);
  }
  const seq = new Parser(pattern).parse();
  if (countAlternatives(seq) > MAX_BRACE_ALTERNATIVES) {
    throw new GlobSyntaxError(pattern, `brace expansion exceeds ${MAX_BRACE_ALTERNATIVES} alternatives`);
  }
  const meter: Meter = { steps: 0 };
  const fast = fastMatcher(seq);
  return {
    source: pattern,
    literalHead: literalHead(seq),
    extensions: extensions(seq),
    literals: literals(seq),
    get work() {
      return meter.steps;
    },
    automaton: fast === null,
    match: fast
      ? (text) => {
          meter.steps += 1 + (text.length >> 4); // a string method walks the text once, far faster than a step
          return fast(text);
        }
      : nfaMatcher(seq, meter, options.cache ?? new MatchCache()),
  };
}

/**
 * Rewrites the literal text of a valid pattern with `map` (e.g. URI
 * canonicalisation) and respells it canonically, metachars left as they are.
 * Class members are kept as written: one class matches one char, and a mapping
 * that percent-encodes would turn it into several.
 */
export function mapGlobLiterals(pattern: string, map: (literal: string) => string): string {
  const out = serialize(new Parser(pattern).parse(), map);
  return out === '' ? '{}' : out; // `{}` matches only ''; keep it a valid (non-empty) pattern
}

// ---- parsing ---------------------------------------------------------------

class Parser {
  private readonly cps: number[];
  private i = 0;

  constructor(private readonly pattern: string) {
    this.cps = Array.from(pattern, (c) => c.codePointAt(0)!);
  }

  parse(): Atom[] {
    return this.seq(0, true);
  }

  private fail(detail: string): never {
    throw new GlobSyntaxError(this.pattern, detail);
  }

  /** A sequence; inside braces (depth > 0) it ends at an unescaped ',' or '}'. */
  private seq(depth: number, segStart: boolean): Atom[] {
    const out: Atom[] = [];
    const cps = this.cps;
    while (this.i < cps.length) {
      const c = cps[this.i]!;
      if (depth > 0 && (c === 0x2c || c === 0x7d)) break; // , }
      this.i++;
      if (c === 0x5c) {
        // backslash
        const next = cps[this.i++];
        if (next === undefined) this.fail("trailing '\\' escapes nothing");
        out.push({ k: 'lit', cp: next });
      } else if (c === 0x2a) {
        // *
        let stars = 1;
        while (cps[this.i] === 0x2a) {
          stars++;
          this.i++;
        }
        const last = out.at(-1);
        const atSegStart = last === undefined ? segStart : last.k === 'lit' && last.cp === SLASH;
        if (stars === 1) pushStar(out, { k: 'star' });
        else if (atSegStart && cps[this.i] === SLASH) {
          this.i++;
          out.push({ k: 'dirs' });
        } else pushStar(out, { k: 'globstar' });
      } else if (c === 0x3f) out.push({ k: 'one' });
      else if (c === 0x5b) out.push(this.cls());
      else if (c === 0x7b) {
        const last = out.at(-1);
        const atSegStart = last === undefined ? segStart : last.k === 'lit' && last.cp === SLASH;
        const alts = this.alternatives(depth, atSegStart);
        // A one-way group is just its content: keeps literalHead and fast paths.
        if (alts.length === 1) {
          for (const a of alts[0]!) {
            if (a.k === 'star' || a.k === 'globstar') pushStar(out, a);
            else out.push(a);
          }
        } else out.push({ k: 'alt', alts });
      } else out.push({ k: 'lit', cp: c });
    }
    return out;
  }

  private alternatives(depth: number, segStart: boolean): Atom[][] {
    const alts: Atom[][] = [];
    for (;;) {
      alts.push(this.seq(depth + 1, segStart));
      const c = this.cps[this.i++];
      if (c === undefined) this.fail("unclosed '{'");
      if (c === 0x7d) return alts;
    }
  }

  private cls(): Atom {
    const cps = this.cps;
    let negate = false;
    if (cps[this.i] === 0x21 || cps[this.i] === 0x5e) {
      negate = true;
      this.i++;
    }
    const ranges: number[] = [];
    const member = (): number => {
      let c = cps[this.i++];
      if (c === 0x5c) c = cps[this.i++];
      if (c === undefined) this.fail("unclosed '['");
      return c;
    };
    for (let first = true; ; first = false) {
      if (cps[this.i] === 0x5d && !first) {
        this.i++;
        return { k: 'class', negate, ranges };
      }
      const lo = member();
      let hi = lo;
      if (cps[this.i] === 0x2d && cps[this.i + 1] !== undefined && cps[this.i + 1] !== 0x5d) {
        this.i++;
        hi = member();
        if (hi < lo) {
          this.fail(`invalid range '${String.fromCodePoint(lo)}-${String.fromCodePoint(hi)}' in '[...]'`);
        }
      }
      ranges.push(lo, hi);
    }
  }
}

/**
 * Adjacent stars (`*{*}`) merge: `*` twice is `*`, and with a `**` it is `**`.
 * Besides a smaller automaton, this keeps the respelling of mapGlobLiterals
 * from turning two `*` into one `**`.
 */
function pushStar(out: Atom[], atom: { k: 'star' } | { k: 'globstar' }): void {
  const last = out.at(-1);
  if (last?.k === 'star' || last?.k === 'globstar') {
    if (atom.k === 'globstar') out[out.length - 1] = atom;
  } else out.push(atom);
}

function countAlternatives(seq: readonly Atom[]): number {
  let n = 1;
  for (const atom of seq) {
    if (atom.k !== 'alt') continue;
    let sum = 0;
    for (const alt of atom.alts) sum += countAlternatives(alt);
    // Clamp so deep nesting cannot overflow to Infinity/NaN.
    n = Math.min(n * sum, MAX_BRACE_ALTERNATIVES + 1);
  }
  return n;
}

/** All brace-free spellings; only called once the count is known to be <= 64. */
function expand(seq: readonly Atom[]): Atom[][] {
  let out: Atom[][] = [[]];
  for (const atom of seq) {
    if (atom.k !== 'alt') {
      for (const o of out) o.push(atom);
      continue;
    }
    const tails = atom.alts.flatMap(expand);
    out = out.flatMap((o) => tails.map((t) => [...o, ...t]));
  }
  return out;
}

function literalHead(seq: readonly Atom[]): string {
  let head = '';
  for (const atom of seq) {
    if (atom.k !== 'lit') break;
    head += String.fromCodePoint(atom.cp);
  }
  return head;
}

function literals(seq: readonly Atom[]): string[] | null {
  const out = new Set<string>();
  for (const alt of expand(seq)) {
    if (!alt.every((a) => a.k === 'lit')) return null;
    out.add(literalHead(alt));
  }
  return [...out].sort();
}

function trailingLiteral(seq: readonly Atom[]): string {
  let tail = '';
  for (let i = seq.length - 1; i >= 0; i--) {
    const atom = seq[i]!;
    if (atom.k !== 'lit') break;
    tail = String.fromCodePoint(atom.cp) + tail;
  }
  return tail;
}

function extensions(seq: readonly Atom[]): string[] | null {
  const exts = new Set<string>();
  for (const alt of expand(seq)) {
    // A name ending in `.LIT` (LIT without '.') has ext LIT exactly.
    const tail = trailingLiteral(alt);
    const dot = tail.lastIndexOf('.');
    const ext = dot < 0 ? '' : tail.slice(dot + 1);
    if (!EXT_RE.test(ext)) return null;
    exts.add(ext);
  }
  return [...exts].sort();
}

function serialize(seq: readonly Atom[], map: (literal: string) => string): string {
  let out = '';
  let run = '';
  let afterGlobstar = false;
  const flush = () => {
    if (run === '') return;
    const text = escapeLiteral(map(run));
    // `**` then a literal '/' must not read back as the segment form `**/`.
    out += afterGlobstar && text.startsWith('/') ? '\\' + text : text;
    run = '';
  };
  for (const atom of seq) {
    if (atom.k === 'lit') {
      run += String.fromCodePoint(atom.cp);
      continue;
    }
    flush();
    afterGlobstar = atom.k === 'globstar';
    if (atom.k === 'one') out += '?';
    else if (atom.k === 'star') out += '*';
    else if (atom.k === 'globstar') out += '**';
    else if (atom.k === 'dirs') out += '**/';
    else if (atom.k === 'alt') out += '{' + atom.alts.map((a) => serialize(a, map)).join(',') + '}';
    else {
      out += atom.negate ? '[!' : '[';
      for (let i = 0; i < atom.ranges.length; i += 2) {
        const lo = atom.ranges[i]!;
        const hi = atom.ranges[i + 1]!;
        out += escapeClassMember(lo) + (hi === lo ? '' : '-' + escapeClassMember(hi));
      }
      out += ']';
    }
  }
  flush();
  return out;
}

function escapeLiteral(text: string): string {
  return text.replace(/[\\*?[\]{},]/g, '\\$&');
}

function escapeClassMember(cp: number): string {
  const ch = String.fromCodePoint(cp);
  return '\\]-!^'.includes(ch) ? '\\' + ch : ch;
}

// ---- matching --------------------------------------------------------------

/** Common shapes answered with string methods, no automaton. */
function fastMatcher(seq: readonly Atom[]): ((text: string) => boolean) | null {
  const lits = (from: number, to: number) => seq.slice(from, to).every((a) => a.k === 'lit');
  const text = (from: number, to: number) => literalHead(seq.slice(from, to));
  const n = seq.length;
  if (lits(0, n)) {
    const lit = text(0, n);
    return (t) => t === lit;
  }
  const first = seq[0]!;
  const last = seq[n - 1]!;
  if (first.k === 'star' && lits(1, n)) {
    const suffix = text(1, n);
    return (t) => {
      const k = t.length - suffix.length; // the part `*` must cover
      return k >= 0 && t.endsWith(suffix) && (k === 0 || t.lastIndexOf('/', k - 1) < 0);
    };
  }
  if (last.k === 'star' && lits(0, n - 1)) {
    const head = text(0, n - 1);
    return (t) => t.startsWith(head) && t.indexOf('/', head.length) < 0;
  }
  if (last.k === 'globstar' && lits(0, n - 1)) {
    const head = text(0, n - 1);
    return (t) => t.startsWith(head);
  }
  return null;
}

type CharTest = (cp: number) => boolean;
const anyChar: CharTest = () => true;
const notSlash: CharTest = (cp) => cp !== SLASH;
const isSlash: CharTest = (cp) => cp === SLASH;

/**
 * States live in parallel arrays: a char state has a test and one out; a split
 * state (test null) has epsilon outs; the accept state has neither. Every loop
 * passes through a char state, so epsilon closures terminate.
 */
/** What starting a run costs (setup, closures), in steps: about as much as 16 states visited. */
const RUN_STEPS = 16;

/** Counts matching work; one per compiled pattern. */
interface Meter {
  steps: number;
}

function nfaMatcher(seq: readonly Atom[], meter: Meter, cache: MatchCache): (text: string) => boolean {
  const tests: (CharTest | null)[] = [];
  const outs: number[][] = [];
  const add = (test: CharTest | null, out: number[]): number => {
    tests.push(test);
    outs.push(out);
    return tests.length - 1;
  };
  const loop = (test: CharTest, next: number): number => {
    const split = add(null, []);
    outs[split] = [add(test, [split]), next];
    return split;
  };
  const atom = (a: Atom, next: number): number => {
    switch (a.k) {
      case 'lit':
        return add((cp) => cp === a.cp, [next]);
      case 'one':
        return add(notSlash, [next]);
      case 'star':
        return loop(notSlash, next);
      case 'globstar':
        return loop(anyChar, next);
      case 'dirs': {
        // ('' | .*/): skip, or any chars and then a '/'.
        const inner = add(null, []);
        outs[inner] = [add(anyChar, [inner]), add(isSlash, [next])];
        return add(null, [inner, next]);
      }
      case 'class':
        return add(classTest(a.negate, a.ranges), [next]);
      case 'alt':
        return add(null, a.alts.map((alt) => sequence(alt, next)));
    }
  };
  const sequence = (atoms: readonly Atom[], next: number): number => {
    for (let i = atoms.length - 1; i >= 0; i--) next = atom(atoms[i]!, next);
    return next;
  };
  const accept = add(null, []);
  const start = sequence(seq, accept);
  const sim = new Simulation(tests, outs, start, accept, meter, cache);
  return (text) => sim.run(text);
}

function classTest(negate: boolean, ranges: readonly number[]): CharTest {
  return (cp) => {
    if (cp === SLASH) return false;
    let inside = false;
    for (let i = 0; i < ranges.length && !inside; i += 2) inside = cp >= ranges[i]! && cp <= ranges[i + 1]!;
    return inside !== negate;
  };
}

/** A set of NFA states (char states and accept, after closure), with its outgoing moves as found. */
interface DState {
  readonly states: readonly number[];
  readonly accepting: boolean;
  /** False for a set built without room to keep it: its moves are not kept either. */
  readonly kept: boolean;
  /** Code point -> next set (null: no state survives). */
  readonly next: Map<number, DState | null>;
}

/** What a cached move takes from the room: a map entry weighs a few array slots. */
const MOVE_UNITS = 4;

/**
 * Runs the state set over the text, and remembers each set it builds and each
 * move between sets (a lazy DFA, as RE2 does): once a set's move on a char is
 * known, a step is a map lookup, not a walk over the set. A 10,000-char URI
 * against `**a**a**a...` costs a lookup per char, not 250 states per char.
 * Scratch space is allocated once per pattern and reused (a page scan matches
 * thousands of rows); `gen` stamps which step a state was last added in, so
 * nothing is cleared between steps.
 */
class Simulation {
  private readonly mark: Uint32Array;
  private readonly stack: number[] = [];
  private gen = 0;
  private readonly sets = new Map<string, DState>();
  /** Units of the shared room this matcher's cache holds. */
  private held = 0;
  private first: DState | null = null;

  constructor(
    private readonly tests: readonly (CharTest | null)[],
    private readonly outs: readonly number[][],
    private readonly start: number,
    private readonly accept: number,
    private readonly meter: Meter,
    private readonly cache: MatchCache,
  ) {
    this.mark = new Uint32Array(tests.length);
  }

  run(text: string): boolean {
    const meter = this.meter;
    meter.steps += RUN_STEPS;
    let d = this.first ?? (this.first = this.initial());
    for (let i = 0; i < text.length; ) {
      const cp = text.codePointAt(i)!;
      i += cp > 0xffff ? 2 : 1;
      let n = d.next.get(cp);
      if (n === undefined) {
        meter.steps += d.states.length;
        n = this.move(d, cp);
      } else meter.steps += 1;
      if (n === null) return false;
      d = n;
    }
    return d.accepting;
  }

  private initial(): DState {
    this.step();
    const list: number[] = [];
    this.close(this.start, list);
    return this.intern(list);
  }

  private move(d: DState, cp: number): DState | null {
    this.step();
    const list: number[] = [];
    for (const s of d.states) {
      const test = this.tests[s];
      if (test && test(cp)) this.close(this.outs[s]![0]!, list);
    }
    const n = list.length === 0 ? null : this.intern(list);
    if (d.kept && this.take(MOVE_UNITS)) d.next.set(cp, n);
    return n;
  }

  private intern(list: number[]): DState {
    // No room even after dropping this cache (other patterns hold it): skip the key work.
    if (this.cache.room + this.held < 2 * list.length + 2) {
      return { states: list, accepting: list.includes(this.accept), kept: false, next: new Map() };
    }
    list.sort((a, b) => a - b);
    const key = list.join(',');
    let d = this.sets.get(key);
    if (d === undefined) {
      // The set's array and its key string.
      const kept = this.take(2 * list.length + 2);
      d = { states: list, accepting: list.includes(this.accept), kept, next: new Map() };
      if (kept) this.sets.set(key, d);
    }
    return d;
  }

  /**
   * Takes room for a cache entry. Without room, drops this cache and gives
   * its room back (sets in use by the current run stay valid, just
   * uncached); the entry is cached only if the room then suffices.
   */
  private take(units: number): boolean {
    if (this.cache.room < units) {
      this.cache.room += this.held;
      this.held = 0;
      this.sets.clear();
      this.first = null;
      if (this.cache.room < units) return false;
    }
    this.cache.room -= units;
    this.held += units;
    return true;
  }

  private step(): void {
    if (++this.gen === 0xffffffff) {
      this.mark.fill(0);
      this.gen = 1;
    }
  }

  /** Adds the epsilon closure of `s` to `list`, each state once per step. */
  private close(s: number, list: number[]): void {
    const { mark, stack, tests, outs, gen, accept } = this;
    stack.push(s);
    while (stack.length > 0) {
      const t = stack.pop()!;
      if (mark[t] === gen) continue;
      mark[t] = gen;
      if (tests[t] === null && t !== accept) for (const o of outs[t]!) stack.push(o);
      else list.push(t);
    }
  }
}
