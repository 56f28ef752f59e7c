"""Benchmarks of the heavy paths, each measured against a reference in the same run.

Run ``python -m learner bench``. Every figure is the median of ``repeat`` timed
calls, and every speed is also printed as a ratio against a reference measured
in the same process: the machine's own float64 matrix-multiply rate, a
straightforward einsum-per-head implementation of the same layer, and PyTorch
on the CPU when it is installed. Ratios are what to compare across machines;
the shared machines this runs on are noisy.

The certification benchmark (:func:`run_certification_benchmark`) times the
learner's streaming pipeline — oracle draw (inputs and forward pass), row fit
and constraints, as phases 2 and 4 run it — against the plain forward pass on
the same batch size, the float32-screened certification against the float64
fit of every row (their outputs must be identical), and the closed-form row
fit against a batched-solve reference (:func:`fit_patterns_solve`), with the
BLAS limited to one thread (:func:`blas_threads`). ``python -m learner bench
--certification`` runs it alone, at (m, d, k) = (3, 16, 4) by default.

The span benchmark (:func:`run_span_benchmark`, ``python -m learner bench --span``) times phase 5's hull solve
with its SVDs through a QR against the thin SVD of the constraint matrix, on phase 5's shape at m = 1.

The refinement benchmark (:func:`run_refinement_benchmark`, ``python -m learner bench --refinement``) times phase
6's refinement with its steps solved by the normal equations and by conjugate gradients
(:mod:`learner.phases.steps`), from one start on one set of examples, at (m, d, k) = (8, 24, 2) by default.

The search benchmark (:func:`run_search_benchmark`, ``python -m learner bench --search``) times phase 6 in one
process with one BLAS thread against the run's workers (the search's starts on the pool, the refinement's
products on as many BLAS threads), at (m, d, k) = (7, 20, 2) by default.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..hints import SeedLike
from ..inputs import cube_expectation, sample_inputs
from ..instances import random_layer
from ..parallel import available_cores, blas_threads
from ..sweep.runs import STUDY_LOGIT_SCALE
from ..validation import Integer, Real, check_rng, declare

if TYPE_CHECKING:
    from ..layer import AttentionLayer

__all__ = [
    "DEFAULT_CASES",
    "PARALLEL_BENCH_WORKERS",
    "BenchCase",
    "BenchResult",
    "BenchRow",
    "CertificationBench",
    "PhaseProfile",
    "RefinementBench",
    "SearchBench",
    "SpanBench",
    "blas_threads",
    "fit_patterns_solve",
    "forward_flops",
    "run_benchmark",
    "run_certification_benchmark",
    "run_phase_profile",
    "run_refinement_benchmark",
    "run_search_benchmark",
    "run_span_benchmark",
]

log = logging.getLogger(__name__)

#: Local workers of the parallel benchmark unless told otherwise (ours): the comparison one process against two,
#: as measured on this project's 2-core machines (not ``available_cores()``: the figure should not change
#: meaning from one machine to the next).
PARALLEL_BENCH_WORKERS = 2


@dataclass(frozen=True)
class BenchCase:
    """One forward-pass benchmark setting.

    Parameters
    ----------
    name : str
        The case's label in the printed table (``"small"``, ``"main"``, ``"large"`` in :data:`DEFAULT_CASES`).
    n : int
        Examples in the timed batch (the forward pass runs on all of them at once).
    k : int
        Tokens per example.
    d : int
        Token dimension.
    m : int
        Heads of the random layer.
    """

    name: str
    n: int
    k: int
    d: int
    m: int


#: The forward-pass cases :func:`run_benchmark` times unless told otherwise (ours): ``(n, k, d, m)`` =
#: (20000, 4, 8, 2), (20000, 8, 32, 4) and (5000, 16, 64, 8), from a small layer to one where the products dominate.
DEFAULT_CASES = (
    BenchCase("small", 20000, 4, 8, 2),
    BenchCase("main", 20000, 8, 32, 4),
    BenchCase("large", 5000, 16, 64, 8),
)


def forward_flops(n: int, k: int, d: int, m: int) -> int:
    """Multiply-adds (×2) of one forward pass: XΘ, logits, PX and the W product.

    ``2nk·d·md + 2nmk²d + 2nmk²d + 2nk·md·d = 4nmkd² + 4nmk²d``; the softmax's
    exponentials are not counted.

    Parameters
    ----------
    n : int
        Examples in the batch.
    k : int
        Tokens per example.
    d : int
        Token dimension.
    m : int
        Heads.

    Returns
    -------
    int
        Floating-point operations of the pass, ``4nmkd² + 4nmk²d`` (a multiply-add counts as two).
    """
    return 4 * n * m * k * d * d + 4 * n * m * k * k * d


def einsum_forward(layer: AttentionLayer, X: np.ndarray) -> np.ndarray:
    """The straightforward implementation: one einsum per head and product (the reference)."""
    out = np.zeros_like(X)
    for theta, w in zip(layer.thetas, layer.ws, strict=True):
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


def _interleaved_medians(fns, repeat):
    """Median time of each of ``fns``, timed in turn ``repeat`` times (after one warm-up round)."""
    times: list[list[float]] = [[] for _ in fns]
    for r in range(repeat + 1):
        for fn, out in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            if r:
                out.append(time.perf_counter() - t0)
    return [float(np.median(t)) for t in times]


def gemm_rate(*, size: int = 1500, repeat: int = 5, rng: SeedLike = None) -> float:
    """The machine's float64 matrix-multiply rate in GFLOP/s (median of ``repeat``)."""
    rng = check_rng(rng)
    a = rng.standard_normal((size, size))
    b = rng.standard_normal((size, size))
    return 2 * size**3 / _median_time(lambda: a @ b, repeat) / 1e9


@dataclass(frozen=True)
class BenchRow:
    """Forward-pass figures for one case; times are medians in seconds.

    Parameters
    ----------
    case : BenchCase
        The setting timed.
    time_fast : float
        Median seconds of the layer's own forward pass (:class:`~learner.layer.AttentionLayer` called on the batch).
    time_einsum : float
        Median seconds of the reference, one einsum per head and product.
    time_torch : float or None
        Median seconds of PyTorch's forward pass (CPU, float64); None when torch is not installed.
    gflops : float
        The layer's rate, :func:`forward_flops` over ``time_fast``, in GFLOP/s.
    examples_per_s : float
        ``case.n / time_fast``.
    ratio_gemm : float
        ``gflops`` over the machine's float64 matrix-multiply rate in the same run (the target is >= 0.15).
    speedup_einsum : float
        ``time_einsum / time_fast`` (the target is >= 2).
    speedup_torch : float or None
        ``time_torch / time_fast``; None without torch.
    max_abs_diff : float
        Largest absolute difference between the layer's output and the einsum reference's.
    """

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
    """All benchmark figures of one run.

    Parameters
    ----------
    gemm_gflops : float
        The machine's float64 matrix-multiply rate (1500 × 1500), GFLOP/s: the reference the ratios divide by.
    rows : tuple of BenchRow
        One row per forward-pass case, in the order timed.
    cube_k, cube_d, cube_m : int
        ``(k, d, m)`` of the exact cube-expectation benchmark; 0 when it was not run.
    cube_seconds : float or None
        Seconds of that one exact expectation (a single call, not a median); None when it was not run.
    repeat : int
        Timed calls behind each median.
    torch_version : str or None
        PyTorch's version, or None when torch is not installed.
    numpy_version : str
        NumPy's version (default: the one imported).
    """

    gemm_gflops: float
    rows: tuple[BenchRow, ...]
    cube_k: int
    cube_d: int
    cube_m: int
    cube_seconds: float | None
    repeat: int
    torch_version: str | None
    numpy_version: str = field(default=np.__version__)

    def table(self) -> str:
        """The figures as a printable table.

        Returns
        -------
        str
            The header (matrix-multiply rate, repeats, versions), one line per case, a legend of the ratios and
            their targets, and the cube expectation's time when it was run.
        """
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


@declare(repeat=Integer())
def run_benchmark(cases: Iterable[BenchCase] = DEFAULT_CASES, *, repeat: int = 5,
                  cube: tuple[int, int, int] | None = (4, 5, 2), rng: SeedLike = None) -> BenchResult:
    """Time the forward pass on ``cases`` and one exact cube expectation.

    Parameters
    ----------
    cases : iterable of BenchCase
        The forward-pass settings, each on one random layer (not checked against the paper's conditions) and
        one batch of Boolean inputs. Default :data:`DEFAULT_CASES`.
    repeat : int
        Timed calls per implementation (``>= 1``), after one warm-up call; medians are reported.
    cube : (k, d, m) or None
        Size of the exact cube-expectation benchmark (``2^{kd}`` inputs, timed once); None skips it.
    rng : None, int, SeedSequence or Generator
        Source of the layers, inputs and matrices, passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    BenchResult
        The matrix-multiply rate, one :class:`BenchRow` per case and the cube expectation's time.
    """
    rng = check_rng(rng)
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
        # X^T J F(X) = (X^T 1)(1^T F(X)): the one-step estimate of ΣW (phase 1).
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


def fit_patterns_solve(X: np.ndarray, Y: np.ndarray, w_sum: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference row fit: a batched ``k × k`` solve of the equality-constrained least squares.

    The reference that :func:`learner.phases.sculpt.fit_patterns` (the closed form)
    is checked and timed against: ``min ‖y_a − Bᵀp‖`` s.t. ``1ᵀp = 1`` via ``p = u − λv`` with
    ``G u = B y_a``, ``G v = 1``, ``G = BBᵀ`` (plus a 1e-9 relative ridge), where ``B = XŴ``.

    Parameters
    ----------
    X : ndarray, shape (n, k, d)
        The inputs.
    Y : ndarray, shape (n, k, d)
        The layer's outputs on ``X``.
    w_sum : ndarray, shape (d, d)
        ``Ŵ``, the (estimated) sum of the heads' value matrices ``ΣW``.

    Returns
    -------
    P : ndarray, shape (n, k, k)
        ``P[n, a, j]``: the fitted weight of token ``j`` in row ``a``; each row sums to 1.
    residual : ndarray, shape (n, k)
        Each row's residual ``‖y_a − pᵀXŴ‖`` relative to ``‖y_a‖`` (infinite where ``y_a = 0``).
    well_posed : ndarray of bool, shape (n,)
        Per example, whether ``G`` is far enough from singular (log-determinant above ``k·log(tr G / k) +
        log 1e-8``) for the fit to be unambiguous.
    """
    n, k, _ = X.shape
    B = X @ w_sum
    G = B @ B.transpose(0, 2, 1)
    scale = np.maximum(np.trace(G, axis1=1, axis2=2) / k, 1e-300)
    sign, logdet = np.linalg.slogdet(G)
    well_posed = (sign > 0) & (logdet > k * np.log(scale) + np.log(1e-8))
    G = G + (1e-9 * scale)[:, None, None] * np.eye(k)
    rhs = np.concatenate([B @ Y.transpose(0, 2, 1), np.ones((n, k, 1))], axis=2)
    sol = np.linalg.solve(G, rhs)
    u, v = sol[:, :, :k], sol[:, :, k:]
    P = (u - ((u.sum(axis=1) - 1.0) / v.sum(axis=1))[:, None, :] * v).transpose(0, 2, 1)
    ynorm = np.linalg.norm(Y, axis=2)
    res = np.linalg.norm(Y - P @ B, axis=2) / np.where(ynorm > 0, ynorm, np.inf)
    return P, res, well_posed


@dataclass(frozen=True)
class CertificationBench:
    """Examples per second of the certification pipeline and its parts (medians), one setting.

    ``certify64_per_s`` and ``screened_per_s`` time
    :func:`~learner.phases.sculpt.certify_rows` with ``screen=False`` (the float64 fit of every
    row) and with the float32 screen (the default) on the same batch; ``identical`` is whether
    their outputs agree bit for bit, ``refit_fraction`` the share of examples the screen sends to
    the float64 fit. ``blas`` says how many BLAS threads the figures were measured with.

    Parameters
    ----------
    m, d, k : int
        Heads, token dimension and tokens per example of the setting.
    batch : int
        Examples per timed call.
    repeat : int
        Interleaved rounds behind each median.
    forward_per_s : float
        Examples per second of the forward pass ``layer(X)`` alone.
    pipeline_per_s : float
        Examples per second of the streaming pipeline: ``LayerOracle.draw`` then
        :func:`~learner.phases.sculpt.certify_rows` with the float32 screen.
    fit_per_s : float
        Examples per second of the closed-form row fit, :func:`~learner.phases.sculpt.fit_patterns`.
    fit_solve_per_s : float
        Examples per second of the reference row fit, :func:`fit_patterns_solve`.
    same_rows : bool
        Whether both row fits certify the same rows (well posed and residual below ``tol``) on the fixed batch.
    tol : float
        The relative residual below which a row certifies.
    min_weight : float
        The smallest fitted weight of a token that yields a constraint.
    sample_per_s : float
        Examples per second of sampling the inputs.
    certify64_per_s : float
        Examples per second of ``certify_rows(..., screen=False)`` on the fixed batch.
    screened_per_s : float
        Examples per second of ``certify_rows`` with the float32 screen on the fixed batch.
    pipeline64_per_s : float
        Examples per second of the pipeline with the float64 fit of every row.
    identical : bool
        Whether the screened and the float64 certifications returned identical arrays.
    refit_fraction : float
        Share of the fixed batch's examples the screen passes on to the float64 fit.
    rows_certified : int
        Rows certified on the fixed batch.
    blas : str
        The BLAS thread setting the figures were measured with, as :func:`blas_threads` describes it.
    """

    m: int
    d: int
    k: int
    batch: int
    repeat: int
    forward_per_s: float
    pipeline_per_s: float
    fit_per_s: float
    fit_solve_per_s: float
    same_rows: bool
    tol: float
    min_weight: float
    sample_per_s: float
    certify64_per_s: float
    screened_per_s: float
    pipeline64_per_s: float
    identical: bool
    refit_fraction: float
    rows_certified: int
    blas: str

    @property
    def pipeline_ratio(self) -> float:
        """Pipeline examples/s over forward-pass examples/s (the target is at least 0.5)."""
        return self.pipeline_per_s / self.forward_per_s

    @property
    def fit_speedup(self) -> float:
        """Closed-form row fit examples/s over the batched solve's (:func:`fit_patterns_solve`)."""
        return self.fit_per_s / self.fit_solve_per_s

    @property
    def screen_speedup(self) -> float:
        """Screened certification examples/s over the float64 path's."""
        return self.screened_per_s / self.certify64_per_s

    def table(self) -> str:
        """The figures as a printable table.

        Returns
        -------
        str
            One header line, then one line per figure with its examples per second and, where there is one, its
            ratio to the reference timed beside it.
        """
        return "\n".join([
            (f"certification pipeline at (m, d, k) = ({self.m}, {self.d}, {self.k}), tol {self.tol:g}, "
             f"min_weight {self.min_weight:g}, batches of {self.batch:,}, medians of {self.repeat} interleaved runs, "
             f"{self.blas}:"),
            f"  sampling inputs                  {self.sample_per_s:>12,.0f} examples/s",
            f"  forward pass F(X) alone          {self.forward_per_s:>12,.0f} examples/s",
            f"  certify_rows, float64 fit        {self.certify64_per_s:>12,.0f} examples/s",
            (f"  certify_rows, float32 screen     {self.screened_per_s:>12,.0f} examples/s   "
             f"{self.screen_speedup:.2f}x the float64 fit; identical output: {self.identical}; "
             f"{100 * self.refit_fraction:.3g} % of examples refit in float64; {self.rows_certified} rows certified"),
            (f"  pipeline, float64 fit            {self.pipeline64_per_s:>12,.0f} examples/s   "
             f"ratio {self.pipeline64_per_s / self.forward_per_s:.2f} of the forward pass"),
            (f"  pipeline (draw + fit + rows)     {self.pipeline_per_s:>12,.0f} examples/s   "
             f"ratio {self.pipeline_ratio:.2f} of the forward pass (target >= 0.5); "
             f"{self.pipeline_per_s / self.pipeline64_per_s:.2f}x the float64 pipeline"),
            f"  row fit, closed form             {self.fit_per_s:>12,.0f} examples/s",
            (f"  row fit, batched solve (ref.)    {self.fit_solve_per_s:>12,.0f} examples/s   "
             f"closed form {self.fit_speedup:.2f}x faster; same certified rows: {self.same_rows}"),
        ])

    def to_dict(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict.

        Returns
        -------
        dict
            Every field by name, plus the ratios ``pipeline_ratio``, ``fit_speedup`` and ``screen_speedup``.
        """
        return dict(self.__dict__) | {"pipeline_ratio": self.pipeline_ratio, "fit_speedup": self.fit_speedup,
                                      "screen_speedup": self.screen_speedup}


@declare(m=Integer(), d=Integer(), k=Integer(), batch=Integer(), repeat=Integer(), threads=Integer(), tol=Real(),
         min_weight=Real())
def run_certification_benchmark(m: int = 3, d: int = 12, k: int = 2, *, batch: int = 100_000, repeat: int = 5,
                                logit_scale: float = STUDY_LOGIT_SCALE, tol: float = 0.015, min_weight: float = 0.02,
                                threads: int = 1, rng: SeedLike = None) -> CertificationBench:
    """Time phase 4's certification and streaming pipeline against the plain forward pass, in one process.

    The pipeline is what :func:`learner.phases.refined_sculpt` does per batch:
    ``LayerOracle.draw`` (sampling and the forward pass) then
    :func:`~learner.phases.sculpt.certify_rows` with the true ``ΣW``, with the
    float32 screen (the default) and with the float64 fit of every row
    (``screen=False``). Also times, on one fixed batch, sampling the inputs,
    the forward pass ``layer(X)``, both certifications (and checks that their
    outputs are identical), and the closed-form row fit against
    :func:`fit_patterns_solve` (checking that both certify the same rows).
    Every figure is timed in turn, ``repeat`` rounds, with the BLAS limited to
    ``threads`` threads (:func:`blas_threads`).

    Parameters
    ----------
    m : int
        Heads of the planted layer (``>= 1``).
    d : int
        Token dimension (``>= 1``).
    k : int
        Tokens per example (``>= 1``).
    batch : int
        Examples per timed call (``>= 1``); phases 2 and 4 draw batches of this size by default.
    repeat : int
        Interleaved rounds per figure (``>= 1``), after one warm-up round; medians are reported.
    logit_scale : float
        ``‖Θ_i‖_F`` of the random layer; default :data:`~learner.sweep.runs.STUDY_LOGIT_SCALE`, the studies' 1.
    tol : float
        Relative residual below which a row certifies (``> 0``), as in phase 4.
    min_weight : float
        Smallest fitted token weight that yields a constraint (``> 0``), as in phase 4.
    threads : int
        BLAS threads during the timing (``>= 1``); 1 is how every run of a sweep computes.
    rng : None, int, SeedSequence or Generator
        Source of the layer, the oracle's stream and the fixed batch, passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    CertificationBench
        The medians as examples per second, with the identity checks.
    """
    from ..oracle import LayerOracle
    from ..phases.sculpt import SCREEN_CHUNK, certify_rows, fit_patterns, screen_candidates, screen_weights

    rng = check_rng(rng)
    layer_seed, oracle_seed, input_seed, sample_seed = rng.spawn(4)
    layer = random_layer(m, d, logit_scale=logit_scale, rng=layer_seed)
    w_sum = layer.ws.sum(axis=0)
    oracle = LayerOracle(layer, k, rng=oracle_seed)
    sampler = np.random.default_rng(sample_seed)
    X = sample_inputs(batch, k, d, rng=input_seed)
    Y = layer(X)
    kw: dict[str, Any] = {"tol": tol, "min_weight": min_weight}
    with blas_threads(threads) as blas:
        # Interleaved, so that a change of load on a shared machine hits every figure alike.
        (t_sample, t_forward, t_cert64, t_screened, t_pipeline64, t_pipeline, t_fit,
         t_solve) = _interleaved_medians([
            lambda: sample_inputs(batch, k, d, rng=sampler),
            lambda: layer(X),
            lambda: certify_rows(X, Y, w_sum, screen=False, **kw),
            lambda: certify_rows(X, Y, w_sum, **kw),
            lambda: certify_rows(*oracle.draw(batch), w_sum, screen=False, **kw),
            lambda: certify_rows(*oracle.draw(batch), w_sum, **kw),
            lambda: fit_patterns(X, Y, w_sum),
            lambda: fit_patterns_solve(X, Y, w_sum),
        ], repeat)
    out64 = certify_rows(X, Y, w_sum, screen=False, **kw)
    out32 = certify_rows(X, Y, w_sum, **kw)
    identical = all(np.array_equal(a, b) for a, b in zip(out64, out32, strict=True))
    screen_w = screen_weights(w_sum)
    refit = sum(int(screen_candidates(X[s:s + SCREEN_CHUNK], Y[s:s + SCREEN_CHUNK], screen_w, tol).sum())
                for s in range(0, batch, SCREEN_CHUNK))
    _, r1, ok1 = fit_patterns(X, Y, w_sum)
    _, r2, ok2 = fit_patterns_solve(X, Y, w_sum)
    same = bool(np.array_equal(ok1[:, None] & (r1 < tol), ok2[:, None] & (r2 < tol)))
    return CertificationBench(m, d, k, batch, repeat, batch / t_forward, batch / t_pipeline, batch / t_fit,
                              batch / t_solve, same, tol, min_weight, batch / t_sample, batch / t_cert64,
                              batch / t_screened, batch / t_pipeline64, identical, refit / batch, int(out64[-1]), blas)


@dataclass(frozen=True)
class SpanBench:
    """Phase 5's hull solve (:func:`learner.phases.span.hull_solve`, precision weighting) with its SVDs through a
    QR (``solver="qr"``) against the thin SVD (``"svd"``, the reference), timed in one run on the same constraint
    matrix: medians, their ratio, and how far the two results differ.

    Parameters
    ----------
    rows : int
        Constraints (rows of the matrix).
    d : int
        Token dimension: the matrix has ``d²`` columns.
    m : int
        Heads: the hull has ``m − 1`` directions.
    repeat : int
        Interleaved rounds behind each median.
    svd_seconds : float
        Median seconds of the solve with the thin SVD (``solver="svd"``).
    qr_seconds : float
        Median seconds of the solve through a QR (``solver="qr"``).
    theta_difference : float
        ``‖Θ*_svd − Θ*_qr‖ / ‖Θ*_svd‖``: how far the two min-norm points differ.
    singular_value_difference : float
        Largest difference of the two solvers' singular values, relative to the largest one.
    blas : str
        The BLAS thread setting of the timing, as :func:`blas_threads` describes it.
    """

    rows: int
    d: int
    m: int
    repeat: int
    svd_seconds: float
    qr_seconds: float
    theta_difference: float
    singular_value_difference: float
    blas: str

    @property
    def speedup(self) -> float:
        """Median SVD time over median QR time."""
        return self.svd_seconds / self.qr_seconds

    def table(self) -> str:
        """The figures as a printable table.

        Returns
        -------
        str
            A header line, then the SVD's time and the QR's, with the speed-up and the two results' differences.
        """
        return "\n".join([
            (f"phase 5's hull solve on {self.rows:,} constraints × d² = {self.d * self.d} unknowns, m = {self.m}, "
             f"medians of {self.repeat} interleaved runs, {self.blas}:"),
            f"  thin SVD of the constraints (reference)   {self.svd_seconds:8.2f} s",
            (f"  QR, then the SVD of its triangle          {self.qr_seconds:8.2f} s   {self.speedup:.2f}x faster; "
             f"Θ* differs by {self.theta_difference:.1e} (relative), singular values by "
             f"{self.singular_value_difference:.1e} (relative to the largest)"),
        ])

    def to_dict(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict.

        Returns
        -------
        dict
            Every field by name, plus ``speedup``.
        """
        return dict(self.__dict__) | {"speedup": self.speedup}


@declare(rows=Integer(), d=Integer(), m=Integer(), repeat=Integer(), threads=Integer())
def run_span_benchmark(rows: int = 200_000, d: int = 12, m: int = 1, *, repeat: int = 3, threads: int = 1,
                       rng: SeedLike = None) -> SpanBench:
    """Time :func:`~learner.phases.span.hull_solve` with both solvers on one random constraint matrix.

    ``rows`` constraints on ``d²`` unknowns: the shape of phase 5 at m = 1, (d, k) = (12, 2), where every row
    certifies (about 2·10⁵ constraints per round in the frontier's runs). The matrix is random (Gaussian entries,
    uniform weights, right-hand sides from a point plus noise): the solve's cost depends on the shape alone.

    Parameters
    ----------
    rows : int
        Constraints (``>= 1``).
    d : int
        Token dimension (``>= 1``): ``d²`` unknowns.
    m : int
        Heads (``>= 1``): the hull solve looks for ``m − 1`` directions.
    repeat : int
        Interleaved rounds per solver (``>= 1``), after one warm-up round; medians are reported.
    threads : int
        BLAS threads during the timing (``>= 1``).
    rng : None, int, SeedSequence or Generator
        Source of the random matrix, passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    SpanBench
        Both medians and how far the two solvers' results differ.
    """
    from ..phases.span import hull_solve

    rng = check_rng(rng)
    A = rng.standard_normal((rows, d * d))
    b = A @ rng.standard_normal(d * d) + 1e-3 * rng.standard_normal(rows)
    w = rng.uniform(0.1, 1.0, rows)
    kw: dict[str, Any] = {"weights": w, "directions_from": "weights"}
    with blas_threads(threads) as blas:
        t_svd, t_qr = _interleaved_medians([lambda: hull_solve(A, b, m, solver="svd", **kw),
                                            lambda: hull_solve(A, b, m, solver="qr", **kw)], repeat)
    (th1, _, s1), (th2, _, s2) = (hull_solve(A, b, m, solver=sv, **kw) for sv in ("svd", "qr"))
    return SpanBench(rows, d, m, repeat, t_svd, t_qr, float(np.linalg.norm(th1 - th2) / np.linalg.norm(th1)),
                     float(np.max(np.abs(s1 - s2)) / s1.max()), blas)


@dataclass(frozen=True)
class ParallelBench:
    """Phase 4 (refined sculpting) serially and on a local pool, timed in one run: medians and their ratio."""

    m: int
    d: int
    k: int
    workers: int
    batch: int
    examples: int
    repeat: int
    serial_seconds: float
    parallel_seconds: float
    startup_seconds: float
    identical: bool
    #: The BLAS threads of each side: like for like, one thread in this process as in every worker.
    blas: str = ""

    @property
    def speedup(self) -> float:
        """Median serial time over median time with ``workers`` local processes (the target is >= 1.6 at 2)."""
        return self.serial_seconds / self.parallel_seconds

    @property
    def per_worker_per_s(self) -> float:
        return self.examples / self.parallel_seconds / self.workers

    def table(self) -> str:
        return "\n".join([
            (f"certification (phase 4) at (m, d, k) = ({self.m}, {self.d}, {self.k}): {self.examples:,} examples in "
             f"batches of {self.batch:,}, medians of {self.repeat} interleaved runs on {available_cores()} cores:"),
            f"  in this process          {self.serial_seconds:8.2f} s   "
            f"{self.examples / self.serial_seconds:>12,.0f} examples/s",
            (f"  {self.workers} local workers          {self.parallel_seconds:8.2f} s   "
             f"{self.examples / self.parallel_seconds:>12,.0f} examples/s   "
             f"({self.per_worker_per_s:,.0f} per worker)"),
            (f"  speed-up {self.speedup:.2f}x (target >= 1.6 with 2 workers on 2 cores; at most {self.workers}x for "
             f"this like-for-like comparison); pool start-up {self.startup_seconds:.2f} s, once per learn() call, "
             f"not included; constraints identical: {self.identical}"),
            f"  compared: {self.blas}",
        ])

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__) | {"speedup": self.speedup, "per_worker_per_s": self.per_worker_per_s}


@declare(m=Integer(), d=Integer(), k=Integer(), workers=Integer(2), batch=Integer(), batches=Integer(),
         repeat=Integer())
def run_parallel_benchmark(m: int = 4, d: int = 12, k: int = 2, *, workers: int = PARALLEL_BENCH_WORKERS,
                           batch: int = 100_000, batches: int = 16, repeat: int = 3,
                           logit_scale: float = STUDY_LOGIT_SCALE, tol: float = 0.015, min_weight: float = 0.02,
                           rng: SeedLike = None) -> ParallelBench:
    """Time :func:`learner.phases.refined_sculpt` in this process and with ``workers`` local processes.

    Both runs certify the same stream (``batches`` batches, a target no run
    reaches, so every batch is merged) against the true ``ΣW``; their constraints
    must be identical. Runs alternate, so a change of load hits both alike.

    Returns
    -------
    ParallelBench
    """
    from ..oracle import LayerOracle
    from ..parallel import Workers
    from ..phases import LearnConfig, refined_sculpt

    rng = check_rng(rng)
    layer_seed, oracle_gen = rng.spawn(2)
    layer = random_layer(m, d, logit_scale=logit_scale, rng=layer_seed)
    w_sum = layer.ws.sum(axis=0)
    examples = batch * batches
    oracle_seed = int(oracle_gen.integers(2**63))  # a fixed seed: every run below sees the same stream
    # Fixed batches at the given tolerance, and a target no run reaches (10^12 constraints), so every batch is merged.
    config = LearnConfig(adaptive=False, refined_tol=tol, min_weight=min_weight, refined_constraints=10**12 / d**2,
                         max_examples=examples, batch=batch)

    def phase(pool):
        oracle = LayerOracle(layer, k, rng=oracle_seed)  # the same stream every time
        return refined_sculpt(oracle, w_sum, config, workers=pool, pilot=False)

    serial = Workers()
    with Workers(workers) as pool:
        t0 = time.perf_counter()
        pool._ensure()
        list(pool.ordered("startup", _noop, [((i,), 0) for i in range(workers)]))
        startup = time.perf_counter() - t0
        results = {}

        def timed(name, pool):
            def run():
                # Like for like: this process computes with one BLAS thread, as every worker does (with the
                # default threads a loaded machine is oversubscribed and prints "speed-ups" of 6-10x).
                with blas_threads(1):
                    results[name] = phase(pool)
            return run

        t_serial, t_parallel = _interleaved_medians([timed("serial", serial), timed("parallel", pool)], repeat)
        with blas_threads(1) as how:
            blas = f"{how} in this process; one BLAS thread in each worker (learner.parallel.WORKER_ENV)"
    a, b = results["serial"], results["parallel"]
    identical = bool(np.array_equal(a.A, b.A) and np.array_equal(a.b, b.b) and a.n_examples == b.n_examples == examples)
    return ParallelBench(m, d, k, workers, batch, examples, repeat, t_serial, t_parallel, startup, identical, blas)


def _noop(i):
    return i


@dataclass(frozen=True)
class SearchBench:
    """Phase 6 (:func:`learner.phases.search_heads`) as one process with one BLAS thread runs it — the search's
    starts one after another — against the run's ``workers`` (the starts on a local pool, the refinement's
    products on as many threads), timed in one run on the same hull and examples: medians and their ratio.

    Parameters
    ----------
    m, d, k : int
        Heads, token dimension and tokens per example of the planted layer.
    workers : int
        Local processes (and refinement threads) of the parallel side.
    repeat : int
        Interleaved rounds behind each median.
    serial_seconds : float
        Median seconds in one process with one BLAS thread.
    parallel_seconds : float
        Median seconds with ``workers`` processes and threads.
    serial_split, parallel_split : dict
        Each side's last run: ``search_seconds`` and ``refine_seconds``, and ``evaluations``, the refinement's
        residual evaluations.
    heldout_error : float
        The parallel side's held-out relative error of the learned layer.
    identical : bool
        Whether both sides returned the same layer, bit for bit.
    blas : str
        What each side computed with, in words (BLAS threads here and in the workers).
    """

    m: int
    d: int
    k: int
    workers: int
    repeat: int
    serial_seconds: float
    parallel_seconds: float
    serial_split: dict
    parallel_split: dict
    heldout_error: float
    identical: bool
    blas: str = ""

    @property
    def speedup(self) -> float:
        """Median time in one process over median time with ``workers``."""
        return self.serial_seconds / self.parallel_seconds

    def table(self) -> str:
        """The figures as a printable table.

        Returns
        -------
        str
            A header line, each side's median with its search/refinement split, the speed-up with the held-out
            error and the identity check, and the BLAS setting.
        """
        def split(s):
            return (f"search {s['search_seconds']:.2f} s, refinement {s['refine_seconds']:.2f} s "
                    f"({s['evaluations']} evaluations)")

        return "\n".join([
            (f"phase 6 at (m, d, k) = ({self.m}, {self.d}, {self.k}) on a hull 0.2 rad off the planted one, medians "
             f"of {self.repeat} interleaved runs on {available_cores()} cores:"),
            f"  {'one process, one BLAS thread':30s} {self.serial_seconds:8.2f} s   ({split(self.serial_split)})",
            (f"  {f'{self.workers} workers, {self.workers} threads':30s} {self.parallel_seconds:8.2f} s   "
             f"({split(self.parallel_split)})"),
            (f"  speed-up {self.speedup:.2f}x (at most {self.workers}x); held-out relative error "
             f"{self.heldout_error:.1e}; layers identical: {self.identical}"),
            f"  compared: {self.blas}",
        ])

    def to_dict(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict.

        Returns
        -------
        dict
            Every field by name, plus ``speedup``.
        """
        return dict(self.__dict__) | {"speedup": self.speedup}


@declare(m=Integer(2), d=Integer(), k=Integer(2), workers=Integer(2), repeat=Integer())
def run_search_benchmark(m: int = 7, d: int = 20, k: int = 2, *, workers: int = PARALLEL_BENCH_WORKERS,
                         repeat: int = 3, rng: SeedLike = None) -> SearchBench:
    """Time phase 6 in one process and on ``workers`` local processes, on one planted layer's hull.

    The hull is the planted one turned about 0.2 rad (phase 5's estimates were 0.1–0.3 rad off at m = 6, so the
    search and the refinement both have work to do) and both sides read the same examples. The refinement's
    products are formed in fixed blocks, the same bits on any number of threads, and the starts are merged in
    their order, so the two layers must be identical. Runs alternate, so a change of load hits both alike.

    Parameters
    ----------
    m : int
        Heads of the planted layer (``>= 2``: the hull has ``m − 1 >= 1`` directions).
    d : int
        Token dimension (``>= 1``).
    k : int
        Tokens per example (``>= 2``).
    workers : int
        Local processes of the parallel side (``>= 2``); default :data:`PARALLEL_BENCH_WORKERS`.
    repeat : int
        Interleaved rounds per side (``>= 1``), after one warm-up round; medians are reported.
    rng : None, int, SeedSequence or Generator
        Source of the layer, the examples and the hull's turn, passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    SearchBench
        Both medians, each side's split, the held-out error and whether the two layers are identical.
    """
    from ..geometry import min_norm_point
    from ..oracle import ArraySource, LayerOracle
    from ..parallel import Workers
    from ..phases import LearnConfig, search_heads

    rng = check_rng(rng)
    layer_seed, oracle_seed, turn = rng.spawn(3)
    layer = random_layer(m, d, logit_scale=STUDY_LOGIT_SCALE, rng=layer_seed)
    cfg = LearnConfig()
    X, Y = LayerOracle(layer, k, rng=oracle_seed).draw(2 * cfg.n_search)
    T = layer.thetas.reshape(m, -1)
    exact = np.linalg.qr((T[1:] - T[0]).T)[0]
    noise = np.random.default_rng(turn).standard_normal(exact.shape)
    noise -= exact @ (exact.T @ noise)  # off the hull, so that the angle is the noise's size
    directions = np.linalg.qr(exact + np.tan(0.2) * noise / np.linalg.norm(noise, axis=0))[0]
    star = np.asarray(min_norm_point(layer.thetas))  # (a float array: exact=False)
    results = {}

    def timed(name, pool, threads):
        def run():
            with blas_threads(1):
                results[name] = search_heads(ArraySource(X, Y), star, directions, m, cfg, workers=pool,
                                             threads=threads)
        return run

    with Workers(workers) as pool:
        pool._ensure()  # started before the clock
        t_serial, t_parallel = _interleaved_medians([timed("serial", None, 1),
                                                     timed("parallel", pool, workers)], repeat)
    with blas_threads(1) as how:
        blas = (f"{how} in this process for both; the second's refinement products on {workers} threads of one "
                "BLAS thread each, and one BLAS thread in each worker (learner.parallel.WORKER_ENV)")
    a, b = results["serial"], results["parallel"]

    def split(r):
        return {"search_seconds": r.seconds - r.refine_seconds, "refine_seconds": r.refine_seconds,
                "evaluations": r.nfev}

    identical = bool(np.array_equal(a.layer.thetas, b.layer.thetas) and np.array_equal(a.layer.ws, b.layer.ws))
    return SearchBench(m, d, k, workers, repeat, t_serial, t_parallel, split(a), split(b), b.heldout_error,
                       identical, blas)


def _moved(thetas, perturbation, seed):
    """``thetas`` moved by ``perturbation`` of their Frobenius norm in a random direction drawn from ``seed``."""
    noise = np.random.default_rng(seed).standard_normal(thetas.shape)
    return thetas + perturbation * np.linalg.norm(thetas) * noise / np.linalg.norm(noise)


@dataclass(frozen=True)
class RefinementBench:
    """Phase 6's refinement with each step solver, timed in one run from the same start on the same examples.

    ``"normal"`` forms the normal equations from the Jacobian's structure and factorises them; ``"cg"`` solves
    each step by preconditioned conjugate gradients and never forms them (:mod:`learner.phases.steps`). Both start
    from the planted ``Θ``'s perturbed by ``perturbation`` of their norm, on the refinement's own number of
    examples, with one BLAS thread.

    Parameters
    ----------
    m, d, k : int
        Heads, token dimension and tokens per example of the planted layer.
    examples : int
        The refinement's examples (as :func:`learner.phases.search_heads` sizes them).
    perturbation : float
        The start's distance from the planted ``Θ``'s, relative to their norm.
    repeat : int
        Interleaved rounds behind each median.
    seconds : dict
        Median seconds per solver.
    evaluations : dict
        Residual evaluations per solver (the same in every round: the runs are deterministic).
    residual : dict
        Final relative residual ``‖F − Y‖²/‖Y‖²`` per solver.
    theta_error : dict
        ``‖Θ − Θ_planted‖_F/‖Θ_planted‖_F`` per solver.
    difference : float
        ``‖Θ_cg − Θ_normal‖_F/‖Θ_planted‖_F``: how far the two solvers' answers are apart.
    blas : str
        The BLAS setting of the timing.
    """

    m: int
    d: int
    k: int
    examples: int
    perturbation: float
    repeat: int
    seconds: dict
    evaluations: dict
    residual: dict
    theta_error: dict
    difference: float
    blas: str

    @property
    def speedup(self) -> float:
        """Median seconds of ``"normal"`` over those of ``"cg"``."""
        return self.seconds["normal"] / self.seconds["cg"]

    def table(self) -> str:
        """The figures as a printable table.

        Returns
        -------
        str
            A header line, one line per solver, the ratio and the distance between the answers.
        """
        lines = [(f"phase 6's refinement at (m, d, k) = ({self.m}, {self.d}, {self.k}): {self.m * self.d ** 2:,} "
                  f"unknowns, {self.examples:,} examples, from the planted Θ's moved {self.perturbation:g} of "
                  f"their norm; medians of {self.repeat} interleaved runs, {self.blas}:")]
        for name in ("normal", "cg"):
            lines.append(f"  {name:7s} {self.seconds[name]:9.2f} s   {self.evaluations[name]:3d} evaluations, "
                         f"relative residual {self.residual[name]:.1e}, Θ error {self.theta_error[name]:.1e}")
        lines.append(f"  cg {self.speedup:.2f}x faster than the normal equations; the answers differ by "
                     f"{self.difference:.1e} of ‖Θ‖")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict.

        Returns
        -------
        dict
            Every field by name, plus ``speedup``.
        """
        return dict(self.__dict__) | {"speedup": self.speedup}


@declare(m=Integer(), d=Integer(), k=Integer(2), repeat=Integer(), perturbation=Real())
def run_refinement_benchmark(m: int = 8, d: int = 24, k: int = 2, *, repeat: int = 3, perturbation: float = 0.01,
                             rng: SeedLike = None) -> RefinementBench:
    """Time phase 6's refinement with both step solvers, from one start on one set of examples.

    Parameters
    ----------
    m : int
        Heads of the planted layer (``>= 1``).
    d : int
        Token dimension (``>= 1``).
    k : int
        Tokens per example (``>= 2``).
    repeat : int
        Interleaved rounds per solver (``>= 1``); medians are reported.
    perturbation : float
        How far the start lies from the planted ``Θ``'s, relative to their norm (``> 0``; phase 6's warm starts
        were within a few per cent at m = 6–10).
    rng : None, int, SeedSequence or Generator
        Source of the layer, the examples and the start.

    Returns
    -------
    RefinementBench
        Each solver's median seconds, evaluations, residual and error, and their distance.
    """
    from ..oracle import LayerOracle
    from ..phases import LearnConfig
    from ..phases.search import refine_layer, refinement_examples

    rng = check_rng(rng)
    layer_seed, oracle_seed, start_seed = rng.spawn(3)
    layer = random_layer(m, d, logit_scale=STUDY_LOGIT_SCALE, rng=layer_seed)
    cfg = LearnConfig()
    n = refinement_examples(m, d, k, cfg)
    X, Y = LayerOracle(layer, k, rng=oracle_seed).draw(n)
    theta0 = _moved(layer.thetas, perturbation, start_seed)
    results: dict[str, Any] = {}

    def timed(solver):
        def run():
            results[solver] = refine_layer(theta0, X, Y, max_iter=cfg.max_nfev, solver=solver)
        return run

    with blas_threads(1) as blas:
        t_normal, t_cg = _interleaved_medians([timed("normal"), timed("cg")], repeat)
    norm = float(np.linalg.norm(layer.thetas))
    thetas = {s: results[s].layer.thetas for s in ("normal", "cg")}
    return RefinementBench(
        m, d, k, n, perturbation, repeat, {"normal": t_normal, "cg": t_cg},
        {s: results[s].evaluations for s in thetas}, {s: results[s].residual for s in thetas},
        {s: float(np.linalg.norm(thetas[s] - layer.thetas)) / norm for s in thetas},
        float(np.linalg.norm(thetas["cg"] - thetas["normal"])) / norm, blas)


@dataclass(frozen=True)
class PhaseProfile:
    """Where phases 4 and 6 spend their time at one setting, each step against the machine's matrix-multiply rate.

    Phase 4 runs in oracle mode (the planted ``ΣW``, a fixed tolerance, no pilot) in this process on
    ``examples`` examples; a plain batched forward pass over the same number of examples is timed beside it.
    Phase 6's refinement runs from the planted ``Θ``'s perturbed by 1 % of their norm with each step solver.
    Every figure comes from :mod:`learner.profiling`'s sections, recorded with one BLAS thread.

    Parameters
    ----------
    m, d, k : int
        Heads, token dimension and tokens per example of the planted layer.
    tol : float
        Phase 4's certification tolerance.
    examples : int
        Phase 4's examples.
    gemm_gflops : float
        The machine's float64 matrix-multiply rate on one thread, measured in the same run.
    phase4_seconds : float
        Phase 4's wall time.
    forward_seconds : float
        A plain batched forward pass ``layer(X)`` over ``examples`` examples.
    constraints : int
        Phase 4's constraints certified from ``examples`` examples (its yield sets the examples a run needs).
    phase4 : dict
        Phase 4's sections: name to ``(seconds, calls, flops)``.
    refinement_seconds : dict
        The refinement's wall time per step solver.
    refinement : dict
        Per step solver, its sections: name to ``(seconds, calls, flops)``.
    blas : str
        The BLAS setting.
    """

    m: int
    d: int
    k: int
    tol: float
    examples: int
    gemm_gflops: float
    phase4_seconds: float
    forward_seconds: float
    constraints: int
    phase4: dict
    refinement_seconds: dict
    refinement: dict
    blas: str

    @property
    def label_ratio(self) -> float:
        """Phase 4's examples per second over the plain forward pass's (1: phase 4 costs no more than its labels)."""
        return self.forward_seconds / self.phase4_seconds

    def _rows(self, sections, total):
        out = []
        for name, (seconds, calls, flops) in sections.items():
            rate = flops / seconds / 1e9 if flops and seconds > 0 else None
            floor = f"{rate:6.1f} GFLOP/s, {rate / self.gemm_gflops:4.0%} of GEMM" if rate is not None else ""
            out.append(f"    {name:48s} {seconds:8.2f} s {seconds / total:5.0%} {calls:7,d} calls  {floor}")
        return out

    def table(self) -> str:
        """The figures as a printable table.

        Returns
        -------
        str
            Phase 4's steps and its ratio to the forward pass, then the refinement's steps per solver; each step
            with its share of the phase and, where its operations are counted, its rate against the GEMM rate.
        """
        lines = [(f"phases 4 and 6 at (m, d, k) = ({self.m}, {self.d}, {self.k}) in oracle mode, {self.blas}; "
                  f"the machine's float64 GEMM rate {self.gemm_gflops:.1f} GFLOP/s:"),
                 (f"  phase 4 at tol {self.tol:g}: {self.examples:,} examples in {self.phase4_seconds:.2f} s "
                  f"({self.examples / self.phase4_seconds:,.0f}/s); the forward pass alone "
                  f"{self.forward_seconds:.2f} s ({self.examples / self.forward_seconds:,.0f}/s): ratio "
                  f"{self.label_ratio:.2f} of the label rate (1 = phase 4 costs what its labels cost); "
                  f"{self.constraints:,} constraints, {1e6 * self.constraints / self.examples:,.0f} per million "
                  "examples")]
        lines += self._rows(self.phase4, self.phase4_seconds)
        for solver, total in self.refinement_seconds.items():
            lines.append(f"  phase 6's refinement, steps by {solver}: {total:.2f} s")
            lines += self._rows(self.refinement[solver], total)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict.

        Returns
        -------
        dict
            Every field by name, plus ``label_ratio``.
        """
        return dict(self.__dict__) | {"label_ratio": self.label_ratio}


@declare(m=Integer(2), d=Integer(), k=Integer(2), examples=Integer(), tol=Real())
def run_phase_profile(m: int = 10, d: int = 24, k: int = 2, *, tol: float = 0.08, examples: int = 2_000_000,
                      solvers: tuple[str, ...] = ("normal", "cg"), rng: SeedLike = None) -> PhaseProfile:
    """Profile phases 4 and 6 at one setting in oracle mode (see :class:`PhaseProfile`).

    Parameters
    ----------
    m : int
        Heads of the planted layer (``>= 2``).
    d : int
        Token dimension (``>= 1``).
    k : int
        Tokens per example (``>= 2``).
    tol : float
        Phase 4's certification tolerance (``> 0``; phase 4's pilot chose 0.08 at m = 7–10, d = 20–24).
    examples : int
        Phase 4's example budget (``>= 1``), drawn in the learner's batches (its hull stability rule may stop
        the stream earlier, as in a run: the profile counts the examples drawn).
    solvers : tuple of str
        The refinement's step solvers to profile, ``"normal"`` and/or ``"cg"`` (the normal equations take
        minutes per step from (11, 32, 2) on).
    rng : None, int, SeedSequence or Generator
        Source of the layer, the examples and the refinement's start.

    Returns
    -------
    PhaseProfile
        Each phase's sections, times and the ratio of phase 4 to its labels.
    """
    import dataclasses as _dc

    from ..oracle import LayerOracle
    from ..phases import LearnConfig, refined_sculpt
    from ..phases.search import refine_layer, refinement_examples
    from ..profiling import recording

    rng = check_rng(rng)
    layer_seed, oracle_seed, start_seed, input_seed = rng.spawn(4)
    layer = random_layer(m, d, logit_scale=STUDY_LOGIT_SCALE, rng=layer_seed)
    cfg = _dc.replace(LearnConfig(), refined_tol=tol, max_examples=examples, refined_constraints=1e9)

    def table(sections):
        return {name: (s.seconds, s.calls, s.flops) for name, s in sections.items()}

    with blas_threads(1) as blas:
        gemm = gemm_rate(repeat=3, rng=0)
        with recording() as p4:
            t0 = time.perf_counter()
            found = refined_sculpt(LayerOracle(layer, k, rng=oracle_seed), layer.ws.sum(axis=0), cfg, m=m,
                                   pilot=False)
            t4 = time.perf_counter() - t0
        examples = found.n_examples  # the stability rule may stop the stream before the budget
        sizes = [min(cfg.batch, examples - s) for s in range(0, examples, cfg.batch)]
        Xs = [sample_inputs(n, k, d, rng=input_seed) for n in sizes[:1]]
        t0 = time.perf_counter()
        for n in sizes:
            layer(Xs[0][:n])
        tf = time.perf_counter() - t0
        X, Y = LayerOracle(layer, k, rng=start_seed).draw(refinement_examples(m, d, k, cfg))
        theta0 = _moved(layer.thetas, 0.01, start_seed)
        seconds, sections = {}, {}
        for solver in solvers:
            with recording() as p6:
                t0 = time.perf_counter()
                refine_layer(theta0, X, Y, max_iter=cfg.max_nfev, solver=solver)
                seconds[solver] = time.perf_counter() - t0
            sections[solver] = table(p6)
    return PhaseProfile(m, d, k, tol, examples, gemm, t4, tf, found.count, table(p4), seconds, sections, blas)
