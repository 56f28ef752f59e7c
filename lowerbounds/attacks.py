"""Attacks on the LWE-style family, with their costs against ``n`` (and hence ``m``).

Every attack sees only :class:`~lowerbounds.PublicSamples` (or the attention
samples the reduction makes from them); the secret is used afterwards, to
score. Implementations ours; the attacks are the standard ones:

* :func:`exhaustive_search` — every ``w ∈ Z_q^n``; keeps the secrets that
  reproduce every label. Cost ``q^n`` times a few samples.
* :func:`linear_algebra_attack` — Gaussian elimination mod ``q`` on
  ``⟨w, b⟩ ≡ y``. On the *unrounded* variant (labels ``y mod q``) it recovers ``w``
  from about ``n`` samples in ``O(n^3)``; on rounded labels the same solve
  (each label replaced by its interval's centre) fails: the rounding is what
  is assumed hard.
* :func:`~lowerbounds.lattice.lattice_attack` — lattice reduction (fpylll,
  optional extra), and :func:`~lowerbounds.lattice.lwr_cost` for parameters
  beyond reach.
* :func:`attention_attack` — our six-phase learner (:func:`learner.learn`) or
  the gradient baseline (:func:`learner.baselines.fit_gradient`) fed the attention
  samples of the reduction; the learned layer becomes an LWR predictor.

Many secrets share one label function on ``{0,1}^n`` when ``n`` is small
(at ``n = 3, q = 7``: 343 secrets, 80 functions), so "recovering the secret"
means recovering its class: an attack succeeds when every secret it keeps has
the same labels on all ``2^n`` public vectors (checked by enumeration for
``n <= 16``; beyond, when it keeps exactly one).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from learner import LearnConfig
from learner.hints import SeedLike
from learner.validation import Each, Integer, check_int, check_memory, check_rng, declare

from .lwr import LWRInstance, LWRParams, PublicSamples, attention_samples, lwr_predictor, predictor_accuracy, sample_lwr

if TYPE_CHECKING:
    from .lattice import LatticeOutcome

__all__ = [
    "AttackOutcome",
    "attention_attack",
    "equivalent_secrets",
    "exhaustive_search",
    "fit_growth",
    "linear_algebra_attack",
    "time_attacks", "MAX_SECRETS"]

#: Largest ``n`` at which secrets are compared on all ``2^n`` public vectors (ours, not tuned: a guard on time
#: and memory).
MAX_CLASS_N = 16
#: Samples of the first filtering pass of the exhaustive search (ours: a wrong
#: secret survives one sample with probability about 1/2, so 24 leave ~q^n 2^{-24}).
FILTER_SAMPLES = 24
ATTENTION_METHODS = ("provable", "gradient")


@dataclass(frozen=True)
class AttackOutcome:
    """What an attack produced.

    Parameters
    ----------
    attack : str
        Which attack: ``"exhaustive"``, ``"linear"``, ``"lattice"`` or ``"attention-<method>"``.
    n, q : int
        Secret dimension and modulus of the samples attacked.
    success : bool
        Whether the attack pinned down the label function (see the module docstring).
    secret : tuple of int or None
        A secret reproducing every given label; ``None`` if none was found (or the attack does not give one).
    candidates : int
        How many secrets the attack kept.
    samples : int
        Samples the attack used.
    seconds : float
        Wall time of the attack.
    cost : float
        The attack's own work measure (secrets tried, row operations, embedding dimension, examples drawn).
    message : str
        One line saying what happened.
    extra : dict
        Attack-specific numbers (``classes``, ``rounded``, ``accuracy``, …), merged into :meth:`to_dict`.

    See Also
    --------
    exhaustive_search : Every secret in ``Z_q^n``.
    linear_algebra_attack : Gaussian elimination mod ``q``.
    attention_attack : A learner fed the reduction's attention samples.
    time_attacks : Runs attacks against ``n`` and fits their growth.

    Examples
    --------
    >>> from lowerbounds import LWRParams, sample_lwr
    >>> draw = sample_lwr(LWRParams(4, 5), 200, rng=0)
    >>> out = exhaustive_search(draw.public)
    >>> out.attack, out.success, out.candidates, out.cost, out.recovered(draw.secret)
    ('exhaustive', True, 1, 625.0, True)
    """

    attack: str
    n: int
    q: int
    success: bool
    secret: tuple | None
    candidates: int
    samples: int
    seconds: float
    cost: float
    message: str
    extra: dict = field(default_factory=dict)

    def recovered(self, secret: ArrayLike) -> bool:
        """Whether the outcome's secret is equivalent to ``secret`` (same labels on every public vector).

        Parameters
        ----------
        secret : array_like of int
            The planted secret, length ``n``.

        Returns
        -------
        bool
            :func:`equivalent_secrets` of the two; False when the outcome has no secret.
        """
        if self.secret is None:
            return False
        return equivalent_secrets(self.secret, secret, self.q)

    def to_dict(self) -> dict[str, Any]:
        """The outcome as a JSON-ready dict.

        Returns
        -------
        dict
            Every field but ``extra`` (``secret`` as a list or ``None``), with ``extra``'s entries merged in.
        """
        return {"attack": self.attack, "n": self.n, "q": self.q, "success": self.success,
                "secret": None if self.secret is None else list(self.secret), "candidates": self.candidates,
                "samples": self.samples, "seconds": self.seconds, "cost": self.cost, "message": self.message,
                **self.extra}


def _all_vectors(n):
    return np.array(list(product((0, 1), repeat=n)), dtype=np.int64)


def _integer_vector(name: str, value: ArrayLike) -> np.ndarray:
    """``value`` as int64 entries; an entry that is not an integer is refused (truncated, it would be another
    secret)."""
    arr = np.asarray(value)
    whole = np.issubdtype(arr.dtype, np.integer) or (
        np.issubdtype(arr.dtype, np.floating) and bool(np.all(np.isfinite(arr) & (arr == np.round(arr)))))
    if arr.dtype == np.bool_ or not whole:
        raise TypeError(f"`{name}` must hold integers; got {name}={value!r}.")
    return arr.astype(np.int64)


def equivalent_secrets(a: ArrayLike, b: ArrayLike, q: int) -> bool:
    """Whether secrets ``a`` and ``b`` give the same rounded label on every ``b ∈ {0,1}^n`` (``n <= 16``).

    Parameters
    ----------
    a, b : array_like of int
        Two secrets of one length ``n`` (integer entries; compared mod ``q``).
    q : int
        Modulus, ``>= 3``.

    Returns
    -------
    bool
        Same labels on all ``2^n`` public vectors; beyond ``n = 16`` (``MAX_CLASS_N``), whether ``a ≡ b mod q``.

    Raises
    ------
    TypeError
        A non-integer entry.
    ValueError
        Secrets that are not vectors of one length.

    See Also
    --------
    AttackOutcome.recovered : Compares an attack's secret with the planted one this way.
    LWRParams.label : The rounded label compared.

    Examples
    --------
    >>> equivalent_secrets((0, 1, 2), (0, 2, 1), 7)  # every sum stays below q/2: both label everything 0
    True
    >>> equivalent_secrets((1, 2), (2, 1), 3)  # b = (0, 1) gives y = 2 (label 1) against y = 1 (label 0)
    False
    """
    a, b = _integer_vector("a", a), _integer_vector("b", b)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"secrets must be vectors of one length; got shapes {a.shape} and {b.shape}.")
    if a.shape[0] > MAX_CLASS_N:
        return bool(np.array_equal(a % q, b % q))
    params = LWRParams(a.shape[0], q)
    V = _all_vectors(a.shape[0])
    return bool(np.array_equal(params.label(V @ a), params.label(V @ b)))


def _check_samples(samples):
    if not isinstance(samples, PublicSamples):
        raise TypeError(f"`samples` must be PublicSamples (the attacker's view); got {type(samples).__name__}.")
    return samples


def _classes(survivors, params):
    """Number of distinct label functions among the surviving secrets."""
    if len(survivors) <= 1:
        return len(survivors)
    if params.n > MAX_CLASS_N:
        return len(survivors)
    V = _all_vectors(params.n)
    labels = params.label(np.asarray(survivors, dtype=np.int64) @ V.T)
    return int(np.unique(labels, axis=0).shape[0])


#: Secrets exhaustive_search tries without being asked (q^n; ours: 10^9, minutes at the measured rates).
MAX_SECRETS = 10**9


def exhaustive_search(samples: PublicSamples, *, batch: int = 1 << 16, max_kept: int = 1000,
                      max_secrets: int = MAX_SECRETS) -> AttackOutcome:
    """Try every secret in ``Z_q^n``; keep those that reproduce every label.

    Parameters
    ----------
    samples : PublicSamples
        Rounded (or unrounded) samples.
    batch : int
        Secrets scored at once (memory ``~ batch × 24`` integers).
    max_kept : int
        Surviving secrets stored (all are counted).
    max_secrets : int
        Refuse at once when ``q^n`` exceeds this (default :data:`MAX_SECRETS`);
        raise it to run a longer search.

    Returns
    -------
    AttackOutcome
        ``cost`` = secrets tried (``q^n``); ``extra["classes"]`` = distinct
        label functions among the survivors.

    Raises
    ------
    ValueError
        When ``q^n`` exceeds ``max_secrets`` (before any work).

    See Also
    --------
    linear_algebra_attack : Polynomial time, but only on unrounded labels.
    lattice_attack : Lattice reduction, for larger ``n``.
    time_attacks : Times it against ``n``.

    Examples
    --------
    >>> from lowerbounds import LWRParams, sample_lwr
    >>> draw = sample_lwr(LWRParams(4, 5), 200, rng=0)
    >>> out = exhaustive_search(draw.public)
    >>> out.success, out.recovered(draw.secret)
    (True, True)
    """
    samples = _check_samples(samples)
    batch = check_int("batch", batch, minimum=1)
    max_kept = check_int("max_kept", max_kept, minimum=1)
    max_secrets = check_int("max_secrets", max_secrets, minimum=1)
    params = samples.params
    n, q = params.n, params.q
    t0 = time.perf_counter()
    total = q**n
    if total > max_secrets:
        raise ValueError(f"exhaustive search over q^n = {q}^{n} = {total:.3g} secrets exceeds max_secrets="
                         f"{max_secrets:.3g}; pass a larger max_secrets to run it anyway.")
    first = samples.take(min(FILTER_SAMPLES, len(samples)))
    radix = q ** np.arange(n - 1, -1, -1, dtype=np.int64)
    kept: list[tuple[int, ...]]
    kept, count = [], 0
    for start in range(0, total, batch):
        idx = np.arange(start, min(start + batch, total), dtype=np.int64)
        W = (idx[:, None] // radix) % q
        ok = np.all(params.label(W @ first.B.T) == first.labels, axis=1)
        if ok.any():
            cand = W[ok]
            ok2 = np.all(params.label(cand @ samples.B.T) == samples.labels, axis=1)
            count += int(ok2.sum())
            kept.extend(tuple(int(v) for v in row) for row in cand[ok2][: max(0, max_kept - len(kept))])
    classes = _classes(kept, params) if count <= max_kept else count
    seconds = time.perf_counter() - t0
    success = count >= 1 and classes == 1
    msg = (f"{count} of {total} secrets reproduce all {len(samples)} labels; {classes} label function(s)"
           + ("" if success else " — not pinned down (more samples needed)" if count else " — none (wrong model?)"))
    return AttackOutcome("exhaustive", n, q, success, kept[0] if kept else None, count, len(samples), seconds,
                         float(total), msg, {"classes": classes})


def _solve_mod(A, y, q):
    """Solve ``A w ≡ y (mod q)`` by elimination with unit pivots.

    Returns ``(w, pivot_rows)`` (indices into ``A``), or ``(None, None)`` if some
    column has no unit pivot.
    """
    M = np.concatenate([A, y[:, None]], axis=1).astype(np.int64) % q
    order = np.arange(M.shape[0])
    rows, cols = M.shape[0], A.shape[1]
    for r in range(cols):  # column r gets its pivot in row r
        units = [i for i in range(r, rows) if np.gcd(int(M[i, r]), q) == 1]
        if not units:
            return None, None
        i = units[0]
        M[[r, i]] = M[[i, r]]
        order[[r, i]] = order[[i, r]]
        M[r] = (M[r] * pow(int(M[r, r]), -1, q)) % q
        col = M[:, r].copy()
        col[r] = 0
        M = (M - col[:, None] * M[r][None, :]) % q
    return tuple(int(v) for v in M[:cols, -1]), order[:cols]


def linear_algebra_attack(samples: PublicSamples) -> AttackOutcome:
    """Gaussian elimination mod ``q`` on ``⟨w, b⟩ ≡ y``; the candidate is checked against every label.

    Unrounded samples give ``y`` exactly; rounded ones are given their interval's
    centre ``⌊q/4 + ℓ q/2⌉`` (the best a solver that ignores rounding can do),
    and the candidate then fails the check — the control showing that rounding
    is what makes the problem hard.

    Parameters
    ----------
    samples : PublicSamples
        Unrounded (``params.rounded=False``) or rounded samples; about ``n`` that are invertible mod ``q``
        are needed.

    Returns
    -------
    AttackOutcome
        ``cost`` = ``n^2 N`` (the elimination's row operations); ``extra["rounded"]`` says which variant.

    See Also
    --------
    exhaustive_search : Works on rounded labels, in time ``q^n``.
    lattice_attack : Handles the rounding as small noise.

    Examples
    --------
    >>> from lowerbounds import LWRParams, sample_lwr
    >>> draw = sample_lwr(LWRParams(20, 11, rounded=False), 60, rng=0)
    >>> out = linear_algebra_attack(draw.public)
    >>> out.success, out.secret == draw.secret
    (True, True)
    """
    samples = _check_samples(samples)
    params = samples.params
    n, q = params.n, params.q
    t0 = time.perf_counter()
    y = samples.labels if not params.rounded else np.rint(q / 4 + samples.labels * q / 2).astype(np.int64) % q
    w, pivots = _solve_mod(samples.B, y, q)
    seconds = time.perf_counter() - t0
    ok = w is not None and samples.consistent(w)
    if w is None:
        msg = "no unit pivot in some column (too few or degenerate samples)"
    elif ok:
        msg = f"solved with {len(samples)} samples; the solution reproduces every label"
    else:
        rest = np.setdiff1d(np.arange(len(samples)), pivots)
        agree = float(np.mean(params.label(samples.B[rest] @ np.asarray(w)) == samples.labels[rest]))
        msg = (f"the solution fits the {n} pivot samples but only {agree:.1%} of the other {rest.size} "
               "(rounding breaks linear algebra)")
    return AttackOutcome("linear", n, q, ok, w if ok else None, int(ok), len(samples), seconds,
                         float(n * n * len(samples)), msg, {"rounded": params.rounded})


def attention_attack(instance: LWRInstance, *, method: str = "provable", n_samples: int = 2_000_000,
                     n_test: int = 20_000, config: LearnConfig | None = None,
                     gradient_options: Mapping[str, Any] | None = None, rng: SeedLike = None) -> AttackOutcome:
    """Learn the member from the reduction's attention samples, then predict LWR labels.

    The attacker draws ``n_samples`` LWR samples of ``instance``'s secret (only the
    public part is used), turns them into samples of ``F`` with
    :func:`~lowerbounds.attention_samples` (uniform inputs when ``C = 0``, the
    signal half otherwise), runs ``method`` on them, and the learned layer becomes
    an LWR predictor (:func:`~lowerbounds.lwr_predictor`) scored on ``n_test``
    fresh samples; the majority-label baseline is reported beside it.

    Parameters
    ----------
    instance : LWRInstance
        The member attacked; only its public :attr:`~LWRInstance.layout` reaches the learner.
    method : {"provable", "gradient"}
        :func:`learner.learn` or :func:`learner.baselines.fit_gradient`, told ``m``
        (the architecture is public).
    n_samples : int
        LWR samples drawn for the learner (with ``C = 0`` about half become signal-half examples).
    n_test : int
        Fresh LWR samples the predictor is scored on.
    config : LearnConfig, optional
        For ``"provable"``.
    gradient_options : dict, optional
        Keyword arguments for :func:`learner.baselines.fit_gradient`.
    rng : seed or Generator, optional
        Four streams are spawned from it (``rng.spawn(4)``: samples, reduction, learner, test).

    Returns
    -------
    AttackOutcome
        ``success`` = the predictor gets every test label right;
        ``extra`` has the accuracy, the baseline, and the learner's status.

    See Also
    --------
    attention_samples : The reduction from LWR samples to samples of ``F``.
    lwr_predictor : The reduction back, from a learned layer to LWR labels.
    exhaustive_search : The attack that succeeds at small ``n``.

    Examples
    --------
    >>> from lowerbounds import named_lwr_instance
    >>> out = attention_attack(named_lwr_instance("one-slab"), method="gradient", n_samples=1000, n_test=500,
    ...                        gradient_options={"n_train": 800, "n_val": 200, "max_iter": 20, "restarts": 1}, rng=0)
    >>> out.attack, out.samples, out.extra["half"], out.extra["baseline"]  # C = 0: inputs over both halves
    ('attention-gradient', 1000, 'all', 0.746)
    >>> 0 <= out.extra["accuracy"] <= 1
    True
    """
    import learner
    import learner.baselines

    rng = check_rng(rng)
    if not isinstance(instance, LWRInstance):
        raise TypeError(f"`instance` must be an LWRInstance; got {type(instance).__name__}.")
    if method not in ATTENTION_METHODS:
        raise ValueError(f"`method` must be one of {ATTENTION_METHODS}; got method={method!r}.")
    n_samples = check_int("n_samples", n_samples, minimum=1)
    n_test = check_int("n_test", n_test, minimum=1)
    layout = instance.layout
    seeds = rng.spawn(4)
    draw = sample_lwr(instance.params, n_samples, secret=instance.secret, rng=seeds[0])
    half = "all" if layout.total == 0.0 else "signal"
    t0 = time.perf_counter()
    X, Y = attention_samples(draw.public, layout, half=half, rng=seeds[1])
    if method == "provable":
        result = learner.learn((X, Y), m=layout.m, k=2, config=config, rng=seeds[2])
    else:
        result = learner.baselines.fit_gradient((X, Y), m=layout.m, k=2, rng=seeds[2], **(gradient_options or {}))
    seconds = time.perf_counter() - t0
    test = sample_lwr(instance.params, n_test, secret=instance.secret, rng=seeds[3]).public
    baseline = float(max(np.mean(test.labels), 1 - np.mean(test.labels)))
    if result.layer is None:
        acc = None
        msg = f"{method}: no layer ({result.status}: {result.message})"
    else:
        acc = predictor_accuracy(lwr_predictor(result.layer, layout, rng=seeds[3]), test)
        msg = f"{method}: LWR accuracy {acc:.4f} (majority baseline {baseline:.4f}); learner: {result.status}"
    return AttackOutcome(f"attention-{method}", layout.n, layout.q, acc == 1.0, None, 0, result.examples_drawn,
                         seconds, float(result.examples_drawn), msg,
                         {"accuracy": acc, "baseline": baseline, "m": layout.m, "half": half,
                          "learner_status": result.status, "learner_success": result.success,
                          "learner_message": result.message,
                          "optimiser_steps": int(sum(result.diagnostics.get("fit", {}).get("iterations", [])))})


def fit_growth(ns: ArrayLike, seconds: ArrayLike, *, floor: float = 2e-3) -> tuple[float, int]:
    """Least-squares fit ``seconds ≈ a · base^n`` over the points above ``floor``.

    Timings below ``floor`` seconds measure overhead, not the attack (ours:
    2 ms, about a hundred numpy calls).

    Parameters
    ----------
    ns : array_like, shape (k,)
        Secret dimensions (or any abscissa: :func:`time_attacks` also passes ``log n``).
    seconds : array_like, shape (k,)
        Timings at those points.
    floor : float
        Timings at or below this many seconds are left out (default 2e-3).

    Returns
    -------
    base : float
        ``exp`` of the slope of ``log(seconds)`` against ``ns``; ``nan`` with fewer than two points used.
    points_used : int
        Points above ``floor``.

    Raises
    ------
    ValueError
        ``ns`` and ``seconds`` that are not vectors of one length.

    See Also
    --------
    time_attacks : Fits it per attack.
    fit_slope : The power-law fit of the SQ simulation.

    Examples
    --------
    >>> base, used = fit_growth([1, 2, 3, 4], [0.01, 0.07, 0.49, 3.43])
    >>> round(base, 6), used
    (7.0, 4)
    """
    ns = np.asarray(ns, dtype=float)
    secs = np.asarray(seconds, dtype=float)
    if ns.shape != secs.shape or ns.ndim != 1:
        raise ValueError(f"`ns` and `seconds` must be vectors of one length; got {ns.shape} and {secs.shape}.")
    use = secs > floor
    if use.sum() < 2:
        return float("nan"), int(use.sum())
    slope = np.polyfit(ns[use], np.log(secs[use]), 1)[0]
    return float(np.exp(slope)), int(use.sum())


def _samples_for(n, q):
    # ours: enough for the exhaustive filter and to pin the label function whp
    return int(8 * n * np.ceil(np.log2(q)) + 64)


def linear_attack_bytes(n: int, q: int) -> int:
    """Bytes the linear-algebra attack at ``n`` holds at once (ours, an upper estimate): the rounded control's
    samples (:func:`_samples_for` rows of ``n`` int64 entries) and the unrounded ``n + 32``, each copied about
    three times by the elimination (the augmented matrix, its reduction mod ``q``, the row swaps)."""
    return 8 * n * (_samples_for(n, q) + n + 32) * 4


@declare(ns=Each(Integer(), distinct=False), q=Integer(3), repeats=Integer())
def time_attacks(ns: Sequence[int], q: int, *, attacks: Sequence[str] = ("exhaustive", "linear"), repeats: int = 3,
                 rng: SeedLike = None) -> dict[str, Any]:
    """Run attacks at each ``n``; median time over ``repeats`` fresh secrets.

    ``"exhaustive"`` and ``"lattice"`` run on rounded samples; ``"linear"`` runs on
    the unrounded variant and, as the control, on rounded samples of the same
    secret.

    Parameters
    ----------
    ns : sequence of int
        Secret dimensions (repeats are measured again).
    q : int
        Modulus, ``>= 3``.
    attacks : sequence of str
        Any of ``"exhaustive"``, ``"linear"`` and ``"lattice"`` (the last needs fpylll).
    repeats : int
        Fresh secrets per ``(attack, n)``.
    rng : seed or Generator, optional
        Spawns one stream per secret.

    Returns
    -------
    dict
        JSON-ready: ``rows``, one per ``(attack, n)`` with the median seconds,
        successes, median samples and cost, and the predicted heads ``m`` for a
        typical secret (switches up to ``n(q − 1)/2``); ``growth``, per attack
        the fitted base (``seconds ∝ base^n``) and power (``seconds ∝ n^power``);
        and the settings.

    Raises
    ------
    ValueError
        An unknown attack, a ``q^n`` beyond the exhaustive search's limit, or a linear attack that would not
        fit in memory.

    See Also
    --------
    fit_growth : The growth fits.
    cost_table : The lattice cost model for ``n`` beyond any attack.
    lwr_cost : The model behind it.

    Examples
    --------
    >>> out = time_attacks([2, 3, 4], 5, attacks=("exhaustive",), repeats=2, rng=0)
    >>> [(r["n"], r["successes"], r["cost"]) for r in out["rows"]]  # secrets tried: q^n
    [(2, 2, 25.0), (3, 2, 125.0), (4, 2, 625.0)]
    >>> lin = time_attacks([8, 12], 7, attacks=("linear",), repeats=3, rng=0)
    >>> [(r["n"], r["successes"], r["rounded_control_successes"]) for r in lin["rows"]]  # rounding stops it
    [(8, 3, 0), (12, 3, 0)]
    """
    from .lattice import lattice_attack
    from .lwr import switch_count

    rng = check_rng(rng)
    known = ("exhaustive", "linear", "lattice")
    for a in attacks:
        if a not in known:
            raise ValueError(f"`attacks` entries must be in {known}; got {a!r}.")
    if "linear" in attacks and ns:
        check_memory("ns", linear_attack_bytes(max(ns), q), f"the linear-algebra attack at n = {max(ns)}", list(ns))
    rows = []
    out: AttackOutcome | LatticeOutcome
    for attack in attacks:
        for n in ns:
            outs, control = [], []
            for gen in rng.spawn(repeats):
                draw = sample_lwr(LWRParams(n, q), _samples_for(n, q), rng=gen)
                if attack == "exhaustive":
                    out = exhaustive_search(draw.public)
                elif attack == "lattice":
                    out = lattice_attack(draw.public.B, draw.public.labels, q, rng=gen)
                    out = AttackOutcome("lattice", n, q, bool(out.success), out.secret, int(out.success),
                                        out.samples, out.seconds, float(out.dimension), out.message,
                                        {"block_size": out.block_size})
                else:
                    unrounded = sample_lwr(LWRParams(n, q, rounded=False), n + 32, secret=draw.secret, rng=gen)
                    out = linear_algebra_attack(unrounded.public)
                    control.append(linear_algebra_attack(draw.public).success)
                outs.append((out, out.recovered(draw.secret)))
            row: dict[str, Any]
            row = {"attack": attack, "n": n, "q": q, "m_typical": switch_count(q, n * (q - 1) // 2),
                   "median_seconds": float(np.median([o.seconds for o, _ in outs])),
                   "successes": sum(bool(o.success and ok) for o, ok in outs), "repeats": repeats,
                   "samples": int(np.median([o.samples for o, _ in outs])),
                   "cost": float(np.median([o.cost for o, _ in outs]))}
            if control:
                row["rounded_control_successes"] = int(sum(control))
            rows.append(row)
    fits = {}
    for attack in attacks:
        sub = [r for r in rows if r["attack"] == attack]
        ns_, secs = [r["n"] for r in sub], [r["median_seconds"] for r in sub]
        base, used = fit_growth(ns_, secs)
        # the same points on log-log axes: a polynomial attack shows a steady exponent, an exponential one does not
        power, _ = fit_growth(np.log(ns_), secs)
        fits[attack] = {"base": base, "power": float(np.log(power)) if np.isfinite(power) else power,
                        "points": used}
    return {"q": q, "ns": ns, "repeats": repeats, "rows": rows, "growth": fits}
