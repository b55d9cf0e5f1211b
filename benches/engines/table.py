"""Joins `check` lines and loom lines by (model, server, client) into one Markdown table."""
import re
import sys

check = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+(\S+) x (\S+)\s+(holds|\S+ \(\d+ steps\))\s+(\d+)\s+(\d+)\s+(\S+)\s+ok", line)
    if m:
        key = (m[1], m[2], m[3])
        check.setdefault(key, []).append((m[4], int(m[5]), m[6], m[7]))
print("| model | server x client | checker verdict | states | time | loom verdict | executions | time |")
print("|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[2]):
    m = re.match(r"loom (\S+) (\S+) x (\S+): (\d+) executions, ([\d.]+) s, (.*)", line)
    if not m:
        continue
    key = (m[1], m[2], m[3])
    loom_verdict = "holds" if m[6] == "None" else "deadlock (child process)" if "deadlock" in m[6] else re.sub(r'.*violates \{(.*)\}.*', r'\1', m[6]).replace('\\"', "").replace('"', "")
    rows = check.get(key, [])
    # Several checks for one pair (different judged invariants): the one agreeing with loom.
    row = next((r for r in rows if (r[0] == "holds") == (loom_verdict == "holds")), rows[0] if rows else None)
    c = f"{row[0]} | {row[1]:,} | {row[3]}" if row else "– | – | –"
    found = "" if loom_verdict == "holds" or m[4] == "0" else f" at execution {m[4]}"
    print(f"| {m[1]} | {m[2]} x {m[3]} | {c} | {loom_verdict}{found} | {int(m[4]):,} | {m[5]} s |".replace("| 0 |", "| – |"))
