"""Phase 6's rules against hand-built cases: the grid, the choice of search at its limits, the exhaustive
ranking and its ridge, the swap descent's acceptance rule and counts, the examples each step uses, the
noise-floor branch, and what the result records."""

import itertools
import math
import time

import numpy as np
import pytest

from learner import AttentionLayer, LearnConfig, min_norm_point, random_layer, sample_inputs
from learner.metrics import match_heads
from learner.oracle import ArraySource, LayerOracle
from learner.phases import resolve_config, search_heads
from learner.phases import search as search_module
from learner.phases.noise import NOISE_MIN
from learner.phases.search import (
    _choose_search,
    _exhaustive,
    _grid,
    _search_tuples,
    _swap_descent,
    _swap_search,
    _SwapScorer,
)


def _hull(layer):
    """True min-norm point and orthonormal hull directions of a layer."""
    T = layer.thetas.reshape(layer.m, -1)
    Q = np.linalg.qr((T[1:] - T[0]).T)[0] if layer.m > 1 else np.zeros((T.shape[1], 0))
    return min_norm_point(layer.thetas), Q


def _source(layer, n, *, k=2, noise=0.0, seed=6):
    """A fixed set of 2n examples of ``layer``: search_heads scores on the first n and holds out the rest."""
    X, Y = LayerOracle(layer, k, noise=noise, rng=seed).draw(2 * n)
    return ArraySource(X, Y)


def _ridge_score(Phi, Y, T):
    """``(‖Y‖² − tr(cᵀ(G + λI)⁻¹c)) / ‖Y‖²`` for the grid points T from the dense design, with the ridge
    λ = 1e-10 × the mean diagonal entry of the grid's Gram matrix."""
    p, n, k, d = Phi.shape
    F = Phi.reshape(p, n * k, d)
    lam = 1e-10 * np.mean([np.trace(f.T @ f) / d for f in F])
    D = np.concatenate([F[q] for q in T], axis=1)
    Yf = Y.reshape(-1, d)
    c = D.T @ Yf
    sol = np.linalg.solve(D.T @ D + lam * np.eye(D.shape[1]), c)
    yy = np.sum(Yf**2)
    return (yy - np.sum(c * sol)) / yy


def _small_point_grid(seed=0, *, s=1e-3, points=30):
    """Features of 1 + ``points`` grid points in d = 2, k = 1: point 0 is the exact regressor of Y at scale
    ``s`` (its least-squares residual is 0, so its score is what the ridge costs it, ~1e-4), the others miss Y
    by a geometric ladder of residuals (ratio ~1.6 a step) that brackets that cost."""
    rng = np.random.default_rng(seed)
    true = rng.standard_normal((8, 1, 2))
    Y = true @ rng.standard_normal((2, 2))
    E = rng.standard_normal((8, 1, 2))
    ladder = [true + t * E for t in np.geomspace(3e-3, 1.0, points)]
    return np.stack([s * true] + ladder), Y


class TestGrid:
    def test_grid_by_hand(self):
        one = _grid(1, 5, 3)
        assert one.shape == (1, 0)  # one point, Θ* itself, no coordinates
        np.testing.assert_array_equal(_grid(2, 5, 3), [[-1.0], [-0.5], [0.0], [0.5], [1.0]])
        np.testing.assert_array_equal(_grid(3, 5, 3), list(itertools.product([-1.0, 0.0, 1.0], repeat=2)))
        assert _grid(4, 5, 3).shape == (27, 3)


class TestChooseSearch:
    # p = 5 points, m = 2, d = 3: C(5, 2) = 10 tuples and a Gram matrix of 8·(5·3)² = 1800 bytes.
    def test_the_limits_are_inclusive(self):
        limits = {"max_tuples": 10, "search_memory": 1800}
        assert _choose_search("exhaustive", 2, 5, 3, **limits) == "exhaustive"
        assert _choose_search("auto", 2, 5, 3, **limits) == "exhaustive"

    @pytest.mark.parametrize(("name", "limits"), [("max_tuples", {"max_tuples": 9, "search_memory": 1800}),
                                                  ("search_memory", {"max_tuples": 10, "search_memory": 1799})])
    def test_one_below_a_limit_is_refused_or_left_to_vp(self, name, limits):
        assert _choose_search("auto", 2, 5, 3, **limits) == "vp"
        with pytest.raises(ValueError, match=f"{name}="):
            _choose_search("exhaustive", 2, 5, 3, **limits)

    def test_one_head_is_always_the_exhaustive_search_and_two_heads_keep_the_choice(self):
        for search in ("auto", "exhaustive", "swap", "vp"):
            assert _choose_search(search, 1, 1, 3, max_tuples=10, search_memory=2**30) == "exhaustive"
        for search in ("swap", "vp"):
            assert _choose_search(search, 2, 5, 3, max_tuples=10, search_memory=2**30) == search
        assert _choose_search("auto", 2, 5, 3, max_tuples=9, search_memory=2**30) == "vp"


class TestExhaustiveRanking:
    @pytest.mark.parametrize("label_scale", [1.0, 1e-100])
    def test_the_ridge_is_a_tenbillionth_of_the_mean_gram_diagonal(self, label_scale):
        """Point 0 fits exactly at a small scale: where it ranks among the ladder is set by the ridge (on the
        features alone: the ranking does not depend on the labels' scale, even where ‖Y‖⁴ underflows)."""
        Phi, Y = _small_point_grid()
        Y = label_scale * Y
        best, scored = _exhaustive(Phi, Y, 1, len(Phi))
        reference = np.argsort([_ridge_score(Phi, Y, (q,)) for q in range(len(Phi))])
        assert scored == len(Phi)
        assert 5 < list(reference).index(0) < len(Phi) - 5  # the case is sensitive: point 0 mid-ladder
        np.testing.assert_array_equal(best[:, 0], reference)

    def test_more_tuples_than_one_block(self):
        """C(201, 2) = 20 100 tuples, scored in blocks of 20 000: the one planted exact fit ranks first and the
        one pair orthogonal to Y (tuple number 20 000, past the first block) last."""
        rng = np.random.default_rng(3)
        N, p = 6, 201
        y = rng.standard_normal(N)
        F = rng.standard_normal((p, N))
        tuples = list(itertools.combinations(range(p), 2))
        a, b = tuples[20000]
        u, v = 17, 40
        for q in (a, b):
            F[q] -= (F[q] @ y) / (y @ y) * y  # orthogonal to y: the pair (a, b) scores exactly 1
        F[v] = y - F[u]  # F_u + F_v = y: an exact fit
        best, scored = _exhaustive(F.reshape(p, N, 1, 1), y.reshape(N, 1, 1), 2, len(tuples))
        assert scored == len(tuples)
        assert tuple(best[0]) == (u, v) and tuple(best[-1]) == (a, b)
        assert sorted(map(tuple, best)) == tuples  # every tuple ranked once


class TestSwapScorer:
    @pytest.mark.parametrize("T", [(0,), (5,), (0, 5), (5, 0), (3, 0, 7), (7, 3, 0)])
    def test_scores_are_the_ridge_least_squares_residual(self, T):
        Phi, Y = _small_point_grid(seed=1)
        Y = 3.0 * Y  # ‖Y‖² far from 1
        scorer = _SwapScorer(Phi, Y)
        assert scorer.score(T) == pytest.approx(_ridge_score(Phi, Y, T), rel=1e-7)

    def test_evaluations_count_every_grid_point_scored(self):
        Phi, Y = _small_point_grid(seed=1)
        scorer = _SwapScorer(Phi, Y)
        assert scorer.evaluations == 0
        scorer.score((1, 2))
        assert scorer.evaluations == len(Phi)
        scorer.explained([])
        assert scorer.evaluations == 2 * len(Phi)


class _TableScorer:
    """A scorer over ``p`` points with ``yy = 1`` whose explained sum of squares of a set of points is given by
    a table (0 for a set not in it); scores as the real one does, ``(yy − explained) / yy``."""

    def __init__(self, p, table):
        self.p, self.yy, self.evaluations = p, 1.0, 0
        self.table = {frozenset(k): v for k, v in table.items()}

    def explained(self, others):
        self.evaluations += self.p
        rest = set(others or [])
        return np.array([self.table.get(frozenset(rest | {q}), 0.0) for q in range(self.p)])

    def score(self, T):
        return (self.yy - self.explained(list(T[1:]))[T[0]]) / self.yy


class TestSwapDescent:
    def test_a_path_by_hand(self):
        # From (0, 1) (residual 0.5): head 0 → 2 (residual 0.3), head 1 → 3 (0.2); the second pass finds no swap.
        scorer = _TableScorer(4, {(0, 1): 0.5, (1, 2): 0.7, (1, 3): 0.55, (0, 2): 0.6, (2, 3): 0.8, (0, 3): 0.4})
        T, best, swaps = _swap_descent(scorer, 2, [0, 1])
        assert T == (2, 3) and swaps == 2
        assert best == pytest.approx(0.2, abs=1e-15)

    def test_a_tie_is_not_a_swap(self):
        # Points 0 and 1 explain as much beside point 2: from (1, 2), point 0 (first of the tie) is no improvement.
        scorer = _TableScorer(3, {(0, 2): 0.7, (1, 2): 0.7, (0, 1): 0.1})
        assert _swap_descent(scorer, 2, [1, 2]) == ((1, 2), pytest.approx(0.3, abs=1e-15), 0)

    @pytest.mark.parametrize(("gain", "swapped"), [(1e-9, False), (2e-9, True)])
    def test_a_swap_must_lower_the_residual_by_more_than_a_billionth(self, gain, swapped):
        # Residual 0.75 at the start; point 2 would give 0.75·(1 − gain). Exactly 1e-9 lower is not enough.
        new = 0.75 * (1 - gain)
        scorer = _TableScorer(3, {(0, 1): 0.25, (1, 2): 1 - new})
        assert (1.0 - (1 - new)) / 1.0 == new  # the table gives the residual exactly
        T, best, swaps = _swap_descent(scorer, 2, [0, 1])
        assert (T, swaps) == (((1, 2), 1) if swapped else ((0, 1), 0))

    def test_stops_after_fifty_passes(self):
        """A scorer that always has a better point: the descent stops after its default 50 passes, one swap
        per pass at m = 1."""

        class Endless:
            p, yy, evaluations = 2, 1.0, 0
            calls = 0

            def explained(self, others):
                self.calls += 1
                gain = np.zeros(2)
                gain[self.calls % 2] = 1 - 0.5**self.calls  # the other point, always better
                return gain

            def score(self, T):
                return 1.0

        T, best, swaps = _swap_descent(Endless(), 1, [0])
        assert swaps == 50


class _Scripted:
    """Stands in for _swap_descent: records the starts and returns the given optima in turn."""

    def __init__(self, optima):
        self.optima, self.starts = list(optima), []

    def __call__(self, scorer, m, start):
        self.starts.append([int(q) for q in start])
        return self.optima[len(self.starts) - 1]


class TestSwapSearch:
    def test_the_greedy_start_adds_the_best_complement(self, monkeypatch):
        # Point 3 explains most alone; beside it point 0 adds most, though point 1 is the better one alone.
        table = {(3,): 0.6, (1,): 0.5, (0,): 0.1, (2,): 0.2, (0, 3): 0.9, (1, 3): 0.7, (2, 3): 0.65}
        monkeypatch.setattr(search_module, "_SwapScorer", lambda Phi, Ys: _TableScorer(4, table))
        script = _Scripted([((0, 3), 0.1, 0)])
        monkeypatch.setattr(search_module, "_swap_descent", script)
        _swap_search(None, None, 2, 5, starts=0, rng=np.random.default_rng(0))
        assert script.starts == [[3, 0]]

    def test_random_starts_are_tuples_of_distinct_points(self, monkeypatch):
        monkeypatch.setattr(search_module, "_SwapScorer", lambda Phi, Ys: _TableScorer(3, {}))
        script = _Scripted([((0, 1), 0.5, 0)] * 31)
        monkeypatch.setattr(search_module, "_swap_descent", script)
        _swap_search(None, None, 2, 5, starts=30, rng=np.random.default_rng(0))
        assert len(script.starts) == 31
        assert all(len(set(s)) == 2 and all(0 <= q < 3 for q in s) for s in script.starts)

    def test_optima_are_ranked_by_their_best_residual(self, monkeypatch):
        monkeypatch.setattr(search_module, "_SwapScorer", lambda Phi, Ys: _TableScorer(5, {}))
        # (2, 3) is found with residuals 0.3 then 0.5 (its best, 0.3, counts), (0, 1) with 0.4 then 0.45.
        script = _Scripted([((2, 3), 0.3, 1), ((0, 1), 0.4, 2), ((2, 3), 0.5, 4), ((0, 1), 0.45, 0)])
        monkeypatch.setattr(search_module, "_swap_descent", script)
        best, evaluations, details = _swap_search(None, None, 2, 5, starts=3, rng=np.random.default_rng(0))
        np.testing.assert_array_equal(best, [(2, 3), (0, 1)])
        assert details == {"swap_starts": 4, "swaps": 7, "distinct_optima": 2, "best_in_sample_residual": 0.3}
        assert evaluations == 2 * 5  # the greedy start's two sweeps of the grid
        monkeypatch.setattr(search_module, "_swap_descent", _Scripted(script.optima))
        best, _, _ = _swap_search(None, None, 2, 1, starts=3, rng=np.random.default_rng(0))
        np.testing.assert_array_equal(best, [(2, 3)])  # keep = 1


def _random_case(m, d, k, n, seed=0):
    """Θ*, orthonormal directions (d², m − 1) and n random labelled examples (no planted layer)."""
    rng = np.random.default_rng(seed)
    star = rng.standard_normal((d, d)) / d
    directions = np.linalg.qr(rng.standard_normal((d * d, m - 1)))[0]
    X = sample_inputs(n, k, d, rng=seed)
    return star, directions, X, rng.standard_normal(X.shape)


def _run_tuples(chosen, star, directions, m, X, Y, **kw):
    args = {"n_search": X.shape[0], "radius": 1.0, "p": 5 if m == 2 else 13 ** (m - 1), "net_points": 5,
            "net_points_3d": 13, "keep_tuples": 1, "max_nfev": 1, "search_memory": 2**30, "swap_starts": 2,
            "vp_starts": 2, "seed": 0} | kw
    found, scored, details = _search_tuples(chosen, star, directions, m, X, Y, **args)
    return list(found), scored, details


class TestSearchTuples:
    @pytest.mark.parametrize(("m", "d", "expected"), [(2, 3, 32), (4, 8, 34)])
    def test_vp_scores_on_twice_the_unknowns_at_least_32_examples(self, m, d, expected):
        # (4, 8, 2): residuals n·k·d at least 2·(m·d² + m(m − 1)) = 536, so n = ⌈536/16⌉ = 34; (2, 3, 2): 32.
        star, directions, X, Y = _random_case(m, d, 2, 100)
        found, _, details = _run_tuples("vp", star, directions, m, X, Y)
        assert details["scoring_examples"] == expected
        assert len(found) == 1 and found[0].shape == (m, d, d)  # keep_tuples of the vp_starts optima

    def test_vp_starts_repeat_with_the_seed(self):
        star, directions, X, Y = _random_case(2, 3, 2, 40)
        runs = [_run_tuples("vp", star, directions, 2, X, Y, seed=s)[0][0] for s in (0, 0, 1)]
        np.testing.assert_array_equal(runs[0], runs[1])
        assert not np.allclose(runs[0], runs[2])

    def test_vp_starts_stop_at_the_search_tolerance(self, monkeypatch):
        """Each start's Levenberg–Marquardt stops at a relative gain of SEARCH_FTOL (1e-4): looser than the
        refinement's 1e-15, since a start only has to land in the basin the refinement finishes."""
        assert search_module.SEARCH_FTOL == 1e-4
        seen = []
        real = search_module._levenberg_marquardt

        def spy(theta0, X_, Y_, **kwargs):
            seen.append(kwargs["ftol"])
            return real(theta0, X_, Y_, **kwargs)

        monkeypatch.setattr(search_module, "_levenberg_marquardt", spy)
        star, directions, X, Y = _random_case(2, 3, 2, 40)
        _run_tuples("vp", star, directions, 2, X, Y)
        assert seen and set(seen) == {1e-4}

    def test_swap_scores_on_what_the_feature_cache_fits(self):
        # 5 points, k = 2, d = 3: 240 bytes of features per example; 2639 bytes hold 10 examples.
        star, directions, X, Y = _random_case(2, 3, 2, 100)
        _, _, details = _run_tuples("swap", star, directions, 2, X, Y, search_memory=2639)
        assert details["scoring_examples"] == 10 and details["memory_bytes"] == 2400

    def test_swap_needs_twice_the_unknowns_of_the_w_fit(self):
        # n_min = ⌈2·m·d²/(k·d)⌉ = 6 examples: 1440 bytes hold exactly 6, 1439 only 5.
        star, directions, X, Y = _random_case(2, 3, 2, 100)
        _, _, details = _run_tuples("swap", star, directions, 2, X, Y, search_memory=1440)
        assert details["scoring_examples"] == 6
        with pytest.raises(ValueError, match="search_memory"):
            _run_tuples("swap", star, directions, 2, X, Y, search_memory=1439)

    def test_swap_keeps_keep_tuples_of_its_optima(self, monkeypatch):
        star, directions, X, Y = _random_case(2, 3, 2, 40)
        script = _Scripted([((2, 3), 0.3, 1), ((0, 4), 0.4, 2), ((1, 2), 0.2, 0)])
        monkeypatch.setattr(search_module, "_swap_descent", script)
        found, _, details = _run_tuples("swap", star, directions, 2, X, Y, keep_tuples=2)
        assert details["distinct_optima"] == 3 and len(found) == 2
        # The best, (1, 2): the grid points at coordinates −0.5 and 0 (radius 1) along the direction.
        V = directions[:, 0].reshape(3, 3)
        np.testing.assert_allclose(found[0], [star - 0.5 * V, star], rtol=0, atol=1e-15)


def _planted_on_grid(d=3, *, norm=0.5, seed=0):
    """Θ* of norm ``norm`` < 1, a unit direction V and a layer whose heads are Θ* ∓ 2‖Θ*‖·V: the ends of the
    3-point grid of the default net_radius."""
    rng = np.random.default_rng(seed)
    star = rng.standard_normal((d, d))
    star *= norm / np.linalg.norm(star)
    V = rng.standard_normal(d * d)
    V /= np.linalg.norm(V)
    r = 2.0 * norm
    heads = np.stack([star - r * V.reshape(d, d), star + r * V.reshape(d, d)])
    layer = AttentionLayer(heads, rng.standard_normal((2, d, d)))
    return layer, star, V[:, None]


class _Spy:
    """Wraps a function of the search module and records its arguments and results."""

    def __init__(self, monkeypatch, name):
        self.calls = []
        real = getattr(search_module, name)

        def spy(*args, **kwargs):
            out = real(*args, **kwargs)
            self.calls.append((args, kwargs, out))
            return out

        monkeypatch.setattr(search_module, name, spy)


#: What search_heads did before it read a LearnConfig, where a test's figures rest on it: 1.5 residuals per parameter
#: of the refinement and no noise-floor test (the config's defaults are 2.0 and the test on).
OLD_DEFAULTS = {"refine_examples_per_param": 1.5, "noise_floor": False}


def _count_warm_start_candidates(monkeypatch):
    """Wraps the search's warm start; returns the list of how many candidate tuples each call compared."""
    compared = []
    real = search_module._warm_start

    def warm_start(tuples, *args):
        tuples = list(tuples)  # may be an iterator: counted, then handed on
        compared.append(len(tuples))
        return real(tuples, *args)

    monkeypatch.setattr(search_module, "_warm_start", warm_start)
    return compared


class TestSearchHeads:
    def test_heads_on_the_grid_are_the_warm_start(self, monkeypatch):
        """Heads at the ends of a 3-point grid around a Θ* of norm below 1 (radius 2‖Θ*‖): the exhaustive search's
        warm start is exactly the planted pair, heads in grid order."""
        layer, star, V = _planted_on_grid()
        compared = _count_warm_start_candidates(monkeypatch)
        res = search_heads(_source(layer, 40), star, V, 2,
                           LearnConfig(net_points=3, net_points_3d=5, n_search=40, keep_tuples=2), truth=layer)
        assert res.search == "exhaustive" and res.net_points == 3
        assert res.summary()["tuples_in_grid"] == 3.0 and res.summary()["grid_points"] == 3
        np.testing.assert_allclose(res.warm_start.thetas, layer.thetas, rtol=0, atol=1e-15)
        assert res.warm_start_heldout < 1e-24 and res.warm_start_param_error < 1e-10
        # Memory: the (p·d)² Gram matrix and the (p, n, k, d) features, 8 bytes an entry.
        assert res.search_details["memory_bytes"] == 8 * (3 * 3) ** 2 + 8 * 3 * 40 * 2 * 3
        assert compared == [2]  # keep_tuples candidates compared on held-out examples

    def test_the_refinement_set_by_default(self, monkeypatch):
        """By default the config's 2 residuals per parameter: at (m, d, k) = (4, 9, 3) that is ⌈2·2md²/(kd)⌉ = 48
        examples, above the floor of 32 and the 2d²/(k(k−1)) = 27 each head's logit differences need."""
        assert LearnConfig().refine_examples_per_param == 2.0
        layer = random_layer(4, 9, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        lm = _Spy(monkeypatch, "_levenberg_marquardt")
        search_heads(_source(layer, 100, k=3), star, Q, 4, LearnConfig(search="vp", vp_starts=1, n_search=100,
                                                                       max_nfev=5))
        refinement = lm.calls[1][0]  # the joint refinement: after the vp search's one start, before any refit
        assert refinement[1].shape[0] == math.ceil(2.0 * 2 * 4 * 81 / (3 * 9)) == 48

    def test_one_head_is_theta_star(self):
        layer = random_layer(1, 3, logit_scale=1.0, rng=1)
        res = search_heads(_source(layer, 40), layer.thetas[0], np.zeros((9, 0)), 1, LearnConfig(n_search=40))
        assert res.search == "exhaustive" and res.net_points == 1 and res.tuples_scored == 1
        assert res.summary()["tuples_in_grid"] == 1.0
        np.testing.assert_array_equal(res.warm_start.thetas[0], layer.thetas[0])

    def test_what_the_result_records(self, monkeypatch):
        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        source = _source(layer, 40)
        lm = _Spy(monkeypatch, "_levenberg_marquardt")
        t0 = time.perf_counter()
        res = search_heads(source, star, Q, 2, LearnConfig(net_points=5, n_search=40, **OLD_DEFAULTS), truth=layer)
        wall = time.perf_counter() - t0
        assert res.n_examples == 80 == source.n_drawn  # n_search to score, as many held out
        assert isinstance(res.refine_seconds, float) and 0 <= res.refine_seconds <= res.seconds <= wall
        (_, _, (_, _, evaluations, _)), = lm.calls
        assert res.nfev == evaluations >= 1
        Xh, Yh = source.X[40:], source.Y[40:]
        assert res.warm_start_heldout == pytest.approx(np.sum((res.warm_start(Xh) - Yh) ** 2) / np.sum(Yh**2),
                                                       rel=1e-12)
        # The warm start's errors against the truth: on 4096 Boolean inputs of seed 0, and head by head.
        X = sample_inputs(4096, 2, 3, rng=0)
        direct = np.sum((layer(X) - res.warm_start(X)) ** 2) / np.sum(layer(X) ** 2)
        assert 1e-8 < res.warm_start_error == pytest.approx(direct, rel=1e-9)
        assert res.warm_start_param_error == match_heads(layer, res.warm_start).max_error
        other = search_heads(_source(layer, 40), star, Q, 2, LearnConfig(net_points=5, n_search=40, **OLD_DEFAULTS),
                             truth=random_layer(3, 3, check=False, rng=0))
        assert other.warm_start_param_error is None

    @pytest.mark.parametrize(("m", "d", "k", "n_search", "per_param", "n_ref"), [
        (2, 3, 2, 100, None, 32),  # the floor of 32 examples (12 from the default 2 per parameter, 9 from k)
        (2, 3, 2, 200, 20.0, 120),  # 20 residuals per parameter: 20·2md²/(kd) = 120
        (2, 3, 2, 20, 20.0, 20),  # at most n_search
        (2, 10, 3, 60, 1.0, 34),  # every head's logit differences: ⌈2d²/(k(k − 1))⌉ = ⌈200/6⌉ = 34
    ])
    def test_the_refinement_set(self, monkeypatch, m, d, k, n_search, per_param, n_ref):
        """The refinement fits the warm start on the first n_ref scoring examples, its Jacobian built within
        search_memory and its evaluations capped by max_nfev."""
        layer = random_layer(m, d, logit_scale=1.0, rng=2)
        star, Q = _hull(layer)
        source = _source(layer, n_search, k=k)
        lm = _Spy(monkeypatch, "_levenberg_marquardt")
        blocks = _Spy(monkeypatch, "_head_gradients")
        memory = 8 * 3 * (3 * d) ** 2 + 20 * k * d * m * d * d * 8  # the Gram matrix and 20 examples' Jacobian
        kwargs = {} if per_param is None else {"refine_examples_per_param": per_param}
        res = search_heads(source, star, Q, m, LearnConfig(net_points=3, n_search=n_search, max_nfev=3,
                                                           search="exhaustive", search_memory=memory,
                                                           noise_floor=False, **kwargs))
        (args, kw, _), = lm.calls
        theta0, X, Y = args
        assert X.shape[0] == n_ref
        np.testing.assert_array_equal(X, source.X[:n_ref])
        np.testing.assert_array_equal(Y, source.Y[:n_ref])
        np.testing.assert_array_equal(theta0, res.warm_start.thetas)
        assert kw["max_iter"] == 3 and res.nfev <= 3
        per = 8 * k * (2 * m * d * d + (m * d) ** 2 + d * d + m * d * d)  # one example's arrays (structured sums)
        assert blocks.calls and all(a[2].shape[0] * per <= memory for a, _, _ in blocks.calls)

    def test_trust_region_refinement(self):
        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        res = search_heads(_source(layer, 40), star, Q, 2, LearnConfig(net_points=5, n_search=40, refine="trf"))
        assert res.heldout_error < 1e-20 and 1 <= res.nfev <= 200
        capped = search_heads(_source(layer, 40), star, Q, 2,
                              LearnConfig(net_points=5, n_search=40, refine="trf", max_nfev=3))
        assert capped.nfev <= 3 and res.heldout_error < capped.heldout_error < capped.warm_start_heldout

    @pytest.mark.parametrize(("n_search", "dof"), [(40, 32 * 2 * 3 - 2 * 2 * 9), (5, 1)])
    def test_residual_sigma(self, n_search, dof):
        """σ̂ = sqrt(RSS/(N − 2md²)) on the refinement's N = n_ref·k·d residuals; with fewer residuals than
        parameters (5 examples: 30 residuals, 36 parameters) the divisor is 1."""
        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        source = _source(layer, n_search, noise=1e-3)
        res = search_heads(source, star, Q, 2, LearnConfig(n_search=n_search, max_nfev=2, **OLD_DEFAULTS))
        n_ref = min(n_search, 32)
        rss = np.sum((res.layer(source.X[:n_ref]) - source.Y[:n_ref]) ** 2)
        assert rss > 0 and res.residual_sigma == pytest.approx(math.sqrt(rss / dof), rel=1e-9)

    def test_the_vp_starts_run_on_the_callers_pool_as_batches_of_no_examples(self):
        """The starts go to the pool search_heads is given (here a serial one, this process), which counts them under
        its phase label, one batch per start; a pool of the search's own would leave the caller's untouched. A start
        draws no examples, so the pool counts none merged (the count that decides when a local pool starts)."""
        from learner.parallel import Workers

        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        with Workers() as pool:
            search_heads(_source(layer, 40), star, Q, 2, LearnConfig(n_search=40, search="vp", vp_starts=3, max_nfev=2),
                         workers=pool)
        assert pool.stats["6_search"]["batches"] == 3
        assert pool.stats["6_search"]["examples"] == pool.merged == 0


class TestSearchHeadsArguments:
    @pytest.mark.parametrize("config", [{"n_search": 40}, 40, "defaults"])
    def test_a_config_that_is_not_one_is_refused_before_an_example(self, config):
        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        source = _source(layer, 40)
        with pytest.raises(TypeError, match="`config` must be a LearnConfig or None; got"):
            search_heads(source, star, Q, 2, config)
        assert source.n_drawn == 0

    @pytest.mark.parametrize(("m", "error", "words"), [
        (0, ValueError, r"^`m` must be at least 1; got m=0\.$"),
        (-2, ValueError, r"^`m` must be at least 1; got m=-2\.$"),
        (2.0, TypeError, r"^`m` must be an integer; got m=2\.0\.$"),
        (True, TypeError, r"^`m` must be an integer; got m=True\.$"),
    ])
    def test_a_bad_m_is_named_before_an_example(self, m, error, words):
        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        source = _source(layer, 40)
        with pytest.raises(error, match=words):
            search_heads(source, star, Q, m, LearnConfig(n_search=40))
        assert source.n_drawn == 0


class TestSearchHeadsDefaults:
    def test_the_defaults_are_the_learners(self, monkeypatch):
        """Called on its own, phase 6 runs as the learner's default configuration does: its 41-point net at m = 2,
        n_search scoring examples and as many held out, keep_tuples candidates, max_nfev evaluations."""
        cfg = LearnConfig()
        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        source = _source(layer, cfg.n_search)
        compared = _count_warm_start_candidates(monkeypatch)
        lm = _Spy(monkeypatch, "_levenberg_marquardt")
        res = search_heads(source, star, Q, 2)
        assert res.search == "exhaustive" and res.net_points == cfg.net_points
        assert res.n_examples == source.n_drawn == 2 * cfg.n_search
        assert compared == [cfg.keep_tuples]
        assert [kw["max_iter"] for _, kw, _ in lm.calls] == [cfg.max_nfev]
        assert res.heldout_error < 1e-20

    def test_the_default_3d_net_is_the_learners_up_to_four_heads(self):
        layer = random_layer(3, 3, logit_scale=1.0, check=False, rng=5)
        star, Q = _hull(layer)
        res = search_heads(_source(layer, 40), star, Q, 3, LearnConfig(n_search=40, search="vp", vp_starts=1,
                                                                       max_nfev=1))
        assert res.net_points == resolve_config(LearnConfig(), 3)[0].net_points_3d ** 2


class TestSearchHeadsRepeats:
    def test_the_swap_starts_repeat_with_the_seed(self, monkeypatch):
        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        descent = _Spy(monkeypatch, "_swap_descent")
        starts = []
        for seed in ({}, {"search_seed": 0}, {"search_seed": 1}):  # the default is the learner's search_seed, 0
            descent.calls.clear()
            res = search_heads(_source(layer, 40), star, Q, 2, LearnConfig(net_points=21, n_search=40, search="swap",
                                                                           max_nfev=1, **seed))
            starts.append([[int(q) for q in args[2]] for args, _, _ in descent.calls])
        # The greedy start and the learner's default swap_starts random ones.
        assert res.summary()["swap_starts"] == len(starts[0]) == LearnConfig().swap_starts + 1
        assert starts[0] == starts[1] and starts[0][1:] != starts[2][1:]

    def test_the_vp_starts_repeat_with_the_seed(self):
        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        runs = [search_heads(_source(layer, 40), star, Q, 2,
                             LearnConfig(n_search=40, search="vp", vp_starts=3, max_nfev=2, **seed)
                             ).summary()["start_residuals_quartiles"]
                for seed in ({}, {"search_seed": 0}, {"search_seed": 1})]
        assert runs[0] == runs[1] and runs[0] != runs[2]


class TestNoiseBranch:
    @staticmethod
    def _case():
        layer = random_layer(2, 3, logit_scale=1.0, rng=5)
        star, Q = _hull(layer)
        return layer, star, Q, _source(layer, 60, noise=1e-3)

    def test_the_test_runs_only_with_noise_floor(self):
        layer, star, Q, source = self._case()
        plain = search_heads(source, star, Q, 2, LearnConfig(n_search=60, noise_floor=False))
        assert plain.noise_test is None and plain.heldout_error > NOISE_MIN  # the switch alone kept it off
        source.reset()
        tested = search_heads(source, star, Q, 2, LearnConfig(n_search=60))  # on by default
        assert tested.noise_test is not None

    def test_the_test_runs_only_above_noise_min(self, monkeypatch):
        """The threshold is NOISE_MIN, read when the phase runs: a held-out error equal to it is not tested, one
        just above it is."""
        layer, star, Q, source = self._case()
        plain = search_heads(source, star, Q, 2, LearnConfig(n_search=60, noise_floor=False))
        monkeypatch.setattr(search_module, "NOISE_MIN", plain.heldout_error)
        source.reset()
        at = search_heads(source, star, Q, 2, LearnConfig(n_search=60))
        assert at.noise_test is None  # not above it
        assert at.heldout_error == plain.heldout_error
        monkeypatch.setattr(search_module, "NOISE_MIN", np.nextafter(plain.heldout_error, 0.0))
        source.reset()
        assert search_heads(source, star, Q, 2, LearnConfig(n_search=60)).noise_test is not None

    def test_a_fit_at_the_noise_floor_is_refitted_on_every_scoring_example(self, monkeypatch):
        layer, star, Q, source = self._case()
        lm = _Spy(monkeypatch, "_levenberg_marquardt")
        res = search_heads(source, star, Q, 2, LearnConfig(n_search=60, noise_z=3.0))
        test = res.noise_test
        assert test is not None and test.consistent and test.z == 3.0
        # Candidate features: uniform attention, each head at 0.5× and 2×, 4·I, Θ* and 48 points of the box.
        assert test.structure_features == 1 + 2 * 2 + 1 + 1 + 48
        assert res.refit_examples == 60 and res.noise is not None and res.residual_sigma is not None
        (refine, refit) = lm.calls
        assert refit[0][1].shape[0] == 60
        assert res.nfev == refine[2][2] + refit[2][2]
        z, ws = refit[2][0], refit[2][1]
        np.testing.assert_array_equal(res.layer.thetas, z.reshape(2, 3, 3))
        np.testing.assert_array_equal(res.layer.ws, ws)
        Xh, Yh = source.X[60:], source.Y[60:]
        assert res.heldout_error == pytest.approx(np.sum((res.layer(Xh) - Yh) ** 2) / np.sum(Yh**2), rel=1e-12)
