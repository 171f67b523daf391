// Tool arguments -> the list filter model (src/query). `find` and `search`
// take globs relative to the served folders, as a model writes them; here they
// become a ListQuery over canonical URIs, so the planner turns their literal
// heads into key ranges exactly as for resources/list.
import type { ListQuery } from '../query/filter.ts';
import { compileGlob, GlobSyntaxError, mapGlobLiterals, shownPattern } from '../query/glob.ts';
import type { Root } from '../uri.ts';
import { encodeRelative, escapeGlob, isUriText, prefixUris, relativeGlobs } from './paths.ts';
import { ToolFailure } from './tool.ts';
import { canonicalUriText } from '../uri.ts';

export interface ScopeArgs {
  /** Globs on the path relative to a served folder (`src/**\/*.ts`), or on the whole URI when they start with `file:`. */
  glob?: string[];
  /** Globs on the base name (`*.md`). */
  name?: string[];
  /** A path prefix relative to a served folder, or a URI prefix. */
  prefix?: string;
}

const MAX_GLOBS = 100;

/** A ListQuery for the arguments; throws ToolFailure with the pattern's problem. */
export function scopeQuery(args: ScopeArgs, roots: readonly Root[]): ListQuery {
  const query: ListQuery = { method: 'resources/list' };
  const globs = args.glob ?? [];
  const names = args.name ?? [];
  if (globs.length > MAX_GLOBS || names.length > MAX_GLOBS) {
    throw new ToolFailure(`Too many patterns: at most ${MAX_GLOBS} globs and ${MAX_GLOBS} names`);
  }
  for (const p of globs) checkGlob('glob', p);
  for (const p of names) checkGlob('name', p);
  if (names.length > 0) query.namePatterns = [...new Set(names)].sort();
  if (globs.length > 0) {
    const uriPatterns = globs.flatMap((g) => {
      if (isUriText(g)) return [mapGlobLiterals(g, canonicalUriText)];
      // Literal text of a relative glob is a decoded path: encode it as the index spells it.
      return relativeGlobs(g, roots).map(({ root, glob }) => escapeGlob(root.uri) + mapGlobLiterals(glob, encodeRelative));
    });
    query.uriPatterns = [...new Set(uriPatterns)].sort();
  }
  if (args.prefix) {
    const prefixes = prefixUris(args.prefix, roots);
    // One URI: a plain prefix. Several (several roots): a relative prefix names one place in
    // each, which the filter model says as a glob (`**` inside a segment crosses '/').
    if (prefixes.length === 1) query.prefix = prefixes[0]!;
    // Folder prefixes (`notes/`) are uri_paths, which AND with the globs given.
    else if (prefixes.every((p) => p.endsWith('/'))) query.uriPaths = prefixes.sort();
    else {
      const asGlobs = prefixes.map((p) => `${escapeGlob(p)}**`);
      // AND with the globs given: a prefix glob list and user globs cannot share one OR-ed field.
      if (query.uriPatterns) {
        throw new ToolFailure('With several served folders, give either a relative prefix that names a folder (ending in /) or globs, not both');
      }
      query.uriPatterns = asGlobs.sort();
    }
  }
  return query;
}

function checkGlob(field: string, pattern: string): void {
  try {
    compileGlob(pattern);
  } catch (error) {
    if (!(error instanceof GlobSyntaxError)) throw error;
    throw new ToolFailure(`Invalid pattern in ${field}: '${shownPattern(pattern)}' — ${error.detail}`);
  }
}
