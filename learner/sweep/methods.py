"""The registry of study methods: what a run of a study can learn a planted layer with (ours).

Each method is one :class:`StudyMethod` entry in :data:`METHODS`: its name, how a run calls it (``runner``), where its
options are declared (the function whose keyword arguments and declared rules they are), its role in the records
(the paper's learner, or a baseline), the example stream its records are drawn from, its ``--quick`` budgets, the
optional extra it needs, and whether the studies tune its learning rate. The studies (:mod:`learner.sweep.runs`,
:mod:`learner.study.peers`, the race), the sweep engine and the command lines' choices read this registry, so a new
method is one entry here (:func:`register` adds one at run time, as the tests do with a toy method). The list
below is written from the registry when the module loads.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..result import LearnResult

__all__ = ["METHODS", "ROLES", "StudyMethod", "check_methods", "example_stream", "get", "method_names",
           "present_names", "quick_options", "register"]

#: The roles a method's records can have: the paper's learner (draws what it needs from the oracle; on a fixed set
#: it uses every example) and a baseline (trains on a set it is given: on a fixed set, the first 4/5, validating on
#: the rest).
ROLES = ("learner", "baseline")


@dataclass(frozen=True)
class StudyMethod:
    """One method of the studies.

    The comparisons run by default the methods present (:func:`present_names`).

    Parameters
    ----------
    name : str
        The method's name in the records and on the command line (``"provable"``, ``"adam"``, ...).
    summary : str
        What the method is, in one line (listed in this module's docstring).
    runner : callable
        ``runner(oracle, *, m, truth, rng, logit_scale, learn_workers, options)``: learns ``m`` heads from
        ``oracle`` and returns a :class:`~learner.result.LearnResult`.
    options_of : str
        ``"module:name"`` of the callable whose keyword arguments are the method's options (the run
        specification's ``options``): its keyword defaults are :meth:`defaults`, its declared rules
        (:func:`learner.validation.declare`) :meth:`rules`. A ValueError without the colon.
    role : str
        One of :data:`ROLES` (a ValueError otherwise).
    example_stream : int
        The stream of examples its records are drawn from (default 1); the sweep re-runs records of another
        stream.
    quick : mapping
        Its ``--quick`` options (tiny budgets).
    study_options : mapping
        Options every study gives it (the one-thread rule of the comparisons).
    extra : str or None
        The optional extra it needs (``"torch"``), or None.
    tuned_lr : bool
        Whether the studies tune its ``lr`` per setting (default False).
    fixed_set : callable or None
        ``fixed_set(method, options, size)``: its options on a fixed set of ``size`` examples (the race's
        search), or None for the options as they are.
    check : callable or None
        ``check(options)``: checks its options before a study runs anything (raising TypeError/ValueError), or
        None.
    requires : callable or None
        ``requires()``: raises an ImportError saying how to install its extra, or None.
    present : callable or None
        ``present()``: whether this machine can run it at all (a GPU recipe without a GPU cannot), or None:
        always.
    """

    name: str
    summary: str
    runner: Callable[..., LearnResult]
    options_of: str
    role: str
    example_stream: int = 1
    quick: Mapping[str, Any] = field(default_factory=dict)
    study_options: Mapping[str, Any] = field(default_factory=dict)
    extra: str | None = None
    tuned_lr: bool = False
    fixed_set: Callable[[StudyMethod, dict, int], dict] | None = None
    check: Callable[[dict], object] | None = None
    requires: Callable[[], object] | None = None
    present: Callable[[], bool] | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"`role` must be one of {ROLES}; got role={self.role!r}.")
        if ":" not in self.options_of:
            raise ValueError(f"`options_of` must be 'module:name'; got options_of={self.options_of!r}.")

    def options_callable(self) -> Callable[..., Any]:
        """The callable whose keyword arguments are this method's options (imported on use: torch is optional).

        Returns
        -------
        callable
            The object ``options_of`` names (a function, or a class such as
            :class:`~learner.phases.LearnConfig`).
        """
        module, _, name = self.options_of.partition(":")
        return getattr(importlib.import_module(module), name)

    def defaults(self) -> dict[str, Any]:
        """The keyword defaults of :meth:`options_callable` (``n_train``, ``n_val``, ``epochs``, ``batch``, ...).

        Returns
        -------
        dict
            ``{option: default}`` for every parameter of :meth:`options_callable` that has a default.
        """
        target = self.options_callable()
        return {name: p.default for name, p in inspect.signature(target).parameters.items()
                if p.default is not inspect.Parameter.empty}

    def rules(self) -> dict[str, Any]:
        """The declared validation rules of this method's options, by option name.

        Returns
        -------
        dict
            ``{option: rule}`` as :func:`learner.validation.declare` recorded them on :meth:`options_callable`
            (on a class, on its ``__init__``); empty when none were declared.
        """
        declared: Any = self.options_callable()
        if isinstance(declared, type):  # a class: the rules its __init__ declares
            declared = declared.__init__  # type: ignore[misc]  # the class's own, not an instance's
        return dict(getattr(declared, "rules", {}))

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Check ``options`` before anything runs (the ``check`` rule; nothing when it has none).

        Parameters
        ----------
        options : mapping
            The method's options, as a run specification would give them.
        """
        if self.check is not None:
            self.check(dict(options))

    def require(self) -> None:
        """Raise an ImportError saying how to install this method's extra when it is missing (nothing when it
        needs none)."""
        if self.requires is not None:
            self.requires()

    def available(self) -> bool:
        """Whether this machine can run the method (its ``present`` rule; True when it has none).

        Returns
        -------
        bool
            True when the method has no ``present`` rule or the rule says it is present.
        """
        return self.present is None or bool(self.present())

    def on_fixed_set(self, options: Mapping[str, Any], size: int) -> dict[str, Any]:
        """This method's ``options`` on a fixed set of ``size`` examples.

        Parameters
        ----------
        options : mapping
            The method's options on its measured runs.
        size : int
            Examples in the fixed set.

        Returns
        -------
        dict
            A copy of ``options`` when the method has no ``fixed_set`` rule, else what the rule returns.
        """
        options = dict(options)
        return options if self.fixed_set is None else self.fixed_set(self, options, size)

    def run(self, oracle: Any, *, m: int, truth: Any, rng: Any, logit_scale: float | None = None,
            learn_workers: Any = None, options: Mapping[str, Any] | None = None) -> LearnResult:
        """Learn ``m`` heads from ``oracle`` with this method's ``options``: calls ``runner``.

        Parameters
        ----------
        oracle : LayerOracle or ArraySource
            The examples' source (a fixed set for the race's search).
        m : int
            Heads to learn.
        truth : AttentionLayer or None
            The planted layer, for the result's errors (not used to learn).
        rng : None, int, SeedSequence or Generator
            The run's own randomness.
        logit_scale : float or None
            The planted layer's logit scale, passed on (the learner checks it against its measured reach in
            sharpness; the baselines ignore it); None: not given.
        learn_workers : int or None
            Local processes of the run's own pool (the learner's ``workers``); the baselines ignore it.
        options : mapping or None
            The method's options (None: none).

        Returns
        -------
        LearnResult
            The run's result.
        """
        return self.runner(oracle, m=m, truth=truth, rng=rng, logit_scale=logit_scale, learn_workers=learn_workers,
                           options=dict(options or {}))


def _run_provable(oracle, *, m, truth, rng, logit_scale, learn_workers, options):
    from ..learn import learn
    from ..phases import LearnConfig

    return learn(oracle, m=m, config=LearnConfig(**options), truth=truth, rng=rng, logit_scale=logit_scale,
                 progress=False,  # workers share the terminal with the sweep's own bar
                 workers=learn_workers)


def _run_adam(oracle, *, m, truth, rng, logit_scale, learn_workers, options):
    from ..baselines.numpy_adam import fit_gradient

    return fit_gradient(oracle, m=m, optimizer="adam", truth=truth, rng=rng, **options)


def _run_torch_adam(oracle, *, m, truth, rng, logit_scale, learn_workers, options):
    from ..baselines.torch_adam import fit_torch

    return fit_torch(oracle, m=m, truth=truth, rng=rng, **options)


def _check_config(options):
    from ..phases import LearnConfig

    LearnConfig(**options)


def _require_torch():
    from ..torch_interop import require_torch

    require_torch()


def _cuda_present():
    """Whether torch is installed and sees a CUDA device (torch is imported only when it is installed)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def _require_cuda():
    from ..arrays import torch_device

    torch_device("cuda")  # a ValueError saying torch sees no CUDA device


def _torch_fixed_set(method, options, size):
    """torch Adam on a fixed set of ``size`` examples (ours): its budget is counted in epochs, so a smaller set would
    also mean fewer steps; its ``epochs`` are raised so that its steps per restart, ``epochs · ⌊n_train / batch⌋``
    (the cosine schedule's length), are at least those of its measured runs, and it validates every as many steps
    as they did (``eval_every``: their epoch, 78 steps by default), not every one of its shorter epochs."""
    given = method.defaults() | options
    batch, epochs, measured_train = given["batch"], int(given["epochs"]), int(given["n_train"])
    measured_per_epoch = 1 if batch is None else measured_train // min(int(batch), measured_train)  # None: full batch
    n_train = size - max(1, size // 5)
    if n_train < 1:
        return options
    per_epoch = 1 if batch is None else n_train // min(int(batch), n_train)
    return options | {"epochs": max(epochs, -(-epochs * measured_per_epoch // per_epoch)),
                      "eval_every": int(given.get("eval_every") or measured_per_epoch)}


#: Every method computes with one thread in the comparisons (ours; numpy's BLAS in the sweep's workers, torch's
#: intra-op threads), two runs at a time on two cores: like with like.
TORCH_THREADS = 1

#: The registered methods by name, in the order the studies list them.
METHODS: dict[str, StudyMethod] = {}


def register(method: StudyMethod) -> StudyMethod:
    """Add ``method`` to :data:`METHODS` (a ValueError if its name is taken).

    Parameters
    ----------
    method : StudyMethod
        The entry; a TypeError for anything else.

    Returns
    -------
    StudyMethod
        ``method`` itself (so that ``register(StudyMethod(...))`` can be kept).
    """
    if not isinstance(method, StudyMethod):
        raise TypeError(f"`method` must be a StudyMethod; got {type(method).__name__}.")
    if method.name in METHODS:
        raise ValueError(f"a study method named {method.name!r} is registered already.")
    METHODS[method.name] = method
    return method


def get(name: str) -> StudyMethod:
    """The registered method called ``name`` (a ValueError names the registered ones).

    Parameters
    ----------
    name : str
        A key of :data:`METHODS`.

    Returns
    -------
    StudyMethod
        Its entry.

    Examples
    --------
    >>> get("adam").role, get("provable").example_stream
    ('baseline', 2)
    """
    try:
        return METHODS[name]
    except (KeyError, TypeError):
        raise ValueError(f"`method` must be one of {tuple(METHODS)}; got method={name!r}.") from None


def method_names(*, role: str | None = None, tuned_lr: bool | None = None, needs_extra: bool | None = None
                 ) -> tuple[str, ...]:
    """The registered methods' names, in registry order, optionally filtered.

    Parameters
    ----------
    role : str or None
        Only the methods of this role (one of :data:`ROLES`); None: every role.
    tuned_lr : bool or None
        Only those whose learning rate the studies tune (True) or do not tune (False); None: both.
    needs_extra : bool or None
        Only those that need (True) or do not need (False) an optional extra; None: both.

    Returns
    -------
    tuple of str
        The names that pass every filter given.

    Examples
    --------
    >>> "provable" in method_names(role="learner"), "provable" in method_names(tuned_lr=True)
    (True, False)
    """
    return tuple(name for name, mt in METHODS.items()
                 if (role is None or mt.role == role) and (tuned_lr is None or mt.tuned_lr is tuned_lr)
                 and (needs_extra is None or (mt.extra is not None) is needs_extra))


def present_names() -> tuple[str, ...]:
    """The registered methods this machine can run (:meth:`StudyMethod.available`): what the comparisons run by default.

    Returns
    -------
    tuple of str
        Their names, in registry order.
    """
    return tuple(name for name, mt in METHODS.items() if mt.available())


def check_methods(name: str, values: Any) -> list[str]:
    """``values`` as a list of registered method names, distinct and at least one; an error naming ``name`` otherwise.

    Parameters
    ----------
    name : str
        The parameter's name, for the message (``"methods"``, ``"search_methods"``).
    values : sequence of str
        The names given; a single string is a TypeError, an unknown, repeated or missing name a ValueError.

    Returns
    -------
    list of str
        ``values`` as a list, in the order given.
    """
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise TypeError(f"`{name}` must be a sequence of method names; got {name}={values!r}.")
    values = list(values)
    unknown = [v for v in values if v not in METHODS]
    if unknown or not values or len(set(values)) != len(values):
        why = (f"unknown {unknown[0]!r}" if unknown else "none given" if not values else "a method repeated")
        raise ValueError(f"`{name}` must be distinct registered study methods, at least one, of {tuple(METHODS)}; "
                         f"got {name}={values!r} ({why}).")
    return values


def quick_options() -> dict[str, dict[str, Any]]:
    """Every registered method's ``--quick`` options, by name.

    Returns
    -------
    dict
        ``{name: options}``, each a fresh dict.
    """
    return {name: dict(mt.quick) for name, mt in METHODS.items()}


def example_stream(name: str, default: int = 1) -> int:
    """The example stream of method ``name``'s records.

    Parameters
    ----------
    name : str
        A method's name.
    default : int
        The stream of a name that is not a study method (the hard families' exhaustive search); default 1.

    Returns
    -------
    int
        The method's ``example_stream``, or ``default``.
    """
    return METHODS[name].example_stream if name in METHODS else default


register(StudyMethod(
    "provable", "the paper's six-phase learner (learner.learn)", _run_provable, "learner.phases:LearnConfig",
    role="learner", check=_check_config,
    # The learner's phases 1–4 draw per-batch seeded streams (learner.parallel): stream 2. Records of stream 1
    # (sequential draws) do not reproduce and are re-run on resume.
    example_stream=2,
    # --quick: budgets small enough for a smoke test in seconds (not a measurement: the learner runs out of examples).
    quick={"n_crude": 5000, "crude_max_examples": 20000, "max_examples": 20000, "n_refine": 5000, "n_search": 500,
           "max_nfev": 20},
))
register(StudyMethod(
    "adam", "numpy Adam on the squared loss, full batch, restarts (learner.baselines.fit_gradient)", _run_adam,
    "learner.baselines.numpy_adam:fit_gradient", role="baseline", tuned_lr=True,
    quick={"max_iter": 30, "n_train": 300, "n_val": 100, "restarts": 1},
))
register(StudyMethod(
    "torch-adam", "PyTorch Adam, mini-batches, cosine schedule (learner.baselines.fit_torch)",
    _run_torch_adam, "learner.baselines.torch_adam:fit_torch", role="baseline", tuned_lr=True, extra="torch",
    quick={"epochs": 3, "batch": 64, "n_train": 300, "n_val": 100, "restarts": 1},
    study_options={"threads": TORCH_THREADS}, fixed_set=_torch_fixed_set, requires=_require_torch,
))
register(StudyMethod(
    "torch-adam-gpu", "PyTorch Adam, full batch, on the GPU (learner.baselines.fit_torch(device='cuda', batch=None))",
    _run_torch_adam, "learner.baselines.torch_adam:fit_torch", role="baseline", tuned_lr=True, extra="torch",
    quick={"epochs": 3, "n_train": 300, "n_val": 100, "restarts": 1},
    # What a researcher with a GPU runs (ours): every training example at every step, on the device.
    study_options={"device": "cuda", "batch": None}, fixed_set=_torch_fixed_set, requires=_require_cuda,
    present=_cuda_present,
))


def _listing() -> str:
    """The registered methods as a reStructuredText list (the end of this module's docstring)."""
    return "\n".join(f"- ``{mt.name}`` ({mt.role}{'; extra ``' + mt.extra + '``' if mt.extra else ''}) — {mt.summary}"
                     for mt in METHODS.values())


__doc__ = f"{__doc__}\nThe registered methods:\n\n{_listing()}\n"
