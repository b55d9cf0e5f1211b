-- wrk script: tools/call echo on one session (SID), every request with its own
-- JSON-RPC id (ids must not repeat while in flight). Counts bad answers and
-- prints p50/p99 in ms.
local sid = os.getenv("SID")
local threads, n = {}, 0

function setup(thread)
  n = n + 1
  thread:set("tid", n)
  table.insert(threads, thread)
end

function init(args)
  counter = tid * 100000000
  bad = 0
end

function request()
  counter = counter + 1
  return wrk.format("POST", nil, {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["Mcp-Session-Id"] = sid,
    ["Mcp-Protocol-Version"] = "2025-11-25",
  }, '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}')
end

function response(status, headers, body)
  if status ~= 200 or not body:find('"result"', 1, true) then bad = bad + 1 end
end

function done(summary, latency, requests)
  local b = 0
  for _, t in ipairs(threads) do b = b + t:get("bad") end
  io.write(string.format("RESULT rps=%.1f p50=%.3f p99=%.3f bad=%d errors=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000, b,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
