"""Summarise the acceptance runs' records (python -m learner learn --json) per setting."""
import json, sys, glob, statistics as st, collections, re
rows = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    r = json.load(open(f))
    if "result" not in r:
        continue
    p = r["parameters"]; res = r["result"]
    key = (p["m"], p["d"], p["k"], p.get("logit_scale"))
    e = res.get("errors", {})
    ok = res["success"] and (e.get("relative_error") or 1) < 1e-8 and (e.get("param_error") or 1) < 1e-5
    d4 = res["diagnostics"].get("4_refined_sculpt", {})
    ratios = [x["forecast_ratio"] for x in d4.get("rounds", []) if x.get("forecast_ratio") is not None]
    # Examples up to the target's / forecast: recorded from commit "phase 4 records the example ..." on.
    needed = [x["needed_ratio"] for x in d4.get("rounds", []) if x.get("needed_ratio") is not None]
    d5 = res["diagnostics"].get("5_span", {})
    m = p["m"]
    gap = d5.get("gap_ratios", [None] * 8)[m - 2] if m > 1 and d5.get("gap_ratios") else None
    cos = min(d5.get("principal_cosines") or [1.0])
    wall = None
    txt = f[:-5] + ".txt"
    try:
        mm = re.search(r"([\d.]+) s wall", open(txt).read()); wall = float(mm.group(1)) if mm else None
    except OSError:
        pass
    rows[key].append(dict(ok=ok, ex=res["examples_drawn"], t=res["timings"], status=res["status"], fr=ratios, nr=needed,
                          gap=gap, cos=cos, err=(e.get("relative_error"), e.get("param_error")), wall=wall,
                          s3=res["diagnostics"].get("3_refine_sum", {}).get("sum_w_error"), f=f.split("/")[-1]))
ph = ["1_crude_sum", "2_crude_sculpt", "3_refine_sum", "4_refined_sculpt", "5_span", "6_search"]
for key, rs in sorted(rows.items()):
    n = len(rs); s = sum(r["ok"] for r in rs)
    med = lambda xs: st.median(xs) if xs else float("nan")
    tot = [r["t"]["total"] for r in rs]
    print(f"{key}: {s}/{n} ok; examples {med([r['ex'] for r in rs])/1e6:.1f} M ({min(r['ex'] for r in rs)/1e6:.1f}-{max(r['ex'] for r in rs)/1e6:.1f}); "
          f"time {med(tot):.0f} s ({min(tot):.0f}-{max(tot):.0f}); walls {[r['wall'] for r in rs]}")
    print("   phases median: " + " / ".join(f"{med([r['t'].get(p, 0) for r in rs]):.1f}" for p in ph))
    print("   totals:", [round(x) for x in tot])
    print("   phase6:", [round(r["t"].get("6_search", 0), 1) for r in rs])
    print("   forecast ratios (drawn/forecast):", [[round(x, 2) for x in r["fr"]] for r in rs])
    if any(r["nr"] for r in rs):
        print("   needed/forecast:", [[round(x, 2) for x in r["nr"]] for r in rs])
    print("   gap ratio at m-1:", [None if r["gap"] is None else round(r["gap"], 2) for r in rs], "min cos", round(min(r["cos"] for r in rs), 4))
    print("   worst errors:", max(r["err"][0] or 0 for r in rs), max(r["err"][1] or 0 for r in rs), " sumW err:", [round(r["s3"], 4) if r["s3"] else None for r in rs])
    bad = [(r["status"], r["f"]) for r in rs if not r["ok"]]
    if bad: print("   FAILS:", bad)
