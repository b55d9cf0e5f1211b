// The official TypeScript SDK client against a server that requires a bearer
// token (`serve --auth-token alice-1=alice --auth-token alice-2=alice
// --auth-token bob-1=bob`): without a token it is refused (401, and the
// challenge names the resource's metadata, which is served there); with
// alice's token it has a session and calls a tool; with her refreshed token
// the same session goes on; bob, given alice's session id, is refused as for
// an unknown session (404). Prints one line; exits 1 on any failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.argv[2]);
const fail = (m) => { console.error(`ts-auth-client: ${m}`); process.exit(1); };
const timer = setTimeout(() => fail('timed out'), 20000);
const bearer = (token) => ({ requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const echo = async (client, text) => {
  const r = await client.callTool({ name: 'test_simple_text', arguments: {} });
  if (!r.content?.length) fail(`empty result for ${text}: ${JSON.stringify(r)}`);
};
try {
  // No token: refused, and told where the metadata is.
  const raw = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } } }),
  });
  if (raw.status !== 401) fail(`no token: ${raw.status}, not 401`);
  const challenge = raw.headers.get('www-authenticate') ?? '';
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  if (!metadataUrl) fail(`no resource_metadata in ${JSON.stringify(challenge)}`);
  const metadata = await (await fetch(metadataUrl)).json();
  if (metadata.resource !== url.href) fail(`metadata names ${metadata.resource}, not ${url.href}`);
  let refused = false;
  try {
    await new Client({ name: 'anonymous', version: '0' }).connect(new StreamableHTTPClientTransport(url));
  } catch { refused = true; }
  if (!refused) fail('the SDK client without a token was served');

  // Alice: a session, a call; her token refreshed: the same session.
  const alice = new Client({ name: 'alice', version: '0' });
  const aliceTransport = new StreamableHTTPClientTransport(url, bearer('alice-1'));
  await alice.connect(aliceTransport);
  const sessionId = aliceTransport.sessionId;
  if (!sessionId) fail('no session id');
  await echo(alice, 'alice-1');
  const listed = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer alice-2', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
  });
  if (listed.status !== 200) fail(`alice's refreshed token: ${listed.status}`);

  // Bob, with alice's session id: the unknown session's 404.
  const bobTransport = new StreamableHTTPClientTransport(url, { ...bearer('bob-1'), sessionId });
  let bobStatus = 'served';
  bobTransport.onerror = () => {};
  try {
    await bobTransport.start();
    await bobTransport.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  } catch (e) {
    bobStatus = String(e?.code ?? e?.message ?? e);
  }
  if (!bobStatus.includes('404')) fail(`bob with alice's session id: ${bobStatus}`);
  await echo(alice, 'after bob');
  await aliceTransport.terminateSession();
  await alice.close();
  clearTimeout(timer);
  console.log('ts-auth-client ok: 401+metadata, session with a token, refresh keeps it, a stolen id gets 404');
  process.exit(0);
} catch (e) {
  fail(e?.stack ?? String(e));
}
