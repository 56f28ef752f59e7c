"""The acceptance runs, (5, 16, 2), stage A: each seed learned exactly as `python -m learner learn --m 5 --d 16 --k 2
--logit-scale 1 --workers 2 --seed S` does (same seeding, default LearnConfig, record written like --json);
the phase-5 hull of the run is saved for stage B (phase 6 old against new on the same hull)."""
import dataclasses, sys
import numpy as np
from learner import random_layer
from learner.learn import learn
from learner.io import write_json
from learner.oracle import LayerOracle
from learner.phases import LearnConfig

M, D, K = 5, 16, 2

def main(out, seeds):
    for seed in seeds:
        ss = np.random.SeedSequence(seed)
        layer_seed, oracle_seed = ss.spawn(2)
        truth = random_layer(M, D, logit_scale=1.0, w_scale=1.0, rng=layer_seed)
        config = LearnConfig()
        r = learn(LayerOracle(truth, K, rng=oracle_seed), m=M, config=config, truth=truth, progress=False, workers=2)
        write_json(f"{out}/m{M}_d{D}_k{K}_l1_s{seed}.json", {
            "command": "learn (via /tmp/acc22/p6_stageA.py, as the CLI with --workers 2)",
            "parameters": {"m": M, "d": D, "k": K, "logit_scale": 1.0, "seed": seed, "workers": 2},
            "seed_entropy": ss.entropy, "config": dataclasses.asdict(config), "result": r.to_dict()})
        if "5_span" in r.phases:
            p5 = r.phases["5_span"]
            np.savez(f"{out}/hull_s{seed}.npz", theta_star=p5.theta_star, directions=p5.directions, m=p5.m)
        print(seed, r.success, {k: round(v, 1) for k, v in r.timings.items()}, flush=True)

if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2:]])
