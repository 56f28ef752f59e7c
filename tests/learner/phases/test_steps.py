"""Phase 6's matrix-free steps: the structured products against finite differences and an explicit projector, the
conjugate-gradient solver against a dense solve, and both step solvers to the same minimiser."""

import numpy as np
import pytest

from learner import AttentionLayer, random_layer, sample_inputs
from learner.phases import LearnConfig
from learner.phases.search import _levenberg_marquardt, _vp_solve, refit
from learner.phases.steps import (
    CG_MIN_UNKNOWNS,
    SOLVERS,
    ProjectedJacobian,
    block_preconditioner,
    choose_solver,
    conjugate_gradient,
)
from learner.profiling import recording


def _setting(m, d, k, n, seed=0, move=0.1, distribution="boolean"):
    layer = random_layer(m, d, logit_scale=1.0, rng=seed)
    X = sample_inputs(n, k, d, distribution=distribution, rng=seed + 1)
    thetas = layer.thetas + move * np.random.default_rng(seed + 2).standard_normal(layer.thetas.shape)
    return layer, X, thetas


def _fd_theta_jacobian(thetas, ws, X, h=1e-6):
    """``∂F/∂Θ`` at fixed ``W``'s by central differences, rows ``F.ravel()``'s, columns the Θ entries."""
    cols = []
    for idx in np.ndindex(thetas.shape):
        up, down = thetas.copy(), thetas.copy()
        up[idx] += h
        down[idx] -= h
        cols.append((AttentionLayer(up, ws)(X) - AttentionLayer(down, ws)(X)).ravel() / (2 * h))
    return np.stack(cols, axis=1)


def _projector(thetas, X):
    """``I − DD⁺`` on the rows ``(n, a)`` for the design ``D = [P_1X, …, P_mX]``, built from the public patterns."""
    n, k, d = X.shape
    P = AttentionLayer(thetas, np.zeros_like(thetas)).attention(X)  # (n, m, k, k)
    D = np.einsum("nmab,nbc->namc", P, X).reshape(n * k, -1)
    return np.eye(n * k) - D @ np.linalg.pinv(D)


@pytest.mark.parametrize("m,d,k", [(2, 4, 2), (3, 5, 3), (2, 3, 4)], ids=["k2", "k3", "k4>d"])
class TestProjectedJacobian:
    def test_products_are_the_projected_finite_difference_jacobian(self, m, d, k):
        """``J δ`` and ``Jᵀ u`` against ``(I − DD⁺) ∂F/∂Θ`` by central differences (error ~1e-9 of the scale)."""
        layer, X, thetas = _setting(m, d, k, 12)
        ws, _, Q, patterns = _vp_solve(thetas, X, layer(X))
        op = ProjectedJacobian(X, ws, patterns, Q)
        J = _fd_theta_jacobian(thetas, ws, X).reshape(12 * k, d, -1)  # rows (n, a), e, columns
        Jp = np.einsum("NM,Mec->Nec", _projector(thetas, X), J).reshape(12 * k * d, -1)
        rng = np.random.default_rng(5)
        delta, u = rng.standard_normal((m, d, d)), rng.standard_normal((12 * k, d))
        scale = np.abs(Jp).max()
        np.testing.assert_allclose(op.matvec(delta).ravel(), Jp @ delta.ravel(), rtol=0, atol=1e-7 * scale * d)
        np.testing.assert_allclose(op.rmatvec(u).ravel(), Jp.T @ u.ravel(), rtol=0, atol=1e-7 * scale * d)
        np.testing.assert_allclose(op.normal(delta).ravel(), Jp.T @ (Jp @ delta.ravel()), rtol=0,
                                   atol=1e-6 * scale**2 * d * d)

    @pytest.mark.parametrize("distribution", ["boolean", "gaussian"])
    def test_blocks_are_the_unprojected_gauss_newton_blocks(self, m, d, k, distribution):
        """Gaussian inputs too: on ±1 entries ``x_c x_c'`` equals ``x_c / x_c'``, so on the cube alone the outer
        products ``x_N x_Nᵀ`` are not told apart from quotients of the same entries."""
        layer, X, thetas = _setting(m, d, k, 10, distribution=distribution)
        ws, _, Q, patterns = _vp_solve(thetas, X, layer(X))
        J = _fd_theta_jacobian(thetas, ws, X)  # no projection: the preconditioner leaves it out
        full = J.T @ J
        blocks = ProjectedJacobian(X, ws, patterns, Q).blocks()
        dd = d * d
        for i in range(m):
            np.testing.assert_allclose(blocks[i], full[i * dd:(i + 1) * dd, i * dd:(i + 1) * dd], rtol=0,
                                       atol=1e-6 * np.abs(full).max())

    def test_a_residual_said_to_be_projected_is_not_projected_again(self, m, d, k):
        """``rmatvec(u, projected=True)`` takes ``u`` as the caller's ``P⊥u``: it is ``J_Θᵀu`` with no projection,
        against finite differences; for ``u`` in the ``W`` design's span (``u = Qc``, ``P⊥u = 0``) it is not zero
        although the projected product is."""
        layer, X, thetas = _setting(m, d, k, 12)
        ws, _, Q, patterns = _vp_solve(thetas, X, layer(X))
        op = ProjectedJacobian(X, ws, patterns, Q)
        J = _fd_theta_jacobian(thetas, ws, X)  # rows (n, a, e): J_Θ, no projection
        u = Q @ np.random.default_rng(3).standard_normal((Q.shape[1], d))
        scale = np.abs(J).max()
        np.testing.assert_allclose(op.rmatvec(u, projected=True).ravel(), J.T @ u.ravel(), rtol=0,
                                   atol=1e-7 * scale * d)
        assert np.abs(J.T @ u.ravel()).max() > 1e-2 * scale
        np.testing.assert_allclose(op.rmatvec(u).ravel(), 0.0, rtol=0, atol=1e-12 * scale * d)

    def test_projected_products_are_adjoint(self, m, d, k):
        """``⟨Jδ, u⟩ = ⟨δ, Jᵀu⟩`` to rounding, also for a ``u`` not yet projected."""
        layer, X, thetas = _setting(m, d, k, 15)
        ws, _, Q, patterns = _vp_solve(thetas, X, layer(X))
        op = ProjectedJacobian(X, ws, patterns, Q)
        rng = np.random.default_rng(1)
        delta, u = rng.standard_normal((m, d, d)), rng.standard_normal((15 * k, d))
        left, right = float((op.matvec(delta) * u).sum()), float((delta * op.rmatvec(u)).sum())
        assert abs(left - right) <= 1e-12 * max(abs(left), 1.0)


def test_the_cost_model_counts_the_products_of_one_iteration():
    """Counted by hand from the code, two flops a multiply-add, at sizes that are distinct primes so that every
    term shows: :meth:`~ProjectedJacobian.normal` is ``J δ`` then ``Jᵀu`` with the projection once; the preconditioner
    multiplies one ``d² × d²`` inverse per head (elementwise terms and the ``x̄`` dot products are left out)."""
    n, k, d, m, q = 7, 3, 5, 2, 11
    rng = np.random.default_rng(0)
    X, ws = rng.standard_normal((n, k, d)), rng.standard_normal((m, d, d))
    patterns = np.full((n, m, k, k), 1 / k)
    Q = np.linalg.qr(rng.standard_normal((n * k, q)))[0]
    N = n * k
    matvec = N * d * (m * d) + 2 * n * k * (m * k) * d + 2 * N * q * d  # x·δ, the two k-term products, QᵀU and Q·
    rmatvec = 2 * n * (m * k) * d * k + d * N * (m * d)  # the two k-term products, xᵀ·(…)
    preconditioner = m * (d * d) * (d * d)
    assert ProjectedJacobian(X, ws, patterns, Q).flops_per_iteration() == 2 * (matvec + rmatvec + preconditioner)


class TestConjugateGradient:
    def test_solves_a_positive_definite_system(self):
        rng = np.random.default_rng(0)
        B = rng.standard_normal((30, 30))
        A = B @ B.T + 0.1 * np.eye(30)
        b = rng.standard_normal(30)
        x, iterations = conjugate_gradient(lambda v: A @ v, lambda v: v, b, tol=1e-12)
        np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-8)
        assert 1 <= iterations <= 200

    def test_an_exact_preconditioner_takes_one_step(self):
        A = np.diag([1.0, 10.0, 100.0, 1000.0])
        x, iterations = conjugate_gradient(lambda v: A @ v, lambda v: v / np.diag(A), np.ones(4))
        assert iterations == 1
        np.testing.assert_allclose(x, 1 / np.diag(A))

    def test_zero_right_hand_side_and_the_iteration_cap(self):
        A = np.diag(np.linspace(1, 1e6, 50))
        x, iterations = conjugate_gradient(lambda v: A @ v, lambda v: v, np.zeros(50))
        assert iterations == 0 and not x.any()
        _, iterations = conjugate_gradient(lambda v: A @ v, lambda v: v, np.ones(50), tol=1e-14, max_iter=3)
        assert iterations == 3

    def test_the_cap_stops_at_the_krylov_minimiser_of_that_many_steps(self):
        """After ``j`` steps (no preconditioner) CG's iterate is the Galerkin solution on ``span{b, Ab, …, A^{j−1}b}``:
        the cap of 3 gives that solution for ``j = 3``, not the one of 2 or 4 steps (12 distinct eigenvalues: neither
        is the solution of the system, so the three differ)."""
        A = np.diag(np.linspace(1.0, 4.0, 12))
        b = np.random.default_rng(1).standard_normal(12)
        K = np.linalg.qr(np.stack([b, A @ b, A @ A @ b], axis=1))[0]
        expected = K @ np.linalg.solve(K.T @ A @ K, K.T @ b)
        x, iterations = conjugate_gradient(lambda v: A @ v, lambda v: v, b, tol=1e-14, max_iter=3)
        assert iterations == 3
        np.testing.assert_allclose(x, expected, rtol=1e-10)

    def test_a_residual_at_the_tolerance_stops(self):
        """The rule is ``‖b − Ax‖ <= tol·‖b‖``: with ``tol = 0`` the exact first step on ``A = 2I`` (α = 1/2, the
        residual exactly zero) ends the solve after one iteration."""
        x, iterations = conjugate_gradient(lambda v: 2 * v, lambda v: v, np.ones(3), tol=0.0)
        assert iterations == 1
        np.testing.assert_array_equal(x, np.full(3, 0.5))

    @pytest.mark.parametrize("sign", [-1.0, 0.0], ids=["negative", "zero"])
    def test_no_curvature_stops_at_once(self, sign):
        """A direction with ``pᵀAp <= 0`` (a matrix that is not positive definite, or zero) ends the solve, not a
        step along it: the iterate is still zero."""
        x, iterations = conjugate_gradient(lambda v: sign * v, lambda v: v, np.ones(3))
        assert iterations == 1 and not x.any()


class TestBlockPreconditioner:
    def test_applies_the_inverse_of_each_damped_block(self):
        rng = np.random.default_rng(0)
        d, m, lam = 2, 3, 0.5
        B = rng.standard_normal((m, d * d, d * d))
        blocks = np.einsum("ipq,irq->ipr", B, B)
        scale = rng.uniform(1, 2, (m, d, d))
        v = rng.standard_normal((m, d, d))
        out = block_preconditioner(blocks, scale, lam)(v)
        for i in range(m):
            expected = np.linalg.solve(blocks[i] + lam * np.diag(scale[i].ravel()), v[i].ravel())
            np.testing.assert_allclose(out[i].ravel(), expected, rtol=1e-10)

    def test_an_indefinite_block_is_refused(self):
        blocks = np.stack([np.eye(4), -np.eye(4)])
        with pytest.raises(np.linalg.LinAlgError):
            block_preconditioner(blocks, np.ones((2, 2, 2)), 0.1)


class TestChooseSolver:
    def test_auto_switches_at_the_threshold_on_the_host_only(self):
        assert choose_solver("auto", CG_MIN_UNKNOWNS - 1) == "normal"
        assert choose_solver("auto", CG_MIN_UNKNOWNS) == "cg"
        assert choose_solver("auto", 10 * CG_MIN_UNKNOWNS, on_host=False) == "normal"
        assert choose_solver("normal", 10 * CG_MIN_UNKNOWNS) == "normal"
        assert choose_solver("cg", 1) == "cg"

    @pytest.mark.parametrize("solver,on_host,match", [
        ("lu", True, "`solver` must be one of auto, normal, cg; got solver='lu'"),
        ("cg", False, "`solver='cg'` runs on numpy only"),
    ], ids=["unknown", "cg-on-device"])
    def test_bad_solver(self, solver, on_host, match):
        with pytest.raises(ValueError, match=match):
            choose_solver(solver, 10, on_host=on_host)

    def test_the_config_takes_the_same_choices(self):
        assert LearnConfig(refine_solver="cg").refine_solver == "cg"
        with pytest.raises(ValueError, match="refine_solver"):
            LearnConfig(refine_solver="lu")
        assert tuple(SOLVERS) == ("auto", "normal", "cg")


class TestBothSolversOneMinimiser:
    @pytest.mark.parametrize("m,d,k", [
        (2, 6, 2), (3, 8, 2), (2, 5, 3),
        pytest.param(4, 16, 2, marks=pytest.mark.slow), pytest.param(6, 16, 2, marks=pytest.mark.slow),
        pytest.param(8, 16, 2, marks=pytest.mark.slow), pytest.param(4, 12, 3, marks=pytest.mark.slow),
    ], ids=["2-6-2", "3-8-2", "2-5-3", "4-16-2", "6-16-2", "8-16-2", "4-12-3"])
    def test_noiseless_labels_end_at_the_rounding_floor_with_one_answer(self, m, d, k):
        """From 1 % off the planted Θ's, both step solvers reach float64's floor (relative residual below 1e-28)
        and the same Θ's to 1e-12 of their norm (a parameter error of 1e-15 squares to the residual's 1e-30); the
        slow cells are the frontier's, where ``"auto"`` takes conjugate gradients (1,024 unknowns and more)."""
        layer = random_layer(m, d, logit_scale=1.0, rng=7)
        n = max(32, int(np.ceil(4 * m * d / k)), int(np.ceil(2 * d * d / (k * (k - 1)))))
        X = sample_inputs(n, k, d, rng=8)
        noise = np.random.default_rng(9).standard_normal(layer.thetas.shape)
        start = layer.thetas + 0.01 * np.linalg.norm(layer.thetas) * noise / np.linalg.norm(noise)
        out = {s: _levenberg_marquardt(start, X, layer(X), max_iter=200, solver=s) for s in ("normal", "cg")}
        norm = np.linalg.norm(layer.thetas)
        for z, _, evaluations, rel in out.values():
            assert rel < 1e-28 and evaluations < 50
            assert np.linalg.norm(z.reshape(layer.thetas.shape) - layer.thetas) < 1e-12 * norm
        assert np.linalg.norm(out["cg"][0] - out["normal"][0]) < 1e-12 * norm

    def test_a_start_far_off_is_still_refined(self):
        """Levenberg–Marquardt keeps only steps that lower the residual: from 20 % off, the CG steps (inexact
        early on) still end where the normal equations end."""
        layer = random_layer(2, 5, logit_scale=1.0, rng=3)
        X = sample_inputs(60, 2, 5, rng=4)
        start = layer.thetas * 1.2
        fits = {s: refit(start, X, layer(X), ftol=1e-15, solver=s) for s in ("normal", "cg")}
        np.testing.assert_allclose(fits["cg"].thetas, fits["normal"].thetas, rtol=0, atol=1e-10)

    def test_noisy_labels_reach_the_same_least_squares_fit(self):
        """With label noise the minimum is not zero: both solvers stop at ``ftol`` and agree to its precision."""
        layer = random_layer(2, 5, logit_scale=1.0, rng=5)
        X = sample_inputs(80, 2, 5, rng=6)
        Y = layer(X) + 1e-3 * np.random.default_rng(7).standard_normal(X.shape)
        fits = {s: refit(layer.thetas, X, Y, ftol=1e-15, solver=s) for s in ("normal", "cg")}
        np.testing.assert_allclose(fits["cg"].thetas, fits["normal"].thetas, rtol=0, atol=1e-6)

    def test_the_run_uses_the_solver_auto_chooses(self):
        """The refinement records its sections: CG's above the threshold, the normal equations' below it."""
        layer = random_layer(2, 4, logit_scale=1.0, rng=1)
        X = sample_inputs(40, 2, 4, rng=2)
        with recording() as normal:
            refit(layer.thetas * 1.01, X, layer(X))  # 32 unknowns: the normal equations
        assert "refinement: Cholesky solve" in normal and "refinement: CG iterations" not in normal
        with recording() as cg:
            refit(layer.thetas * 1.01, X, layer(X), solver="cg")
        assert "refinement: CG iterations" in cg and "refinement: Cholesky solve" not in cg


class TestRefinementProfile:
    """The refinement's profile sections, their runs and the operations counted for them, from 1 % off the planted
    Θ's on noiseless labels. Every step tried costs one evaluation of the residual (the ``W``'s, the patterns and the
    QR) after the start's, and here no factorisation fails: one factorisation per step."""

    QR = "refinement: W's, patterns and QR"

    @staticmethod
    def _case(m, d, k, n):
        layer = random_layer(m, d, logit_scale=1.0, rng=4)
        X = sample_inputs(n, k, d, rng=5)
        noise = np.random.default_rng(6).standard_normal(layer.thetas.shape)
        return layer, X, layer.thetas + 0.01 * np.linalg.norm(layer.thetas) * noise / np.linalg.norm(noise)

    def test_the_normal_equations_count_a_cholesky_solve_of_every_step(self):
        """(m, d) = (2, 3): the damped system has n = md² = 18 unknowns, and its Cholesky factorisation and two
        triangular solves count n³/3 + 2n² operations (rounded down), whatever the step."""
        layer, X, start = self._case(2, 3, 2, 40)
        with recording() as profile:
            _, _, evaluations, rel = _levenberg_marquardt(start, X, layer(X), max_iter=200, solver="normal")
        assert rel < 1e-28 and evaluations > 2
        n = 2 * 3 * 3
        cholesky = profile["refinement: Cholesky solve"]
        assert profile[self.QR].calls == evaluations and cholesky.calls == evaluations - 1
        assert cholesky.flops == cholesky.calls * (n**3 // 3 + 2 * n**2)
        assert None not in profile

    def test_conjugate_gradients_count_their_blocks_factors_and_iterations(self):
        """(m, d, k) = (3, 4, 2) on 40 examples (so that no two of the sizes stand in for each other, and m·d⁶/3 is
        not a whole number): per Jacobian the m blocks of d² × d² cost 2·m·n·k·d⁴ operations, their factorisation
        per step m·(d⁶/3 + 2d⁶) rounded down; the iterations count whole iterations of the per-iteration cost
        (:meth:`~ProjectedJacobian.flops_per_iteration`, the design of full rank md throughout), at least one per
        step. A run capped at one evaluation is the start's alone: no blocks."""
        m, d, k, n = 3, 4, 2, 40
        layer, X, start = self._case(m, d, k, n)
        with recording() as profile:
            _, _, evaluations, rel = _levenberg_marquardt(start, X, layer(X), max_iter=200, solver="cg")
        assert rel < 1e-28 and evaluations > 2
        blocks = profile["refinement: CG preconditioner blocks"]
        factors = profile["refinement: CG preconditioner factors"]
        iterations = profile["refinement: CG iterations"]
        assert profile[self.QR].calls == evaluations and factors.calls == iterations.calls == evaluations - 1
        assert 1 <= blocks.calls <= factors.calls and None not in profile
        assert blocks.flops == blocks.calls * 2 * m * n * k * d**4
        assert factors.flops == factors.calls * m * (d**6 // 3 + 2 * d**6)
        ws, _, Q, patterns = _vp_solve(start, X, layer(X))
        assert Q.shape[1] == m * d
        per_iteration = ProjectedJacobian(X, ws, patterns, Q).flops_per_iteration()
        assert iterations.flops % per_iteration == 0 and iterations.flops // per_iteration >= iterations.calls
        with recording() as profile:
            _levenberg_marquardt(start, X, layer(X), max_iter=1, solver="cg")
        assert list(profile) == [self.QR] and profile[self.QR].calls == 1


@pytest.mark.parametrize("m,d,k,n_search,expected", [
    (2, 6, 2, 2000, 36),  # 2d²/(k(k − 1)) = 36 logit differences per head; two residuals per parameter give 24
    (1, 2, 2, 2000, 32),  # both bounds 4: the floor of 32
    (10, 24, 2, 2000, 576),  # two per parameter: 4·10·576/48 = 480; logit differences 1152/2 = 576
    (13, 32, 2, 2000, 1024),  # two per parameter: 4·13·1024/64 = 832; logit differences 2048/2 = 1024
    (13, 32, 2, 500, 500),  # the search's examples cap it
], ids=["logits", "floor", "10-24-2", "13-32-2", "cap"])
def test_the_refinement_fits_the_examples_its_rule_names(m, d, k, n_search, expected):
    from learner.phases.search import refinement_examples

    assert refinement_examples(m, d, k, LearnConfig(n_search=n_search)) == expected
