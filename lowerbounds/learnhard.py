"""What real learners pay on the hard instances: examples and time against d and m (study design ours).

The lower bounds say that some layers need ``d^Ω(m)`` work (the paper's
statement, for SQ algorithms and under an LWE variant). This study plants
members of the toolkit's hard families (the registry :mod:`lowerbounds.registry`; a new family is one
entry there) and runs actual learners on samples of ``F`` (k = 2 tokens, the instance's own input
distribution). The built-in families:

* ``"sq"`` — :func:`~lowerbounds.sq_hard_instance` (interpolation variant,
  uniform Boolean inputs): the signal is the parity of a hidden ``S``,
  ``|S| = m − 1``;
* ``"control"`` — :func:`~lowerbounds.sparse_linear_instance`: the same heads
  and the same hidden ``S`` (same seed), a sparse-linear signal (not SQ-hard);
* ``"lwr"`` — :func:`~lowerbounds.lwr_hard_instance` with a random secret of
  ``Z_q^n``, on the reduction's inputs (:func:`~lowerbounds.attention_samples`).

Methods: ``"adam"`` (:func:`learner.baselines.fit_gradient`, told m), ``"provable"``
(:func:`learner.learn`, told m; these layers break the paper's conditions, so it
is expected to fail — its status and message are recorded), and, for LWR,
``"exhaustive"`` (:func:`~lowerbounds.exhaustive_search` over ``q^n`` secrets).

Protocol ("examples and time to learn", ours). Adam: the training set grows by
doubling from ``start`` examples (a quarter more for validation, at least 250);
each size is a fresh fit on fresh examples, until the learned layer's relative
error on 8192 fresh inputs is at most ``target`` (LWR: the learned layer, read
as an LWR label predictor, is right on every one of 2000 fresh samples), or the
budget is spent: the next size would exceed ``max_examples``, or the time used
plus the predicted time of the next fit (twice the last one's) would exceed
``max_seconds``. A record has the examples of the last fit (the size that
learned, or the largest tried), all examples drawn, wall time, optimiser
steps, the final error and which budget ran out. The learner gets one run
with a fixed example budget; the exhaustive search one run.

Execution — run specifications with seeds, one JSON record per run, resume,
local pool or Dask cluster, lock, Ctrl-C — is the shared sweep engine
(:mod:`learner.sweep.engine`), the one the run-time study of :mod:`learner.study.scaling` uses;
the growth fits are its :func:`~learner.sweep.engine.fit_growth`.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import socket
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from learner.hints import PathLike
from learner.io import check_writable_dir, versions
from learner.sweep.engine import claim_study, fit_growth, median, run_sweep, sweep_lock
from learner.sweep.methods import example_stream
from learner.sweep.records import StudyResult, schema_of, study_path, write_summary
from learner.tables import fmt, markdown_table
from learner.validation import Each, Integer, Real, Seed, check_int, declare

from .registry import FAMILIES as _REGISTERED
from .registry import INTERPOLATION_MAX_M, SUBSETS_CODE, family_names
from .registry import get as get_family

if TYPE_CHECKING:
    from .instance import HardInstance
    from .registry import SecretMember, SubsetMember

__all__ = [
    "METHODS",
    "HardSpec",
    "HardStudyResult",
    "cell_subset",
    "learn_hard_study",
    "plan_hard_runs",
    "run_hard",
    "summarise_hard", "check_study"]

log = logging.getLogger(__name__)

#: The study's methods: Adam (``fit_gradient``), the paper's learner (``learn``), and exhaustive search (LWR only).
METHODS = ("adam", "provable", "exhaustive")
#: 2: the hidden subsets of a cell are distinct (drawn without replacement, :func:`cell_subset`). In schema-1
#: records each seed's subset was drawn on its own, so seeds of one cell may share a subset; such records are
#: read by learner.sweep.records.read_record and never resumed.
RECORD_SCHEMA = schema_of("hard-run")
#: Largest m of the SQ family and its control (:data:`lowerbounds.registry.INTERPOLATION_MAX_M`).
MAX_M = INTERPOLATION_MAX_M
#: Cells with at most this many hidden subsets draw a random order of all of them; larger ones skip repeats
#: (ours, not tuned: a bound on the list drawn).
_ENUMERATE_SUBSETS = 10_000
#: Fresh inputs on which the learned layer's relative error is measured (ours: as in learner.study.scaling).
EVAL_INPUTS = 8192
#: Fresh LWR samples on which a learned layer, read as a predictor, must make no mistake (ours, not tuned).
LWR_TEST = 2000
#: Adam's settings (ours): the rate that won every setting of the run-time study (0.03), two restarts, and a
#: stop once the validation relative error is 1e-4 (a tenth of the success target).
ADAM_OPTIONS = {"lr": 0.03, "restarts": 2, "max_iter": 1500, "patience": 200}
STOP_RELATIVE = 1e-4  # ours: Adam's stop above, a tenth of the success target
#: The learner's budgets (ours): a fixed example budget, far below its defaults — enough to see where it stops.
PROVABLE_OPTIONS = {"n_crude": 200_000, "crude_max_examples": 500_000, "n_refine": 200_000, "max_examples": 1_000_000,
                    "outer_rounds": 1}
#: LWR samples the learner is given (it draws from them as from any fixed set; ours, not tuned).
PROVABLE_LWR_SAMPLES = 2_000_000
DEFAULTS: dict[str, Any]
DEFAULTS = {"ds": (8, 12, 16, 24), "ms": (2, 3, 4), "subsets": 5, "lwr_ns": (2, 3, 4, 5, 6, 7, 8), "q": 7,
            "lwr_secrets": 1,
            "start": 1000, "max_examples": 32_000, "max_seconds": 40.0, "target": 1e-3, "provable_seeds": 1}
#: ``--quick``: a smoke test of the machinery in seconds (measures nothing).
QUICK = {"ds": (6, 8), "ms": (2, 3), "subsets": 1, "lwr_ns": (2, 3), "start": 200, "max_examples": 800,
         "max_seconds": 5.0, "adam": {"max_iter": 60, "restarts": 1, "patience": 60},
         "provable": {"n_crude": 10_000, "crude_max_examples": 10_000, "n_refine": 10_000, "max_examples": 10_000,
                      "batch": 10_000, "outer_rounds": 1}, "provable_lwr_samples": 60_000}


@dataclass(frozen=True)
class HardSpec:
    """Everything that determines one run of the study (a specification for :mod:`learner.sweep.engine`).

    Parameters
    ----------
    family : str
        The family the member is drawn from (a name in :data:`lowerbounds.registry.FAMILIES`).
    method : {"adam", "provable", "exhaustive"}
        Who learns it.
    m : int
        The number of heads (SQ family and control; 0 for LWR, whose m depends on the secret).
    d : int
        Token dimension (``n + 2`` for LWR).
    seed_index : int
        Which seed of its cell (for the SQ family and control, which hidden subset: :func:`cell_subset`).
    entropy : int
        The study's seed.
    n, q : int
        The LWR secret's dimension and modulus (0 otherwise).
    budget : tuple
        Sorted ``(name, value)`` pairs: the protocol's budgets (Adam only; empty otherwise).
    options : tuple
        Sorted ``(name, value)`` pairs: the method's keyword arguments.
    """

    family: str
    method: str
    m: int
    d: int
    seed_index: int
    entropy: int
    n: int = 0
    q: int = 0
    budget: tuple = ()
    options: tuple = ()

    RECORD_KIND = "hard-run"
    RECORD_SCHEMA = RECORD_SCHEMA

    @property
    def spawn_key(self) -> tuple[int, ...]:
        """``(family's seed code, m, d, n, q, seed_index)``: the run's seeds are ``SeedSequence(entropy,
        spawn_key=...)``.

        The SQ family and its control share a seed code (their :class:`~lowerbounds.registry.HardFamilyEntry`'s
        ``seed_code``), so seed ``s`` of both draws the same examples.
        """
        return (get_family(self.family).seed_code, self.m, self.d, self.n, self.q, self.seed_index)

    @property
    def run_id(self) -> str:
        """The run's name and record file name: ``method-family-m<m>-d<d>-s<seed>`` (``n<n>-q<q>`` for a family
        of secrets, LWR)."""
        where = f"n{self.n}-q{self.q}" if _secrets(self.family) else f"m{self.m}-d{self.d}"
        return f"{self.method}-{self.family}-{where}-s{self.seed_index}"

    @property
    def example_stream(self) -> int:
        """The stream of examples the run's record is drawn from (:func:`learner.sweep.methods.example_stream`)."""
        return example_stream(self.method)

    def to_dict(self) -> dict[str, Any]:
        """The specification as a JSON-ready dict (``budget`` and ``options`` as dicts, with the spawn key).

        Returns
        -------
        dict
            What a record stores under ``"spec"``; :meth:`from_dict` reads it back.
        """
        return {"family": self.family, "method": self.method, "m": self.m, "d": self.d, "n": self.n, "q": self.q,
                "seed_index": self.seed_index, "entropy": self.entropy, "spawn_key": list(self.spawn_key),
                "budget": dict(self.budget), "options": dict(self.options)}

    @classmethod
    def from_dict(cls, rec: Mapping[str, Any]) -> HardSpec:
        """The specification a :meth:`to_dict` dict describes.

        Parameters
        ----------
        rec : mapping
            A record's ``"spec"``.

        Returns
        -------
        HardSpec
            Equal to the specification that wrote it.
        """
        return cls(rec["family"], rec["method"], rec["m"], rec["d"], rec["seed_index"], rec["entropy"], n=rec["n"],
                   q=rec["q"], budget=tuple(sorted(rec["budget"].items())),
                   options=tuple(sorted(rec["options"].items())))

    def run(self, learn_workers: int | None = None) -> dict[str, Any]:
        """Run it: :func:`run_hard`.

        Parameters
        ----------
        learn_workers : int, optional
            Processes of the learner's own pool (the ``"provable"`` method of the SQ family and control).

        Returns
        -------
        dict
            The run's JSON-ready record (an ``"error"`` record when the run raised).
        """
        return run_hard(self, learn_workers)

    def failure_record(self, message: str, tb: str, timings: Mapping[str, float],
                       where: Mapping[str, Any]) -> dict[str, Any]:
        """The record of a run that failed: ``"outcome": "error"``, not successful.

        Parameters
        ----------
        message : str
            What failed, one line.
        tb : str
            The traceback.
        timings : mapping
            Seconds spent (``{"total": ...}``).
        where : mapping
            Host and process id of the run.

        Returns
        -------
        dict
            The JSON-ready record (the sweep retries it on resume).
        """
        return _head(self) | {"outcome": "error", "success": False, "status": "error", "message": message,
                              "traceback": tb, "timings": timings, "where": where, "attempts": []}


def _secrets(family, n=None):
    """Whether ``family``'s members are secrets of ``Z_q^n`` (the LWR family), not hidden subsets of a cell; for a
    record of a family no longer registered, whether its secret dimension ``n`` is set."""
    if n is not None and family not in _REGISTERED:
        return n > 0
    return get_family(family).cells == "secrets"


def _family_order(family):
    """``family``'s place in the registry (for sorting; a family no longer registered goes last)."""
    names = family_names()
    return names.index(family) if family in names else len(names)


def _head(spec):
    return {"schema_version": RECORD_SCHEMA, "kind": HardSpec.RECORD_KIND, "run_id": spec.run_id,
            "spec": spec.to_dict(), "example_stream": spec.example_stream, "versions": versions()}


def planted_member(spec: HardSpec) -> tuple[HardInstance, np.random.SeedSequence, np.random.SeedSequence]:
    """The member of a run and the seeds of its examples and its method.

    ``SeedSequence(entropy, spawn_key=spec.spawn_key).spawn(3)`` seeds, in order,
    the member (a family of secrets: the secret), the examples and the method. The
    family's registered builder makes the member
    (:attr:`~lowerbounds.registry.HardFamilyEntry.member`); the hidden subset of
    a family of subsets (the SQ family, its control) is the cell's
    ``seed_index``-th (:func:`cell_subset`), so the seeds of a cell have distinct
    subsets.
    """
    entry = get_family(spec.family)
    member_seed, data_seed, method_seed = np.random.SeedSequence(spec.entropy, spawn_key=spec.spawn_key).spawn(3)
    if entry.cells == "secrets":  # the entry's `cells` says which contract its builder keeps
        inst = cast("SecretMember", entry.member)(spec.n, spec.q, np.random.default_rng(member_seed))
    else:
        inst = cast("SubsetMember", entry.member)(spec.d, spec.m, cell_subset(spec.m, spec.d, spec.seed_index,
                                                                             entropy=spec.entropy))
    return inst, data_seed, method_seed


def cell_subset(m: int, d: int, index: int, *, entropy: int) -> tuple[int, ...]:
    """The hidden subset of seed ``index`` in the SQ cell ``(m, d)``; the seeds of a cell never share one (ours).

    The subsets of a cell are a uniformly random sequence without repetition of
    the :math:`\\binom{d-1}{m-1}` subsets ``S ⊂ {1, …, d − 1}`` (``t = 0`` is the
    reader) with ``|S| = m − 1``, seeded by ``SeedSequence(entropy,
    spawn_key=(2, m, d))``: the same for the SQ family and its control, and a
    seed's subset does not depend on how many seeds are asked for (a larger
    ``subsets`` extends a study and keeps its runs). A cell with at most
    10 000 subsets takes a random order of all of them; a larger one draws
    subsets uniformly and skips repeats (fewer than ``2 (index + 1)`` draws
    expected while ``index`` is below half the subsets).

    Parameters
    ----------
    m, d : int
        Heads and token dimension of the cell, ``2 <= m <= d``.
    index : int
        Seed index, ``0 <= index <`` :math:`\\binom{d-1}{m-1}`.
    entropy : int
        The study's seed.

    Returns
    -------
    tuple of int
        Sorted coordinates.

    Examples
    --------
    >>> sorted(cell_subset(2, 4, i, entropy=0) for i in range(3))   # every 1-subset of {1, 2, 3}, once each
    [(1,), (2,), (3,)]
    """
    m, d = check_int("m", m, minimum=2), check_int("d", d, minimum=2)
    if d < m:
        raise ValueError(f"d={d} is too small for m={m}: the hidden subset needs m − 1 = {m - 1} coordinates "
                         f"besides the reader, so d >= m.")
    count = math.comb(d - 1, m - 1)
    index = check_int("index", index, minimum=0)
    if index >= count:
        raise ValueError(f"`index` must be below the {count} hidden subsets of the cell m={m}, d={d} "
                         f"(C({d - 1}, {m - 1})); got index={index}.")
    gen = np.random.default_rng(np.random.SeedSequence(Seed().check("entropy", entropy),
                                                       spawn_key=(SUBSETS_CODE, m, d)))
    if count <= _ENUMERATE_SUBSETS:
        every = list(itertools.combinations(range(1, d), m - 1))
        return every[int(gen.permutation(count)[index])]
    order: list[tuple[int, ...]]
    seen, order = set(), []
    while len(order) <= index:
        S = tuple(sorted(int(j) for j in gen.choice(np.arange(1, d), size=m - 1, replace=False)))
        if S not in seen:
            seen.add(S)
            order.append(S)
    return order[index]


def run_hard(spec: HardSpec | dict[str, Any], learn_workers: int | None = None) -> dict[str, Any]:
    """Run one specification (a :class:`HardSpec` or its dict) and return its JSON-ready record.

    A failure of the run itself (an exception) becomes a record with
    ``"outcome": "error"`` and its traceback, so a sweep goes on.

    Parameters
    ----------
    spec : HardSpec or dict
        The run, or its :meth:`HardSpec.to_dict`.
    learn_workers : int, optional
        Processes of :func:`learner.learn`'s own pool (the ``"provable"`` method on the SQ family and control).

    Returns
    -------
    dict
        The record: the specification, ``"outcome"`` (``"finished"`` or ``"error"``), ``success``, ``status``,
        ``message``, the member (subset or secret), examples, seconds, steps, final error, which budget ran
        out, the attempts, timings and where it ran.
    """
    if isinstance(spec, dict):
        spec = HardSpec.from_dict(spec)
    t0 = time.perf_counter()
    where = {"host": socket.gethostname(), "pid": os.getpid()}
    try:
        inst, data_seed, method_seed = planted_member(spec)
        if spec.method == "adam":
            body = _grow_adam(spec, inst, data_seed, method_seed)
        elif spec.method == "provable":
            body = _provable(spec, inst, data_seed, method_seed, learn_workers)
        else:
            body = _exhaustive(spec, inst, data_seed)
    except Exception as exc:  # noqa: BLE001 — recorded, the sweep goes on
        log.warning("run %s failed: %s: %s", spec.run_id, type(exc).__name__, exc)
        return spec.failure_record(f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                                   {"total": time.perf_counter() - t0}, where)
    member: dict[str, Any] = {"m": inst.m, "d": inst.d}
    if _secrets(spec.family):
        member |= {"secret": list(inst.secret), "q": inst.q}  # type: ignore[attr-defined]  # SecretMember's contract
    else:
        member |= {"subset": list(inst.subset)}  # type: ignore[attr-defined]  # SubsetMember's contract
    return _head(spec) | {"outcome": "finished", "member": member, "where": where} | body | {
        "timings": {"total": time.perf_counter() - t0}}


def _with_validation(n):
    """Examples of a fit on ``n`` training examples: a quarter more for validation, at least 250."""
    return n + max(n // 4, 250)


def _y_scale(layer, k, rng):
    """``E‖F(X)‖_F²`` on 4096 uniform Boolean inputs: turns a relative stopping rule into fit_gradient's
    absolute one."""
    from learner import sample_inputs

    X = sample_inputs(4096, k, layer.d, rng=rng)
    return float(np.mean(np.sum(layer(X) ** 2, axis=(1, 2))))


def _grow_adam(spec, inst, data_seed, method_seed):
    from learner import LayerOracle, relative_error
    from learner.baselines import fit_gradient

    from .attacks import attention_attack

    budget = dict(spec.budget)
    options = dict(spec.options)
    start, max_examples = budget["start"], budget["max_examples"]
    max_seconds, target = budget["max_seconds"], budget["target"]
    lwr = _secrets(spec.family)
    data, evals, fits = data_seed.spawn(3)
    if not lwr:
        oracle = LayerOracle(inst.layer, 2, rng=data)
        options.setdefault("tol", STOP_RELATIVE * _y_scale(inst.layer, 2, np.random.default_rng(evals)))
    attempts, t0, n, budget_out, success = [], time.perf_counter(), start, None, False
    while True:
        n_val = _with_validation(n) - n
        seed = fits.spawn(1)[0]
        t_fit = time.perf_counter()
        if lwr:
            out = attention_attack(inst, method="gradient", n_samples=n + n_val, n_test=LWR_TEST,
                                   gradient_options=options | {"n_train": n, "n_val": n_val}, rng=seed)
            accuracy = out.extra["accuracy"]
            attempt = {"examples": n + n_val, "seconds": time.perf_counter() - t_fit,
                       "steps": out.extra["optimiser_steps"], "accuracy": accuracy,
                       "error": None if accuracy is None else 1.0 - accuracy, "status": out.extra["learner_status"]}
            success = bool(out.success)
        else:
            result = fit_gradient(oracle, m=spec.m, n_train=n, n_val=n_val, rng=seed, **options)
            error = None
            if result.layer is not None:
                error = relative_error(inst.layer, result.layer, 2, n_samples=EVAL_INPUTS, rng=evals.spawn(1)[0])
            fit = result.diagnostics.get("fit", {})
            attempt = {"examples": n + n_val, "seconds": time.perf_counter() - t_fit,
                       "steps": int(sum(fit.get("iterations", []))), "error": error,
                       "val_relative_error": fit.get("val_relative_error"), "status": result.status}
            success = error is not None and error <= target
        attempts.append(attempt)
        log.info("%s: %d examples, error %s, %.1f s", spec.run_id, n + n_val, attempt["error"], attempt["seconds"])
        if success:
            break
        elapsed = time.perf_counter() - t0
        if _with_validation(2 * n) > max_examples:
            budget_out = "examples"
            break
        if elapsed + 2 * attempt["seconds"] > max_seconds:
            budget_out = "time"
            break
        n *= 2
    last = attempts[-1]
    return {"success": success, "status": "learned" if success else f"budget ({budget_out})",
            "message": (f"learned with {last['examples']:,} examples (error {last['error']:.3g} <= {target:g})"
                        if success else f"not learned within the {budget_out} budget: last fit on "
                        f"{last['examples']:,} examples, error {last['error']}"),
            "examples": last["examples"], "examples_drawn": int(sum(a["examples"] for a in attempts)),
            "seconds": time.perf_counter() - t0, "steps": int(sum(a["steps"] for a in attempts)),
            "final_error": last["error"], "budget_out": budget_out, "attempts": attempts}


def _provable(spec, inst, data_seed, method_seed, learn_workers):
    from learner import LayerOracle, LearnConfig, learn

    from .attacks import attention_attack

    options = dict(spec.options)
    t0 = time.perf_counter()
    if _secrets(spec.family):
        budget = options.pop("lwr_samples", PROVABLE_LWR_SAMPLES)
        out = attention_attack(inst, method="provable", n_samples=budget, n_test=LWR_TEST,
                               config=LearnConfig(**options), rng=method_seed)
        status, message, success = out.extra["learner_status"], out.extra["learner_message"], bool(out.success)
        drawn, error = out.samples, None if out.extra["accuracy"] is None else 1.0 - out.extra["accuracy"]
    else:
        result = learn(LayerOracle(inst.layer, 2, rng=data_seed), m=spec.m, config=LearnConfig(**options),
                       truth=inst.layer, rng=method_seed, progress=False, workers=learn_workers)
        status, message, drawn = result.status, result.message, result.examples_drawn
        error = result.errors.get("relative_error")
        success = bool(result.success)
    return {"success": success, "status": status, "message": message, "examples": int(drawn),
            "examples_drawn": int(drawn), "seconds": time.perf_counter() - t0, "steps": None, "final_error": error,
            "budget_out": None, "attempts": []}


def _exhaustive(spec, inst, data_seed):
    from .attacks import _samples_for, exhaustive_search
    from .lwr import sample_lwr

    draw = sample_lwr(inst.params, _samples_for(spec.n, spec.q), secret=inst.secret, rng=data_seed)
    out = exhaustive_search(draw.public)
    ok = bool(out.success and out.recovered(inst.secret))
    return {"success": ok, "status": "recovered" if ok else "not recovered", "message": out.message,
            "examples": int(out.samples), "examples_drawn": int(out.samples), "seconds": out.seconds, "steps": None,
            "final_error": None, "budget_out": None, "secrets_tried": float(out.cost), "attempts": []}


# --------------------------------------------------------------------------- planning and checks


def _check_list(name, values, check):
    values = list(values)
    if not values:
        raise ValueError(f"`{name}` must not be empty.")
    out = [check(v) for v in values]
    if len(set(out)) != len(out):
        raise ValueError(f"`{name}` must not repeat values; got {name}={values}.")
    return out


def check_study(*, ds: Sequence[int], ms: Sequence[int], subsets: int, lwr_ns: Sequence[int], q: int,
                families: Iterable[str], methods: Iterable[str], start: int, max_examples: int, max_seconds: float,
                target: float, provable_seeds: int, lwr_secrets: int = 1) -> dict[str, Any]:
    """Check the study's parameters together before anything runs; errors name the parameter and the value.

    Each parameter's own type and range is :func:`learn_hard_study`'s declared rule (checked at its call);
    here are the families and methods and what relates parameters (d >= m, subsets per cell, q^n, budgets).

    Parameters
    ----------
    ds, ms : sequence of int
        Token dimensions and heads of the families of subsets (the SQ family and control: ``m <= MAX_M`` = 7;
        ``d >= m``).
    subsets : int
        Hidden subsets per cell; at most the smallest cell's ``C(d − 1, m − 1)``.
    lwr_ns : sequence of int
        Secret dimensions of the families of secrets (LWR).
    q : int
        Their modulus.
    families : iterable of str
        Registered families (:data:`lowerbounds.registry.FAMILIES`), without repeats.
    methods : iterable of str
        Entries of :data:`METHODS`, without repeats; ``["exhaustive"]`` alone needs families it applies to
        (``["lwr"]``).
    start, max_examples : int
        Adam's first training-set size and largest training set plus validation (which must allow the first).
    max_seconds : float
        Adam's time budget per run.
    target : float
        The relative error that counts as learned.
    provable_seeds : int
        Members per cell that the paper's learner runs on.
    lwr_secrets : int
        Secrets per ``n`` (default 1).

    Returns
    -------
    dict
        The checked parameters: ``families``, ``methods``, ``budget`` (start, max_examples, max_seconds,
        target) and ``provable_seeds``; ``ds``, ``ms`` (sorted) and ``subsets`` with a family of subsets;
        ``lwr_ns`` (sorted), ``q`` and ``lwr_secrets`` with a family of secrets.

    Raises
    ------
    ValueError
        The first parameter, or combination, that cannot work, named with its value.
    """
    from .attacks import MAX_SECRETS

    families = _check_list("families", families, str)
    for f in families:
        if f not in _REGISTERED:
            raise ValueError(f"`families` entries must be in {family_names()}; got {f!r}.")
    methods = _check_list("methods", methods, str)
    for mt in methods:
        if mt not in METHODS:
            raise ValueError(f"`methods` entries must be in {METHODS}; got {mt!r}.")
    for f in families:  # every family gets a run: a method alone that applies to another family is refused
        if not set(methods) & set(get_family(f).methods):
            applies = [g for g in family_names() if set(methods) & set(get_family(g).methods)]
            raise ValueError(f"`methods` {methods} apply to the {', '.join(applies) or 'no'} famil"
                             f"{'y' if len(applies) == 1 else 'ies'} only, not to {f!r}; add "
                             f"{' or '.join(repr(m) for m in get_family(f).methods)}, or families={applies}.")
    out: dict[str, Any] = {"families": families, "methods": methods}
    subset_families = [f for f in families if not _secrets(f)]
    if subset_families:
        for m in ms:
            for f in subset_families:
                limit = get_family(f).max_m
                if limit is not None and m > limit:
                    raise ValueError(f"`ms` entries must be at most {limit} (the {f} family's members are accurate "
                                     f"up to m = {limit}); got m={m}.")
            for d in ds:
                if d < m:
                    raise ValueError(f"d={d} is too small for m={m}: the hidden subset needs m − 1 = {m - 1} "
                                     f"coordinates besides the reader, so d >= m.")
        # Distinct subsets per cell (cell_subset): the smallest cell bounds how many there can be.
        count, m_cell, d_cell = min((math.comb(d - 1, m - 1), m, d) for m in ms for d in ds)
        if subsets > count:
            raise ValueError(f"`subsets` must be at most the number of distinct hidden subsets of every (m, d) cell; "
                             f"the cell m={m_cell}, d={d_cell} has C({d_cell - 1}, {m_cell - 1}) = {count}; "
                             f"got subsets={subsets}.")
        out |= {"ds": sorted(ds), "ms": sorted(ms), "subsets": subsets}
    if any(_secrets(f) for f in families):
        if "exhaustive" in methods:
            too_big = [n for n in lwr_ns if q**n > MAX_SECRETS]
            if too_big:
                raise ValueError(f"the exhaustive search refuses q^n > {MAX_SECRETS:.3g} secrets; got n={too_big} at "
                                 f"q={q}. Drop those n or the method.")
        out |= {"lwr_ns": sorted(lwr_ns), "q": q, "lwr_secrets": lwr_secrets}
    if max_examples < _with_validation(start):
        raise ValueError(f"`max_examples` must allow the first fit (start={start} plus validation: "
                         f"{_with_validation(start)}); got max_examples={max_examples}.")
    out |= {"budget": {"start": start, "max_examples": max_examples, "max_seconds": max_seconds, "target": target},
            "provable_seeds": provable_seeds}
    return out


def plan_hard_runs(checked: Mapping[str, Any], *, entropy: int, adam_options: dict[str, Any] | None = None,
                   provable_options: dict[str, Any] | None = None,
                   provable_lwr_samples: int | None = None) -> list[HardSpec]:
    """Specifications for a checked study (:func:`check_study`), seed-major so that a stopped sweep has every cell.

    Parameters
    ----------
    checked : mapping
        :func:`check_study`'s result.
    entropy : int
        The study's seed.
    adam_options : dict, optional
        Overrides of ``ADAM_OPTIONS`` (keyword arguments of :func:`learner.baselines.fit_gradient`).
    provable_options : dict, optional
        Overrides of ``PROVABLE_OPTIONS`` (fields of :class:`learner.LearnConfig`).
    provable_lwr_samples : int, optional
        LWR samples given to the learner (default ``PROVABLE_LWR_SAMPLES`` = 2 000 000).

    Returns
    -------
    list of HardSpec
        One per run: Adam on ``subsets`` (or ``lwr_secrets``) seeds per cell, the learner on the first
        ``provable_seeds`` of them, the exhaustive search on every LWR secret; sorted by seed index, then
        family, cell and method.
    """
    budget = tuple(sorted(checked["budget"].items()))
    opts = {"adam": tuple(sorted((ADAM_OPTIONS | (adam_options or {})).items())),
            "provable": tuple(sorted((PROVABLE_OPTIONS | (provable_options or {})).items())),
            "exhaustive": ()}
    lwr_provable = dict(opts["provable"]) | {"lwr_samples": provable_lwr_samples or PROVABLE_LWR_SAMPLES}
    specs = []
    for method in checked["methods"]:
        for family in checked["families"]:
            if method not in get_family(family).methods:
                continue
            if _secrets(family):
                seeds = checked["lwr_secrets"] if method != "provable" else min(checked["provable_seeds"],
                                                                                 checked["lwr_secrets"])
                o = tuple(sorted(lwr_provable.items())) if method == "provable" else opts[method]
                specs += [HardSpec(family, method, 0, n + 2, s, entropy, n=n, q=checked["q"],
                                   budget=budget if method == "adam" else (), options=o)
                          for n in checked["lwr_ns"] for s in range(seeds)]
            else:
                seeds = checked["subsets"] if method == "adam" else min(checked["provable_seeds"], checked["subsets"])
                specs += [HardSpec(family, method, m, d, s, entropy, budget=budget if method == "adam" else (),
                                   options=opts[method])
                          for m in checked["ms"] for d in checked["ds"] for s in range(seeds)]
    specs.sort(key=lambda s: (s.seed_index, _family_order(s.family), s.m, s.d, s.n, METHODS.index(s.method)))
    return specs


# --------------------------------------------------------------------------- summary, table, figure


def summarise_hard(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Rows per cell and method, fitted growth in d per (family, m), and the LWR rows (JSON-ready).

    Families are listed in registry order (:data:`lowerbounds.registry.FAMILIES`): those of hidden subsets in
    the rows and the growth fits, those of secrets (LWR) also in the ``lwr`` rows.
    Medians are over the finished runs of a cell, successful or not (what a
    user pays); a run stopped by its budget enters with the examples and time
    it used, so a cell with ``budget_out`` > 0 gives lower bounds, and so does a
    fit through it (``censored`` says so). LWR rows carry the number of secrets,
    ``secrets_q_n`` (``q^n``; ``None`` beyond float64's range) and
    ``log2_secrets_q_n`` (``n log2 q``, always finite).

    Parameters
    ----------
    records : iterable of mapping
        The runs' records (:func:`run_hard`).

    Returns
    -------
    dict
        ``rows`` (one per family, method and cell), ``growth`` (Adam's fitted slopes in ``d`` per family and
        ``m``), ``lwr`` (per family of secrets and ``n``, each method's row) and ``note`` (what is ours).
    """
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for rec in records:
        sp = rec["spec"]
        key = (sp["family"], sp["method"], sp["m"], sp["d"], sp["n"], sp["q"])
        groups.setdefault(key, []).append(rec)
    rows = []
    for (family, method, m, d, n, q), recs in sorted(groups.items(), key=lambda kv: (
            _family_order(kv[0][0]), METHODS.index(kv[0][1]), kv[0][2], kv[0][3], kv[0][4])):
        fin = [r for r in recs if r["outcome"] == "finished"]
        row = {"family": family, "method": method, "m": m if not _secrets(family, n) else median(
                   [r["member"]["m"] for r in fin]), "d": d, "n": n, "q": q, "runs": len(recs),
               "errors_raised": len(recs) - len(fin), "successes": sum(bool(r["success"]) for r in fin),
               "budget_out": sum(r.get("budget_out") is not None for r in fin),
               "median_examples": median([r["examples"] for r in fin]),
               "median_examples_drawn": median([r["examples_drawn"] for r in fin]),
               "median_seconds": median([r["seconds"] for r in fin]),
               "median_steps": median([r["steps"] for r in fin]),
               "median_final_error": median([r["final_error"] for r in fin]),
               "statuses": {st: sum(r["status"] == st for r in recs) for st in sorted({r["status"] for r in recs})}}
        if method == "provable" and fin:
            row["message"] = fin[0]["message"]
        if _secrets(family, n):
            row["secrets_q_n"], row["log2_secrets_q_n"] = _secret_count(n, q)
        rows.append(row)
    growth = {}
    for family in dict.fromkeys(r["family"] for r in rows if not _secrets(r["family"], r["n"])):
        for m in sorted({r["m"] for r in rows if r["family"] == family and r["method"] == "adam"}):
            every = [r for r in rows if (r["family"], r["method"], r["m"]) == (family, "adam", m)]
            mine = [r for r in every if r["median_seconds"] is not None]  # cells where some run finished
            ds = [r["d"] for r in mine]
            learned = [r for r in mine if 2 * r["successes"] > r["runs"]]  # cells whose median run learned
            growth[f"{family}, m={m}"] = {
                "family": family, "m": m, "ds": ds, "sq_prediction": m - 1,
                "examples_slope": fit_growth(ds, [r["median_examples"] for r in mine])["power"],
                "seconds_slope": fit_growth(ds, [r["median_seconds"] for r in mine])["power"],
                "ds_learned": [r["d"] for r in learned],
                "examples_slope_learned": fit_growth([r["d"] for r in learned],
                                                     [r["median_examples"] for r in learned])["power"],
                "seconds_slope_learned": fit_growth([r["d"] for r in learned],
                                                    [r["median_seconds"] for r in learned])["power"],
                "censored": any(r["budget_out"] for r in mine),
                "all_learned": all(r["successes"] == r["runs"] for r in every)}  # a raised run did not learn
    lwr: dict[tuple[str, int], dict[str, Any]] = {}  # in the rows' order: family, then n
    for r in rows:
        if _secrets(r["family"], r["n"]):
            lwr.setdefault((r["family"], r["n"]), {k: r[k] for k in (
                "family", "n", "q", "secrets_q_n", "log2_secrets_q_n")})[r["method"]] = {
                k: r[k] for k in ("m", "runs", "successes", "budget_out", "median_examples", "median_seconds",
                                  "median_steps", "median_final_error", "statuses")}
    return {"rows": rows, "growth": growth, "lwr": [lwr[key] for key in sorted(
                lwr, key=lambda key: (_family_order(key[0]), key[1]))],
            "note": "study design, protocol, control and fits ours; the paper states the d^Ω(m) SQ lower bound "
                    "and LWE-based hardness, and reports no experiments"}


def _secret_count(n, q):
    """``(q^n, n log2 q)``: the number of LWR secrets, as a float where float64 holds it (else ``None``), and its log.

    ``float(q) ** n`` overflows once ``n log2 q >= 1024`` (``n = 200, q = 1009``:
    about ``2^1995``); the log is always finite, and ``q^n`` itself is computed in
    Python integers only below that, so a huge ``n`` costs nothing. Exact below
    ``2^53``, which covers every ``q^n`` the exhaustive search accepts.
    """
    log2 = n * math.log2(q)
    if log2 >= 1024:
        return None, log2
    try:
        return float(q**n), log2
    except OverflowError:  # 2^1024 > q^n rounds up to infinity: only just below the cut
        return None, log2


def _fmt_count(count, log2):
    """``q^n`` for the table: with thousands separators while exact, else ``m.mme+k`` from its log."""
    if count is not None and count < 2**53:
        return f"{count:,.0f}"
    exponent = log2 * math.log10(2)
    k = math.floor(exponent)
    mantissa = 10 ** (exponent - k)
    if round(mantissa, 2) >= 10:
        mantissa, k = mantissa / 10, k + 1
    return f"{mantissa:.2f}e{k}"


#: A missing value in the study's tables (an em dash, where :data:`learner.tables.MISSING` is an en dash).
_DASH = "—"


def _fmt(x, spec=".3g"):
    """:func:`learner.tables.fmt` with NaN missing too (a median or slope of nothing)."""
    return fmt(None if isinstance(x, float) and math.isnan(x) else x, spec, missing=_DASH)


@dataclass(frozen=True)
class HardStudyResult(StudyResult):
    """What :func:`learn_hard_study` measured (:class:`learner.sweep.records.StudyResult`).

    Parameters
    ----------
    records : list of dict
        The runs' records.
    summary : dict
        :func:`summarise_hard`'s summary with the parameters and versions (also ``out/summary.json``).
    stats : dict
        The sweep's counts: ``{"ran": runs run now, "skipped": runs whose finished records were kept}``.
    files : dict
        What was written: ``{name: path}`` (``summary_json``, ``summary_md``, and ``plot``).
    """

    def table(self) -> str:
        """The summary as Markdown: SQ family and control, the growth fits, the LWR rows.

        Returns
        -------
        str
            Three tables (the LWR one only when the study has LWR runs), as written to ``out/summary.md``.
        """
        s = self.summary
        lines = [markdown_table(
            ["family", "method", "m", "d", "runs", "learned", "budget out", "median examples", "median s",
             "median steps", "median final error", "statuses"],
            [[r["family"], r["method"], r["m"], r["d"], r["runs"], r["successes"], r["budget_out"],
              _fmt(r["median_examples"], ",.0f"), _fmt(r["median_seconds"], ".1f"), _fmt(r["median_steps"], ",.0f"),
              _fmt(r["median_final_error"]), ", ".join(f"{k}: {v}" for k, v in r["statuses"].items())]
             for r in s["rows"] if not _secrets(r["family"], r["n"])])]
        lines += ["", ("Fitted growth in d: slopes on log-log axes of the cell medians, over every d and over the d "
                       "whose median run learned (SQ prediction m − 1 for the hard family). Censored = some run "
                       "stopped by its budget: its cell median is a lower bound, and so is a slope through it."), "",
                  markdown_table(
                      ["family", "m", "examples slope (all d)", "time slope (all d)", "d where most learned",
                       "examples slope there", "time slope there", "SQ prediction", "censored"],
                      [[g["family"], g["m"], _fmt(g["examples_slope"], ".2f"), _fmt(g["seconds_slope"], ".2f"),
                        ", ".join(map(str, g["ds_learned"])) or "none", _fmt(g["examples_slope_learned"], ".2f"),
                        _fmt(g["seconds_slope_learned"], ".2f"),
                        g["sq_prediction"] if _sq_prediction(g["family"]) else _DASH, "yes" if g["censored"] else "no"]
                       for g in s["growth"].values()])]
        if s["lwr"]:
            rows = []
            several = len({row.get("family", "lwr") for row in s["lwr"]}) > 1  # then a column says which
            for row in s["lwr"]:
                a, e, p = row.get("adam", {}), row.get("exhaustive", {}), row.get("provable", {})
                m = next((x["m"] for x in (a, e, p) if x), None)
                frac_a = f"{a['successes']}/{a['runs']}" if a else _DASH
                frac_e = f"{e['successes']}/{e['runs']}" if e else _DASH
                rows.append([row.get("family", "lwr")] * several + [
                    row["n"], _fmt_count(row["secrets_q_n"], row["log2_secrets_q_n"]), _fmt(m, ".0f"), frac_a,
                    _fmt(a.get("median_examples"), ",.0f"), _fmt(a.get("median_seconds"), ".1f"),
                    _fmt(a.get("median_steps"), ",.0f"), _fmt(e.get("median_seconds"), ".3f"), frac_e,
                    ", ".join(p.get("statuses", {})) or _DASH])
            lines += ["", markdown_table(["family"] * several + [
                "n", "q^n secrets", "m (median)", "Adam learned", "Adam examples", "Adam s", "Adam steps",
                "exhaustive s", "exhaustive recovered", "learner status"], rows)]
        return "\n".join(lines)


def _sq_prediction(family):
    """Whether the growth table shows the SQ prediction ``m − 1`` for ``family`` (its registry entry says)."""
    return family in _REGISTERED and get_family(family).sq_prediction


def _say_nothing_finished(ax, where, rows):
    """Write on ``ax`` (and log) that no run of ``rows`` finished, instead of leaving empty axes."""
    runs = sum(r["runs"] for r in rows)
    raised = sum(r["errors_raised"] for r in rows)
    note = (f"no run finished: {raised} of {runs} runs raised an error\n(each record's `message` says which; "
            "summary.md counts them)")
    ax.text(0.5, 0.5, note, ha="center", va="center", transform=ax.transAxes, fontsize=10, color="C3")
    log.warning("%s: %s", where, note.replace("\n", " "))


def _legend_below(ax, ncol):
    """``ax``'s legend under its axis label (half an inch below the axes), off the data."""
    from matplotlib.transforms import ScaledTranslation

    below = ax.transAxes + ScaledTranslation(0, -0.5, ax.figure.dpi_scale_trans)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below, ncol=ncol, frameon=False)


def plot_hard(summary: Mapping[str, Any], path: PathLike) -> Path:
    """Examples against d (log-log) per m, hard family and control; LWR: Adam's time and the exhaustive search's.

    Each line has its own colour; each panel's legend lies below it, off the data.

    Parameters
    ----------
    summary : mapping
        :func:`summarise_hard`'s result (``rows``, ``growth`` and ``lwr`` are read).
    path : str or path-like
        The PNG file written (atomically).

    Returns
    -------
    pathlib.Path
        The file written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from learner.io import atomic_write

    fig, axes = plt.subplots(1, 2, figsize=(11, 5.0), layout="constrained")
    ax = axes[0]
    colours: dict[tuple[str, int], str] = {}  # one colour per line (family and m), so that no two lines share one
    sq_rows = [r for r in summary["rows"] if not _secrets(r["family"], r["n"]) and r["method"] == "adam"]
    # One line style per family of subsets, in registry order (the SQ family solid, its control dashed).
    styles = dict(zip(dict.fromkeys(g["family"] for g in summary["growth"].values()),
                      itertools.cycle([("-", "solid"), ("--", "dashed"), (":", "dotted"), ("-.", "dash-dotted")])))
    for r_family, (style, _) in styles.items():
        for g in summary["growth"].values():
            if g["family"] != r_family:
                continue
            rows = [r for r in sq_rows if (r["family"], r["m"]) == (r_family, g["m"])
                    and r["median_examples"] is not None]
            if not rows:  # every run of this line raised: no line, no legend entry (the note below says why)
                continue
            colour = colours.setdefault((r_family, g["m"]), f"C{len(colours) % 10}")
            ax.loglog([r["d"] for r in rows], [r["median_examples"] for r in rows], style, color=colour, marker="o",
                      label=f"{r_family}, m={g['m']}")
            for r in rows:
                if r["budget_out"]:
                    ax.plot([r["d"]], [r["median_examples"]], marker="o", mfc="white", color=colour, ms=9)
    ax.set_xlabel("d")
    ax.set_ylabel("median examples over finished runs (Adam)")
    ax.set_title(", ".join(f"{name} ({word})" for name, (_, word) in styles.items())
                 + ";\nhollow: some run stopped by the budget", fontsize=10)
    if colours:
        _legend_below(ax, ncol=len(styles))
    elif sq_rows:
        _say_nothing_finished(ax, f"learn_hard.png ({', '.join(styles) or 'families of subsets'})", sq_rows)
    ax = axes[1]
    rows = summary["lwr"]
    if rows:
        secret_families = list(dict.fromkeys(r.get("family", "lwr") for r in rows))
        drawn = False
        for family in secret_families:
            mine = [r for r in rows if r.get("family", "lwr") == family]
            ns = [r["n"] for r in mine]
            for method, label in (("adam", "Adam (grow to a perfect predictor)"), ("exhaustive", "exhaustive search")):
                ys = [r.get(method, {}).get("median_seconds") for r in mine]
                pts = [(n, y) for n, y in zip(ns, ys, strict=True) if y]
                if pts:
                    ax.semilogy(*zip(*pts, strict=True), marker="o",
                                label=label if len(secret_families) == 1 else f"{family}: {label}")
                    drawn = True
        ax.set_xlabel(f"n (secret dimension), q = {rows[0]['q']}")
        ax.set_ylabel("seconds")
        ax.set_title(f"families of secrets: {', '.join(secret_families)}", fontsize=10)
        if drawn:
            _legend_below(ax, ncol=1)
        else:
            _say_nothing_finished(ax, f"learn_hard.png ({', '.join(secret_families)})",
                                  [r for r in summary["rows"] if _secrets(r["family"], r["n"])])
    else:
        ax.text(0.5, 0.5, "no runs of a family of secrets (LWE-style) in this study", ha="center", va="center",
                transform=ax.transAxes, fontsize=10, color="0.4")
        ax.set_axis_off()
    path = Path(path)
    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=110))
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- the study


@declare(ds=Each(Integer(3)), ms=Each(Integer(2)), subsets=Integer(), lwr_ns=Each(Integer()), q=Integer(3),
         lwr_secrets=Integer(), start=Integer(), max_examples=Integer(), max_seconds=Real(),
         target=Real(below=1), provable_seeds=Integer(), seed=Seed())
def learn_hard_study(out: PathLike, *, ds: Sequence[int] = DEFAULTS["ds"], ms: Sequence[int] = DEFAULTS["ms"],
                     subsets: int = DEFAULTS["subsets"], lwr_ns: Sequence[int] = DEFAULTS["lwr_ns"],
                     q: int = DEFAULTS["q"], lwr_secrets: int = DEFAULTS["lwr_secrets"],
                     families: Sequence[str] | None = None, methods: Sequence[str] = METHODS,
                     start: int = DEFAULTS["start"], max_examples: int = DEFAULTS["max_examples"],
                     max_seconds: float = DEFAULTS["max_seconds"], target: float = DEFAULTS["target"],
                     provable_seeds: int = DEFAULTS["provable_seeds"], adam_options: dict[str, Any] | None = None,
                     provable_options: dict[str, Any] | None = None, provable_lwr_samples: int | None = None,
                     seed: int = 0, backend: str = "local", workers: int | None = None, scheduler: str | None = None,
                     progress: bool = False, plot: bool = True) -> HardStudyResult:
    """Run the study, write ``out/runs/*.json``, ``summary.json``, ``summary.md`` and ``learn_hard.png``.

    Every parameter is checked before anything runs (its declared rule, then
    :func:`check_study`). The protocol is the module docstring's; a directory
    holds one study, and the same call again resumes it.

    Parameters
    ----------
    out : str or path-like
        The study's directory (created; claimed for this study and these parameters).
    ds : sequence of int
        Token dimensions of the SQ family and its control, each ``>= 3`` (default 8, 12, 16, 24).
    ms : sequence of int
        Heads, each ``2 <= m <= 7`` and at most every ``d`` (default 2, 3, 4).
    subsets : int
        Distinct hidden subsets per SQ cell (:func:`cell_subset`; the control uses the same ones), at most
        the smallest cell's ``C(d − 1, m − 1)`` (default 5).
    lwr_ns : sequence of int
        LWR secret dimensions (default 2..8; ``d = n + 2``).
    q : int
        LWR modulus, ``>= 3`` (default 7).
    lwr_secrets : int
        Secrets per ``n`` (default 1).
    families : sequence of str
        Registered families (:data:`lowerbounds.registry.FAMILIES`; default None: every one).
    methods : sequence of str
        Entries of :data:`METHODS` (default all); ``"exhaustive"`` runs on the LWE-style family only.
    start : int
        Adam's first training-set size (default 1000).
    max_examples : int
        Adam's largest training set plus validation per run (default 32 000).
    max_seconds : float
        Adam's time budget per run, in seconds (default 40).
    target : float
        Relative error of ``F`` on 8192 fresh inputs that counts as learned, below 1 (default 1e-3).
    provable_seeds : int
        The learner runs on the first this many subsets or secrets of each cell (default 1).
    adam_options : dict, optional
        Overrides of ``ADAM_OPTIONS`` (keyword arguments of :func:`learner.baselines.fit_gradient`).
    provable_options : dict, optional
        Overrides of ``PROVABLE_OPTIONS`` (fields of :class:`learner.LearnConfig`).
    provable_lwr_samples : int, optional
        LWR samples the learner is given (default ``PROVABLE_LWR_SAMPLES`` = 2 000 000).
    seed : int
        Entropy of every run's seeds (default 0).
    backend : {"local", "serial", "dask"}
        Where the runs go (:func:`learner.sweep.engine.run_sweep`; default ``"local"``).
    workers : int, optional
        Processes of the local pool (default: all CPUs).
    scheduler : str, optional
        Address of a Dask scheduler (``backend="dask"``).
    progress : bool
        Show a progress bar (default False).
    plot : bool
        Write ``learn_hard.png`` (default True; skipped with a warning without matplotlib).

    Returns
    -------
    HardStudyResult
        The records, the summary, the sweep's counts and the files written.

    Raises
    ------
    ValueError, TypeError
        A parameter that breaks its rule, or another study already in ``out``.
    learner.errors.SweepLocked
        Another process is writing to ``out``.
    learner.errors.SweepInterrupted
        Ctrl-C during the sweep: the finished runs' records are kept, and the same call resumes.

    See Also
    --------
    sq_hard_instance : The SQ family's members.
    lwr_hard_instance : The LWE-style family's members.
    exhaustive_search : The LWR method ``"exhaustive"``.
    simulate_queries : The SQ query count, without learners.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:
    ...     result = learn_hard_study(out, families=["lwr"], methods=["exhaustive"], lwr_ns=[2, 3], q=5,
    ...                               backend="serial", plot=False)
    >>> result.stats, [(row["n"], row["secrets_q_n"], row["exhaustive"]["successes"]) for row in result.summary["lwr"]]
    ({'ran': 2, 'skipped': 0}, [(2, 25.0, 1), (3, 125.0, 1)])
    """
    families = family_names() if families is None else families
    checked = check_study(ds=ds, ms=ms, subsets=subsets, lwr_ns=lwr_ns, q=q, families=families, methods=methods,
                          start=start, max_examples=max_examples, max_seconds=max_seconds, target=target,
                          provable_seeds=provable_seeds, lwr_secrets=lwr_secrets)
    out = check_writable_dir("out", out)
    specs = plan_hard_runs(checked, entropy=seed, adam_options=adam_options, provable_options=provable_options,
                           provable_lwr_samples=provable_lwr_samples)
    parameters = checked | {"seed": seed, "adam_options": ADAM_OPTIONS | (adam_options or {}),
                            "provable_options": PROVABLE_OPTIONS | (provable_options or {})}
    with sweep_lock(out):
        # One study per directory: another study's (a scaling sweep, or learn-hard with other parameters)
        # is refused before anything runs, instead of having its summaries overwritten.
        claim_study(out, "learn-hard-study", HardSpec.RECORD_KIND, parameters, files=("learn_hard.png",))
        log.info("learn-hard: %d runs", len(specs))
        records, stats = run_sweep(specs, out, backend=backend, workers=workers, scheduler=scheduler,
                                   progress=progress)
        summary = summarise_hard(records) | {"parameters": parameters, "versions": versions()}
        files: dict[str, str] = {}
        result = HardStudyResult(records, summary, stats, files)
        files |= write_summary(out, summary, result.table() + "\n")
        if plot:
            try:
                files["plot"] = str(plot_hard(summary, study_path(out, "learn_hard.png")))
            except ImportError:
                log.warning("matplotlib is not installed (the `plot` extra): no learn_hard.png")
        return result
