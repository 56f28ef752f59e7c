"""The registry of lemma checks: what ``python -m theory`` and ``pytest --pyargs theory`` run.

Each entry names a check, its positive case at default sizes, its negative
control (an input where the statement is known to fail, so the check must
fail), and its plot. The cases themselves live beside each check.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from learner.hints import PathLike

from ._core import CheckResult

__all__ = ["CHECKS", "CheckSpec", "get", "run_case"]


@dataclass(frozen=True)
class CheckSpec:
    """A registered check: module and function names, resolved on use.

    Parameters
    ----------
    name : str
        Registry name (``"one_step"``, ...): the key in :data:`~theory.CHECKS` and the ``name`` of its results.
    summary : str
        The claim in one line, as ``python -m theory list`` prints it.
    module : str
        Module of :mod:`theory` that holds the functions below (``"one_step"`` for :mod:`theory.one_step`).
    check : str
        Name of the public check function in ``module``.
    default : str
        Name of the function in ``module`` building the positive case (keyword arguments only, ``rng`` among them).
    control : str
        Name of the function in ``module`` building the negative control (same form).
    plot : str or None
        Name of the function in ``module`` writing the check's figure, called as ``plot(path, rng=rng)``;
        None when the check has no figure.
    plot_help : str
        What the figure shows, in one line (empty without a figure).
    """

    name: str
    summary: str
    module: str
    check: str
    default: str
    control: str
    plot: str | None
    plot_help: str

    def _attr(self, attr):
        return getattr(importlib.import_module(f"theory.{self.module}"), attr)

    @property
    def check_function(self) -> Callable[..., CheckResult]:
        """The public check function (for its docstring and parameters)."""
        return self._attr(self.check)

    def case(self, which: str) -> Callable[..., CheckResult]:
        """The callable building the ``"default"`` case or the ``"control"``.

        Parameters
        ----------
        which : {"default", "control"}
            The positive case or the negative control.

        Returns
        -------
        callable
            The case builder: keyword arguments only (sizes, ``rng``), returning a :class:`~theory.CheckResult`.

        Raises
        ------
        ValueError
            For any other ``which``.
        """
        if which not in ("default", "control"):
            raise ValueError(f"`which` must be 'default' or 'control'; got which={which!r}.")
        return self._attr(self.default if which == "default" else self.control)

    def make_plot(self, path: PathLike, *, rng: Any = None) -> Any:
        """Write this check's figure to ``path`` (PNG); needs the ``plot`` extra (matplotlib).

        Parameters
        ----------
        path : str or PathLike
            Where to write the PNG.
        rng : None, int, SeedSequence or Generator
            Seed of whatever the figure computes (passed to the plot function as ``rng``).

        Returns
        -------
        object
            What the plot function returns: the data drawn (an :class:`~theory.concentration.ExpectationVsSample`,
            a tuple of :class:`~theory.local_clt.LocalCLTSweep`) or the path written.

        Raises
        ------
        ValueError
            If the check has no figure, or matplotlib is missing.
        """
        if self.plot is None:
            raise ValueError(f"check {self.name!r} has no plot.")
        return self._attr(self.plot)(path, rng=rng)


#: Every registered check by name: ``{name: CheckSpec}``, in the order ``python -m theory all`` runs them.
CHECKS = {
    spec.name: spec
    for spec in (
        CheckSpec(
            "one_step",
            "one gradient step from W = 0 estimates ΣW_i: (1/k) E[XᵀJF(X)] ≈ ΣW_i",
            "one_step", "check_one_step", "default_one_step", "control_one_step",
            "plot_one_step", "relative error against the stable rank of Θ (Frobenius norm fixed)",
        ),
        CheckSpec(
            "softmax_concentration",
            "E[softmax(XΘXᵀ) | Hamming weight of a substring] stays near E[softmax(XΘXᵀ)]",
            "concentration", "check_softmax_concentration", "default_softmax_concentration",
            "control_softmax_concentration", "plot_expectation_vs_sample",
            "expectation vs one sample of the pattern (talk's example, d = 200)",
        ),
        CheckSpec(
            "local_clt",
            "P(⟨a, x⟩ ∈ [t, t+δ)) on a Boolean slice matches the Gaussian mass for non-arithmetic a",
            "local_clt", "check_local_clt", "default_local_clt", "control_local_clt",
            "plot_local_clt", "local error against n, arithmetic and non-arithmetic a",
        ),
        CheckSpec(
            "min_norm_orthogonality",
            "the min-norm point Θ* of aff{Θ_i} satisfies ⟨Θ_i − Θ*, Θ*⟩ = 0",
            "minnorm", "check_min_norm_orthogonality", "default_min_norm_orthogonality",
            "control_min_norm_orthogonality", None, "",
        ),
        CheckSpec(
            "yield_prediction",
            "the sculpting yield is within a factor 3 of the Gaussian density of the disagreements at 0 × window",
            "yield_model", "check_yield_prediction", "default_yield_prediction", "control_yield_prediction",
            None, "",
        ),
        CheckSpec(
            "certification_premise",
            "rows that pass phase 2's residual test with the true ΣW have nearly equal patterns (TV <= 0.1 for 95 %)",
            "certification", "check_certification_premise", "default_certification_premise",
            "control_certification_premise", None, "",
        ),
        CheckSpec(
            "pilot_forecast",
            "the learner's pilot at tol 0.03, extrapolated by the window law tol^((m−1)(k−1)), forecasts the yield "
            "at 0.015 within a factor 3",
            "yield_model", "check_pilot_forecast", "default_pilot_forecast", "control_pilot_forecast", None, "",
        ),
    )
}


def get(name: str) -> CheckSpec:
    """The :class:`CheckSpec` called ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`~theory.CHECKS`.

    Returns
    -------
    CheckSpec
        The registered check.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).
    """
    try:
        return CHECKS[name]
    except KeyError:
        raise ValueError(f"unknown check {name!r}; known: {', '.join(CHECKS)}.") from None


def run_case(name: str, which: str = "default", *, rng: int | np.random.SeedSequence | None = None,
             **params: Any) -> CheckResult:
    """Run a registered case and record the seed entropy in its result.

    Parameters
    ----------
    name : str
        A key of :data:`~theory.CHECKS`.
    which : {"default", "control"}
        The positive case (expected to hold) or the negative control (expected to fail).
    rng : None, int or SeedSequence
        Seed of the case; a SeedSequence is built from None or an int, and its entropy recorded.
    **params
        Keyword arguments of the case builder, e.g. ``run_case("local_clt", n=128)``; one the builder does
        not take is refused.

    Returns
    -------
    CheckResult
        The case's result, named by its registry entry (``name``), its ``seed_entropy`` set to the seed's entropy
        where the case did not record one.

    Raises
    ------
    ValueError
        An unknown ``name`` or ``which``, or a parameter the builder does not take (the message lists those it
        takes).

    See Also
    --------
    theory.CHECKS : The registered checks and their cases.
    theory.CheckResult : What every case returns.
    theory.testing.assert_check_holds : Assert a result holds (and :func:`~theory.testing.assert_check_fails`).

    Examples
    --------
    >>> result = run_case("min_norm_orthogonality", rng=0)
    >>> result.holds, result.seed_entropy
    (True, 0)
    >>> run_case("min_norm_orthogonality", "control", rng=0).holds     # the centroid is not the min-norm point
    False
    >>> run_case("local_clt", n=16, rng=0).parameters["n"]
    16
    """
    seq = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    builder = get(name).case(which)
    signature = inspect.signature(builder).parameters.values()
    accepted = [p.name for p in signature if p.name != "rng" and p.kind is not p.VAR_KEYWORD]
    unknown = sorted(set(params) - set(accepted))
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in signature):
        raise ValueError(f"the {which} case of {name!r} takes no parameter {', '.join(map(repr, unknown))}; "
                         f"it takes {', '.join(accepted) or 'none'}.")
    result = builder(rng=seq, **params)
    if result.name != name:  # an entry that reuses another's functions: its results carry its own name
        result = dataclasses.replace(result, name=name)
    if result.seed_entropy is None:
        # an int here: run_case builds the SeedSequence from an int or None (numpy types entropy wider)
        result = dataclasses.replace(result, seed_entropy=seq.entropy)  # type: ignore[arg-type]
    return result
