// The shape every tool shares: a zod schema for its arguments and one for its
// structured output (both also published as JSON Schema in tools/list), and a
// run function. A ToolFailure is the tool's own error: it becomes a result with
// `isError: true` that the model can read and act on, not a protocol error.
import { z } from 'zod';
import type { ServerContext } from '../protocol/context.ts';
import type { ProgressSink } from '../protocol/progress.ts';
import type { HoldAnswer } from '../protocol/answer-holds.ts';
import { toResource, type ResourceRow } from '../resource.ts';
import type { ContentSearch } from '../search/content-search.ts';

/** SEP-1292 namespace of everything this server offers as tools and prompts. */
export const CATALOG_GROUP = 'files';
export const toolUri = (name: string) => `mcp://tools/${CATALOG_GROUP}/${name}`;
export const promptUri = (name: string) => `mcp://prompts/${CATALOG_GROUP}/${name}`;

export interface ToolContext {
  ctx: ServerContext;
  search: ContentSearch | null;
  /** The call's progress sink, when the client sent a progress token. */
  progress?: ProgressSink;
  /** On stdio: keeps a share of the read budget until the call's answer is written (HandlerScope.holdAnswer). */
  holdAnswer?: HoldAnswer;
  /** Aborts when the client cancels the call (HandlerScope.signal). */
  signal?: AbortSignal;
}

export type ContentBlock = Record<string, unknown> & { type: string };

export interface ToolResult {
  [key: string]: unknown;
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a list of tools holds definitions of every argument type
export interface ToolDefinition<A = any> {
  name: string;
  title: string;
  description: string;
  input: z.ZodType<A>;
  output: z.ZodType;
  /** Set for a tool that changes files (readOnlyHint false): what a host may tell its user before it runs. Absent: read-only. */
  changes?: { destructiveHint: boolean; idempotentHint: boolean };
  run(tc: ToolContext, args: A): Promise<ToolResult>;
}

/** An error the tool reports to the model as an `isError` result. */
export class ToolFailure extends Error {
  override name = 'ToolFailure';
}

export function failure(message: string): ToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** A `resource_link` content block carrying the full resource object (SEP-2093 fields included). */
export function resourceLink(row: ResourceRow, ctx: ServerContext): ContentBlock {
  return { type: 'resource_link', ...toResource(row, ctx.roots) };
}

/** JSON Schema for tools/list: draft-07 (what SDK clients validate with), no `$schema` key. */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { target: 'draft-7', io }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

/**
 * One argument that may be given as a string or a list of strings (at most
 * 100, which scopeQuery checks and says: a `.max(100)` here failed inside the
 * union, and the client read only "Invalid input → at glob").
 */
export const stringOrList = (description: string) =>
  z.union([z.string(), z.array(z.string())]).optional().describe(`${description} At most 100.`);

export function asList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return typeof value === 'string' ? [value] : value;
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
