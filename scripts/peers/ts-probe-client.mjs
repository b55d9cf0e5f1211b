// The official TypeScript SDK 1.x client as `probe-client`'s command: connects
// to the URL given last with the SDK's default options, answers elicitations,
// calls MCP_PROBE_TOOL with MCP_PROBE_ARGUMENTS (JSON), prints the result and
// exits 0; exits 1 on any failure. It sets no deadline of its own: the prober
// bounds the run and judges a client still waiting at the bound.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const url = new URL(process.argv[process.argv.length - 1]);
const tool = process.env.MCP_PROBE_TOOL ?? 'test_simple_text';
const args = JSON.parse(process.env.MCP_PROBE_ARGUMENTS ?? '{}');
// Keeps the process alive while a promise waits on nothing the event loop
// holds (node would otherwise exit 13 and hide a hang).
setInterval(() => {}, 1000);
const client = new Client({ name: 'ts-probe-client', version: '0.0.1' }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { response: 'probe' } }));
try {
  await client.connect(new StreamableHTTPClientTransport(url));
  const r = await client.callTool({ name: tool, arguments: args });
  console.log(JSON.stringify(r));
  process.exit(r.isError ? 1 : 0);
} catch (e) {
  console.error(`ts-probe-client: ${e?.stack ?? e}`);
  process.exit(1);
}
