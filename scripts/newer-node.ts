// Node.js majors other than the one running: the npm package `node` at that
// major, through npx, which keeps it in npm's cache (a registry package: its
// binary installs as any package does). 24 stands in for Claude Desktop's
// Node.js and for a user's new Node; 22 is the other LTS a user may run.
// FOLDER_MCP_NODE24 (FOLDER_MCP_NODE22) names a binary to use instead
// (.ci/run sets FOLDER_MCP_NODE24 once).
import { execFileSync } from 'node:child_process';

const found = new Map<number, string>();

/** The path of a Node.js binary of this major. */
export function npmNode(major: number): string {
  let path = found.get(major);
  if (!path) {
    path =
      process.env[`FOLDER_MCP_NODE${major}`] ||
      execFileSync('npx', ['-y', `node@${major}`, '-e', 'process.stdout.write(process.execPath)'], { encoding: 'utf8', timeout: 300_000 }).trim();
    found.set(major, path);
  }
  return path;
}

/** Node.js 24: Claude Desktop's, and a user's new Node. */
export function newerNode(): string {
  return npmNode(24);
}
