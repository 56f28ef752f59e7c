"""Phase 4's cost before paying it: the examples a certification tolerance needs, forecast from a pilot (ours).

Phase 4 (:func:`learner.phases.refined_sculpt`) draws examples until it has
``target`` constraints; its yield (constraints per example) falls steeply with
the tolerance and with ``n = (m−1)(k−1)``, so the examples it needs range over
orders of magnitude between settings. This module is what the learner needs of
the yield model of :mod:`theory.yield_model` to know that cost early, from its
own examples (it does not have the true heads):

* :func:`poisson_interval`, Garwood's exact interval for a Poisson count;
* the *window law* (:func:`window_exponent`, :func:`window_scale`): a row
  certifies when its ``n`` logit disagreements fall in a window whose volume is
  ``∝ tol^n`` (the volume factor of :func:`theory.yield_model.predicted_yield`),
  so the yield scales like ``tol^n``;
* :func:`pilot_forecast`: from the residuals of the constraints certified on the
  first examples of phase 4 (the *pilot*, certified at the loosest candidate
  tolerance), the constraints per example at each candidate tolerance, a 95 %
  interval, and the examples the target needs; the choice of tolerance; and
  whether that fits the example budget.

Everything here is ours: the paper (arXiv 2402.04084) bounds the examples only
up to ``poly(d, k, 1/ε)·(dk)^{O(m³)}`` factors.

Measured (ours; true ΣW, logit scale 1, two layers each, ΣW also perturbed by
0.5 %): the local exponent ``d log(count)/d log(tol)`` between 0.015 and 0.03
was 0.99–1.07 n at (2, 12, 2), 0.98–1.05 n at (3, 12, 2), 0.96–1.03 n at
(4, 16, 2), 0.96–1.01 n at (3, 16, 3) and 0.82 n at (6, 16, 2). Integer ``Θ``
(:func:`theory.yield_model.integer_layer`) put an atom at ``D = 0`` whose rows
fit exactly: their exponent is near 0 (see :data:`EXPONENT_BAND`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..validation import check_int, check_positive_float, check_real_array

__all__ = [
    "ADAPTIVE_CANDIDATES",
    "AFFORDABLE_EXAMPLES",
    "DEFAULT_CANDIDATES",
    "DEFAULT_MAX_EXAMPLES",
    "EXPONENT_BAND",
    "MIN_DIRECT",
    "PILOT_EXAMPLES",
    "PILOT_MAX_FRACTION",
    "PILOT_ROWS",
    "REACH_CANDIDATES",
    "REACH_EXAMPLES",
    "RULES",
    "Forecast",
    "ToleranceForecast",
    "covering_examples",
    "pilot_forecast",
    "poisson_interval",
    "window_exponent",
    "window_scale",
]

#: Candidate tolerances of phase 4 without ``LearnConfig.adaptive`` (ours): 0.015 a tight and 0.03 a loose
#: tolerance (looser rows are discounted by phase 5's precision weights); 0.02 lies between.
DEFAULT_CANDIDATES = (0.015, 0.02, 0.03)
#: The candidates of the data-driven budgets (``LearnConfig.adaptive``, ours): 0.05 and 0.08 added. Phase 6
#: recovered the layer from hulls sculpted at 0.05 and 0.08 on the first frontier layer of (3, 12, 4),
#: (4, 12, 3) and (6, 16, 2) (relative errors ≤ 1.2e-30), where 0.03 took 3–23 times the examples.
ADAPTIVE_CANDIDATES = (0.015, 0.02, 0.03, 0.05, 0.08)
#: Looser tolerances phase 4 turns to only where the choice among :data:`ADAPTIVE_CANDIDATES` is forecast above
#: :data:`REACH_EXAMPLES` examples or over its budget (ours, see :func:`pilot_forecast`'s ``reach``). Not
#: candidates of their own: on fresh (10, 24, 2) layers with them among the candidates, the cost rule chose 0.15 and
#: phase 4 drew about a twelfth of the examples, but phase 6's search needed four to five times the evaluations
#: from the looser hull and on one layer of three its refinement stalled at a relative residual of 2.6e-3
#: (``docs/sweeps/reach-tolerances``).
REACH_CANDIDATES = (0.1, 0.12, 0.15)
#: Forecast examples above which phase 4 turns to :data:`REACH_CANDIDATES` (ours), choosing the tightest tolerance
#: whose forecast lies within it: some three to five minutes of phase 4 on two cores (two workers streamed 0.32 M
#: examples/s at (12, 32, 2), 0.54–0.65 M/s at (10, 24, 2)), and about three times the examples fresh (10, 24, 2)
#: layers drew at 0.08 (30–35 M), where 0.08 stays the loosest tolerance. At d = 32, against the planted ΣW,
#: 0.08 needs 367–902 M examples from m = 11 to 13 and 0.12 17–28 M; against a learned ΣŴ a (12, 32, 2) run
#: drew 43 M at 0.12.
REACH_EXAMPLES = 100_000_000
#: How the tolerance is chosen: "affordable" (the smallest candidate whose forecast is at most ``threshold``),
#: "cost" (the smallest forecast of examples × (tol / smallest candidate)²) or "within" (the smallest candidate
#: whose forecast's interval lies below ``threshold``, the reach's rule), see :func:`pilot_forecast`.
RULES = ("affordable", "cost", "within")
#: Constraints below which a direct count at a tolerance is not trusted (ours: the 95 % Garwood interval
#: of 10 counts spans 0.48–1.84 times the count; below that the window law from the loosest tolerance,
#: which has the most constraints, is the better estimate).
MIN_DIRECT = 10
#: Band of the measured local exponent, as multiples of n, inside which the window law is trusted (ours).
#: Planted layers measured 0.82–1.07 n (module docstring); integer Θ about 0. The band is wide enough
#: for the Gaussian model's known under-estimate at larger n and a ΣW error, and excludes the atom.
EXPONENT_BAND = (0.5, 1.5)
#: The tolerance chosen is the smallest candidate whose forecast is at most this many examples (ours):
#: about one to two minutes of phase 4 on two cores (measured 0.2–0.4 M examples/s at n <= 4). Tighter
#: constraints are worth that much; beyond it the looser tolerance's 2^n-fold yield wins.
AFFORDABLE_EXAMPLES = 20_000_000
#: The default example budget of each phase-4 round (ours): 10^9 examples, some 15–45 minutes on two
#: cores at the rates measured by the pilot (0.4–1 M examples/s at (m, d, k) = (6, 16, 2)–(4, 16, 4)).
DEFAULT_MAX_EXAMPLES = 1_000_000_000
#: The pilot certifies at least this many examples before it settles, unless it has PILOT_ROWS rows (ours).
PILOT_EXAMPLES = 1_000_000
#: Certified rows at the loosest tolerance that settle the pilot at once: ±20 % at 95 % (ours).
PILOT_ROWS = 100
#: The pilot never takes more than this fraction of the budget before it settles (ours).
PILOT_MAX_FRACTION = 0.05


def poisson_interval(count: int, failure_probability: float) -> tuple[float, float]:
    """Garwood's exact two-sided interval for a Poisson mean from one observed ``count``.

    .. math:: \\Big[\\tfrac12 \\chi^2_{2c}(\\alpha/2),\\ \\tfrac12 \\chi^2_{2c+2}(1-\\alpha/2)\\Big]

    with ``c`` the count and ``α`` the failure probability (the lower end is 0 for ``c = 0``).

    Parameters
    ----------
    count : int
        Observed count, ``>= 0``.
    failure_probability : float
        ``α``, in (0, 1).

    Returns
    -------
    (float, float)

    References
    ----------
    F. Garwood, "Fiducial limits for the Poisson distribution", Biometrika 28 (1936).

    Examples
    --------
    >>> [round(v, 3) for v in poisson_interval(10, 0.05)]
    [4.795, 18.39]
    """
    from scipy.stats import chi2

    count = check_int("count", count, minimum=0)
    a = check_positive_float("failure_probability", failure_probability)
    if a >= 1:
        raise ValueError(f"`failure_probability` must be in (0, 1); got failure_probability={a!r}.")
    lo = 0.0 if count == 0 else 0.5 * float(chi2.ppf(a / 2, 2 * count))
    hi = 0.5 * float(chi2.ppf(1 - a / 2, 2 * count + 2))
    return lo, hi


def covering_examples(distinct: int, failure_probability: float = 0.05) -> int:
    """The examples a uniform stream needs to draw every one of ``distinct`` equally likely inputs.

    .. math:: n^* = \\lceil D \\ln(D / \\alpha) \\rceil

    with ``D = distinct`` and ``α = failure_probability``: by the union bound, the chance that ``n*`` independent
    uniform draws miss some input is at most ``D (1 − 1/D)^{n*} <= D e^{−n*/D} <= α``. On the Boolean cube an
    exact oracle's sequences of ``k`` tokens in dimension ``d`` take ``D = 2^{kd}`` values; past ``n*`` examples
    every new one repeats an input already drawn (ours: the cap of phase 4's advice).

    Parameters
    ----------
    distinct : int
        ``D``, the number of distinct inputs, at least 1.
    failure_probability : float
        ``α``, in (0, 1): the chance that some input is still missing after ``n*`` draws is at most this.

    Returns
    -------
    int
        ``n*``.

    Raises
    ------
    ValueError
        If ``distinct`` is below 1 or ``failure_probability`` is not in (0, 1).

    See Also
    --------
    learner.phases.forecast.Forecast.budget_message : Advises no budget beyond ``n*`` when the inputs are that few.

    Examples
    --------
    The 2^8 = 256 sequences of two tokens on the cube in dimension 4:

    >>> covering_examples(2**8)
    2187
    """
    distinct = check_int("distinct", distinct, minimum=1)
    a = check_positive_float("failure_probability", failure_probability)
    if a >= 1:
        raise ValueError(f"`failure_probability` must be in (0, 1); got failure_probability={a!r}.")
    return math.ceil(distinct * math.log(distinct / a))


def window_exponent(m: int, k: int) -> int:
    """``n = (m−1)(k−1)``: the logit disagreements a certified row must have near 0.

    Parameters
    ----------
    m : int
        Heads, at least 1.
    k : int
        Tokens per example, at least 1.

    Returns
    -------
    int
        ``(m − 1)(k − 1)``, the window law's exponent.

    Examples
    --------
    >>> window_exponent(3, 3), window_exponent(1, 4)
    (4, 0)
    """
    return (check_int("m", m) - 1) * (check_int("k", k) - 1)


def window_scale(tol: float, tol_ref: float, n: int) -> float:
    """The window law: yield at ``tol`` over yield at ``tol_ref``, ``(tol / tol_ref)^n``.

    The acceptance window of the ``n`` disagreements is ``{‖M_X D‖ <= tol}``, a volume
    ``∝ tol^n`` (:func:`theory.yield_model.predicted_yield`); where the density of ``D`` is
    smooth at 0 the yield scales the same way (ours).

    Parameters
    ----------
    tol : float
        The tolerance forecast (positive).
    tol_ref : float
        The tolerance whose yield is known (positive).
    n : int
        The exponent ``(m−1)(k−1)`` (:func:`window_exponent`), at least 0.

    Returns
    -------
    float
        ``(tol / tol_ref)^n``: the factor on the yield at ``tol_ref``.

    Examples
    --------
    >>> window_scale(0.015, 0.03, 4)
    0.0625
    """
    tol = check_positive_float("tol", tol)
    tol_ref = check_positive_float("tol_ref", tol_ref)
    return (tol / tol_ref) ** check_int("n", n, minimum=0)


@dataclass(frozen=True)
class ToleranceForecast:
    """The forecast at one tolerance (one row of :class:`Forecast`).

    Parameters
    ----------
    tol : float
        The tolerance (a relative residual).
    constraints : int
        The pilot's constraints with residual ``< tol`` (a direct count).
    rows : int
        The pilot's certified rows with residual ``< tol`` (a row gives one or more constraints).
    per_1000 : float
        The constraints per 1000 examples used for the forecast.
    interval : (float, float)
        Their interval at the forecast's failure probability (95 % by default).
    method : str
        Where the rate comes from: ``"direct"`` (the count), ``"window law"`` (extrapolated from the
        loosest tolerance ``T`` as ``(tol/T)^n``, when the count is below ``min_count`` and the model holds)
        or ``"direct, few"`` (the count although below ``min_count``, when the model does not hold or
        nothing can be extrapolated).
    predicted_examples : float
        ``target / rate``: the examples phase 4 is forecast to need (``inf`` when the rate is 0).
    predicted_interval : (float, float)
        Its interval (the ends from the rate's upper and lower ends).
    """

    tol: float
    constraints: int
    rows: int
    per_1000: float
    interval: tuple[float, float]
    method: str
    predicted_examples: float
    predicted_interval: tuple[float, float]


@dataclass(frozen=True)
class Forecast:
    """What phase 4 will cost, forecast from a pilot; see :func:`pilot_forecast`, which makes it.

    Parameters
    ----------
    n_examples : int
        The pilot's examples.
    target : int
        The constraints phase 4 collects.
    n : int
        ``(m−1)(k−1)``, the window law's exponent.
    table : sequence of ToleranceForecast
        One forecast per tolerance, in increasing order of tolerance.
    exponent : float
        The pilot's local exponent ``log(R_T / R_t0) / log(T / t0)`` (NaN without rows at the loosest
        tolerance).
    exponent_interval : (float, float)
        Its Clopper–Pearson interval ((0, ∞) without rows at the loosest tolerance).
    model_ok : bool
        Whether the exponent's interval meets ``[band[0]·n, band[1]·n]``, so the window law may extrapolate.
    band : tuple of float
        The band of the exponent, as multiples of ``n``.
    tol : float
        The tolerance chosen (or fixed).
    fixed : bool
        Whether ``tol`` was fixed by the caller rather than chosen.
    threshold : float
        The ``"affordable"`` rule's limit in examples.
    budget : int or None
        Phase 4's example budget (None: no budget).
    over_budget : bool
        Whether the chosen tolerance's forecast exceeds ``budget``.
    settled : bool
        Whether the pilot may stop (see :func:`pilot_forecast`'s Returns).
    seconds : float or None
        The pilot's wall time (None: unknown).
    workers : int
        The workers the pilot ran on.
    failure_probability : float
        Of each interval.
    rule : {"affordable", "cost", "within"}, default "affordable"
        How ``tol`` was chosen (:data:`RULES`).
    reach : tuple of float, default ()
        The looser tolerances the choice was made among too, because the candidates' choice was forecast
        above the reach threshold or over ``budget`` (see :func:`pilot_forecast`; ``threshold`` and ``rule`` are
        then the reach's); empty where they were not considered.
    """

    n_examples: int
    target: int
    n: int
    table: Sequence[ToleranceForecast]
    exponent: float
    exponent_interval: tuple[float, float]
    model_ok: bool
    band: tuple[float, ...]
    tol: float
    fixed: bool
    threshold: float
    budget: int | None
    over_budget: bool
    settled: bool
    seconds: float | None
    workers: int
    failure_probability: float
    rule: str = "affordable"
    reach: tuple[float, ...] = ()

    def at(self, tol: float) -> ToleranceForecast:
        """The :class:`ToleranceForecast` at ``tol`` (one of the table's tolerances).

        Parameters
        ----------
        tol : float
            A tolerance of the table, exactly.

        Returns
        -------
        ToleranceForecast
            The table's row at ``tol``.

        Raises
        ------
        KeyError
            When the table has no row at ``tol``.
        """
        for row in self.table:
            if row.tol == tol:
                return row
        raise KeyError(f"no forecast at tol={tol!r}; have {[row.tol for row in self.table]}")

    @property
    def chosen(self) -> ToleranceForecast:
        """The forecast at the tolerance chosen (or fixed)."""
        return self.at(self.tol)

    @property
    def predicted_examples(self) -> float:
        """Examples phase 4 is forecast to draw at the chosen tolerance (the pilot's included)."""
        return self.chosen.predicted_examples

    @property
    def examples_per_second(self) -> float | None:
        """The pilot's measured rate (None without its time)."""
        return self.n_examples / self.seconds if self.seconds else None

    def seconds_for(self, examples: float, workers: int | None = None) -> float | None:
        """Seconds for ``examples`` more examples at the pilot's rate, scaled per worker to ``workers``.

        Parameters
        ----------
        examples : float
            The examples to draw (``inf`` allowed).
        workers : int, optional
            The workers to draw them on; None: the pilot's.

        Returns
        -------
        float or None
            The seconds (``inf`` for infinitely many examples); None when the pilot's time is unknown.
        """
        rate = self.examples_per_second
        if rate is None or not math.isfinite(examples):
            return math.inf if rate is not None else None
        return examples / (rate / self.workers * (workers or self.workers))

    def summary(self) -> str:
        """One line for the log: the prediction at every tolerance and the choice.

        Returns
        -------
        str
            Each tolerance's constraints and forecast with its interval, the exponent against ``n``, the
            tolerance chosen and, with the pilot's rate, the time the rest would take.
        """
        def ex(v):
            return "∞" if not math.isfinite(v) else f"{v:.2g}"
        parts = [f"tol {r.tol:g}: {r.constraints} constraints, {ex(r.predicted_examples)} examples "
                 f"[{ex(r.predicted_interval[0])}, {ex(r.predicted_interval[1])}]"
                 + ("" if r.method == "direct" else f" ({r.method})") for r in self.table]
        rest = self.seconds_for(max(self.predicted_examples - self.n_examples, 0))
        eta = "" if rest is None or not math.isfinite(rest) else (
            f"; about {_duration(rest)} more at {self.examples_per_second:,.0f} examples/s")
        law = (f"exponent {self.exponent:.2f} vs n = {self.n}" + ("" if self.model_ok else
                                                                  " (window law rejected: direct counts only)"))
        reach = (f" (looser tolerances {', '.join(f'{t:g}' for t in self.reach)} considered: the candidates' choice "
                 f"was forecast above {self.threshold:.3g} examples or the budget)" if self.reach else "")
        return (f"pilot of {self.n_examples:,} examples: " + "; ".join(parts) + f"; {law}; "
                + ("fixed" if self.fixed else "chosen") + f" tol {self.tol:g}" + reach + eta)

    def budget_message(self, distinct_inputs: int | None = None) -> str:
        """Why phase 4 stops before drawing the rest, and what would make it fit.

        Deterministic given the examples (no rate, no workers), so a run's record is the same
        wherever its batches ran; :meth:`time_message` adds the time estimates.

        Parameters
        ----------
        distinct_inputs : int, optional
            The distinct inputs the source can give (an exact oracle on the Boolean cube: ``2^{kd}``). A budget
            beyond :func:`covering_examples` of them is never advised (ours): past it every example repeats an
            input already drawn, whose rows certify or not as they did, so it adds no constraint the target
            needs. None: no such limit (Gaussian inputs, noisy labels).

        Returns
        -------
        str
            The forecast at the chosen tolerance against ``max_examples``, a budget that would fit (rounded up
            to two significant digits) — or, where that exceeds what the distinct inputs can give, that no
            budget does — and the tolerance with the smallest forecast.
        """
        c = self.chosen
        lo, hi = c.predicted_interval
        point = (f"about {c.predicted_examples:.2g} examples (95 % interval {lo:.2g}–{hi:.2g})"
                 if math.isfinite(c.predicted_examples)
                 else f"more than {lo:.2g} examples (95 % lower end; no constraint at tol {c.tol:g} yet)")
        text = (f"phase 4 would need {point} for {self.target} constraints at tol {c.tol:g}, forecast from a pilot "
                f"of {self.n_examples:,} examples ({c.constraints} constraints); the budget is "
                f"max_examples={self.budget:,}")
        need = c.predicted_examples if math.isfinite(c.predicted_examples) else 10 * lo
        mag = 10.0 ** (math.floor(math.log10(need)) - 1)
        suggest = int(math.ceil(need / mag) * mag)  # rounded up to two significant digits
        cover = covering_examples(distinct_inputs, self.failure_probability) if distinct_inputs else None
        if cover is not None and suggest > cover:
            sure = 100 * (1 - self.failure_probability)
            text += (f". No budget reaches it: the inputs take only {distinct_inputs:,} distinct values, and "
                     f"{cover:,} examples draw every one of them with probability {sure:g} % (the pilot drew "
                     f"{self.n_examples:,}); more examples only repeat inputs already drawn, whose rows certify as "
                     "they did")
        else:
            upper = (f"its 95 % upper end is {hi:.2g}" if math.isfinite(hi)
                     else "ten times the lower end: no upper end yet")
            text += (f". To run it: pass a budget of at least {suggest:,} examples ({upper}): "
                     f"LearnConfig(max_examples={suggest}) or --max-examples {suggest}")
        best = min(self.table, key=lambda r: (r.predicted_examples, -r.tol))
        if best.tol != c.tol:
            text += (f"; the tolerance with the smallest forecast is tol {best.tol:g} "
                     f"({best.predicted_examples:.2g} examples)")
        else:
            text += f"; tol {c.tol:g} already has the smallest forecast of the candidates"
        return text + "."

    def time_message(self) -> str:
        """The time the rest of phase 4 would take at the pilot's rate, here and with more workers.

        Returns
        -------
        str
            The pilot's rate and the time the rest would take, or that the rate is unknown.
        """
        rate = self.examples_per_second
        c = self.chosen
        if not rate:
            return "the pilot's rate is unknown"
        per = rate / self.workers
        text = (f"the pilot ran at {rate:,.0f} examples/s with {self.workers} worker{'s' * (self.workers > 1)} "
                f"({per:,.0f} per worker)")
        if not math.isfinite(c.predicted_examples):
            return text + f"; more than {_duration(self.seconds_for(c.predicted_interval[0]))} for the rest"
        rest = c.predicted_examples - self.n_examples
        hour = max(self.workers, math.ceil(rest / (per * 3600)))
        text += f": the rest would take about {_duration(self.seconds_for(rest))}"
        if hour > self.workers:
            text += f", or about an hour with {hour} workers at that per-worker rate"
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (infinite values become None) of what does not depend on where the pilot ran.

        ``seconds`` is wall time (records drop it when they compare runs); the workers and the rate are
        left out, so a run's diagnostics are the same with any number of workers (they are in the INFO
        log, the budget message and ``LearnResult.execution``).

        Returns
        -------
        dict
            Every field but ``workers`` (``table`` as a list of dicts, tuples as lists), and
            ``predicted_examples``.
        """
        def clean(v):
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, (list, tuple)):
                return [clean(x) for x in v]
            if isinstance(v, dict):
                return {key: clean(x) for key, x in v.items()}
            return v
        out = clean(asdict(self))
        del out["workers"]
        out["predicted_examples"] = clean(self.predicted_examples)
        return out


def _duration(seconds):
    if seconds is None:
        return "unknown time"
    if not math.isfinite(seconds):
        return "forever"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _runs(residuals):
    """Residuals of the certified rows: the constraints of one row are consecutive with equal residuals."""
    if residuals.size == 0:
        return residuals
    return residuals[np.r_[True, residuals[1:] != residuals[:-1]]]


def _exponent(rows_lo, rows_hi, ratio, failure_probability):
    """``log(R_hi/R_lo)/log(T/t)`` and its interval from the Clopper–Pearson interval of ``R_lo | R_hi``."""
    from scipy.stats import beta

    if rows_hi == 0:
        return math.nan, (0.0, math.inf)
    a = failure_probability
    q_lo = 0.0 if rows_lo == 0 else float(beta.ppf(a / 2, rows_lo, rows_hi - rows_lo + 1))
    q_hi = 1.0 if rows_lo == rows_hi else float(beta.ppf(1 - a / 2, rows_lo + 1, rows_hi - rows_lo))
    log_ratio = math.log(ratio)  # > 0: T / t
    point = math.log(rows_hi / rows_lo) / log_ratio if rows_lo else math.inf
    return point, (-math.log(q_hi) / log_ratio, -math.log(q_lo) / log_ratio if q_lo > 0 else math.inf)


def _choose(table, cands, threshold, rule):
    """The tolerance :func:`pilot_forecast` chooses among ``cands`` by ``rule`` (see there)."""
    rows = [r for r in table if r.tol in cands]
    if rule == "cost":
        smallest = min(cands)
        # Only the pilot's own counts: a window-law forecast scales the loosest count by (t/T)^n, which for
        # n = 2 ties every tolerance's cost and would choose the tightest on the model's word alone (seen at
        # (3, 12, 2): 1 constraint at 0.015 against 443 at 0.08, and 0.015 chosen).
        counted = [r for r in rows if r.method == "direct"] or rows
        return min(counted, key=lambda r: (r.predicted_examples * (r.tol / smallest) ** 2, r.tol)).tol
    upper = rule == "within"  # the interval's upper end, not the point forecast
    fits = [r for r in rows if (r.predicted_interval[1] if upper else r.predicted_examples) <= threshold]
    return fits[0].tol if fits else min(rows, key=lambda r: (r.predicted_examples, -r.tol)).tol


def _tolerances(candidates, reach):
    """:func:`pilot_forecast`'s ``candidates`` and ``reach`` checked, as tuples of floats."""
    try:
        cands = tuple(float(check_positive_float("candidates", t)) for t in candidates)
    except TypeError as exc:
        raise TypeError(f"`candidates` must be a sequence of tolerances; got candidates={candidates!r}.") from exc
    if not cands or any(t >= 1 for t in cands):
        raise ValueError(f"`candidates` must be non-empty tolerances in (0, 1); got candidates={candidates!r}.")
    try:
        wider = tuple(float(check_positive_float("reach", t)) for t in reach)
    except TypeError as exc:
        raise TypeError(f"`reach` must be a sequence of tolerances; got reach={reach!r}.") from exc
    if wider and not (min(wider) > max(cands) and max(wider) < 1):
        raise ValueError(f"`reach` must be tolerances above every candidate ({max(cands):g}) and below 1; "
                         f"got reach={reach!r}.")
    return cands, wider


def pilot_forecast(residuals: ArrayLike, n_examples: int, *, target: int, n: int,
                   candidates: Iterable[float] = DEFAULT_CANDIDATES, tol: float | None = None,
                   threshold: float = AFFORDABLE_EXAMPLES, budget: int | None = None, seconds: float | None = None,
                   workers: int = 1, min_count: int = MIN_DIRECT, band: Sequence[float] = EXPONENT_BAND,
                   failure_probability: float = 0.05, rule: str = "affordable",
                   reach: Iterable[float] = (), reach_threshold: float = REACH_EXAMPLES) -> Forecast:
    """Forecast the examples phase 4 needs at each candidate tolerance from a pilot, and choose one.

    With ``C_t`` the pilot's constraints with residual ``< t`` among ``N`` examples, the
    forecast at ``t`` is

    .. math:: \\hat N_t = \\frac{\\text{target}}{\\hat\\lambda_t}, \\qquad
              \\hat\\lambda_t = \\begin{cases} C_t / N & C_t \\ge c_{min} \\\\
              (C_T / N)\\,(t / T)^n & \\text{otherwise (window law)} \\end{cases}

    with ``T`` the loosest tolerance, ``n = (m−1)(k−1)`` and ``c_min = min_count``. The
    window law is used only when the pilot's local exponent
    ``a = log(R_T / R_t0) / log(T / t0)`` (rows ``R``, ``t0`` the smallest tolerance) has a
    95 % interval meeting ``[band_0·n, band_1·n]`` (``model_ok``); otherwise only direct counts.

    Parameters
    ----------
    residuals : array_like, shape (N_c,)
        Relative residual of each constraint the pilot certified, in certification order, all
        below the loosest tolerance (phase 4's ``Constraints.residual``). The constraints of
        one row are consecutive and share its residual: a run of equal values counts as one
        row, so the intervals allow for a row's several constraints.
    n_examples : int
        Examples of the pilot (``N``).
    target : int
        Constraints phase 4 collects.
    n : int
        ``(m−1)(k−1)``, the window law's exponent (:func:`window_exponent`).
    candidates : sequence of float
        Tolerances to choose from, each in (0, 1).
    tol : float, optional
        A tolerance fixed by the user: forecast there too, and choose it.
    threshold : float
        With ``rule="affordable"``: the smallest candidate whose forecast is at most this many examples is
        chosen, else the one with the smallest forecast (the loosest, when yields grow with tol).
    rule : {"affordable", "cost", "within"}
        ``"cost"`` (the data-driven budgets' rule, ours) chooses the candidate with the smallest
        ``N̂_t·(t/t_min)²`` (ties to the smaller ``t``): a constraint certified at ``t`` is off by up to
        about ``t``, so a hull of a given precision needs ``∝ t²`` of them, while the yield grows like
        ``t^n``. Where ``n < 2`` (e.g. (2, d, 2)) the tightest tolerance wins, where ``n > 2`` the loosest
        — as the pilot's own counts say, not the window law's ``n``: only tolerances counted directly (at
        least ``min_count`` constraints) are considered, unless none is. ``threshold`` is then unused.
        ``"within"`` (``reach``'s rule, ours) is ``"affordable"`` on the upper end of each forecast's interval:
        the tightest tolerance is chosen only when the pilot's count there is large enough to say it fits.
    budget : int, optional
        Example budget of phase 4: ``over_budget`` when the chosen forecast exceeds it.
    seconds : float, optional
        Wall time of the pilot (for the rate and time estimates).
    workers : int
        Workers the pilot ran on (for the per-worker rate).
    min_count : int
        Direct counts below this are extrapolated (when ``model_ok`` and the loosest tolerance
        itself has at least :data:`MIN_DIRECT` constraints).
    band : (float, float)
        The window law holds when the exponent's interval meets ``[band[0]·n, band[1]·n]``.
    failure_probability : float
        Of each interval (Garwood for the rows, Clopper–Pearson for the exponent).
    reach : sequence of float
        Looser tolerances than every candidate, considered only where the choice among ``candidates`` is
        forecast above ``reach_threshold`` examples or over ``budget`` (ours: :data:`REACH_CANDIDATES`). The
        forecast is first made as without them, from the residuals below the loosest candidate, so that
        elsewhere the result is the same as without ``reach``; otherwise it is made again over candidates and
        ``reach`` together (``Forecast.reach`` records it), and the tightest tolerance whose forecast's interval
        lies within ``reach_threshold`` (and ``budget``) is chosen, else the one with the smallest forecast (the
        ``"within"`` rule at that threshold). The pilot certifies at the loosest of them. Unused with ``tol``
        (residuals above the loosest candidate are then left out).
    reach_threshold : float
        The forecast examples beyond which ``reach`` is considered (:data:`REACH_EXAMPLES`).

    Returns
    -------
    Forecast
        ``table`` (one :class:`ToleranceForecast` per tolerance, increasing), ``exponent`` and
        its interval (NaN, (0, ∞) without rows at the loosest), ``model_ok``, the chosen
        ``tol``, ``over_budget`` and ``settled`` (the pilot may stop: at least
        :data:`PILOT_ROWS` rows at the loosest tolerance; or at least :data:`PILOT_EXAMPLES`
        examples and a forecast within the budget; or the forecast's lower end above the budget;
        or :data:`PILOT_MAX_FRACTION` of the budget spent).

    Raises
    ------
    ValueError
        A residual not below the loosest tolerance, bad tolerances, counts or band.

    Notes
    -----
    Ours. The rows' count is treated as Poisson (Garwood's interval, scaled by the observed
    constraints per row; ``k − 1`` is unknown here, so 1 when no row certified). Extrapolating
    with ``n`` rather than the measured exponent is conservative where the measured exponent is
    below ``n`` (planted layers: 0.82–1.07 n).

    Examples
    --------
    >>> import numpy as np
    >>> res = np.random.default_rng(0).uniform(0, 0.03, 400)  # uniform residuals: exponent 1
    >>> fc = pilot_forecast(res, 100_000, target=1000, n=1)
    >>> fc.model_ok, fc.tol, [r.constraints for r in fc.table], f"{fc.predicted_examples:.3g}"
    (True, 0.015, [183, 243, 400], '5.46e+05')
    """
    res = check_real_array("residuals", residuals, ndim=1)
    n_examples = check_int("n_examples", n_examples)
    target = check_int("target", target)
    n = check_int("n", n, minimum=0)
    workers = check_int("workers", workers)
    min_count = check_int("min_count", min_count)
    threshold = check_positive_float("threshold", threshold)
    if budget is not None:
        budget = check_int("budget", budget)
    if seconds is not None:
        seconds = check_positive_float("seconds", seconds, allow_zero=True)
    a = check_positive_float("failure_probability", failure_probability)
    if a >= 1:
        raise ValueError(f"`failure_probability` must be in (0, 1); got failure_probability={a!r}.")
    cands, wider = _tolerances(candidates, reach)
    if tol is not None:
        tol = check_positive_float("tol", tol)
        if tol >= 1:
            raise ValueError(f"`tol` must be below 1; got tol={tol!r}.")
    if rule not in RULES:
        raise ValueError(f"`rule` must be one of {RULES}; got rule={rule!r}.")
    reach_threshold = check_positive_float("reach_threshold", reach_threshold)
    if wider:
        kw: dict[str, Any] = dict(n_examples=n_examples, target=target, n=n, tol=tol, budget=budget, seconds=seconds,
                                  workers=workers, min_count=min_count, band=band, failure_probability=a)
        inside = pilot_forecast(res[res < max(cands + ((tol,) if tol is not None else ()))], candidates=cands,
                                threshold=threshold, rule=rule, **kw)
        if tol is not None or not (inside.over_budget or inside.predicted_examples > reach_threshold):
            return inside
        limit = reach_threshold if budget is None else min(reach_threshold, budget)
        return replace(pilot_forecast(res, candidates=cands + wider, threshold=limit, rule="within", **kw),
                       reach=wider)
    if len(band) != 2 or not 0 <= band[0] < band[1]:
        raise ValueError(f"`band` must be (low, high) with 0 <= low < high; got band={band!r}.")
    tols = sorted(set(cands) | ({tol} if tol is not None else set()))
    loosest = tols[-1]
    if res.size and not (res.min() >= 0 and res.max() < loosest):
        raise ValueError(f"`residuals` must lie in [0, {loosest:g}) (the pilot certifies at the loosest tolerance); "
                         f"got residuals in [{res.min():.3g}, {res.max():.3g}].")
    rows = _runs(res)
    count = {t: int((res < t).sum()) for t in tols}
    rcount = {t: int((rows < t).sum()) for t in tols}
    exponent, exp_interval = _exponent(rcount[tols[0]], rcount[loosest], loosest / tols[0], a) if len(tols) > 1 \
        else (math.nan, (0.0, math.inf))
    model_ok = bool(exp_interval[1] >= band[0] * n and exp_interval[0] <= band[1] * n)

    def rate(t):  # constraints per example and interval from the direct count at t
        per_row = count[t] / rcount[t] if rcount[t] else (count[loosest] / rcount[loosest] if rcount[loosest] else 1.0)
        lo, hi = poisson_interval(rcount[t], a)
        return count[t] / n_examples, (per_row * lo / n_examples, per_row * hi / n_examples)

    base, (base_lo, base_hi) = rate(loosest)
    table = []
    for t in tols:
        lam, (lo, hi) = rate(t)
        method = "direct"
        if count[t] < min_count:
            if model_ok and count[loosest] >= MIN_DIRECT and t < loosest:
                s = window_scale(t, loosest, n)
                lam, lo, hi, method = base * s, base_lo * s, base_hi * s, "window law"
            else:
                method = "direct, few"
        table.append(ToleranceForecast(
            tol=t, constraints=count[t], rows=rcount[t], per_1000=1000 * lam, interval=(1000 * lo, 1000 * hi),
            method=method, predicted_examples=target / lam if lam > 0 else math.inf,
            predicted_interval=(target / hi if hi > 0 else math.inf, target / lo if lo > 0 else math.inf)))
    table = tuple(table)  # type: ignore[assignment]
    chosen = tol if tol is not None else _choose(table, cands, threshold, rule)
    row = next(r for r in table if r.tol == chosen)
    over = budget is not None and row.predicted_examples > budget
    settled = (rcount[loosest] >= PILOT_ROWS
               or (budget is None and n_examples >= PILOT_EXAMPLES)
               or (budget is not None and (
                   (n_examples >= PILOT_EXAMPLES and not over)
                   or row.predicted_interval[0] > budget
                   or n_examples >= PILOT_MAX_FRACTION * budget)))
    return Forecast(
        n_examples=n_examples, target=target, n=n, table=table, exponent=exponent, exponent_interval=exp_interval,
        model_ok=model_ok, band=tuple(band), tol=chosen, fixed=tol is not None, threshold=threshold, budget=budget,
        over_budget=over, settled=settled, seconds=seconds, workers=workers, failure_probability=a, rule=rule)
