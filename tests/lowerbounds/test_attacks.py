"""Attacks on the LWE-style family: exhaustive search, linear algebra, growth fits, learners on attention samples."""

import itertools
import json
import time

import numpy as np
import pytest

from lowerbounds import LWRParams, PublicSamples, lwr_hard_instance, named_lwr_instance, sample_lwr
from lowerbounds.attacks import (
    _classes,
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

    @pytest.mark.parametrize(("a", "b", "name"), [
        ((0, 0, 1.5), (0, 0, 1), "a"), ((0, 0, 1), (0, 0, 1.5), "b"), ((0, 0, np.nan), (0, 0, 1), "a"),
        ((True, False), (1, 0), "a"), ((1, 0), ("1", "0"), "b"),
    ], ids=str)
    def test_an_entry_that_is_not_an_integer_is_refused(self, a, b, name):
        # Truncated, 1.5 would be compared as the secret 1 (equivalent to (0, 0, 1) whatever q is).
        with pytest.raises(TypeError, match=f"`{name}` must hold integers"):
            equivalent_secrets(a, b, 7)

    def test_whole_floats_are_integers(self):
        assert equivalent_secrets((0.0, 0.0, 1.0), (0, 0, 2), 7) and not equivalent_secrets((0, 0, 4.0), (0, 0, 2), 7)
        assert equivalent_secrets(np.array([0, 0, 1], dtype=np.float32), (0, 0, 2), 7)

    def test_secrets_are_compared_as_exact_integers(self):
        # 2⁵³ + 17 and its residue mod 7 are the same element of Z_7, so the two secrets are equivalent; in float64 it
        # would round to 2⁵³ + 16, another residue, and its labels would differ.
        a = 2**53 + 17
        assert equivalent_secrets((a, 0), (a % 7, 0), 7)


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


def _zero_samples(n, q, N=5):
    """N samples with b = 0: ``⟨w, 0⟩ = 0`` gives label 0 for every secret, so all ``q^n`` secrets reproduce them."""
    return PublicSamples(LWRParams(n, q), np.zeros((N, n), dtype=np.int64), np.zeros(N, dtype=np.int64))


class TestExhaustiveCounting:
    @pytest.mark.parametrize("batch", [1, 7, 1 << 16])
    def test_count_and_classes_match_an_enumeration(self, batch):
        """Three samples at (n, q) = (3, 5) leave many secrets: the count and the number of label functions among
        them are those of a direct enumeration of Z_5^3, whatever the batch."""
        draw = sample_lwr(LWRParams(3, 5), 3, rng=4)
        t0 = time.perf_counter()
        out = exhaustive_search(draw.public, batch=batch)
        elapsed = time.perf_counter() - t0
        B, labels = draw.public.B, draw.public.labels
        kept = [w for w in itertools.product(range(5), repeat=3)
                if all(int(2 * (np.dot(b, w) % 5) >= 5) == lab for b, lab in zip(B, labels, strict=True))]
        V = list(itertools.product((0, 1), repeat=3))
        functions = {tuple(int(2 * (np.dot(v, w) % 5) >= 5) for v in V) for w in kept}
        assert len(kept) > 1 and len(functions) > 2  # a case where counting and classing matter
        assert out.candidates == len(kept) and out.extra["classes"] == len(functions)
        assert not out.success and "not pinned down" in out.message
        assert draw.public.consistent(out.secret)
        assert (out.attack, out.n, out.q, out.cost, out.samples) == ("exhaustive", 3, 5, 125.0, 3)
        assert 0 <= out.seconds <= elapsed

    def test_uninformative_samples_keep_every_secret(self):
        """With b = 0 only, all 25 secrets of Z_5^2 survive, counted across batches of 7 (7 + 7 + 7 + 4)."""
        out = exhaustive_search(_zero_samples(2, 5), batch=7)
        assert out.candidates == 25 and not out.success

    def test_truncated_survivors_are_not_classed(self):
        """At (n, q) = (1, 5) with b = 0 only, the 5 survivors make 2 label functions on b = 1 (w ∈ {0, 1, 2} → 0,
        w ∈ {3, 4} → 1). Classes are counted when all survivors are stored, never from a truncated list."""
        samples = _zero_samples(1, 5)
        full = exhaustive_search(samples, max_kept=5)
        assert full.candidates == 5 and full.extra["classes"] == 2 and not full.success
        first = exhaustive_search(samples, max_kept=1)  # only w = 0 stored: its one class must not pass for all
        assert first.candidates == 5 and first.extra["classes"] > 1 and not first.success
        assert "not pinned down" in first.message

    def test_default_max_kept_is_1000(self):
        """n = 1, q = 1001 with b = 0 only: exactly 1001 survivors (2 label functions), one more than the
        default max_kept of the signature, so the default run matches max_kept=1000, not 1001."""
        samples = _zero_samples(1, 1001)
        default = exhaustive_search(samples)
        assert default.candidates == 1001
        assert default.extra["classes"] == exhaustive_search(samples, max_kept=1000).extra["classes"]
        assert exhaustive_search(samples, max_kept=1001).extra["classes"] == 2

    def test_contradictory_labels(self):
        """b = (1) labelled both 0 and 1: no secret reproduces both."""
        samples = PublicSamples(LWRParams(1, 5), np.array([[1], [1]]), np.array([0, 1]))
        out = exhaustive_search(samples)
        assert out.candidates == 0 and out.secret is None and not out.success
        assert "wrong model" in out.message and not out.recovered((0,))
        assert out.to_dict()["secret"] is None

    def test_success_reports_no_caveat(self):
        draw = sample_lwr(LWRParams(2, 5), 200, rng=0)
        out = exhaustive_search(draw.public, max_secrets=25)  # q^n = 25 is not above max_secrets = 25
        assert out.success and out.recovered(draw.secret)
        assert "not pinned down" not in out.message and "wrong model" not in out.message
        record = out.to_dict()
        assert record["secret"] == list(out.secret) and json.loads(json.dumps(record))["secret"] == list(out.secret)

    def test_bad_limits_name_the_parameter(self):
        samples = sample_lwr(LWRParams(2, 5), 20, rng=0).public
        with pytest.raises(ValueError, match="max_kept"):
            exhaustive_search(samples, max_kept=0)
        with pytest.raises(ValueError, match="max_secrets"):
            exhaustive_search(samples, max_secrets=0)
        with pytest.raises(ValueError, match="exceeds max_secrets=1"):  # 1 is allowed, and 25 secrets exceed it
            exhaustive_search(samples, max_secrets=1)
        with pytest.raises(ValueError, match="max_secrets=24"):
            exhaustive_search(samples, max_secrets=24)


class TestClassesAtTheLimit:
    # w = e_n and w = 2 e_n at q = 7 give sums in {0, 1} and {0, 2}: label 0 on every b (2y < 7)
    def test_n16_is_enumerated(self):
        a, b = (0,) * 15 + (1,), (0,) * 15 + (2,)
        assert equivalent_secrets(a, b, 7)
        assert _classes([a, b], LWRParams(16, 7)) == 1

    def test_beyond_n16_secrets_are_compared_mod_q(self):
        a = tuple(range(1, 18))
        assert len(a) == 17
        assert equivalent_secrets(a, tuple(v + 7 for v in a), 7)  # the same secret mod 7
        assert not equivalent_secrets((0,) * 16 + (1,), (0,) * 16 + (2,), 7)  # equivalent, but not compared

    def test_labels_off_the_all_ones_vector(self):
        """w = (3, 2) at q = 5 sums to 0 on b = (1, 1) like w = 0, but b = (1, 0) gives 3 (label 1)."""
        assert not equivalent_secrets((0, 0), (3, 2), 5)


class TestLinearByHand:
    """n = 2, q = 5, public vectors (1, 0), (0, 1), (1, 1): the first two are the pivots, so the centred solve
    gives w_j = ⌊q/4 + ℓ_j q/2⌉ = 1 (ℓ = 0) or 4 (ℓ = 1), checked on the third."""

    B = np.array([[1, 0], [0, 1], [1, 1]])

    def _samples(self, secret, rounded=True):
        params = LWRParams(2, 5, rounded=rounded)
        return PublicSamples(params, self.B, params.label(self.B @ np.array(secret)))

    def test_centred_solve_fits(self):
        # w = (4, 4): labels (1, 1, 1) (sums 4, 4, 3); the centres give back (4, 4)
        t0 = time.perf_counter()
        out = linear_algebra_attack(self._samples((4, 4)))
        elapsed = time.perf_counter() - t0
        assert out.success and out.secret == (4, 4) and out.candidates == 1, out.message
        assert "reproduces every label" in out.message
        assert (out.attack, out.n, out.q, out.cost, out.extra["rounded"]) == ("linear", 2, 5, 2 * 2 * 3, True)
        assert 0 <= out.seconds <= elapsed

    def test_centred_solve_misses_the_third_label(self):
        # w = (4, 3): labels (1, 1, 0) (sums 4, 3, 2); the centres give (4, 4), whose third sum 3 has label 1
        out = linear_algebra_attack(self._samples((4, 3)))
        assert not out.success and out.secret is None and out.candidates == 0
        assert "only 0.0% of the other 1 " in out.message

    def test_no_unit_pivot(self):
        samples = PublicSamples(LWRParams(2, 5), np.zeros((3, 2), dtype=np.int64), np.zeros(3, dtype=np.int64))
        out = linear_algebra_attack(samples)
        assert not out.success and out.secret is None and "no unit pivot" in out.message

    def test_unrounded_with_a_modulus_near_2_31(self):
        """q = 2^31 − 1 (prime): products of residues reach 2^62, exact in int64 and not in float64."""
        q = 2**31 - 1
        draw = sample_lwr(LWRParams(8, q, rounded=False), 48, rng=0)
        out = linear_algebra_attack(draw.public)
        assert out.success and out.secret == draw.secret and out.extra["rounded"] is False


class TestFitGrowthDtype:
    @staticmethod
    def _slope(x, y):
        # closed-form least squares in float64
        x, y = np.asarray(x, dtype=np.float64), np.log(np.asarray(y, dtype=np.float64))
        return float(np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2))

    def test_float32_inputs_are_fitted_in_float64(self):
        ns = np.array([2, 3, 4, 5], dtype=np.float32)
        secs = np.array([0.013 * 2.9**n for n in (2, 3, 4, 5)], dtype=np.float32)
        base, used = fit_growth(ns, secs)
        assert used == 4 and base == pytest.approx(np.exp(self._slope(ns, secs)), rel=1e-12)
        # sizes equal to within float32 resolution (spacing 6.1e-5 at 1000) still span a well-posed float64 fit
        close = np.array([1000, 1000.00006, 1000.00012], dtype=np.float32)
        assert len(set(close.tolist())) == 3
        secs = np.array([0.01, 0.0100005, 0.0100009])
        assert fit_growth(close, secs)[0] == pytest.approx(np.exp(self._slope(close, secs)), rel=1e-6)

    def test_floor_is_exclusive(self):
        """Points "above" floor: a timing equal to it is dropped."""
        base, used = fit_growth([1, 2, 3], [0.01, 0.07, 0.49], floor=0.01)
        assert used == 2 and base == pytest.approx(7.0)


class TestTimeAttacksSamples:
    def test_exhaustive_budget_of_the_guide(self):
        # docs/guide/lower-bounds.md: `lwe-attack` at q = 7 gives the exhaustive search 112 samples at n = 2
        out = time_attacks([2], 7, attacks=("exhaustive",), repeats=1, rng=0)
        assert out["rows"][0]["samples"] == 112


GRADIENT_OPTIONS = {"max_iter": 30, "restarts": 1, "n_train": 2000, "n_val": 500}


def _spy_stages(monkeypatch, cap=None):
    """Record what each stage of attention_attack receives; LWR draws are cut to ``cap`` samples (the request is
    still recorded), which keeps runs at the default sizes cheap."""
    import learner
    import learner.baselines
    from lowerbounds import attacks

    seen = {"draws": [], "reduction": [], "learner": [], "predictor": []}
    real = {"sample": attacks.sample_lwr, "reduce": attacks.attention_samples, "predictor": attacks.lwr_predictor,
            "learn": learner.learn, "gradient": learner.baselines.fit_gradient}

    def sample(params, n_samples, *, secret=None, rng=None):
        draw = real["sample"](params, n_samples if cap is None else min(n_samples, cap), secret=secret, rng=rng)
        seen["draws"].append({"requested": n_samples, "rng": rng, "draw": draw})
        return draw

    def reduce(samples, layout, *, half="signal", rng=None):
        X, Y = real["reduce"](samples, layout, half=half, rng=rng)
        seen["reduction"].append({"samples": samples, "rng": rng, "X": X})
        return X, Y

    def wrap(name, key):
        def call(*args, **kwargs):
            seen[key].append(kwargs.get("rng"))
            return real[name](*args, **kwargs)
        return call

    monkeypatch.setattr(attacks, "sample_lwr", sample)
    monkeypatch.setattr(attacks, "attention_samples", reduce)
    monkeypatch.setattr(attacks, "lwr_predictor", wrap("predictor", "predictor"))
    monkeypatch.setattr(learner, "learn", wrap("learn", "learner"))
    monkeypatch.setattr(learner.baselines, "fit_gradient", wrap("gradient", "learner"))
    return seen


class TestAttentionStages:
    @pytest.mark.parametrize(("method", "sizes"), [("provable", {}), ("gradient", {"n_samples": 3000, "n_test": 500})])
    def test_each_stage_gets_the_secret_and_its_own_stream(self, monkeypatch, method, sizes):
        """The training and test draws are of the instance's secret, of the requested sizes (defaults 2 000 000 and
        20 000); the training draw, the reduction, the learner and the test draw each get a seeded stream of their
        own, and so does the predictor."""
        inst = named_lwr_instance("one-slab")
        seen = _spy_stages(monkeypatch, cap=3000)
        options = {"gradient_options": GRADIENT_OPTIONS} if method == "gradient" else {}
        out = attention_attack(inst, method=method, rng=0, **sizes, **options)
        train, test = seen["draws"]
        assert (train["requested"], test["requested"]) == (sizes.get("n_samples", 2_000_000),
                                                           sizes.get("n_test", 20_000))
        assert train["draw"].secret == inst.secret and test["draw"].secret == inst.secret
        assert seen["reduction"][0]["samples"] is train["draw"].public
        streams = [train["rng"], seen["reduction"][0]["rng"], seen["learner"][0], test["rng"]]
        assert all(isinstance(g, np.random.Generator) for g in streams + seen["predictor"])
        assert len({id(g) for g in streams}) == 4
        assert len(seen["predictor"]) == (out.extra["accuracy"] is not None) == (method == "gradient")

    def test_half_follows_the_offset(self, monkeypatch):
        """C = 0 (one-slab, two heads): inputs over both halves, some with x_1p = x_2p; C ≠ 0 (w = (2,), q = 3: one
        head): signal half only."""
        seen = _spy_stages(monkeypatch)
        even_inst, odd_inst = named_lwr_instance("one-slab"), lwr_hard_instance((2,), 3)
        assert even_inst.layout.total == 0 and odd_inst.layout.total != 0
        even = attention_attack(even_inst, method="provable", n_samples=400, n_test=10, rng=0)
        odd = attention_attack(odd_inst, method="provable", n_samples=400, n_test=10, rng=0)
        assert even.extra["half"] == "all" and odd.extra["half"] == "signal"
        (X_even, p_even), (X_odd, p_odd) = [(r["X"], inst.layout.p)
                                            for r, inst in zip(seen["reduction"], (even_inst, odd_inst), strict=True)]
        off_even = np.mean(X_even[:, 0, p_even] == X_even[:, 1, p_even])
        assert 0.3 < off_even < 0.7  # 400 fair coins
        assert not np.any(X_odd[:, 0, p_odd] == X_odd[:, 1, p_odd])


class TestAttentionOutcome:
    def test_seeded_reproducibility(self):
        inst = named_lwr_instance("one-slab")

        def run(seed):
            record = attention_attack(inst, method="gradient", n_samples=3000, n_test=2000,
                                      gradient_options=GRADIENT_OPTIONS, rng=seed).to_dict()
            del record["seconds"]
            return record

        first = run(0)
        assert run(0) == first and run(1) != first

    def test_a_generator_gives_four_streams(self):
        # The attack's four streams (samples, reduction, learner, test) are spawned from the generator passed, which
        # advances by those four only: the next attack from it draws from its fifth child on.
        inst = named_lwr_instance("one-slab")
        rng = np.random.default_rng(0)
        attention_attack(inst, method="gradient", n_samples=3000, n_test=2000, gradient_options=GRADIENT_OPTIONS,
                         rng=rng)
        assert rng.bit_generator.seed_seq.n_children_spawned == 4

    def test_fields(self):
        inst = named_lwr_instance("one-slab")
        t0 = time.perf_counter()
        out = attention_attack(inst, method="gradient", n_samples=3000, n_test=200, gradient_options=GRADIENT_OPTIONS,
                               rng=0)
        elapsed = time.perf_counter() - t0
        # n_train + n_val = 2500 examples drawn; one restart of max_iter = 30 steps that stopped at max_iter
        assert (out.attack, out.n, out.q, out.candidates, out.secret) == ("attention-gradient", 2, 3, 0, None)
        assert out.samples == 2500 and out.cost == 2500.0 and out.extra["optimiser_steps"] == 30
        assert out.success is False and f"LWR accuracy {out.extra['accuracy']:.4f}" in out.message
        assert 0 <= out.seconds <= elapsed

    def test_success_is_a_perfect_test_score(self):
        """One test sample: the accuracy is 0 or 1 and the majority baseline is 1; the plumbing predictor (label 0
        everywhere, see above) is right on the 3/4 of seeds whose test label is 0."""
        inst = named_lwr_instance("one-slab")
        outs = [attention_attack(inst, method="gradient", n_samples=3000, n_test=1, gradient_options=GRADIENT_OPTIONS,
                                 rng=seed) for seed in range(3)]
        assert all(o.extra["baseline"] == 1.0 and o.success == (o.extra["accuracy"] == 1.0) for o in outs)
        assert any(o.success for o in outs)

    def test_smallest_sizes(self):
        out = attention_attack(named_lwr_instance("one-slab"), method="provable", n_samples=1, n_test=1, rng=0)
        assert out.extra["learner_status"] == "setting" and out.extra["baseline"] == 1.0

    def test_bad_sizes_name_the_parameter(self):
        inst = named_lwr_instance("one-slab")
        with pytest.raises(ValueError, match="n_samples"):
            attention_attack(inst, n_samples=0)
        with pytest.raises(ValueError, match="n_test"):
            attention_attack(inst, n_test=0)
