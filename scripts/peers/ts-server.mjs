// An official TypeScript SDK server (stateful, with an event store) for our
// client and for probe: tools echo, notify, test_tool_with_progress,
// test_reconnection, slow_progress (`steps` progress notifications `step_ms`
// apart, then an answer: the call the prober cancels halfway). Loopback only. `ts-server.mjs PORT --example-store` uses
// the SDK's own example `InMemoryEventStore` (the one many servers copy)
// instead of the store below.
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';

const exampleStore = process.argv.includes('--example-store');

// Event ids name their stream ("<stream>::<n>"), so resumption finds it.
class Store {
  constructor() { this.events = []; this.n = 0; }
  async storeEvent(streamId, message) { const id = `${streamId}::${++this.n}`; this.events.push({ id, streamId, message }); return id; }
  async getStreamIdForEventId(id) { return id.split('::')[0]; }
  async replayEventsAfter(last, { send }) {
    const i = this.events.findIndex((e) => e.id === last);
    if (i < 0) return '';
    const stream = this.events[i].streamId;
    for (const e of this.events.slice(i + 1)) if (e.streamId === stream) await send(e.id, e.message);
    return stream;
  }
}

const transports = {};
const app = createMcpExpressApp();
app.post('/mcp', async (req, res) => {
  const sid = req.headers['mcp-session-id'];
  let t = transports[sid];
  if (!t) {
    if (sid || !isInitializeRequest(req.body)) {
      return res.status(sid ? 404 : 400).json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad session' } });
    }
    t = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), eventStore: exampleStore ? new InMemoryEventStore() : new Store(), retryInterval: 300,
      onsessioninitialized: (id) => { transports[id] = t; } });
    t.onclose = () => { delete transports[t.sessionId]; };
    const s = new McpServer({ name: 'ts-interop-server', version: '0.0.1' });
    s.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
    s.registerTool('notify', { description: 'sends notifications/tools/list_changed after delay_ms', inputSchema: { delay_ms: z.number().optional() } }, async ({ delay_ms }) => {
      const delay = Math.min(delay_ms ?? 0, 10000);
      setTimeout(() => s.sendToolListChanged(), delay);
      return { content: [{ type: 'text', text: `notifying in ${delay} ms` }] };
    });
    s.registerTool('test_tool_with_progress', { description: 'progress', inputSchema: {} }, async (_a, extra) => {
      const token = extra._meta?.progressToken ?? 0;
      for (const p of [0, 50, 100]) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: p, total: 100 } });
        await new Promise((r) => setTimeout(r, 20));
      }
      return { content: [{ type: 'text', text: String(token) }] };
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
    s.registerTool('test_reconnection', { description: 'closes the stream, answers after the client resumed', inputSchema: {} }, async (_a, extra) => {
      extra.closeSSEStream?.();
      await new Promise((r) => setTimeout(r, 600));
      return { content: [{ type: 'text', text: 'Reconnection test completed' }] };
    });
    await s.connect(t);
  }
  await t.handleRequest(req, res, req.body);
});
const other = async (req, res) => {
  const t = transports[req.headers['mcp-session-id']];
  if (!t) return res.status(404).send('unknown session');
  await t.handleRequest(req, res);
};
app.get('/mcp', other);
app.delete('/mcp', other);
app.listen(Number(process.argv[2]), '127.0.0.1', () => console.log('ts-server ready'));
