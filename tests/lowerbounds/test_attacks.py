"""Attacks on the LWE-style family: exhaustive search, linear algebra, growth fits, learners on attention samples."""

import itertools

import numpy as np
import pytest

from lowerbounds import LWRParams, PublicSamples, lwr_hard_instance, named_lwr_instance, sample_lwr
from lowerbounds.attacks import (
    attention_attack,
    equivalent_secrets,
    exhaustive_search,
    fit_growth,
    linear_algebra_attack,
    time_attacks,
)


class TestExhaustiveSearch:
    @pytest.mark.parametrize(("n", "q"), [(1, 3), (2, 3), (3, 7), (4, 4), (4, 7), (5, 7), (5, 11)])
    def test_recovers_the_label_function(self, n, q):
        draw = sample_lwr(LWRParams(n, q), 8 * n * 4 + 64, rng=n * q)
        out = exhaustive_search(draw.public)
        assert out.success and out.recovered(draw.secret), out.message
        assert out.cost == q**n and out.candidates >= 1

    def test_random_labels_leave_no_secret(self):
        """Negative control: labels unrelated to any secret (shuffled) are reproduced by none."""
        draw = sample_lwr(LWRParams(5, 7), 200, rng=1)
        rng = np.random.default_rng(2)
        shuffled = PublicSamples(draw.public.params, draw.public.B, rng.permutation(draw.public.labels))
        out = exhaustive_search(shuffled)
        assert not out.success and out.candidates == 0 and out.secret is None

    def test_too_few_samples_is_reported(self):
        draw = sample_lwr(LWRParams(4, 7), 2, rng=3)
        out = exhaustive_search(draw.public)
        assert not out.success and out.extra["classes"] > 1 and "not pinned down" in out.message

    def test_bad_inputs(self):
        draw = sample_lwr(LWRParams(2, 5), 20, rng=0)
        with pytest.raises(TypeError, match="PublicSamples"):
            exhaustive_search(draw)
        with pytest.raises(ValueError, match="batch"):
            exhaustive_search(draw.public, batch=0)


class TestEquivalentSecrets:
    def test_classes_at_n3_q7(self):
        # regression value by enumeration: 343 secrets in Z_7^3, 80 label functions on {0,1}^3
        V = np.array(list(itertools.product((0, 1), repeat=3)))
        W = np.array(list(itertools.product(range(7), repeat=3)))
        assert len(np.unique((2 * ((W @ V.T) % 7) >= 7), axis=0)) == 80
        assert equivalent_secrets((0, 0, 1), (0, 0, 2), 7)  # both label 0 everywhere
        assert not equivalent_secrets((0, 0, 4), (0, 0, 2), 7)

    def test_shape_mismatch(self):
        with pytest.raises(ValueError, match="one length"):
            equivalent_secrets((1, 2), (1, 2, 3), 7)


class TestLinearAlgebraAttack:
    @pytest.mark.parametrize(("n", "q"), [(4, 7), (16, 7), (64, 11), (96, 4), (128, 257)])
    def test_unrounded_falls(self, n, q):
        draw = sample_lwr(LWRParams(n, q, rounded=False), n + 32, rng=n + q)
        out = linear_algebra_attack(draw.public)
        assert out.success and out.secret == draw.secret, out.message

    @pytest.mark.parametrize(("n", "q"), [(4, 7), (16, 7), (64, 11)])
    def test_rounded_does_not(self, n, q):
        """The control: the same solve on rounded labels fits its pivots and is near chance elsewhere."""
        draw = sample_lwr(LWRParams(n, q), n + 400, rng=n + q)
        out = linear_algebra_attack(draw.public)
        assert not out.success and out.secret is None
        held_out = float(out.message.split("only ")[1].split("%")[0]) / 100
        # 400 held-out labels: chance is ~1/2 (std 0.025); 0.65 is six standard errors away
        assert held_out < 0.65


class TestFitGrowth:
    def test_exact_exponential(self):
        base, used = fit_growth([2, 3, 4, 5], [0.01 * 3.0**n for n in (2, 3, 4, 5)])
        assert base == pytest.approx(3.0, rel=1e-12) and used == 4

    def test_floor_drops_overhead(self):
        base, used = fit_growth([1, 2, 3, 4], [1e-4, 1e-4, 0.01, 0.07])
        assert used == 2 and base == pytest.approx(7.0)
        assert np.isnan(fit_growth([1, 2], [1e-4, 1e-4])[0])

    def test_shapes(self):
        with pytest.raises(ValueError, match="one length"):
            fit_growth([1, 2, 3], [0.1, 0.2])


class TestTimeAttacks:
    def test_small_sweep(self):
        out = time_attacks([1, 2, 3], 5, attacks=("exhaustive", "linear"), repeats=2, rng=0)
        rows = {(r["attack"], r["n"]): r for r in out["rows"]}
        assert all(r["successes"] == 2 for r in rows.values())
        assert all("rounded_control_successes" in rows[("linear", n)] for n in (1, 2, 3))
        assert set(out["growth"]) == {"exhaustive", "linear"}

    def test_rounded_control_fails_beyond_tiny_n(self):
        # at n <= 3 the centred solve can reproduce every label by luck; from n = 8 it does not
        out = time_attacks([8, 12], 7, attacks=("linear",), repeats=3, rng=1)
        assert all(r["successes"] == 3 and r["rounded_control_successes"] == 0 for r in out["rows"])

    def test_unknown_attack(self):
        with pytest.raises(ValueError, match="attacks"):
            time_attacks([2], 5, attacks=("guess",))


class TestAttentionAttack:
    def test_gradient_pipeline_reports_accuracy(self):
        """Plumbing: reduction → fit_gradient → LWR predictor. Thirty steps leave the fit far off (validation
        relative error > 0.5), so its readout stays below 1/2 on every input and it predicts label 0 everywhere:
        the accuracy is the test's share of label 0, the majority baseline."""
        inst = named_lwr_instance("one-slab")
        out = attention_attack(inst, method="gradient", n_samples=3000, n_test=2000,
                               gradient_options={"max_iter": 30, "restarts": 1, "n_train": 2000, "n_val": 500},
                               rng=0)
        assert out.extra["learner_status"] == "not_converged" and not out.success
        # By enumeration of the four public vectors b ∈ {0,1}², y = b·(1, 2) ∈ {0, 2, 1, 3}: label 1 (y mod 3 >= 3/2)
        # only at b = (0, 1), so a test label is 0 with probability 3/4.
        V = np.array(list(itertools.product((0, 1), repeat=2)))
        p_zero = float(np.mean(inst.params.label(V @ np.array(inst.secret)) == 0))
        assert p_zero == 0.75
        # Binomial: 2000 test labels give a share of zeros within 4 standard errors (4·√(3/16/2000) ≈ 0.039) of
        # 3/4 but for a chance of 6e-5; a predictor of all ones would score ~0.25, a coin ~0.5.
        assert out.extra["accuracy"] == out.extra["baseline"]
        assert abs(out.extra["accuracy"] - p_zero) <= 4 * np.sqrt(p_zero * (1 - p_zero) / 2000)
        assert out.extra["half"] == "all" and out.extra["m"] == 2
        assert out.samples == 2500

    def test_provable_learner_refuses_the_setting(self):
        """(m, d, k) = (2, 4, 2) is too small a cube to certify two heads: refused before any example."""
        inst = named_lwr_instance("one-slab")
        out = attention_attack(inst, method="provable", n_samples=150_000, n_test=1000, rng=0)
        assert out.extra["learner_status"] == "setting" and out.extra["accuracy"] is None
        assert not out.success and "cube_configurations" in out.message

    def test_provable_learner_stops_at_phase_1(self):
        """Run anyway, the one-slab member's W_i cancel (ΣW = 0): our learner says so instead of a wrong layer."""
        from learner import LearnConfig

        inst = named_lwr_instance("one-slab")
        out = attention_attack(inst, method="provable", n_samples=150_000, n_test=1000,
                               config=LearnConfig(n_crude=100_000, allow_unsound=True), rng=0)
        assert out.extra["learner_status"] == "1_crude_sum" and out.extra["accuracy"] is None, out.message
        assert not out.success and "degenerate" in out.message

    def test_bad_inputs(self):
        inst = lwr_hard_instance((1, 2), 3)
        with pytest.raises(ValueError, match="method"):
            attention_attack(inst, method="sgd")
        with pytest.raises(TypeError, match="LWRInstance"):
            attention_attack(inst.layer)


class TestExhaustiveSize:
    def test_refused_up_front_beyond_max_secrets(self):
        """n = 12 at q = 7 is 1.4·10^10 secrets (hours): refused at once with the count and the way to ask."""
        draw = sample_lwr(LWRParams(12, 7), 50, rng=0)
        with pytest.raises(ValueError, match=r"q\^n = 7\^12 = 1.38e\+10 secrets exceeds max_secrets=1e\+09"):
            exhaustive_search(draw.public)
        with pytest.raises(ValueError, match="max_secrets=10"):
            exhaustive_search(sample_lwr(LWRParams(2, 5), 20, rng=0).public, max_secrets=10)
