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
