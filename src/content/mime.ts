import mime from 'mime-types';

export const COLLECTION_MIME = 'inode/directory';
export const TEXT_FALLBACK_MIME = 'text/plain';
export const BINARY_FALLBACK_MIME = 'application/octet-stream';

/**
 * Source-code extensions that mime-types gets wrong for a project folder
 * (`.ts` is MPEG transport stream there, `.rs` an XML format) or does not know.
 */
const SOURCE_TYPES: Record<string, string> = {
  ts: 'text/typescript',
  mts: 'text/typescript',
  cts: 'text/typescript',
  tsx: 'text/tsx',
  jsx: 'text/jsx',
  rs: 'text/rust',
  py: 'text/x-python',
  go: 'text/x-go',
  rb: 'text/x-ruby',
  kt: 'text/x-kotlin',
  swift: 'text/x-swift',
  vue: 'text/x-vue',
  lock: 'text/plain',
  cfg: 'text/plain',
  env: 'text/plain',
  gitignore: 'text/plain',
  sum: 'text/plain',
  mod: 'text/plain',
};

/**
 * MIME type from the file name alone, or undefined when the name says
 * nothing (the caller then sniffs the content).
 */
export function mimeFromName(name: string, ext: string): string | undefined {
  if (ext === '' || ext === name.slice(1)) {
    // No extension, or a dotfile such as `.gitignore`: only the table knows it.
    return ext === '' ? undefined : SOURCE_TYPES[ext];
  }
  const known = SOURCE_TYPES[ext] ?? SOURCE_TYPES[ext.toLowerCase()];
  if (known) return known;
  const looked = mime.lookup(name);
  return looked === false ? undefined : looked;
}

/** `ext` column value: the text after the last '.', case kept ('' when none). */
export function extOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot === -1 ? '' : name.slice(dot + 1);
}

/**
 * What a MIME type says of a file's bytes, the one rule for it: `text` (a
 * known text type: read as text, searched), `binary` (media, archives, office
 * files, sniffed binary: never opened as text), or `unknown` (another
 * application/ type: a collection read opens it and keeps it only if it
 * decodes as text; the content index leaves it out).
 */
export function textKind(mimeType: string): 'text' | 'binary' | 'unknown' {
  const [type = '', subtype = ''] = mimeType.split('/');
  if (type === 'text' || subtype.endsWith('+xml') || subtype.endsWith('+json')) return 'text';
  if (type === 'application' && TEXT_APPLICATION.test(subtype)) return 'text';
  if (type === 'image' || type === 'audio' || type === 'video' || type === 'font' || type === 'model') return 'binary';
  if (type !== 'application') return 'unknown';
  return BINARY_APPLICATION.test(subtype) ? 'binary' : 'unknown';
}

const TEXT_APPLICATION =
  /^(json|xml|javascript|ecmascript|x-javascript|typescript|toml|yaml|x-yaml|x-sh|x-shellscript|sql|graphql|x-tex|x-latex|x-httpd-php|x-perl|x-ruby|x-python|x-ndjson|x-sql|x-csh)$/;

const BINARY_APPLICATION =
  /^(octet-stream|pdf|zip|gzip|x-gzip|x-tar|x-bzip2?|x-xz|x-7z-compressed|x-rar-compressed|zstd|java-archive|wasm|vnd\.|msword|x-msdownload|x-executable|x-mach-binary|x-sharedlib|x-sqlite3)/;
