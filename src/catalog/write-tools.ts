// The tools that change files, listed only with --write: `write`, `edit`,
// `mkdir`, `move` (no tool deletes). Paths are the other tools' path language
// (src/catalog/paths.ts); every change goes through src/content/safe-write.ts;
// then the index looks at what changed in the same call (ctx.refresh), so the
// result's resource_link, `updated` and `list_changed` follow at once, not
// when the watcher gets round to it.
import { isUtf8 } from 'node:buffer';
import { lstatSync } from 'node:fs';
import { z } from 'zod';
import { ContentError } from '../content/read.ts';
import { openVerified } from '../content/safe-open.ts';
import { PathBusyError, type PathHold } from '../content/path-locks.ts';
import { identityOf, makeDirectory, moveSafely, writeFileSafely, WriteError, type OutsideWrite, type WriteOutcome } from '../content/safe-write.ts';
import type { ServerContext } from '../protocol/context.ts';
import { echo } from '../protocol/errors.ts';
import { findRoot, pathToUri } from '../uri.ts';
import { applyEditsAsync, DIFF_MAX_BYTES, editDiffAsync, LARGE_EDIT_BYTES } from './edit-text.ts';
import { caseRename, resolveWritePath, type WritePath } from './paths.ts';
import { formatSize, resourceLink, ToolFailure, type ContentBlock, type ToolDefinition, type ToolResult } from './tool.ts';

/** At most this many replacements in one edit call. */
export const EDIT_MAX_EDITS = 100;

const PATH_TEXT = 'A path as the other tools print it (`src/main.ts`; with several served folders `notes/todo.md`), an absolute path, or a file:// URI.';

function writable(ctx: ServerContext): NonNullable<ServerContext['writes']> {
  // Not listed without --write; a call by name is already refused by the catalog. Belt and braces.
  if (!ctx.writes) throw new ToolFailure('This server is read-only (start it with --write)');
  return ctx.writes;
}

/** A lone UTF-16 surrogate: JSON can carry one, but no file name or UTF-8 text can (it would become U+FFFD). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Refuses text that is not valid Unicode, rather than write U+FFFD where the caller wrote something else. */
export function wellFormed(text: string, what: string): void {
  if (LONE_SURROGATE.test(text)) throw new ToolFailure(`${what} is not valid Unicode (it holds a lone surrogate, \\u${LONE_SURROGATE.exec(text)![0].charCodeAt(0).toString(16)}); nothing was changed`);
}

/**
 * The deepest below its served folder, and the longest (Linux's PATH_MAX), a
 * path the write tools take. A mkdir holds every folder on its path, and
 * each hold resolves its own path's links: the work grows with the square of
 * the depth, and a red-team mkdir 10,000 folders deep held the event loop
 * past a minute (2,100 deep: 14.7 s). At 128, well under 0.1 s.
 */
export const MAX_WRITE_DEPTH = 128;
export const MAX_WRITE_PATH_BYTES = 4096;

/** A path that names a folder by its last character: `/`, and on Windows `\` too. */
function namesFolder(text: string): boolean {
  return text.endsWith('/') || (process.platform === 'win32' && text.endsWith('\\'));
}

/** The target of write or edit: a file, so a path written as a folder's is refused (it wrote a file of that name). */
function fileTarget(ctx: ServerContext, text: string, tool: string): WritePath {
  if (namesFolder(text)) throw new ToolFailure(`Cannot ${tool} ${String(echo(text))}: a path that ends in a slash names a folder, and ${tool} takes a file`);
  return target(ctx, text);
}

function target(ctx: ServerContext, text: string): WritePath {
  wellFormed(text, 'The path');
  const found = resolveWritePath(text, ctx.roots);
  if (!found) throw new ToolFailure(`Not found: ${String(echo(text))} (not a path in the served folders)`);
  const root = findRoot(ctx.roots, found.path);
  const depth = root ? found.path.slice(root.path.length).split('/').filter(Boolean).length : 0;
  const bytes = Buffer.byteLength(found.path);
  if (depth > MAX_WRITE_DEPTH || bytes > MAX_WRITE_PATH_BYTES) {
    throw new ToolFailure(
      `Cannot change ${String(echo(text))}: the path is ${depth} folders deep below its served folder and ${bytes} bytes long; ` +
        `the write tools take at most ${MAX_WRITE_DEPTH} and ${MAX_WRITE_PATH_BYTES}`,
    );
  }
  return found;
}

/** A regular file is at `path` now (not followed through a last symlink). */
function isFileNow(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false })?.isFile() === true;
}

function writeFailure(error: unknown, shown: string): ToolFailure {
  if (error instanceof WriteError) {
    if (error.reason === 'not-found') return new ToolFailure(`Not found: ${shown} (${error.message})`);
    if (error.reason === 'not-kept') return new ToolFailure(`Changed ${shown}, but ${error.message}: that version is lost`);
    if (error.reason === 'not-checked') return new ToolFailure(`Changed ${shown}, but ${error.message}`);
    return new ToolFailure(`Cannot change ${shown}: ${error.message}`);
  }
  if (error instanceof ContentError) {
    if (error.reason === 'not-found') return new ToolFailure(`Not found: ${shown} (not a file in the served folders)`);
    return new ToolFailure(`Cannot edit ${shown}: ${error.message.replace(/^Cannot read resource: /, '')}`);
  }
  if (error instanceof ToolFailure) return error;
  if (error instanceof PathBusyError) return new ToolFailure(`Cannot change ${shown}: ${error.message}`);
  const code = (error as NodeJS.ErrnoException).code;
  return new ToolFailure(`Cannot change ${shown}: ${code ?? (error as Error).message}`);
}

/**
 * Runs `change` holding `holds` (one writer per path, for every client:
 * src/content/path-locks.ts), then has the index look at `paths` before the
 * result is built.
 */
async function changing<T>(
  ctx: ServerContext,
  shown: string | ((error: unknown) => string),
  holds: readonly PathHold[],
  change: () => Promise<T>,
  paths: (result: T) => string[],
): Promise<T> {
  // After the first scan: a change made while it runs could be half seen by it (a new folder without its subfolders).
  await ctx.index.readiness.reached('scanned');
  let result: T;
  try {
    result = await writable(ctx).locks.run(holds, change);
  } catch (error) {
    throw writeFailure(error, typeof shown === 'string' ? shown : shown(error));
  }
  await ctx.refresh(paths(result));
  return result;
}

/** Every folder from the root down to `path`, and `path`: what a mkdir may create. */
function pathAndParents(ctx: ServerContext, path: string): PathHold[] {
  const root = findRoot(ctx.roots, path);
  const holds: PathHold[] = [];
  for (let at = path; root && at !== root.path && at.length > root.path.length; at = at.slice(0, at.lastIndexOf('/')) || '/') holds.push({ path: at });
  return holds;
}

/** The resource_link of what is now at `path`, if the index holds it (an ignored path is written but not indexed). */
function linkTo(ctx: ServerContext, path: string, directory: boolean): { block?: ContentBlock; uri: string; indexed: boolean } {
  const uri = pathToUri(path, directory);
  const row = ctx.index.store.get(uri);
  return row ? { block: resourceLink(row, ctx), uri, indexed: true } : { uri, indexed: false };
}

function result(text: string, link: { block?: ContentBlock; indexed: boolean }, structured: Record<string, unknown>): ToolResult {
  const note = link.indexed ? '' : ' It is not in the index (ignored or excluded), so no resource link.';
  return {
    content: [{ type: 'text', text: text + note }, ...(link.block ? [link.block] : [])],
    structuredContent: { ...structured, indexed: link.indexed },
  };
}

const changeOutput = {
  uri: z.string(),
  path: z.string(),
  indexed: z.boolean().describe('false when the path is ignored or excluded: changed on disk, not in the index'),
};

// ---- write ----------------------------------------------------------------

const writeInput = z.strictObject({
  path: z.string().min(1).describe(PATH_TEXT),
  content: z.string().describe('The whole new content of the file.'),
  encoding: z.enum(['utf-8', 'base64']).default('utf-8').describe('How `content` is given: text (default), or base64 for binary files.'),
  create_only: z.boolean().default(false).describe('Refuse if the file exists, rather than replace it.'),
  force: z.boolean().default(false).describe('Replace a file even when it is read-only (its owner has no write permission).'),
});

/** Strict base64 (or base64url): Buffer.from skips what it cannot decode, so `!!!!` would write an empty file. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** The bytes of `content` in `encoding`; invalid base64 or text that is not valid Unicode is refused. */
export function decodeContent(content: string, encoding: 'utf-8' | 'base64'): Buffer {
  if (encoding === 'utf-8') {
    wellFormed(content, 'The content');
    return Buffer.from(content, 'utf8');
  }
  const compact = content.replace(/\s+/g, '');
  if (!BASE64.test(compact) && !(BASE64URL.test(compact) && compact.length % 4 !== 1)) {
    const bad = /[^A-Za-z0-9+/=_-]/.exec(compact);
    throw new ToolFailure(`The content is not valid base64 (${bad ? `character ${JSON.stringify(bad[0])} at ${bad.index}` : 'misplaced padding or a truncated last group'}); nothing was written`);
  }
  return Buffer.from(compact, BASE64.test(compact) ? 'base64' : 'base64url');
}

export const writeTool: ToolDefinition<z.infer<typeof writeInput>> = {
  name: 'write',
  title: 'Write a file',
  description:
    'Create a file, or replace one whole, atomically (the old content is never half-overwritten); the file keeps its mode. ' +
    'Its folder must exist (see mkdir). `create_only` refuses an existing file; a read-only file is refused unless `force`. To change part of a file, use edit.',
  input: writeInput,
  output: z.object({ ...changeOutput, created: z.boolean(), size: z.number() }),
  changes: { destructiveHint: true, idempotentHint: true },
  async run(tc, args) {
    const { ctx } = tc;
    const { maxBytes } = writable(ctx);
    const where = fileTarget(ctx, args.path, 'write');
    const data = decodeContent(args.content, args.encoding);
    const outcome = await changing(
      ctx,
      where.shown,
      [{ path: where.path }],
      async () => {
        const done = await writeFileSafely(where.path, data, ctx.roots, { maxBytes, createOnly: args.create_only, force: args.force });
        writable(ctx).locks.noteWritten(where.path, done.written);
        return done;
      },
      (done) => [where.path, done.tempPath],
    );
    const link = linkTo(ctx, where.path, false);
    return result(`${outcome.created ? 'Created' : 'Replaced'} ${where.shown} (${formatSize(data.byteLength)}).`, link, {
      uri: link.uri,
      path: where.shown,
      created: outcome.created,
      size: data.byteLength,
    });
  },
};

// ---- edit -----------------------------------------------------------------

const editInput = z.strictObject({
  path: z.string().min(1).describe(PATH_TEXT),
  edits: z
    .array(
      z.strictObject({
        old_text: z.string().min(1).describe('Text to replace; it must occur exactly once (whitespace and line breaks included).'),
        new_text: z.string().describe('What replaces it.'),
      }),
    )
    .min(1)
    .max(EDIT_MAX_EDITS)
    .describe(`Replacements applied in order, each to the text the previous ones left (at most ${EDIT_MAX_EDITS}).`),
  dry_run: z.boolean().default(false).describe('Return the diff without changing the file.'),
  force: z.boolean().default(false).describe('Edit a file even when it is read-only (its owner has no write permission).'),
});

export const editTool: ToolDefinition<z.infer<typeof editInput>> = {
  name: 'edit',
  title: 'Edit a file',
  description:
    'Replace exact text in a UTF-8 text file: each `old_text` must occur exactly once, or nothing is changed and the error says which edit matched how often. ' +
    'Returns a unified diff of the change (with `dry_run`, only the diff). Atomic, like write.',
  input: editInput,
  output: z.object({
    ...changeOutput,
    diff: z.string(),
    diffOmittedHunks: z.number().optional().describe(`hunks left out of diff, which stops at ${DIFF_MAX_BYTES} bytes`),
    dry_run: z.boolean(),
    size: z.number().describe('bytes of the edited file'),
    outsideWrite: z
      .object({
        kind: z.enum(['appended', 'kept']),
        bytes: z.number(),
        keptPath: z.string().optional(),
        tooLarge: z.boolean().optional().describe('kept rather than appended: with it the file would pass --max-write-bytes'),
      })
      .optional()
      .describe('another program wrote the file between the last check and the rename: its append was kept after the edit, or its version saved as keptPath'),
  }),
  changes: { destructiveHint: true, idempotentHint: false },
  async run(tc, args) {
    const { ctx } = tc;
    const { maxBytes, locks, largeEdits } = writable(ctx);
    const where = fileTarget(ctx, args.path, 'edit');
    args.edits.forEach((edit, i) => {
      wellFormed(edit.old_text, `Edit ${i + 1}'s old_text`);
      wellFormed(edit.new_text, `Edit ${i + 1}'s new_text`);
    });
    await ctx.index.readiness.reached('scanned');
    // Security: an edit reads the file (its diff shows it, its match counts probe it), and reads reach
    // only what the index holds: never an ignored, excluded or .git file. write can still replace one whole.
    let indexed = ctx.index.store.get(pathToUri(where.path, false));
    // Made a moment ago by another program, the watcher may not have told the index yet: it looks now.
    // Nothing there (or a folder): no look, which would take the write queue's turn for nothing.
    if (!indexed && isFileNow(where.path)) {
      await ctx.refresh([where.path]);
      indexed = ctx.index.store.get(pathToUri(where.path, false));
    }
    if (!indexed) {
      throw new ToolFailure(`Not found: ${where.shown} (not a file in the served folders; ignored and excluded files are not edited, only written whole)`);
    }
    // Security: an edit holds its file several times over (its bytes, the edited bytes, the text of both while
    // matching, the diff), so, dry runs too, it takes its share of the one budget reads take theirs from before
    // it reads (issue 44: 200 concurrent dry runs of 4 MiB files took RSS from 86 to 944 MiB). The share is the
    // size the index knows; the read itself is bounded by --max-write-bytes whatever the file became.
    const share = EDIT_MEMORY_FACTOR * Math.min(indexed.size ?? maxBytes, maxBytes);
    // One writer per path from the read to the rename: a second edit of the file reads what the first wrote.
    const edited = () => ctx.readBudget.run(share, editWithin);
    const editWithin = async () => {
      const read = await readForEdit(ctx, where.path, maxBytes).catch((error: unknown) => {
        // The file opened was no longer at its path when looked at (another program saved it by a rename meanwhile):
        // a read says not found, but the file is there, and this is an edit of it.
        if (error instanceof ContentError && error.reason === 'not-found' && isFileNow(where.path)) {
          throw new ToolFailure(`Cannot edit ${where.shown}: another program replaced it while it was read; nothing was changed; try again`);
        }
        throw error;
      });
      try {
        if (!args.dry_run && !args.force && (read.identity.mode & 0o200) === 0) {
          throw new ToolFailure(`Cannot change ${where.shown}: it is read-only (its owner may not write it); pass force: true to edit it anyway`);
        }
        // The event loop runs between replacements and between diff regions, and large files take their turn one
        // at a time: a large edit stalls no other client.
        const textWork = async () => {
          const { after, spans } = await applyEditsAsync(read.bytes, args.edits, where.shown);
          if (after.byteLength > maxBytes) {
            throw new ToolFailure(`Cannot change ${where.shown}: the edited file would be ${after.byteLength} bytes, more than the limit of ${maxBytes} (--max-write-bytes)`);
          }
          return { after, ...(await editDiffAsync(where.shown, read.bytes, after, spans)) };
        };
        const { after, diff, omittedHunks } = read.bytes.byteLength > LARGE_EDIT_BYTES ? await largeEdits.run(textWork) : await textWork();
        const size = after.byteLength;
        let outcome: WriteOutcome | undefined;
        if (!args.dry_run && !after.equals(read.bytes)) {
          // `expect`: a file changed since it was read is not overwritten with an edit of its old content.
          outcome = await writeFileSafely(where.path, after, ctx.roots, {
            maxBytes,
            force: args.force,
            expect: { identity: read.identity, handle: read.handle, content: read.bytes, ownWrite: locks.wroteLast(where.path, read.identity) },
          });
          locks.noteWritten(where.path, outcome.written);
        }
        return { size, diff, omittedHunks, outcome };
      } finally {
        await read.handle.close();
      }
    };
    let done: Awaited<ReturnType<typeof edited>>;
    try {
      // A dry run changes nothing: it takes no hold.
      done = args.dry_run ? await edited() : await locks.run([{ path: where.path }], edited);
    } catch (error) {
      throw writeFailure(error, where.shown);
    }
    if (done.outcome) await ctx.refresh([where.path, done.outcome.tempPath, ...(done.outcome.outside?.kind === 'kept' ? [done.outcome.outside.keptPath] : [])]);
    const link = linkTo(ctx, where.path, false);
    const what = args.dry_run ? 'Dry run, nothing written' : done.outcome === undefined ? 'No change' : `Edited ${where.shown}`;
    const outside = done.outcome?.outside;
    const cut = done.omittedHunks > 0 ? `\nThe diff stops at ${DIFF_MAX_BYTES / 1024} KiB: ${done.omittedHunks} more hunk${done.omittedHunks === 1 ? '' : 's'} not shown (read the file to see them).` : '';
    const text = `${what} (${args.edits.length} edit${args.edits.length === 1 ? '' : 's'}):\n${done.diff}${cut}`;
    const structured = {
      uri: link.uri,
      path: where.shown,
      diff: done.diff,
      ...(done.omittedHunks > 0 ? { diffOmittedHunks: done.omittedHunks } : {}),
      dry_run: args.dry_run,
      size: done.size + (outside?.kind === 'appended' ? outside.bytes : 0),
      ...(outside ? { outsideWrite: describeOutside(ctx, outside) } : {}),
    };
    if (outside?.kind === 'kept') {
      const kept = resolveWritePath(outside.keptPath, ctx.roots)?.shown ?? outside.keptPath;
      // The edit is on disk; the other program's version too, beside it: the caller must merge, not retry.
      return {
        ...result(
          `Edited ${where.shown}, but another program changed it while this edit was written (after the last check, before the rename). ` +
            `Your edit is in ${where.shown}; the other program's version (${formatSize(outside.bytes)}${outside.tooLarge ? ', more than --max-write-bytes allows in one file, so not appended after your edit' : ''}) was saved as ${kept}. ` +
            `Compare the two and merge by hand; do not repeat the edit.\n${done.diff}${cut}`,
          link,
          structured,
        ),
        isError: true,
      };
    }
    const note =
      outside?.kind === 'appended'
        ? `\nNote: another program appended ${formatSize(outside.bytes)} to ${where.shown} while this edit was written; those bytes were kept, appended after your edit.`
        : '';
    return result(text + note, link, structured);
  },
};

/**
 * What an edit of a file of N bytes holds at once, in file sizes: its bytes
 * and the edited bytes, the text of both while the replacements are found
 * (UTF-16: twice the bytes of ASCII), the diff's lines. Counted against the
 * read budget (READ_BUDGET_BYTES): an edit of a file past a sixth of it runs
 * with no other read or edit beside it.
 */
export const EDIT_MEMORY_FACTOR = 6;

function describeOutside(ctx: ServerContext, outside: OutsideWrite): Record<string, unknown> {
  if (outside.kind === 'appended') return { kind: 'appended', bytes: outside.bytes };
  return {
    kind: 'kept',
    bytes: outside.bytes,
    keptPath: resolveWritePath(outside.keptPath, ctx.roots)?.shown ?? outside.keptPath,
    ...(outside.tooLarge ? { tooLarge: true } : {}),
  };
}

/**
 * The file's text, bytes and identity, read as every read is (openVerified),
 * within the write limit. The handle stays open (the caller closes it): the
 * write looks through it at the old file after the rename.
 */
async function readForEdit(ctx: ServerContext, path: string, maxBytes: number) {
  const file = await openVerified(path, ctx.roots);
  try {
    const identity = identityOf(file.handle);
    if (identity.nlink > 1) throw new WriteError('refused', `it has ${identity.nlink} hard links (names); files with more than one are not written`);
    if (file.size > maxBytes) throw new WriteError('too-large', `it is ${file.size} bytes, more than the limit of ${maxBytes} (--max-write-bytes)`);
    const bytes = Buffer.alloc(Number(identity.size));
    let read = 0;
    while (read < bytes.length) {
      const { bytesRead } = await file.handle.read(bytes, read, bytes.length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    // Read as fstat said it was: a file that changed meanwhile is refused before the rename (its size or bytes differ).
    const content = bytes.subarray(0, read);
    if (!isUtf8(content)) throw new WriteError('refused', 'it is not UTF-8 text (use write to replace it whole)');
    return { bytes: content, identity, handle: file.handle };
  } catch (error) {
    await file.handle.close();
    throw error;
  }
}

// ---- mkdir ----------------------------------------------------------------

const mkdirInput = z.strictObject({
  path: z.string().min(1).describe(PATH_TEXT),
  parents: z.boolean().default(true).describe('Also create missing folders above it (default true); false refuses when its parent is missing.'),
});

export const mkdirTool: ToolDefinition<z.infer<typeof mkdirInput>> = {
  name: 'mkdir',
  title: 'Create a folder',
  description: 'Create a folder (and, by default, the missing folders above it). A folder that exists already is no error.',
  input: mkdirInput,
  output: z.object({ ...changeOutput, created: z.array(z.string()).describe('the folders created, outermost first (empty when it existed)') }),
  changes: { destructiveHint: false, idempotentHint: true },
  async run(tc, args) {
    const { ctx } = tc;
    writable(ctx);
    const where = target(ctx, args.path);
    const created = await changing(
      ctx,
      where.shown,
      pathAndParents(ctx, where.path),
      () => makeDirectory(where.path, ctx.roots, args.parents),
      // Each one: a folder the index already holds is only looked at, not walked.
      (made) => made,
    );
    const link = linkTo(ctx, where.path, true);
    const shownCreated = created.map((path) => resolveWritePath(path, ctx.roots)?.shown ?? path);
    return result(created.length === 0 ? `${where.shown} exists already.` : `Created ${shownCreated.join(', ')}.`, link, {
      uri: link.uri,
      path: where.shown,
      created: shownCreated,
    });
  },
};

// ---- move -----------------------------------------------------------------

const moveInput = z.strictObject({
  from: z.string().min(1).describe(`The file or folder to move. ${PATH_TEXT}`),
  to: z.string().min(1).describe('Its new path (not the folder to move it into), in the same path language; its folder must exist.'),
  overwrite: z.boolean().default(false).describe('Replace a file at `to` (files only: a folder never replaces anything).'),
  force: z.boolean().default(false).describe('With overwrite: replace a file at `to` even when it is read-only.'),
});

export const moveTool: ToolDefinition<z.infer<typeof moveInput>> = {
  name: 'move',
  title: 'Move or rename',
  description:
    'Move or rename a file or folder within the served folders (a folder moves with everything in it). ' +
    'Refuses when `to` exists, unless `overwrite` is true and both are files.',
  input: moveInput,
  output: z.object({ ...changeOutput, from: z.string(), type: z.enum(['document', 'collection']), replaced: z.boolean() }),
  changes: { destructiveHint: true, idempotentHint: false },
  async run(tc, args) {
    const { ctx } = tc;
    writable(ctx);
    const from = target(ctx, args.from);
    const to = caseRename(from, target(ctx, args.to), args.to);
    const moved = await changing(
      ctx,
      // A problem of the destination names the destination (moveSafely says which end).
      (error) => (error instanceof WriteError && error.message.startsWith('the destination: ') ? to.shown : from.shown),
      // Both ends and all beneath them: nothing is written inside a folder while it moves.
      [{ path: from.path, tree: true }, { path: to.path, tree: true }],
      () => moveSafely(from.path, to.path, ctx.roots, { overwrite: args.overwrite, force: args.force }),
      () => [from.path, to.path],
    );
    const link = linkTo(ctx, to.path, moved.kind === 'directory');
    return result(`Moved ${from.shown} to ${to.shown}${moved.replaced ? ' (replacing the file there)' : ''}.`, link, {
      uri: link.uri,
      path: to.shown,
      from: from.shown,
      type: moved.kind === 'directory' ? 'collection' : 'document',
      replaced: moved.replaced,
    });
  },
};

export const WRITE_TOOLS: ToolDefinition[] = [writeTool, editTool, mkdirTool, moveTool];
