import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const which = process.argv[2] ?? '9';
const root = mkdtempSync(join(tmpdir(), 'a9-'));
writeFileSync(join(root, 'big.bin'), randomBytes(4 * 1024 * 1024));
mkdirSync(join(root, 'notes'));
for (let i = 0; i < 1500; i++) writeFileSync(join(root, 'notes', `n${i}.md`), `note ${i}\n`);
const token = randomBytes(24).toString('hex');
const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir', '/tmp/prof', 'dist/cli.js', '--http', '127.0.0.1:0', '--db', ':memory:', '--no-search', root], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, FOLDER_MCP_TOKEN: token } });
let stderr = '';
child.stderr.on('data', (c) => (stderr += c));
let url: string | undefined;
while (!(url = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(stderr)?.[0])) await new Promise((r) => setTimeout(r, 20));
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
async function session() {
  const init = await fetch(url!, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } } }) });
  const sid = init.headers.get('mcp-session-id')!;
  await init.text();
  const post = (m: unknown) => fetch(url!, { method: 'POST', headers: { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify(m) });
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).text();
  return post;
}
const victim = await session();
await (await victim({ jsonrpc: '2.0', id: 1, method: 'resources/list', params: {} })).text();
let running = true;
const pings: number[] = [];
const pinger = (async () => { for (let id = 2; running; id++) { const t = performance.now(); await (await victim({ jsonrpc: '2.0', id, method: 'ping' })).text(); pings.push(performance.now() - t); await new Promise((r) => setTimeout(r, 10)); } })();
await new Promise((r) => setTimeout(r, 300));
const uri = pathToFileURL(join(root, 'big.bin')).href;
const t0 = performance.now();
if (which.includes('s')) {
  const post = await session();
  await Promise.all(Array.from({ length: 100 }, async (_, i) => void (await (await post({ jsonrpc: '2.0', id: 100 + i, method: 'resources/read', params: { uri } })).arrayBuffer())));
}
if (which.includes('b')) {
  const batch = Array.from({ length: 8 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'resources/read', params: { uri } }));
  await Promise.all(Array.from({ length: 4 }, async () => void (await (await fetch(url!, { method: 'POST', headers, body: JSON.stringify(batch) })).arrayBuffer())));
}
const wall = performance.now() - t0;
running = false; await pinger;
pings.sort((a, b) => a - b);
const q = (p: number) => pings[Math.min(pings.length - 1, Math.floor(p * pings.length))]!.toFixed(1);
console.log(`attack ${which}: wall ${wall.toFixed(0)} ms, pings ${pings.length}, p50 ${q(0.5)} p90 ${q(0.9)} p99 ${q(0.99)} max ${q(1)}`);
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
