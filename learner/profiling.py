"""Where a phase's time goes: named sections of the heavy paths, timed only while a profile is recorded (ours).

The learner's heavy steps — drawing examples and their labels, phase 4's float32 screen and float64 row fit, phase
6's products and solves — are wrapped in :func:`section`. Outside :func:`recording` a section costs one context
variable lookup and records nothing; inside, each section adds its wall time, its calls and the floating-point
operations its caller counted for it (0 where nobody counts them) to the recording. ``python -m learner bench
--profile`` reads them and sets each step against the machine's matrix-multiply rate (the step's *flop floor*).

Sections nest: an inner section's time is also inside the outer one's. Only the process that records sees its
sections (a worker pool's processes record nothing), so a profile runs its phases in one process.

Examples
--------
>>> import numpy as np
>>> with recording() as profile:
...     with section("a product", flops=2 * 200**3):
...         _ = np.ones((200, 200)) @ np.ones((200, 200))
>>> profile["a product"].calls, profile["a product"].flops
(1, 16000000)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["Count", "Section", "recording", "section"]


@dataclass
class Section:
    """One section's totals in a recording.

    Parameters
    ----------
    seconds : float
        Wall seconds, summed over its runs.
    calls : int
        Its runs.
    flops : int
        The floating-point operations its callers counted, summed.
    """

    #: Wall seconds, summed over the section's runs.
    seconds: float = 0.0
    #: The section's runs.
    calls: int = 0
    #: Floating-point operations counted by its callers, summed (0 where nobody counts them).
    flops: int = 0


class Count:
    """What :func:`section` yields: set ``flops`` inside the section when the count is known only at its end.

    Parameters
    ----------
    flops : int
        The operations the section adds to the recording at its end.
    """

    __slots__ = ("flops",)

    def __init__(self, flops: int) -> None:
        self.flops = flops


_RECORDING: ContextVar[dict[str, Section] | None] = ContextVar("learner_profile", default=None)


@contextlib.contextmanager
def recording() -> Iterator[dict[str, Section]]:
    """Record every :func:`section` run in this context; yields the dict of sections by name (filled as they run).

    Yields
    ------
    dict of str to Section
        The totals per section name, in the order the sections first ran.
    """
    sections: dict[str, Section] = {}
    token = _RECORDING.set(sections)
    try:
        yield sections
    finally:
        _RECORDING.reset(token)


@contextlib.contextmanager
def section(name: str, flops: int = 0) -> Iterator[Count]:
    """Time the enclosed code as section ``name`` (with ``flops`` operations) when a :func:`recording` is active.

    Parameters
    ----------
    name : str
        The section's name in the recording.
    flops : int
        The floating-point operations of this run of the section (a multiply-add counts two), or 0.

    Yields
    ------
    Count
        Its ``flops`` (``flops`` at first) is what the section adds to the recording at its end.
    """
    count = Count(flops)
    sections = _RECORDING.get()
    if sections is None:
        yield count
        return
    start = time.perf_counter()
    try:
        yield count
    finally:
        entry = sections.setdefault(name, Section())
        entry.seconds += time.perf_counter() - start
        entry.calls += 1
        entry.flops += int(count.flops)
