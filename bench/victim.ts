// Another client, in a process of its own: pings an HTTP server back to back
// (10 ms apart) on a 2025-era session until its stdin closes, then prints
// the round trips as JSON on stdout. The abuse bench (scenarios/abuse.ts)
// runs it beside each attack, so that what it measures is the server's
// answer time, not the attacking clients' own work on the bench's event loop.
//   node --import tsx bench/victim.ts URL TOKEN
const [url, token] = process.argv.slice(2) as [string, string];
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const init = await fetch(url, {
  method: 'POST',
  headers,
  body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'victim', version: '0' } } }),
});
const session = init.headers.get('mcp-session-id')!;
await init.text();
const post = (message: Record<string, unknown>) =>
  fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify(message) });
await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).text();

let running = true;
process.stdin.on('end', () => (running = false));
process.stdin.on('close', () => (running = false));
process.stdin.resume();
// Ready: the attack may start.
process.stderr.write('ready\n');
const pings: number[] = [];
let errors = 0;
for (let id = 1; running; id++) {
  const t0 = performance.now();
  try {
    const res = await post({ jsonrpc: '2.0', id, method: 'ping' });
    await res.text();
    if (!res.ok) errors++;
  } catch {
    errors++;
  }
  pings.push(performance.now() - t0);
  await new Promise((r) => setTimeout(r, 10));
}
process.stdout.write(JSON.stringify({ pings, errors }));
