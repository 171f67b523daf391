// The catalog: tools, prompts, completions and the mcp://groups resources,
// built once per server from its context. server.ts wires these handlers.
import { z } from 'zod';
import type { ServerContext } from '../protocol/context.ts';
import { echo, invalidParams } from '../protocol/errors.ts';
import type { CatalogHandlers } from '../protocol/handlers.ts';
import type { HoldAnswer } from '../protocol/answer-holds.ts';
import type { ProgressSink } from '../protocol/progress.ts';
import { pageInMemory, parseQuery } from '../protocol/list.ts';
import { matchesQuery } from '../query/plan.ts';
import { complete, PathCompleter } from './complete.ts';
import type { ContentSearch } from '../search/content-search.ts';
import { findTool } from './find.ts';
import { readReservedResource, reservedResourceMetadata } from './groups.ts';
import { getPrompt, PROMPTS } from './prompts.ts';
import { readTool } from './read-tool.ts';
import { searchTool } from './search.ts';
import { failure, jsonSchema, toolUri, ToolFailure, type ToolContext, type ToolDefinition, type ToolResult } from './tool.ts';
import { treeTool } from './tree.ts';
import { WRITE_TOOLS } from './write-tools.ts';

/** The protocol layer's CatalogHandlers, with the tool result typed. */
export interface Catalog extends CatalogHandlers {
  callTool(params: unknown, progress?: ProgressSink, holdAnswer?: HoldAnswer, signal?: AbortSignal): Promise<ToolResult>;
}

/** What tools/list says about a tool. */
function describeTool(tool: ToolDefinition) {
  return {
    name: tool.name,
    uri: toolUri(tool.name),
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchema(tool.input, 'input'),
    outputSchema: jsonSchema(tool.output, 'output'),
    annotations: {
      title: tool.title,
      readOnlyHint: tool.changes === undefined,
      destructiveHint: tool.changes?.destructiveHint ?? false,
      idempotentHint: tool.changes?.idempotentHint ?? true,
      openWorldHint: false,
    },
  };
}

/** `search`: the full-text content index behind the search tool; null with --no-search (no tool). */
export function createCatalog(ctx: ServerContext, search: ContentSearch | null): Catalog {
  // Write tools only with --write: without it they are neither listed nor callable.
  const tools: ToolDefinition[] = [findTool, ...(search ? [searchTool] : []), readTool, treeTool, ...(ctx.writes ? WRITE_TOOLS : [])];
  const described = tools.map(describeTool);
  const byKey = new Map<string, ToolDefinition>();
  for (const tool of tools) {
    byKey.set(tool.name, tool);
    byKey.set(toolUri(tool.name), tool);
  }
  const tc: ToolContext = { ctx, search };
  const completer = new PathCompleter(ctx.index.db, ctx.roots);

  return {
    async listTools(params) {
      // The same filter model and keyset cursors as resources/list, matched on `uri` and `name`.
      const query = parseQuery(params, 'tools/list');
      const page = pageInMemory(ctx, described, query, (t) => t.uri, (t) => matchesQuery(query, t));
      return { tools: page.items, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
    },

    async callTool(params, progress, holdAnswer, signal) {
      const p = (params ?? {}) as { name?: unknown; arguments?: unknown };
      if (typeof p.name !== 'string') throw invalidParams('Invalid params: name must be a string');
      // SEP-1292: a tool is named by its name or its URI. An unknown tool is the client's mistake, a protocol error.
      const tool = byKey.get(p.name);
      if (!tool) throw invalidParams(`Unknown tool: ${String(echo(p.name))}`);
      const parsed = tool.input.safeParse(p.arguments ?? {});
      if (!parsed.success) return failure(`Invalid arguments for ${tool.name}:\n${z.prettifyError(parsed.error)}`);
      try {
        return await tool.run({ ...tc, ...(progress ? { progress } : {}), ...(holdAnswer ? { holdAnswer } : {}), ...(signal ? { signal } : {}) }, parsed.data);
      } catch (error) {
        if (error instanceof ToolFailure) return failure(error.message);
        ctx.log.error(`tool ${tool.name} failed: ${(error as Error).stack ?? String(error)}`);
        return failure(`${tool.name} failed: ${(error as Error).message}`);
      }
    },

    async listPrompts(params) {
      const query = parseQuery(params, 'prompts/list');
      const page = pageInMemory(ctx, PROMPTS, query, (p) => p.uri, (p) => matchesQuery(query, p));
      return { prompts: page.items, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
    },

    getPrompt: (params) => getPrompt(ctx, params),

    complete: (params) => complete(ctx, completer, params),

    readReserved: (uri) => readReservedResource(ctx, uri),

    reservedMetadata: (uri) => reservedResourceMetadata(ctx, uri),
  };
}
