"""The acceptance runs, (5, 16, 2), stage B: phase 6 run twice on a stage-A hull and one fresh example stream, in this
process, one after the other: the default (variable projection) and the earlier one (swap descent on the grid,
trust-region refinement of all 2md^2 parameters on 8 residuals per parameter)."""
import dataclasses, json, sys, time
import numpy as np
from learner import random_layer
from learner.io import write_json
from learner.oracle import LayerOracle
from learner.phases import LearnConfig
from learner.phases.search import search_heads

M, D, K = 5, 16, 2

def phase6(hull, truth, seed, cfg):
    src = LayerOracle(truth, K, rng=np.random.SeedSequence([seed, 6]))
    t = time.perf_counter()
    # as it ran: every setting from cfg, without the noise-floor test (held-out errors were at most 1e-30 anyway)
    p6 = search_heads(src, hull["theta_star"], hull["directions"], int(hull["m"]),
                      dataclasses.replace(cfg, noise_floor=False), truth=truth)
    return {"seconds": time.perf_counter() - t, "heldout_relative_error": p6.heldout_error, "summary": p6.summary()}

def main(out, seeds):
    for seed in seeds:
        layer_seed, _ = np.random.SeedSequence(seed).spawn(2)
        truth = random_layer(M, D, logit_scale=1.0, w_scale=1.0, rng=layer_seed)
        hull = dict(np.load(f"{out}/hull_s{seed}.npz"))
        cfg = LearnConfig()
        # new first, then old (resolve_config's choices do not touch phase 6's fields at m = 5 except net_points_3d)
        from learner.phases import resolve_config
        cfg, _ = resolve_config(cfg, M)
        res = {"seed": seed, "new": phase6(hull, truth, seed, cfg),
               "old": phase6(hull, truth, seed, dataclasses.replace(cfg, search="swap", refine="trf",
                                                                   refine_examples_per_param=8.0))}
        write_json(f"{out}/phase6_s{seed}.json", res)
        print(seed, {k: round(res[k]["seconds"], 2) for k in ("new", "old")},
              {k: res[k]["heldout_relative_error"] for k in ("new", "old")}, flush=True)

if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2:]])
