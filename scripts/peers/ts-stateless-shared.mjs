// An official TypeScript SDK 1.x server in stateless mode (no session ids),
// written the way CVE-2026-25536 / GHSA-345p-7cg4-v4c7 describes: one
// `StreamableHTTPServerTransport` and one `McpServer`, connected once and
// handed every POST. Below 1.26.0 the transport keys its streams by
// JSON-RPC id alone, so two callers that use one id get each other's
// answers; 1.26.0 refuses the second request instead. Tools: echo, notify,
// slow_progress (`steps` progress notifications `step_ms` apart, then the
// progress token as its result, as `serve`'s), the call the prober overlaps. Loopback only.
//   node ts-stateless-shared.mjs PORT
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { z } from 'zod';

const s = new McpServer({ name: 'ts-stateless-shared', version: '0.0.1' });
s.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
s.registerTool('notify', { description: 'sends notifications/tools/list_changed after delay_ms', inputSchema: { delay_ms: z.number().optional() } }, async ({ delay_ms }) => {
  const delay = Math.min(delay_ms ?? 0, 10000);
  setTimeout(() => s.sendToolListChanged(), delay);
  return { content: [{ type: 'text', text: `notifying in ${delay} ms` }] };
});
s.registerTool('slow_progress', { description: 'reports progress steps times, step_ms apart, then answers', inputSchema: { steps: z.number().optional(), step_ms: z.number().optional() } }, async ({ steps, step_ms }, extra) => {
  const n = Math.min(steps ?? 10, 100);
  const gap = Math.min(step_ms ?? 100, 1000);
  const token = extra._meta?.progressToken;
  for (let i = 1; i <= n; i++) {
    await new Promise((r) => setTimeout(r, gap));
    if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n } });
  }
  return { content: [{ type: 'text', text: token === undefined ? `${n} steps` : String(token) }] };
});

const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
await s.connect(transport);
const app = createMcpExpressApp();
app.post('/mcp', async (req, res) => {
  try {
    await transport.handleRequest(req, res, req.body);
  } catch (e) {
    if (!res.headersSent) res.status(500).json({ jsonrpc: '2.0', id: req.body?.id ?? null, error: { code: -32603, message: String(e?.message ?? e) } });
  }
});
app.get('/mcp', (_req, res) => res.status(405).set('Allow', 'POST').end());
app.delete('/mcp', (_req, res) => res.status(405).set('Allow', 'POST').end());
const port = Number(process.argv[2] ?? 3000);
app.listen(port, '127.0.0.1', () => console.log(`listening on ${port}`));
