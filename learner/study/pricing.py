"""Phase 6 as the paper states it, priced: the ε-net's tuple count times the measured cost of scoring one tuple.

The paper's phase 6 (talk: "Epsilon-net over span to learn F") enumerates every m-tuple of points of a net over the
hull. The toolkit's ``search="exhaustive"`` is that enumeration on a grid of ``net_points`` points at m = 2 and
``points_per_axis^(m−1)`` beyond: ``C(p, m)`` tuples, each scored by one ``md × md`` least-squares solve
(:func:`learner.phases.search.score_tuples`), after a Gram matrix of ``(p·d)²`` entries
(:func:`learner.phases.search.exhaustive_gram`). Past m = 3 it cannot run here (at m = 4, d = 24 the grid has
2,197 points, 9.7·10¹¹ tuples and a 22 GB Gram matrix), so it is priced:

- **the count** is exact: ``C(p, m)`` at a fixed resolution, :data:`POINTS_PER_AXIS` points per hull axis (the
  finest grid the learner's exhaustive search uses; the paper's ε shrinks with the accuracy asked for, so a finer
  net would cost more: the price is a lower estimate of the paper's);
- **the cost per tuple** is measured at each (m, d): the very scoring code on random features of the search's
  shape (``n_search`` examples of k tokens; a solve's cost does not depend on the values), timed over enough tuples
  to take :data:`MIN_SECONDS`, :data:`REPEATS` times; the interval is the repeats' range;
- **the Gram matrix** is timed at a few points and scaled by ``(p/p')²`` (its cost is ``(p·d)²·n·k``
  multiply-adds: a model, ours).

Everything here is ours; the paper states the enumeration, not its cost on a machine.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..phases import LearnConfig, resolve_config
from ..phases.search import exhaustive_gram, score_tuples
from ..validation import Integer, Seed, declare

__all__ = ["MIN_SECONDS", "NET_POINTS", "POINTS_PER_AXIS", "PRICING_KIND", "REPEATS", "grid_points", "net_tuples",
           "price_cells", "price_search", "time_tuple_scoring"]

log = logging.getLogger(__name__)

#: Net points per hull axis at m >= 3: the learner's ``net_points_3d`` at m = 3, its finest (ours: a fixed
#: resolution for every m, read from the learner's configuration, its one home).
POINTS_PER_AXIS = resolve_config(LearnConfig(), 3)[0].net_points_3d or 0
#: Net points on the hull's one axis at m = 2: the learner's ``net_points`` (ours, read from its configuration).
NET_POINTS = LearnConfig().net_points
#: Each timing runs at least this long (ours: well above the timer's resolution and a batch's overhead).
MIN_SECONDS = 0.3
#: Timings per (m, d, k) (ours: enough for a range that brackets the median; the price's interval is that range).
REPEATS = 5
#: A pricing record's kind (its schema: ``learner.sweep.records.KINDS``).
PRICING_KIND = "growth-pricing"
#: A batched solve of the timed tuples holds at most this many bytes of Gram blocks (ours: 128 MiB).
BATCH_BYTES = 2**27


def grid_points(m: int, *, net_points: int = NET_POINTS, points_per_axis: int = POINTS_PER_AXIS) -> int:
    """The net's points: 1 at m = 1, ``net_points`` at m = 2, ``points_per_axis^(m−1)`` beyond.

    Parameters
    ----------
    m : int
        Heads.
    net_points, points_per_axis : int
        The net's resolution.

    Returns
    -------
    int

    Examples
    --------
    >>> grid_points(1), grid_points(2), grid_points(3), grid_points(4)
    (1, 41, 169, 2197)
    """
    return 1 if m == 1 else net_points if m == 2 else points_per_axis ** (m - 1)


def net_tuples(m: int, **resolution: int) -> int:
    """``C(p, m)``: the m-tuples the paper's enumeration scores (``resolution`` as in :func:`grid_points`).

    Parameters
    ----------
    m : int
        Heads.
    **resolution : int
        ``net_points`` and ``points_per_axis``.

    Returns
    -------
    int

    Examples
    --------
    >>> net_tuples(2), net_tuples(3), net_tuples(4)
    (820, 790244, 968104633665)
    """
    return math.comb(grid_points(m, **resolution), m)


@declare(m=Integer(), d=Integer(), k=Integer(), n_search=Integer(), repeats=Integer(), seed=Seed())
def time_tuple_scoring(m: int, d: int, k: int, *, n_search: int = 2000, repeats: int = REPEATS,
                       min_seconds: float = MIN_SECONDS, seed: int = 0) -> dict[str, Any]:
    """Time the exhaustive search's scoring of one m-tuple, and its Gram matrix, at (m, d, k).

    Parameters
    ----------
    m, d, k : int
        Heads, token dimension, tokens per sequence.
    n_search : int
        The search's examples (the learner's ``LearnConfig.n_search``).
    repeats : int
        Timings of each.
    min_seconds : float
        Each timing's least length: the tuples timed double until one scoring takes this long.
    seed : int
        Seed of the random features and tuples.

    Returns
    -------
    dict
        ``per_tuple_seconds`` (median over the repeats) and ``per_tuple_range``, ``tuples_timed``, ``batch`` (tuples
        per batched solve);
        ``gram_points`` (the points of the timed Gram matrix), ``gram_seconds`` (median) and ``gram_range``; and
        the inputs. Timings are wall-clock (``time.perf_counter``) on this process's BLAS threads.
    """
    rng = np.random.default_rng(seed)
    points = m + 3
    Phi = rng.standard_normal((points, n_search, k, d))
    Ys = rng.standard_normal((n_search, k, d))
    gram_times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        gram = exhaustive_gram(Phi, Ys)
        gram_times.append(time.perf_counter() - t0)
    chunk = max(1, min(20000, BATCH_BYTES // (8 * (m * d) ** 2)))
    n_tuples = 16
    while True:
        tuples = np.array([np.sort(rng.choice(points, size=m, replace=False)) for _ in range(n_tuples)])
        t0 = time.perf_counter()
        score_tuples(gram, tuples, chunk=chunk)
        if time.perf_counter() - t0 >= min_seconds or n_tuples >= 2**22:
            break
        n_tuples *= 2
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        score_tuples(gram, tuples, chunk=chunk)
        times.append((time.perf_counter() - t0) / n_tuples)
    return {"m": m, "d": d, "k": k, "n_search": n_search, "repeats": repeats, "batch": chunk,
            "tuples_timed": n_tuples, "per_tuple_seconds": float(np.median(times)),
            "per_tuple_range": [float(min(times)), float(max(times))], "gram_points": points,
            "gram_seconds": float(np.median(gram_times)),
            "gram_range": [float(min(gram_times)), float(max(gram_times))]}


def price_search(timing: Mapping[str, Any], **resolution: int) -> dict[str, Any]:
    """The exhaustive search's price at the timing's (m, d, k): tuples × cost per tuple + the Gram matrix.

    Parameters
    ----------
    timing : mapping
        :func:`time_tuple_scoring`'s result.
    **resolution : int
        The net's ``net_points`` and ``points_per_axis`` (:func:`grid_points`).

    Returns
    -------
    dict
        ``grid_points``, ``tuples`` (a float: at m = 13 it is about 10¹⁶⁵), ``gram_bytes`` (the float64 Gram
        matrix), ``gram_seconds`` (scaled from the timed one by ``(p/p')²``), ``seconds`` (the price) and
        ``interval`` (from the timings' ranges).

    Examples
    --------
    >>> t = {"m": 3, "d": 24, "per_tuple_seconds": 1e-5, "per_tuple_range": [9e-6, 2e-5], "gram_points": 6,
    ...      "gram_seconds": 0.01, "gram_range": [0.01, 0.01]}
    >>> p = price_search(t)
    >>> p["tuples"], round(p["seconds"], 3), round(p["gram_seconds"], 4)  # 790,244 tuples at 10 µs + 0.01·(169/6)²
    (790244.0, 15.836, 7.9336)
    """
    m, d = timing["m"], timing["d"]
    p = grid_points(m, **resolution)
    tuples = float(math.comb(p, m))
    scale = (p / timing["gram_points"]) ** 2
    gram = timing["gram_seconds"] * scale
    lo_t, hi_t = timing["per_tuple_range"]
    lo_g, hi_g = (g * scale for g in timing["gram_range"])
    return {"grid_points": p, "tuples": tuples, "gram_bytes": 8 * (p * d) ** 2, "gram_seconds": gram,
            "seconds": tuples * timing["per_tuple_seconds"] + gram,
            "interval": [tuples * lo_t + lo_g, tuples * hi_t + hi_g]}


def _seconds_text(s: float) -> str:
    """Seconds in the unit a reader takes in: s, h, days or years (scientific beyond a million years)."""
    year = 365.25 * 86400
    if s < 3600:
        return f"{s:.3g} s"
    if s < 86400:
        return f"{s / 3600:.3g} h"
    if s < year:
        return f"{s / 86400:.3g} days"
    return f"{s / year:.3g} years"


def price_cells(out: Any, cells: Sequence[tuple[int, int, int]], *, run: bool = True, repeats: int = REPEATS,
                seed: int = 0) -> list[dict[str, Any]]:
    """Time and price the exhaustive search at each ``(m, d, k)``: one record per cell in ``out/pricing/``.

    A cell whose record is there is read, not timed again (an interrupted pricing resumes); records are written
    atomically, carry their kind and schema and the versions, and are read back without pickle.

    Parameters
    ----------
    out : path
        The study's folder.
    cells : sequence of (int, int, int)
        ``(m, d, k)``.
    run : bool
        False: time nothing; every cell's record must be there (a RecordError otherwise).
    repeats : int
        Timings per cell (:func:`time_tuple_scoring`).
    seed : int
        Seed of the timed features.

    Returns
    -------
    list of dict
        Per cell: the timing (:func:`time_tuple_scoring`) and the price (:func:`price_search`), sorted by cell.
    """
    from ..errors import RecordError
    from ..io import versions, write_json
    from ..sweep.records import read_record, schema_of, study_path

    rows = []
    for m, d, k in sorted(set(cells)):
        path = study_path(out, f"pricing/m{m}-d{d}-k{k}.json")
        if path.exists():
            rec = read_record(path, kind=PRICING_KIND)
            if (rec.get("m"), rec.get("d"), rec.get("k")) != (m, d, k):
                raise RecordError(f"{path} prices (m, d, k) = {(rec.get('m'), rec.get('d'), rec.get('k'))}, not "
                                  f"{(m, d, k)}.")
        elif not run:
            raise RecordError(f"{path} is missing: run the study (without --summarise-only) to time the cell.")
        else:
            log.info("pricing phase 6 at (m, d, k) = (%d, %d, %d): timing the scoring of its tuples", m, d, k)
            timing = time_tuple_scoring(m, d, k, repeats=repeats, seed=seed)
            rec = {"kind": PRICING_KIND, "schema_version": schema_of(PRICING_KIND), **timing,
                   **price_search(timing), "versions": versions(),
                   "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            path.parent.mkdir(exist_ok=True)
            write_json(path, rec)
        rows.append(rec)
    return rows
