import ignore, { type Ignore } from 'ignore';
import { readFileSync } from 'node:fs';
import { below, join } from '../fs-path.ts';
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
    this.byDir.set(dir, gitignoreText === null ? null : ignore().add(gitignoreText));
  }

  /** Forgets what is known of `dir`'s .gitignore (it changed on disk). */
  invalidate(dir: string): void {
    this.byDir.delete(dir);
  }

  /** Is the entry at absPath ignored, by its own name or any ancestor's rules? */
  isIgnored(absPath: string, isDirectory: boolean): boolean {
    const root = findRoot(this.roots, absPath);
    if (!root) return true;
    if (absPath === root.path) return false;
    const rel = below(root.path, absPath);
    const parts = rel.split('/');
    for (const part of parts) if (isAlwaysExcluded(part)) return true;
    if (this.exclude && this.exclude.ignores(asIgnorePath(rel, isDirectory))) return true;
    // Each ancestor's .gitignore judges the path relative to that ancestor;
    // `ignore` also checks the path's parent directories, as git does.
    let dir = root.path;
    for (let i = 0; i < parts.length; i++) {
      const rules = this.rulesOf(dir);
      if (rules && rules.ignores(asIgnorePath(parts.slice(i).join('/'), isDirectory))) return true;
      dir = join(dir, parts[i]!);
    }
    return false;
  }

  /**
   * Rules of one directory; reads its .gitignore on first use (the watcher
   * asks about directories the scan may not have recorded).
   */
  private rulesOf(dir: string): Ignore | null {
    if (!this.options.gitignore) return null;
    const known = this.byDir.get(dir);
    if (known !== undefined) return known;
    let text: string | null = null;
    try {
      text = readFileSync(join(dir, '.gitignore'), 'utf8');
    } catch {
      // No .gitignore here (or unreadable): no rules from this directory.
    }
    this.setDirRules(dir, text);
    return this.byDir.get(dir) ?? null;
  }
}

function asIgnorePath(rel: string, isDirectory: boolean): string {
  return isDirectory ? `${rel}/` : rel;
}
