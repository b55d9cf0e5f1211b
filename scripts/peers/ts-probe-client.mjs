// The official TypeScript SDK 1.x client as `probe-client`'s command: connects
// to the URL given last with the SDK's default options, answers elicitations,
// calls MCP_PROBE_TOOL with MCP_PROBE_ARGUMENTS (JSON) MCP_PROBE_CALLS times at
// once (default 1), prints the results and exits 0; exits 1 on any failure.
// With MCP_PROBE_GIVE_UP_MS it gives each call up that long after sending it
// (the SDK's own request `timeout`), stays connected MCP_PROBE_LINGER_MS,
// closes and exits 0.
// It sets no deadline of its own: the prober bounds the run and judges a
// client still waiting at the bound. The 1.x SDK speaks only the session
// era, which has no `subscriptions/listen` (list changes come on its GET), so
// MCP_PROBE_LISTEN asks nothing of it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const url = new URL(process.argv[process.argv.length - 1]);
const tool = process.env.MCP_PROBE_TOOL ?? 'test_simple_text';
const args = JSON.parse(process.env.MCP_PROBE_ARGUMENTS ?? '{}');
const calls = Math.max(1, Number(process.env.MCP_PROBE_CALLS || '1') || 1);
const giveUp = Number(process.env.MCP_PROBE_GIVE_UP_MS || '0') || 0;
const linger = Number(process.env.MCP_PROBE_LINGER_MS || '0') || 0;
// Keeps the process alive while a promise waits on nothing the event loop
// holds (node would otherwise exit 13 and hide a hang).
setInterval(() => {}, 1000);
const client = new Client({ name: 'ts-probe-client', version: '0.0.1' }, { capabilities: { elicitation: {} } });
// The application takes MCP_PROBE_ANSWER_DELAY_MS to answer (0: at once).
const delay = Number(process.env.MCP_PROBE_ANSWER_DELAY_MS || '0') || 0;
client.setRequestHandler(ElicitRequestSchema, async () => {
  await new Promise((resolve) => setTimeout(resolve, delay));
  return { action: 'accept', content: { response: 'probe' } };
});
try {
  await client.connect(new StreamableHTTPClientTransport(url));
  // MCP_PROBE_CALLS calls at once, each settled on its own: one that hangs
  // keeps the process waiting.
  const settled = await Promise.allSettled(
    Array.from({ length: calls }, () =>
      client.callTool({ name: tool, arguments: args }, undefined, giveUp ? { timeout: giveUp } : undefined)),
  );
  // A call given up (-32001, the SDK's RequestTimeout): the application
  // lives on, connected, as a long-lived one does, then closes.
  if (giveUp && settled.every((s) => s.status === 'rejected' && s.reason?.code === -32001)) {
    console.error(`ts-probe-client: gave the call up after ${giveUp} ms; staying ${linger} ms`);
    await new Promise((resolve) => setTimeout(resolve, linger));
    await client.close();
    process.exit(0);
  }
  let failed = false;
  for (const s of settled) {
    if (s.status === 'fulfilled') console.log(JSON.stringify(s.value));
    else console.error(`ts-probe-client: ${s.reason?.stack ?? s.reason}`);
    failed ||= s.status === 'rejected' || s.value.isError;
  }
  process.exit(failed ? 1 : 0);
} catch (e) {
  console.error(`ts-probe-client: ${e?.stack ?? e}`);
  process.exit(1);
}
