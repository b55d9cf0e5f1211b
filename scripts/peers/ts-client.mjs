// The official TypeScript SDK client against an MCP server: initialize, a tool
// call with SSE and progress, a resumption after the server closes the stream,
// DELETE. Prints one line; exits 1 on any failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.argv[2]);
const transport = new StreamableHTTPClientTransport(url, {
  reconnectionOptions: { initialReconnectionDelay: 200, maxReconnectionDelay: 2000, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
});
const client = new Client({ name: 'ts-interop', version: '0.0.1' });
const fail = (m) => { console.error(`ts-client: ${m}`); process.exit(1); };
const timer = setTimeout(() => fail('timed out'), 20000);
try {
  await client.connect(transport);
  let progress = 0;
  const p = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, { onprogress: () => { progress += 1; } });
  if (progress < 3) fail(`expected 3 progress notifications, got ${progress}`);
  if (!p.content?.length) fail('empty progress result');
  const r = await client.callTool({ name: 'test_reconnection', arguments: {} });
  const text = r.content?.[0]?.text ?? '';
  if (!text.includes('Reconnection')) fail(`reconnection result: ${JSON.stringify(r)}`);
  await transport.terminateSession();
  await client.close();
  clearTimeout(timer);
  console.log(`ts-client ok: progress=${progress} reconnection=ok delete=ok`);
  process.exit(0);
} catch (e) {
  fail(e?.stack ?? String(e));
}
