// Bundled in place of zod's locales/index.js (scripts/build.mjs, zodEnglishOnly): zod's `locales` namespace
// with English only. zod's own messages are English (classic/schemas.js configures `en` itself); nothing in
// folder-mcp or the MCP SDK picks another locale, and the 62 others were 394 KiB of the 2.9 MB bundle, each
// evaluated at every start.
export { default as en } from 'zod/v4/locales/en.js';
