"""Primal-uSVP model against lattice-estimator's values, LWR cost rows, the fpylll attack and its negative controls."""

import itertools
import math
import re
import subprocess
import sys
import time
from itertools import pairwise

import numpy as np
import pytest

from lowerbounds import lattice
from lowerbounds.lattice import (
    REFERENCE_ESTIMATES,
    cost_table,
    lattice_attack,
    lwr_cost,
    lwr_error_stddev,
    primal_usvp_cost,
    root_hermite_factor,
)

REFS = sorted(REFERENCE_ESTIMATES.items())
REF_IDS = [name for name, _ in REFS]


@pytest.fixture
def fpylll():
    return pytest.importorskip("fpylll")


def _instance(n, q, n_rows, seed, *, distinct=False):
    """Planted secret, binary public vectors (optionally pairwise distinct) and their labels."""
    gen = np.random.default_rng(seed)
    w = gen.integers(0, q, n)
    if distinct:  # rows of the 2^n cube without repetition, so no two labels can conflict
        codes = gen.choice(2**n, size=n_rows, replace=False)
        B = (codes[:, None] >> np.arange(n)) & 1
    else:
        B = gen.integers(0, 2, (n_rows, n))
    return w, B, ((B @ w) % q >= q / 2).astype(int)


class TestRootHermiteFactor:
    @pytest.mark.parametrize(("name", "ref"), REFS, ids=REF_IDS)
    def test_reference_delta(self, name, ref):
        # The estimator prints δ to six decimals; ours must round to the same digits.
        assert round(root_hermite_factor(ref.beta), 6) == ref.delta

    def test_small_block_sizes_use_the_table(self):
        assert [root_hermite_factor(b) for b in (2, 4, 5, 39, 40)] == [1.0219, 1.0219, 1.01862, 1.01331, 1.01295]
        deltas = [root_hermite_factor(b) for b in range(41, 500)]
        assert all(a > b for a, b in pairwise(deltas)) and deltas[0] < 1.01295


class TestPrimalUsvpCost:
    @pytest.mark.parametrize(("name", "ref"), REFS, ids=REF_IDS)
    def test_reproduces_lattice_estimator(self, name, ref):
        # Exact agreement, no tolerance: the model is the estimator's formulas (δ, GSA, ADPS16, normal
        # form, range of d), so a difference would be a bug. δ and core-SVP compared at the printed digits.
        c = primal_usvp_cost(ref.n, ref.q, ref.sigma_s, ref.sigma_e, m=ref.m)
        assert c.success and not c.normal_form and not c.at_floor
        assert (c.beta, c.dimension) == (ref.beta, ref.dimension)
        assert round(c.delta, 6) == ref.delta
        assert round(c.log2_classical, 1) == ref.log2_core_svp
        assert c.log2_quantum == pytest.approx(0.265 * ref.beta, rel=1e-12)
        assert c.samples == ref.dimension - ref.n - 1 <= ref.m

    @pytest.mark.parametrize("wrong", ["delta_of_half_beta", "no_volume"])
    @pytest.mark.parametrize(("name", "ref"), REFS, ids=REF_IDS)
    def test_negative_control_wrong_model_misses(self, name, ref, wrong):
        # A model with δ(β/2) or without Vol^{1/d} must be far from the references (> 2 block sizes or no answer).
        kwargs = ({"delta": lambda b: root_hermite_factor(max(2, b // 2))} if wrong == "delta_of_half_beta"
                  else {"with_volume": False})
        c = lattice._usvp_search(ref.n, ref.q, ref.sigma_s, ref.sigma_e, ref.m, **kwargs)
        assert not c.success or abs(c.beta - ref.beta) > 2

    def test_beta_grows_with_n_at_fixed_error_rate(self):
        q = 3329
        betas = [primal_usvp_cost(n, q, 3.0, 3.0).beta for n in (128, 256, 384, 512, 768)]
        assert all(a < b for a, b in pairwise(betas)), betas

    def test_beta_grows_with_the_error(self):
        betas = [primal_usvp_cost(256, 3329, 1.0, s).beta for s in (1.0, 2.0, 4.0, 8.0, 16.0)]
        assert all(a < b for a, b in pairwise(betas)), betas

    def test_uniform_secret_takes_the_normal_form(self):
        # σ_s > σ_e: n of the m samples make the secret error-sized, so the cost is that of (σ_e, σ_e, m − n).
        big = primal_usvp_cost(256, 3329, 960.0, 2.0, m=1024)
        small = primal_usvp_cost(256, 3329, 2.0, 2.0, m=768)
        assert big.normal_form and not small.normal_form
        assert (big.beta, big.dimension, big.m) == (small.beta, small.dimension, 768)

    def test_small_secret_gets_bai_galbraith_scaling(self):
        binary_like = primal_usvp_cost(256, 3329, 0.5, 2.0)
        assert binary_like.xi == 4.0 and binary_like.beta < primal_usvp_cost(256, 3329, 2.0, 2.0).beta

    def test_floor_and_failure_are_reported(self):
        easy = primal_usvp_cost(10, 3329, 1.0, 1.0)
        assert easy.success and easy.beta == 40 and easy.at_floor and "β <= 40" in easy.message
        starved = primal_usvp_cost(512, 3329, 1.0, 1.0, m=10)
        assert not starved.success and starved.beta is None and "10 samples" in starved.message


class TestLwrCost:
    @pytest.mark.parametrize("q", [3, 4, 5, 7, 8, 31, 32, 97])
    def test_error_stddev_by_enumeration(self, q):
        # E[e²] over y uniform in Z_q, centre = a middle integer of the labelled interval (either middle
        # integer of an even-sized interval gives the same second moment; both are checked).
        h0 = (q + 1) // 2
        for pick in (0, 1):
            errs = []
            for y in range(q):
                lo, hi = (h0, q - 1) if y >= h0 else (0, h0 - 1)
                errs.append(y - ((lo + hi) // 2 + pick * ((lo + hi) % 2)))
            assert lwr_error_stddev(q) == pytest.approx(math.sqrt(np.mean(np.square(errs))), rel=1e-14)

    def test_is_the_lwe_model_with_uniform_secret(self):
        c = lwr_cost(40, 7)
        ref = primal_usvp_cost(40, 7, math.sqrt(48 / 12), lwr_error_stddev(7))
        assert c == ref and c.normal_form and c.sigma_s == c.sigma_e

    def test_beta_grows_with_n_and_q(self):
        betas = [lwr_cost(n, 7).beta for n in (20, 40, 80)]
        assert all(a < b for a, b in pairwise(betas)), betas
        assert lwr_cost(30, 7).beta < lwr_cost(30, 97).beta < lwr_cost(30, 3329).beta


class TestCostTable:
    @pytest.mark.parametrize("q", [3, 4, 7, 8, 31])
    @pytest.mark.parametrize("n", [1, 2, 5, 13])
    def test_heads_count_label_transitions(self, n, q):
        y = np.arange(n * (q - 1) + 1)
        label = (y % q >= q / 2).astype(int)
        (row,) = cost_table([n], q)
        assert row.heads == int(np.count_nonzero(np.diff(label)))

    def test_rows(self):
        rows = cost_table([10, 40, 80], 7)
        assert [r.n for r in rows] == [10, 40, 80]
        assert [r.log2_exhaustive for r in rows] == pytest.approx([n * math.log2(7) for n in (10, 40, 80)])
        assert rows[0].at_floor and rows[1].beta < rows[2].beta
        assert rows[2].log2_core_svp == pytest.approx(0.292 * rows[2].beta)


class TestLatticeAttack:
    def test_recovers_planted_secret(self, fpylll):
        w, B, labels = _instance(10, 7, 400, seed=3)
        out = lattice_attack(B, labels, 7, block_size=16, secret=w, rng=0)
        assert out.success and out.matches_secret, out.message
        assert np.array_equal(((B @ np.array(out.secret)) % 7 >= 3.5).astype(int), labels)
        assert out.dimension == out.samples + 1 == 9 * 10 + 1

    @pytest.mark.parametrize(("n", "q"), [(4, 7), (6, 7), (5, 31)], ids=["n4-q7", "n6-q7", "n5-q31"])
    def test_small_instances_reproduce_the_labels(self, fpylll, n, q):
        # Few distinct b for small n: a secret may not be determined, so success means every label matches.
        _, B, labels = _instance(n, q, 300, seed=n)
        out = lattice_attack(B, labels, q, rng=1)
        assert out.success, out.message
        assert np.array_equal(((B @ np.array(out.secret)) % q >= q / 2).astype(int), labels)

    def test_negative_control_shuffled_labels(self, fpylll):
        # Same settings as the positive test; distinct rows, so only the lattice and the check can decide.
        w, B, labels = _instance(10, 7, 400, seed=3, distinct=True)
        assert lattice_attack(B, labels, 7, block_size=16, rng=0).success
        shuffled = np.random.default_rng(4).permutation(labels)
        out = lattice_attack(B, shuffled, 7, block_size=16, secret=w, rng=0)
        assert not out.success and out.secret is None and out.matches_secret is None
        assert "no candidate reproduces all 400 labels" in out.message

    def test_conflicting_labels_fail_at_once(self, fpylll):
        B = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 0]])
        out = lattice_attack(B, [0, 1, 0, 1], 7)
        assert not out.success and "different labels" in out.message

    def test_missing_fpylll_names_the_extra(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "fpylll", None)  # makes `import fpylll` raise ImportError
        with pytest.raises(ImportError, match=r'pip install -e "\.\[lattice\]"'):
            lattice_attack(np.eye(3, dtype=int), [0, 1, 0], 7)

    def test_module_imports_without_fpylll(self):
        code = "import sys; sys.modules['fpylll'] = None; import lowerbounds.lattice as m; print(m.lwr_cost(8, 7).beta)"
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert res.stdout.strip() == "40"


GOOD_B = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 1], [1, 1, 1]])
GOOD_LABELS = np.array([0, 1, 0, 1, 1])
BAD_ATTACK_INPUTS = [
    pytest.param({"q": 2}, "`q` must be at least 3; got q=2.", id="q-below-3"),
    pytest.param({"B": np.zeros((5, 0), dtype=int)}, "`B` must have at least one column", id="n-zero"),
    pytest.param({"B": GOOD_B[:, 0]}, "`B` must have 2 dimensions; got shape (5,)", id="B-1d"),
    pytest.param({"B": GOOD_B * 2}, "`B` must hold only 0 and 1; it contains 2", id="B-not-binary"),
    pytest.param({"labels": GOOD_LABELS + 1}, "`labels` must hold only 0 and 1; it contains 2", id="labels-not-binary"),
    pytest.param({"labels": GOOD_LABELS[:4]}, "`labels` must have one entry per row of `B`", id="shape-mismatch"),
    pytest.param({"n_samples": 3}, "`n_samples` must be at least n + 1 = 4", id="n-samples-small"),
    pytest.param({"n_samples": 6}, "`n_samples` must be at most the number of distinct rows of `B` (5)",
                 id="n-samples-large"),
    pytest.param({"block_size": 1}, "`block_size` must be at least 2; got block_size=1.", id="block-size"),
    pytest.param({"secret": [1, 2]}, "`secret` must be 3 integers", id="secret-shape"),
]


@pytest.mark.parametrize(("change", "message"), BAD_ATTACK_INPUTS)
def test_attack_bad_input(change, message):
    # Validation runs before fpylll is imported, so these hold without it.
    kwargs = {"B": GOOD_B, "labels": GOOD_LABELS, "q": 7} | change
    with pytest.raises(ValueError, match=re.escape(message)):
        lattice_attack(kwargs.pop("B"), kwargs.pop("labels"), kwargs.pop("q"), **kwargs)


BAD_MODEL_INPUTS = [
    pytest.param(lambda: primal_usvp_cost(0, 3329, 1.0, 1.0), "`n` must be at least 1; got n=0.", id="usvp-n"),
    pytest.param(lambda: primal_usvp_cost(8, 1, 1.0, 1.0), "`q` must be at least 2; got q=1.", id="usvp-q"),
    pytest.param(lambda: primal_usvp_cost(8, 7, 0.0, 1.0), "`sigma_s` must be finite and positive; got sigma_s=0.0",
                 id="usvp-sigma-s"),
    pytest.param(lambda: primal_usvp_cost(8, 7, 1.0, -1.0), "`sigma_e` must be finite and positive", id="usvp-sigma-e"),
    pytest.param(lambda: primal_usvp_cost(8, 7, 1.0, 1.0, m=0), "`m` must be at least 1; got m=0.", id="usvp-m"),
    pytest.param(lambda: lwr_cost(8, 2), "`q` must be at least 3; got q=2.", id="lwr-q"),
    pytest.param(lambda: lwr_error_stddev(2), "`q` must be at least 3; got q=2.", id="stddev-q"),
    pytest.param(lambda: cost_table([4, 0], 7), "`ns` must be at least 1; got ns=0.", id="table-n"),
    pytest.param(lambda: root_hermite_factor(1), "`beta` must be at least 2; got beta=1.", id="delta-beta"),
]


@pytest.mark.parametrize(("call", "message"), BAD_MODEL_INPUTS)
def test_model_bad_input(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def _reference_usvp(n, q, sigma_s, sigma_e, m, betas):
    """The smallest (β, d) of the documented condition, scalar and written out from the docstring, for β in ``betas``.

    Normal form, Bai–Galbraith scale, τ = σ_e, Vol = q^{d−n−1} ξ^n τ, d in [max(n + 2, β), max(β, ⌈√(n ln q / ln δ)⌉)]
    and d <= m + n + 1; success when √(σ_e²(β − 1) + τ²) <= δ^{2β − d − 1} Vol^{1/d} (in logarithms).
    """
    if sigma_s > sigma_e:
        if m is None or m >= 2 * n:
            sigma_s = sigma_e
            m = None if m is None else m - n
        else:
            sigma_s, sigma_e, m = sigma_e, sigma_s, n
    xi = max(1.0, sigma_e / sigma_s)
    for beta in betas:
        log_delta = math.log(root_hermite_factor(beta))
        top = max(beta, math.ceil(math.sqrt(n * math.log(q) / log_delta)))
        if m is not None:
            top = min(top, m + n + 1)
        for d in range(max(n + 2, beta), top + 1):
            log_vol = ((d - n - 1) * math.log(q) + n * math.log(xi) + math.log(sigma_e)) / d
            if 0.5 * math.log(sigma_e**2 * beta) <= (2 * beta - d - 1) * log_delta + log_vol:
                return beta, d
    return None


class TestUsvpSearchAgainstReference:
    @pytest.mark.parametrize(("n", "q", "sigma_s", "sigma_e", "m"), [
        (10, 7, 2.0, 1.07, None), (20, 7, 2.0, 1.07, None), (30, 97, 28.0, 1.0, None), (12, 3329, 1.0, 3.0, None),
        (150, 3329, 2.0, 2.0, None), (150, 3329, 0.5, 2.0, 300), (8, 3329, 1.0, 1.0, 31), (8, 3329, 1.0, 1.0, 30),
        (50, 2, 0.01, 0.01, None), (25, 7, 2.0, 1.07, 40), (25, 7, 2.0, 1.07, 50), (25, 7, 2.0, 1.07, 49),
        (40, 31, 9.0, 1.0, 60), (40, 31, 1.0, 1.0, 25),
    ])
    def test_matches_the_written_out_condition(self, n, q, sigma_s, sigma_e, m):
        c = primal_usvp_cost(n, q, sigma_s, sigma_e, m=m)
        ref = _reference_usvp(n, q, sigma_s, sigma_e, m, range(40, 400))
        assert (c.beta, c.dimension) == (ref if ref else (None, None))
        if c.success:  # at least one LWE sample in the lattice, at most the m available
            assert c.samples == c.dimension - n - 1 >= 1 and (c.m is None or c.samples <= c.m)

    def test_sample_limit_is_a_boundary(self):
        # With exactly the samples the unlimited optimum uses, nothing changes; with one fewer it must change.
        free = primal_usvp_cost(150, 3329, 2.0, 2.0)
        assert free.samples > 0 and free.dimension > free.beta
        assert (primal_usvp_cost(150, 3329, 2.0, 2.0, m=free.samples).dimension) == free.dimension
        fewer = primal_usvp_cost(150, 3329, 2.0, 2.0, m=free.samples - 1)
        assert fewer.samples <= free.samples - 1 and (fewer.beta, fewer.dimension) != (free.beta, free.dimension)
        assert (fewer.beta, fewer.dimension) == _reference_usvp(150, 3329, 2.0, 2.0, free.samples - 1, range(40, 400))

    @pytest.mark.parametrize("n", [5, 9, 20])
    def test_normal_form_threshold_at_2n_samples(self, n):
        # σ_s > σ_e: with m >= 2n samples the secret becomes error-sized (m − n left); with fewer, roles swap and m = n.
        at = primal_usvp_cost(n, 97, 28.0, 1.5, m=2 * n)
        assert at.normal_form and (at.sigma_s, at.sigma_e, at.m) == (1.5, 1.5, n)
        below = primal_usvp_cost(n, 97, 28.0, 1.5, m=2 * n - 1)
        assert below.normal_form and (below.sigma_s, below.sigma_e, below.m) == (1.5, 28.0, n)
        assert below.xi == pytest.approx(28.0 / 1.5)

    def test_messages_and_flags(self):
        mid = primal_usvp_cost(150, 3329, 2.0, 2.0)
        assert mid.beta > 40 and mid.success is True and mid.at_floor is False and "β <= 40" not in mid.message
        starved = primal_usvp_cost(512, 3329, 1.0, 1.0, m=10)
        assert starved.success is False and starved.at_floor is False

    @pytest.mark.parametrize(("sigma", "d"), [(1.6398071274492292, 40), (1.8931091084972902, 41)])
    def test_condition_is_inclusive(self, sigma, d):
        # σ_s = σ_e = σ (ξ = 1, τ = σ), n = 30, q = 3329, β = 40: at these σ the two sides of the success
        # condition (in logarithms) are the same float in dimension d, and d − 1 falls short, so "<=" picks d.
        n, q, beta = 30, 3329, 40
        log_delta = math.log(root_hermite_factor(beta))

        def sides(dim):
            dims = np.array([float(dim)])
            rhs = (2 * beta - dims - 1) * log_delta + (math.log(sigma) + n * 0.0 + (dims - n - 1) * math.log(q)) / dims
            return float(rhs[0]), 0.5 * math.log(sigma**2 * (beta - 1) + sigma**2)

        rhs, lhs = sides(d)
        assert rhs == lhs
        if d > beta:
            assert sides(d - 1)[0] < sides(d - 1)[1]
        c = primal_usvp_cost(n, q, sigma, sigma)
        assert (c.beta, c.dimension) == (beta, d)

    def test_search_ceiling_is_beta_max(self):
        # σ_e = 411.8: β = 4095 fails and 4096 = BETA_MAX succeeds; σ_e = 412.8: 4096 fails and only 4097 would succeed,
        # which is beyond the search, so the model reports a failure naming the ceiling.
        n, q, top = 4000, 2**20, lattice.BETA_MAX
        assert top == 4096
        assert _reference_usvp(n, q, 1.0, 411.8, None, [top - 1, top]) == (top, _reference_usvp(n, q, 1.0, 411.8, None,
                                                                                               [top])[1])
        last = primal_usvp_cost(n, q, 1.0, 411.8)
        assert last.success and (last.beta, last.dimension) == _reference_usvp(n, q, 1.0, 411.8, None, [top])
        assert _reference_usvp(n, q, 1.0, 412.8, None, [top]) is None
        assert _reference_usvp(n, q, 1.0, 412.8, None, [top + 1]) is not None
        beyond = primal_usvp_cost(n, q, 1.0, 412.8)
        assert beyond.success is False and beyond.beta is None and "β <= 4096" in beyond.message


class TestLwrCostArguments:
    @pytest.mark.parametrize(("n", "m"), [(20, 30), (20, 40), (12, 200)])
    def test_sample_limit_reaches_the_model(self, n, m):
        # σ_s is the standard deviation of a uniform secret on Z_q, here by enumeration; with m < 2n it becomes
        # the error of the swapped instance, so the value itself is visible.
        q = 7
        sigma_uniform = float(np.std(np.arange(q)))
        c = lwr_cost(n, q, m=m)
        ref = primal_usvp_cost(n, q, sigma_uniform, lwr_error_stddev(q), m=m)
        assert (c.beta, c.dimension, c.m) == (ref.beta, ref.dimension, ref.m)
        assert (c.sigma_s, c.sigma_e) == pytest.approx((ref.sigma_s, ref.sigma_e), rel=1e-12)
        assert c.m == (n if m < 2 * n else m - n)

    def test_bad_arguments_name_the_parameter(self):
        with pytest.raises(ValueError, match="`n` must be at least 1"):
            lwr_cost(0, 7)
        with pytest.raises(ValueError, match="`m` must be at least 1"):
            lwr_cost(8, 7, m=0)
        with pytest.raises(TypeError, match="`m` must be an integer"):
            lwr_cost(8, 7, m=3.5)
        with pytest.raises(ValueError, match="`q` must be at least 3; got q=0"):
            lwr_cost(8, 0)


def _no_secret_fits(B, labels, q):
    """Exhaustive check over all q^n secrets that none reproduces the labels."""
    n = B.shape[1]
    W = (np.arange(q**n)[:, None] // q ** np.arange(n)) % q
    return not (((W @ B.T) % q >= q / 2).astype(int) == labels).all(axis=1).any()


class TestAttackOutcomeFields:
    def test_failure_after_reduction_reports_the_last_block_size(self, fpylll):
        # 30 distinct rows, labels alternating: checked by enumeration that no secret mod 7 reproduces them.
        _, B, _ = _instance(5, 7, 30, seed=11, distinct=True)
        labels = np.arange(30) % 2
        assert _no_secret_fits(B, labels, 7)
        for block_size, expected in [(50, 13), (13, 13), (12, 12), (3, 3), (2, 2)]:
            before = time.perf_counter()
            out = lattice_attack(B, labels, 7, n_samples=12, block_size=block_size, rng=0)
            elapsed = time.perf_counter() - before
            assert out.success is False and out.secret is None and out.repair_steps is None
            assert (out.dimension, out.samples, out.block_size) == (13, 12, expected)
            assert 0 <= out.seconds <= elapsed

    def test_bkz_stages_and_tour_limit(self, fpylll, monkeypatch):
        # Progressive BKZ: block sizes 10, 12, ..., block_size, each with at most _MAX_LOOPS tours and auto-abort;
        # block_size = 2 is LLL alone (no BKZ call). On the instance no secret fits, so every stage runs.
        _, B, _ = _instance(5, 7, 30, seed=11, distinct=True)
        labels = np.arange(30) % 2
        calls = []
        reduction = fpylll.BKZ.reduction

        def spy(X, param):
            calls.append((param.block_size, param.max_loops, param.flags))
            return reduction(X, param)

        monkeypatch.setattr(fpylll.BKZ, "reduction", spy)
        both = fpylll.BKZ.AUTO_ABORT | fpylll.BKZ.MAX_LOOPS
        for block_size, stages in [(2, []), (3, [3]), (11, [10, 11]), (50, [10, 12, 13])]:
            calls.clear()
            lattice_attack(B, labels, 7, n_samples=12, block_size=block_size, rng=0)
            assert [c[0] for c in calls] == stages
            assert all(c[1] == lattice._MAX_LOOPS and c[2] & both == both for c in calls)

    def test_early_failures(self, fpylll):
        # Exactly n distinct rows: no lattice rows left.
        out = lattice_attack(np.eye(3, dtype=int), [0, 1, 0], 7)
        assert out.success is False and out.secret is None and out.block_size == 2 and "only 3 distinct" in out.message
        # Rank 2 < n = 3 over the integers: no 3 rows are invertible mod 7.
        B = np.array([[0, 0, 0], [1, 1, 0], [0, 0, 1], [1, 1, 1]])
        out = lattice_attack(B, [0, 0, 0, 0], 7)
        assert out.success is False and out.secret is None and out.block_size == 2 and "invertible" in out.message
        # Conflicting labels on equal rows.
        out = lattice_attack(np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 0]]), [0, 1, 0, 1], 7)
        assert out.success is False and out.block_size == 2

    def test_lll_only_success(self, fpylll):
        w, B, labels = _instance(10, 7, 400, seed=0)
        out = lattice_attack(B, labels, 7, block_size=2, secret=w, rng=0)
        assert out.success is True and out.matches_secret and out.block_size == 2
        assert out.repair_steps in (0, 1, 2) and out.message.startswith("LLL in dimension 91;")

    @pytest.mark.parametrize(("n", "rows", "seed"), [(10, 400, 3)])
    def test_bkz_success_reports_its_stage(self, fpylll, n, rows, seed):
        # LLL alone does not give these secrets (checked first); the progressive stages are 10, 12, ..., 24.
        w, B, labels = _instance(n, 7, rows, seed=seed)
        assert not lattice_attack(B, labels, 7, block_size=2, rng=0).success
        out = lattice_attack(B, labels, 7, secret=w, rng=0)
        assert out.success is True and out.matches_secret and out.repair_steps in (0, 1, 2)
        assert out.block_size in [*range(10, 24, 2), 24]
        assert out.message.startswith(f"BKZ-{out.block_size} in dimension {9 * n + 1};")

    @pytest.mark.parametrize("n", [6, 8, 10])
    def test_even_modulus(self, fpylll, n):
        # q = 8: y = 4 = q/2 is labelled 1, the boundary where the two halves meet.
        w, B, labels = _instance(n, 8, 300, seed=n)
        assert labels.sum() > 0
        out = lattice_attack(B, labels, 8, secret=w, rng=0)
        assert out.success, out.message
        assert np.array_equal(((B @ np.array(out.secret)) % 8 >= 4).astype(int), labels)


class TestAttackValidationBeforeImport:
    # With fpylll hidden, inputs that pass validation end in the ImportError; bad ones raise before it.
    @pytest.fixture(autouse=True)
    def _hide_fpylll(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "fpylll", None)

    @pytest.mark.parametrize(("B", "labels", "kwargs"), [
        pytest.param(GOOD_B.astype(float), GOOD_LABELS.astype(float), {}, id="float64"),
        pytest.param(GOOD_B.astype(np.float32), GOOD_LABELS, {}, id="float32"),
        pytest.param(GOOD_B.astype(bool), GOOD_LABELS.astype(bool), {}, id="bool"),
        pytest.param(GOOD_B[:, :1], GOOD_LABELS, {}, id="one-column"),
        pytest.param(GOOD_B[:1], GOOD_LABELS[:1], {}, id="one-row"),
        pytest.param(GOOD_B, GOOD_LABELS, {"n_samples": 4}, id="n-samples-n-plus-1"),
        pytest.param(GOOD_B, GOOD_LABELS, {"n_samples": 5}, id="n-samples-all-distinct"),
    ])
    def test_valid_inputs_reach_the_import(self, B, labels, kwargs):
        with pytest.raises(ImportError, match="fpylll"):
            lattice_attack(B, labels, 7, **kwargs)

    @pytest.mark.parametrize(("change", "message"), BAD_ATTACK_INPUTS)
    def test_bad_inputs_raise_before_the_import(self, change, message):
        kwargs = {"B": GOOD_B, "labels": GOOD_LABELS, "q": 7} | change
        with pytest.raises(ValueError, match=re.escape(message)):
            lattice_attack(kwargs.pop("B"), kwargs.pop("labels"), kwargs.pop("q"), **kwargs)

    @pytest.mark.parametrize(("change", "error", "message"), [
        pytest.param({"B": GOOD_B.astype(object)}, TypeError, "`B` must hold 0/1 numbers", id="B-object"),
        pytest.param({"B": GOOD_B.astype(str)}, TypeError, "`B` must hold 0/1 numbers", id="B-str"),
        pytest.param({"labels": GOOD_LABELS.astype(str)}, TypeError, "`labels` must hold 0/1 numbers",
                     id="labels-str"),
        pytest.param({"B": np.zeros((0, 3), dtype=int), "labels": np.zeros(0, dtype=int)}, ValueError,
                     "`B` must have at least one row", id="B-no-rows"),
        pytest.param({"n_samples": 4.0}, TypeError, "`n_samples` must be an integer", id="n-samples-float"),
        pytest.param({"q": 0}, ValueError, "`q` must be at least 3; got q=0", id="q-zero"),
    ])
    def test_more_bad_inputs(self, change, error, message):
        kwargs = {"B": GOOD_B, "labels": GOOD_LABELS, "q": 7} | change
        with pytest.raises(error, match=re.escape(message)):
            lattice_attack(kwargs.pop("B"), kwargs.pop("labels"), kwargs.pop("q"), **kwargs)


class TestAttackInternals:
    def test_unit_moves_by_enumeration(self):
        # Every v in {-1, 0, 1}^n with |v|_1 <= 2 exactly once, by non-decreasing weight.
        for n in (1, 2, 3, 5):
            moves = lattice._unit_moves(n)
            assert moves.shape == (n, 2 * n * n + 1)
            cols = [tuple(int(x) for x in c) for c in moves.T]
            expected = {v for v in itertools.product((-1, 0, 1), repeat=n) if sum(map(abs, v)) <= 2}
            assert len(cols) == len(set(cols)) and set(cols) == expected
            weights = [sum(map(abs, c)) for c in cols]
            assert weights == sorted(weights)

    def test_near_fit_reaches_the_last_move(self):
        # n = 23 has 2n² + 1 = 1059 moves; intervals of one point each admit only the last one, −e_21 − e_22.
        n, q = 23, 7
        moves = lattice._unit_moves(n)
        target = np.zeros(n, dtype=np.int64)
        target[[n - 2, n - 1]] = -1
        assert tuple(moves[:, -1]) == tuple(target)
        B = np.eye(n, dtype=np.int64)
        point = target % q
        fit = lattice._near_fit(B, point, point, np.zeros(n, dtype=np.int64), q, moves)
        assert fit is not None and tuple(fit[0]) == tuple(point) and fit[1] == 2

    @pytest.mark.parametrize("seed", range(6))
    def test_unit_pivot_rows_inverse(self, seed):
        # Prime q: n rows are found iff the distinct rows have full rank mod q (checked by brute force over
        # n-subsets and integer determinants), and the returned matrix is their inverse mod q.
        gen = np.random.default_rng(seed)
        n, q = 4, 7
        uniq = np.unique(gen.integers(0, 2, (6 if seed % 2 else 9, n)), axis=0)
        full_rank = any(round(np.linalg.det(uniq[list(c)])) % q for c in itertools.combinations(range(len(uniq)), n))
        for order_seed in range(5):
            picked = lattice._unit_pivot_rows(uniq, q, np.random.default_rng(order_seed).permutation(len(uniq)))
            assert (picked is not None) == full_rank
            if picked is not None:
                chosen, inv = picked
                assert len(set(chosen.tolist())) == n
                assert np.array_equal((uniq[chosen] @ inv) % q, np.eye(n, dtype=np.int64))

    def test_unit_pivot_needs_a_unit_not_a_one(self):
        # After (1, 1), the row (1, 0) reduces to (0, 6) mod 7: 6 is a unit, so both rows are kept.
        uniq = np.array([[1, 1], [1, 0]])
        chosen, inv = lattice._unit_pivot_rows(uniq, 7, np.array([0, 1]))
        assert sorted(chosen.tolist()) == [0, 1]
        assert np.array_equal((uniq[chosen] @ inv) % 7, np.eye(2, dtype=np.int64))
        # Determinant 2: elimination meets the pivot 2, whose inverse mod 7 is 4 (2 · 4 = 8 ≡ 1), not 2.
        uniq = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
        chosen, inv = lattice._unit_pivot_rows(uniq, 7, np.array([0, 1, 2]))
        assert np.array_equal((uniq[chosen] @ inv) % 7, np.eye(3, dtype=np.int64))

    @pytest.mark.parametrize("q", [7, 8])
    def test_embedding_intervals_centres_and_target(self, q):
        # Documented: I_0 = [0, ⌈q/2⌉ − 1], I_1 = [⌈q/2⌉, q − 1]; the centre is a middle integer, ties broken at
        # random per row; M = max(1, round(σ_e)); the lattice holds (e_2, e_1, M) for the planted secret, and the
        # normal-form rows and the lattice rows are distinct samples.
        n = 6
        w, B, labels = _instance(n, q, 200, seed=5)
        uniq, first = np.unique(B, axis=0, return_index=True)
        ulabels = labels[first]
        n_samples = uniq.shape[0]
        emb = lattice._Embedding.build(uniq, ulabels, q, n_samples, np.random.default_rng(0))
        half = -(-q // 2)
        assert np.array_equal(emb.lo, np.where(ulabels == 1, half, 0))
        assert np.array_equal(emb.hi, np.where(ulabels == 1, q - 1, half - 1))
        twice = emb.lo + emb.hi
        assert np.all((2 * emb.centre == twice) | (2 * emb.centre == twice - 1) | (2 * emb.centre == twice + 1))
        ties = twice % 2 == 1
        assert ties.sum() > 20 and 0 < np.count_nonzero(2 * emb.centre[ties] == twice[ties] + 1) < ties.sum()
        assert emb.M == {7: 1, 8: 1}[q]  # σ_e = 1.069 (q = 7), 1.2247 (q = 8)
        # The normal-form rows and the lattice rows: A' A_1 ≡ B_2, so together they are all distinct rows once.
        m_rows = n_samples - n
        A = emb.basis[m_rows:m_rows + n, :m_rows].T % q
        rest = (A @ uniq[emb.chosen]) % q
        together = np.concatenate([rest, uniq[emb.chosen]])
        assert sorted(map(tuple, together.tolist())) == sorted(map(tuple, uniq.tolist()))
        # The target (e_2, e_1, M) is an integer combination of the basis rows.
        e = (uniq @ w - emb.centre + q // 2) % q - q // 2
        rest_idx = [int(np.flatnonzero((uniq == r).all(axis=1))[0]) for r in rest]
        target = np.concatenate([e[rest_idx], e[emb.chosen], [emb.M]]).astype(float)
        coeffs = np.linalg.solve(emb.basis.T.astype(float), target)
        assert np.allclose(coeffs, np.round(coeffs), atol=1e-6)
        assert np.abs(e).max() <= -(-q // 4)


@pytest.mark.parametrize(("n", "q"), [(4, 7), (5, 31)], ids=["n4-q7", "n5-q31"])
def test_attack_is_reproducible_per_seed(fpylll, n, q):
    # Small n: several secrets reproduce the labels, and which one is found depends on the rng's picks.
    _, B, labels = _instance(n, q, 300, seed=n)

    def key(out):
        return out.success, out.secret, out.block_size, out.repair_steps, out.message

    runs = [(key(lattice_attack(B, labels, q, rng=s)), key(lattice_attack(B, labels, q, rng=s))) for s in range(8)]
    assert all(a == b for a, b in runs)
    assert len({a for a, _ in runs}) > 1


def test_attack_with_a_strategy_file(fpylll, monkeypatch, tmp_path):
    # Where fplll's strategy file exists the BKZ stages load it; plain strategies (no pruning) written by fpylll
    # itself stand in for the installed file, and the BKZ-needing instance above is still recovered.
    from fpylll.fplll.bkz_param import Strategy, dump_strategies_json

    path = tmp_path / "default.json"
    dump_strategies_json(str(path), [Strategy(b) for b in range(64)])
    monkeypatch.setattr(fpylll.BKZ, "DEFAULT_STRATEGY", str(path).encode())
    loaded = []
    reduction = fpylll.BKZ.reduction

    def spy(X, param):
        loaded.append(len(param.strategies))
        return reduction(X, param)

    monkeypatch.setattr(fpylll.BKZ, "reduction", spy)
    w, B, labels = _instance(10, 7, 400, seed=3)
    out = lattice_attack(B, labels, 7, secret=w, rng=0)
    assert out.success and out.matches_secret and out.block_size >= 10, out.message
    assert loaded and all(k == 64 for k in loaded)  # the file's 64 strategies, not fpylll's default ones


def test_fpylll_available_follows_the_import(fpylll, monkeypatch):
    assert lattice.fpylll_available() is True
    monkeypatch.setitem(sys.modules, "fpylll", None)
    assert lattice.fpylll_available() is False
