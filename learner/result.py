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
    """Outcome of :func:`learn`.

    ``layer`` is the learned layer (``None`` when the run failed before phase
    6); ``success`` is whether its held-out relative error is at most
    ``config.success_tol``; ``status`` names the phase that decided the
    outcome and ``message`` says why. ``phases`` maps phase names to their
    result objects; ``diagnostics`` is the JSON-ready summary of each.
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
    #: Where the batches ran (backend, workers) and per phase the batches and examples merged, examples
    #: computed ahead and discarded, seconds and examples/s. Not part of the result: it never changes
    #: the layer or the diagnostics.
    execution: dict = field(default_factory=dict, repr=False, compare=False)
    #: The label noise σ̂ estimated from phase 6's residuals (:mod:`learner.phases.noise`; ~1e-16 relative
    #: to the labels on exact ones), and the parameters' expected relative error at that noise (from
    #: the refinement's Jacobian; None when the fit was exact to float64's rounding, or failed earlier).
    noise: float | None = None
    expected_param_error: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record (the learned layer's parameters included as nested lists)."""
        from .io import json_safe

        return json_safe({
            "success": self.success, "status": self.status, "message": self.message, "m": self.m,
            "m_estimated": self.m_estimated, "examples_drawn": self.examples_drawn, "timings": self.timings,
            "noise": self.noise, "expected_param_error": self.expected_param_error,
            "diagnostics": self.diagnostics, "errors": self.errors, "execution": self.execution,
            "layer": None if self.layer is None else {"thetas": self.layer.thetas, "ws": self.layer.ws},
        })

    def report(self) -> str:
        """A phase-by-phase text report: sentences, then each phase's figures as ``name: value`` lines and aligned
        tables, no line wider than :data:`learner.tables.REPORT_WIDTH` (the JSON record keeps every figure as it
        is)."""
        head = (f"success: {plain(self.success)} ({self.status}): {self.message}"
                + (f" Time: {self.execution['phase4_time_estimate']}." if "phase4_time_estimate" in self.execution
                   else ""))
        lines = textwrap.wrap(head, width=REPORT_WIDTH, subsequent_indent="    ", break_on_hyphens=False)
        lines.append(f"m = {self.m}{' (estimated)' if self.m_estimated else ''}; examples drawn {self.examples_drawn:,}"
                     + (f"; label noise σ̂ = {self.noise:.3g}" if self.noise is not None else "")
                     + (f", expected parameter error {self.expected_param_error:.3g}"
                        if self.expected_param_error is not None else ""))
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
