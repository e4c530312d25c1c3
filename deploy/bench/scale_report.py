#!/usr/bin/env python3
"""The scale run's report (deploy/bench/scale.sh): prints a table per measured backend (a row
per figure, a column per size), merges the run's figures into the kept CSV (replacing the rows
of the backends it measured) and draws the SVG plot from that CSV.

    scale_report.py RUN_CSV KEPT_CSV SVG
"""
import csv, math, sys
run = list(csv.DictReader(open(sys.argv[1])))
measured = {r["backend"] for r in run}
try:
    kept = [r for r in csv.DictReader(open(sys.argv[2])) if r["backend"] not in measured]
except FileNotFoundError:
    kept = []
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["backend", "subordinates", "figure", "value"])
    w.writeheader()
    w.writerows(kept + run)
rows = run
labels = {
    "load_s": "bulk load, s", "ready_s": "start → ready, s (median of 2)",
    "snapshot_build_ms_start2": "of which the snapshot build, ms",
    "ready_tls_s": "start → ready with TLS on loopback (`sslmode=prefer`), s (one start)",
    "rss_ready_mb": "RSS when ready, MB", "list_bytes": "unfiltered list, bytes",
    "list_first_ms": "list, unfiltered, first after a change, ms",
    "list_repeat_ms": "list, unfiltered, repeated, median ms",
    "ec_worst_during_list_ms": "Entity Configuration, worst latency while that list is computed, ms",
    "list_type_first_ms": "list by entity_type (half), first after a change, ms",
    "list_type_repeat_ms": "list by entity_type, repeated, median ms",
    "list_intermediate_first_ms": "list intermediate=true (1 %), first after a change, ms",
    "list_intermediate_repeat_ms": "list intermediate=true, repeated, median ms",
    "rss_after_lists_mb": "RSS after the lists, MB",
    "fetch_random_cold_rps": "fetch, random subjects, statements not yet signed, req/s",
    "fetch_first_per_subject_rps": "fetch, first request per subject in order (signs each), req/s",
    "rss_all_signed_mb": "RSS after every subject was fetched once, MB",
    "statements_held_mb": "… of which signed statements held (cache.statements_max_bytes), MB",
    "fetch_random_warm_rps": "fetch, random subjects, warm, req/s",
    "fetch_random_warm_vs_responder": "… / responder serving one statement",
    "write_visible_p50_ms": "Admin API write → visible, p50 ms (n=100)",
    "write_visible_p99_ms": "Admin API write → visible, p99 ms",
    "replica_ready_s": "as a cluster replica: start → ready, s",
    "replica_rss_ready_mb": "as a cluster replica: RSS when ready, MB",
    "full_rebuild_ms": "full snapshot rebuild while serving (replica reload), ms",
    "full_rebuild_peak_rss_mb": "peak RSS during that rebuild, MB",
}
by = {}
for r in rows:
    by.setdefault(r["backend"], {}).setdefault(r["figure"], {})[int(r["subordinates"])] = r["value"]
for backend, figs in by.items():
    sizes = sorted({n for f in figs.values() for n in f})
    print(f"\nScale, {backend}:\n")
    print("| figure | " + " | ".join(f"{n:,}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for key, label in labels.items():
        if key in figs:
            print(f"| {label} | " + " | ".join(figs[key].get(n, "") for n in sizes) + " |")
# The plot, from every backend's latest figures: ready time (s) and RSS when ready (GB)
# against the size, log scale.
by = {}
for r in kept + run:
    by.setdefault(r["backend"], {}).setdefault(r["figure"], {})[int(r["subordinates"])] = r["value"]
W, H, L, B = 640, 360, 60, 40
series = [(b, f, c) for b, c in (("sqlite", "#1f77b4"), ("postgres", "#d62728")) if b in by
          for f in ("ready_s", "rss_ready_mb")]
pts = {}
for b, f, c in series:
    pts[(b, f)] = sorted((n, float(v) / (1024 if f == "rss_ready_mb" else 1))
                         for n, v in by[b].get(f, {}).items() if v)
allx = [n for p in pts.values() for n, _ in p] or [1, 10]
ally = [v for p in pts.values() for _, v in p] or [1]
x0, x1 = math.log10(min(allx)), math.log10(max(allx)) + 1e-9
y1 = max(ally) * 1.1 or 1
sx = lambda n: L + (math.log10(n) - x0) / (x1 - x0) * (W - L - 20)
sy = lambda v: H - B - v / y1 * (H - B - 20)
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<line x1="{L}" y1="{H-B}" x2="{W-20}" y2="{H-B}" stroke="black"/>',
       f'<line x1="{L}" y1="20" x2="{L}" y2="{H-B}" stroke="black"/>']
for n in sorted(set(allx)):
    out.append(f'<text x="{sx(n):.0f}" y="{H-B+15}" text-anchor="middle">{n:,}</text>')
for i in range(5):
    v = y1 * i / 4
    out.append(f'<text x="{L-5}" y="{sy(v)+4:.0f}" text-anchor="end">{v:.1f}</text>')
out.append(f'<text x="{W/2:.0f}" y="{H-5}" text-anchor="middle">subordinates (log scale)</text>')
for k, ((b, f, c)) in enumerate(series):
    p = pts[(b, f)]
    dash = "" if f == "ready_s" else ' stroke-dasharray="5,3"'
    out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="'
               + " ".join(f"{sx(n):.1f},{sy(v):.1f}" for n, v in p) + '"/>')
    name = f"{b}: {'ready, s' if f == 'ready_s' else 'RSS when ready, GB'}"
    out.append(f'<line x1="{L+10}" y1="{25+k*14}" x2="{L+30}" y2="{25+k*14}" stroke="{c}" stroke-width="2"{dash}/>'
               f'<text x="{L+35}" y="{29+k*14}">{name}</text>')
out.append("</svg>")
open(sys.argv[3], "w").write("\n".join(out) + "\n")
print(f"\nPlot: `deploy/bench/scale.svg` (ready time and RSS against the size).")
