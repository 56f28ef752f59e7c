"""Reproduce the yield-model figures: the simulated rule, the learner's records, the Gaussian and the slice model.

Usage (from the repository root, one thread):
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/sweeps/yield-model/measure.py records
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/sweeps/yield-model/measure.py settings
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/sweeps/yield-model/measure.py slices
Writes records.json / settings.json / slices.json and prints Markdown tables (kept as *.md beside them).

records:  every run of docs/sweeps/growth/d24/runs (k = 2, d = 24, logit scale 1, phase-4 tol and
          min_weight from the record: 0.1 and 0.02): the planted layer rebuilt from the spec
          (learner.sweep.runs.planted_instance), the certification rule simulated with the true ΣW
          (theory.yield_model.measured_yield), the learner's own phase-4 yield, the Gaussian model and the
          slice model (predicted_yield density="gaussian" / "slice", geometry "conditional"), and two
          ablations that are not in the library: the row-conditional density at 0 times the window volume
          (the hypothesis E_X[φ(0 | x_a) N_use vol]) and the slice density at 0 times the volume (no window
          integral).
settings: other settings (random_layer(m, d, logit_scale=1), seeds 0, 1), Boolean and Gaussian tokens.
slices:   at m = 10 (record seed 0): certified rows of the simulated rule by Hamming distance r between
          the two tokens, against the slice model's yield by r.
"""
import glob
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from learner import random_layer
from learner.sweep.runs import RunSpec, planted_instance
from theory.yield_model import (
    _conditional_law,
    _log_unit_ball,
    _relative_moments,
    _slice_examples,
    _window,
    _window_probability,
    disagreement_moments,
    measured_yield,
    predicted_yield,
)

OUT = str(Path(__file__).resolve().parent)  # this folder
ROOT = Path(__file__).resolve().parents[3]
N_GEOMETRY = 20_000


def sim_examples(n):
    """Examples of the simulated rule: enough for ~1000 certified rows at the yields of the d = 24 line."""
    return 200_000 if n <= 2 else 500_000 if n <= 5 else 2_000_000


def ablations(layer, k, tol, min_weight, rng):
    """Two density models that the library does not offer, on the same geometry as the Gaussian model.

    row:   k E_X[φ(0 | x_a) N_use vol], φ(0 | x_a) the Gaussian with the exact moments of D given x_a only;
    slice-dv: k E_X[φ(0 | x_a, r) N_use vol] over slice-drawn examples (importance weighted), no window integral.
    Both with the pattern of geometry="conditional" (the unconditional regression on D).
    """
    from learner import sample_inputs

    T, ws = layer.thetas, layer.ws
    w_sum = ws.sum(axis=0)
    q, d = layer.m - 1, layer.d
    n = q * (k - 1)
    mean, cov = disagreement_moments(T, k)
    _, joint = _relative_moments(np.concatenate([T[:1], T[1:] - T[:1]]), k, "boolean")
    regression = np.linalg.solve(cov, joint[k - 1:, : k - 1]).T
    out = {}
    for name in ("row", "slice-dv"):
        vals = []
        for _ in range(N_GEOMETRY // 4000):
            if name == "row":
                X, r, weight = sample_inputs(4000, k, d, rng=rng), None, np.ones(4000)
                ok = np.ones(4000, dtype=bool)
            else:
                X, r, weight = _slice_examples(4000, k, d, rng)
                ok = np.all((r > 0) & (r < d), axis=1)
            mu, C, _, regular = _conditional_law(T, X[:, 0], k, r)
            ok &= regular
            Mt, _, n_use, wp = _window(X, T, ws, w_sum, min_weight=min_weight, regression=regression)
            s = np.linalg.svd(Mt, compute_uv=False)
            logvol = _log_unit_ball(n) + n * math.log(tol) - np.log(s).sum(axis=1)
            dens = np.zeros(4000)
            L = np.linalg.cholesky(C[ok])
            z = np.linalg.solve(L, -mu[ok][..., None])[..., 0]
            dens[ok] = np.exp(-0.5 * n * math.log(2 * math.pi) - np.log(np.diagonal(L, axis1=2, axis2=3)).sum(
                axis=(1, 2)) - 0.5 * (z**2).sum(axis=(1, 2)))
            vals.append(np.where(wp & ok, weight * dens * np.exp(logvol) * n_use, 0.0))
        v = np.concatenate(vals)
        out[name] = (1000 * k * v.mean(), 1000 * k * v.std(ddof=1) / math.sqrt(v.size))
    return out


def table():
    """Re-render records.md from records.json."""
    table_ = records_table(json.load(open(f"{OUT}/records.json")))
    open(f"{OUT}/records.md", "w").write(table_ + "\n")
    print(table_)


def records():
    rows = []
    files = sorted(glob.glob(str(ROOT / "docs" / "sweeps" / "growth" / "d24" / "runs" / "*.json")))
    for f in files:
        rec = json.load(open(f))
        p4 = (rec.get("diagnostics") or {}).get("4_refined_sculpt")
        if rec.get("outcome") != "finished" or p4 is None:
            continue
        spec = RunSpec.from_dict(rec["spec"])
        layer = planted_instance(spec)[0]
        k, tol, mw = spec.k, p4["tol"], p4["min_weight"]
        n = (spec.m - 1) * (k - 1)
        seeds = np.random.SeedSequence([2024, spec.m, spec.seed_index]).spawn(4)
        t0 = time.perf_counter()
        sim = measured_yield(layer, k, tol=tol, min_weight=mw, n_examples=sim_examples(n), rng=seeds[0])
        old = predicted_yield(layer, k, tol=tol, min_weight=mw, density="gaussian", n_geometry=N_GEOMETRY, rng=seeds[1])
        new = predicted_yield(layer, k, tol=tol, min_weight=mw, density="slice", n_geometry=N_GEOMETRY, rng=seeds[2])
        abl = ablations(layer, k, tol, mw, np.random.default_rng(seeds[3])) if n else {}
        row = {"m": spec.m, "d": spec.d, "k": k, "seed_index": spec.seed_index, "tol": tol, "min_weight": mw,
               "sim": sim.constraints_per_1000, "sim_interval": list(sim.interval), "sim_rows": sim.rows_certified,
               "sim_examples": sim.n_examples,
               "learner_certified": p4["certified_per_1000_examples"],
               "learner_kept": p4["constraints_per_1000_examples"], "learner_examples": p4["examples"],
               "learner_stopped": p4.get("stopped"),
               "gaussian": old.constraints_per_1000, "gaussian_se": old.standard_error,
               "slice": new.constraints_per_1000, "slice_se": new.standard_error,
               "gaussian_density_at_0": old.density_at_zero, "slice_density_at_0": new.density_at_zero,
               **{f"{key}": val for key, (val, _) in abl.items()}, **{f"{key}_se": se for key, (_, se) in abl.items()},
               "seconds": time.perf_counter() - t0}
        rows.append(row)
        print(json.dumps({k_: (round(v, 4) if isinstance(v, float) else v) for k_, v in row.items()
                          if not isinstance(v, list)}), flush=True)
    json.dump(rows, open(f"{OUT}/records.json", "w"), indent=1)
    table = records_table(rows)
    open(f"{OUT}/records.md", "w").write(table + "\n")
    print(table)


def gmean(x):
    return float(np.exp(np.mean(np.log(x))))


def records_table(rows):
    lines = ["| m | n | layers | simulated rule /1000 (± se) | learner (records) /1000 | Gaussian model | slice model "
             "| sim / Gaussian (per layer) | sim / slice (per layer) | learner / slice (per layer) "
             "| sim / row-cond. φ(0)·vol | sim / slice φ(0)·vol |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in sorted({r["m"] for r in rows}):
        rs = [r for r in rows if r["m"] == m]
        sim = np.array([r["sim"] for r in rs])
        se = np.array([(r["sim_interval"][1] - r["sim_interval"][0]) / (2 * 1.96) for r in rs])
        lrn = np.array([r["learner_certified"] for r in rs])
        g = np.array([r["gaussian"] for r in rs])
        s = np.array([r["slice"] for r in rs])
        s_se = np.array([r["slice_se"] for r in rs])

        def rng_(a):
            return f"{gmean(a):.3g} ({a.min():.3g}–{a.max():.3g})"

        abl = ""
        if "row" in rs[0]:
            abl = (f" | {rng_(sim / np.array([r['row'] for r in rs]))} | "
                   f"{rng_(sim / np.array([r['slice-dv'] for r in rs]))}")
        else:
            abl = " | – | –"
        lines.append(
            f"| {m} | {m - 1} | {len(rs)} | {sim.mean():.3g} (± {math.sqrt((se**2).sum()) / len(rs):.2g}) | "
            f"{lrn.mean():.3g} | {g.mean():.3g} | {s.mean():.3g} (± {math.sqrt((s_se**2).sum()) / len(rs):.2g}) | "
            f"{rng_(sim / g)} | {rng_(sim / s)} | {rng_(lrn / s)}{abl} |")
    return "\n".join(lines)


SETTINGS = [
    # (m, d, k, tol, distribution): the module's earlier measured settings (tol 0.015–0.03), wide windows at
    # k = 3, 4 (tol 0.1), the check's default case, and Gaussian tokens.
    (2, 12, 2, 0.015, "boolean"), (3, 12, 2, 0.015, "boolean"), (4, 12, 2, 0.015, "boolean"),
    (2, 12, 3, 0.015, "boolean"), (3, 12, 3, 0.015, "boolean"), (2, 12, 4, 0.015, "boolean"),
    (5, 16, 2, 0.03, "boolean"), (3, 16, 4, 0.03, "boolean"), (4, 24, 3, 0.1, "boolean"), (4, 24, 4, 0.1, "boolean"),
    (7, 24, 2, 0.1, "boolean"), (10, 24, 2, 0.08, "boolean"), (8, 20, 2, 0.08, "boolean"),
    (2, 12, 2, 0.015, "gaussian"), (3, 12, 2, 0.015, "gaussian"), (4, 12, 2, 0.015, "gaussian"),
    (2, 12, 3, 0.015, "gaussian"), (4, 24, 2, 0.1, "gaussian"), (7, 24, 2, 0.1, "gaussian"),
    (10, 24, 2, 0.1, "gaussian"),
]


def settings():
    rows = []
    for (m, d, k, tol, dist) in SETTINGS:
        for seed in (0, 1):
            layer = random_layer(m, d, logit_scale=1.0, rng=seed)
            seeds = np.random.SeedSequence([7, m, d, k, seed]).spawn(3)
            t0 = time.perf_counter()
            sim = measured_yield(layer, k, tol=tol, min_weight=0.02, n_examples=1_000_000, distribution=dist,
                                 rng=seeds[0])
            g = predicted_yield(layer, k, tol=tol, min_weight=0.02, distribution=dist, n_geometry=N_GEOMETRY,
                                rng=seeds[1])
            s = predicted_yield(layer, k, tol=tol, min_weight=0.02, distribution=dist, density="slice",
                                n_geometry=N_GEOMETRY, rng=seeds[2])
            row = {"m": m, "d": d, "k": k, "tol": tol, "distribution": dist, "seed": seed,
                   "sim": sim.constraints_per_1000, "sim_rows": sim.rows_certified,
                   "gaussian": g.constraints_per_1000, "gaussian_se": g.standard_error,
                   "slice": s.constraints_per_1000, "slice_se": s.standard_error,
                   "seconds": time.perf_counter() - t0}
            rows.append(row)
            print(f"({m},{d},{k}) tol {tol} {dist} seed {seed}: sim {row['sim']:.3g} ({row['sim_rows']} rows) "
                  f"gaussian {row['gaussian']:.3g} ({row['sim'] / row['gaussian']:.2f}) slice {row['slice']:.3g} "
                  f"± {row['slice_se']:.1g} ({row['sim'] / row['slice']:.2f})", flush=True)
    json.dump(rows, open(f"{OUT}/settings.json", "w"), indent=1)
    lines = ["| (m, d, k) | tol | tokens | seed | simulated /1000 (rows) | Gaussian model | sim / Gaussian "
             "| slice model (± se) | sim / slice |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| ({r['m']}, {r['d']}, {r['k']}) | {r['tol']} | {r['distribution']} | {r['seed']} | "
                     f"{r['sim']:.3g} ({r['sim_rows']}) | {r['gaussian']:.3g} | {r['sim'] / r['gaussian']:.2f} | "
                     f"{r['slice']:.3g} (± {r['slice_se']:.1g}) | {r['sim'] / r['slice']:.2f} |")
    open(f"{OUT}/settings.md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


def slices():
    """Certified rows by Hamming distance r (simulated rule, certify_rows with example indices) vs the slice model."""
    from learner import LayerOracle
    from learner.phases.sculpt import certify_rows
    from theory.yield_model import _WINDOW_DRAWS

    rec = json.loads((ROOT / "docs/sweeps/growth/d24/runs/provable-eval-m10-d24-k2-ls1-boolean-s0.json").read_text())
    spec = RunSpec.from_dict(rec["spec"])
    layer = planted_instance(spec)[0]
    d, k, tol, mw = spec.d, spec.k, 0.1, 0.02
    oracle = LayerOracle(layer, k, rng=11)
    w_sum = layer.ws.sum(axis=0)
    seen, cert = np.zeros(d + 1), np.zeros(d + 1)
    N = 2_000_000
    while oracle.n_drawn < N:
        X, Y = oracle.draw(100_000)
        ex = certify_rows(X, Y, w_sum, tol=tol, min_weight=mw, with_example=True)[5]
        r = (X[:, 0] != X[:, 1]).sum(axis=1)
        seen += np.bincount(r, minlength=d + 1)
        cert += np.bincount(r[ex], minlength=d + 1)
    # The slice model per r: the same computation as predicted_yield(density="slice") with r held fixed.
    rng = np.random.default_rng(12)
    T, ws = layer.thetas, layer.ws
    pmf = np.exp([math.lgamma(d + 1) - math.lgamma(r + 1) - math.lgamma(d - r + 1) - d * math.log(2)
                  for r in range(d + 1)])
    model = np.zeros(d + 1)
    for rr in range(1, d):
        nb = 2000
        xa = rng.choice(np.array([-1.0, 1.0]), size=(nb, d))
        flip = rng.random((nb, 1, d)).argsort(axis=2).argsort(axis=2) < rr
        X = np.concatenate([xa[:, None], np.where(flip, -xa[:, None], xa[:, None])], axis=1)
        r = np.full((nb, 1), rr)
        mean, cov, slope, regular = _conditional_law(T, xa, k, r)
        rel = X[:, 1:] - xa[:, None]
        logits = np.zeros((nb, k))
        logits[:, 1:] = np.einsum("bc,ce,bje->bj", xa, T[0], rel)
        D = np.einsum("bc,ice,bje->bji", xa, T[1:] - T[:1], rel)
        logits[:, 1:] -= np.einsum("bi,bji->bj", slope, D)
        Mt, _, n_use, wp = _window(X, T, ws, w_sum, min_weight=mw, logits=logits)
        V, s, _ = np.linalg.svd(Mt, full_matrices=False)
        ok = wp & regular
        P = np.zeros(nb)
        P[ok] = _window_probability(V[ok], s[ok], mean[ok], cov[ok], tol, _WINDOW_DRAWS, rng)
        model[rr] = 1000 * k * pmf[rr] * (P * n_use).mean()
    out = {"r": list(range(d + 1)), "examples": seen.tolist(), "certified": cert.tolist(),
           "sim_per_1000": (1000 * cert / N).tolist(), "model_per_1000": model.tolist()}
    json.dump(out, open(f"{OUT}/slices.json", "w"), indent=1)
    lines = ["| r | examples (of 2 M) | certified constraints | simulated /1000 | slice model /1000 |",
             "|---|---|---|---|---|"]
    for rr in range(d + 1):
        if seen[rr] or model[rr] > 1e-4:
            lines.append(f"| {rr} | {int(seen[rr])} | {int(cert[rr])} | {1000 * cert[rr] / N:.3g} | {model[rr]:.3g} |")
    lines.append(f"| all | {N} | {int(cert.sum())} | {1000 * cert.sum() / N:.3g} | {model.sum():.3g} |")
    open(f"{OUT}/slices.md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    {"records": records, "table": table, "settings": settings, "slices": slices}[sys.argv[1]]()
