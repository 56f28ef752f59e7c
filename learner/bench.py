"""Benchmarks of the heavy paths, each measured against a reference in the same run.

Run ``python -m learner bench``. Every figure is the median of ``repeat`` timed
calls, and every speed is also printed as a ratio against a reference measured
in the same process: the machine's own float64 matrix-multiply rate, a
straightforward einsum-per-head implementation of the same layer, and PyTorch
on the CPU when it is installed. Ratios are what to compare across machines;
the shared machines this runs on are noisy.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from ._validation import check_int
from .inputs import cube_expectation, sample_inputs
from .instances import random_layer

__all__ = ["DEFAULT_CASES", "BenchCase", "BenchResult", "BenchRow", "forward_flops", "run_benchmark"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BenchCase:
    """One forward-pass benchmark setting."""

    name: str
    n: int
    k: int
    d: int
    m: int


DEFAULT_CASES = (
    BenchCase("small", 20000, 4, 8, 2),
    BenchCase("main", 20000, 8, 32, 4),
    BenchCase("large", 5000, 16, 64, 8),
)


def forward_flops(n, k, d, m):
    """Multiply-adds (×2) of one forward pass: XΘ, logits, PX and the W product.

    ``2nk·d·md + 2nmk²d + 2nmk²d + 2nk·md·d = 4nmkd² + 4nmk²d``; the softmax's
    exponentials are not counted.
    """
    return 4 * n * m * k * d * d + 4 * n * m * k * k * d


def einsum_forward(layer, X):
    """The straightforward implementation: one einsum per head and product (the reference)."""
    out = np.zeros_like(X)
    for theta, w in zip(layer.thetas, layer.ws):
        logits = np.einsum("nac,ce,nbe->nab", X, theta, X, optimize=True)
        logits -= logits.max(axis=-1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=-1, keepdims=True)
        out += np.einsum("nab,nbc,ce->nae", p, X, w, optimize=True)
    return out


def _torch_forward():
    """A PyTorch (CPU, float64) forward pass, or None when torch is not installed."""
    try:
        import torch
    except ImportError:
        return None, None

    def forward(thetas, ws, X):
        with torch.no_grad():
            logits = torch.einsum("nac,ice,nbe->niab", X, thetas, X)
            p = torch.softmax(logits, dim=-1)
            return torch.einsum("niab,nbc,ice->nae", p, X, ws)

    def run(layer, X):
        # np.array copies: torch wants writable buffers.
        t, w, x = (torch.from_numpy(np.array(a)) for a in (layer.thetas, layer.ws, X))
        return lambda: forward(t, w, x).numpy()

    return run, torch.__version__


def _median_time(fn, repeat):
    fn()  # warm up caches and allocators
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def gemm_rate(*, size=1500, repeat=5, rng=None):
    """The machine's float64 matrix-multiply rate in GFLOP/s (median of ``repeat``)."""
    rng = np.random.default_rng(rng)
    a = rng.standard_normal((size, size))
    b = rng.standard_normal((size, size))
    return 2 * size**3 / _median_time(lambda: a @ b, repeat) / 1e9


@dataclass(frozen=True)
class BenchRow:
    """Forward-pass figures for one case; times are medians in seconds."""

    case: BenchCase
    time_fast: float
    time_einsum: float
    time_torch: float | None
    gflops: float
    examples_per_s: float
    ratio_gemm: float
    speedup_einsum: float
    speedup_torch: float | None
    max_abs_diff: float


@dataclass(frozen=True)
class BenchResult:
    """All benchmark figures of one run."""

    gemm_gflops: float
    rows: tuple[BenchRow, ...]
    cube_k: int
    cube_d: int
    cube_m: int
    cube_seconds: float | None
    repeat: int
    torch_version: str | None
    numpy_version: str = field(default=np.__version__)

    def table(self):
        """The figures as a printable table."""
        lines = [
            (
                f"float64 matrix multiply (1500x1500): {self.gemm_gflops:.1f} GFLOP/s; "
                f"medians of {self.repeat} runs; numpy {self.numpy_version}; "
                f"torch {self.torch_version or 'not installed'}"
            ),
            "",
            (
                f"{'case':<6} {'n':>6} {'k':>3} {'d':>3} {'m':>2}  {'ex/s':>10} {'GFLOP/s':>8} "
                f"{'vs GEMM':>8} {'vs einsum':>9} {'vs torch':>8} {'max|diff|':>9}"
            ),
        ]
        for r in self.rows:
            c = r.case
            torch = f"{r.speedup_torch:.2f}x" if r.speedup_torch is not None else "-"
            lines.append(
                f"{c.name:<6} {c.n:>6} {c.k:>3} {c.d:>3} {c.m:>2}  {r.examples_per_s:>10.4g} "
                f"{r.gflops:>8.2f} {r.ratio_gemm:>8.3f} {r.speedup_einsum:>8.2f}x {torch:>8} "
                f"{r.max_abs_diff:>9.1e}"
            )
        lines.append(
            "vs GEMM: forward GFLOP/s / matrix-multiply GFLOP/s (target >= 0.15); vs einsum / vs torch: "
            "their time / ours (target >= 2 vs einsum); max|diff|: largest deviation from the einsum reference."
        )
        if self.cube_seconds is not None:
            lines.append(
                f"exact cube expectation E[X^T J F(X)]/k, k*d={self.cube_k * self.cube_d} "
                f"(k={self.cube_k}, d={self.cube_d}, m={self.cube_m}, 2^{self.cube_k * self.cube_d} inputs): "
                f"{self.cube_seconds:.2f} s (target < 60 s)"
            )
        return "\n".join(lines)


def run_benchmark(cases=DEFAULT_CASES, *, repeat=5, cube=(4, 5, 2), rng=None):
    """Time the forward pass on ``cases`` and one exact cube expectation.

    Parameters
    ----------
    cases : sequence of BenchCase
    repeat : int
        Timed calls per implementation; medians are reported.
    cube : (k, d, m) or None
        Size of the exact cube-expectation benchmark (``2^{kd}`` inputs).
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    BenchResult
    """
    rng = np.random.default_rng(rng)
    repeat = check_int("repeat", repeat)
    torch_run, torch_version = _torch_forward()
    rate = gemm_rate(repeat=repeat, rng=rng)
    rows = []
    for case in cases:
        layer = random_layer(case.m, case.d, check=False, rng=rng)
        X = sample_inputs(case.n, case.k, case.d, rng=rng)
        diff = float(np.max(np.abs(layer(X) - einsum_forward(layer, X))))
        t_fast = _median_time(lambda layer=layer, X=X: layer(X), repeat)
        t_einsum = _median_time(lambda layer=layer, X=X: einsum_forward(layer, X), repeat)
        t_torch = _median_time(torch_run(layer, X), repeat) if torch_run else None
        gflops = forward_flops(case.n, case.k, case.d, case.m) / t_fast / 1e9
        rows.append(
            BenchRow(
                case=case,
                time_fast=t_fast,
                time_einsum=t_einsum,
                time_torch=t_torch,
                gflops=gflops,
                examples_per_s=case.n / t_fast,
                ratio_gemm=gflops / rate,
                speedup_einsum=t_einsum / t_fast,
                speedup_torch=t_torch / t_fast if t_torch else None,
                max_abs_diff=diff,
            )
        )
        log.info("bench %s done", case.name)
    cube_seconds = None
    if cube is not None:
        k, d, m = cube
        layer = random_layer(m, d, check=False, rng=rng)
        t0 = time.perf_counter()
        # X^T J F(X) = (X^T 1)(1^T F(X)): the one-step estimate of ΣW (DESIGN §3, phase 1).
        cube_expectation(lambda X: X.sum(axis=1)[:, :, None] * layer(X).sum(axis=1)[:, None, :] / k, k, d)
        cube_seconds = time.perf_counter() - t0
    return BenchResult(
        gemm_gflops=rate,
        rows=tuple(rows),
        cube_k=cube[0] if cube else 0,
        cube_d=cube[1] if cube else 0,
        cube_m=cube[2] if cube else 0,
        cube_seconds=cube_seconds,
        repeat=repeat,
        torch_version=torch_version,
    )
