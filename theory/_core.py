"""The result type shared by every lemma check, and small statistical helpers.

Every check returns a :class:`CheckResult`: the claim in words, where the
statement comes from (the paper/talk, or our reading), the parameters, the
measured quantity with its uncertainty (an exact value, or a confidence
interval with its failure probability), the bound it is held against, the
verdict, the seed entropy and the time taken.
"""

from __future__ import annotations

import math
import operator
import time
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from learner.errors import MissingExtra

__all__ = ["CheckResult", "MissingMatplotlib", "Timer", "chebyshev_radius", "finish", "require_matplotlib",
           "seeded"]

_RELATIONS = {"<=": operator.le, ">=": operator.ge}

#: What :func:`seeded` (and every check that records its seed entropy) takes: ``learner.hints.SeedLike`` but a
#: BitGenerator, which ``np.random.SeedSequence`` refuses.
SeedOrGenerator: TypeAlias = int | np.random.SeedSequence | np.random.Generator | None


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one lemma check.

    Every check of :mod:`theory` returns one; it is frozen, and :meth:`to_dict` gives its JSON form.

    Parameters
    ----------
    name : str
        Registry name of the check (``"one_step"``, ...).
    claim : str
        The statement checked, in words.
    source : str
        Which part is the paper's (or the talk's) and which is our reading.
    parameters : dict
        JSON-ready parameters of the run.
    measured : float
        The measured quantity (point estimate).
    interval : (float, float)
        Its uncertainty: ``(measured, measured)`` when exact; a confidence
        interval that fails with probability at most ``failure_probability``
        for Monte Carlo; a deterministic bracket (``failure_probability`` None)
        for computations with a bounded error such as quantisation.
    failure_probability : float or None
        ``None`` when the interval is certain (no sampling).
    bound : float
        What ``measured`` is held against.
    relation : {"<=", ">="}
        The claim is ``measured <relation> bound``.
    holds : bool
        Whether the *whole interval* satisfies the relation (a conservative
        verdict: a Monte Carlo check holds only if it holds at the stated
        failure probability).
    seed_entropy : int or None
        Entropy of the ``SeedSequence`` used (``None`` for deterministic checks).
    seconds : float
        Wall-clock time of the check.
    details : dict
        Further measured quantities, JSON-ready (default empty).

    See Also
    --------
    theory.registry.run_case : Run a registered check's default case or negative control.
    theory.CHECKS : The registry of checks, each with its cases.
    theory.testing.assert_check_holds : Assert a result holds, printing the claim when it does not.

    Examples
    --------
    >>> import numpy as np
    >>> from theory import check_min_norm_orthogonality
    >>> result = check_min_norm_orthogonality(np.array([[[1.0]], [[3.0]]]))
    >>> result.holds, result.exact, result.measured, result.relation, result.bound
    (True, True, 0.0, '<=', 0.0)
    >>> name_and_claim, verdict = result.summary().split(" | ")
    >>> verdict
    'measured 0 (exact) <= 0: holds'
    """

    name: str
    claim: str
    source: str
    parameters: dict
    measured: float
    interval: tuple[float, float]
    failure_probability: float | None
    bound: float
    relation: str
    holds: bool
    seed_entropy: int | None
    seconds: float
    details: dict = field(default_factory=dict)

    @property
    def exact(self):
        """True when the measured value carries no sampling error."""
        return self.failure_probability is None

    def summary(self):
        """One line: claim, measured value with uncertainty, bound, verdict.

        Returns
        -------
        str
            ``"<name>: <claim> | measured <value> <relation> <bound>: holds"`` (or ``FAILS``), the value marked
            ``(exact)``, with its certain bracket, or with its interval and failure probability.
        """
        lo, hi = self.interval
        if lo == hi:
            value = f"{self.measured:.4g} (exact)"
        elif self.exact:
            value = f"{self.measured:.4g} in [{lo:.4g}, {hi:.4g}] (certain bracket)"
        else:
            value = f"{self.measured:.4g} in [{lo:.4g}, {hi:.4g}] (fails w.p. <= {self.failure_probability:g})"
        verdict = "holds" if self.holds else "FAILS"
        return f"{self.name}: {self.claim} | measured {value} {self.relation} {self.bound:.4g}: {verdict}"

    def to_dict(self):
        """JSON-ready dictionary (numpy values converted, non-finite floats as None).

        Returns
        -------
        dict
            One key per field (``"name"``, ``"claim"``, ..., ``"details"``), ``interval`` as a list.
        """
        from learner.io import json_safe

        return json_safe(
            {
                "name": self.name,
                "claim": self.claim,
                "source": self.source,
                "parameters": self.parameters,
                "measured": self.measured,
                "interval": list(self.interval),
                "failure_probability": self.failure_probability,
                "bound": self.bound,
                "relation": self.relation,
                "holds": self.holds,
                "seed_entropy": self.seed_entropy,
                "seconds": self.seconds,
                "details": self.details,
            }
        )


class Timer:
    """Wall-clock timer started at construction; ``elapsed()`` in seconds."""

    def __init__(self):
        self._start = time.perf_counter()

    def elapsed(self):
        """Seconds since construction (``time.perf_counter``)."""
        return time.perf_counter() - self._start


def finish(
    *,
    name,
    claim,
    source,
    parameters,
    measured,
    bound,
    relation="<=",
    interval=None,
    failure_probability=None,
    seed_entropy=None,
    timer=None,
    details=None,
):
    """Build a :class:`CheckResult`, deciding ``holds`` conservatively from the interval.

    For ``"<="`` the check holds when the interval's upper end is ``<= bound``;
    for ``">="`` when its lower end is ``>= bound``. Exact results pass
    ``interval=None`` (the point itself); Monte Carlo results pass an interval
    and its ``failure_probability``; certain brackets pass an interval and
    ``failure_probability=None``.
    """
    if relation not in _RELATIONS:
        raise ValueError(f"`relation` must be one of {sorted(_RELATIONS)}; got relation={relation!r}.")
    measured = float(measured)
    lo, hi = (measured, measured) if interval is None else (float(interval[0]), float(interval[1]))
    worst = hi if relation == "<=" else lo
    holds = bool(math.isfinite(worst) and _RELATIONS[relation](worst, float(bound)))
    return CheckResult(
        name=name,
        claim=claim,
        source=source,
        parameters=dict(parameters),
        measured=measured,
        interval=(lo, hi),
        failure_probability=None if failure_probability is None else float(failure_probability),
        bound=float(bound),
        relation=relation,
        holds=holds,
        seed_entropy=seed_entropy,
        seconds=timer.elapsed() if timer is not None else 0.0,
        details=dict(details or {}),
    )


def chebyshev_radius(trace_cov, n_samples, failure_probability):
    """Radius ``t`` with ``P(‖μ̂ − μ‖ >= t) <= failure_probability`` for a mean of ``n`` i.i.d. vectors.

    Vector Chebyshev: ``P(‖μ̂ − μ‖ >= t) <= tr Cov / (n t²)``, so
    ``t = sqrt(tr Cov / (n · failure_probability))``. Distribution-free; the
    caller plugs in the sample covariance trace (an estimate, said so in the
    result's ``source``).
    """
    if not 0 < failure_probability < 1:
        raise ValueError(f"`failure_probability` must be in (0, 1); got {failure_probability!r}.")
    return float(np.sqrt(max(trace_cov, 0.0) / (n_samples * failure_probability)))


def seeded(rng: SeedOrGenerator) -> tuple[np.random.Generator, Any]:  # entropy: int, or a SeedSequence's own
    """``(Generator, entropy)`` from ``rng`` (None, int, SeedSequence or Generator).

    The entropy is what a result records so the run can be replayed:
    ``np.random.default_rng(entropy)`` reproduces the generator (for a
    Generator built from a spawned SeedSequence, the spawn key is also needed and
    is not recorded; pass ints or SeedSequences to checks you want to replay).
    """
    if isinstance(rng, np.random.Generator):
        seq = getattr(rng.bit_generator, "seed_seq", None)
        return rng, getattr(seq, "entropy", None)
    seq = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    return np.random.default_rng(seq), seq.entropy


class MissingMatplotlib(MissingExtra):
    """A plot was asked for without matplotlib (the ``plot`` extra); like every
    :class:`learner.errors.MissingExtra`, a ValueError too: the command line reports it as one line."""


def require_matplotlib(what):
    """The ``matplotlib`` module, or :class:`MissingMatplotlib` naming ``what`` needs it and how to install it.

    Plot functions call it first, so that a missing extra is said before any computation (the command
    lines check ``--plot`` before that, in :func:`learner.argparsing.check_output_options`).
    """
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingMatplotlib(f"{what} needs matplotlib (the `plot` extra: pip install -e '.[plot]'); "
                                "it is not installed.") from exc
    return matplotlib
