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
    """An optional extra that a requested feature needs is not installed (a ValueError too: a bad request).

    Raised where the request is made (a Dask scheduler without the ``distributed`` extra, a plot without
    matplotlib), with the ``pip install`` line in its message; ``except ImportError`` and ``except ValueError``
    both catch it.

    See Also
    --------
    learner.arrays.require_torch : Raises a plain ImportError for the ``torch`` extra.

    Examples
    --------
    >>> from learner import MissingExtra
    >>> issubclass(MissingExtra, ImportError), issubclass(MissingExtra, ValueError)
    (True, True)
    """


class PlantingError(RuntimeError):
    """No sampled layer satisfied the assumptions within ``max_tries``.

    See Also
    --------
    learner.random_layer : Raises it.
    learner.assumptions : The conditions the samples failed.

    Examples
    --------
    Four heads in dimension 4 cannot all have a stable rank of 1.5 often enough:

    >>> from learner import PlantingError, random_layer
    >>> try:
    ...     random_layer(4, 4, max_tries=2, rng=0)
    ... except PlantingError as exc:
    ...     print(exc.setting)
    {'m': 4, 'd': 4, 'logit_scale': 3.0, 'max_tries': 2, 'failed': ['theta_stable_rank']}
    """

    #: What was asked (m, d, logit_scale, max_tries) and the conditions that failed, set where it is raised.
    setting: dict[str, Any]


class ExamplesExhausted(RuntimeError):
    """A fixed set of examples has no more examples to hand out.

    :func:`learner.learn` catches it and ends the run with ``status="examples"`` and a message that says whether
    more examples would help; drawing from an :class:`~learner.ArraySource` directly raises it.

    See Also
    --------
    learner.ArraySource : The fixed set of examples that raises it.
    learner.LayerOracle : A source that never runs out.

    Examples
    --------
    >>> import numpy as np
    >>> from learner import ArraySource, ExamplesExhausted
    >>> source = ArraySource(np.ones((3, 2, 4)), np.ones((3, 2, 4)))
    >>> try:
    ...     source.draw(5)
    ... except ExamplesExhausted as exc:
    ...     print(exc)
    asked for 5 examples; only 3 of 3 remain. Pass more examples or a LayerOracle.
    """


class SourceError(ValueError):
    """The example source handed out examples no learner can use (inputs or labels that are not finite):
    the source's fault, named as such, not a failure of the learner's phases.

    A ``ValueError``; :func:`learner.learn` raises it with the source's class named.

    See Also
    --------
    learner.oracle.checked_examples : The check every batch passes.
    learner.LayerOracle : The source whose layer computes the labels.

    Examples
    --------
    >>> import numpy as np
    >>> from learner import SourceError
    >>> from learner.oracle import checked_examples
    >>> try:
    ...     checked_examples(np.ones((3, 2, 4)), np.full((3, 2, 4), np.nan), "MySource")
    ... except SourceError as exc:
    ...     print(str(exc)[:105])
    the example source (MySource) handed out labels that are not finite: 3 of 3 examples of a batch hold NaN
    """


class FileFormatError(ValueError):
    """A file is damaged, of another kind, or of an unsupported schema version.

    A ``ValueError``; the message names the file and what is wrong with it.

    See Also
    --------
    learner.load_layer : Raises it for a file that is not a layer file.
    learner.load_examples : Raises it for a file that is not an examples file.
    learner.io.read_json : Raises it for a file that is not readable JSON.

    Examples
    --------
    >>> import os, tempfile
    >>> from learner import FileFormatError, load_layer
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "layer.npz")
    ...     with open(path, "w") as fh:
    ...         _ = fh.write("{}")
    ...     try:
    ...         load_layer(path)
    ...     except FileFormatError as exc:
    ...         print(str(exc).split(" is ", 1)[1])
    not a toolkit .npz file (not a zip archive).
    """


class NotRegularFile(FileFormatError):
    """A path a reader was given is a FIFO, a device, a socket or a directory: never read, never waited on."""


class RecordError(ValueError):
    """A file that is not a record this version reads: unreadable, of an unknown kind or schema; names the file."""


class TorchConversionError(ValueError):
    """A torch layer (or a layer for torch) that does not fit the other side's form; the message says what.

    A ``ValueError``.

    See Also
    --------
    learner.from_torch : Refuses biases, masks and the other forms the paper's layer lacks.
    learner.to_torch_mha : Refuses heads of rank above d/m.

    Examples
    --------
    >>> import torch
    >>> from learner import TorchConversionError, from_torch
    >>> try:
    ...     from_torch(torch.nn.MultiheadAttention(4, 2))  # bias=True by default
    ... except TorchConversionError as exc:
    ...     print(str(exc).split(";")[0])
    the paper's layer F(X) = Σ_i softmax(X Θ_i Xᵀ) X W_i has no counterpart for biases (bias=True)
    """


class SweepLocked(RuntimeError):
    """Another process is writing the same sweep directory."""


class LearnInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGINT) during :func:`learner.learn`: the workers are stopped and ``result`` holds the
    diagnostics of the phases that finished (``status="interrupted"``, ``layer=None``).

    A ``KeyboardInterrupt``, so code that does not catch it stops as on any Ctrl-C; its message is the result's.

    Parameters
    ----------
    result : LearnResult
        The partial result; kept as the attribute ``result``. Its ``diagnostics["interrupted"]["phase"]`` names
        the phase that was running; its ``errors`` are empty.

    See Also
    --------
    learner.learn : Raises it.
    learner.LearnResult : What ``result`` holds.

    Examples
    --------
    Keep what finished when the user presses Ctrl-C:

    >>> from learner import LayerOracle, LearnInterrupted, random_layer
    >>> from learner.learn import learn
    >>> def run(source, m):
    ...     try:
    ...         return learn(source, m=m, progress=False)
    ...     except LearnInterrupted as stop:  # the phases that finished
    ...         return stop.result
    >>> result = run(LayerOracle(random_layer(3, 8, rng=0), 2, rng=1), 3)
    >>> result.status, result.examples_drawn  # (3, 8, 2) is refused before the first example
    ('setting', 0)
    """

    def __init__(self, result: Any) -> None:  # a learner.result.LearnResult (not imported: this module is the floor)
        super().__init__(result.message)
        self.result = result


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (SIGINT): every run that finished is recorded; rerun to resume.

    A ``KeyboardInterrupt``; its message says how many runs are recorded where, and that the same command
    resumes.

    Parameters
    ----------
    recorded : int
        Finished records in ``out/runs`` that a rerun keeps; kept as the attribute ``recorded``.
    total : int
        Runs planned: of the sweep, or of the whole study when a study of several sweeps says so (``total``).
    out : str or os.PathLike
        The sweep's directory; kept as a Path (``out``).
    of : str, default ""
        What the runs are of, in the message (``"the study"``); empty: the sweep.
    at_least : bool, default False
        The total grows with what the runs show (``seeds="auto"``): the message says "at least" (``at_least``).
    """

    def __init__(self, recorded: int, total: int, out: str | Path, *, of: str = "", at_least: bool = False) -> None:
        self.recorded, self.total, self.out, self.at_least = recorded, total, Path(out), at_least
        planned = f"{'at least ' if at_least else ''}{total} runs{' of ' + of if of else ''}"
        super().__init__(f"interrupted: {recorded} of {planned} are recorded in {self.out / 'runs'}; run the "
                         "same command again to resume (recorded runs are skipped).")

    def in_study(self, earlier: int, total: int, *, at_least: bool = False) -> SweepInterrupted:
        """This interruption of one sweep, counted for the study it belongs to: the ``earlier`` finished runs of
        the study's preceding sweeps added, of the study's ``total`` planned runs.

        Parameters
        ----------
        earlier : int
            Runs the study's preceding sweeps finished.
        total : int
            Runs the whole study plans.
        at_least : bool, default False
            The study's total grows with what the runs show.

        Returns
        -------
        SweepInterrupted
            A new interruption of the same directory, counting ``recorded + earlier`` of the study's ``total``.
        """
        return SweepInterrupted(self.recorded + earlier, total, self.out, of="the study", at_least=at_least)
