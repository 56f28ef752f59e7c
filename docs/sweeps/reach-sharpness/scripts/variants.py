"""What each change buys: every k = 2 layer of the reach measurement that the learner failed on,
learned again with Gaussian inputs, with min_weight 0.005 (a lower certification threshold) and with k = 3
tokens — the same layer and oracle seed. One JSON line per run and variant on standard output.

    python scripts/variants.py OUT D > variants-dD.jsonl
"""
import glob
import json
import sys
import time

import numpy as np

from learner import LayerOracle, LearnConfig, learn
from learner.sweep.runs import RunSpec, planted_instance

out, d = sys.argv[1], int(sys.argv[2])
for path in sorted(glob.glob(f"{out}/ls-*-d{d}/runs/provable-eval-*.json")):
    rec = json.load(open(path))
    if rec["success"] or rec["spec"]["k"] != 2:
        continue
    spec = RunSpec.from_dict(rec["spec"])
    for variant in ("gaussian", "min_weight=0.005", "k=3"):
        truth, oracle, mseed = planted_instance(spec)
        # the oracle's own seed (planted_instance's second child), for the same stream with other inputs
        oracle_seed = np.random.SeedSequence(spec.entropy, spawn_key=spec.spawn_key).spawn(3)[1]
        cfg, k = LearnConfig(), spec.k
        if variant == "gaussian":
            oracle = LayerOracle(truth, k, distribution="gaussian", rng=oracle_seed)
        elif variant == "k=3":
            oracle = LayerOracle(truth, 3, rng=oracle_seed)
        else:
            cfg = LearnConfig(min_weight=0.005)
        t = time.time()
        r = learn(oracle, m=2, config=cfg, truth=truth, rng=mseed, progress=False, workers=1)
        print(json.dumps({"run": rec["run_id"], "status_before": rec["status"], "variant": variant,
                          "success": r.success, "status": r.status, "examples": r.examples_drawn,
                          "seconds": round(time.time() - t, 1), "message": r.message[:140]}), flush=True)
