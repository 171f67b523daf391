import ignore, { type Ignore } from 'ignore';
import { readFileSync } from 'node:fs';
import { below, dirname, join } from '../fs-path.ts';
import type { Root } from '../uri.ts';
import { findRoot } from '../uri.ts';
import { LOCK_FILE_PREFIX } from '../content/file-locks.ts';

/** Directory names never served, whatever the ignore files say. */
export const ALWAYS_EXCLUDED = new Set(['.git', 'node_modules']);

/** Is an entry of this name left out wherever it is, whatever the rules: `.git`, `node_modules`, a write's lock file (never listed, searched or watched). */
export function isAlwaysExcluded(name: string): boolean {
  return ALWAYS_EXCLUDED.has(name) || name.startsWith(LOCK_FILE_PREFIX);
}

export interface IgnoreOptions {
  /** Honour `.gitignore` files at every level (default true). */
  gitignore: boolean;
  /** Extra patterns in .gitignore syntax, relative to each root (`--exclude`). */
  exclude: readonly string[];
}

/**
 * The one ignore decision, shared by the scan and the watcher so that both
 * agree on what exists. Rules of a directory's `.gitignore` apply beneath it,
 * with paths relative to that directory, as git does.
 */
export class IgnoreRules {
  private readonly exclude: Ignore | null;
  /** dir -> its own .gitignore rules, or null when it has none. */
  private readonly byDir = new Map<string, Ignore | null>();
  /**
   * dir -> the rules that judge what is in it: its own and its ancestors'
   * (up to its root), only those that have any, outermost first. Made from
   * its parent's, so a path costs one look-up here, not one a level: at the
   * bottom of a chain of 2,000 folders, each entry's check joined and looked
   * up 2,000 ever longer paths, and one rename there held the main thread
   * 34 s (a red-team pass). Forgotten whole when any folder's rules change.
   */
  private chains = new Map<string, readonly DirRules[]>();

  constructor(
    private readonly roots: readonly Root[],
    private readonly options: IgnoreOptions,
  ) {
    this.exclude = options.exclude.length > 0 ? ignore().add([...options.exclude]) : null;
  }

  /** True when --exclude patterns apply everywhere; else only a .gitignore on the path can ignore anything. */
  get hasExcludes(): boolean {
    return this.exclude !== null;
  }

  /** Records the `.gitignore` text of `dir` (null: it has none). Called by the scan as it reads. */
  setDirRules(dir: string, gitignoreText: string | null): void {
    if (!this.options.gitignore) return;
    const had = this.byDir.get(dir);
    this.byDir.set(dir, gitignoreText === null ? null : ignore().add(gitignoreText));
    // A chain was made with what was known then: none (null), or read from the disk on first use (undefined).
    if (gitignoreText !== null || (had !== null && had !== undefined)) this.chains = new Map();
  }

  /** Forgets what is known of `dir`'s .gitignore (it changed on disk). */
  invalidate(dir: string): void {
    this.byDir.delete(dir);
    this.chains = new Map();
  }

  /** Is the entry at absPath ignored, by its own name or any ancestor's rules? */
  isIgnored(absPath: string, isDirectory: boolean): boolean {
    const root = findRoot(this.roots, absPath);
    if (!root) return true;
    if (absPath === root.path) return false;
    const rel = below(root.path, absPath);
    for (const part of rel.split('/')) if (isAlwaysExcluded(part)) return true;
    if (this.exclude && this.exclude.ignores(asIgnorePath(rel, isDirectory))) return true;
    if (!this.options.gitignore) return false;
    // Each ancestor's .gitignore judges the path relative to that ancestor;
    // `ignore` also checks the path's parent directories, as git does.
    for (const { dir, rules } of this.chainOf(dirname(absPath), root.path)) {
      if (rules.ignores(asIgnorePath(below(dir, absPath), isDirectory))) return true;
    }
    return false;
  }

  /** The rules that judge what is in `dir` (see `chains`), made from the nearest ancestor's known. */
  private chainOf(dir: string, rootPath: string): readonly DirRules[] {
    const missing: string[] = [];
    let at = dir;
    let chain = this.chains.get(at);
    while (chain === undefined) {
      missing.push(at);
      if (at === rootPath) {
        chain = NO_RULES;
        break;
      }
      at = dirname(at);
      chain = this.chains.get(at);
    }
    for (let i = missing.length - 1; i >= 0; i--) {
      const rules = this.rulesOf(missing[i]!);
      if (rules) chain = [...chain, { dir: missing[i]!, rules }];
      this.chains.set(missing[i]!, chain);
    }
    return chain;
  }

  /**
   * Rules of one directory; reads its .gitignore on first use (the watcher
   * asks about directories the scan may not have recorded).
   */
  private rulesOf(dir: string): Ignore | null {
    const known = this.byDir.get(dir);
    if (known !== undefined) return known;
    let text: string | null = null;
    try {
      text = readFileSync(join(dir, '.gitignore'), 'utf8');
    } catch {
      // No .gitignore here (or unreadable): no rules from this directory.
    }
    this.byDir.set(dir, text === null ? null : ignore().add(text));
    return this.byDir.get(dir) ?? null;
  }
}

/** A folder's own .gitignore rules, with the folder. */
interface DirRules {
  dir: string;
  rules: Ignore;
}

const NO_RULES: readonly DirRules[] = [];

function asIgnorePath(rel: string, isDirectory: boolean): string {
  return isDirectory ? `${rel}/` : rel;
}
