// Prompts (each with a SEP-1292 uri): `explain` embeds one resource (a
// collection embeds its listing); `recent-changes` lists the files modified in
// a time window, newest first, from the index.
import type { Store } from '../index/store.ts';
import { EntryKind, type EntryRow } from '../entry.ts';
import type { ServerContext } from '../protocol/context.ts';
import { echo, invalidParams, resourceNotFound } from '../protocol/errors.ts';
import { succ } from '../keys.ts';
import { toResource } from '../resource.ts';
import { AmbiguousPath, displayPath, prefixUris, resolveTarget } from './paths.ts';
import { readWindow } from './read-tool.ts';
import { formatSize, promptUri } from './tool.ts';

/** Text of a resource embedded by `explain`: enough to explain, bounded for a context window. */
export const EXPLAIN_MAX_BYTES = 256 * 1024;
export const RECENT_MAX_FILES = 100;
/** Files also attached as resource_link messages (the rest are only listed in the text). */
const RECENT_LINKS = 25;
const MAX_WINDOW_MS = 366 * 24 * 3600 * 1000;

export interface PromptArgument {
  name: string;
  description: string;
  required: boolean;
}

export interface PromptDefinition {
  name: string;
  uri: string;
  title: string;
  description: string;
  arguments: PromptArgument[];
}

export const PROMPTS: readonly PromptDefinition[] = [
  {
    name: 'explain',
    uri: promptUri('explain'),
    title: 'Explain a file or folder',
    description: 'Embeds one file (or a folder listing) and asks for an explanation of it.',
    arguments: [{ name: 'uri', description: 'A file:// URI or a path relative to a served folder', required: true }],
  },
  {
    name: 'recent-changes',
    uri: promptUri('recent-changes'),
    title: 'Recent changes',
    description: `Lists the files modified within a time window (newest first, at most ${RECENT_MAX_FILES}) and asks for a summary.`,
    arguments: [
      { name: 'window', description: 'How far back: a number and a unit, m/h/d/w (e.g. 30m, 24h, 7d). Default 24h', required: false },
      { name: 'scope', description: 'Only files under this path (relative to a served folder) or URI prefix', required: false },
    ],
  },
];

export const WINDOW_SUGGESTIONS = ['1h', '24h', '7d', '30d'];

export function findPrompt(nameOrUri: unknown): PromptDefinition | undefined {
  return PROMPTS.find((p) => p.name === nameOrUri || p.uri === nameOrUri);
}

export async function getPrompt(ctx: ServerContext, params: unknown) {
  const p = (params ?? {}) as { name?: unknown; arguments?: unknown };
  const prompt = findPrompt(p.name);
  if (!prompt) throw invalidParams(`Unknown prompt: ${String(echo(p.name))}`);
  const args = (p.arguments ?? {}) as Record<string, unknown>;
  if (typeof args !== 'object' || Array.isArray(args)) throw invalidParams('Invalid params: arguments must be an object');
  for (const a of prompt.arguments) {
    const value = args[a.name];
    if (a.required && (value === undefined || value === '')) throw invalidParams(`Missing required argument: ${a.name}`);
    if (value !== undefined && typeof value !== 'string') throw invalidParams(`Invalid params: argument ${a.name} must be a string`);
  }
  return prompt.name === 'explain'
    ? explain(ctx, args.uri as string)
    : recentChanges(ctx, (args.window as string | undefined) || '24h', args.scope as string | undefined);
}

async function explain(ctx: ServerContext, target: string) {
  let entry;
  try {
    entry = await resolveTarget(ctx, target);
  } catch (error) {
    if (error instanceof AmbiguousPath) throw invalidParams(error.message, { candidates: error.candidates });
    throw error;
  }
  if (!entry) throw resourceNotFound(target);
  const resource = toResource(entry, ctx.roots);
  let window;
  try {
    window = await readWindow(ctx, entry, 0, EXPLAIN_MAX_BYTES);
  } catch (error) {
    throw invalidParams(`Cannot embed ${entry.uri}: ${(error as Error).message}`, { uri: entry.uri });
  }
  const cut = window.length < window.size;
  const what = entry.kind === EntryKind.collection ? `the folder ${resource.title} (its listing is attached)` : `the file ${resource.title}`;
  const ask =
    `Explain ${what}: what it is for, how it is organised, and anything notable or surprising.` +
    (cut ? ` Only its first ${formatSize(window.length)} of ${formatSize(window.size)} are attached.` : '');
  const body = window.text !== undefined ? { text: window.text } : { blob: window.blob! };
  return {
    description: `Explain ${resource.title}`,
    messages: [
      { role: 'user', content: { type: 'resource', resource: { ...resource, mimeType: window.mimeType, ...body } } },
      { role: 'user', content: { type: 'text', text: ask } },
    ],
  };
}

/** `24h` -> milliseconds; throws -32602 with the accepted form. */
export function parseWindow(text: string): number {
  const m = /^\s*(\d{1,6})\s*(m|min|h|d|w)\s*$/i.exec(text);
  if (!m) throw invalidParams(`Invalid window '${text}': use a number and a unit m, h, d or w (e.g. 30m, 24h, 7d)`);
  const unit = { m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[m[2]!.toLowerCase() as 'm'];
  const ms = Number(m[1]) * unit;
  if (ms <= 0 || ms > MAX_WINDOW_MS) throw invalidParams(`Invalid window '${text}': between 1m and 366d`);
  return ms;
}

/** At most this many recent documents are looked at for a scoped request. */
const RECENT_SCAN_BUDGET = 50_000;

/** Documents modified since `since`, newest first, within the URI ranges `scopes` starts (null: everywhere). */
export function recentDocuments(store: Store, since: number, scopes: readonly string[] | null, limit: number): EntryRow[] {
  if (!scopes) return store.recentDocuments(since, limit);
  // A scope is a URI range: checked per row while walking by time; bounded by a scan budget.
  const out: EntryRow[] = [];
  for (const row of store.recentDocuments(since, RECENT_SCAN_BUDGET)) {
    if (scopes.some((s) => row.uri >= s && (succ(s) === null || row.uri < succ(s)!))) out.push(row);
    if (out.length >= limit) break;
  }
  return out;
}

async function recentChanges(ctx: ServerContext, window: string, scope: string | undefined) {
  const ms = parseWindow(window);
  const since = Date.now() - ms;
  const scopes = scope ? prefixUris(scope, ctx.roots) : null;
  const rows = recentDocuments(ctx.index.store, since, scopes, RECENT_MAX_FILES + 1);
  const shown = rows.slice(0, RECENT_MAX_FILES);
  const lines = shown.map((row) => {
    const r = toResource(row, ctx.roots);
    return `${r.annotations.lastModified}  ${displayPath(row, ctx.roots)}  (${formatSize(row.size)})`;
  });
  const where = scope ? ` under ${scope}` : '';
  const text =
    shown.length === 0
      ? `No files${where} were modified in the last ${window.trim()}. Say so, and suggest a longer window.`
      : `These files${where} were modified in the last ${window.trim()} (newest first${rows.length > shown.length ? `, first ${RECENT_MAX_FILES} shown` : ''}):\n\n` +
        `${lines.join('\n')}\n\nSummarise what changed and why it might matter. Read files with the read tool where the names are not enough.`;
  return {
    description: `Files modified in the last ${window.trim()}${where}`,
    messages: [
      { role: 'user', content: { type: 'text', text } },
      ...shown.slice(0, RECENT_LINKS).map((row) => ({ role: 'user', content: { type: 'resource_link', ...toResource(row, ctx.roots) } })),
    ],
  };
}
