import type { ServerCapabilities } from '@modelcontextprotocol/server';

/**
 * SEP-2564 filtering capabilities. SDK clients strip capability keys they do
 * not know (`filtering` inside `resources`), so the same facts are repeated
 * under `experimental`, together with the params of the other proposals.
 */
export const FILTERING = {
  resources: { supported: ['namePatterns', 'uriPatterns'] },
  tools: { supported: ['namePatterns'] },
  prompts: { supported: ['namePatterns'] },
} as const;

const LIST_METHODS = ['resources/list', 'resources/templates/list', 'tools/list', 'prompts/list'];

export const EXPERIMENTAL = {
  filtering: FILTERING,
  /** sep-list-prefix */
  prefix: { methods: LIST_METHODS },
  /** SEP-1292 `filters.uri_paths` */
  uri_paths: { methods: LIST_METHODS },
  /** SEP-2093 (newer revision): resources/list `uri` lists a collection's direct children. */
  uri: { methods: ['resources/list'] },
  /** SEP-2093 */
  'resources/metadata': {},
};

export const SERVER_CAPABILITIES = {
  // `subscribe` and `listChanged` both: without them the SDK narrows what a 2026-07-28 listen stream may carry.
  resources: { subscribe: true, listChanged: true, filtering: FILTERING.resources },
  tools: { listChanged: false, filtering: FILTERING.tools },
  prompts: { listChanged: false, filtering: FILTERING.prompts },
  completions: {},
  // Log lines reach clients as notifications/message (src/protocol/logging.ts), honouring logging/setLevel.
  logging: {},
  experimental: EXPERIMENTAL,
} as unknown as ServerCapabilities;

/**
 * Cache hints on 2026-07-28 results (`ttlMs`, `cacheScope`). The folder can
 * change between two requests and a watcher learns of it only after the
 * fact, so a listing or a read promises no lifetime at all (ttl 0: use
 * `subscriptions/listen` to hear of changes). Templates, tools and prompts
 * depend only on the command line, which cannot change while the process
 * runs: five minutes. Everything is `private`: the files may be one user's
 * or one team's, never a shared cache's.
 */
const STATIC_MS = 5 * 60_000;
export const CACHE_HINTS = {
  'resources/list': { ttlMs: 0, cacheScope: 'private' },
  'resources/read': { ttlMs: 0, cacheScope: 'private' },
  'resources/templates/list': { ttlMs: STATIC_MS, cacheScope: 'private' },
  'tools/list': { ttlMs: STATIC_MS, cacheScope: 'private' },
  'prompts/list': { ttlMs: STATIC_MS, cacheScope: 'private' },
} as const;
