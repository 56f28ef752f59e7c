"""Tests for learner.assumptions: the paper's non-degeneracy conditions and lattice_distance."""

import dataclasses
import json
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from learner import AssumptionReport, AttentionLayer, assumptions, enumerate_cube, lattice_distance, random_layer
from learner.assumptions import (
    CUBE_MARGIN,
    CUBE_WINDOW,
    SHARPNESS_REACH,
    _stable_ranks,
    check_setting,
    cube_constraint_count,
    max_sound_m,
    setting_conditions,
)
from learner.phases import LearnConfig, resolve_config
from learner.phases.forecast import DEFAULT_CANDIDATES
from learner.phases.sculpt import certify_rows

D = 8


def _base():
    """A planted layer (m=2, d=8) that passes every condition; negative controls perturb one thing."""
    return random_layer(2, D, rng=0)


def _equal_heads():
    t, w = _base().thetas, _base().ws
    return AttentionLayer(np.stack([t[0], t[0]]), w), None


def _rank_one_theta():
    rng = np.random.default_rng(1)
    r1 = np.outer(rng.standard_normal(D), rng.standard_normal(D))
    t, w = _base().thetas, _base().ws
    return AttentionLayer(np.stack([3 * r1 / np.linalg.norm(r1), t[1]]), w), None


def _scaled_identity():
    t, w = _base().thetas, _base().ws
    return AttentionLayer(np.stack([3 / math.sqrt(D) * np.eye(D), t[1]]), w), None


def _heavy_column():
    t, w = _base().thetas, _base().ws
    heavy = t[0].copy()
    heavy[:, 2] *= 6.0  # column 2 holds 36/(7 + 36) ≈ 84% of ‖Θ‖_F² (threshold 2 ln 8 / 8 = 52%)
    return AttentionLayer(np.stack([heavy, t[1]]), w), None


def _integer_entries():
    rng = np.random.default_rng(2)
    return AttentionLayer(rng.integers(-5, 6, size=(2, D, D)).astype(float), _base().ws), None


def _norms_1_and_10():
    t, w = _base().thetas, _base().ws
    return AttentionLayer(np.stack([t[0] / 3, 10 * t[1] / 3]), w), None


def _equal_ws():
    t, w = _base().thetas, _base().ws
    return AttentionLayer(t, np.stack([w[0], w[0]])), None


def _k_equals_d():
    return _base(), D


def _k_above_d():
    return _base(), D + 1


class TestAssumptions:
    @pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
    def test_planted_layers_pass(self, seed):
        """random_layer(2, 8) satisfies every checked condition (with k = 4 < d)."""
        report = assumptions(random_layer(2, D, rng=seed), k=4)
        assert report.ok, str(report)
        assert report.failed == ()

    @pytest.mark.parametrize(
        ("make", "name"),
        [
            (_equal_heads, "theta_incoherence"),
            (_rank_one_theta, "theta_stable_rank"),
            (_scaled_identity, "theta_diagonal"),
            (_heavy_column, "theta_columns"),
            (_integer_entries, "theta_nonarithmetic"),
            (_norms_1_and_10, "theta_norm_ratio"),
            (_equal_ws, "w_incoherence"),
            (_k_equals_d, "k_below_d"),
            (_k_above_d, "k_below_d"),
        ],
        ids=[
            "equal-heads",
            "rank-one-theta",
            "theta=cI",
            "heavy-column",
            "integer-entries",
            "norms-1-and-10",
            "equal-ws",
            "k=d",
            "k>d",
        ],
    )
    def test_negative_controls_fail(self, make, name):
        """Each classical degeneracy fails the condition written for it (and the report is not ok)."""
        layer, k = make()
        report = assumptions(layer, k=k)
        assert report[name].ok is False
        assert name in report.failed
        assert not report.ok

    def test_k_strictly_below_d_passes(self):
        """k = d − 1 satisfies k_below_d; without k the row is absent."""
        assert assumptions(_base(), k=D - 1)["k_below_d"].ok is True
        with pytest.raises(KeyError):
            assumptions(_base())["k_below_d"]

    def test_unchecked_rows(self):
        """Asymptotic statements are reported with ok=None and do not count as failures."""
        report = assumptions(_base())
        assert report["m_small"].ok is None and report["theta_scale"].ok is None
        assert report.ok

    def test_report_fields(self):
        """The report carries m, d, k and uniquely named rows."""
        report = assumptions(random_layer(3, 9, rng=0), k=5)
        assert isinstance(report, AssumptionReport)
        assert (report.m, report.d, report.k) == (3, 9, 5)
        names = [row.name for row in report.rows]
        assert len(names) == len(set(names))
        assert {
            "theta_incoherence",
            "theta_stable_rank",
            "theta_diagonal",
            "theta_columns",
            "theta_nonarithmetic",
            "theta_norm_ratio",
            "w_incoherence",
            "w_stable_rank",
            "w_norm_ratio",
            "k_below_d",
        } <= set(names)

    def test_str_names_failures(self):
        """str(report) lists every condition and ends with 'FAILED:' and the failed names."""
        layer, _ = _equal_heads()
        text = str(assumptions(layer, k=D))
        for row in assumptions(layer, k=D).rows:
            assert row.name in text
        # k = d also makes m(k−1) >= d: the certificate's soundness row fails with it.
        assert text.splitlines()[-1] == "FAILED: k_below_d, certificate_sound, theta_incoherence"

    def test_str_when_ok(self):
        """A passing report says so and does not say FAILED."""
        text = str(assumptions(_base(), k=4))
        assert "FAILED" not in text and text.splitlines()[-1] == "all checked conditions hold"

    def test_to_dict_is_json(self):
        """to_dict() is plain JSON (no NaN/inf, no numpy types) and round-trips."""
        layer, _ = _equal_heads()
        data = assumptions(layer, k=3).to_dict()
        assert json.loads(json.dumps(data, allow_nan=False)) == data
        assert data["ok"] is False and data["failed"] == ["theta_incoherence"]
        assert {row["name"] for row in data["rows"]} >= {"k_below_d", "w_norm_ratio"}

    def test_unknown_row_raises_key_error(self):
        """report['nope'] raises KeyError naming the missing condition."""
        with pytest.raises(KeyError, match="no condition named 'nope'"):
            assumptions(_base())["nope"]


class TestLatticeDistance:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_integers_are_on_a_lattice(self, seed):
        """Integer entries (|v| <= 5) lie on the lattice with spacing max|v|/q, q = max|v|: distance 0."""
        v = np.random.default_rng(seed).integers(-5, 6, size=30)
        # v / max|v| · q reproduces the integers up to ~2 roundings (< 1e-15).
        assert lattice_distance(v) < 1e-12

    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_scaled_integers_are_on_a_lattice(self, seed):
        """0.37·integers is an arithmetic progression too: distance ~0 (up to rounding, < 1e-12)."""
        v = 0.37 * np.random.default_rng(seed).integers(-7, 8, size=30)
        assert lattice_distance(v) < 1e-12

    @pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
    def test_gaussian_entries_are_far(self, seed):
        """64 Gaussian entries are far from every lattice: distance > 0.15.

        For each spacing the 64 scaled entries have spread-out fractional parts, whose RMS distance to
        the nearest integer is about 1/sqrt(12) ≈ 0.29 for uniform offsets (a bit less for q = 1, where
        the entries cluster near 0); the minimum over 32 spacings of such averages stays near 0.25.
        """
        assert lattice_distance(np.random.default_rng(seed).standard_normal((8, 8))) > 0.15

    def test_zeros_are_ignored(self):
        """Zero entries do not count; all-zero input gives 0."""
        v = np.random.default_rng(0).standard_normal(20)
        assert lattice_distance(np.r_[v, np.zeros(10)]) == lattice_distance(v)
        assert lattice_distance(np.zeros(5)) == 0.0

    def test_near_lattice_is_small_but_positive(self):
        """A lattice perturbed by 1e-3 of its spacing has a distance of that order."""
        rng = np.random.default_rng(0)
        v = rng.integers(1, 6, size=40) + 1e-3 * rng.standard_normal(40)
        assert 1e-4 < lattice_distance(v) < 1e-2

    # (values, q_max, expected) from the formula by hand: with v = (a, 1), a > 1, the scaled entries are (1, 1/a);
    # the entry 1 is on every lattice, and 1/a·q is at distance min(q/a, 1 − q/a) from ℤ, so the RMS over the two
    # entries is that distance / √2, minimised over q = 1..q_max.
    SPACINGS = [
        ([32.0, 1.0], None, 0.0),  # q = 32 = LATTICE_Q is tried: exactly on the lattice
        ([33.0, 1.0], None, 1 / (33 * math.sqrt(2))),  # q = 33 is not tried; q = 1 and q = 32 give 1/33
        ([1.0, 0.01], None, 0.01 / math.sqrt(2)),  # 0.01·q < 0.5 for every q <= 32: q = 1 is the best spacing
        ([6.0, 1.0], 5, 1 / (6 * math.sqrt(2))),  # q <= 5 misses q = 6; q = 1 and q = 5 give 1/6
        ([6.0, 1.0], 6, 0.0),
    ]

    @pytest.mark.parametrize(("values", "q_max", "expected"), SPACINGS, ids=str)
    def test_spacings_tried_are_q_1_to_q_max(self, values, q_max, expected):
        """The spacings max|v|/q run over q = 1..q_max inclusive (q_max = LATTICE_Q = 32 by default)."""
        kwargs = {} if q_max is None else {"q_max": q_max}
        # v/max|v|·q is exact or off by one rounding (~1e-16): abs 1e-12 leaves room for it and nothing else.
        assert lattice_distance(values, **kwargs) == pytest.approx(expected, abs=1e-12)

    @pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (-1, ValueError), (2.5, TypeError)])
    def test_q_max_is_checked(self, bad, error):
        with pytest.raises(error, match=r"^`q_max` must be"):
            lattice_distance([1.0, 0.5], q_max=bad)

    @pytest.mark.parametrize(
        "values",
        [[Fraction(1, 3), Fraction(-2, 3), Fraction(1)], [2**64, -3 * 2**62, 2**63]],
        ids=["fractions", "integers-beyond-int64"],
    )
    def test_exact_numbers_are_read_as_reals(self, values):
        """Python Fractions and integers too large for int64 are reals like any other: thirds lie on the lattice
        with spacing max|v|/3, and 2^64, −3·2^62, 2^63 on the one with spacing max|v|/4 (distance ~0, up to the
        rounding of 1/3, < 1e-12)."""
        assert lattice_distance(values) < 1e-12


def _layer_with_zero_head(which):
    """_base() with head 1 of ``which`` ("thetas" or "ws") set to zero."""
    t, w = _base().thetas.copy(), _base().ws.copy()
    {"thetas": t, "ws": w}[which][1] = 0.0
    return AttentionLayer(t, w)


class TestDegenerateHeads:
    @pytest.mark.parametrize(("which", "prefix"), [("thetas", "theta"), ("ws", "w")])
    def test_zero_head(self, which, prefix):
        """A zero head is as degenerate as a head can be, and the report says so without a floating-point warning:
        |cos| with it counts as 1 (the largest a cosine can be, as for two equal heads), its stable rank is 0 (at
        most its rank, 0), and the norm ratio is infinite. The zero head is head 1, and each row names it."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            report = assumptions(_layer_with_zero_head(which), k=4)
        incoherence = report[f"{prefix}_incoherence"]
        assert (incoherence.value, incoherence.worst, incoherence.ok) == (1.0, "heads 0,1", False)
        stable = report[f"{prefix}_stable_rank"]
        assert (stable.value, stable.worst, stable.ok) == (0.0, "head 1", False)
        ratio = report[f"{prefix}_norm_ratio"]
        assert (ratio.value, ratio.ok) == (math.inf, False)

    def test_tiny_head_raises_no_warning(self):
        """A head scaled by 1e-200 (its squared entries underflow to 0) is measured without a floating-point
        warning; its norm is 1e-200 times the other's, far beyond the norm-ratio threshold."""
        t, w = _base().thetas.copy(), _base().ws
        t[1] *= 1e-200
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            report = assumptions(AttentionLayer(t, w), k=4)
        assert report["theta_norm_ratio"].ok is False and not report.ok

    def test_huge_entries_raise_no_invalid_value_warning(self):
        """Entries of 1e200 square to inf (overflow ignored here): the stable rank of such an all-equal (rank-one)
        head comes out as nan or as its true value 1, with no 'invalid value' warning from inf/inf."""
        with warnings.catch_warnings(), np.errstate(over="ignore"):
            warnings.simplefilter("error")
            ranks = _stable_ranks(np.full((2, 3, 3), 1e200))
        assert all(np.isnan(r) or r == pytest.approx(1.0) for r in ranks)

    def test_single_head_is_incoherent(self):
        """With one head there is no pair of heads to be coherent: incoherence 0, the row holds, no pair named."""
        report = assumptions(random_layer(1, D, rng=0))
        for prefix in ("theta", "w"):
            row = report[f"{prefix}_incoherence"]
            assert (row.value, row.worst, row.ok) == (0.0, "m=1", True)

    def test_stable_rank_matches_singular_values(self):
        """The stable rank ‖Θ‖F²/‖Θ‖op² equals Σσ²/σ₁² from an SVD, at any scale of the heads; the row reports the
        smallest over heads and names that head. Different algorithms round differently: rel 1e-9."""
        layer = random_layer(3, D, rng=0)
        scales = np.array([0.5, 1.0, 3.0])[:, None, None]
        report = assumptions(AttentionLayer(layer.thetas * scales, layer.ws * scales))
        for prefix, mats in (("theta", layer.thetas * scales), ("w", layer.ws * scales)):
            sv = np.linalg.svd(mats, compute_uv=False)
            expected = (sv**2).sum(axis=1) / sv[:, 0] ** 2
            row = report[f"{prefix}_stable_rank"]
            assert row.value == pytest.approx(expected.min(), rel=1e-9)
            assert row.worst == f"head {int(np.argmin(expected))}"

    def test_norm_ratio_of_exact_norms(self):
        """Heads with Frobenius norms exactly 1 and 2 (entries ±0.5 and ±1 in four places) have ratio exactly 2."""
        one = np.zeros((D, D))
        one[0, 1] = one[2, 3] = 0.5
        one[4, 5] = one[6, 7] = -0.5
        layer = AttentionLayer(np.stack([one, 2 * one.T]), np.stack([2 * one, one.T]))
        report = assumptions(layer)
        assert report["theta_norm_ratio"].value == 2.0 and report["w_norm_ratio"].value == 2.0


class TestSettingConditions:
    @pytest.mark.parametrize(
        ("setting", "failed"),
        [
            ((3, 8, 4), {"certificate_sound", "cube_configurations"}),  # m(k−1) = 9 > d
            ((3, 8, 2), {"cube_configurations"}),  # too few inputs on the cube for two windows
            ((5, 12, 2), {"cube_configurations"}),
            ((2, 8, 8), {"k_below_d", "certificate_sound"}),
            ((1, 8, 1), {"two_tokens"}),
        ],
        # sorted: a set's order varies between processes (hash randomisation), and ids must not (pytest-xdist)
        ids=lambda v: str(sorted(v) if isinstance(v, set) else v),
    )
    def test_unsound_settings_name_their_condition(self, setting, failed):
        """Each unsound setting fails exactly the conditions written for it."""
        report = check_setting(*setting)
        assert not report.ok and set(report.failed) == failed
        for name in failed:
            assert name in report.message()

    # (m, d, k) with m(k−1) = d exactly, and the same (m, k) one dimension up (m(k−1) = d − 1).
    BOUNDARY = [(2, 8, 5), (4, 8, 3), (8, 8, 2), (3, 9, 4), (3, 12, 5)]

    @pytest.mark.parametrize("setting", BOUNDARY, ids=str)
    def test_certificate_soundness_boundary(self, setting):
        """The documented rule: sound iff m(k−1) < d; at m(k−1) = d (the row's own wording: "with m(k−1) >= d
        disagreeing heads can fit a row with zero residual") the row fails, one dimension more and it holds."""
        m, d, k = setting
        assert m * (k - 1) == d
        rows = {(dd, row.name): row for dd in (d, d + 1)
                for row in setting_conditions(m, dd, k, distribution="gaussian")}
        assert rows[d, "certificate_sound"].ok is False
        assert rows[d + 1, "certificate_sound"].ok is True
        assert (rows[d, "certificate_sound"].value, rows[d, "certificate_sound"].threshold) == (float(d), float(d))

    @pytest.mark.parametrize(("d", "k", "expected"), [(8, 5, 1), (9, 4, 2), (12, 4, 3), (12, 5, 2), (8, 3, 3)])
    def test_max_sound_m_stops_below_equality(self, d, k, expected):
        """With Gaussian inputs (no cube condition) and k < d, m(k−1) < d is the only limit on m: the largest
        sound m is ceil(d/(k−1)) − 1, which leaves m(k−1) = d out whenever k − 1 divides d."""
        assert expected == math.ceil(d / (k - 1)) - 1
        assert max_sound_m(d, k, distribution="gaussian") == expected

    @pytest.mark.parametrize("setting", [(3, 12, 2), (4, 12, 2), (5, 16, 2), (3, 16, 3), (2, 8, 4), (1, 6, 3)],
                             ids=str)
    def test_the_measured_settings_are_sound(self, setting):
        assert check_setting(*setting).ok

    def test_gaussian_inputs_have_no_cube_condition(self):
        """The cube's finiteness is a Boolean matter: (3, 8, 2) is sound with Gaussian inputs."""
        assert check_setting(3, 8, 2, distribution="gaussian").ok
        assert "cube_configurations" not in {r.name for r in setting_conditions(3, 8, 2, distribution="gaussian")}

    @pytest.mark.parametrize(("d", "k", "expected"), [(8, 2, 2), (12, 2, 4), (16, 2, 6), (8, 4, 2), (12, 3, 4)])
    def test_max_sound_m(self, d, k, expected):
        assert max_sound_m(d, k) == expected
        assert check_setting(expected, d, k).ok and not check_setting(expected + 1, d, k).ok

    @pytest.mark.parametrize(("m", "d", "k", "window"),
                             [(1, 8, 2, CUBE_WINDOW), (2, 8, 3, CUBE_WINDOW), (3, 12, 4, CUBE_WINDOW), (2, 5, 5, 0.5)],
                             ids=str)
    def test_cube_constraint_count_is_the_documented_formula(self, m, d, k, window):
        """log N for N = k(k−1)·2^(kd) / (2·k!) · w^((m−1)(k−1)), evaluated here in exact rational arithmetic; the
        module works in logs (rounding of a few 1e-14 on values below 100: abs 1e-9)."""
        n = Fraction(k * (k - 1) * 2 ** (k * d), 2 * math.factorial(k)) * Fraction(window) ** ((m - 1) * (k - 1))
        expected = math.log(n.numerator) - math.log(n.denominator)
        assert cube_constraint_count(m, d, k, window=window) == pytest.approx(expected, abs=1e-9)
        if window == CUBE_WINDOW:
            assert cube_constraint_count(m, d, k) == pytest.approx(expected, abs=1e-9)

    def test_max_m_follows_the_distribution(self):
        """The report's max_m is the largest sound m for the same inputs: with Gaussian inputs at (d, k) = (8, 2) only
        m(k−1) < d limits m, so max_m = d − 1 = 7, where Boolean inputs stop at 2 (the cube condition)."""
        assert check_setting(3, 8, 2, distribution="gaussian").max_m == 8 - 1
        assert check_setting(3, 8, 2).max_m == 2

    def test_max_m_follows_the_logit_scale(self):
        """A logit scale above the measured boundary at (8, 2) fails sharpness_reach for every m >= 2 (the row's
        documented range), and m = 1, which has no such row, is sound: max_m drops from 2 to 1."""
        scale = SHARPNESS_REACH[8, 2][0] + 1.0
        report = check_setting(2, 8, 2, logit_scale=scale)
        assert report.max_m == 1 and max_sound_m(8, 2, logit_scale=scale) == 1
        assert check_setting(1, 8, 2, logit_scale=scale).ok and check_setting(2, 8, 2).max_m == 2
        assert report.message().endswith("this (d, k) allows at most m = 1.")

    @pytest.mark.parametrize(("d", "expected"), [(100, 64), (65, 64), (64, 63), (5, 4)])
    def test_max_sound_m_default_limit_is_64(self, d, expected):
        """With Gaussian inputs at k = 2 the rule m(k−1) < d allows m up to d − 1; the search stops at limit = 64
        (inclusive) when no explicit limit is given."""
        assert expected == min(d - 1, 64)
        assert max_sound_m(d, 2, distribution="gaussian") == expected

    @pytest.mark.parametrize("limit", [1, 2, 5])
    def test_max_sound_m_limit_is_inclusive(self, limit):
        """An explicit limit below d − 1 is itself the answer: m = limit is sound (limit(k−1) < d) and searched."""
        assert max_sound_m(20, 2, distribution="gaussian", limit=limit) == limit

    @pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (-3, ValueError), (2.0, TypeError), ("4", TypeError)])
    def test_max_sound_m_checks_limit(self, bad, error):
        """A limit that is not a positive integer is refused, naming the argument."""
        with pytest.raises(error, match=r"^`limit` must be"):
            max_sound_m(8, 2, limit=bad)

    def test_message_when_only_the_reach_fails(self):
        """A setting that fails only the measured logit-scale reach is called beyond the reach, not unsound; with
        another failure besides it, or without it, the setting is not sound."""
        scale = SHARPNESS_REACH[8, 2][0] + 1.0
        only = check_setting(2, 8, 2, logit_scale=scale)
        assert only.failed == ("sharpness_reach",)
        assert only.message().startswith("(m, d, k) = (2, 8, 2) with boolean inputs is beyond the learner's measured "
                                         "reach in logit scale: sharpness_reach: ")
        both = check_setting(3, 8, 2, logit_scale=scale)
        assert set(both.failed) == {"cube_configurations", "sharpness_reach"}
        assert both.message().startswith("(m, d, k) = (3, 8, 2) with boolean inputs is not sound for certification: ")
        assert check_setting(3, 8, 2).message().startswith("(m, d, k) = (3, 8, 2) with boolean inputs is not sound "
                                                           "for certification: cube_configurations: ")

    @pytest.mark.parametrize("setting", [(1, 8, 8), (2, 8, 9), (1, 8, 1)], ids=str)
    def test_message_when_no_m_is_sound(self, setting):
        """k >= d fails k_below_d and k = 1 fails two_tokens whatever m is: max_m = 0, and the message says that no
        m is sound instead of naming m = 0."""
        report = check_setting(*setting)
        assert report.max_m == 0
        assert report.message().endswith("; no m is sound at this (d, k).")
        assert "at most m" not in report.message()

    def test_message_names_the_largest_sound_m(self):
        assert "allows at most m = 2" in check_setting(3, 8, 2).message()

    def test_message_of_a_sound_setting_says_so(self):
        message = check_setting(2, 8, 4).message()
        assert message == ("(m, d, k) = (2, 8, 4) with boolean inputs is sound for certification (every condition "
                           "holds); this (d, k) allows at most m = 2.")

    @pytest.mark.parametrize("bad", ["Boolean", None, 3, "", ["boolean"]])
    def test_distribution_is_checked(self, bad):
        with pytest.raises(ValueError, match="`distribution` must be one of"):
            check_setting(2, 8, 4, distribution=bad)
        with pytest.raises(ValueError, match=r"got distribution="):
            max_sound_m(8, 4, distribution=bad)

    def test_assumption_report_includes_the_setting_rows(self):
        report = assumptions(random_layer(3, D, logit_scale=1.0, rng=0), k=2)
        assert report["cube_configurations"].ok is False and not report.ok
        assert assumptions(random_layer(3, D, logit_scale=1.0, rng=0), k=2, distribution="gaussian").ok

    @pytest.mark.parametrize(("m", "sound"), [(2, True), (3, False)], ids=["m=2 sound", "m=3 unsound"])
    def test_enumerated_cube_agrees_with_the_model(self, m, sound):
        """The cube condition, checked exactly: certify every one of the 2^16 inputs at (m, 8, 2).

        With the true ΣW and the learner's tolerance, count the distinct constraints the whole
        cube can certify. The model (cube_constraint_count) calls m = 3 unsound; enumeration must
        then find fewer than CUBE_MARGIN·d² distinct constraints, and m = 2 (the control, which
        the model calls sound) must find more. Layers at logit scale 1 (the k = 2 family).
        """
        cfg, _ = resolve_config(LearnConfig(), m)
        # Phase 4's pilot picks the smallest candidate, 0.015, where examples are cheap as here (k = 2).
        cfg = dataclasses.replace(cfg, refined_tol=min(DEFAULT_CANDIDATES))
        X = np.concatenate(list(enumerate_cube(2, D)))
        need = CUBE_MARGIN * D * D
        assert (cube_constraint_count(m, D, 2) >= math.log(need)) is sound
        for seed in range(3):
            layer = random_layer(m, D, logit_scale=1.0, rng=seed)
            A, *_ = certify_rows(X, layer(X), layer.ws.sum(0), tol=cfg.refined_tol, min_weight=cfg.min_weight)
            distinct = len(np.unique(np.round(A, 8), axis=0))
            assert (distinct >= need) is sound, (seed, distinct, need)
