"""The non-degeneracy conditions of the paper's upper bound, measured on a layer.

The talk's "fine print" (arXiv 2402.04084, Chen & Li) lists the conditions under
which the ``(dk)^{O(m^3)}`` learner is proved to work. For the attention
matrices: small ``m`` (at most logarithmic in ``d``) and ``k <= d``; pairwise
incoherence; stable rank not too small; diagonals not too heavy; columns not too
heavy; non-arithmetic entries; comparable, bounded norms. For the projection
matrices: milder incoherence, stable-rank and norm conditions.

The paper states these with unspecified ``poly(m, k, log d)`` factors, and the
full text is not available to us. **The exact quantities and every numerical
threshold below are ours**: each threshold is chosen so that the Gaussian layers
of :func:`learner.random_layer` pass with high probability at ``d >= 8`` while the
obvious violations (equal heads, a rank-one Θ, ``Θ = c·I``, one heavy column,
integer entries) fail. The report says which statement is the talk's and which
is our reading, row by row.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .validation import DISTRIBUTIONS, Choice, Integer, Scale, check_int, declare

if TYPE_CHECKING:
    from .layer import AttentionLayer

__all__ = [
    "AssumptionReport",
    "AssumptionRow",
    "SettingReport",
    "assumptions",
    "check_setting",
    "cube_constraint_count",
    "lattice_distance",
    "max_sound_m",
    "setting_conditions", "CUBE_WINDOW", "SHARPNESS_REACH"]

#: Spacings tried by :func:`lattice_distance`: ``max|v| / q`` for ``q = 1..LATTICE_Q`` (ours: how fine a
#: lattice still counts as arithmetic; not tuned).
LATTICE_Q = 32

# Thresholds (ours; see the module docstring for how they were chosen).
THETA_INCOHERENCE_MAX = 0.5
THETA_STABLE_RANK_MIN = 1.5  # ours: a rank-one Θ (stable rank 1) fails
THETA_DIAGONAL_MAX = 1.5  # ours: Θ = c·I fails (|Tr Θ|/‖Θ‖_F = √d ≥ 2.8 at d ≥ 8)
THETA_NONARITHMETIC_MIN = 0.1  # ours: integer entries fail (distance 0)
THETA_NORM_RATIO_MAX = 4.0  # ours: the talk's "comparable norms"; random_layer's heads pass
W_INCOHERENCE_MAX = 0.9  # ours: milder than Θ's, as the talk says; equal W's fail
W_STABLE_RANK_MIN = 1.2  # ours: milder than Θ's; a rank-one W fails
W_NORM_RATIO_MAX = 10.0  # ours: milder than Θ's; random_layer's heads pass

#: Certification's acceptance per logit disagreement (ours, measured): over all 2^16 Boolean inputs at
#: (m, d, k) = (3, 8, 2), logit scale 1 and the learner's tolerance 0.015, a row certified with
#: probability 2.5e-3–3.6e-3 = w^((m−1)(k−1)) for w = 0.050–0.060 (three layers); at m = 4, w = 0.080–0.090.
#: The larger m = 3 figure is used, which underestimates the count at larger m (conservative there).
CUBE_WINDOW = 0.06
#: Distinct certifiable constraints needed, as a multiple of the d² unknowns (ours): at (3, 8, 2) the
#: cube offers 82–115 distinct ones, rank 64 = d², and the hull's gap stays below 3; twice d² separates it.
CUBE_MARGIN = 2.0

#: The learner's measured reach in logit scale with Boolean inputs (ours): per (d, k), the smallest
#: measured logit scale ‖Θ_i‖_F from which on, at every larger measured scale too, at least half of the planted
#: two-head layers failed (in phase 5, "the constraints do not determine the hull", or in phase 6), and what was
#: measured. A (d, k) not listed has no measured boundary and is not refused. Made from the sharpness map's
#: records (docs/sweeps/reach-sharpness, scales 0.5–8) by :func:`learner.study.grids.reach_boundaries`; see
#: :func:`setting_conditions`.
SHARPNESS_REACH = {
    (8, 2): (6.0, (
        'm = 2, boolean inputs, random_layer at each scale; scale 0.5: 0 of 6 failed; scale 1: 0 of 6 failed;'
        ' scale 2: 0 of 6 failed; scale 3: 2 of 6 failed (1 in phase 5 for lack of certified constraints '
        '(rank 50), 1 in phase 6 (held-out relative error 0.3)); scale 4: 1 of 6 failed (1 in phase 5 for '
        'lack of certified constraints (rank 12)); scale 5: 1 of 6 failed (1 in phase 5 for lack of certified'
        ' constraints (rank 21)); scale 6: 4 of 6 failed (2 in phase 5 for lack of certified constraints '
        '(rank 36–40), 2 in phase 6 (held-out relative error 0.43–0.51)); scale 8: 6 of 6 failed (6 in phase '
        '5 for lack of certified constraints (rank 10–59))'
    )),
    (8, 3): (8.0, (
        'm = 2, boolean inputs, random_layer at each scale; scale 0.5: 0 of 6 failed; scale 1: 0 of 6 failed;'
        ' scale 2: 0 of 6 failed; scale 3: 0 of 6 failed; scale 4: 0 of 6 failed; scale 5: 1 of 6 failed (1 '
        'in phase 6 (held-out relative error 0.31)); scale 6: 1 of 6 failed (1 in phase 6 (held-out relative '
        'error 1.2)); scale 8: 3 of 6 failed (3 in phase 6 (held-out relative error 0.5–0.86))'
    )),
}

_RELATIONS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt}


@dataclass(frozen=True)
class AssumptionRow:
    """One measured condition: ``value`` compared with ``threshold`` by ``relation``.

    ``ok`` is ``None`` for rows that are reported but not checked (asymptotic
    statements such as "m at most logarithmic in d").

    Parameters
    ----------
    name : str
        The condition's identifier (``"theta_incoherence"``, ``"k_below_d"``, ...), the key of
        ``AssumptionReport[name]``.
    group : str
        Which part of the setting it is about: ``"setting"`` (m, d, k and the inputs), ``"shape"``,
        ``"attention"`` (the Θ_i) or ``"projection"`` (the W_i).
    quantity : str
        What ``value`` measures, in words (``"max |cos(Θi,Θj)|"``).
    value : float
        The measured quantity: over the heads (or pairs of heads), the worst one; may be ``inf`` for a degenerate
        layer (a zero head).
    relation : {"<=", ">=", "<"}
        How ``value`` must compare with ``threshold`` for the condition to hold.
    threshold : float
        The bound (ours, except where ``source`` says otherwise).
    ok : bool or None
        Whether the condition holds; None for a row reported but not checked.
    worst : str
        Which head or pair gave ``value`` (``"head 0"``, ``"heads 0,1"``), or ``"-"`` where it is not about one.
    source : str
        Which statement is the talk's and which is ours (``"talk: incoherent heads; threshold ours"``).

    See Also
    --------
    AssumptionReport : The rows of one layer, with the verdict.
    assumptions : Measures the rows of a layer.
    setting_conditions : The rows of a setting (m, d, k) alone.

    Examples
    --------
    >>> from learner import random_layer
    >>> row = assumptions(random_layer(2, 8, rng=0))["theta_incoherence"]
    >>> row.quantity, round(row.value, 3), row.relation, row.threshold, row.ok, row.worst
    ('max |cos(Θi,Θj)|', 0.167, '<=', 0.5, True, 'heads 0,1')
    """

    name: str
    group: str
    quantity: str
    value: float
    relation: str
    threshold: float
    ok: bool | None
    worst: str
    source: str


@dataclass(frozen=True)
class AssumptionReport:
    """All measured conditions for one layer (and optionally a sequence length ``k``).

    ``str(report)`` is an aligned table of the rows and the verdict; ``report[name]`` is the row named ``name``
    (``KeyError`` naming the rows there are otherwise).

    Parameters
    ----------
    m : int
        The layer's heads.
    d : int
        The layer's dimension.
    k : int or None
        The sequence length of the setting, when one was given (then the setting's rows are included).
    rows : tuple of AssumptionRow
        The conditions, in the order :func:`assumptions` measures them.

    See Also
    --------
    assumptions : Builds the report of a layer.
    AssumptionRow : One of its rows.
    check_setting : The report of a setting alone, without a layer.

    Examples
    --------
    >>> import numpy as np
    >>> from learner import AttentionLayer, random_layer
    >>> assumptions(random_layer(2, 8, rng=0), k=4).ok
    True
    >>> twins = AttentionLayer(np.stack([np.eye(8)] * 2), np.stack([np.eye(8)] * 2))  # two equal heads, Θ = I
    >>> report = assumptions(twins)
    >>> report.ok, report.failed
    (False, ('theta_incoherence', 'theta_diagonal', 'theta_nonarithmetic', 'w_incoherence'))
    >>> print(str(report).splitlines()[-1])
    FAILED: theta_incoherence, theta_diagonal, theta_nonarithmetic, w_incoherence
    """

    m: int
    d: int
    k: int | None
    rows: tuple[AssumptionRow, ...]

    @property
    def ok(self) -> bool:
        """True when every checked condition holds."""
        return all(row.ok is not False for row in self.rows)

    @property
    def failed(self) -> tuple[str, ...]:
        """Names of the conditions that do not hold."""
        return tuple(row.name for row in self.rows if row.ok is False)

    def __getitem__(self, name):
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"no condition named {name!r}; have {[r.name for r in self.rows]}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary.

        Returns
        -------
        dict
            ``m``, ``d``, ``k``, ``ok``, ``failed`` (a list) and ``rows``: one dict per row with the
            :class:`AssumptionRow` fields, non-finite values as None (strict JSON).
        """
        return {
            "m": self.m,
            "d": self.d,
            "k": self.k,
            "ok": self.ok,
            "failed": list(self.failed),
            # Strict JSON: a degenerate layer's infinite ratios become None.
            "rows": [
                {key: (None if isinstance(v, float) and not math.isfinite(v) else v) for key, v in row.__dict__.items()}
                for row in self.rows
            ],
        }

    def __str__(self):
        header = ("condition", "quantity", "value", "", "threshold", "ok", "worst", "source")
        lines = [header]
        for r in self.rows:
            verdict = {True: "yes", False: "NO", None: "-"}[r.ok]
            lines.append(
                (r.name, r.quantity, f"{r.value:.4g}", r.relation, f"{r.threshold:.4g}", verdict, r.worst, r.source)
            )
        widths = [max(len(line[j]) for line in lines) for j in range(len(header))]
        text = [
            "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=False)).rstrip() for line in lines
        ]
        text.insert(1, "  ".join("-" * w for w in widths))
        title = f"Assumption report: m={self.m}, d={self.d}" + (f", k={self.k}" if self.k else "")
        verdict = "all checked conditions hold" if self.ok else "FAILED: " + ", ".join(self.failed)
        return "\n".join([title, *text, verdict])


def lattice_distance(values: ArrayLike, *, q_max: int = LATTICE_Q) -> float:
    """How far the non-zero entries of ``values`` are from the nearest lattice ``hℤ``.

    .. math:: \\min_{q=1..q_{max}} \\Big( \\operatorname{mean}_j \\,
              \\operatorname{dist}(v_j / h_q, \\mathbb{Z})^2 \\Big)^{1/2},
              \\qquad h_q = \\max_j |v_j| / q

    0 means every entry is a multiple of one spacing ``h_q`` (arithmetic
    coefficients, where the Boolean local CLT fails); entries spread at random
    give about ``1/sqrt(12) ≈ 0.29``. Ours: a heuristic that detects lattices
    through the origin with spacing ``max|v|/q``, ``q <= q_max``; all-zero input
    returns 0.

    Parameters
    ----------
    values : array_like
        Real numbers of any shape (flattened; zeros are ignored).
    q_max : int, default 32
        The finest lattice tried: spacing ``max|v|/q_max`` (the default is the module's ``LATTICE_Q``).

    Returns
    -------
    float
        The smallest root-mean-square distance to a lattice, in units of its spacing: in [0, 0.5].

    See Also
    --------
    assumptions : Uses it for the non-arithmetic condition on each ``Θ_i``.

    Examples
    --------
    >>> lattice_distance([1.0, -2.0, 3.0])
    0.0
    >>> import numpy as np
    >>> round(lattice_distance(np.random.default_rng(0).standard_normal(64)), 2)  # a random head's entries
    0.25
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[v != 0]
    if v.size == 0:
        return 0.0
    scaled = v / np.abs(v).max()
    q = np.arange(1, check_int("q_max", q_max) + 1, dtype=np.float64)[:, None]
    frac = scaled * q
    dist = np.sqrt(np.mean((frac - np.round(frac)) ** 2, axis=1))
    return float(dist.min())


def _incoherence(mats):
    """Largest |cosine| between two different heads, and which pair."""
    flat = mats.reshape(len(mats), -1)
    norms = np.linalg.norm(flat, axis=1)
    if len(mats) < 2:
        return 0.0, "m=1"
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.abs(flat @ flat.T) / np.outer(norms, norms)
    cos = np.where(np.outer(norms, norms) > 0, cos, 1.0)  # a zero head is degenerate
    np.fill_diagonal(cos, -np.inf)
    i, j = np.unravel_index(np.argmax(cos), cos.shape)
    return float(cos[i, j]), f"heads {min(i, j)},{max(i, j)}"


def _stable_ranks(mats):
    fro2 = np.sum(mats**2, axis=(1, 2))
    op2 = np.linalg.norm(mats, ord=2, axis=(1, 2)) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(op2 > 0, fro2 / np.where(op2 > 0, op2, 1.0), 0.0)


def _norm_ratio(mats):
    norms = np.linalg.norm(mats.reshape(len(mats), -1), axis=1)
    if norms.min() == 0:
        return math.inf
    return float(norms.max() / norms.min())


def _argworst(values, pick):
    i = int(pick(values))
    return float(values[i]), f"head {i}"


def cube_constraint_count(m: int, d: int, k: int, *, window: float = CUBE_WINDOW) -> float:
    """Expected number of *distinct* constraints that certification can find on the Boolean cube.

    .. math:: N(m, d, k) = \\frac{k(k-1)\\, 2^{kd}}{2\\, k!}\\; w^{(m-1)(k-1)}

    The cube has ``2^{kd}`` inputs; an input and its negation give the same
    constraints, and so do its ``k!`` token orders, and each of the ``k`` rows
    gives up to ``k − 1`` constraints. A row certifies when its ``(m−1)(k−1)``
    logit disagreements ``⟨Θ_i − Θ_1, x_a(x_j − x_{j0})ᵀ⟩`` all fall in the
    acceptance window, each with probability about ``w`` (:data:`CUBE_WINDOW`,
    measured). Ours: the model and the constant. Returned as ``log N`` (natural
    log) to stay finite for large ``k·d``.

    Parameters
    ----------
    m : int
        Heads.
    d : int
        Token dimension.
    k : int
        Tokens per sequence (at least 2: ``k = 1`` has no constraints, and ``log 0`` fails).
    window : float, default :data:`CUBE_WINDOW`
        The probability ``w`` that one logit disagreement falls in the acceptance window.

    Returns
    -------
    float
        ``log N``, the natural logarithm of the expected count.

    Examples
    --------
    >>> import math
    >>> round(math.exp(cube_constraint_count(3, 8, 2)))  # below 2·d² = 128: (3, 8, 2) is not sound
    118
    """
    return ((k * d - 1) * math.log(2) + math.log(k * (k - 1)) - math.lgamma(k + 1)
            + (m - 1) * (k - 1) * math.log(window))


@declare(m=Integer(), d=Integer(), k=Integer(), distribution=Choice(DISTRIBUTIONS), logit_scale=Scale(none=True))
def setting_conditions(m: int, d: int, k: int, *, distribution: str = "boolean",
                       logit_scale: float | None = None) -> tuple[AssumptionRow, ...]:
    """The conditions under which certification is sound for ``m`` heads, ``k`` tokens, dimension ``d``.

    Rows (all ours; the talk states only ``k <= d``):

    * ``k_below_d`` — ``k < d``: otherwise ``XŴ`` has rank below ``k`` and no
      residual tells agreeing heads from disagreeing ones;
    * ``two_tokens`` — ``k >= 2``: with one token attention is trivial;
    * ``certificate_sound`` — ``m(k−1) < d``: a disagreement ``Σ_i (p_i − q)ᵀXW_i``
      has ``m(k−1)`` free coefficients in ``R^d``, so with ``m(k−1) >= d`` rows whose
      heads disagree can fit with zero residual;
    * ``cube_configurations`` (Boolean inputs only) — the cube has finitely many
      inputs, and a row certifies only when ``(m−1)(k−1)`` logit disagreements
      fall in a small window: :func:`cube_constraint_count` must reach
      ``CUBE_MARGIN·d²`` distinct constraints, or the constraints cannot pin the
      ``d²`` unknowns. Measured by enumerating the whole cube at (3, 8, 2): 82–115
      distinct constraints (at tolerance 0.01, 32–61 and rank 31–54 of 64), and at
      (5, 12, 2) the constraints were rank-deficient too;
    * ``sharpness_reach`` (Boolean inputs, ``m >= 2``, only when ``logit_scale`` — the layer's largest
      ``‖Θ_i‖_F`` — is given and :data:`SHARPNESS_REACH` has a boundary for ``(d, k)``) — the logit scale
      must be below the measured boundary: sharp heads certify only rows whose tokens differ where every
      head's logits are small, and at small ``d`` the constraints then leave directions of the hull
      unpinned, which the learner otherwise finds out only in phase 5, after a million examples.

    Parameters
    ----------
    m : int
        Heads (at least 1).
    d : int
        Token dimension (at least 1).
    k : int
        Tokens per sequence (at least 1).
    distribution : {"boolean", "gaussian"}
        The input distribution; the cube and sharpness rows are Boolean-only.
    logit_scale : float, optional
        The layer's largest ``‖Θ_i‖_F``, when known (positive, below
        :data:`~learner.validation.SCALE_BELOW`); it adds the ``sharpness_reach`` row.

    Returns
    -------
    tuple of AssumptionRow
        The rows above, each with ``group="setting"`` and ``ok`` True or False (never None).
    """
    rows = [
        AssumptionRow("k_below_d", "setting", "sequence length k", float(k), "<", float(d), k < d, "-",
                      "talk: k <= d; ours: strict, for certification"),
        AssumptionRow("two_tokens", "setting", "sequence length k", float(k), ">=", 2.0, k >= 2, "-",
                      "ours: one token makes every attention pattern trivial"),
        AssumptionRow("certificate_sound", "setting", "m(k−1), free coefficients of a disagreement",
                      float(m * (k - 1)), "<", float(d), m * (k - 1) < d, "-",
                      "ours: with m(k−1) >= d disagreeing heads can fit a row with zero residual"),
    ]
    if distribution == "boolean" and k >= 2:
        need = CUBE_MARGIN * d * d
        log_n = cube_constraint_count(m, d, k)
        value = math.exp(min(log_n, 700.0))
        rows.append(AssumptionRow(
            "cube_configurations", "setting", "distinct certifiable constraints on the cube (model)", value, ">=",
            need, log_n >= math.log(need), "-",
            f"ours: k(k−1)2^(kd)/(2k!)·{CUBE_WINDOW}^((m−1)(k−1)) must reach {CUBE_MARGIN:g}·d² (measured window)"))
    reach = SHARPNESS_REACH.get((d, k))
    if distribution == "boolean" and m >= 2 and logit_scale is not None and reach is not None:
        boundary, measured = reach
        rows.append(AssumptionRow(
            "sharpness_reach", "setting", "logit scale max ‖Θ_i‖_F", float(logit_scale), "<", float(boundary),
            logit_scale < boundary, "-", f"ours: the learner's measured reach at (d, k) = ({d}, {k}): {measured}. "
            "Gaussian inputs, or one token more, learned the layers that failed there (docs/sweeps/reach-sharpness)"))
    return tuple(rows)


def max_sound_m(d: int, k: int, *, distribution: str = "boolean", limit: int = 64,
                logit_scale: float | None = None) -> int:
    """The largest ``m <= limit`` for which every :func:`setting_conditions` row holds (0 if none).

    The rows fail from some m on and hold for every smaller one, so the count stops at the first m that fails.

    Parameters
    ----------
    d : int
        Token dimension.
    k : int
        Tokens per sequence.
    distribution : {"boolean", "gaussian"}
        The input distribution.
    limit : int, default 64
        The largest m tried.
    logit_scale : float, optional
        The layer's largest ``‖Θ_i‖_F``: with a measured boundary for ``(d, k)`` beyond it, no m of 2 or more is
        sound.

    Returns
    -------
    int
        The largest sound m, in ``[0, limit]``.

    Examples
    --------
    >>> max_sound_m(8, 2), max_sound_m(8, 2, distribution="gaussian"), max_sound_m(16, 2)
    (2, 7, 6)
    """
    best = 0
    for m in range(1, check_int("limit", limit) + 1):
        if all(row.ok for row in setting_conditions(m, d, k, distribution=distribution, logit_scale=logit_scale)):
            best = m
        else:
            break
    return best


@dataclass(frozen=True)
class SettingReport:
    """Whether a setting ``(m, d, k, distribution)`` admits a sound certificate (:func:`setting_conditions`).

    Parameters
    ----------
    m : int
        Heads.
    d : int
        Token dimension.
    k : int
        Tokens per sequence.
    distribution : {"boolean", "gaussian"}
        The input distribution.
    rows : tuple of AssumptionRow
        The rows of :func:`setting_conditions` at this setting.
    max_m : int
        The largest m the same ``(d, k)``, distribution and logit scale allow (:func:`max_sound_m`; 0 if none).
    """

    m: int
    d: int
    k: int
    distribution: str
    rows: tuple[AssumptionRow, ...]
    max_m: int

    @property
    def ok(self) -> bool:
        """True when every row holds: certification is sound in this setting."""
        return all(row.ok for row in self.rows)

    @property
    def failed(self) -> tuple[str, ...]:
        """Names of the rows that do not hold."""
        return tuple(row.name for row in self.rows if not row.ok)

    def message(self) -> str:
        """One sentence per failed condition (or that none failed), and the largest m the setting allows.

        Returns
        -------
        str
            The message :func:`learner.learn` ends a refused run with (before its hint on ``allow_unsound``).
        """
        parts = [f"{r.name}: {r.quantity} = {r.value:.4g}, needs {r.relation} {r.threshold:.4g} ({r.source})"
                 for r in self.rows if not r.ok]
        setting = f"(m, d, k) = ({self.m}, {self.d}, {self.k}) with {self.distribution} inputs"
        tail = (f"this (d, k) allows at most m = {self.max_m}" if self.max_m else "no m is sound at this (d, k)")
        if not parts:
            return f"{setting} is sound for certification (every condition holds); {tail}."
        what = ("is beyond the learner's measured reach in logit scale" if self.failed == ("sharpness_reach",)
                else "is not sound for certification")
        return f"{setting} {what}: " + "; ".join(parts) + f"; {tail}."

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary.

        Returns
        -------
        dict
            ``m``, ``d``, ``k``, ``distribution``, ``ok``, ``failed`` (a list), ``max_m`` and ``rows`` (one dict per
            row with the :class:`AssumptionRow` fields).
        """
        return {"m": self.m, "d": self.d, "k": self.k, "distribution": self.distribution, "ok": self.ok,
                "failed": list(self.failed), "max_m": self.max_m,
                "rows": [dict(r.__dict__) for r in self.rows]}


def check_setting(m: int, d: int, k: int, *, distribution: str = "boolean",
                  logit_scale: float | None = None) -> SettingReport:
    """:class:`SettingReport` of ``(m, d, k)`` (and of the layer's logit scale, when given).

    What :func:`learner.learn` checks before it draws any example; the conditions are ours
    (:func:`setting_conditions`).

    Parameters
    ----------
    m : int
        Heads.
    d : int
        Token dimension.
    k : int
        Tokens per sequence.
    distribution : {"boolean", "gaussian"}
        The input distribution.
    logit_scale : float, optional
        The layer's largest ``‖Θ_i‖_F``, when known; checked against :data:`SHARPNESS_REACH`.

    Returns
    -------
    SettingReport
        The rows, the verdict and the largest sound m; ``message()`` words it.

    See Also
    --------
    setting_conditions : The rows and where they come from.
    max_sound_m : The largest m a (d, k) allows.
    assumptions : The paper's conditions on a layer's parameters.

    Examples
    --------
    >>> report = check_setting(3, 8, 2)
    >>> report.ok, report.failed, report.max_m
    (False, ('cube_configurations',), 2)
    >>> print(report.message())  # doctest: +ELLIPSIS
    (m, d, k) = (3, 8, 2) with boolean inputs is not sound ...: cube_configurations: ...; ... allows at most m = 2.
    >>> check_setting(3, 8, 2, distribution="gaussian").ok
    True
    """
    return SettingReport(m, d, k, distribution,
                         setting_conditions(m, d, k, distribution=distribution, logit_scale=logit_scale),
                         max_sound_m(d, k, distribution=distribution, logit_scale=logit_scale))


@declare(k=Integer(none=True), distribution=Choice(DISTRIBUTIONS))
def assumptions(layer: AttentionLayer, *, k: int | None = None, distribution: str = "boolean") -> AssumptionReport:
    """Measure every non-degeneracy condition of the paper on ``layer``.

    Parameters
    ----------
    layer : AttentionLayer
        The layer measured.
    k : int, optional
        Sequence length; when given, the setting's soundness conditions
        (:func:`setting_conditions`: ``k < d``, ``m(k−1) < d`` and, for Boolean
        inputs, enough distinct certifiable constraints on the cube) are rows too.
    distribution : {"boolean", "gaussian"}
        Input distribution of the setting (the cube condition is Boolean-only).

    Returns
    -------
    AssumptionReport
        Printable table; ``report.ok`` and ``report.failed`` summarise it.

    Notes
    -----
    Quantities, for heads ``i`` (worst case over heads or pairs reported):

    * incoherence ``|⟨Θ_i, Θ_j⟩| / (‖Θ_i‖_F ‖Θ_j‖_F)`` (same for the ``W``'s);
    * stable rank ``‖Θ_i‖_F² / ‖Θ_i‖_op²``;
    * diagonal heaviness ``|Tr Θ_i| / ‖Θ_i‖_F``: the mean of a token's logit on
      itself in units of the off-diagonal logits' standard deviation
      (``‖Θ‖_F`` for Boolean and Gaussian inputs);
    * column/row heaviness: largest share of ``‖Θ_i‖_F²`` in one column or row,
      against ``2·max(ln d, 1)/d``;
    * non-arithmetic entries: :func:`lattice_distance`;
    * norm ratios ``max_i ‖Θ_i‖_F / min_j ‖Θ_j‖_F``.

    Conditions are the talk's; quantities and thresholds are ours.

    See Also
    --------
    AssumptionReport : The report, printable as a table.
    check_setting : The setting's conditions alone, without a layer.
    learner.random_layer : Plants layers that meet these conditions.

    Examples
    --------
    >>> from learner import random_layer
    >>> report = assumptions(random_layer(2, 8, rng=0), k=4)
    >>> report.ok, len(report.rows)
    (True, 15)
    >>> print(str(report).splitlines()[0])
    Assumption report: m=2, d=8, k=4
    """
    from .layer import AttentionLayer

    if not isinstance(layer, AttentionLayer):
        raise TypeError(f"`layer` must be an AttentionLayer; got {type(layer).__name__}.")
    m, d = layer.m, layer.d
    T, W = layer.thetas, layer.ws
    rows = []

    def add(name, group, quantity, value_where, relation, threshold, source, checked=True):
        value, where = value_where
        ok = bool(_RELATIONS[relation](value, threshold)) if checked else None
        rows.append(AssumptionRow(name, group, quantity, float(value), relation, float(threshold), ok, where, source))

    if k is not None:
        rows.extend(setting_conditions(m, d, k, distribution=distribution))
    add("m_small", "shape", "heads m (vs ln d)", (m, "-"), "<=", math.log(d) if d > 1 else 0.0,
        "talk: m at most logarithmic in d (asymptotic, not checked)", checked=False)

    fro_t = np.linalg.norm(T.reshape(m, -1), axis=1)
    add("theta_incoherence", "attention", "max |cos(Θi,Θj)|", _incoherence(T), "<=", THETA_INCOHERENCE_MAX,
        "talk: incoherent heads; threshold ours")
    add("theta_stable_rank", "attention", "min ‖Θ‖F²/‖Θ‖op²", _argworst(_stable_ranks(T), np.argmin), ">=",
        THETA_STABLE_RANK_MIN, "talk: stable rank not too small; threshold ours")
    with np.errstate(invalid="ignore", divide="ignore"):
        diag = np.where(fro_t > 0, np.abs(np.trace(T, axis1=1, axis2=2)) / np.where(fro_t > 0, fro_t, 1), np.inf)
    add("theta_diagonal", "attention", "max |Tr Θ|/‖Θ‖F", _argworst(diag, np.argmax), "<=", THETA_DIAGONAL_MAX,
        "talk: diagonals not too heavy; quantity and threshold ours")
    sq = T**2
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.maximum(sq.sum(axis=1).max(axis=1), sq.sum(axis=2).max(axis=1)) / np.where(fro_t > 0, fro_t**2, 1)
    share = np.where(fro_t > 0, share, np.inf)
    add("theta_columns", "attention", "max column/row share of ‖Θ‖F²", _argworst(share, np.argmax), "<=",
        min(1.0, 2 * max(math.log(d), 1.0) / d), "talk: columns not too heavy; quantity and threshold ours")
    lat = np.array([lattice_distance(t) for t in T])
    add("theta_nonarithmetic", "attention", "min lattice distance of entries", _argworst(lat, np.argmin), ">=",
        THETA_NONARITHMETIC_MIN, "talk: entries far from any lattice; quantity and threshold ours")
    add("theta_norm_ratio", "attention", "max ‖Θi‖F / min ‖Θj‖F", (_norm_ratio(T), "-"), "<=", THETA_NORM_RATIO_MAX,
        "talk: norms comparable; threshold ours")
    add("theta_scale", "attention", "max ‖Θi‖F (logit std)", _argworst(fro_t, np.argmax), "<=",
        math.log(d) ** 2 if d > 1 else 0.0, "talk: norms bounded (polylog d; not checked)", checked=False)

    add("w_incoherence", "projection", "max |cos(Wi,Wj)|", _incoherence(W), "<=", W_INCOHERENCE_MAX,
        "talk: milder incoherence of W's; threshold ours")
    add("w_stable_rank", "projection", "min ‖W‖F²/‖W‖op²", _argworst(_stable_ranks(W), np.argmin), ">=",
        W_STABLE_RANK_MIN, "talk: milder stable rank of W's; threshold ours")
    add("w_norm_ratio", "projection", "max ‖Wi‖F / min ‖Wj‖F", (_norm_ratio(W), "-"), "<=", W_NORM_RATIO_MAX,
        "talk: W norms not too different; threshold ours")
    return AssumptionReport(m=m, d=d, k=k, rows=tuple(rows))
