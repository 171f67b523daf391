// Key order in one place. Canonical URIs are ASCII (src/uri.ts), so JS string
// order, SQLite BINARY order and byte order agree; every range bound and
// keyset cursor in the project is computed with these.

/** The smallest string greater than every string starting with `prefix`; null when none is. */
export function succ(prefix: string): string | null {
  let end = prefix.length;
  while (end > 0 && prefix.charCodeAt(end - 1) === 0xffff) end--;
  if (end === 0) return null;
  return prefix.slice(0, end - 1) + String.fromCharCode(prefix.charCodeAt(end - 1) + 1);
}

