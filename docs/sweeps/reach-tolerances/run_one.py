"""Pilot-candidate study: base vs loose ADAPTIVE_CANDIDATES, one run, CLI semantics (seed -> layer, oracle)."""
import json, sys, time
import learner.phases.sculpt as sculpt
import learner.phases.forecast as forecast
from learner.cli import main

m, d, seed, variant, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
workers = sys.argv[6] if len(sys.argv) > 6 else "1"
ftol = float(sys.argv[7]) if len(sys.argv) > 7 else None
if ftol is not None:
    import learner.phases.search as search
    search._vp_search.__kwdefaults__["ftol"] = ftol
    variant_tag = f"{variant}_f{ftol:g}"
else:
    variant_tag = variant
LOOSE = (0.015, 0.02, 0.03, 0.05, 0.08, 0.1, 0.12, 0.15)
if variant == "loose":
    sculpt.ADAPTIVE_CANDIDATES = LOOSE
    forecast.ADAPTIVE_CANDIDATES = LOOSE
    sculpt.REACH_CANDIDATES = ()  # after ebd9356 the looser tolerances have a tier of their own; here they are plain
path = f"/tmp/p63/run_{m}_{d}_{seed}_{variant_tag}.json"
t = time.time()
rc = main(["learn", "--m", str(m), "--d", str(d), "--k", "2", "--logit-scale", "1", "--seed", str(seed),
           "--no-progress", "--workers", workers, "--json", path])
wall = time.time() - t
r = json.load(open(path))["result"]
dg = r["diagnostics"]
row = {"m": m, "d": d, "seed": seed, "variant": variant_tag, "rc": rc, "wall": wall, "success": r["success"],
       "heldout": dg["6_search"].get("heldout_relative_error"), "examples": r["examples_drawn"],
       "tol": dg["4_refined_sculpt"].get("tol"), "p4_examples": dg["4_refined_sculpt"]["examples"],
       "timings": r["timings"], "tight_retry": "tight_retry" in dg["4_refined_sculpt"], "evals": dg["6_search"].get("tuples_scored"), "ref_evals": dg["6_search"].get("refinement_evaluations"), "quart": dg["6_search"].get("start_residuals_quartiles"), "warm": dg["6_search"].get("warm_start_heldout_relative_error")}
with open(out, "a") as f:
    f.write(json.dumps(row) + "\n")
print(json.dumps(row))
