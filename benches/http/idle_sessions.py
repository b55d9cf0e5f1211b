"""Opens N idle sessions (initialize + initialized) on a server and reports its
memory: RSS before and after, the peak, and the growth per session.
Usage: idle_sessions.py URL PID N"""
import http.client
import json
import sys
import urllib.parse


def rss_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main(url, pid, n):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    before = rss_kb(pid, "VmRSS")
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "idle", "version": "0"}}})
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    opened = 0
    for _ in range(n):
        conn.request("POST", u.path, init, base)
        r = conn.getresponse()
        sid = r.getheader("mcp-session-id")
        r.read()
        if not sid:
            continue
        h = dict(base, **{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"})
        conn.request("POST", u.path, '{"jsonrpc":"2.0","method":"notifications/initialized"}', h)
        conn.getresponse().read()
        opened += 1
    after = rss_kb(pid, "VmRSS")
    peak = rss_kb(pid, "VmHWM")
    per = (after - before) * 1024 / max(opened, 1)
    print(f"RESULT sessions={opened} rss_before_kb={before} rss_after_kb={after} peak_kb={peak} bytes_per_session={per:.0f}")


main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
