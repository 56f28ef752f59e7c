"""One run of the studies of run time: the specification, the planted instance, the record (ours).

A :class:`RunSpec` describes one run completely — method, setting ``(m, d, k)``, seed, options, logit
scale — and :func:`run_one` turns it into the one result record type of :mod:`learner.study`'s
``scaling-run`` records (:mod:`learner.sweep.records`), shared by the scaling study
(:mod:`learner.study.scaling`), its grid form, the frontier (:mod:`learner.study.frontier`), and the
peer comparison (:mod:`learner.study.peers`); the sweep engine (:mod:`learner.sweep.engine`) runs them.

Seeding. Run ``s`` of setting ``(m, d, k)`` uses the instance seed
``SeedSequence(entropy, spawn_key=(role, m, d, k, s))`` (``role`` 0 for the
measured runs, 1 for the learning-rate tuning runs), split by ``spawn(3)`` into
the planted layer's seed, the example stream's seed and the method's seed. A
run's randomness is therefore a function of its specification alone — not of
the order in which runs start, the backend or the worker — and every method
sees the same planted layer and an oracle with the same seed.

The instances (logit scale 1, ``d`` from :func:`sound_d`) and the success criterion are ours; the paper
proves the learner's guarantee and reports no experiments.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..io import versions
from ..validation import check_int
from .methods import example_stream, get, method_names
from .records import schema_of

if TYPE_CHECKING:
    from ..layer import AttentionLayer
    from ..oracle import ArraySource, LayerOracle

__all__ = [
    "STUDY_LOGIT_SCALE",
    "METHODS",
    "QUICK_OPTIONS",
    "RunSpec",
    "param_limit",
    "plan_runs",
    "planted_instance",
    "run_one",
    "sound_d",
    "yield_of",
]

log = logging.getLogger(__name__)

RECORD_KIND = "scaling-run"
RECORD_SCHEMA = schema_of(RECORD_KIND)  # 2: the planted layer's logit scale is part of the specification
#: The scaling study's methods: the registered ones that need no optional extra (:mod:`learner.sweep.methods`).
METHODS = method_names(needs_extra=False)
#: Roles of a run: measured, learning-rate tuning, and the race's minimum-examples search ("min", on the measured
#: runs' layers and oracles: the same key as "eval").
ROLES = {"eval": 0, "tune": 1, "min": 0}
#: The studies' family (ours): logit scale 1, k = 2, d from :func:`sound_d`. Not
#: :data:`learner.instances.DEFAULT_LOGIT_SCALE` (3) on purpose: at k = 2 and m >= 3, scale 3 makes rows nearly
#: one-hot (they certify but carry no usable log-ratios) and the yield would collapse for that reason rather
#: than the growth in m being measured. The scaling, frontier and peers studies and the benchmarks use it.
STUDY_LOGIT_SCALE = 1.0
#: The first d and the step that :func:`sound_d` tries (ours: starting at 12 keeps clear of the small d where
#: phase 3 is unreliable; see sound_d).
SOUND_D_START, SOUND_D_STEP = 12, 4
#: ``--quick``: budgets small enough for a smoke test in seconds (not a measurement: the learner runs out
#: of examples and Adam of iterations); each method's from its registry entry.
QUICK_OPTIONS = {name: get(name).quick for name in METHODS}


def param_limit(m: int, d: int, k: int) -> float:
    """The parameter-counting limit ``2md²/(kd)``: examples needed to match the number of unknowns.

    A layer has ``2md²`` parameters (``Θ_i`` and ``W_i``); an example gives ``k·d``
    numbers. No method can identify the layer from fewer examples than this
    (generically), so ``examples_drawn / param_limit`` measures the overhead.

    Parameters
    ----------
    m : int
        Heads.
    d : int
        Token dimension.
    k : int
        Tokens per example.

    Returns
    -------
    float
        ``2md²/(kd) = 2md/k``, the examples whose numbers match the layer's parameters (not rounded).

    Examples
    --------
    >>> param_limit(2, 8, 4)
    8.0
    """
    return 2.0 * m * d * d / (k * d)


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines one run (and nothing that does not).

    Parameters
    ----------
    method : str
        A registered study method (:mod:`learner.sweep.methods`).
    m : int
        Heads of the planted layer.
    d : int
        Token dimension.
    k : int
        Tokens per example.
    seed_index : int
        The run's layer in its setting: run ``s`` of every method meets the same planted layer.
    entropy : int
        The study's seed: the entropy of the run's ``SeedSequence``.
    role : str
        ``"eval"`` (measured, the default), ``"tune"`` (learning-rate tuning, on layers seeded apart) or
        ``"min"`` (the race's minimum-examples search, on the measured runs' layers and oracles).
    distribution : str
        The inputs' distribution, ``"boolean"`` (default) or ``"gaussian"``.
    options : tuple
        The method's keyword arguments as sorted ``(name, value)`` pairs, hashable and order-free
        (:meth:`~learner.sweep.methods.StudyMethod.options_callable`: :class:`~learner.phases.LearnConfig`
        fields for ``"provable"``, :func:`~learner.baselines.numpy_adam.fit_gradient` arguments for ``"adam"``);
        an ``examples`` entry makes the run learn from a fixed set of the oracle's first examples.
    logit_scale : float
        ``‖Θ_i‖_F`` of the planted layer; default :data:`STUDY_LOGIT_SCALE`.
    noise : float
        Label noise of the oracle (``LayerOracle(noise=)``, default 0); not in the seed key, so every σ of a
        study meets the same layers, inputs and noise draws (scaled).
    """

    method: str
    m: int
    d: int
    k: int
    seed_index: int
    entropy: int
    role: str = "eval"
    distribution: str = "boolean"
    options: tuple = ()  # sorted (name, value) pairs: hashable and order-free
    logit_scale: float = STUDY_LOGIT_SCALE
    noise: float = 0.0

    @property
    def spawn_key(self) -> tuple[int, int, int, int, int]:
        """The run's seed key ``(role, m, d, k, seed_index)``, the role as a number (``"eval"`` and ``"min"`` 0,
        ``"tune"`` 1)."""
        return (ROLES[self.role], self.m, self.d, self.k, self.seed_index)

    @property
    def run_id(self) -> str:
        """File-name-safe identifier, unique within a sweep."""
        lr = dict(self.options).get("lr")
        tag = (f"-lr{lr:g}" if self.role == "tune" else f"-n{dict(self.options).get('examples')}" if self.role == "min"
               else "")
        noise = f"-noise{self.noise:g}" if self.noise else ""  # exact runs keep their ids
        return (f"{self.method}-{self.role}{tag}-m{self.m}-d{self.d}-k{self.k}-ls{self.logit_scale:g}"
                f"-{self.distribution}{noise}-s{self.seed_index}")

    def to_dict(self) -> dict[str, Any]:
        """The specification as a JSON-ready dict, as records store it under ``"spec"``.

        Returns
        -------
        dict
            Every field by name (``options`` as a dict, ``noise`` only when it is not 0), plus ``spawn_key``.
        """
        return {"method": self.method, "role": self.role, "m": self.m, "d": self.d, "k": self.k,
                "distribution": self.distribution, "seed_index": self.seed_index, "entropy": self.entropy,
                "spawn_key": list(self.spawn_key), "options": dict(self.options), "logit_scale": self.logit_scale,
                **({"noise": self.noise} if self.noise else {})}

    @classmethod
    def from_dict(cls, rec: Mapping[str, Any]) -> RunSpec:
        """The specification a record's ``"spec"`` describes: the inverse of :meth:`to_dict`.

        Parameters
        ----------
        rec : mapping
            A dict as :meth:`to_dict` returns it (``spawn_key`` is ignored; ``noise`` may be absent).

        Returns
        -------
        RunSpec
            The specification.
        """
        return cls(rec["method"], rec["m"], rec["d"], rec["k"], rec["seed_index"], rec["entropy"],
                   role=rec["role"], distribution=rec["distribution"], options=tuple(sorted(rec["options"].items())),
                   logit_scale=float(rec["logit_scale"]), noise=float(rec.get("noise", 0.0)))

    # -- what the sweep engine (learner.sweep.engine) needs ----------------------------------------------------
    RECORD_KIND = RECORD_KIND
    RECORD_SCHEMA = RECORD_SCHEMA

    @property
    def example_stream(self) -> int:
        """The stream of examples this run's record is drawn from: its method's (the sweep re-runs a record of
        another)."""
        return example_stream(self.method)

    def run(self, learn_workers: int | None = None) -> dict[str, Any]:
        """Run this specification: :func:`run_one`.

        Parameters
        ----------
        learn_workers : int or None
            Local processes of the learner's own pool (None: none).

        Returns
        -------
        dict
            The run's JSON-ready record.
        """
        return run_one(self, learn_workers)

    def failure_record(self, message: str, tb: str, timings: Mapping[str, float],
                       where: Mapping[str, Any]) -> dict[str, Any]:
        """The record of this run when it raised, or its worker died: no result, the reason and the traceback.

        Parameters
        ----------
        message : str
            Why it failed, in one line.
        tb : str
            The traceback, as text.
        timings : mapping
            The durations measured before it failed, in seconds (may be empty).
        where : mapping
            Where it ran (``host``, ``pid``; may be empty).

        Returns
        -------
        dict
            A record with ``"outcome": "error"`` and ``"status": "error"``.
        """
        return _failure_record(self, message, tb, timings, where)

    @staticmethod
    def record_rules(rec: Any) -> dict[str, str]:
        """What the summaries read of a record (:func:`learner.sweep.records.record_problem`); a failing record is
        re-run.

        Parameters
        ----------
        rec : object
            The record read back (any JSON value: the rules of a finished run's record are stricter).

        Returns
        -------
        dict
            ``{dotted field: check}``, checks of :data:`learner.sweep.records.FIELD_CHECKS` or ``"timings"``.
        """
        rules = {"run_id": "str", "spec": "dict", **_SPEC_RULES, "outcome": "str", "success": "bool", "status": "str",
                 "message": "str", "errors": "dict", "timings": "timings", "diagnostics": "dict?"}
        if isinstance(rec, dict) and rec.get("outcome") == "finished":
            rules |= {"examples_drawn": "count", "examples_ratio": "nonneg", "timings.total": "seconds",
                      "errors.relative_error": "nonneg?", "errors.param_error": "nonneg?",
                      "noise": "nonneg?", "expected_param_error": "nonneg?"} | _DIAGNOSTICS_RULES
        return rules


#: The types of a record's specification (:meth:`RunSpec.to_dict`), for a reader that rebuilds it.
_SPEC_RULES = {"spec.method": "str", "spec.role": "str", "spec.m": "count", "spec.d": "count", "spec.k": "count",
               "spec.distribution": "str", "spec.seed_index": "count", "spec.entropy": "count",
               "spec.options": "dict", "spec.logit_scale": "nonneg", "spec.noise": "nonneg?"}
_P4 = "diagnostics.4_refined_sculpt"
#: What the summaries read of a finished run's diagnostics (the learner's phase 4, a baseline's fit), parents
#: before their fields so that a value of the wrong type is named before anything walks into it.
_DIAGNOSTICS_RULES = {
    _P4: "dict?", f"{_P4}.tol": "nonneg?", f"{_P4}.certified_per_1000_examples": "nonneg?",
    f"{_P4}.constraints_per_1000_examples": "nonneg?", f"{_P4}.forecast": "dict?",
    f"{_P4}.forecast.predicted_examples": "nonneg?",
    "diagnostics.fit": "dict?", "diagnostics.fit.val_relative_error": "nonneg?",
    "diagnostics.fit.seconds_to": "durations?",
    # the version of each method's optional extra that the peers summary joins
    **{f"diagnostics.fit.{get(name).extra}_version": "str?" for name in method_names() if get(name).extra},
}


def planted_instance(spec: RunSpec) -> tuple[AttentionLayer, LayerOracle, np.random.SeedSequence]:
    """The planted layer, the oracle of its examples and the method's seed of a run.

    ``SeedSequence(spec.entropy, spawn_key=spec.spawn_key).spawn(3)`` seeds, in
    order, :func:`~learner.instances.random_layer` (at ``spec.logit_scale``), the
    :class:`~learner.oracle.LayerOracle` and the method. Neither the method nor the
    input distribution is part of the key, so every method of a sweep, and a study
    of the same cells with the other distribution, meets the same planted layer.

    Parameters
    ----------
    spec : RunSpec
        The run.

    Returns
    -------
    truth : AttentionLayer
        The planted layer (checked against the paper's conditions, as :func:`~learner.instances.random_layer`
        does by default).
    oracle : LayerOracle
        Its examples, in ``spec.distribution``, with label noise ``spec.noise``.
    method_seed : numpy.random.SeedSequence
        The method's own seed.

    Examples
    --------
    >>> a = RunSpec("provable", 2, 12, 2, seed_index=0, entropy=0)
    >>> b = RunSpec("adam", 2, 12, 2, seed_index=0, entropy=0)
    >>> import numpy as np
    >>> bool(np.array_equal(planted_instance(a)[0].thetas, planted_instance(b)[0].thetas))
    True
    """
    from ..instances import random_layer
    from ..oracle import LayerOracle

    layer_seed, oracle_seed, method_seed = np.random.SeedSequence(spec.entropy, spawn_key=spec.spawn_key).spawn(3)
    truth = random_layer(spec.m, spec.d, logit_scale=spec.logit_scale, rng=layer_seed)
    return truth, LayerOracle(truth, spec.k, distribution=spec.distribution, noise=spec.noise,
                              rng=oracle_seed), method_seed


def run_one(spec: RunSpec | dict[str, Any], learn_workers: int | None = None) -> dict[str, Any]:
    """Run one specification (a :class:`RunSpec` or its dict) and return its JSON-ready record.

    ``learn_workers`` is the learner's own local pool (:func:`learner.learn`'s
    ``workers``); it changes where the batches run, never the record
    (``execution`` says where they ran).

    Never raises for a failure of the run itself: an exception becomes a
    record with ``"outcome": "error"`` and its traceback, so a sweep goes on.

    Parameters
    ----------
    spec : RunSpec or dict
        The run, or its :meth:`RunSpec.to_dict`.
    learn_workers : int or None
        Local processes of the learner's own pool (None: none).

    Returns
    -------
    dict
        The ``scaling-run`` record: the specification, ``outcome`` (``"finished"`` or ``"error"``), ``success``,
        ``status``, ``message``, ``examples_drawn`` and ``examples_ratio`` (over :func:`param_limit`), ``errors``,
        ``diagnostics``, ``timings``, ``where``, ``execution``, and the learner's ``noise`` and
        ``expected_param_error`` when it made them.
    """
    if isinstance(spec, dict):
        spec = RunSpec.from_dict(spec)
    t0 = time.perf_counter()
    limit = param_limit(spec.m, spec.d, spec.k)
    where = {"host": socket.gethostname(), "pid": os.getpid()}
    try:
        method = get(spec.method)
        oracle: LayerOracle | ArraySource  # the planted layer's oracle, or a fixed set of its first examples
        truth, oracle, method_seed = planted_instance(spec)
        options = dict(spec.options)
        fixed = options.pop("examples", None)
        if fixed is not None:
            # A fixed set: the oracle's first `fixed` examples, the same for every method (the race's search).
            from ..oracle import ArraySource

            X, Y = oracle.draw(check_int("examples", fixed))
            oracle = ArraySource(X, Y, distribution=spec.distribution)
            if method.role == "baseline":  # the baselines train on the first 4/5 and validate on the rest
                options |= {"n_val": max(1, fixed // 5), "n_train": fixed - max(1, fixed // 5)}
        result = method.run(oracle, m=spec.m, truth=truth, rng=method_seed, logit_scale=spec.logit_scale,
                            learn_workers=learn_workers, options=options)
    except Exception as exc:  # noqa: BLE001 — a failed run is recorded, the sweep goes on
        log.warning("run %s failed: %s: %s", spec.run_id, type(exc).__name__, exc)
        return _failure_record(spec, f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                               {"total": time.perf_counter() - t0}, where)
    full = result.to_dict()
    return _record_head(spec) | {
        "outcome": "finished", "success": bool(result.success), "status": result.status,
        "message": result.message, "examples_drawn": int(result.examples_drawn),
        "examples_ratio": result.examples_drawn / limit, "errors": full["errors"],
        "diagnostics": full["diagnostics"], "timings": full["timings"], "where": where,
        "execution": full.get("execution", {}),
        # the learner's noise estimate and expected parameter error (learner.phases.noise), when it made them
        **{key: full[key] for key in ("noise", "expected_param_error") if full.get(key) is not None}}


def _record_head(spec):
    return {"schema_version": RECORD_SCHEMA, "kind": RECORD_KIND, "run_id": spec.run_id, "spec": spec.to_dict(),
            "example_stream": spec.example_stream, "versions": versions(),
            "param_limit": param_limit(spec.m, spec.d, spec.k)}


def _failure_record(spec, message, tb, timings, where):
    """The record of a run that raised (or whose worker died): no result, the reason and traceback."""
    return _record_head(spec) | {
        "outcome": "error", "success": False, "status": "error", "message": message, "traceback": tb,
        "examples_drawn": None, "examples_ratio": None, "errors": {}, "diagnostics": {}, "timings": timings,
        "where": where}


def plan_runs(*, ms: Sequence[int], d: int, k: int, seeds: int, methods: Iterable[str], entropy: int,
              role: str = "eval", distribution: str = "boolean",
              options: Mapping[str, Mapping[str, Any] | None] | None = None, logit_scale: float = STUDY_LOGIT_SCALE,
              noise: float = 0.0) -> list[RunSpec]:
    """The specifications of ``methods × ms × seeds``, method-major, then m, then seed.

    Parameters
    ----------
    ms : sequence of int
        Numbers of heads.
    d : int
        Token dimension.
    k : int
        Tokens per example.
    seeds : int
        Planted layers per method and m: seed indices ``0 .. seeds − 1``.
    methods : iterable of str
        Registered study methods.
    entropy : int
        The study's seed.
    role : str
        ``"eval"`` (default), ``"tune"`` or ``"min"`` (see :class:`RunSpec`).
    distribution : str
        The inputs' distribution (default ``"boolean"``).
    options : mapping or None
        ``{method: keyword arguments}``; a method not named (or None) gets none.
    logit_scale : float
        ``‖Θ_i‖_F`` of the planted layers; default :data:`STUDY_LOGIT_SCALE`.
    noise : float
        Label noise of the oracles (default 0).

    Returns
    -------
    list of RunSpec
        One specification per method, m and seed.

    Examples
    --------
    >>> [s.run_id for s in plan_runs(ms=[1, 2], d=12, k=2, seeds=1, methods=["provable"], entropy=0)]
    ['provable-eval-m1-d12-k2-ls1-boolean-s0', 'provable-eval-m2-d12-k2-ls1-boolean-s0']
    """
    options = options or {}
    return [RunSpec(method, m, d, k, s, entropy, role=role, distribution=distribution,
                    options=tuple(sorted((options.get(method) or {}).items())), logit_scale=float(logit_scale),
                    noise=float(noise))
            for method in methods for m in ms for s in range(seeds)]


def sound_d(m: int, k: int, *, distribution: str = "boolean", start: int = SOUND_D_START, step: int = SOUND_D_STEP,
            limit: int = 64) -> int:
    """The study's token dimension for ``(m, k)``: the smallest ``d`` in ``start, start + step, …`` that
    :func:`learner.assumptions.check_setting` calls sound (ours: 12 for m <= 4 at k = 2, 16 for m = 5).

    Starting at 12 rather than at the smallest sound d keeps clear of the small-d instances where the
    learner's phase 3 is unreliable (e.g. (1, 6, 2) and (2, 8, 2) fail on some seeds).

    Parameters
    ----------
    m : int
        Heads (``>= 1``).
    k : int
        Tokens per example (``>= 2``).
    distribution : str
        The inputs' distribution the setting is checked for (default ``"boolean"``).
    start : int
        The first ``d`` tried (default ``SOUND_D_START``, 12); never below ``k + 1``.
    step : int
        The step between the ``d`` tried (default ``SOUND_D_STEP``, 4).
    limit : int
        The largest ``d`` tried (default 64); beyond it, a ValueError.

    Returns
    -------
    int
        The smallest sound ``d`` tried.

    Examples
    --------
    >>> sound_d(2, 2), sound_d(5, 2)
    (12, 16)
    """
    from ..assumptions import check_setting

    m, k = check_int("m", m), check_int("k", k, minimum=2)
    for d in range(max(start, k + 1), limit + 1, step):
        if check_setting(m, d, k, distribution=distribution).ok:
            return d
    raise ValueError(f"no sound d <= {limit} for m={m}, k={k} ({distribution} inputs); give `d` explicitly.")


def yield_of(record: Mapping[str, Any]) -> float | None:
    """The certification yield of a learner run: phase 4's constraints per 1000 examples (its last round).

    Every constraint the examples drawn certified counts (``certified_per_1000_examples``): with the data-driven
    budgets phase 4 hands phase 5 only a prefix of them (``constraints``), while its examples are whole
    batches. Records of the fixed budgets have only ``constraints_per_1000_examples``, the same figure there.
    None for other methods and for runs that did not reach phase 4.

    Parameters
    ----------
    record : mapping
        A run record (its ``diagnostics["4_refined_sculpt"]`` is read).

    Returns
    -------
    float or None
        Constraints certified per 1000 examples in phase 4's last round, or None.
    """
    p4 = (record.get("diagnostics") or {}).get("4_refined_sculpt")
    if not p4:
        return None
    return p4.get("certified_per_1000_examples", p4.get("constraints_per_1000_examples"))
