// The official TypeScript SDK 2.x client (@modelcontextprotocol/client) as
// `probe-client`'s command:
// `node ts2-probe-client.mjs [legacy|auto] [--list-changed] URL`.
// Connects with the package's default transport options in that version
// negotiation mode, answers elicitations, calls MCP_PROBE_TOOL with
// MCP_PROBE_ARGUMENTS (JSON) MCP_PROBE_CALLS times at once (default 1),
// prints the results and exits 0; exits 1 on any failure. No deadline of its
// own unless MCP_PROBE_GIVE_UP_MS asks: then each call is given up that long
// after it was sent (the SDK's own request `timeout`), and the client stays
// connected MCP_PROBE_LINGER_MS, closes and exits 0; otherwise the prober
// bounds the run.
//
// With MCP_PROBE_LISTEN=tools it first listens for tool-list changes (a
// 2026-07-28 connection; the session era refuses `listen`, and then it only
// calls) and exits 0 only once it has learned of a change: from the
// notification, or from a tools/list after a new listen's acknowledgement.
// The SDK resolves a listen's `closed` with 'remote' when its stream is lost
// and never listens again by itself: this script, the application, does.
// With --list-changed it instead leaves the listen to the SDK, configured
// the documented way (`ClientOptions.listChanged`: the SDK opens the
// subscription on a 2026-07-28 connection and calls `onChanged` with the fresh
// list), and exits 0 once `onChanged` has had a list after the call.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[process.argv.length - 1]);
const flags = process.argv.slice(2, -1);
const mode = flags.find((f) => f === 'legacy' || f === 'auto') ?? 'legacy';
const bySdk = flags.includes('--list-changed');
const tool = process.env.MCP_PROBE_TOOL ?? 'test_simple_text';
const args = JSON.parse(process.env.MCP_PROBE_ARGUMENTS ?? '{}');
const calls = Math.max(1, Number(process.env.MCP_PROBE_CALLS || '1') || 1);
const giveUp = Number(process.env.MCP_PROBE_GIVE_UP_MS || '0') || 0;
const linger = Number(process.env.MCP_PROBE_LINGER_MS || '0') || 0;
const listenForTools = process.env.MCP_PROBE_LISTEN === 'tools';
setInterval(() => {}, 1000);
let changed = () => {};
const changedOnce = new Promise((resolve) => { changed = resolve; });
const listChanged = listenForTools && bySdk
  ? { tools: { onChanged: (error, tools) => { if (!error) { console.log(`onChanged: ${tools?.length} tools`); changed(); } } } }
  : undefined;
const client = new Client(
  { name: 'ts2-probe-client', version: '0.0.1' },
  { capabilities: { elicitation: {} }, versionNegotiation: { mode }, listChanged },
);
// The application takes MCP_PROBE_ANSWER_DELAY_MS to answer (0: at once).
const delay = Number(process.env.MCP_PROBE_ANSWER_DELAY_MS || '0') || 0;
client.setRequestHandler('elicitation/create', async () => {
  await new Promise((resolve) => setTimeout(resolve, delay));
  return { action: 'accept', content: { response: 'probe' } };
});
const fail = (e) => {
  console.error(`ts2-probe-client ${mode}: ${e?.stack ?? e}`);
  process.exit(1);
};
try {
  await client.connect(new StreamableHTTPClientTransport(url));
  let learned = Promise.resolve();
  if (listenForTools && bySdk && client.autoOpenedSubscription) {
    learned = changedOnce;
  } else if (listenForTools && !bySdk) {
    let listening = null;
    try {
      listening = await client.listen({ toolsListChanged: true });
    } catch (e) {
      console.error(`no listen (${e?.message ?? e}): changes come on the session's GET`);
    }
    if (listening) {
      let done;
      learned = new Promise((resolve) => { done = resolve; });
      // Change notifications on a listen stream reach the ordinary handlers.
      client.setNotificationHandler('notifications/tools/list_changed', () => {
        console.log('heard the tool-list change');
        done();
      });
      const watch = (sub) => sub.closed.then(async (cause) => {
        if (cause === 'local') return;
        console.error(`listen closed (${cause}); listening again`);
        watch(await client.listen({ toolsListChanged: true })); // rejects unacknowledged: exit 1
        // Nothing is replayed: the change may have gone with the lost
        // stream, and only a list has it.
        const { tools } = await client.listTools(undefined, { cacheMode: 'refresh' });
        console.log(`listening again; tools/list: ${tools.length} tools`);
        done();
      }).catch(fail);
      watch(listening);
    }
  }
  // MCP_PROBE_CALLS calls at once, each settled on its own: one that hangs
  // keeps the process waiting.
  const settled = await Promise.allSettled(
    Array.from({ length: calls }, () =>
      client.callTool({ name: tool, arguments: args }, giveUp ? { timeout: giveUp } : undefined)),
  );
  // A call given up (the SDK's REQUEST_TIMEOUT): the application lives on,
  // connected, as a long-lived one does, then closes.
  if (giveUp && settled.every((s) => s.status === 'rejected' && s.reason?.code === 'REQUEST_TIMEOUT')) {
    console.error(`ts2-probe-client ${mode}: gave the call up after ${giveUp} ms; staying ${linger} ms`);
    await new Promise((resolve) => setTimeout(resolve, linger));
    await client.close();
    process.exit(0);
  }
  let failed = false;
  for (const s of settled) {
    if (s.status === 'fulfilled') console.log(JSON.stringify(s.value));
    else console.error(`ts2-probe-client ${mode}: ${s.reason?.stack ?? s.reason}`);
    failed ||= s.status === 'rejected' || s.value.isError;
  }
  if (failed) process.exit(1);
  await learned;
  process.exit(0);
} catch (e) {
  fail(e);
}
