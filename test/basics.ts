// What every test needs, unit or end-to-end, and that loads no SDK client
// (importing the two clients costs a test file half a second of CPU): temp
// folders and trees, waiting for a condition, and a walk of the disk.
// test/helpers.ts re-exports all of it for the end-to-end suites.
import { linkSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WriteError, type WriteReason } from '../src/content/safe-write.ts';
import { makeRoot, type Root } from '../src/uri.ts';

/** A fresh temp folder, removed by the returned cleanup. */
export function tempDir(prefix = 'folder-mcp-test-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * The write tests' sandbox: a served folder holding `sub/a.txt` and, beside
 * it, a folder that is not served holding `secret.txt` (real paths both),
 * in a fresh temp dir that `base.cleanup()` removes.
 */
export function writeSandbox(prefix: string): { base: ReturnType<typeof tempDir>; served: string; outside: string; roots: Root[] } {
  const base = tempDir(prefix);
  const served = join(realpathSync(base.path), 'served');
  const outside = join(realpathSync(base.path), 'outside');
  writeTree(served, { 'sub/a.txt': 'a\n' });
  writeTree(outside, { 'secret.txt': 'secret\n' });
  return { base, served, outside, roots: [makeRoot(served)] };
}

/** Writes files (path -> content) under `root`, creating folders; a path ending in '/' is a folder. */
export function writeTree(root: string, files: Record<string, string | Uint8Array>): void {
  for (const [rel, content] of Object.entries(files)) {
    const path = join(root, rel);
    if (rel.endsWith('/')) {
      mkdirSync(path, { recursive: true });
      continue;
    }
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  }
}

/**
 * A tree of thousands of entries, for the tests that need a scan to take a
 * while or a page budget to run out: `count` files at `pathOf(0)`,
 * `pathOf(1)`, ..., folders made as needed, each holding `content`.
 *
 * Every file after the first is a hard link to the first: a name costs one
 * link(2) instead of a new inode, which on ext4 is some twenty times faster
 * to make and to remove. The scan (readdir + lstat) and the watchers see
 * ordinary files; tests that are about writes (a burst of new files, a file
 * written while it is read) write them instead.
 */
export function bigTree(root: string, count: number, pathOf: (i: number) => string, content = ''): void {
  const made = new Set<string>();
  let first: string | undefined;
  for (let i = 0; i < count; i++) {
    const path = join(root, pathOf(i));
    const dir = dirname(path);
    if (!made.has(dir)) {
      mkdirSync(dir, { recursive: true });
      made.add(dir);
    }
    if (first === undefined) writeFileSync((first = path), content);
    else linkSync(first, path);
  }
}

/** Waits until `condition` returns a truthy value, polling; throws after `timeoutMs`. */
export async function waitFor<T>(condition: () => T | Promise<T>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const started = performance.now();
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    // A costly condition (a whole listing, paged) polled back to back would take the CPU from the
    // server it waits for: pause at least as long as the check took.
    await new Promise((r) => setTimeout(r, Math.max(25, performance.now() - started)));
  }
}

/**
 * Every URI that should be served under `root`: a plain walk of the disk that
 * skips .git, node_modules and the names in `skip` (the test trees' ignore rules).
 */
export function diskUris(root: string, skip: (name: string, isDir: boolean) => boolean = () => false): string[] {
  const out: string[] = [pathToFileURL(root).href + '/'];
  const walk = (dir: string) => {
    for (const dirent of readdirSync(dir, { withFileTypes: true })) {
      if (dirent.name === '.git' || dirent.name === 'node_modules' || skip(dirent.name, dirent.isDirectory())) continue;
      const path = join(dir, dirent.name);
      if (dirent.isDirectory()) {
        out.push(pathToFileURL(path).href + '/');
        walk(path);
      } else if (dirent.isFile()) {
        out.push(pathToFileURL(path).href);
      }
    }
  };
  walk(root);
  return out.sort();
}

/** How a write through src/content/safe-write.ts ended: 'ok', or the WriteError's reason (anything else is thrown). */
export async function writeReason(promise: Promise<unknown>): Promise<WriteReason | 'ok'> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (error instanceof WriteError) return error.reason;
    throw error;
  }
}
