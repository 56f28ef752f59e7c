"""The outcome of a learner's run: :class:`LearnResult`, the result type of :func:`learner.learn` and of the
gradient baselines (:mod:`learner.baselines`), with its JSON record and its text report."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

from .layer import AttentionLayer
from .tables import REPORT_WIDTH, plain, report_lines

__all__ = ["LearnResult"]


@dataclass(frozen=True)
class LearnResult:
    """Outcome of :func:`learner.learn` (and of the gradient baselines, :mod:`learner.baselines`).

    ``layer`` is the learned layer (``None`` when the run failed before phase
    6); ``success`` is whether its held-out relative error is at most
    ``config.success_tol``; ``status`` names the phase that decided the
    outcome and ``message`` says why. ``phases`` maps phase names to their
    result objects; ``diagnostics`` is the JSON-ready summary of each.
    A run that fails returns a result like any other (``success=False``): a
    failure is never a silently wrong layer, and not an exception either, except
    for bad arguments, a source that hands out examples that are not finite
    (:class:`~learner.errors.SourceError`) and Ctrl-C
    (:class:`~learner.errors.LearnInterrupted`, which carries the partial result).

    Phase names, the keys of ``phases``, ``diagnostics`` and ``timings``:
    ``"1_crude_sum"``, ``"2_crude_sculpt"``, ``"3_refine_sum"``,
    ``"4_refined_sculpt"``, ``"5_span"`` and ``"6_search"`` (the paper's six
    phases, :mod:`learner.phases`).

    Parameters
    ----------
    layer : AttentionLayer or None
        The layer phase 6 found and refined: on success, the learned layer; with ``status`` ``"6_search"`` or
        ``"assumptions"`` and ``success=False``, the best layer found, which did not pass (kept for inspection).
        None when the run ended before phase 6 (any other status).
    success : bool
        Whether the layer is learned: its relative error on held-out examples is at most
        ``LearnConfig.success_tol``, or the residual is label noise alone (:mod:`learner.phases.noise`), and the
        layer meets the paper's conditions (:func:`learner.assumptions`). True only with ``status="6_search"``.
    status : str
        Where the outcome was decided: ``"setting"`` (refused before the first example: the setting is not sound,
        beyond the learner's measured reach, or needs more memory than the machine has), a phase name (the phase
        stopped the run, or, for ``"6_search"``, gave the verdict), ``"budget"`` (phase 4's forecast exceeded
        ``max_examples``), ``"examples"`` (a fixed set of examples ran out), ``"assumptions"`` (``F`` is matched
        but the learned layer violates the paper's conditions, so its parameters are not identified) or
        ``"interrupted"`` (Ctrl-C). The baselines use ``"gradient"``, ``"not_converged"`` and ``"examples"``.
    message : str
        Why, in one or more sentences: the figures that decided and, for a failure, what would change it
        (a larger budget, more examples, ``allow_unsound``).
    m : int or None
        The number of heads of the result: the ``m`` given, the ``m`` estimated when none was given (phase 5's
        singular-value gap and the model selection of phase 6), or fewer when a given ``m`` had redundant heads
        (``diagnostics["redundant_heads"]``). None when ``m`` was not given and the run ended before phase 6's
        verdict.
    m_estimated : bool
        Whether ``m`` was estimated from the examples (``learn`` was called with ``m=None``); always False for the
        baselines.
    examples_drawn : int
        Labelled examples drawn from the source by this call (every phase, the pilots and the held-out examples
        included; batches a worker computed ahead and that were not needed are not counted, see ``execution``).
        The fresh inputs of ``errors`` are not from the source and are not counted.
    timings : dict of str to float
        Wall-clock seconds per phase (summed over the rounds of phases 3–5 and over phase 6's probes), and
        ``"total"``: the whole call, the setting's check and the errors against the truth included. The
        baselines record their own steps (``"draw"``, ...) and ``"total"``.
    phases : dict
        Phase name to the phase's result object (:class:`~learner.phases.SumEstimate`,
        :class:`~learner.phases.Constraints`, :class:`~learner.phases.SpanEstimate`,
        :class:`~learner.phases.SearchResult`; the last round's where phases repeat), for the phases that ran;
        not JSON (``to_dict`` leaves it out) and not in the ``repr``. Empty for the baselines.
    diagnostics : dict
        The JSON-ready record of the run: ``"0_setting"`` (the input distribution, the setting's soundness and
        largest sound m, every config value used and which were chosen from the setting), then per phase that
        ran its ``summary`` (counts, errors against the truth when given, seconds, and why it stopped:
        ``"stopped"``), and where they apply ``"assumptions"`` (the learned layer's failed conditions),
        ``"redundant_heads"`` and ``"interrupted"`` (the phase running at Ctrl-C). Not in the ``repr``.
    errors : dict of str to float, default {}
        Errors of ``layer`` against the planted ``truth`` given to :func:`learner.learn`
        (:func:`learner.metrics.truth_errors`): ``"relative_error"``, the relative mean squared error of ``F`` on
        8192 fresh inputs, and ``"param_error"``, the largest relative Frobenius error of a ``Θ_i`` or ``W_i``
        after matching heads (only when the m's agree). Empty without a truth, without a layer, or when
        interrupted.
    execution : dict, default {}
        Where the batches ran and how fast: ``"backend"`` (serial, local or dask), ``"workers"``, and
        ``"phases"``, per streaming phase the batches and examples merged, the examples computed ahead and
        discarded, the seconds, calls, examples/s and examples/s per worker; ``"blas_threads"`` (what was set),
        ``"device"`` (when one was given) and ``"phase4_time_estimate"`` (when phase 4's forecast stopped the run).
        Not part of the outcome: it never changes the layer or the diagnostics, and two results that differ only
        here compare equal. Empty for the baselines.
    noise : float or None, default None
        The label noise σ̂ estimated from phase 6's residuals, in the labels' units (the standard deviation of
        one entry's noise): the noise floor's when the residual passed the noise test
        (:mod:`learner.phases.noise`), else ``sqrt(RSS / (N − 2md²))`` of the refinement. About 1e-16 times the
        labels' scale on exact labels. None when the run ended before phase 6, and for the baselines.
    expected_param_error : float or None, default None
        The parameters' expected relative error at that noise, from the refinement's Jacobian (the largest over
        the heads' ``Θ_i`` and ``W_i``: what ``errors["param_error"]`` measures against a truth). Set only when
        the held-out error was above float64's rounding and the residual passed the noise test; None when the
        fit was exact to float64's rounding, the residual was not noise alone, or the run ended before phase 6.
    error_bound : float or None, default None
        The certified error bound (:func:`learner.certify.certify_error`): with probability at least
        ``1 − LearnConfig.certify_delta``, the population relative error of ``layer``, counting each example's
        squared error at most the clip level, is at most this — from ``LearnConfig.certify_examples`` fresh
        examples drawn after phase 6 (counted in ``examples_drawn``). ``diagnostics["certificate"]`` holds the
        whole certificate (the estimate, the clip level, the chance a fresh error exceeds it). None when the run
        ended without a layer, ``certify_examples`` is 0 or the source had no fresh examples left; for the
        baselines.

    See Also
    --------
    learner.learn : Returns it.
    learner.LearnConfig : The budgets and tolerances behind ``status`` and ``success``.
    learner.errors.LearnInterrupted : Carries a partial result on Ctrl-C.

    Examples
    --------
    A setting the learner cannot certify is refused before the first example:

    >>> from learner import LayerOracle, random_layer
    >>> from learner.learn import learn
    >>> result = learn(LayerOracle(random_layer(3, 8, rng=0), 2, rng=1), m=3)
    >>> result.success, result.status, result.layer, result.examples_drawn, result.noise
    (False, 'setting', None, 0, None)
    >>> result.diagnostics["0_setting"]["max_sound_m"], result.timings["total"] > 0
    (2, True)
    >>> print(result.report().splitlines()[0])  # doctest: +ELLIPSIS
    success: no (setting): (m, d, k) = (3, 8, 2) with boolean inputs is not sound for certification: ...
    """

    layer: AttentionLayer | None
    success: bool
    status: str
    message: str
    m: int | None
    m_estimated: bool
    examples_drawn: int
    timings: dict
    phases: dict = field(repr=False)
    diagnostics: dict = field(repr=False)
    errors: dict = field(default_factory=dict)
    execution: dict = field(default_factory=dict, repr=False, compare=False)
    noise: float | None = None
    expected_param_error: float | None = None
    error_bound: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record (the learned layer's parameters included as nested lists).

        Returns
        -------
        dict
            Every field but ``phases``, through :func:`learner.io.json_safe` (NaN and inf as None, numpy values as
            Python ones); ``"layer"`` is ``{"thetas": ..., "ws": ...}`` as nested lists, or None.
        """
        from .io import json_safe

        return json_safe({
            "success": self.success, "status": self.status, "message": self.message, "m": self.m,
            "m_estimated": self.m_estimated, "examples_drawn": self.examples_drawn, "timings": self.timings,
            "noise": self.noise, "expected_param_error": self.expected_param_error, "error_bound": self.error_bound,
            "diagnostics": self.diagnostics, "errors": self.errors, "execution": self.execution,
            "layer": None if self.layer is None else {"thetas": self.layer.thetas, "ws": self.layer.ws},
        })

    def report(self) -> str:
        """A phase-by-phase text report: sentences, then each phase's figures as ``name: value`` lines and aligned
        tables, no line wider than :data:`learner.tables.REPORT_WIDTH` (the JSON record keeps every figure as it
        is).

        Returns
        -------
        str
            The verdict and message (with phase 4's time estimate when it stopped the run); m, the examples drawn
            and the noise; one block per entry of ``diagnostics`` headed by its seconds; then the errors against
            the truth, when there are any. Lines joined by newlines; what ``python -m learner learn`` prints.
        """
        head = (f"success: {plain(self.success)} ({self.status}): {self.message}"
                + (f" Time: {self.execution['phase4_time_estimate']}." if "phase4_time_estimate" in self.execution
                   else ""))
        lines = textwrap.wrap(head, width=REPORT_WIDTH, subsequent_indent="    ", break_on_hyphens=False)
        lines.append(f"m = {self.m}{' (estimated)' if self.m_estimated else ''}; examples drawn {self.examples_drawn:,}"
                     + (f"; label noise σ̂ = {self.noise:.3g}" if self.noise is not None else "")
                     + (f", expected parameter error {self.expected_param_error:.3g}"
                        if self.expected_param_error is not None else "")
                     + (f"; certified error bound {self.error_bound:.3g}" if self.error_bound is not None else ""))
        for name, diag in self.diagnostics.items():
            secs = self.timings.get(name)
            header = f"[{name}]" + (f" {secs:.2f} s" if secs is not None else "")
            if isinstance(diag, dict) and diag.get("round", 0) > 0:  # phases 3–5 repeat: the last round's figures
                header += f" over {diag['round'] + 1} rounds; the figures below are the last round's"
            lines.append(header)
            items = diag.items() if isinstance(diag, dict) else [("value", diag)]
            for key, value in items:
                lines += report_lines(str(key), value)
        if self.errors:
            lines.append("errors against the truth:")
            for key, value in self.errors.items():
                lines += report_lines(str(key), value)
        return "\n".join(lines)
