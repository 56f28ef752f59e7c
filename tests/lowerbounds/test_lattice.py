"""Primal-uSVP model against lattice-estimator's values, LWR cost rows, the fpylll attack and its negative controls."""

import math
import re
import subprocess
import sys
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
