"""Per-phase medians of the BLAS-thread runs (scripts/run.sh): python scripts/summarize.py records."""
import collections
import glob
import json
import re
import statistics
import sys

rows = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    m, d, k, b, load = re.search(r"m(\d+)_d(\d+)_k(\d+)_b(\d+)_(\w+?)_r\d+\.json$", f).groups()
    r = json.load(open(f))["result"]
    rows[(int(m), int(d), int(k), load, int(b))].append(r)
phases = ["1_crude_sum", "2_crude_sculpt", "3_refine_sum", "4_refined_sculpt", "5_span", "6_search", "total"]
print("(m, d, k) load  threads  runs ok  " + "  ".join(p.split("_")[0] for p in phases))
for key in sorted(rows):
    rs = rows[key]
    med = [statistics.median(r["timings"].get(p, 0.0) for r in rs) for p in phases]
    same = len({r["examples_drawn"] for r in rs}) == 1
    print(f"{key[:3]} {key[3]:>6} {key[4]:>3}  {len(rs)} {sum(r['success'] for r in rs)}/{len(rs)}  "
          + "  ".join(f"{x:6.1f}" for x in med) + ("" if same else "  (examples differ between repetitions)"))
