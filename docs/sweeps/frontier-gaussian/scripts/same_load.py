"""Same layer, same process, alternating: the learner's time on Boolean and on Gaussian inputs at (2, 12, 2) and
(3, 12, 2), layer 0 of the frontier's cells, one worker, one BLAS thread (the frontier's ratio of
times carries two different loads; this pairs the runs)."""
import time
from learner.sweep.runs import RunSpec, run_one
import numpy as np
for (m, d, k) in [(2, 12, 2), (3, 12, 2)]:
    t = {"boolean": [], "gaussian": []}
    for rep in range(3):
        for dist in ("boolean", "gaussian"):
            spec = RunSpec("provable", m, d, k, 0, 0, distribution=dist, logit_scale=1.0)
            rec = run_one(spec, learn_workers=1)
            t[dist].append(rec["timings"]["total"])
            assert rec["success"], rec["message"]
    b, g = np.median(t["boolean"]), np.median(t["gaussian"])
    print(f"({m}, {d}, {k}): boolean {t['boolean']} gaussian {t['gaussian']}; medians {b:.1f} s, {g:.1f} s, ratio {g / b:.2f}", flush=True)
