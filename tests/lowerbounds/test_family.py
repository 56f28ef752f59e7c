"""HardFamily's boundary cases: a family of one member, the correlation graph at threshold 0, enumeration at d = 8."""

from itertools import combinations

import mpmath
import numpy as np
import pytest

from lowerbounds import HardFamily


def test_family_whose_member_uses_every_free_coordinate():
    # d = 4, m = 4: the three free coordinates form the only hidden subset; it is a member of itself (ρ = 1).
    fam = HardFamily(4, 4)
    assert fam.free == (1, 2, 3) and fam.size == 1 and fam.members() == [(1, 2, 3)]
    assert fam.correlation((3, 1, 2), (1, 2, 3)) == 1.0
    with pytest.raises(ValueError, match="not a member"):
        fam.correlation((1, 2), (1, 2, 3))


class TestCorrelationGraphAtZero:
    def test_threshold_zero_joins_exactly_the_correlated_overlaps(self):
        # Steps family, d = 7, m = 3: free coordinates are 1..5 (t = 0, offset 6), ten members. Disjoint members
        # have ρ = 0 exactly (the closed form is an empty sum), members sharing one coordinate ρ(1) ≠ 0. At
        # threshold 0 ("an edge where |ρ| > threshold") the edges are the pairs sharing one coordinate:
        # 10 · C(2, 1) · C(3, 1) / 2 = 30.
        fam = HardFamily(7, 3, variant="steps")
        assert fam.inner(0) == 0 and fam.overlap_correlation(1) != 0
        graph = fam.correlation_graph(0.0)
        members = list(combinations(range(1, 6), 2))
        pairs = {frozenset((a, b)) for a, b in combinations(members, 2) if len(set(a) & set(b)) == 1}
        assert len(pairs) == 30
        assert {frozenset(e) for e in graph.edges()} == pairs and graph.number_of_nodes() == 10

    def test_threshold_equal_to_a_correlation_is_not_exceeded(self):
        fam = HardFamily(7, 3, variant="steps")
        assert fam.correlation_graph(abs(fam.overlap_correlation(1))).number_of_edges() == 0

    @pytest.mark.parametrize("threshold", [-1e-3, float("nan")])
    def test_negative_threshold_is_refused_by_name(self, threshold):
        with pytest.raises(ValueError, match="`threshold` must be finite and non-negative"):
            HardFamily(7, 3).correlation_graph(threshold)


def test_exact_enumeration_reaches_d_8():
    # The largest enumerable dimension: 4^8 inputs. Interpolation members with m = 2 (S a single coordinate) have
    # orthogonal deviations (closed form ρ(0) = 0), so both normalised Gram matrices are the identity up to the
    # float64 sum over 65,536 inputs.
    fam = HardFamily(8, 2)
    subsets, gram, signal_gram = fam.exact_correlations()
    assert subsets == [(j,) for j in range(1, 8)]
    np.testing.assert_allclose(gram, np.eye(7), rtol=0, atol=1e-12)
    np.testing.assert_allclose(signal_gram, np.eye(7), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="needs d <= 8, got d=9"):
        HardFamily(9, 2).exact_correlations()


def test_exact_correlations_of_given_subsets():
    # Subsets are normalised (sorted) and only they are enumerated; distinct interpolation members are orthogonal.
    fam = HardFamily(6, 3)
    subsets, gram, signal_gram = fam.exact_correlations([(2, 1), (4, 5)])
    assert subsets == [(1, 2), (4, 5)]
    np.testing.assert_allclose(gram, np.eye(2), rtol=0, atol=1e-12)
    np.testing.assert_allclose(signal_gram, np.eye(2), rtol=0, atol=1e-12)



@pytest.mark.parametrize("variant", ["interpolation", "steps"])
def test_exact_correlations_over_several_batches(monkeypatch, variant):
    # The enumeration sums over the cube's batches; at d <= 8 the default batch holds the whole cube, so small
    # batches (4^7 = 16,384 inputs in 164 of them) check that every batch counts, against the closed forms.
    import learner
    import lowerbounds.family as family

    monkeypatch.setattr(family, "enumerate_cube", lambda k, d: learner.enumerate_cube(k, d, batch=100))
    fam = HardFamily(7, 3, variant=variant)
    subsets, gram, signal_gram = fam.exact_correlations()
    closed = np.array([[fam.correlation(a, b) for b in subsets] for a in subsets])
    np.testing.assert_allclose(gram, closed, rtol=0, atol=1e-12)
    np.testing.assert_allclose(signal_gram, np.eye(len(subsets)), rtol=0, atol=1e-12)


def test_members_up_to_the_cap(monkeypatch):
    # A family of exactly MAX_MEMBERS members is listed; one more member than the cap is refused.
    import lowerbounds.family as family

    fam = HardFamily(7, 3)
    monkeypatch.setattr(family, "MAX_MEMBERS", fam.size)
    assert fam.members() == list(combinations(fam.free, fam.r))
    monkeypatch.setattr(family, "MAX_MEMBERS", fam.size - 1)
    with pytest.raises(ValueError, match=f"the family has {fam.size} members"):
        fam.members()

class TestClosedForms:
    def test_inner_is_an_mpmath_number_and_checks_its_overlap(self):
        fam = HardFamily(7, 3)
        assert isinstance(fam.inner(0), mpmath.mpf) and fam.inner(0) == 0  # the empty sum, as an mpmath number
        with pytest.raises(ValueError, match="`overlap` must be at most m − 1 = 2; got overlap=3"):
            fam.inner(3)
        with pytest.raises(ValueError, match="`overlap` must be at least 0; got overlap=-1"):
            fam.inner(-1)
        with pytest.raises(ValueError, match="`overlap` must be at least 0; got overlap=-1"):
            fam.neighbours(-1)

    @pytest.mark.parametrize(("d", "m", "variant"), [(8, 4, "interpolation"), (9, 3, "steps")])
    def test_neighbours_against_counting_the_members(self, d, m, variant):
        fam = HardFamily(d, m, variant=variant)
        members = fam.members()
        first = set(members[0])
        for j in range(fam.r + 1):
            brute = sum(1 for S in members[1:] if len(first & set(S)) == j)
            assert fam.neighbours(j) == brute, j

    def test_statistical_dimension_at_an_exact_integer(self):
        # Interpolation: R is ~1e-31, so 1 + R == 1.0 and the bound is ⌊N γ̄⌋ = ⌊36 / 4⌋ = 9 exactly.
        fam = HardFamily(10, 3)
        assert 1.0 + fam.row_sum() == 1.0 and fam.size == 36
        assert fam.statistical_dimension(0.25) == 9
        assert fam.statistical_dimension(1.0) == 36
        with pytest.raises(ValueError, match="`avg_correlation` must be finite and positive"):
            fam.statistical_dimension(0.0)

    def test_summary(self):
        # Interpolation, d = 10, m = 3: ρ = (0, ~0, 1) by overlap; E[dev²] = 2 Σ_l C(2, l)(A_l² + B_l²) = 2 (A_2 = 1),
        # so λ = 2 (1 + R) and the query bound is (N − 1)(Bτ)² / 2 with N = 36.
        fam = HardFamily(10, 3)
        out = fam.summary()
        assert (out["d"], out["m"], out["variant"], out["members"]) == (10, 3, "interpolation", 36)
        assert abs(out["row_sum"]) < 1e-20  # float64 residue of exactly orthogonal members
        assert out["provenance"] == "construction and closed forms ours; SD as in Feldman et al. (2017)"
        assert set(out["correlation_by_overlap"]) == {0, 1, 2}
        assert out["correlation_by_overlap"][0] == 0 and out["correlation_by_overlap"][2] == 1.0
        assert "query_lower_bound" not in out and "statistical_dimension_lower_bound" not in out
        out = fam.summary(tolerance=0.1, avg_correlation=0.25)
        B = fam.template.label_bound
        assert out["query_lower_bound"] == pytest.approx(35 * (B * 0.1) ** 2 / 2, rel=1e-12)
        assert out["tolerance"] == 0.1
        assert out["statistical_dimension_lower_bound"] == 9 and out["avg_correlation"] == 0.25


class TestNearlyOrthogonalSubfamily:
    def test_threshold_zero_packs_disjoint_pairs(self):
        # Steps, d = 7, m = 3: at threshold 0 members may not share a coordinate; pairwise disjoint 2-subsets of the
        # five free coordinates number at most ⌊5/2⌋ = 2 (packing bound C(5, 1) // C(2, 1)), and any maximal set
        # of them has 2 (one pair leaves three free coordinates, enough for another).
        fam = HardFamily(7, 3, variant="steps")
        out = fam.nearly_orthogonal_subfamily(0.0, rng=0)
        assert out["upper"] == 2 and out["lower"] == 2 and out["edges"] == 30 and out["threshold"] == 0.0
        a, b = out["members"]
        assert not set(a) & set(b)

    def test_threshold_at_the_largest_off_diagonal_correlation_keeps_everything(self):
        # No overlap j < m − 1 has |ρ| above ρ(1) itself: no edges, the whole family, upper bound N.
        fam = HardFamily(7, 3, variant="steps")
        out = fam.nearly_orthogonal_subfamily(abs(fam.overlap_correlation(1)), rng=0)
        assert out["edges"] == 0 and out["lower"] == out["upper"] == fam.size == 10
        assert out["members"] == fam.members()

    def test_reproducible_and_seeded_by_rng(self):
        # Steps, d = 12, m = 3 at 1e-3: two independent draws of networkx's greedy coincide with probability ~0.0015
        # (measured over 2000 seeds), so 100 rng values give ~92 distinct subfamilies if the seed carries rng's
        # entropy; the same rng gives the same one.
        fam = HardFamily(12, 3, variant="steps")
        for seed in (0, 1, 2):
            first = fam.nearly_orthogonal_subfamily(1e-3, rng=seed)["members"]
            assert fam.nearly_orthogonal_subfamily(1e-3, rng=seed)["members"] == first
            assert fam.nearly_orthogonal_subfamily(1e-3, rng=np.random.default_rng(seed))["members"] == first
        distinct = {tuple(fam.nearly_orthogonal_subfamily(1e-3, rng=s)["members"]) for s in range(100)}
        assert len(distinct) >= 80
