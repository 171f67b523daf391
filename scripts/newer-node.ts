// The Node.js that stands in for Claude Desktop's (24 today) and for a user's
// new Node: the npm package `node` at major 24, through npx, which keeps it in
// npm's cache (a registry package: its binary installs as any package does).
// FOLDER_MCP_NODE24 names a binary to use instead (.ci/run sets it once).
import { execFileSync } from 'node:child_process';

let found: string | undefined;

export function newerNode(): string {
  if (found) return found;
  found =
    process.env.FOLDER_MCP_NODE24 ||
    execFileSync('npx', ['-y', 'node@24', '-e', 'process.stdout.write(process.execPath)'], { encoding: 'utf8', timeout: 300_000 }).trim();
  return found;
}
