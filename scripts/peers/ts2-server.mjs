// An official TypeScript SDK 2.x server (@modelcontextprotocol/server) for our
// client and for probe, serving both protocol eras on one endpoint, /mcp:
//   2026-07-28  createMcpHandler(factory, { legacy: 'reject' }): stateless, one
//               server instance per request; server/discover, subscriptions/listen
//   2025-11-25  requests isLegacyRequest() routes away from it go to sessionful
//               WebStandardStreamableHTTPServerTransports (with an event store);
//               the handler's own legacy fallback is stateless, with no sessions
// Tools echo, notify, test_tool_with_progress, test_reconnection, slow_progress (as ts-server.mjs).
// Loopback only; the SDK speaks fetch (Request/Response), adapted to node:http below.
//   node ts2-server.mjs PORT
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import {
  McpServer, WebStandardStreamableHTTPServerTransport, createMcpHandler, isLegacyRequest,
  isInitializeRequest, hostHeaderValidationResponse, localhostAllowedHostnames,
  originValidationResponse, localhostAllowedOrigins,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

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

const sessions = new Map(); // session id -> { t: transport, s: McpServer }

// notifications/tools/list_changed to every listener: each 2026-07-28 subscriptions/listen
// stream that asked for toolsListChanged, and each session's standalone GET stream.
function toolsChanged() {
  handler.notify.toolsChanged();
  for (const { s } of sessions.values()) s.sendToolListChanged();
}

// The same tools for both eras: a fresh instance per 2026-07-28 request, per legacy session.
function build() {
  const s = new McpServer({ name: 'ts2-interop-server', version: '0.0.1' });
  s.registerTool('echo', { description: 'echo', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  // SEP-2243: arguments mirrored as Mcp-Param-* headers, which the SDK checks on 2026-07-28 calls.
  s.registerTool('test_param_headers', {
    description: 'mirrors its annotated arguments as Mcp-Param-* headers',
    inputSchema: z.object({
      region: z.string().meta({ 'x-mcp-header': 'Region' }),
      priority: z.number().int().optional().meta({ 'x-mcp-header': 'Priority' }),
      verbose: z.boolean().optional().meta({ 'x-mcp-header': 'Verbose' }),
      query: z.string().optional(),
    }),
  }, async (args) => ({ content: [{ type: 'text', text: `headers agreed with: ${JSON.stringify(args)}` }] }));
  s.registerTool('notify', { description: 'sends notifications/tools/list_changed after delay_ms', inputSchema: z.object({ delay_ms: z.number().optional() }) }, async ({ delay_ms }) => {
    const delay = Math.min(Math.max(delay_ms ?? 0, 0), 10000);
    setTimeout(toolsChanged, delay);
    return { content: [{ type: 'text', text: `notifying in ${delay} ms` }] };
  });
  s.registerTool('test_tool_with_progress', { description: 'progress' }, async (ctx) => {
    const token = ctx.mcpReq._meta?.progressToken ?? 0;
    for (const p of [0, 50, 100]) {
      await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: p, total: 100 } });
      await new Promise((r) => setTimeout(r, 20));
    }
    return { content: [{ type: 'text', text: String(token) }] };
  });
  s.registerTool('slow_progress', { description: 'reports progress steps times, step_ms apart, then answers', inputSchema: z.object({ steps: z.number().optional(), step_ms: z.number().optional() }) }, async ({ steps, step_ms }, ctx) => {
    const n = Math.min(steps ?? 10, 100);
    const gap = Math.min(step_ms ?? 100, 1000);
    const token = ctx.mcpReq._meta?.progressToken;
    for (let i = 1; i <= n; i++) {
      await new Promise((r) => setTimeout(r, gap));
      if (token !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n } });
    }
    return { content: [{ type: 'text', text: token === undefined ? `${n} steps` : String(token) }] };
  });
  // Session era: closes the request's SSE stream (the client resumes with Last-Event-ID).
  // 2026-07-28 era: no closeSSE there, so it answers on the same stream.
  s.registerTool('test_reconnection', { description: 'closes the stream, answers after the client resumed' }, async (ctx) => {
    ctx.http?.closeSSE?.();
    await new Promise((r) => setTimeout(r, 600));
    return { content: [{ type: 'text', text: 'Reconnection test completed' }] };
  });
  return s;
}

const handler = createMcpHandler(() => build(), { legacy: 'reject' });

const jsonError = (status, message) => Response.json({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }, { status });

// 2025-era traffic: a session per initialize, found again by its Mcp-Session-Id.
async function legacy(request) {
  const sid = request.headers.get('mcp-session-id');
  if (sid) {
    const known = sessions.get(sid);
    return known ? known.t.handleRequest(request) : jsonError(404, 'Session not found');
  }
  const body = request.method === 'POST' ? await request.clone().json().catch(() => undefined) : undefined;
  if (!isInitializeRequest(body)) return jsonError(400, 'Bad Request: no valid session ID');
  const s = build();
  const t = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(), eventStore: new Store(), retryInterval: 300,
    onsessioninitialized: (id) => { sessions.set(id, { t, s }); },
  });
  t.onclose = () => { sessions.delete(t.sessionId); };
  await s.connect(t);
  return t.handleRequest(request);
}

async function serve(request) {
  // DNS-rebinding guard: createMcpHandler itself validates neither Host nor Origin.
  const rejected = hostHeaderValidationResponse(request, localhostAllowedHostnames())
    ?? originValidationResponse(request, localhostAllowedOrigins());
  if (rejected) return rejected;
  if (new URL(request.url).pathname !== '/mcp') return new Response('not found', { status: 404 });
  return (await isLegacyRequest(request)) ? legacy(request) : handler.fetch(request);
}

// node:http <-> fetch: the body is read whole; the Request's signal aborts and the
// Response's stream is cancelled when the client goes away (ends listen/GET streams).
createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  const abort = new AbortController();
  const hasBody = chunks.length > 0 && req.method !== 'GET' && req.method !== 'HEAD';
  const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url}`, {
    method: req.method, headers, body: hasBody ? Buffer.concat(chunks) : undefined, signal: abort.signal,
  });
  let reader;
  res.on('close', () => { if (!res.writableFinished) abort.abort(); reader?.cancel().catch(() => {}); });
  try {
    const response = await serve(request);
    if (res.destroyed) return void response.body?.cancel().catch(() => {});
    res.writeHead(response.status, [...response.headers].flat());
    res.flushHeaders();
    if (response.body) {
      reader = response.body.getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) res.write(r.value);
    }
    res.end();
  } catch (err) {
    console.error('ts2-server:', err);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
}).listen(Number(process.argv[2]), '127.0.0.1', () => console.log('ts2-server ready'));
