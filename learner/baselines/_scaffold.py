"""What the gradient baselines share: the checks, the one draw split into training and validation examples,
the restarts from ``N(0, init_scale²/d)`` starts, the milestone clock, the diagnostics and the verdict.

:func:`~learner.baselines.fit_gradient` (numpy, analytic gradients) and :func:`~learner.baselines.fit_torch`
(``torch.optim.Adam``) differ only in how one restart trains; everything a reader compares between them is
decided here, once. The scaffold and its defaults are ours; the paper analyses no gradient method.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import ExamplesExhausted
from ..layer import AttentionLayer
from ..metrics import truth_errors
from ..oracle import ArraySource, LayerOracle, draw_checked
from ..result import LearnResult
from ..validation import Integer, Real, Rule, Scale, check_int, check_positive_float

__all__ = ["GradientFit", "check_milestones", "milestone_key", "validation_error"]

log = logging.getLogger(__name__)

#: The options of the two gradient fits, declared once (the validation layer's rules): the functions check
#: their arguments with these, and the study commands (``--adam-lr``, ``--epochs``, …) parse with them.
OPTION_RULES: dict[str, Integer | Real] = {
    "lr": Real(), "max_iter": Integer(), "epochs": Integer(), "batch": Integer(), "restarts": Integer(),
    "n_train": Integer(), "n_val": Integer(), "patience": Integer(), "eval_every": Integer(),
    "threads": Integer(), "tol": Real(allow_zero=True), "clip": Scale(), "init_scale": Scale(),
    "success_tol": Real(), "max_seconds": Real(),
}


def option_rules(*names: str, optional: Iterable[str] = ()) -> dict[str, Rule]:
    """The rules of ``names`` from :data:`OPTION_RULES` (for :func:`~learner.validation.declare`); the names in
    ``optional`` also take None (elsewhere None is refused like any other non-number).

    Parameters
    ----------
    *names : str
        Option names, each a key of :data:`OPTION_RULES`.
    optional : iterable of str
        The names among ``names`` that also take None.

    Returns
    -------
    dict
        ``{name: rule}`` for each of ``names``, in their order.

    Raises
    ------
    KeyError
        For a name that is not an option.

    Examples
    --------
    >>> rules = option_rules("lr", "epochs", optional=("epochs",))
    >>> rules["epochs"].check("epochs", None), rules["lr"].check("lr", 0.5)
    (None, 0.5)
    """
    return {name: dataclasses.replace(OPTION_RULES[name], none=name in optional) for name in names}


#: The relative validation errors whose first crossing a fit times, unless told otherwise (ours: a coarse fit
#: and near-exact recovery, as in the peer race; not tuned).
DEFAULT_MILESTONES = (1e-3, 1e-8)


def check_milestones(milestones: Iterable[float]) -> tuple[float, ...]:
    """``milestones`` as a sorted tuple of distinct relative errors in (0, 1), descending (named errors otherwise).

    Parameters
    ----------
    milestones : iterable of float
        The relative validation errors whose first crossing a fit times; each in (0, 1), no two equal.

    Returns
    -------
    tuple of float
        The milestones, largest first.

    Raises
    ------
    TypeError
        When ``milestones`` is not a sequence of numbers.
    ValueError
        When one is not in (0, 1) or two are equal.

    Examples
    --------
    >>> check_milestones([1e-8, 1e-3])
    (0.001, 1e-08)
    """
    try:
        values = tuple(milestones)
    except TypeError:
        raise TypeError(f"`milestones` must be a sequence of numbers; got milestones={milestones!r}.") from None
    values = tuple(check_positive_float("milestones", v) for v in values)
    if len(set(values)) != len(values) or any(v >= 1 for v in values):
        raise ValueError(f"`milestones` must be distinct relative errors below 1; got milestones={milestones!r}.")
    return tuple(sorted(values, reverse=True))


def milestone_key(threshold: float) -> str:
    """The JSON key of a milestone: ``"1e-03"``, ``"1e-08"`` (one spelling, so records compare).

    Parameters
    ----------
    threshold : float
        A milestone's relative error.

    Returns
    -------
    str
        ``threshold`` with one significant digit and a two-digit exponent.

    Examples
    --------
    >>> [milestone_key(t) for t in (1e-3, 0.001, 1e-8)]
    ['1e-03', '1e-03', '1e-08']
    """
    return f"{threshold:.0e}"


def validation_error(layer: AttentionLayer, Xv: np.ndarray, Yv: np.ndarray) -> float:
    """``Σ‖F(X) − Y‖² / Σ‖Y‖²`` over the validation examples (0 for an exact fit of zero labels).

    Parameters
    ----------
    layer : AttentionLayer
        The fitted layer.
    Xv : ndarray, shape (n, k, d)
        Validation inputs.
    Yv : ndarray, shape (n, k, d)
        Their labels.

    Returns
    -------
    float
        The ratio of squared norms; ``inf`` when the labels are all zero and the fit is not.

    Examples
    --------
    >>> from learner import random_layer, sample_inputs
    >>> layer = random_layer(1, 3, rng=0)
    >>> X = sample_inputs(50, 2, 3, rng=1)
    >>> validation_error(layer, X, layer(X)), validation_error(layer, X, 0 * X)
    (0.0, inf)
    """
    y_sq = float(np.sum(Yv**2))
    residual = float(np.sum((layer(Xv) - Yv) ** 2))
    return residual / y_sq if y_sq > 0 else (0.0 if residual == 0 else float("inf"))


class GradientFit:
    """One call of a gradient baseline, from its checks to its :class:`~learner.result.LearnResult`.

    Checks ``k`` and ``truth`` against the examples; :meth:`split` draws ``n_train + n_val`` examples once;
    :meth:`clock` times the first validation loss below each milestone; :meth:`restarts` trains restart
    ``j`` from generator ``rng.spawn(restarts)[j]`` until one reaches ``tol``; :meth:`finish` keeps the
    restart of lowest validation loss and gives the verdict.
    """

    timings: dict[str, float]
    diag: dict[str, Any]

    def __init__(self, source: LayerOracle | ArraySource, *, name: str, m: int, k: int | None,
                 truth: AttentionLayer | None, rng: np.random.Generator, t_start: float) -> None:
        if k is not None and check_int("k", k) != source.k:
            raise ValueError(f"`k` must match the examples' {source.k} tokens; got k={k}.")
        if truth is not None:
            if not isinstance(truth, AttentionLayer):
                raise TypeError(f"`truth` must be an AttentionLayer; got {type(truth).__name__}.")
            if truth.d != source.d:
                raise ValueError(f"`truth` must have the examples' dimension d={source.d}; got truth.d={truth.d}.")
        self.source, self.name, self.m, self.truth, self.rng, self.t_start = source, name, m, truth, rng, t_start
        self.timings, self.diag, self.drawn0 = {}, {}, source.n_drawn

    def done(self, status: str, message: str, layer: AttentionLayer | None = None,
             success: bool = False) -> LearnResult:
        errors = truth_errors(self.truth, layer, self.source.k, self.source, self.rng)
        self.timings["total"] = time.perf_counter() - self.t_start
        return LearnResult(layer, success, status, message, self.m, False, self.source.n_drawn - self.drawn0,
                           dict(self.timings), {}, self.diag, errors)

    def split(self, n_train: int, n_val: int) -> tuple[Any, Any]:
        """``((X, Y), (Xv, Yv))``, or ``(None, result)`` when the source has too few examples."""
        t0 = time.perf_counter()
        try:
            X_all, Y_all = draw_checked(self.source, n_train + n_val)
        except ExamplesExhausted as exc:
            return None, self.done("examples", f"{exc} {self.name} needs n_train + n_val = {n_train + n_val} "
                                   f"examples (n_train={n_train}, n_val={n_val}).")
        self.timings["draw"] = time.perf_counter() - t0
        return (X_all[:n_train], Y_all[:n_train]), (X_all[n_train:], Y_all[n_train:])

    def clock(self, milestones: Sequence[float], Yv: np.ndarray,
              max_seconds: float | None = None) -> tuple[dict[float, float | None], Callable[[float], bool]]:
        """``(seconds_to, mark)``: ``mark(val_loss)`` times the first validation loss below each milestone and
        says whether the fit has run past ``max_seconds`` since the call began (never, for None)."""
        seconds_to = dict.fromkeys(milestones)
        y_val = float(np.sum(Yv**2)) / Yv.shape[0]  # validation loss / y_val = validation relative error

        def mark(val):
            now = time.perf_counter() - self.t_start
            for threshold, seconds in seconds_to.items():
                if seconds is None and val <= threshold * y_val:
                    seconds_to[threshold] = now
            return max_seconds is not None and now > max_seconds

        return seconds_to, mark

    def restarts(
        self, restarts: int, init_scale: float, train: Callable[[int, np.random.Generator, np.ndarray], dict[str, Any]],
    ) -> tuple[list[dict[str, Any]], list[np.random.Generator]]:
        """Run ``train(j, gen, params)`` for each restart until one stops at ``"tol"`` or ``"max_seconds"``.

        ``params`` (shape (2, m, d, d): the ``Θ_i`` then the ``W_i``) starts with every entry
        ``N(0, init_scale²/d)`` from the restart's generator ``gen``; ``train`` returns a dict with at least
        ``"params"`` (the kept parameters), ``"val_loss"`` and ``"stopped"``. Returns the runs and the
        generators used (their spawn keys replay them).
        """
        d = self.source.d
        t0 = time.perf_counter()
        gens = self.rng.spawn(restarts)
        runs = []
        for j, gen in enumerate(gens):
            params = gen.normal(0.0, init_scale / np.sqrt(d), size=(2, self.m, d, d))
            runs.append(train(j, gen, params))
            if runs[-1]["stopped"] in ("tol", "max_seconds"):
                break
        self.timings["fit"] = time.perf_counter() - t0
        return runs, gens[: len(runs)]

    def finish(self, runs: Sequence[dict[str, Any]], gens: Sequence[np.random.Generator], *,
               settings: dict[str, Any], keys: Iterable[str], seconds_to: dict[float, float | None],
               validation: tuple[np.ndarray, np.ndarray], success_tol: float,
               where: Callable[[int, dict[str, Any]], str], hint: str) -> LearnResult:
        """The result of the restart with the lowest validation loss.

        ``diagnostics["fit"]`` is ``settings`` with the kept restart, the restarts run, the milestones'
        seconds, each run's ``keys`` as lists and the spawn keys; success when the kept layer's validation
        relative error is at most ``success_tol``. ``where(best_j, best)`` describes the kept run for the
        message, ``hint`` what to try when it failed.
        """
        best_j = int(np.argmin([r["val_loss"] for r in runs]))
        best = runs[best_j]
        layer = AttentionLayer(best["params"][0], best["params"][1])
        self.diag["fit"] = settings | {
            "best_restart": best_j,
            "restarts_run": len(runs),
            "seconds_to": {milestone_key(t): s for t, s in seconds_to.items()},
        } | {key: [r[key] for r in runs] for key in keys} | {
            "spawn_keys": [list(g.bit_generator.seed_seq.spawn_key) for g in gens]}  # type: ignore[attr-defined]
        Xv, Yv = validation
        rel = self.diag["fit"]["val_relative_error"] = validation_error(layer, Xv, Yv)
        place = where(best_j, best)
        log.info("%s: %s, validation relative error %.3g", self.name, place, rel)
        if rel <= success_tol:
            return self.done("gradient", f"validation relative error {rel:.3g} <= success_tol={success_tol:g} "
                             f"({place})", layer=layer, success=True)
        return self.done("not_converged", f"validation relative error {rel:.3g} > success_tol={success_tol:g} "
                         f"({place}): {hint}", layer=layer)
