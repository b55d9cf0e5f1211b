-- wrk script: session churn on one connection: initialize, initialized,
-- tools/call, DELETE, again. Prints completed sessions per second.
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) step = 0; sid = ""; sessions = 0; bad = 0 end

local base = { ["Content-Type"] = "application/json", ["Accept"] = "application/json, text/event-stream" }
local function with_sid(extra)
  local h = { ["Mcp-Session-Id"] = sid, ["Mcp-Protocol-Version"] = "2025-11-25" }
  for k, v in pairs(extra or {}) do h[k] = v end
  return h
end

function request()
  if step == 0 then
    return wrk.format("POST", nil, base, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"0"}}}')
  elseif step == 1 then
    return wrk.format("POST", nil, with_sid(base), '{"jsonrpc":"2.0","method":"notifications/initialized"}')
  elseif step == 2 then
    return wrk.format("POST", nil, with_sid(base), '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}')
  else
    return wrk.format("DELETE", nil, with_sid({}), "")
  end
end

function response(status, headers, body)
  if step == 0 then
    sid = headers["mcp-session-id"] or headers["Mcp-Session-Id"] or ""
    if sid == "" then bad = bad + 1 end
  end
  if status >= 400 then bad = bad + 1 end
  step = step + 1
  if step == 4 then step = 0; sessions = sessions + 1 end
end

function done(summary, latency, requests)
  local s, b = 0, 0
  for _, t in ipairs(threads) do s = s + t:get("sessions"); b = b + t:get("bad") end
  io.write(string.format("RESULT sessions_per_s=%.1f bad=%d\n", s / (summary.duration / 1e6), b))
end
