// The official TypeScript SDK 2.x client (@modelcontextprotocol/client) against an
// MCP server, in one of its version-negotiation modes (ClientOptions.versionNegotiation):
//   legacy      initialize, a session (the default of the package)
//   auto        probes server/discover first, falls back to initialize
//   2026-07-28  { pin: '2026-07-28' }: the 2026-07-28 era only, no fallback
// Asserts the negotiated version is EXPECT, lists the tools, calls `echo`, a tool
// call with progress, the reconnection tool (a resumption in the session era; in
// the 2026-07-28 era the server answers on the same stream), then closes (DELETE in
// the session era). Prints one line; exits 1 on any failure.
//   node ts2-client.mjs URL [MODE] [EXPECT]      (TS2_TRACE=1 logs every HTTP exchange)
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2]);
const mode = process.argv[3] ?? 'auto';
const expect = process.argv[4];
const negotiation = mode === 'legacy' || mode === 'auto' ? mode : { pin: mode };
const fail = (m) => { console.error(`ts2-client ${mode}: ${m}`); process.exit(1); };
const timer = setTimeout(() => fail('timed out'), 20000);

// Every HTTP exchange on stderr when TS2_TRACE=1 (the request headers and body, the
// answer's status and content type), to show what the client sent when it fails.
const trace = process.env.TS2_TRACE === '1';
const tracingFetch = async (input, init = {}) => {
  const res = await fetch(input, init);
  if (trace) {
    const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries());
    console.error(`> ${init.method ?? 'GET'} ${input} ${JSON.stringify(headers)} ${init.body ?? ''}`);
    console.error(`< ${res.status} ${res.headers.get('content-type') ?? ''} session=${res.headers.get('mcp-session-id') ?? '-'}`);
  }
  return res;
};

const transport = new StreamableHTTPClientTransport(url, {
  fetch: tracingFetch,
  reconnectionOptions: { initialReconnectionDelay: 200, maxReconnectionDelay: 2000, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
});
const client = new Client({ name: 'ts2-interop', version: '0.0.1' }, { versionNegotiation: { mode: negotiation } });
try {
  await client.connect(transport);
  const version = client.getNegotiatedProtocolVersion();
  const era = client.getProtocolEra();
  if (expect && version !== expect) fail(`negotiated ${version} (era ${era}), expected ${expect}`);

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const n of ['echo', 'test_tool_with_progress', 'test_reconnection']) {
    if (!names.includes(n)) fail(`tools/list has no ${n}: ${names.join(', ')}`);
  }

  const e = await client.callTool({ name: 'echo', arguments: { text: 'hello ts2' } });
  const echoed = e.content?.[0]?.text ?? '';
  if (e.isError || !echoed.includes('hello ts2')) fail(`echo result: ${JSON.stringify(e)}`);

  let progress = 0;
  const p = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, { onprogress: () => { progress += 1; } });
  if (progress < 3) fail(`expected 3 progress notifications, got ${progress}`);
  if (p.isError || !p.content?.length) fail(`progress result: ${JSON.stringify(p)}`);

  const r = await client.callTool({ name: 'test_reconnection', arguments: {} });
  const text = r.content?.[0]?.text ?? '';
  if (!text.includes('Reconnection')) fail(`reconnection result: ${JSON.stringify(r)}`);

  let ended = 'none';
  if (transport.sessionId) { await transport.terminateSession(); ended = 'delete'; }
  if (era === 'legacy' && ended !== 'delete') fail('a session-era connection without a session id');
  if (era === 'modern' && transport.sessionId) fail(`a modern connection with a session id ${transport.sessionId}`);
  await client.close();
  clearTimeout(timer);
  console.log(`ts2-client ${mode} ok: version=${version} era=${era} tools=${names.length} echo=ok progress=${progress} reconnection=ok session-end=${ended}`);
  process.exit(0);
} catch (err) {
  fail(err?.stack ?? String(err));
}
