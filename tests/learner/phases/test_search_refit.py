"""Phase 6's refinement rules against hand-built cases: the variable-projection solve (its full-rank and
rank-deficient designs), the normal equations in memory blocks, the Levenberg–Marquardt loop replayed step by
step, refit's defaults, the trust-region refinement, the multi-start search's figures, the warm start's ties and
the noise-floor refit's budget."""

import dataclasses
import threading

import numpy as np
import pytest

from learner import AttentionLayer, LayerOracle, LearnConfig, arrays, min_norm_point, random_layer, sample_inputs
from learner.layer import attention_patterns, head_features, layer_jacobian
from learner.oracle import ArraySource
from learner.phases import search
from learner.phases.noise import NOISE_Z, candidate_thetas, noise_floor
from learner.phases.search import (
    _fit_ws,
    _levenberg_marquardt,
    _noise_refit,
    _normal_equations,
    _refine,
    _vp_search,
    _vp_solve,
    _warm_start,
    refine_layer,
    refit,
    search_heads,
)
from learner.phases.steps import ProjectedJacobian
from learner.profiling import recording


def _planted(m, d, k, n, *, seed, noise=0.0):
    layer = random_layer(m, d, logit_scale=1.0, check=False, rng=seed)
    X, Y = LayerOracle(layer, k, noise=noise, rng=seed + 1).draw(n)
    return layer, X, Y


def _design(thetas, X):
    """``[P_1X, …, P_mX]`` with rows (n, a) and columns (i, c), one head's features at a time."""
    n, k, d = X.shape
    return np.concatenate([head_features(t, X).reshape(n * k, d) for t in thetas], axis=1)


def _rel(layer, X, Y):
    return float(np.sum((layer(X) - Y) ** 2) / np.sum(Y**2))


class TestVpSolve:
    def test_distinct_heads_the_least_squares_ws_and_the_thin_qr(self):
        layer, X, Y = _planted(2, 3, 2, 30, seed=1, noise=0.1)
        ws, r, Q, patterns = _vp_solve(layer.thetas, X, Y)
        D = _design(layer.thetas, X)
        W = np.linalg.lstsq(D, Y.reshape(-1, 3))[0]
        np.testing.assert_allclose(ws, W.reshape(2, 3, 3), rtol=0, atol=1e-10)
        np.testing.assert_allclose(r, D @ W - Y.reshape(-1, 3), rtol=0, atol=1e-12)
        # One thin QR of the design: Q is its orthonormal factor (not another basis of the same space).
        np.testing.assert_allclose(Q, np.linalg.qr(D)[0], rtol=0, atol=1e-10)
        np.testing.assert_array_equal(patterns, attention_patterns(layer.thetas, X))

    def test_a_power_of_two_rescaling_changes_nothing_but_the_ws(self):
        """X → cX and Θ → Θ/c² leave the patterns; with c = 2⁻²⁰ every product scales exactly, so Q is the same
        matrix and W scales by 1/c — the full-rank test is relative to the design's own scale."""
        layer, X, Y = _planted(2, 3, 2, 30, seed=1, noise=0.1)
        c = 2.0**-20
        ws, r, Q, _ = _vp_solve(layer.thetas, X, Y)
        ws_c, r_c, Q_c, _ = _vp_solve(layer.thetas / c**2, c * X, Y)
        np.testing.assert_allclose(Q_c, Q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ws_c * c, ws, rtol=1e-12, atol=0)
        np.testing.assert_allclose(r_c, r, rtol=0, atol=1e-12)

    def test_equal_heads_take_the_min_norm_ws(self):
        """Two heads with the same Θ: the design is [A, A], the min-norm fit splits A's least-squares W in halves
        and the residual space is that of A alone (d columns)."""
        layer, X, Y = _planted(1, 3, 2, 30, seed=2, noise=0.1)
        thetas = np.stack([layer.thetas[0], layer.thetas[0]])
        ws, r, Q, _ = _vp_solve(thetas, X, Y)
        A = _design(layer.thetas, X)
        W = np.linalg.lstsq(A, Y.reshape(-1, 3))[0]
        np.testing.assert_allclose(ws, np.stack([W / 2, W / 2]), rtol=0, atol=1e-10)
        np.testing.assert_allclose(r, A @ W - Y.reshape(-1, 3), rtol=0, atol=1e-10)
        assert Q.shape == (60, 3)
        np.testing.assert_allclose(Q.T @ Q, np.eye(3), rtol=0, atol=1e-12)
        np.testing.assert_allclose(Q @ Q.T, A @ np.linalg.pinv(A), rtol=0, atol=1e-10)

    def test_one_token_dimension_and_equal_heads_have_one_direction(self):
        X = np.random.default_rng(0).standard_normal((20, 3, 1))
        Y = np.random.default_rng(1).standard_normal((20, 3, 1))
        ws, r, Q, _ = _vp_solve(np.ones((2, 1, 1)), X, Y)
        a = head_features(np.ones((1, 1)), X).reshape(-1)
        w = float(a @ Y.reshape(-1) / (a @ a))
        np.testing.assert_allclose(ws.ravel(), [w / 2, w / 2], rtol=1e-10)
        assert Q.shape == (60, 1)
        np.testing.assert_allclose(np.abs(Q[:, 0]), np.abs(a) / np.linalg.norm(a), rtol=0, atol=1e-12)

    def test_zero_inputs_have_zero_ws_and_no_directions(self):
        Y = np.random.default_rng(1).standard_normal((5, 2, 3))
        ws, r, Q, _ = _vp_solve(np.ones((2, 3, 3)), np.zeros((5, 2, 3)), Y)
        np.testing.assert_array_equal(ws, np.zeros((2, 3, 3)))
        np.testing.assert_array_equal(r, -Y.reshape(10, 3))
        assert Q.shape == (10, 0)


def _jacobian_calls(monkeypatch):
    calls = []
    original = search._vp_jacobian

    def spy(thetas, ws, X, patterns, Q, basis=None):
        J = original(thetas, ws, X, patterns, Q, basis)
        calls.append((X.shape[0], Q is None, J.nbytes))
        return J

    monkeypatch.setattr(search, "_vp_jacobian", spy)
    return calls


def _gradient_calls(monkeypatch):
    calls = []
    original = search._head_gradients

    def spy(thetas, ws, X, patterns):
        calls.append(X.shape[0])
        return original(thetas, ws, X, patterns)

    monkeypatch.setattr(search, "_head_gradients", spy)
    return calls


class TestNormalEquationsInBlocks:
    m, d, k, n = 2, 3, 2, 12
    # bytes of one example's arrays in the Θ's: its head gradients G (twice: G and the slice of J_ΘᵀQ it
    # feeds), G Gᵀ, x xᵀ and Q's rows times x (q = md columns)
    per = 8 * k * (2 * m * d * d + (m * d) ** 2 + d * d + m * d * d)

    def _case(self, seed=3):
        layer, X, Y = _planted(self.m, self.d, self.k, self.n, seed=seed)
        thetas = layer.thetas + 0.05 * np.random.default_rng(seed).standard_normal(layer.thetas.shape)
        ws, r, Q, patterns = _vp_solve(thetas, X, Y)
        return thetas, ws, X, patterns, Q, r

    def _reference(self, thetas, ws, X, patterns, Q, r, basis=None):
        """Kaufman's Jacobian built by hand: the Θ-columns of the full one, projected off the design."""
        n, k, d = X.shape
        m = len(thetas)
        full = layer_jacobian(thetas, ws, X)[:, : m * d * d].reshape(n * k, d * m * d * d)
        J = (full - Q @ (Q.T @ full)).reshape(n * k * d, m * d * d)
        if basis is not None:
            J = J @ np.kron(np.eye(m), basis)
        return J.T @ J, J.T @ r.ravel()

    @pytest.mark.parametrize("budget", [1.0, 1.5, 2.0, 5.5, 11.9, 12.0, 40.0], ids=str)
    def test_every_block_fits_the_bytes(self, monkeypatch, budget):
        """In the Θ's the Jacobian is never formed: the examples go in blocks of ``max_bytes // per`` (at least
        one, at most all n), and the matrices are those of the hand-built Jacobian whatever the blocks."""
        args = self._case()
        A_ref, g_ref = self._reference(*args)
        dense, calls = _jacobian_calls(monkeypatch), _gradient_calls(monkeypatch)
        A, g = _normal_equations(*args, max_bytes=int(budget * self.per))
        step = min(int(budget), self.n)
        assert dense == []
        assert calls == [min(step, self.n - s) for s in range(0, self.n, step)]
        np.testing.assert_allclose(A, A_ref, rtol=0, atol=1e-10 * np.abs(A_ref).max())
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-10 * np.abs(g_ref).max())

    def test_fewer_bytes_than_one_example_still_go_one_at_a_time(self, monkeypatch):
        args = self._case()
        calls = _gradient_calls(monkeypatch)
        A, _ = _normal_equations(*args, max_bytes=100)
        assert calls == [1] * self.n
        np.testing.assert_allclose(A, self._reference(*args)[0], rtol=0, atol=1e-10 * np.abs(A).max())

    @pytest.mark.parametrize("m, d, k, n", [(1, 4, 2, 9), (3, 5, 3, 7), (2, 6, 4, 5)])
    def test_other_shapes_match_the_hand_built_jacobian(self, m, d, k, n):
        """One head, three tokens, more columns than rows of the design: the structured sums index every
        axis as the hand-built Jacobian does."""
        layer, X, Y = _planted(m, d, k, n, seed=8)
        thetas = layer.thetas + 0.05 * np.random.default_rng(8).standard_normal(layer.thetas.shape)
        ws, r, Q, patterns = _vp_solve(thetas, X, Y)
        A_ref, g_ref = self._reference(thetas, ws, X, patterns, Q, r)
        A, g = _normal_equations(thetas, ws, X, patterns, Q, r)
        np.testing.assert_allclose(A, A_ref, rtol=0, atol=1e-10 * np.abs(A_ref).max())
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-10 * np.abs(g_ref).max())

    @pytest.mark.parametrize("threads", [2, 3])
    def test_more_threads_give_the_same_bits(self, threads):
        """Phase 6 forms these products on every core of the run, in blocks that do not depend on the number of
        threads: at (m, d, k) = (3, 10, 2) on 200 examples (shapes where OpenBLAS's own threads change the last
        bits) two and three threads give one thread's matrices bit for bit."""
        layer, X, Y = _planted(3, 10, 2, 200, seed=9)
        thetas = layer.thetas + 0.05 * np.random.default_rng(9).standard_normal(layer.thetas.shape)
        args = _vp_solve(thetas, X, Y)
        one = _normal_equations(thetas, args[0], X, args[3], args[2], args[1], threads=1)
        more = _normal_equations(thetas, args[0], X, args[3], args[2], args[1], threads=threads)
        np.testing.assert_array_equal(one[0], more[0])
        np.testing.assert_array_equal(one[1], more[1])

    def test_control_an_unprojected_jacobian_is_told_apart(self):
        """Control: the same sums without the projection's part differ from the reference, so the
        comparisons above see the projection."""
        thetas, ws, X, patterns, Q, r = self._case()
        A_ref, _ = self._reference(thetas, ws, X, patterns, Q, r)
        A, _ = _normal_equations(thetas, ws, X, patterns, Q[:, :0], r)
        assert np.abs(A - A_ref).max() > 1e-3 * np.abs(A_ref).max()

    def test_each_product_is_profiled_with_its_operations(self):
        """Every block of examples profiles its head gradients and its two products, ``x xᵀ`` against ``G Gᵀ``
        (``N × d²`` by ``N × (md)²``) and Q's rows times x against G (``N × qd`` by ``N × md²``); the projection's
        ``KᵀK`` (``qd × md²``) runs once. A product ``AᵀB`` of an ``N × a`` and an ``N × b`` matrix is ``2·N·a·b``
        flops, the symmetric ``KᵀK``, computed on and above its diagonal, half of that. Blocks of 5, 5 and 2
        examples (N = 10, 10 and 4 rows of two tokens, never d) add up to all n·k rows. Without a projection (Q
        with no columns) its two sections do not run."""
        m, d, k, n = self.m, self.d, self.k, self.n
        thetas, ws, X, patterns, Q, r = self._case()
        q, rows = Q.shape[1], n * k
        with recording() as profile:
            _normal_equations(thetas, ws, X, patterns, Q, r, max_bytes=5 * self.per)
        gradients, products = "refinement: head gradients G and G Gᵀ", "refinement: J_ΘᵀJ_Θ product"
        assert list(profile) == [gradients, products, "refinement: projection's K product",
                                 "refinement: projection's KᵀK"]
        assert [s.calls for s in profile.values()] == [3, 3, 3, 1]
        assert [s.flops for s in profile.values()] == [0, 2 * rows * (d * d) * (m * d) ** 2,
                                                       2 * rows * (q * d) * (m * d * d), (q * d) * (m * d * d) ** 2]
        with recording() as profile:
            _normal_equations(thetas, ws, X, patterns, Q[:, :0], r)
        assert list(profile) == [gradients, products]

    @pytest.mark.parametrize("budget", [None, 1.0, 3.0], ids=str)
    def test_hull_coordinates_in_blocks(self, monkeypatch, budget):
        """With a basis (d², r) the Jacobian has m·r columns: one example's rows take 8·k·d·m·r bytes."""
        args = self._case(seed=4)
        basis = np.linalg.qr(np.random.default_rng(7).standard_normal((self.d * self.d, 2)))[0]
        A_ref, g_ref = self._reference(*args, basis=basis)
        per = 8 * self.k * self.d * self.m * 2
        calls = _jacobian_calls(monkeypatch)
        max_bytes = self.n * per if budget is None else int(budget * per)
        A, g = _normal_equations(*args, basis=basis, max_bytes=max_bytes)
        if budget is None:  # exactly the whole Jacobian's bytes: projected at once
            assert calls == [(self.n, False, self.n * per)]
        else:
            assert all(q_none and nbytes <= max_bytes for _, q_none, nbytes in calls)
        assert A.shape == (4, 4)
        np.testing.assert_allclose(A, A_ref, rtol=0, atol=1e-10 * np.abs(A_ref).max())
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-10 * np.abs(g_ref).max())


    @pytest.mark.parametrize("budget", [1.0, 5.0], ids=str)
    def test_hull_coordinate_blocks_start_at_the_first_example(self, budget):
        """Gaussian tokens: no example has two equal tokens, whose Jacobian is zero (the first example of the boolean
        case above has them), so every example counts, the first one included, and blocks of one or five examples
        (a short last block) give the hand-built Jacobian's matrices."""
        layer = random_layer(self.m, self.d, logit_scale=1.0, check=False, rng=5)
        X = sample_inputs(self.n, self.k, self.d, distribution="gaussian", rng=6)
        thetas = layer.thetas + 0.05 * np.random.default_rng(7).standard_normal(layer.thetas.shape)
        ws, r, Q, patterns = _vp_solve(thetas, X, layer(X))
        basis = np.linalg.qr(np.random.default_rng(8).standard_normal((self.d * self.d, 2)))[0]
        A_ref, g_ref = self._reference(thetas, ws, X, patterns, Q, r, basis=basis)
        per = 8 * self.k * self.d * self.m * 2
        A, g = _normal_equations(thetas, ws, X, patterns, Q, r, basis=basis, max_bytes=int(budget * per))
        np.testing.assert_allclose(A, A_ref, rtol=0, atol=1e-10 * np.abs(A_ref).max())
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-10 * np.abs(g_ref).max())
        # Control: the first example's own Θ-Jacobian is far from zero, so sums without it would be told apart.
        J = layer_jacobian(thetas, ws, X)[:, : self.m * self.d * self.d].reshape(self.n, -1)
        assert np.abs(J[0]).max() > 0.1 * np.abs(J).max()

class _Trace:
    """The residual evaluations, normal equations, Cholesky factorisations and steps of one run, in order;
    the Cholesky factorisations numbered in ``fail`` raise as a singular matrix would."""

    def __init__(self, monkeypatch, fail=()):
        self.events, self.fail, self.n_chol = [], set(fail), 0
        solve, normal, factor, back = search._vp_solve, search._normal_equations, arrays.cho_factor, arrays.cho_solve

        def spy_solve(thetas, X, Y):
            out = solve(thetas, X, Y)
            self.events.append(("solve", np.array(thetas, dtype=float).ravel(), float(np.sum(out[1] ** 2))))
            return out

        def spy_normal(*args, **kwargs):
            A, g = normal(*args, **kwargs)
            self.events.append(("normal", A.copy(), g.copy()))
            return A, g

        def spy_factor(M, *args, **kwargs):
            self.events.append(("factor", M.copy()))
            self.n_chol += 1
            if self.n_chol - 1 in self.fail:
                raise np.linalg.LinAlgError("injected")
            return factor(M, *args, **kwargs)

        def spy_back(*args, **kwargs):
            x = back(*args, **kwargs)
            self.events.append(("step", -x))
            return x

        for name, spy in [("_vp_solve", spy_solve), ("_normal_equations", spy_normal)]:
            monkeypatch.setattr(search, name, spy)
        # The host backend's Cholesky (learner.arrays.Backend.solve_spd) is SciPy's, called through learner.arrays.
        monkeypatch.setattr(arrays, "cho_factor", spy_factor)
        monkeypatch.setattr(arrays, "cho_solve", spy_back)

    def replay(self, yy, *, max_iter, ftol):
        """The documented loop on the recorded figures: damped normal equations ``(A + λ·diag) δ = −g`` from
        λ = 1e-3, the diagonal floored at 1e-12 of its largest entry; a step kept only if it lowers the
        residual (λ / 5, at least 1e-12), else λ × 4; a failed factorisation λ × 10 at no evaluation; stop at a
        relative residual <= 1e-30, after a kept step that moves the parameters by <= 1e-15 relative or lowers
        the residual by <= ftol relative or ends below 1e-20 relative having gained less than 10 times, when λ
        reaches 1e16, or at max_iter evaluations."""
        events = iter(self.events)

        def take(kind):
            event = next(events)
            assert event[0] == kind, (event[0], kind)
            return event[1:]

        z, cost = take("solve")
        evaluations, lam, n_chol = 1, 1e-3, 0
        while evaluations < max_iter and cost > 1e-30 * yy:
            A, g = take("normal")
            scale = np.maximum(np.diagonal(A), 1e-12 * max(float(np.diagonal(A).max()), 1e-300))
            improved = small = False
            while evaluations < max_iter and lam < 1e16:
                (M,) = take("factor")
                np.testing.assert_allclose(M, A + lam * np.diag(scale), rtol=1e-13, atol=0)
                n_chol += 1
                if n_chol - 1 in self.fail:
                    lam *= 10
                    continue
                (step,) = take("step")
                z_new, cost_new = take("solve")
                np.testing.assert_array_equal(z_new, z + step)
                evaluations += 1
                if cost_new < cost:
                    small = (np.linalg.norm(step) <= 1e-15 * max(np.linalg.norm(z), 1e-300)
                             or cost - cost_new <= ftol * cost
                             or (cost_new <= 1e-20 * yy and 10 * cost_new > cost))
                    z, cost, lam, improved = z_new, cost_new, max(lam / 5, 1e-12), True
                    break
                lam *= 4
            if not improved or small:
                break
        assert next(events, None) is None
        return z, evaluations, cost / yy


class _CgTrace:
    """The residual evaluations, block factorisations and conjugate-gradient solves of one run of the
    conjugate-gradient steps, in order; the factorisations numbered in ``fail`` raise as an indefinite block would.
    Each solve's operator is recorded by its action on one fixed vector."""

    def __init__(self, monkeypatch, fail=()):
        self.events, self.fail, self.n_factor = [], set(fail), 0
        solve, factor, cg = search._vp_solve, search.block_preconditioner, search.conjugate_gradient

        def spy_solve(thetas, X, Y):
            out = solve(thetas, X, Y)
            self.events.append(("solve", np.array(thetas, dtype=float).ravel(), float(np.sum(out[1] ** 2)), out))
            return out

        def spy_factor(blocks, scale, lam):
            self.events.append(("factor", blocks.copy(), scale.copy(), lam))
            self.n_factor += 1
            if self.n_factor - 1 in self.fail:
                raise np.linalg.LinAlgError("injected")
            return factor(blocks, scale, lam)

        def spy_cg(apply, precondition, b, **kwargs):
            x, iterations = cg(apply, precondition, b, **kwargs)
            probe = np.random.default_rng(0).standard_normal(b.shape)
            self.events.append(("cg", probe, apply(probe), b.copy(), x.copy()))
            return x, iterations

        for name, spy in [("_vp_solve", spy_solve), ("block_preconditioner", spy_factor),
                          ("conjugate_gradient", spy_cg)]:
            monkeypatch.setattr(search, name, spy)

    def replay(self, X, yy, *, max_iter, ftol):
        """The documented loop on the recorded figures: per accepted point the per-head blocks of the unprojected
        Gauss–Newton matrix, the damping's scale their diagonal floored at 1e-12 of its largest entry; each step
        solves ``(JᵀJ + λ·scale) δ = −Jᵀr`` from λ = 1e-3; a step kept only if it lowers the residual (λ / 5, at
        least 1e-12), else λ × 4; a failed factorisation λ × 10 at no evaluation; the stopping rules of the normal
        equations' loop (:meth:`_Trace.replay`)."""
        events = iter(self.events)

        def take(kind):
            event = next(events)
            assert event[0] == kind, (event[0], kind)
            return event[1:]

        z, cost, (ws, r, Q, patterns) = take("solve")
        evaluations, lam, n_factor = 1, 1e-3, 0
        while evaluations < max_iter and cost > 1e-30 * yy:
            jac = ProjectedJacobian(X, ws, patterns, Q)
            expected_blocks = jac.blocks()
            improved = small = False
            while evaluations < max_iter and lam < 1e16:
                blocks, scale, lam_used = take("factor")
                np.testing.assert_allclose(blocks, expected_blocks, rtol=1e-13, atol=0)
                diag = np.diagonal(blocks, axis1=1, axis2=2)
                floor = 1e-12 * max(float(diag.max()), 1e-300)
                np.testing.assert_array_equal(scale, np.maximum(diag, floor).reshape(scale.shape))
                assert lam_used == lam
                n_factor += 1
                if n_factor - 1 in self.fail:
                    lam *= 10
                    continue
                probe, applied, b, step = take("cg")
                np.testing.assert_allclose(b, -jac.rmatvec(r), rtol=1e-13, atol=0)
                np.testing.assert_allclose(applied, jac.normal(probe) + lam * scale * probe, rtol=1e-12, atol=0)
                z_new, cost_new, state = take("solve")
                np.testing.assert_array_equal(z_new, z + step.ravel())
                evaluations += 1
                if cost_new < cost:
                    small = (np.linalg.norm(step) <= 1e-15 * max(np.linalg.norm(z), 1e-300)
                             or cost - cost_new <= ftol * cost
                             or (cost_new <= 1e-20 * yy and 10 * cost_new > cost))
                    z, cost, lam, improved = z_new, cost_new, max(lam / 5, 1e-12), True
                    ws, r, Q, patterns = state
                    break
                lam *= 4
            if not improved or small:
                break
        assert next(events, None) is None
        return z, evaluations, cost / yy


def _far_case():
    """A two-head layer and a start far from it: the run rejects steps and takes many."""
    layer, X, Y = _planted(2, 3, 2, 40, seed=8)
    return layer, X, Y, 3 * np.random.default_rng(10).standard_normal((2, 3, 3))


def _noisy_case():
    layer, X, Y = _planted(2, 3, 2, 40, seed=5, noise=1e-2)
    return layer, X, Y, layer.thetas + 0.1 * np.random.default_rng(1).standard_normal((2, 3, 3))


class _LoopRules:
    """The damping and stopping rules both step solvers share, each run replayed step by step by the solver's
    own trace (``_replay`` of the subclass)."""

    solver = "normal"

    def _replay(self, monkeypatch, fail, run, X, yy, **limits):
        """The solver's trace set up (``fail``: the factorisations made to fail), ``run()`` called, and the trace's
        replay of what it saw: ``(z, evaluations, rel)``."""
        raise NotImplementedError

    def _run(self, monkeypatch, theta0, X, Y, *, max_iter, ftol, fail=()):
        yy = max(float(np.sum(Y**2)), 1e-300)
        out = {}

        def run():
            out["fit"] = _levenberg_marquardt(theta0, X, Y, max_iter=max_iter, ftol=ftol, solver=self.solver)

        z_ref, evaluations_ref, rel_ref = self._replay(monkeypatch, fail, run, X, yy, max_iter=max_iter, ftol=ftol)
        z, ws, evaluations, rel = out["fit"]
        np.testing.assert_array_equal(z, z_ref)
        assert evaluations == evaluations_ref <= max_iter
        assert rel == rel_ref
        if np.sum(Y**2) > 0:  # the relative residual of the layer returned
            fitted = AttentionLayer(z.reshape(theta0.shape), ws)
            assert rel == pytest.approx(_rel(fitted, X, Y), rel=1e-8, abs=1e-30)
        return z, evaluations, rel

    @pytest.mark.parametrize("fail", [(0,), (0, 1, 4), (2, 3)], ids=str)
    def test_failed_factorisations_raise_the_damping_at_no_evaluation(self, monkeypatch, fail):
        _, X, Y, start = _far_case()
        self._run(monkeypatch, start, X, Y, max_iter=30, ftol=1e-12, fail=fail)

    def test_nineteen_failed_factorisations_end_the_run(self, monkeypatch):
        """λ = 1e-3·10¹⁹ is 1e16 exactly: the damping has run out, the start is returned."""
        _, X, Y, start = _far_case()
        z, evaluations, _ = self._run(monkeypatch, start, X, Y, max_iter=30, ftol=1e-12, fail=range(19))
        assert evaluations == 1
        np.testing.assert_array_equal(z, start.ravel())

    def test_labels_below_one_are_relative_to_their_own_sum(self, monkeypatch):
        _, X, Y, start = _far_case()
        Y = Y * 2.0**-12
        assert np.sum(Y**2) < 1e-4
        self._run(monkeypatch, start, X, Y, max_iter=20, ftol=1e-12)

    def test_the_planted_heads_stop_at_once(self, monkeypatch):
        """Exact labels from the start itself: relative residual ~1e-31 <= 1e-30, no step (labels' sum ≫ 1)."""
        layer, X, Y, _ = _far_case()
        assert np.sum(Y**2) > 100
        z, evaluations, rel = self._run(monkeypatch, layer.thetas, X, Y, max_iter=50, ftol=1e-12)
        assert evaluations == 1 and rel <= 1e-30
        np.testing.assert_array_equal(z, layer.thetas.ravel())

    def test_zero_labels_are_fitted_at_once(self, monkeypatch):
        _, X, Y, start = _far_case()
        z, evaluations, rel = self._run(monkeypatch, start, X, np.zeros_like(Y), max_iter=50, ftol=1e-12)
        assert evaluations == 1 and rel == 0.0

    def test_no_gradient_rejects_until_the_damping_runs_out(self, monkeypatch):
        """Every token of an example the same: the features do not depend on Θ, so the Jacobian is zero and
        every step is zero; λ = 1e-3·4^j passes 1e16 at j = 32, so 32 rejected evaluations after the first."""
        _, X, Y, start = _far_case()
        X = np.repeat(X[:, :1], 2, axis=1)
        z, evaluations, _ = self._run(monkeypatch, start, X, Y, max_iter=100, ftol=1e-12)
        assert evaluations == 33
        np.testing.assert_array_equal(z, start.ravel())

    def test_noisy_labels_stop_on_the_relative_decrease(self, monkeypatch):
        _, X, Y, start = _noisy_case()
        _, evaluations, _ = self._run(monkeypatch, start, X, Y, max_iter=300, ftol=1e-4)
        assert evaluations < 20


class TestLevenbergMarquardtRules(_LoopRules):
    def _replay(self, monkeypatch, fail, run, X, yy, **limits):
        trace = _Trace(monkeypatch, fail)
        run()
        return trace.replay(yy, **limits)

    @pytest.mark.parametrize("max_iter", [1, 2, 6, 9, 40])
    def test_far_start_up_to_the_cap(self, monkeypatch, max_iter):
        """Evaluations 5–10 reject their steps: a cap there ends on a rejected step, with no evaluation more; a
        cap of 1 is the start alone, with no normal equations built."""
        _, X, Y, start = _far_case()
        _, evaluations, _ = self._run(monkeypatch, start, X, Y, max_iter=max_iter, ftol=1e-12)
        assert evaluations == max_iter

    @pytest.mark.parametrize(("noise", "expected"), [(1e-13, 7), (1e-11, 7), (1e-14, 19)],
                             ids=["floor", "relative", "control"])
    def test_the_rounding_floor_ends_a_step_that_gains_little(self, monkeypatch, noise, expected):
        """Labels off the layer by 1e-13 of their mean size: the sixth evaluation lands at 8.8e-27 and the seventh,
        kept, at 5.3e-27 — below 1e-20 and less than ten times lower: the run ends there, where ftol = 1e-15 alone
        would go on. At 1e-11 the seventh, kept, lands at 5.3e-23 relative, 1.4e-20 in the labels' own units (their sum
        of squares is 265): below 1e-20 relative only, and the run ends there too, at a relative decrease of 6e-5 that
        ftol = 1e-15 would not stop. Control: at 1e-14 the seventh gains 68 times (3.6e-27 to 5.3e-29) and the run
        goes on."""
        layer, X, Y = _planted(2, 3, 2, 40, seed=5)
        Y = Y + noise * np.abs(Y).mean() * np.random.default_rng(1).standard_normal(Y.shape)
        start = layer.thetas + 0.1 * np.random.default_rng(1).standard_normal((2, 3, 3))
        _, evaluations, rel = self._run(monkeypatch, start, X, Y, max_iter=200, ftol=1e-15)
        assert evaluations == expected and 1e-30 < rel < 1e-20

    def test_a_decrease_of_exactly_ftol_stops(self, monkeypatch):
        _, X, Y, start = _noisy_case()
        trace = _Trace(monkeypatch)
        _levenberg_marquardt(start, X, Y, max_iter=3, ftol=0.0)
        costs = [e[2] for e in trace.events if e[0] == "solve"]
        assert costs[1] < costs[0]  # the first step is kept
        decrease = costs[0] - costs[1]
        ftol = decrease / costs[0]
        while ftol * costs[0] != decrease:
            ftol = np.nextafter(ftol, np.inf if ftol * costs[0] < decrease else 0.0)
        monkeypatch.undo()
        _, evaluations, _ = self._run(monkeypatch, start, X, Y, max_iter=50, ftol=float(ftol))
        assert evaluations == 2

    def test_small_parameters_stop_on_the_relative_step(self, monkeypatch):
        """The noisy case with X × 2⁸ and Θ × 2⁻¹⁶ (the same patterns): ‖Θ‖ ~ 1e-5, and the step test is relative
        to it."""
        _, X, Y, start = _noisy_case()
        self._run(monkeypatch, start * 2.0**-16, X * 2.0**8, Y, max_iter=300, ftol=0.0)


class TestConjugateGradientLoopRules(_LoopRules):
    """``solver="cg"`` replayed step by step (:class:`_CgTrace`): the damping and stopping rules of the normal
    equations' loop, each step by conjugate gradients preconditioned with the damped per-head blocks."""

    solver = "cg"

    def _replay(self, monkeypatch, fail, run, X, yy, **limits):
        trace = _CgTrace(monkeypatch, fail)
        run()
        return trace.replay(X, yy, **limits)

    @pytest.mark.parametrize("max_iter", [1, 2, 6, 40])
    def test_far_start_up_to_the_cap(self, monkeypatch, max_iter):
        """Evaluations 5–11 reject their steps: a cap of 6 ends on a rejected step, 2 on a kept one, and a cap of 1
        is the start alone."""
        _, X, Y, start = _far_case()
        _, evaluations, _ = self._run(monkeypatch, start, X, Y, max_iter=max_iter, ftol=1e-12)
        assert evaluations == max_iter

    @pytest.mark.parametrize(("noise", "expected"), [(1e-13, 7), (1e-11, 7), (1e-14, 16)],
                             ids=["floor", "relative", "control"])
    def test_the_rounding_floor_ends_a_step_that_gains_little(self, monkeypatch, noise, expected):
        """Labels off the layer by 1e-13 of their mean size: the sixth evaluation lands at 4.7e-26 and the seventh,
        kept, at 5.3e-27 — below 1e-20 and less than ten times lower: the run ends there. At 1e-11 the seventh, kept,
        lands at 5.3e-23 relative, 1.4e-20 in the labels' own units (their sum of squares is 265): the zone is
        relative, and the run ends there too. Control: at 1e-14 the seventh gains 800 times (4.2e-26 to 5.3e-29) and
        the run goes on."""
        layer, X, Y = _planted(2, 3, 2, 40, seed=5)
        Y = Y + noise * np.abs(Y).mean() * np.random.default_rng(1).standard_normal(Y.shape)
        start = layer.thetas + 0.1 * np.random.default_rng(1).standard_normal((2, 3, 3))
        _, evaluations, rel = self._run(monkeypatch, start, X, Y, max_iter=200, ftol=1e-15)
        assert evaluations == expected and 1e-30 < rel < 1e-20

    def test_a_decrease_of_exactly_ftol_stops(self, monkeypatch):
        _, X, Y, start = _noisy_case()
        trace = _CgTrace(monkeypatch)
        _levenberg_marquardt(start, X, Y, max_iter=3, ftol=0.0, solver="cg")
        costs = [e[2] for e in trace.events if e[0] == "solve"]
        assert costs[1] < costs[0]  # the first step is kept
        decrease = costs[0] - costs[1]
        ftol = decrease / costs[0]
        while ftol * costs[0] != decrease:
            ftol = np.nextafter(ftol, np.inf if ftol * costs[0] < decrease else 0.0)
        monkeypatch.undo()
        _, evaluations, _ = self._run(monkeypatch, start, X, Y, max_iter=50, ftol=float(ftol))
        assert evaluations == 2

    def test_small_parameters_stop_on_the_relative_step(self, monkeypatch):
        """The noisy case with X × 2⁸ and Θ × 2⁻¹⁶ (the same patterns): ‖Θ‖ ~ 1e-5, and the step test is relative
        to it. The last kept step moves Θ by 1.3e-15 of its norm (1e-20 absolute): not small, so the run goes on,
        rejecting, until the damping runs out."""
        _, X, Y, start = _noisy_case()
        _, evaluations, _ = self._run(monkeypatch, start * 2.0**-16, X * 2.0**8, Y, max_iter=300, ftol=0.0)
        assert evaluations < 300

    def test_a_tiny_input_coordinate_has_its_scale_floored(self, monkeypatch):
        """One input coordinate 1e-7 of the others: the blocks' diagonal entries of the Θ entries it multiplies are
        1e-15 to 1e-29 of the largest, below the floor of 1e-12 of it; labels × 2⁻¹² make that largest entry below
        one (1e-7), so the floor is relative to it, not to one."""
        layer, X, _, start = _far_case()
        X = X * np.array([1e-7, 1.0, 1.0])
        Y = layer(X) * 2.0**-12
        self._run(monkeypatch, start, X, Y, max_iter=8, ftol=1e-12)


class TestRefit:
    def test_defaults_are_200_evaluations(self):
        """A start whose run is still going at 200 evaluations: the default stops there."""
        _, X, Y, _ = _far_case()
        start = 3 * np.random.default_rng(11).standard_normal((2, 3, 3))  # its 201st evaluation keeps a step
        layer = refit(start, X, Y)
        capped = refit(start, X, Y, max_iter=200, ftol=1e-12)
        longer = refit(start, X, Y, max_iter=201, ftol=1e-12)
        np.testing.assert_array_equal(layer.thetas, capped.thetas)
        np.testing.assert_array_equal(layer.ws, capped.ws)
        assert not np.array_equal(capped.thetas, longer.thetas)

    def test_ftol_ends_at_the_first_small_decrease(self):
        """ftol = 1 stops after the first kept step: the layer of a run capped at two evaluations (the first
        step is kept); the default ftol (1e-12) goes on, to a lower residual."""
        _, X, Y, start = _noisy_case()
        one_step = refit(start, X, Y, max_iter=2)
        np.testing.assert_array_equal(refit(start, X, Y, ftol=1.0).thetas, one_step.thetas)
        converged = refit(start, X, Y)
        assert _rel(converged, X, Y) < _rel(one_step, X, Y)
        np.testing.assert_array_equal(converged.thetas, refit(start, X, Y, ftol=1e-12).thetas)

    def test_blocks_stay_within_max_bytes(self, monkeypatch):
        _, X, Y, start = _noisy_case()
        per = TestNormalEquationsInBlocks.per  # the same (m, d, k) = (2, 3, 2)
        calls = _gradient_calls(monkeypatch)
        layer = refit(start, X, Y, max_iter=5, max_bytes=3 * per)
        assert calls and all(n <= 3 for n in calls) and sum(calls) % X.shape[0] == 0
        assert layer.thetas.shape == (2, 3, 3) and layer.thetas.dtype == np.float64


    @pytest.mark.parametrize(("solver", "section"), [("normal", "refinement: Cholesky solve"),
                                                     ("cg", "refinement: CG iterations")])
    def test_refine_layer_reports_the_solver_that_ran(self, solver, section):
        """The fit names the step solver it ran: the one asked for, whose steps the profile shows."""
        _, X, Y, start = _noisy_case()
        with recording() as profile:
            fit = refine_layer(start, X, Y, max_iter=3, solver=solver)
        assert fit.solver == solver and profile[section].calls >= 1


class TestTrustRegionRefinement:
    def _case(self):
        layer, X, Y = _planted(2, 3, 2, 48, seed=3)
        warm = layer.thetas + 0.03 * np.random.default_rng(4).standard_normal(layer.thetas.shape)
        return layer, X, Y, warm, _fit_ws([head_features(t, X) for t in warm], Y)

    def test_reaches_floating_point_accuracy_with_the_analytic_jacobian(self, monkeypatch):
        """Exact labels: all 2md² parameters to the planted layer's F (relative residual ~1e-30, as the module
        says), with :func:`layer_jacobian` as the Jacobian."""
        layer, X, Y, warm, ws = self._case()
        calls = []
        original = search.layer_jacobian

        def spy(thetas, w, X_):
            calls.append(1)
            return original(thetas, w, X_)

        monkeypatch.setattr(search, "layer_jacobian", spy)
        t, w, nfev = _refine(warm, ws, X, Y, 200)
        assert calls and nfev <= 200
        assert _rel(AttentionLayer(t, w), X, Y) < 1e-26

    def test_the_planted_layer_is_stationary_at_once(self):
        """Exact labels and the planted parameters: the gradient is zero, the first evaluation ends the run."""
        layer, X, Y, _, _ = self._case()
        t, w, nfev = _refine(layer.thetas, layer.ws, X, Y, 200)
        assert nfev == 1
        np.testing.assert_array_equal(t, layer.thetas)
        np.testing.assert_array_equal(w, layer.ws)

    @pytest.mark.parametrize(("noise", "warm_start"), [(1e-3, True), (0.1, False)])
    def test_noisy_labels_end_at_a_stationary_point(self, noise, warm_start):
        """Labels with noise: the run ends on its own tolerances (before a cap of 30 evaluations; measured 13
        and 25) where the gradient Jᵀr of the cost vanishes to ~1e-14 (measured 8e-15 and 1e-8 at σ = 0.1)."""
        layer, X, Y = _planted(2, 3, 2, 48, seed=3, noise=noise)
        thetas, ws = layer.thetas, layer.ws
        if warm_start:
            thetas = layer.thetas + 0.03 * np.random.default_rng(4).standard_normal(layer.thetas.shape)
            ws = _fit_ws([head_features(t, X) for t in thetas], Y)
        t, w, nfev = _refine(thetas, ws, X, Y, 30)
        assert nfev < 30
        gradient = layer_jacobian(t, w, X).T @ (AttentionLayer(t, w)(X) - Y).ravel()
        assert np.abs(gradient).max() < (1e-12 if noise < 1e-2 else 1e-7)

    @pytest.mark.parametrize("max_nfev", [1, 3])
    def test_max_nfev_caps_the_evaluations(self, max_nfev):
        layer, X, Y, warm, ws = self._case()
        _, _, nfev = _refine(warm, ws, X, Y, max_nfev)
        assert nfev == max_nfev


class TestVpSearchFigures:
    def test_starts_evaluations_and_residual_figures(self, monkeypatch):
        layer, X, Y = _planted(3, 4, 2, 40, seed=8, noise=1e-2)
        T = layer.thetas.reshape(3, -1)
        star = layer.thetas.mean(axis=0)
        Q = np.linalg.qr((T[1:] - T[0]).T)[0]
        radius = 2.0
        runs = []
        original = search._levenberg_marquardt

        def spy(theta0, X_, Y_, **kwargs):
            out = original(theta0, X_, Y_, **kwargs)
            runs.append((theta0.copy(), kwargs, out))
            return out

        monkeypatch.setattr(search, "_levenberg_marquardt", spy)
        found, evaluations, details = _vp_search(star, Q, 3, X, Y, radius, 2, starts=4, max_iter=30,
                                                 rng=np.random.default_rng(5), ftol=1e-3)
        # The starts: uniform draws in [−radius, radius]^(m−1) per head, in the generator's order.
        draws = np.random.default_rng(5).uniform(-radius, radius, size=(4, 3, 2))
        np.testing.assert_array_equal(np.stack([r[0] for r in runs]), draws)
        assert all(r[1]["ftol"] == 1e-3 and r[1]["max_iter"] == 30 for r in runs)
        assert evaluations == sum(r[2][2] for r in runs)
        rels = [r[2][3] for r in runs]
        assert len(set(rels)) == 4
        assert details["best_in_sample_residual"] == min(rels)
        assert details["start_residuals_quartiles"] == [float(q) for q in np.quantile(rels, [0.25, 0.5, 0.75])]
        order = np.argsort(rels)[:2]
        for tuple_, i in zip(found, order, strict=True):
            z = runs[i][2][0]
            np.testing.assert_allclose(tuple_, star[None] + (z.reshape(3, 2) @ Q.T).reshape(3, 4, 4), rtol=1e-12)

    def test_equal_residuals_keep_the_draw_order(self):
        """Zero labels: every start fits exactly (residual 0), so the ranking is the order of the draws."""
        layer, X, _ = _planted(2, 3, 2, 20, seed=1)
        star = layer.thetas.mean(axis=0)
        Q = np.linalg.qr((layer.thetas[1] - layer.thetas[0]).reshape(-1, 1))[0]
        found, evaluations, details = _vp_search(star, Q, 2, X, np.zeros_like(X), 1.0, 3, starts=3, max_iter=10,
                                                 rng=np.random.default_rng(0))
        draws = np.random.default_rng(0).uniform(-1.0, 1.0, size=(3, 2, 1))
        assert evaluations == 3 and details["best_in_sample_residual"] == 0.0
        for tuple_, a in zip(found, draws, strict=True):
            np.testing.assert_allclose(tuple_, star[None] + (a @ Q.T).reshape(2, 3, 3), rtol=0, atol=1e-15)


class TestWarmStart:
    def test_a_tie_goes_to_the_first_tuple(self):
        """Two tuples with the same Θ's have the same held-out error: the search's first one is kept."""
        layer, X, Y = _planted(2, 3, 2, 30, seed=1, noise=0.1)
        Xh, Yh = LayerOracle(layer, 2, noise=0.1, rng=9).draw(30)
        first, second = layer.thetas.copy(), layer.thetas.copy()
        err, warm = _warm_start([first, second], X, Y, Xh, Yh)
        ws = _fit_ws([head_features(t, X) for t in first], Y)
        assert err == pytest.approx(_rel(AttentionLayer(first, ws), Xh, Yh), rel=1e-12)
        np.testing.assert_array_equal(warm.thetas, first)


M, D, K = 2, 3, 2
PER = 8 * K * D * 2 * M * D * D  # bytes of one example's rows of the full Jacobian (2md² columns)


@pytest.fixture(scope="module")
def noisy():
    """A right two-head fit to 24 noisy examples (σ = 1e-3), 200 scoring and 300 held-out ones, the hull."""
    truth = random_layer(M, D, check=False, rng=16)
    oracle = LayerOracle(truth, K, noise=1e-3, rng=26)
    Xs, Ys = oracle.draw(200)
    Xh, Yh = oracle.draw(300)
    Xr, Yr = Xs[:24], Ys[:24]
    T = truth.thetas.reshape(M, -1)
    hull = (truth.thetas.mean(axis=0), np.linalg.qr((T[1:] - T[0]).T)[0], 2.0)
    return truth, refit(truth.thetas, Xr, Yr), (Xs, Ys, Xr, Yr, Xh, Yh), hull


class TestNoiseRefit:
    def test_refit_on_the_examples_a_quarter_of_the_memory_allows(self, noisy):
        """A quarter of search_memory holds the Jacobians of 40 examples (and 100 bytes): the test on the 24 refinement
        examples with the hull's candidates, the refit on the first 40 scoring ones, its noise floor carrying the
        test's verdict on the features."""
        truth, refined, (Xs, Ys, Xr, Yr, Xh, Yh), hull = noisy
        budget = 40 * PER + 100
        config = LearnConfig(noise_z=6.0, max_nfev=200, search_memory=4 * budget)
        found, nfev = _noise_refit(refined, Xs, Ys, Xr, Yr, Xh, Yh, config, hull=hull)
        assert set(found) == {"noise_test", "noise", "refit_examples", "refit"}
        test = found["noise_test"]
        # uniform attention, 2 scales per head, self-attention, Θ* and 48 points of the box
        assert test.structure_features == 1 + 2 * M + 1 + 1 + 48
        assert test == noise_floor(refined, Xr, Yr, Xh, Yh, LearnConfig(noise_z=6.0), max_bytes=budget,
                                   candidates=candidate_thetas(refined, hull))
        assert test.consistent and test.z == 6.0 and 0 < test.structure_p < 1
        assert found["refit_examples"] == 40
        z, ws, evaluations, _ = _levenberg_marquardt(refined.thetas, Xs[:40], Ys[:40], max_iter=200, ftol=1e-12)
        layer, heldout = found["refit"]
        np.testing.assert_array_equal(layer.thetas, z.reshape(M, D, D))
        np.testing.assert_array_equal(layer.ws, ws)
        assert nfev == evaluations > 1
        assert heldout == pytest.approx(_rel(layer, Xh, Yh), rel=1e-12)
        # The refit's floor: its own figures on the 40 examples (held-out Jacobian on 40 of the 300), the
        # features' verdict from the test.
        own = noise_floor(layer, Xs[:40], Ys[:40], Xh, Yh, LearnConfig(noise_z=6.0), max_bytes=budget,
                          candidates=([], []))
        assert found["noise"] == dataclasses.replace(own, structure_p=test.structure_p,
                                                     structure_features=test.structure_features,
                                                     structure_worst=test.structure_worst)
        assert found["noise"].structure_worst == test.structure_worst != ""
        assert own.heldout_residuals == Yh.size

    @pytest.mark.parametrize(("extra", "tested"), [(0, True), (3, True), (-1, False)])
    def test_no_test_when_the_refinements_jacobian_exceeds_a_quarter(self, noisy, extra, tested):
        """24 examples need 24·PER bytes: a quarter of 4·24·PER (+3) is enough, one byte less is not."""
        _, refined, (Xs, Ys, Xr, Yr, Xh, Yh), hull = noisy
        config = LearnConfig(noise_z=6.0, max_nfev=200, search_memory=4 * 24 * PER + extra)
        found, nfev = _noise_refit(refined, Xs, Ys, Xr, Yr, Xh, Yh, config, hull=hull)
        if tested:
            assert found["refit_examples"] == 24 and nfev > 1
        else:
            assert found == {} and nfev == 0

    def test_the_refit_gets_the_whole_memory_cap(self, noisy, monkeypatch):
        """The refit runs after the test, alone: its Jacobians may use all of ``search_memory``, not a quarter."""
        _, refined, (Xs, Ys, Xr, Yr, Xh, Yh), hull = noisy
        seen, original = [], search._levenberg_marquardt

        def spy(*args, **kwargs):
            seen.append(kwargs.get("max_bytes"))
            return original(*args, **kwargs)

        monkeypatch.setattr(search, "_levenberg_marquardt", spy)
        budget = 40 * PER + 100
        found, _ = _noise_refit(refined, Xs, Ys, Xr, Yr, Xh, Yh,
                                LearnConfig(noise_z=6.0, max_nfev=200, search_memory=4 * budget), hull=hull)
        assert "refit" in found and seen == [4 * budget]

    def test_the_refit_stops_on_a_relative_decrease_of_1e_12(self, noisy, monkeypatch):
        """On 30 examples the refit's last kept step lowers the residual by between 1e-15 and 1e-12 relative: the
        documented loop replayed with ftol = 1e-12 ends where the refit did, and the default 1e-15 would go on."""
        _, refined, (Xs, Ys, Xr, Yr, Xh, Yh), hull = noisy
        trace = _Trace(monkeypatch)
        found, nfev = _noise_refit(refined, Xs, Ys, Xr, Yr, Xh, Yh,
                                   LearnConfig(noise_z=6.0, max_nfev=200, search_memory=4 * 30 * PER), hull=hull)
        assert found["refit_examples"] == 30
        z, evaluations, _ = trace.replay(float(np.sum(Ys[:30] ** 2)), max_iter=200, ftol=1e-12)
        np.testing.assert_array_equal(found["refit"][0].thetas.ravel(), z)
        assert nfev == evaluations < 200
        kept = []  # the residual after the start and after each kept step (one lower than all before it)
        for event in trace.events:
            if event[0] == "solve" and (not kept or event[2] < kept[-1]):
                kept.append(event[2])
        gain = (kept[-2] - kept[-1]) / kept[-2]
        assert 1e-15 < gain <= 1e-12

    def test_the_refit_runs_the_configured_step_solver(self, noisy):
        """``refine_solver="cg"`` at 18 unknowns (where ``"auto"`` takes the normal equations): the refit's steps
        are conjugate-gradient solves, recorded in their own profiling sections, and no Cholesky solve runs."""
        _, refined, (Xs, Ys, Xr, Yr, Xh, Yh), hull = noisy
        config = LearnConfig(noise_z=6.0, max_nfev=200, search_memory=4 * (40 * PER + 100), refine_solver="cg")
        with recording() as profile:
            found, nfev = _noise_refit(refined, Xs, Ys, Xr, Yr, Xh, Yh, config, hull=hull)
        assert "refit" in found and nfev > 1
        assert "refinement: CG iterations" in profile and "refinement: Cholesky solve" not in profile

    def test_a_refit_with_no_residual_keeps_the_tests_verdict_on_the_features(self, noisy):
        """Scoring labels of zero are fitted exactly by W = 0 at the start (one evaluation, no step): the refit's
        floor is σ̂ = 0 and ρ = ∞, not consistent, and the features, tried on the refinement set, are not tried
        again on a residual of nothing (whose chi-square statistic would be 0/0)."""
        _, refined, (Xs, Ys, Xr, Yr, Xh, Yh), hull = noisy
        config = LearnConfig(noise_z=6.0, max_nfev=200, search_memory=4 * (40 * PER + 100))
        found, nfev = _noise_refit(refined, Xs, np.zeros_like(Ys), Xr, Yr, Xh, Yh, config, hull=hull)
        test, floor = found["noise_test"], found["noise"]
        assert test.consistent and nfev == 1
        assert not found["refit"][0].ws.any()
        assert floor.sigma == 0.0 and floor.rho == np.inf and not floor.consistent
        assert (floor.structure_p, floor.structure_features, floor.structure_worst) == (
            test.structure_p, test.structure_features, test.structure_worst)

    def test_a_layer_missing_a_head_is_tested_not_refit(self, noisy):
        truth, _, (Xs, Ys, Xr, Yr, Xh, Yh), _ = noisy
        one = refit(truth.thetas[:1], Xr, Yr)
        budget = 40 * PER
        found, nfev = _noise_refit(one, Xs, Ys, Xr, Yr, Xh, Yh, LearnConfig(max_nfev=200, search_memory=4 * budget))
        assert set(found) == {"noise_test"} and nfev == 0
        test = found["noise_test"]
        assert not test.consistent and test.z == NOISE_Z == LearnConfig().noise_z  # the config's default width
        assert test == noise_floor(one, Xr, Yr, Xh, Yh, max_bytes=budget, candidates=candidate_thetas(one))

    def test_one_refinement_example_and_bytes_for_one(self):
        """d = 1, k = 3: one example gives 3 residuals for the 2 parameters, and a quarter of the bytes holds one
        example's Jacobian (not two): the refit stays on that one example."""
        truth = AttentionLayer(np.array([[[1.5]]]), np.array([[[0.8]]]))
        oracle = LayerOracle(truth, 3, noise=1e-2, rng=2)
        Xs, Ys = oracle.draw(10)
        Xh, Yh = oracle.draw(50)
        refined = refit(truth.thetas, Xs[:1], Ys[:1])
        per = 8 * 3 * 1 * 2 * 1
        found, nfev = _noise_refit(refined, Xs, Ys, Xs[:1], Ys[:1], Xh, Yh,
                                   LearnConfig(max_nfev=50, search_memory=4 * (2 * per - 1)))
        assert found["noise_test"].consistent and found["noise_test"].z == NOISE_Z
        assert found["refit_examples"] == 1 and found["noise"].residuals == 3


@pytest.mark.parametrize("shape", [(300, 700), (50, 256), (40, 1)], ids=str)
@pytest.mark.parametrize("threads", [1, 2])
def test_blocked_products_are_the_products(shape, threads):
    """``AᵀB`` by blocks of 256 columns (a last block that is short, exactly one block, one column), and the
    symmetric ``AᵀA`` from the blocks on and above the diagonal, mirrored: numpy's product to rounding."""
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((shape[0], 90)), rng.standard_normal(shape)
    np.testing.assert_allclose(search._products(A, B, threads), A.T @ B, rtol=0, atol=1e-12 * shape[0])
    C = rng.standard_normal(shape)
    sym = search._products(C, C, threads, symmetric=True)
    np.testing.assert_allclose(sym, C.T @ C, rtol=0, atol=1e-12 * shape[0])
    np.testing.assert_array_equal(sym, sym.T)


def _blas_now():
    from threadpoolctl import threadpool_info

    return frozenset(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


class _Noted(np.ndarray):
    """A numpy array whose products note the thread they run on and the BLAS threads set there (``notes``)."""

    notes: list = []

    def __matmul__(self, other):
        _Noted.notes.append((threading.get_ident(), _blas_now()))
        return np.asarray(self) @ np.asarray(other)


def _noted_products(columns, threads, rows=40):
    """``_products(A, B, threads)`` for B of ``columns`` columns with two BLAS threads set in the process: that
    setting and the notes of its blocks (the product itself checked against numpy's)."""
    from learner.parallel import blas_threads

    rng = np.random.default_rng(4)
    A, B = rng.standard_normal((rows, 30)), rng.standard_normal((rows, columns))
    _Noted.notes = []
    with blas_threads(2):
        out = search._products(A.view(_Noted), B, threads)
        setting = _blas_now()
    np.testing.assert_allclose(out, A.T @ B, rtol=0, atol=1e-12 * rows)
    return setting, _Noted.notes


@pytest.mark.parametrize(("columns", "threads", "shared"), [(256, 2, False), (512, 1, False), (512, 2, True),
                                                            (1000, 3, True)])
def test_blocks_take_one_blas_thread_each_only_when_threads_share_them(columns, threads, shared):
    """One block (256 columns: nothing to share) or one thread keeps the process's BLAS setting; two blocks or
    more on two threads or more are single-threaded BLAS calls, so their bits do not depend on the setting."""
    setting, notes = _noted_products(columns, threads)
    assert setting == {2}  # the process's setting here: two BLAS threads
    assert len(notes) == -(-columns // 256)  # one product per block
    assert {blas for _, blas in notes} == ({frozenset({1})} if shared else {setting})


@pytest.mark.parametrize("threads", [2, 3])
def test_the_blocks_run_on_at_most_the_threads_given(threads):
    """Twelve blocks, each long enough (a 3000-row product) that all are handed out before the first ends: a pool
    that started a thread per waiting block would use more threads than it is given."""
    _, notes = _noted_products(12 * 256, threads, rows=3000)
    assert len(notes) == 12 and len({thread for thread, _ in notes}) <= threads


def test_the_refinement_products_take_the_threads_given_and_the_rest_keeps_the_setting(monkeypatch):
    """``threads`` reaches the refinement's products only (the joint refinement's and, the labels passing the
    noise-floor test, the refit's), each block with one BLAS thread: the factorisations and the search's starts keep
    the process's setting (one thread here)."""
    from threadpoolctl import threadpool_info

    from learner.parallel import blas_threads

    def now():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen = {"products": set(), "factorisations": set(), "starts": set()}
    homes = {"_products": search, "cho_factor": arrays, "_vp_start": search}
    real = {name: getattr(home, name) for name, home in homes.items()}

    def spy(name, key, value):
        def wrapped(*args, **kwargs):
            seen[key] |= value(args)
            return real[name](*args, **kwargs)
        monkeypatch.setattr(homes[name], name, wrapped)

    spy("_products", "products", lambda args: {args[2]})
    spy("cho_factor", "factorisations", lambda args: now())
    spy("_vp_start", "starts", lambda args: now())
    layer, X, Y = _planted(2, 4, 2, 80, seed=12, noise=1e-3)  # noisy labels: the refinement takes steps
    star = min_norm_point(layer.thetas)
    Q = np.linalg.qr((layer.thetas[1] - layer.thetas[0]).reshape(-1, 1))[0]
    with blas_threads(1):
        res = search_heads(ArraySource(X, Y), star, Q, 2, LearnConfig(search="vp", vp_starts=2, n_search=40),
                           threads=2)
    assert res.nfev >= 1 and res.refit_examples == 40  # the default config's noise-floor test passed: refit too
    assert seen == {"products": {2}, "factorisations": {1}, "starts": {1}}
