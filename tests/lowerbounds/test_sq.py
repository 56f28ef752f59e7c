"""SQ hard instances: the gadget, the stated formulas, exact correlations, bounds, bad input."""

from itertools import combinations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from learner import enumerate_cube, load_layer, read_metadata
from lowerbounds import (
    HardFamily,
    gadget_layer,
    gadget_weight,
    interpolation_coefficients,
    sparse_linear_instance,
    sq_hard_instance,
    symmetric_fourier,
)

# The acceptance's tolerance for "layer(X) equals its stated formula": float64
# evaluation of coefficients up to ~2e4 (m = 5's condition number) stays ~1e-12.
FORMULA_TOL = 1e-9


def _cube(d):
    return np.concatenate(list(enumerate_cube(2, d)))


class TestGadget:
    def test_weight_matches_the_layer_on_every_input(self):
        rng = np.random.default_rng(0)
        theta = rng.standard_normal(5)
        layer = gadget_layer(theta[None], [1.0], t=0, o=1)
        X = _cube(5)
        P = layer.attention(X)[:, 0]  # (n, a, j)
        np.testing.assert_allclose(P[:, 0, 0], gadget_weight(theta, X), rtol=0, atol=1e-15)
        np.testing.assert_allclose(P[:, 1, 1], gadget_weight(theta, X), rtol=0, atol=1e-15)
        # Output (1, o): c [x_2t + σ (x_1t − x_2t)]; everything else zero but (2, o).
        Y = layer(X)
        w = gadget_weight(theta, X)
        np.testing.assert_allclose(Y[:, 0, 1], X[:, 1, 0] + w * (X[:, 0, 0] - X[:, 1, 0]), atol=1e-14)
        assert np.all(Y[:, :, [0, 2, 3, 4]] == 0)

    def test_weight_needs_boolean_two_token_inputs(self):
        with pytest.raises(ValueError, match="two tokens"):
            gadget_weight([0.0, 1.0], np.ones((3, 2)))
        with pytest.raises(ValueError, match="Boolean"):
            gadget_weight([0.0, 1.0], np.full((2, 2), 0.5))
        with pytest.raises(ValueError, match="`t` must be a coordinate"):
            gadget_layer(np.ones((1, 3)), [1.0], t=3, o=0)


class TestInterpolation:
    @pytest.mark.parametrize(("d", "m"), [(5, 2), (7, 3), (8, 4), (8, 5)])
    def test_layer_equals_formula_on_every_input(self, d, m):
        inst = sq_hard_instance(d, m, rng=d * m)
        X = _cube(d)
        assert np.abs(inst.layer(X)[:, 0, inst.o] - inst.formula(X)).max() < FORMULA_TOL
        # Row 2 carries the mirror image C x_1t − signal.
        assert np.abs(inst.layer(X)[:, 1, inst.o] - (inst.total * X[:, 0, inst.t] - inst.signal(X))).max() < FORMULA_TOL
        assert inst.total == pytest.approx(2.0, abs=1e-9)
        assert inst.condition > 1 and inst.metadata["condition_number"] == inst.condition

    def test_negative_control_wrong_subset_does_not_match(self):
        inst = sq_hard_instance(7, 3, subset=(2, 5))
        other = sq_hard_instance(7, 3, subset=(2, 6))
        X = _cube(7)
        assert np.abs(inst.layer(X)[:, 0, 0] - other.formula(X)).max() > 1.0

    def test_coefficients_solve_the_system(self):
        lams = [-1.25, -0.25, 0.75, 1.75]
        c, cond = interpolation_coefficients(lams)
        h = np.arange(4)[:, None]
        np.testing.assert_allclose((1 / (1 + np.exp(-2 * np.array(lams) * h))) @ c, [1, -1, 1, -1], atol=1e-12)
        assert 1e2 < cond < 1e5
        with pytest.raises(ValueError, match="distinct"):
            interpolation_coefficients([1.0, 1.0])

    def test_symmetric_fourier_against_brute_force(self):
        vals = [0.3, -1.2, 2.0, 0.7]
        r = 3
        coef = symmetric_fourier(vals)
        zs = np.array(list(np.ndindex(2, 2, 2))) * -2 + 1  # all sign vectors
        g = np.array([vals[int((z < 0).sum())] for z in zs])
        assert len(coef) == r + 1  # degrees 0..r only
        for ell in range(r + 1):
            for U in combinations(range(r), ell):
                brute = np.mean(g * np.prod(zs[:, list(U)], axis=1))
                assert float(coef[ell]) == pytest.approx(brute, abs=1e-14)


class TestSteps:
    @pytest.mark.parametrize(("d", "m"), [(5, 2), (7, 4), (8, 3), (8, 5)])
    def test_formula_on_the_stated_half_only(self, d, m):
        inst = sq_hard_instance(d, m, variant="steps", rng=d + m)
        assert max(abs(c) for c in inst.coefficients) <= 2
        X = _cube(d)
        half = inst.on_signal_half(X)
        assert half.mean() == 0.5
        diff = np.abs(inst.layer(X)[:, 0, inst.o] - inst.formula(X))
        assert diff[half].max() < FORMULA_TOL
        assert diff[~half].max() > 0.5  # the other half does not carry the signal

    def test_gadget_identity_holds_everywhere(self):
        inst = sq_hard_instance(7, 3, variant="steps", subset=(1, 3))
        X = _cube(7)
        np.testing.assert_allclose(inst.layer(X), inst.outputs_given_g(X, inst.g_values(X)), atol=1e-13)


class TestStepsDefaultOffset:
    """A given subset that holds d − 1 (or t that does): the offset defaults to the largest free coordinate."""

    @pytest.mark.parametrize(("d", "m", "subset", "t", "p"), [
        (8, 3, (2, 7), 0, 6),  # d − 1 in S
        (6, 2, (4,), 5, 3),  # t = d − 1 and d − 2 in S
        (7, 4, (4, 5, 6), 0, 3),  # the top three in S
        (8, 3, (2, 5), 0, 7),  # d − 1 free: the offset is d − 1 as without a subset
    ])
    def test_instance_equals_an_independent_construction(self, d, m, subset, t, p):
        inst = sq_hard_instance(d, m, subset=subset, variant="steps", t=t)
        assert inst.offset_coord == p and inst.metadata["offset"] == p
        # The heads written out from the definition: Θ_i = λ diag(1_S − τ_i e_p), τ_i = i − 1/2, λ = 40;
        # W_i = c_i e_t e_oᵀ with c = (1, −2, 2, −2, ...), o = 0.
        lam, c = 40.0, [1.0] + [2.0 * (-1) ** i for i in range(1, m)]
        thetas, ws = np.zeros((m, d, d)), np.zeros((m, d, d))
        for i in range(m):
            diag = np.zeros(d)
            diag[list(subset)] = lam
            diag[p] = -lam * (i - 0.5)
            thetas[i] = np.diag(diag)
            ws[i, t, 0] = c[i]
        np.testing.assert_allclose(inst.layer.thetas, thetas, rtol=1e-15, atol=0)
        np.testing.assert_array_equal(inst.layer.ws, ws)
        # The same layer as naming the offset explicitly.
        explicit = sq_hard_instance(d, m, subset=subset, variant="steps", t=t, offset=p)
        np.testing.assert_array_equal(inst.layer.thetas, explicit.layer.thetas)
        # Its stated formula on every input where x_1p ≠ x_2p, the parity computed from the definition.
        X = _cube(d)
        half = X[:, 0, p] != X[:, 1, p]
        parity = np.prod(X[:, 0, list(subset)] * X[:, 1, list(subset)], axis=1)
        want = sum(c) * X[:, 1, t] + (X[:, 0, t] - X[:, 1, t]) * parity
        assert np.abs(inst.layer(X)[half, 0, 0] - want[half]).max() < FORMULA_TOL

    def test_no_free_coordinate_is_named(self):
        with pytest.raises(ValueError, match=r"needs an offset coordinate outside S ∪ \{t\}; subset=\[1, 2\] and t=0 "
                                             r"leave none of the d=3 coordinates"):
            sq_hard_instance(3, 3, subset=(1, 2), variant="steps")


class TestFamily:
    @pytest.mark.parametrize("variant", ["interpolation", "steps"])
    def test_closed_form_matches_enumeration(self, variant):
        fam = HardFamily(7, 3, variant=variant)
        subsets, gram, signal_gram = fam.exact_correlations()
        off = ~np.eye(len(subsets), dtype=bool)
        # Distinct subsets: signals exactly orthogonal.
        assert np.abs(signal_gram[off]).max() < 1e-12
        closed = np.array([[fam.correlation(a, b) for b in subsets] for a in subsets])
        np.testing.assert_allclose(gram, closed, atol=1e-12)
        if variant == "interpolation":
            assert np.abs(gram[off]).max() < 1e-12
        else:  # the negative control: the off-half leaks S through low-degree terms
            assert fam.overlap_correlation(1) > 1e-3 and np.abs(gram[off]).max() > 1e-3

    def test_bounds_orthogonal_family(self):
        fam = HardFamily(20, 3)
        assert fam.size == 171 and fam.row_sum() < 1e-20
        assert fam.statistical_dimension(0.1) == 17  # ⌊N γ̄⌋
        B = fam.template.label_bound
        assert fam.query_lower_bound(0.1) == pytest.approx(170 * (B * 0.1) ** 2 / 2)
        graph = fam.correlation_graph(1e-6)
        assert graph.number_of_nodes() == 171 and graph.number_of_edges() == 0

    def test_nearly_orthogonal_subfamily_of_correlated_family(self):
        fam = HardFamily(12, 3, variant="steps")
        out = fam.nearly_orthogonal_subfamily(1e-3, rng=0)
        assert 0 < out["lower"] <= out["upper"] < fam.size
        for a, b in combinations(out["members"], 2):
            assert abs(fam.correlation(a, b)) <= 1e-3
        assert fam.statistical_dimension(0.5) < fam.size * 0.5

    def test_bad_input(self):
        with pytest.raises(ValueError, match="exact enumeration"):
            HardFamily(10, 3).exact_correlations()
        with pytest.raises(ValueError, match="not a member"):
            HardFamily(8, 3).correlation((0, 1), (2, 3))  # 0 is the reader t


class TestBadInput:
    @pytest.mark.parametrize(("kwargs", "match"), [
        ({"d": 6, "m": 2, "subset": (0,)}, "reader coordinate t=0 must not be in the subset"),
        ({"d": 6, "m": 2, "subset": ()}, r"^`subset` must be non-empty \(\|S\| = m − 1 >= 1\)\.$"),
        ({"d": 4, "m": 5, "subset": (0, 1, 2, 3)}, "fewer than d=4"),
        ({"d": 6, "m": 1}, "`m` must be at least 2"),
        ({"d": 6, "m": 3, "subset": (1,)}, "m − 1 = 2 coordinates; got |S|=1"),
        ({"d": 6, "m": 3, "subset": (1, 1)}, "must not repeat"),
        ({"d": 6, "m": 2, "subset": (7,)}, r"lie in \[0, d\)"),
        ({"d": 6, "m": 2, "subset": (5,), "variant": "steps", "offset": 5}, "offset coordinate 5 must not be in"),
        ({"d": 6, "m": 2, "variant": "stairs"}, "`variant` must be one of"),
        ({"d": 6, "m": 2, "offset": 3}, "steps' only"),
        ({"d": 6, "m": 2, "variant": "steps", "steepness": -1.0}, "`steepness` must be finite and positive"),
    ])
    def test_errors_name_the_problem(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            sq_hard_instance(**kwargs)


def test_instances_violate_the_papers_conditions():
    for variant in ("interpolation", "steps"):
        report = sq_hard_instance(10, 3, subset=(2, 5), variant=variant).assumption_report()
        assert not report.ok
        assert "theta_incoherence" in report.failed  # heads share one support


def test_cli_writes_an_instance(tmp_path, capsys):
    from lowerbounds.cli import main

    out = tmp_path / "sq.npz"
    assert main(["sq", "--d", "16", "--m", "3", "--seed", "0", "--out", str(out)]) == 0
    meta = read_metadata(out)["metadata"]
    inst = sq_hard_instance(16, 3, meta["subset"])
    assert np.array_equal(load_layer(out).thetas, inst.layer.thetas)
    assert meta["provenance"].startswith("construction ours") and meta["seed"] == 0
    assert "violated" in capsys.readouterr().out
    assert main(["sq", "--d", "4", "--m", "5"]) == 2
    assert "do not fit" in capsys.readouterr().err


class TestFamilyBadSizes:
    """Sizes that cannot work are named as sizes, before anything is built."""

    @pytest.mark.parametrize(
        ("args", "match"),
        [
            ((3, 5), r"m − 1 = 4 hidden coordinates do not fit in the 2 free coordinates of d=3 .*use d >= 5"),
            ((10**6, 3), r"m=3 heads at d=1000000 holds 2·m·d² float64 = .* GiB, beyond MAX_LAYER_BYTES"),
        ],
        ids=["d too small for m", "d too large to build"],
    )
    def test_refused_with_the_reason(self, args, match):
        with pytest.raises(ValueError, match=match):
            HardFamily(*args)

    def test_gadget_layer_guards_its_memory(self):
        with pytest.raises(ValueError, match="MAX_LAYER_BYTES"):
            gadget_layer(np.ones((2, 20_000)), np.ones(2), t=0, o=0)


class TestEveryAcceptedMemberMatchesItsFormula:
    @given(d=st.integers(3, 20), m=st.integers(2, 12), variant=st.sampled_from(["interpolation", "steps"]),
           seed=st.integers(0, 2**32 - 1))
    @settings(max_examples=40, deadline=None)
    def test_property(self, d, m, variant, seed):
        """Property: any member the constructor accepts equals its formula on random Boolean inputs.

        Over d <= 20, m <= 12 (the interpolation variant is accepted up to m = 7, steps up to
        m = d − 2; larger m only take longer to build) and both variants, on the inputs where the formula
        is claimed, to FORMULA_ACCURACY plus float64 rounding of the forward pass (64 ulps of
        Σ|c_i|, the largest the output can reach). Members the constructor refuses (m too large for
        d, or an interpolation too ill-conditioned to carry its formula) are not members.
        """
        from lowerbounds.sq import FORMULA_ACCURACY

        try:
            inst = sq_hard_instance(d, m, variant=variant, rng=seed)
        except ValueError:  # refused, with its reason (tested below): not a member
            assume(False)
        X = np.sign(np.random.default_rng(seed).standard_normal((400, 2, d)))
        X[X == 0] = 1.0
        half = inst.on_signal_half(X)
        err = np.abs(inst.layer(X)[:, 0, inst.o] - inst.formula(X))[half]
        slack = 64 * np.finfo(float).eps * float(np.sum(np.abs(inst.coefficients)))
        assert err.max(initial=0.0) <= FORMULA_ACCURACY + slack

    @pytest.mark.parametrize(("d", "m"), [(16, 11), (40, 12), (16, 8)], ids=str)
    def test_ill_conditioned_members_are_refused(self, d, m):
        """Members that miss their formula (by 351 and 5.5e6, and by 1.6e-8 at m = 8) are refused with the reason."""
        with pytest.raises(ValueError, match=r"misses its formula by .* > FORMULA_ACCURACY = 1e-09 .*condition number"):
            sq_hard_instance(d, m, rng=0)


class TestSparseLinearControl:
    # λ's for which the control's float64 layer misses its formula by more than the parity member's does (exact
    # errors about 6.4e-15 against 2.5e-16), so an accuracy between the two refuses the control alone.
    LAMS = (0.6, 0.74, 1.92)

    def test_layer_equals_sparse_linear_formula_with_given_reader_column_and_scales(self):
        ctl = sparse_linear_instance(7, 3, subset=(2, 5), t=3, o=1, lambdas=self.LAMS)
        assert (ctl.t, ctl.o, ctl.lambdas, ctl.subset) == (3, 1, self.LAMS, (2, 5))
        X = _cube(7)
        z = X[:, 0] * X[:, 1]
        # C = Σ c_i = 2 (h = 0: every σ(0) = ½ and the target there is 1); signal (x_1t − x_2t) · mean_{j∈S} z_j.
        ref = 2.0 * X[:, 1, 3] + (X[:, 0, 3] - X[:, 1, 3]) * (z[:, 2] + z[:, 5]) / 2
        # formula() uses C = Σ c_i in float64 (|c_i| ~ 1e2 for these λ's): a few 1e-15 off 2.
        np.testing.assert_allclose(ctl.formula(X), ref, rtol=0, atol=1e-12)
        assert np.abs(ctl.layer(X)[:, 0, 1] - ref).max() < FORMULA_TOL
        np.testing.assert_array_equal(ctl.target(np.arange(3)), [1.0, 0.0, -1.0])
        # target() is float64 whatever the dtype of the hidden sums: 1 − 2h/3 against its float64 value, exactly
        # (float32 arithmetic would be ~1e-8 off at h = 1).
        ctl3 = sparse_linear_instance(7, 4, subset=(1, 2, 5))
        np.testing.assert_array_equal(ctl3.target(np.arange(4, dtype=np.float32)), [1.0, 1 - 2 / 3, 1 - 4 / 3, -1.0])
        ind = np.isin(np.arange(7), (2, 5)).astype(float)
        np.testing.assert_array_equal(ctl.layer.thetas, [np.diag(lam * ind) for lam in self.LAMS])  # λ_i diag(1_S)

    def test_metadata_names_the_control(self):
        ctl = sparse_linear_instance(7, 3, subset=(2, 5))
        meta = ctl.metadata
        assert meta["family"] == "sq-two-token-control" and meta["subset"] == [2, 5]
        assert meta["coefficients"] == list(ctl.coefficients) and meta["condition_number"] == ctl.condition
        assert "1 − 2h/r" in meta["construction"] and "(−1)^h" not in meta["construction"]
        assert meta["provenance"] == "control ours: the SQ family's heads with a sparse-linear signal (not SQ-hard)"
        assert meta["formula"].startswith("F(X)[0, o] = C x_2t + (x_1t − x_2t) (1/r) Σ_{j∈S} z_j on every Boolean")
        assert "c solves Σ_i c_i σ(2λ_i h) = 1 − 2h/r, h = 0..2" in meta["construction"]
        # The same keys as the parity member's (only values change): the same heads, another mixture.
        assert set(meta) == set(sq_hard_instance(7, 3, subset=(2, 5)).metadata)

    def test_accuracy_guard_at_its_boundary(self, monkeypatch):
        import lowerbounds.sq as sq

        kwargs = {"subset": (1, 2), "lambdas": self.LAMS}
        err = sparse_linear_instance(8, 3, **kwargs).sharpness_error
        assert sq_hard_instance(8, 3, **kwargs).sharpness_error < err / 4
        monkeypatch.setattr(sq, "FORMULA_ACCURACY", err)  # an error equal to the accuracy is within it
        assert sparse_linear_instance(8, 3, **kwargs).sharpness_error == err
        monkeypatch.setattr(sq, "FORMULA_ACCURACY", err / 2)
        with pytest.raises(ValueError, match=r"sparse_linear_instance\(d=8, m=3\): the float64 layer misses its formula"
                                             r" by .* > FORMULA_ACCURACY"):
            sparse_linear_instance(8, 3, **kwargs)


@pytest.mark.parametrize("variant", ["interpolation", "steps"])
def test_fourier_coefficients_against_the_heads_on_every_input(variant):
    # ĝ(U) = E[g χ_U(z)] with g the heads' factor evaluated in float64 on all 4^6 inputs (g depends on z only);
    # every U ⊆ [d] \\ {t}, including those outside S ∪ {p}. The reference part keeps only U ⊆ {p}.
    inst = sq_hard_instance(6, 3, subset=(1, 3), variant=variant)
    X = _cube(6)
    z = X[:, 0] * X[:, 1]
    g = inst.g_values(X)
    p = inst.offset_coord
    for size in range(6):
        for U in combinations(range(1, 6), size):
            brute = np.mean(g * np.prod(z[:, list(U)], axis=1))
            assert float(inst.fourier(U)) == pytest.approx(brute, abs=1e-12), U
            ref = brute if set(U) <= ({p} if p is not None else set()) else 0.0
            assert float(inst.reference_fourier(U)) == pytest.approx(ref, abs=1e-12), U
    if variant == "steps":
        assert abs(float(inst.reference_fourier({p}))) > 0.1  # the offset's own character is S-independent
