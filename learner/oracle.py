"""Example sources for the learner: a planted layer as an oracle, or fixed arrays.

The PAC model hands the learner i.i.d. labelled examples ``(X, F(X))``; an
:class:`LayerOracle` draws as many as asked (counting them), an
:class:`ArraySource` serves a fixed set and says when it runs out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .errors import ExamplesExhausted, SourceError
from .inputs import check_inputs, sample_inputs
from .layer import AttentionLayer
from .profiling import section
from .validation import DISTRIBUTIONS, Choice, Integer, Scale, check_int, check_real_array, check_rng, declare

if TYPE_CHECKING:
    from .arrays import Backend

__all__ = ["NOISE_RULE", "ArraySource", "ExampleBatch", "LayerOracle", "as_source", "batch_sizes", "checked_examples",
           "device_name", "draw_checked", "growing_sizes", "name_source", "noisy_labels"]

#: The rule of every ``noise`` (the label noise's standard deviation): a finite number, 0 allowed.
NOISE_RULE = Scale(allow_zero=True)

#: First element of the spawn key of a streamed batch (distinguishes it from ``SeedSequence.spawn`` children).
STREAM_TAG = 0x5354  # ours: ASCII "ST", an arbitrary fixed tag (changing it changes every stream)


def checked_examples(X: np.ndarray, Y: np.ndarray, origin: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(X, Y)`` if every entry is finite, else :class:`SourceError` naming the source (``origin``) and how
    many examples are bad. Every batch and draw the learner and the baselines use passes here, so a NaN
    from a user's oracle stops the run where it enters instead of surfacing as a phase's failure.

    Parameters
    ----------
    X : numpy.ndarray, shape (n, k, d)
        The inputs.
    Y : numpy.ndarray, shape (n, k, d)
        Their labels.
    origin : str, optional
        The source's class name, named in the message.

    Returns
    -------
    X, Y : numpy.ndarray
        The arrays themselves, unchanged.

    Raises
    ------
    SourceError
        If an entry of ``Y`` (checked first) or ``X`` is NaN or infinite.
    """
    for name, arr in (("labels", Y), ("inputs", X)):
        finite = np.isfinite(arr).reshape(arr.shape[0], -1).all(axis=1)
        if not finite.all():
            bad = np.flatnonzero(~finite)
            first = arr[bad[0]][~np.isfinite(arr[bad[0]])].flat[0]
            who = f"the example source ({origin})" if origin else "the example source"
            raise SourceError(
                f"{who} handed out {name} that are not finite: {bad.size:,} of {arr.shape[0]:,} examples of a "
                f"batch hold NaN or inf (the first, example {bad[0]}, holds {first}). The source is at fault, "
                "not the learner: check the oracle's layer or the labels it computes.")
    return X, Y


def name_source(exc: SourceError, source: object) -> SourceError:
    """``exc`` (a :class:`SourceError`) with the source's class named, when the batch could not name it.

    Parameters
    ----------
    exc : SourceError
        The error a batch raised.
    source : object
        The source the run drew from.

    Returns
    -------
    SourceError
        A new error: ``exc``'s message with ``(ClassName)`` after "the example source" where the batch named no
        source, else the same message.
    """
    text = str(exc)
    if text.startswith("the example source handed"):
        text = text.replace("the example source", f"the example source ({type(source).__name__})", 1)
    return SourceError(text)


def draw_checked(source: LayerOracle | ArraySource, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """``source.draw(n_samples)``, checked by :func:`checked_examples` (names the source's class).

    Parameters
    ----------
    source : LayerOracle or ArraySource
        The source.
    n_samples : int
        How many examples to draw.

    Returns
    -------
    X, Y : numpy.ndarray, shape (n_samples, k, d)
        The examples, checked finite.

    Raises
    ------
    SourceError
        If an entry is not finite.
    ExamplesExhausted
        If an :class:`ArraySource` has fewer than ``n_samples`` left.
    """
    X, Y = source.draw(n_samples)
    return checked_examples(np.asarray(X), np.asarray(Y), type(source).__name__)


def batch_sizes(total: int, batch: int) -> list[int]:
    """Sizes of the batches that cover ``total`` examples ``batch`` at a time (the last one may be short).

    Parameters
    ----------
    total : int
        Examples to cover.
    batch : int
        Examples per batch (positive).

    Returns
    -------
    list of int
        The sizes, summing to ``total`` (empty for ``total <= 0``).

    Examples
    --------
    >>> batch_sizes(100, 32)
    [32, 32, 32, 4]
    """
    return [min(batch, total - start) for start in range(0, total, batch)]


def growing_sizes(total: int, batch: int, first: int | None = None) -> Iterator[int]:
    """Sizes of batches that cover at most ``total`` examples: ``first``, then doubling up to ``batch``, then
    ``batch`` at a time (the last one may be short). Lazy, so a stream that stops early forms no more.

    The schedule of the adaptive phases (ours): a phase that stops when its estimate is good enough
    draws at most about twice what it needed while its batches grow, and at most one ``batch`` beyond
    afterwards. ``first=None`` (or ``first >= batch``) gives :func:`batch_sizes`'s fixed batches.
    The sizes depend only on the arguments, so a stream's batches (and their seeds) do not depend on
    where they are computed.

    Parameters
    ----------
    total : int
        The most examples to cover.
    batch : int
        The largest batch (positive).
    first : int, optional
        The first batch's size (positive); None starts at ``batch``.

    Yields
    ------
    int
        The next batch's size; the sizes sum to ``total``.

    Examples
    --------
    >>> list(growing_sizes(100, 32, first=4))
    [4, 8, 16, 32, 32, 8]
    """
    size = batch if first is None else min(first, batch)
    drawn = 0
    while drawn < total:
        n = min(size, total - drawn)
        drawn += n
        yield n
        size = min(2 * size, batch)


class ExampleBatch:
    """One batch of a stream, as a recipe a worker can run: the layer, tokens, distribution, seed, size —
    or, for fixed arrays, the slice itself. :meth:`examples` gives ``(X, Y)``.

    Made by :meth:`LayerOracle.batches` and :meth:`ArraySource.batches`; it pickles to a worker with its
    arguments as they are (a layer, a seed, or the slice).

    Parameters
    ----------
    n : int
        Examples in the batch.
    layer : AttentionLayer, optional
        The oracle's layer, which labels the drawn inputs (None for fixed arrays).
    k : int, optional
        Tokens per sequence of the drawn inputs.
    distribution : {"boolean", "gaussian"}, optional
        The drawn inputs' distribution.
    seed : numpy.random.SeedSequence, optional
        The batch's own seed: its inputs, then its label noise, are drawn from it.
    X, Y : numpy.ndarray, optional
        For fixed arrays: the batch's examples themselves (then ``layer``, ``k``, ``distribution`` and ``seed``
        play no part).
    origin : str, optional
        The source's class name, named in a :class:`SourceError`.
    noise : float, default 0.0
        Standard deviation of the Gaussian noise added to every label entry of a drawn batch.
    device : str or learner.arrays.Backend, optional
        The torch device on which ``layer`` computes the labels (a :class:`~learner.arrays.Backend` made once by
        the oracle); None: numpy.
    """

    __slots__ = ("X", "Y", "device", "distribution", "k", "layer", "n", "noise", "origin", "seed")

    def __init__(self, n: int, *, layer: AttentionLayer | None = None, k: int | None = None,
                 distribution: str | None = None, seed: np.random.SeedSequence | None = None,
                 X: np.ndarray | None = None, Y: np.ndarray | None = None, origin: str | None = None,
                 noise: float = 0.0, device: str | Backend | None = None) -> None:
        self.n, self.layer, self.k, self.distribution, self.seed, self.X, self.Y = n, layer, k, distribution, seed, X, Y
        self.origin = origin  # the source's class name, for SourceError
        self.noise = noise
        self.device = device  # where the layer computes the labels (a Backend or a device name), None: numpy

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state):
        for name, value in state.items():
            setattr(self, name, value)

    def examples(self) -> tuple[np.ndarray, np.ndarray]:
        """``(X, Y)``, checked finite (:func:`checked_examples`).

        Returns
        -------
        X, Y : numpy.ndarray, shape (n, k, d)
            The fixed arrays' slice, or inputs drawn from ``seed`` and labelled by ``layer`` (plus the
            noise): the same arrays in whatever process runs it.

        Raises
        ------
        SourceError
            If an entry is not finite.
        """
        if self.X is not None:
            return checked_examples(np.asarray(self.X), np.asarray(self.Y), self.origin)
        rng = np.random.default_rng(self.seed)
        with section("examples: inputs"):
            X = sample_inputs(self.n, self.k, self.layer.d,  # type: ignore[arg-type, union-attr]
                              distribution=self.distribution, rng=rng)  # type: ignore[arg-type]
        m, d = self.layer.m, self.layer.d  # type: ignore[union-attr]
        with section("examples: labels F(X)", flops=4 * self.n * m * self.k * d * (d + self.k)):  # type: ignore
            labels = self.layer(X, device=self.device)  # type: ignore[misc]
        with section("examples: checks and noise"):
            return checked_examples(X, noisy_labels(labels, self.noise, rng), self.origin)


def device_name(device: object) -> str | None:
    """``device`` as the name of a torch device torch can see (a ValueError or TypeError naming ``device``
    otherwise: :func:`learner.arrays.torch_device`), or None for None (numpy).

    Parameters
    ----------
    device : str, torch.device or None
        The device.

    Returns
    -------
    str or None
        Torch's name for it (``"cuda:0"`` stays ``"cuda:0"``, ``"cuda"`` stays ``"cuda"``), or None.
    """
    if device is None:
        return None
    from .arrays import torch_device

    return str(torch_device(device))


def noisy_labels(Y: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """``Y`` plus i.i.d. ``N(0, noise²)`` in every entry, drawn from ``rng`` after the inputs; ``Y`` itself (and
    nothing drawn) when ``noise`` is 0, so a noiseless oracle draws its inputs alone from its seeds.

    Parameters
    ----------
    Y : numpy.ndarray
        Exact labels.
    noise : float
        The noise's standard deviation (0: none).
    rng : numpy.random.Generator
        Where the noise is drawn from.

    Returns
    -------
    numpy.ndarray
        A new array of noisy labels, or ``Y`` itself when ``noise`` is 0.
    """
    if not noise:
        return Y
    return Y + noise * rng.standard_normal(Y.shape)


class LayerOracle:
    """Random labelled examples ``(X, F(X) + ξ)`` of a planted layer, ``ξ`` i.i.d. ``N(0, noise²)`` (0 by default).

    Two ways to draw. :meth:`draw` continues one sequential stream (the
    oracle's generator). :meth:`batches` opens a new *stream* ``s`` (numbered
    from 0 since the last :meth:`reset`) whose batch ``b`` has its own seed,
    ``SeedSequence(entropy, spawn_key=key + (STREAM_TAG, s, b))`` with the
    oracle's own entropy and key: any process can draw batch ``b`` without
    drawing the ones before it, so the learner's phases can spread a stream
    over workers and still see the same examples (ours; :mod:`learner.parallel`).
    The two ways never share examples.

    Parameters
    ----------
    layer : AttentionLayer
        The planted layer ``F`` that labels the inputs.
    k : int
        Tokens per sequence.
    distribution : {"boolean", "gaussian"}
        The inputs' entries: uniform on ±1 (default; the paper's setting) or standard normal.
    noise : float
        Standard deviation of the Gaussian noise added to every label entry (default 0: exact labels). The
        noise is drawn from the same seeds as the inputs (after them), so noisy streams are reproducible and
        the same in every worker; with 0 nothing more is drawn.
    rng : None, int, SeedSequence or Generator
        The oracle spawns its own generator; ``reset()`` restarts it.
    device : str, optional
        A torch device (``"cuda"``, ``"cpu"``; the torch extra) on which the layer computes the labels
        (``layer(X, device=...)``); the inputs and the noise are drawn by numpy as always, so the
        examples are the same up to rounding (a few units of 1e-16 relative in the labels). None (default):
        numpy. A device torch cannot see is refused here, once (:func:`learner.arrays.backend`).
        ``learn(..., device=...)`` draws from an oracle that has none through :meth:`labelled_on`, a view that
        leaves this oracle as it is.

    Attributes
    ----------
    n_drawn : int
        Examples drawn (or consumed from streams) since the last :meth:`reset`.

    See Also
    --------
    ArraySource : A fixed set of examples instead.
    learner.learn : Learns the layer from the oracle's examples.
    learner.random_layer : A planted layer to draw from.

    Examples
    --------
    >>> from learner import random_layer
    >>> oracle = LayerOracle(random_layer(2, 8, rng=0), 4, rng=1)
    >>> X, Y = oracle.draw(10)
    >>> X.shape, Y.shape, oracle.n_drawn
    ((10, 4, 8), (10, 4, 8), 10)
    """

    @declare(k=Integer(), distribution=Choice(DISTRIBUTIONS), noise=NOISE_RULE)
    def __init__(self, layer: AttentionLayer, k: int, *, distribution: str = "boolean", noise: float = 0.0,
                 rng: int | np.random.SeedSequence | np.random.Generator | None = None,
                 device: str | None = None) -> None:
        if not isinstance(layer, AttentionLayer):
            raise TypeError(f"`layer` must be an AttentionLayer; got {type(layer).__name__}.")
        self.layer = layer
        self.k = k
        self.d = layer.d
        self.distribution = distribution
        self.noise = noise
        self.device = device
        if not isinstance(rng, (np.random.SeedSequence, np.random.Generator)):
            check_rng(rng)  # the error names `rng` for a seed numpy would refuse in its own words
        self._seed = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(
            rng if not isinstance(rng, np.random.Generator) else rng.integers(2**63)
        )
        self.reset()

    @property
    def device(self) -> str | None:
        """The name of the torch device that computes the labels (None: numpy); setting it checks the name once."""
        return self._backend.name

    @device.setter
    def device(self, value: Any) -> None:
        from .arrays import backend

        self._backend = backend(value)

    @property
    def _origin(self) -> str:
        """The name a :class:`SourceError` gives this source: its class's."""
        return type(self).__name__

    def labelled_on(self, device: Any) -> LayerOracle:
        """This oracle with its labels computed on ``device``: a view whose stream, count and every other attribute
        are this oracle's own (read and written through), so drawing from it draws from this oracle, which is not
        changed otherwise.

        Parameters
        ----------
        device : str or learner.arrays.Backend
            Where the view computes the labels (:func:`learner.arrays.backend`).

        Returns
        -------
        LayerOracle
            The view.

        Examples
        --------
        >>> from learner import random_layer
        >>> oracle = LayerOracle(random_layer(1, 4, rng=0), 2, rng=1)
        >>> view = oracle.labelled_on("cpu")  # doctest: +SKIP
        >>> view.draw(5)[0].shape, oracle.n_drawn, oracle.device  # doctest: +SKIP
        ((5, 2, 4), 5, None)
        """
        from .arrays import backend

        return _LabelledOn(self, backend(device))

    @property
    def seed_entropy(self) -> int | Sequence[int] | None:
        """Entropy of the oracle's SeedSequence (replays its examples)."""
        return self._seed.entropy

    def reset(self) -> None:
        """Restart the example stream, the numbering of batch streams and the count."""
        self._rng = np.random.default_rng(self._seed)
        self._streams = 0
        self.n_drawn = 0

    def batches(self, sizes: Iterable[int]) -> Iterator[ExampleBatch]:
        """A new stream: an :class:`ExampleBatch` per size in ``sizes`` (an iterable, possibly lazy).

        Nothing is counted as drawn until :meth:`consume`; batches formed and
        not consumed (computed ahead by a worker, then not needed) leave no trace.

        Parameters
        ----------
        sizes : iterable of int
            The batches' sizes, in order (:func:`growing_sizes`, :func:`batch_sizes`).

        Yields
        ------
        ExampleBatch
            Batch ``b`` of the stream, seeded by ``SeedSequence(entropy, spawn_key=key + (STREAM_TAG, s, b))``;
            the stream number ``s`` is taken when the generator starts.
        """
        stream = self._streams
        self._streams += 1
        base = self._seed
        for b, n in enumerate(sizes):
            seed = np.random.SeedSequence(base.entropy, spawn_key=tuple(base.spawn_key) + (STREAM_TAG, stream, b),
                                          pool_size=base.pool_size)
            yield ExampleBatch(int(n), layer=self.layer, k=self.k, distribution=self.distribution, seed=seed,
                               origin=self._origin, noise=self.noise,
                               device=None if self._backend.on_host else self._backend)

    def consume(self, n_samples: int) -> None:
        """Count ``n_samples`` examples of a stream as drawn.

        Parameters
        ----------
        n_samples : int
            The examples of the stream's batches that were used.
        """
        self.n_drawn += n_samples

    def draw(self, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
        """``n_samples`` fresh examples ``(X, Y)``, each of shape (n_samples, k, d).

        Parameters
        ----------
        n_samples : int
            How many (at least 1).

        Returns
        -------
        X : numpy.ndarray, shape (n_samples, k, d)
            The inputs, drawn from the oracle's sequential stream.
        Y : numpy.ndarray, shape (n_samples, k, d)
            Their labels ``F(X)``, plus the noise when ``noise > 0``.
        """
        n_samples = check_int("n_samples", n_samples)
        X = sample_inputs(n_samples, self.k, self.d, distribution=self.distribution, rng=self._rng)
        self.n_drawn += n_samples
        return X, noisy_labels(self.layer(X, device=None if self._backend.on_host else self._backend), self.noise,
                               self._rng)


class _LabelledOn(LayerOracle):
    """:meth:`LayerOracle.labelled_on`'s view: ``base`` with its labels computed on ``backend``. Every attribute is
    read from ``base`` and written to it, so the stream and the count are ``base``'s; only the backend is the view's
    own. The name of a batch's origin stays the oracle's."""

    @property
    def _origin(self) -> str:
        return type(self.__dict__["_base"]).__name__

    def __init__(self, base: LayerOracle, backend: Any) -> None:  # noqa: D107 - no LayerOracle.__init__: a view
        self.__dict__["_base"], self.__dict__["_backend"] = base, backend

    def __getattr__(self, name: str) -> Any:
        base = self.__dict__.get("_base")
        if base is None:  # half-made (a copy being built): nothing to delegate to
            raise AttributeError(name)
        return getattr(base, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_backend":
            self.__dict__["_backend"] = value
        else:
            setattr(self.__dict__["_base"], name, value)


class ArraySource:
    """A fixed set of labelled examples, handed out in order without replacement.

    Parameters
    ----------
    X : array_like, shape (n, k, d)
        The inputs; finite reals.
    Y : array_like, shape (n, k, d)
        Their labels, of ``X``'s shape.
    distribution : {"boolean", "gaussian"}, optional
        The distribution the inputs were drawn from, which decides which of the paper's settings the learner
        checks; ``"boolean"`` also requires every entry of ``X`` to be ±1. None (default): the learner takes
        "boolean" when every entry is ±1, else "gaussian". Other strings are not checked here.

    Attributes
    ----------
    n_drawn : int
        Examples handed out since the last :meth:`reset`.

    See Also
    --------
    LayerOracle : Draws fresh examples from a layer instead.
    learner.load_examples : Examples saved to a file.
    learner.learn : Takes a source, or a pair ``(X, Y)`` that becomes one.

    Examples
    --------
    >>> from learner import random_layer, sample_inputs
    >>> X = sample_inputs(6, 2, 4, rng=0)
    >>> source = ArraySource(X, random_layer(1, 4, check=False, rng=0)(X), distribution="boolean")
    >>> X1, Y1 = source.draw(4)
    >>> X1.shape, source.remaining
    ((4, 2, 4), 2)
    >>> source.draw(3)
    Traceback (most recent call last):
        ...
    learner.errors.ExamplesExhausted: asked for 3 examples; only 2 of 6 remain. Pass more examples or a LayerOracle.
    """

    def __init__(self, X: ArrayLike, Y: ArrayLike, *, distribution: str | None = None) -> None:
        X = check_inputs(X, boolean=distribution == "boolean")
        Y = check_real_array("Y", Y, ndim=3)
        if X.shape != Y.shape:
            raise ValueError(f"`X` and `Y` must have the same shape; got {X.shape} and {Y.shape}.")
        self.X, self.Y = X, Y
        self.k, self.d = X.shape[1], X.shape[2]
        self.distribution = distribution
        self.n_drawn = 0

    @property
    def remaining(self) -> int:
        """Examples not yet handed out."""
        return self.X.shape[0] - self.n_drawn

    def reset(self) -> None:
        """Hand the examples out again from the first."""
        self.n_drawn = 0

    def batches(self, sizes: Iterable[int]) -> Iterator[ExampleBatch]:
        """The examples from the current position on, cut into batches of the given sizes (the arrays'
        slices themselves). A batch that does not fit raises :class:`ExamplesExhausted` when it is formed;
        nothing is handed out until :meth:`consume`.

        Parameters
        ----------
        sizes : iterable of int
            The batches' sizes, in order.

        Yields
        ------
        ExampleBatch
            The next slice of the arrays (views, not copies).

        Raises
        ------
        ExamplesExhausted
            When the next size goes past the last example (raised as that batch is formed).
        """
        start = self.n_drawn
        for n in sizes:
            if start + n > self.X.shape[0]:
                raise ExamplesExhausted(
                    f"asked for {n} examples; only {self.X.shape[0] - start} of {self.X.shape[0]} remain. "
                    "Pass more examples or a LayerOracle.")
            yield ExampleBatch(int(n), X=self.X[start:start + n], Y=self.Y[start:start + n], origin=type(self).__name__)
            start += n

    def consume(self, n_samples: int) -> None:
        """Hand out the next ``n_samples`` examples (after :meth:`batches` formed them).

        Parameters
        ----------
        n_samples : int
            The examples of the stream's batches that were used.

        Raises
        ------
        ExamplesExhausted
            If fewer than ``n_samples`` remain.
        """
        if self.remaining < n_samples:
            raise ExamplesExhausted(f"asked for {n_samples} examples; only {self.remaining} of {self.X.shape[0]} "
                                    "remain.")
        self.n_drawn += n_samples

    def draw(self, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
        """The next ``n_samples`` examples ``(X, Y)``.

        Parameters
        ----------
        n_samples : int
            How many (at least 1).

        Returns
        -------
        X, Y : numpy.ndarray, shape (n_samples, k, d)
            Views of the arrays' next rows.

        Raises
        ------
        ExamplesExhausted
            If fewer than ``n_samples`` remain (nothing is handed out then).
        """
        n_samples = check_int("n_samples", n_samples)
        if self.remaining < n_samples:
            raise ExamplesExhausted(
                f"asked for {n_samples} examples; only {self.remaining} of {self.X.shape[0]} remain. "
                "Pass more examples or a LayerOracle."
            )
        sl = slice(self.n_drawn, self.n_drawn + n_samples)
        self.n_drawn += n_samples
        return self.X[sl], self.Y[sl]


def as_source(source: LayerOracle | ArraySource | tuple[ArrayLike, ArrayLike]) -> LayerOracle | ArraySource:
    """A LayerOracle/ArraySource as given, or an ArraySource from a pair ``(X, Y)``.

    Parameters
    ----------
    source : LayerOracle, ArraySource or tuple
        A source, or a pair ``(X, Y)`` of arrays.

    Returns
    -------
    LayerOracle or ArraySource
        ``source`` itself, or ``ArraySource(X, Y)`` (no distribution given).

    Raises
    ------
    TypeError
        For anything else (a list ``[X, Y]`` included).
    """
    if isinstance(source, (LayerOracle, ArraySource)):
        return source
    if isinstance(source, tuple) and len(source) == 2:
        return ArraySource(*source)
    raise TypeError(f"`source` must be a LayerOracle, an ArraySource or a pair (X, Y); got {type(source).__name__}.")
