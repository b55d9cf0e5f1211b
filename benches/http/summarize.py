"""Medians per server from benches/http/run.sh results, with ratios to rmcp
and to the bare-hyper ceiling, as a Markdown table. Each ratio is given twice:
of the medians, and the median (and range) of the ratios round by round (the
two servers of a round ran seconds apart, so a slow spell of the machine
touches both; on this noisy machine that is the steadier figure)."""
import statistics
import sys
from collections import defaultdict

rows = defaultdict(lambda: defaultdict(list))
by_round = defaultdict(dict)  # (server, c) -> {round: rps}
cpu_by_round = defaultdict(dict)  # (server, c) -> {round: server CPU us per request}
for line in open(sys.argv[1]):
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    server = kv.get("server")
    if " churn " in line:
        rows[server]["churn"].append(float(kv["sessions_per_s"]))
    elif " idle " in line:
        rows[server]["idle"].append(float(kv["bytes_per_session"]))
        rows[server]["peak_kb"].append(float(kv["peak_kb"]))
    elif "c" in kv:
        c = kv["c"]
        rows[server][f"rps{c}"].append(float(kv["rps"]))
        if "round" in kv:
            by_round[(server, c)][kv["round"]] = float(kv["rps"])
        if "cpu_us" in kv:
            rows[server][f"cpu{c}"].append(float(kv["cpu_us"]))
            if "round" in kv:
                cpu_by_round[(server, c)][kv["round"]] = float(kv["cpu_us"])
        rows[server][f"p50_{c}"].append(float(kv["p50"]))
        rows[server][f"p99_{c}"].append(float(kv["p99"]))
        rows[server][f"bad{c}"].append(int(kv["bad"]) + int(kv["errors"]))

med = {s: {k: statistics.median(v) for k, v in d.items()} for s, d in rows.items()}
order = [s for s in ["before", "ours", "rmcp", "rmcp-core", "bare", "ts", "python"] if s in med]
print("| server | c=1 req/s | p50 / p99 ms | CPU us/req | c=32 req/s | p50 / p99 ms | CPU us/req | churn sessions/s | idle B/session | bad |")
print("|---|---|---|---|---|---|---|---|---|---|")
for s in order:
    m = med[s]
    def g(k, fmt="{:.0f}"):
        return fmt.format(m[k]) if k in m else "-"
    print(f"| {s} | {g('rps1')} | {g('p50_1', '{:.2f}')} / {g('p99_1', '{:.2f}')} | {g('cpu1', '{:.1f}')} | {g('rps32')} | {g('p50_32', '{:.2f}')} / {g('p99_32', '{:.2f}')} | {g('cpu32', '{:.1f}')} | {g('churn')} | {g('idle')} | {g('bad1')}+{g('bad32')} |")


def round_by_round(table, mine, ref):
    """The median (and range) of mine / ref over the rounds both ran, at c=1 and c=32."""
    out = []
    for c in ["1", "32"]:
        a, b = table.get((mine, c), {}), table.get((ref, c), {})
        ratios = sorted(a[k] / b[k] for k in a if k in b and b[k] > 0)
        if ratios:
            out.append(f"c={c} {statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})")
    return ", ".join(out)


for mine, ref in [("ours", "rmcp"), ("ours", "bare"), ("before", "bare"), ("ours", "before"), ("rmcp-core", "rmcp")]:
    if mine in med and ref in med:
        o, r = med[mine], med[ref]
        print(f"\n{mine} / {ref}: c=1 {o['rps1'] / r['rps1']:.2f}x, c=32 {o['rps32'] / r['rps32']:.2f}x"
              + (f", churn {o['churn'] / r['churn']:.2f}x" if 'churn' in r and 'churn' in o else ""))
        if paired := round_by_round(by_round, mine, ref):
            print(f"{mine} / {ref}, round by round: median (range) " + paired)
        if cpu := round_by_round(cpu_by_round, mine, ref):
            print(f"{mine} / {ref}, server CPU per request, round by round: " + cpu)
