"""The sequential stopping rule of the adaptive phases (ours): draw more examples until the estimate is precise.

Phases 1 and 3 (:func:`learner.phases.crude_sum_w`, :func:`learner.phases.refine_sum_w`) draw their examples in
chunks of growing size, estimate ``ΣW_i`` from everything drawn so far after each chunk, and stop as soon as the
estimate's relative standard error is at most a target, or when the chunks (a cap on the examples) run out.
:func:`sample_until_precise` is that loop; each phase passes what a chunk contributes and how its estimate and
standard error are computed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

__all__ = ["ProgressBar", "StopRecord", "sample_until_precise"]

T = TypeVar("T")


class ProgressBar(Protocol):
    """What :func:`sample_until_precise` needs of a progress bar (:func:`learner.progress.bar` makes one).

    A structural type (:class:`typing.Protocol`): any object with these two methods will do, and the class
    itself cannot be instantiated.

    Parameters
    ----------
    *args
        Not accepted: ``ProgressBar(...)`` raises ``TypeError`` (a protocol is a type, not a bar).
    **kwargs
        Not accepted, as ``*args``.
    """

    def set_postfix_str(self, s: str) -> None:
        """Show ``s`` after the bar (the loop shows each standard error against the target).

        Parameters
        ----------
        s : str
            The text to show.
        """
        ...

    def close(self) -> None:
        """Finish the bar; called once, when the loop ends."""
        ...


@dataclass(frozen=True)
class StopRecord:
    """How a sequential phase ended: what :func:`sample_until_precise` returns.

    Parameters
    ----------
    stopped : str
        Why: ``"standard error"`` (the target was met), ``"cap"`` (the chunks ran out), ``"not finite"`` (the
        running estimate overflowed), or the phase's own word for a run without a target (the loop's
        ``without_target``: ``"cap"`` in phase 1, ``"fixed"`` in phase 3).
    standard_error : float
        The last finite estimate's relative standard error (``inf`` before any).
    examples : int
        The examples of the chunks taken in.
    stages : list of dict
        One record per finite estimate, in order: ``{"examples": ..., "standard_error": ...}`` followed by
        the phase's own fields.
    """

    stopped: str
    standard_error: float
    examples: int
    stages: list[dict[str, Any]]


def sample_until_precise(chunks: Iterable[T], absorb: Callable[[T], int], estimate: Callable[[int], float | None],
                         *, se_target: float | None, progress: ProgressBar,
                         record: Callable[[], dict[str, Any]] | None = None,
                         without_target: str = "cap") -> StopRecord:
    """Take in ``chunks`` one at a time until the running estimate is precise enough or the chunks run out.

    Per chunk, in order: ``absorb(chunk)`` adds the chunk to the phase's running state and returns its number of
    examples (it draws them, and advances the bar as it likes); ``estimate(n)``, with ``n`` the examples taken in
    so far, returns the estimate's relative standard error, or None when the running estimate is no longer
    finite. The rules:

    - **Stop rule.** With a ``se_target``, the loop stops right after the first chunk whose standard error is at
      most ``se_target`` (``se <= se_target``: a standard error equal to the target stops), with
      ``stopped="standard error"``; no further chunk is formed, so a lazy ``chunks`` draws nothing more. The bar
      shows each standard error against the target. Without a target every chunk is taken in.
    - **Not finite.** An estimate of None stops the loop at once, with ``stopped="not finite"`` (more examples
      cannot repair an overflowed sum); the standard error stays the previous chunk's and no stage is recorded.
    - **Cap.** When ``chunks`` runs out first, ``stopped`` is ``"cap"`` with a target, and ``without_target``
      (``"cap"`` unless the phase names it otherwise) without one. The chunks' sizes set the cap: the loop
      itself never limits the examples.
    - **Stages.** Every finite estimate appends ``{"examples": n, "standard_error": se}`` to ``stages``, then
      the fields of ``record()`` (called after ``estimate``, so it may report the estimate just made).

    The bar is closed when the loop ends (not when ``absorb`` or ``estimate`` raises).

    Parameters
    ----------
    chunks : iterable
        The chunks, in the order they are taken in (possibly lazy: one is formed only when the loop needs it).
    absorb : callable
        ``absorb(chunk) -> int``: takes the chunk in, returns its number of examples.
    estimate : callable
        ``estimate(n) -> float | None``: the relative standard error of the estimate from the ``n`` examples
        taken in so far, or None when it is not finite.
    se_target : float or None
        The target of the stop rule; None takes in every chunk.
    progress : ProgressBar
        Shows each standard error against the target; closed at the end.
    record : callable, optional
        ``record() -> dict``: a stage's further fields.
    without_target : str
        ``stopped`` when the chunks run out and there is no target.

    Returns
    -------
    StopRecord
        Why the loop stopped, the last standard error, the examples taken in and the stages.
    """
    n, se = 0, float("inf")
    stages: list[dict[str, Any]] = []
    stopped = without_target if se_target is None else "cap"
    for chunk in chunks:
        n += absorb(chunk)
        value = estimate(n)
        if value is None:
            stopped = "not finite"
            break
        se = value
        stages.append({"examples": n, "standard_error": se} | (record() if record is not None else {}))
        if se_target is not None:
            progress.set_postfix_str(f"standard error {se:.3g} (target {se_target:g})")
            if se <= se_target:
                stopped = "standard error"
                break
    progress.close()
    return StopRecord(stopped, se, n, stages)
