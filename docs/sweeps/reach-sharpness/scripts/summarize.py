"""The reach measurement in tables: learner successes per (d, k) and logit scale (median examples and seconds),
the boundaries learner.assumptions.SHARPNESS_REACH is made of, and what each remedy bought.

    python scripts/summarize.py OUT [variants-d8.jsonl ...]
"""
import json
import sys
from collections import defaultdict

import numpy as np

from learner.study.grids import grid_rows, reach_boundaries

out, variant_files = sys.argv[1], sys.argv[2:]
rows = [r for r in grid_rows(out, "ls-") if r["method"] == "provable"]
cells = defaultdict(list)
for r in rows:
    cells[(r["d"], r["k"], r["logit_scale"])].append(r)
scales = sorted({s for _, _, s in cells})
print("| d | k | " + " | ".join(f"scale {s:g}" for s in scales) + " |")
print("|---|---|" + "---|" * len(scales))
for d, k in sorted({(d, k) for d, k, _ in cells}):
    parts = []
    for s in scales:
        runs = cells.get((d, k, s), [])
        if not runs:
            parts.append("")
            continue
        ok = sum(r["success"] for r in runs)
        secs = float(np.median([r["seconds"] for r in runs]))
        parts.append(f"{ok}/{len(runs)} ({secs:.0f} s)")
    print(f"| {d} | {k} | " + " | ".join(parts) + " |")
print()
for (d, k), (scale, words) in reach_boundaries(out).items():
    print(f"boundary at (d, k) = ({d}, {k}): logit scale {scale:g} — {words}")
if variant_files:
    print()
    tally = defaultdict(lambda: [0, 0])
    for path in variant_files:
        for line in open(path, encoding="utf-8"):
            rec = json.loads(line)
            tally[rec["variant"]][0] += rec["success"]
            tally[rec["variant"]][1] += 1
    print("| remedy (same layer, same oracle seed) | failed layers learned |")
    print("|---|---|")
    for variant, (ok, n) in tally.items():
        print(f"| {variant} | {ok} of {n} |")
