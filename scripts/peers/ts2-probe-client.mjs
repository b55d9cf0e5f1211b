// The official TypeScript SDK 2.x client (@modelcontextprotocol/client) as
// `probe-client`'s command: `node ts2-probe-client.mjs [legacy|auto] URL`.
// Connects with the package's default transport options in that version
// negotiation mode, answers elicitations, calls MCP_PROBE_TOOL with
// MCP_PROBE_ARGUMENTS (JSON), prints the result and exits 0; exits 1 on any
// failure. No deadline of its own: the prober bounds the run.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[process.argv.length - 1]);
const mode = process.argv.length > 3 ? process.argv[2] : 'legacy';
const tool = process.env.MCP_PROBE_TOOL ?? 'test_simple_text';
const args = JSON.parse(process.env.MCP_PROBE_ARGUMENTS ?? '{}');
setInterval(() => {}, 1000);
const client = new Client(
  { name: 'ts2-probe-client', version: '0.0.1' },
  { capabilities: { elicitation: {} }, versionNegotiation: { mode } },
);
client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { response: 'probe' } }));
try {
  await client.connect(new StreamableHTTPClientTransport(url));
  const r = await client.callTool({ name: tool, arguments: args });
  console.log(JSON.stringify(r));
  process.exit(r.isError ? 1 : 0);
} catch (e) {
  console.error(`ts2-probe-client ${mode}: ${e?.stack ?? e}`);
  process.exit(1);
}
