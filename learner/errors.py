"""The errors and interruptions the toolkit raises to its users, in one place.

The exceptions of the learner, its files, its sources and its studies are defined here (the modules that raise
them import them from here; the package root re-exports the common ones). Two stay beside what they are about:
phase 5's ``HullUndetermined`` (:mod:`learner.phases.span`), and ``theory``'s ``MissingMatplotlib``, a
:class:`MissingExtra`. Bad arguments are plain ``TypeError``/``ValueError`` naming the parameter
(:mod:`learner.validation`); the classes below say what else went wrong. This module imports nothing from the
toolkit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "ExamplesExhausted",
    "FileFormatError",
    "LearnInterrupted",
    "MissingExtra",
    "NotRegularFile",
    "PlantingError",
    "RecordError",
    "SourceError",
    "SweepInterrupted",
    "SweepLocked",
    "TorchConversionError",
]


class MissingExtra(ImportError, ValueError):
    """An optional extra that a requested feature needs is not installed (a ValueError too: a bad request)."""


class PlantingError(RuntimeError):
    """No sampled layer satisfied the assumptions within ``max_tries``."""

    #: What was asked (m, d, logit_scale, max_tries) and the conditions that failed, set where it is raised.
    setting: dict[str, Any]


class ExamplesExhausted(RuntimeError):
    """A fixed set of examples has no more examples to hand out."""


class SourceError(ValueError):
    """The example source handed out examples no learner can use (inputs or labels that are not finite):
    the source's fault, named as such, not a failure of the learner's phases."""


class FileFormatError(ValueError):
    """A file is damaged, of another kind, or of an unsupported schema version."""


class NotRegularFile(FileFormatError):
    """A path a reader was given is a FIFO, a device, a socket or a directory: never read, never waited on."""


class RecordError(ValueError):
    """A file that is not a record this version reads: unreadable, of an unknown kind or schema; names the file."""


class TorchConversionError(ValueError):
    """A torch layer (or a layer for torch) that does not fit the other side's form; the message says what."""


class SweepLocked(RuntimeError):
    """Another process is writing the same sweep directory."""


class LearnInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGINT) during :func:`learner.learn`: the workers are stopped and ``result`` holds the
    diagnostics of the phases that finished (``status="interrupted"``, ``layer=None``)."""

    def __init__(self, result: Any) -> None:  # a learner.result.LearnResult (not imported: this module is the floor)
        super().__init__(result.message)
        self.result = result


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (SIGINT): every run that finished is recorded; rerun to resume.

    Attributes ``recorded`` (finished records in ``out/runs`` that a rerun keeps), ``total`` (runs planned:
    of the sweep, or of the whole study when a study of several sweeps says so), ``at_least`` (the total grows
    with what the runs show, e.g. ``seeds="auto"``) and ``out``.
    """

    def __init__(self, recorded: int, total: int, out: str | Path, *, of: str = "", at_least: bool = False) -> None:
        self.recorded, self.total, self.out, self.at_least = recorded, total, Path(out), at_least
        planned = f"{'at least ' if at_least else ''}{total} runs{' of ' + of if of else ''}"
        super().__init__(f"interrupted: {recorded} of {planned} are recorded in {self.out / 'runs'}; run the "
                         "same command again to resume (recorded runs are skipped).")

    def in_study(self, earlier: int, total: int, *, at_least: bool = False) -> SweepInterrupted:
        """This interruption of one sweep, counted for the study it belongs to: the ``earlier`` finished runs of
        the study's earlier sweeps added, of the study's ``total`` planned runs."""
        return SweepInterrupted(self.recorded + earlier, total, self.out, of="the study", at_least=at_least)
