"""learner.phases.sculpt: the certification rules, on rows built to an exact, chosen fitted pattern."""

import math
import time

import numpy as np
import pytest
from numpy.testing import assert_allclose

from learner import LayerOracle, LearnConfig, random_layer
from learner.oracle import ExampleBatch
from learner.phases import sculpt
from learner.phases.forecast import AFFORDABLE_EXAMPLES, DEFAULT_CANDIDATES
from learner.phases.sculpt import certify_rows, hull_change, pilot_batch
from learner.profiling import recording

D = 8
TOL, MIN_WEIGHT = 0.01, 0.1


def _refined(source, w_sum, *, tol=0.015, min_weight=0.1, target=384, max_examples=20_000_000, batch=100_000,
             truth=None, workers=None, pilot=False, n=None, candidates=DEFAULT_CANDIDATES,
             threshold=AFFORDABLE_EXAMPLES, first_batch=None, stability=None, hull_m=None, gap_min=3.0, max_m=6,
             weighting="precision", rule="affordable", reach=()):
    """Phase 4's stream with each of its knobs given directly: what :func:`refined_sculpt` computes from its
    config (the pilot's candidates, rule, threshold and exponent, the stability rule's settings) set by hand, so
    that the stream's mechanics are tested at values the config would not choose."""
    spec = ({"n": n, "threshold": threshold, "candidates": tuple(candidates), "rule": rule, "reach": tuple(reach)}
            if pilot else None)
    stable = None
    if stability is not None:
        stable = {"tol": stability, "m": hull_m, "plan_m": max_m,
                  "config": LearnConfig(gap_min=gap_min, max_m=max_m, hull_weighting=weighting)}
    return sculpt._sculpt(source, np.asarray(w_sum, dtype=float), tol=tol, min_weight=min_weight, target=target,
                          max_examples=max_examples, batch=batch, truth=truth, label="phase 4", workers=workers,
                          pilot=spec, first_batch=first_batch, stability=stable)


def _crude(source, w_sum, *, tol=0.05, min_weight=0.1, target=192, max_examples=20_000_000, batch=100_000,
           truth=None, workers=None, first_batch=None):
    """Phase 2's stream with each of its knobs given directly (what :func:`crude_sculpt` computes from its config)."""
    return sculpt._sculpt(source, np.asarray(w_sum, dtype=float), tol=tol, min_weight=min_weight, target=target,
                          max_examples=max_examples, batch=batch, truth=truth, label="phase 2", workers=workers,
                          first_batch=first_batch)


def _rows_with_pattern(p, n=5, seed=0):
    """``n`` examples of ``k = len(p)`` Gaussian tokens whose every output row is exactly ``pᵀXŴ``.

    With ``k < d`` the rows of ``XŴ`` are independent, so the fit (``Σp = 1``) recovers ``p`` to rounding
    (~1e-15) at a residual of rounding size (~1e-8), far below the tolerance: the only rule left to decide
    is the pattern's sign.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, len(p), D))
    w_sum = rng.standard_normal((D, D))
    Y = np.einsum("j,njd,de->ne", np.asarray(p, dtype=float), X, w_sum)[:, None, :].repeat(len(p), axis=1)
    return X, Y, w_sum


# The documented rule: a certified row has a proper distribution, no fitted weight below -1e-3.
PATTERNS = [
    ((0.6, 0.25, 0.15), True),
    ((0.7, 0.3005, -5e-4), True),  # -5e-4: inside the rounding allowance
    ((0.7, 0.302, -2e-3), False),  # just past it
    ((0.7, 0.5, -0.2), False),  # clearly improper, yet fitted with zero residual
    ((1.2, -0.2), False),  # two tokens (a separate fit)
    ((0.8, 0.2), True),
]


class TestCertifyRowsProperPattern:
    @pytest.mark.parametrize("screen", [True, False], ids=["screen", "no screen"])
    @pytest.mark.parametrize(("p", "proper"), PATTERNS, ids=[str(p) for p, _ in PATTERNS])
    def test_only_proper_patterns_certify(self, p, proper, screen):
        """Rows that fit exactly certify iff their pattern is proper; an improper one gives no constraint, though
        it has tokens above min_weight that would (log(p_j / p_j0) of a proper row, checked from p here)."""
        X, Y, w_sum = _rows_with_pattern(p)
        A, b, residual, p_token, p_ref, certified = certify_rows(X, Y, w_sum, tol=TOL, min_weight=MIN_WEIGHT,
                                                                screen=screen)
        n, k = X.shape[:2]
        if not proper:
            assert certified == 0 and A.shape == (0, D * D) and b.size == 0
            return
        assert certified == n * k
        used = [j for j in range(k) if p[j] >= MIN_WEIGHT and j != int(np.argmax(p))]
        assert b.size == n * k * len(used)
        # p is recovered to rounding: the logs to ~1e-14 absolute.
        assert_allclose(b, np.tile([np.log(p[j] / max(p)) for j in used], n * k), atol=1e-12)
        assert_allclose(p_ref, max(p), atol=1e-12)
        assert residual.max() < 1e-6  # the root of a difference of squares: rounding leaves ~sqrt(eps) ≈ 1e-8
        j0 = int(np.argmax(p))
        rows = [np.outer(X[e, a], X[e, j] - X[e, j0]).ravel() for e in range(n) for a in range(k) for j in used]
        assert_allclose(A, rows, rtol=1e-15, atol=0)  # the same products, formed elementwise: exact or one rounding
        assert p_token.size == b.size


class TestScreenProfile:
    """Certification's profile sections. The float32 screen's counts 2·n·k·d² operations per run: it forms ``XŴ``,
    the ``n·k`` rows times a ``d × d`` matrix, a multiply-add counting two. Five examples of three tokens in d = 8
    (k ≠ d and d ≠ 2, so that no two of n, k, d and 2 stand in for each other), every row exact, so that every
    example is a candidate of the screen at any tolerance."""

    SCREEN = "certification: float32 screen"
    FIT, CONSTRAINTS = "certification: float64 row fit", "certification: constraints of certified rows"

    def test_certification_counts_the_products_of_its_screen(self):
        X, Y, w_sum = _rows_with_pattern((0.6, 0.25, 0.15))
        with recording() as profile:
            *_, rows = certify_rows(X, Y, w_sum, tol=TOL, min_weight=MIN_WEIGHT)
        assert rows == 15
        assert profile[self.SCREEN].calls == 1
        assert profile[self.SCREEN].flops == 2 * 5 * 3 * D * D

    def test_the_pilot_screens_its_batch_then_the_candidates_at_each_tolerance(self):
        """The pilot screens the batch once at the loosest tolerance, then certifies its candidates (all five
        examples) once at it and once per tolerance, each certification screening them again: 1 + 1 + 2 screens
        of the five examples."""
        X, Y, w_sum = _rows_with_pattern((0.6, 0.25, 0.15))
        with recording() as profile:
            block, rows, seen = pilot_batch(ExampleBatch(5, X=X, Y=Y), w_sum, (0.005, TOL), MIN_WEIGHT)
        assert rows == (15, 15) and seen == 15
        assert profile[self.SCREEN].calls == 4
        assert profile[self.SCREEN].flops == 4 * (2 * 5 * 3 * D * D)

    def test_the_float64_fit_is_profiled_per_block_and_the_constraints_once(self):
        """Unscreened, every example is fitted in float64, in blocks of ``FIT_CHUNK`` = 2,048 examples: 2,049
        examples are two blocks; their certified rows are turned into constraints in one step. A batch whose rows
        all fit an improper pattern certifies none, so that step does not run."""
        X, Y, w_sum = _rows_with_pattern((0.6, 0.25, 0.15), n=sculpt.FIT_CHUNK + 1)
        with recording() as profile:
            *_, rows = certify_rows(X, Y, w_sum, tol=TOL, min_weight=MIN_WEIGHT, screen=False)
        assert rows == 3 * (sculpt.FIT_CHUNK + 1)
        assert profile[self.FIT].calls == 2 and profile[self.CONSTRAINTS].calls == 1
        X, Y, w_sum = _rows_with_pattern((0.7, 0.5, -0.2))
        with recording() as profile:
            *_, rows = certify_rows(X, Y, w_sum, tol=TOL, min_weight=MIN_WEIGHT)
        assert rows == 0 and profile[self.FIT].calls == 1 and self.CONSTRAINTS not in profile


class TestHullChange:
    @staticmethod
    def _hull(theta, directions):
        from types import SimpleNamespace

        return SimpleNamespace(theta_star=np.asarray(theta, dtype=float), directions=np.asarray(directions, float))

    def test_largest_principal_angle(self):
        """Old span (e1, e2); new directions e1, e2 turned towards e3, e4 by angles a < b: the principal angles are
        a and b, and the change is sin b (the largest), not the root of sin²a + sin²b."""
        a, b = 0.1, 0.3
        e = np.eye(6)
        old = self._hull(np.ones(6), e[:, :2])
        new = self._hull(np.ones(6), np.stack([np.cos(a) * e[0] + np.sin(a) * e[3],
                                               np.cos(b) * e[1] + np.sin(b) * e[4]], axis=1))
        assert hull_change(old, new) == pytest.approx(np.sin(b), rel=1e-12)
        assert hull_change(old, old) == 0.0

    def test_zero_theta_star(self):
        # The relative move of Θ* is undefined at ‖Θ*_new‖ = 0: infinite.
        old = self._hull(np.ones(4), np.zeros((4, 0)))
        assert hull_change(old, self._hull(np.zeros(4), np.zeros((4, 0)))) == float("inf")
        assert hull_change(old, self._hull(np.zeros(4), np.eye(4)[:, :1])) == float("inf")


def _record_bar(monkeypatch):
    """Make the phases' progress bars record what they are given: (updates, postfix notes)."""
    import learner.phases.sculpt as sculpt

    updates, postfixes = [], []

    class Bar:
        def update(self, n=1):
            updates.append(n)

        def set_postfix_str(self, s):
            postfixes.append(s)

        def close(self):
            pass

    monkeypatch.setattr(sculpt, "bar", lambda *a: Bar())
    return updates, postfixes


class _NoExamples:
    """A source that runs dry before its first batch."""

    k = 2

    def batches(self, sizes):
        return iter(())

    def consume(self, n):
        assert n == 0


class TestRefinedSculptStream:
    """Phase 4's stream with small batches (2000 examples of (3, 12, 2): some 7 constraints each at 0.015 and 26
    rows at 0.03), so the pilot spans several batches; the reference is the batches certified one by one."""

    SETTING, BATCH, MW = (3, 12, 2), 2000, 0.02

    def _layer(self):
        m, d, _ = self.SETTING
        return random_layer(m, d, logit_scale=1.0, rng=0)

    def _run(self, **kw):
        layer = self._layer()
        args = {"min_weight": self.MW, "max_examples": 2_000_000, "batch": self.BATCH} | kw
        return _refined(LayerOracle(layer, self.SETTING[2], rng=1), layer.ws.sum(axis=0), **args)

    def _per_batch(self, tol, n_batches):
        """Constraints certified at ``tol`` in each of the stream's first batches, certified one at a time."""
        layer = self._layer()
        batches = LayerOracle(layer, self.SETTING[2], rng=1).batches([self.BATCH] * n_batches)
        return [certify_rows(*b.examples(), layer.ws.sum(axis=0), tol=tol, min_weight=self.MW)[1].size
                for b in batches]

    def test_pilot_of_several_batches(self, monkeypatch, caplog):
        import logging

        updates, postfixes = _record_bar(monkeypatch)
        target = 60
        t0 = time.perf_counter()
        with caplog.at_level(logging.INFO, logger="learner"):
            piloted = self._run(target=target, tol=None, pilot=True, n=2, threshold=10**6)
        wall = time.perf_counter() - t0
        # The bar counts the constraints up to the target, and its notes are text.
        assert sum(updates) == target and all(isinstance(s, str) for s in postfixes)
        fc = piloted.forecast
        assert fc.tol == 0.015 and fc.threshold == 10**6 and fc.workers == 1
        assert 0 < fc.seconds <= wall
        # The pilot's counts are those of its batches certified one at a time, and it ran until 100 rows.
        pilot_batches = fc.n_examples // self.BATCH
        assert fc.n_examples == pilot_batches * self.BATCH and pilot_batches > 1
        at_loosest = self._per_batch(0.03, pilot_batches)
        assert fc.at(0.03).constraints == sum(at_loosest) and sum(at_loosest[:-1]) < 100 <= sum(at_loosest)
        direct = self._run(target=target, tol=0.015)
        assert piloted.n_examples > fc.n_examples  # the pilot held fewer than the target: a continuation ran
        for name in ("A", "b", "residual", "p_token", "p_ref"):
            np.testing.assert_array_equal(getattr(piloted, name), getattr(direct, name), err_msg=name)
        assert (piloted.n_examples, piloted.rows_seen, piloted.rows_certified, piloted.examples_at_target) == \
               (direct.n_examples, direct.rows_seen, direct.rows_certified, direct.examples_at_target)
        assert type(piloted.n_examples) is int and piloted.stopped == "target"
        assert any(r.getMessage().startswith("phase 4: pilot of") for r in caplog.records)

    def test_batches_computed_ahead_at_the_pilots_tolerances(self, monkeypatch):
        """Batches formed while the pilot runs are certified at its tolerances; those that arrive after it settled
        keep the rows below the chosen tolerance, so the result is the direct run's (here with workers that compute
        four batches ahead, in this process)."""
        from learner import parallel
        from learner.phases import sculpt

        class Ahead(parallel.Workers):
            def __init__(self):
                super().__init__(None)
                self.backend, self.workers = "in-process, ahead", 2  # a window of 2 × AHEAD_PER_WORKER batches

            def _ensure(self):
                pass

            def _submit(self, fn, args):
                return parallel._Done(fn(*args))

        filtered, real = [], sculpt._below

        def below(block, tol):
            filtered.append(tol)
            return real(block, tol)

        monkeypatch.setattr(sculpt, "_below", below)
        with Ahead() as pool:
            piloted = self._run(target=60, tol=None, pilot=True, n=2, threshold=10**6, workers=pool)
        pilot_batches = piloted.forecast.n_examples // self.BATCH
        assert len(filtered) > pilot_batches and set(filtered) == {0.015}  # settle's, then those computed ahead
        direct = self._run(target=60, tol=0.015)
        for name in ("A", "b", "residual", "p_token", "p_ref"):
            np.testing.assert_array_equal(getattr(piloted, name), getattr(direct, name), err_msg=name)
        assert (piloted.n_examples, piloted.rows_seen, piloted.rows_certified, piloted.examples_at_target) == \
               (direct.n_examples, direct.rows_seen, direct.rows_certified, direct.examples_at_target)

    def test_target_within_the_pilot(self, monkeypatch):
        """The target is exactly the first batch's constraints: a direct run stops after that batch, and so must
        the pilot's constraints (the later pilot batches are not kept)."""
        first = self._per_batch(0.015, 1)[0]
        assert first > 0
        updates, _ = _record_bar(monkeypatch)
        piloted = self._run(target=first, tol=0.015, pilot=True, n=2, rule="cost")
        assert sum(updates) == first  # the bar reaches the target
        direct = self._run(target=first, tol=0.015)
        assert piloted.forecast.rule == "cost" and piloted.forecast.n_examples > self.BATCH
        assert piloted.count == direct.count == first
        np.testing.assert_array_equal(piloted.b, direct.b)
        assert (piloted.n_examples, piloted.rows_seen, piloted.rows_certified, piloted.examples_at_target) == \
               (direct.n_examples, direct.rows_seen, direct.rows_certified, direct.examples_at_target)
        assert (direct.n_examples, direct.rows_seen) == (self.BATCH, 2 * self.BATCH)  # one batch of 2 rows each

    def test_cap_finds_the_example_at_target(self):
        """With the stability rule the target is a cap (below the first checkpoint, 1.25·d² = 180, no hull is
        fitted): the constraints are cut at it, and the example that gave the last one is the same as a run
        without the rule reports. The cap falls on the first constraint of the third batch."""
        per = self._per_batch(0.015, 3)
        assert min(per) > 0
        target = per[0] + per[1] + 1
        capped = self._run(target=target, tol=0.015, stability=0.01)
        direct = self._run(target=target, tol=0.015)
        assert capped.count == target < capped.constraints_certified and capped.stopped == "target"
        np.testing.assert_array_equal(capped.b, direct.b[:target])
        assert 2 * self.BATCH < capped.examples_at_target == direct.examples_at_target <= 3 * self.BATCH

    def test_one_example(self):
        t0 = time.perf_counter()
        out = self._run(target=10, tol=None, pilot=True, n=2, max_examples=1)
        wall = time.perf_counter() - t0
        assert out.n_examples == out.forecast.n_examples == 1 and 0 < out.forecast.seconds <= wall

    def test_source_without_examples(self):
        from learner.parallel import Workers

        layer = self._layer()
        with Workers(2) as pool:  # two workers, though no batch is ever formed
            out = _refined(_NoExamples(), layer.ws.sum(axis=0), min_weight=self.MW, target=10, tol=None,
                           pilot=True, n=2, workers=pool)
        fc = out.forecast
        assert out.count == 0 and out.n_examples == 0 and fc is not None and fc.workers == 2
        assert out.A.shape == (0, 144) and out.b.shape == out.residual.shape == (0,)
        assert out.p_token.shape == out.p_ref.shape == (0,)
        assert all(r.constraints == 0 for r in fc.table) and math.isinf(fc.predicted_examples)

    def test_over_budget_at_the_pilot(self):
        # A fixed tolerance of 1e-4: the pilot certifies (almost) nothing there, so the forecast is far above the
        # budget and the phase stops after the pilot, short of its target.
        out = self._run(target=60, tol=1e-4, pilot=True, n=2, max_examples=200_000)
        assert out.forecast.over_budget and out.count < 60 and out.stopped == "forecast"
        assert out.n_examples < 200_000

    def test_no_constraints_have_no_errors(self):
        layer = self._layer()
        out = _refined(_NoExamples(), layer.ws.sum(axis=0), min_weight=self.MW, target=10, tol=0.015, truth=layer)
        assert out.errors.shape == (0,) and out.stopped == "budget"

    def test_pilot_keeps_residuals_strictly_below_the_tolerance(self):
        """A tolerance equal to a pilot row's own residual: that row is not certified there (``residual < tol``),
        neither by a direct run nor among the pilot's constraints kept for it."""
        layer = self._layer()
        batch = next(iter(LayerOracle(layer, self.SETTING[2], rng=1).batches([self.BATCH])))
        res = np.unique(certify_rows(*batch.examples(), layer.ws.sum(axis=0), tol=0.03, min_weight=self.MW)[2])
        tol = float(res[res.size // 2])  # a residual of the first batch, exactly
        piloted = self._run(target=10, tol=tol, pilot=True, n=2, candidates=(tol, 0.03))
        direct = self._run(target=10, tol=tol)
        assert piloted.forecast.tol == tol and piloted.residual.max() < tol
        np.testing.assert_array_equal(piloted.b, direct.b)


class _Recorder:
    """A source of fixed examples that records the batch sizes it is asked for (all of them, at once) and hands
    out every example in one batch."""

    def __init__(self, X, Y):
        self.X, self.Y, self.k, self.sizes, self.consumed = X, Y, X.shape[1], None, []

    def batches(self, sizes):
        from learner.oracle import ExampleBatch

        self.sizes = list(sizes)
        yield ExampleBatch(self.X.shape[0], X=self.X, Y=self.Y, origin="test")

    def consume(self, n):
        self.consumed.append(n)


def _exact_then_noisy(n_exact, n_noisy=50):
    """``n_exact`` examples whose two rows fit the pattern (0.8, 0.2) exactly, then ``n_noisy`` whose rows are off by
    a relative 0.12–0.47: they certify at a tolerance of 0.5 and not at 0.05 (checked here)."""
    X, Y, w_sum = _rows_with_pattern((0.8, 0.2), n=n_exact + n_noisy, seed=3)
    rng = np.random.default_rng(5)
    Y, noisy = Y.copy(), slice(n_exact, None)
    Y[noisy] += 0.3 * rng.standard_normal(Y[noisy].shape) * np.linalg.norm(Y[noisy], axis=-1, keepdims=True) / D**0.5
    assert certify_rows(X[noisy], Y[noisy], w_sum, tol=0.5, min_weight=MIN_WEIGHT)[1].size > 0.8 * 2 * n_noisy
    assert certify_rows(X[noisy], Y[noisy], w_sum, tol=0.05, min_weight=MIN_WEIGHT)[1].size == 0
    return X, Y, w_sum


class TestCrudeSculptDefaults:
    """Phase 2 called with LearnConfig's defaults on 96 examples whose 192 rows fit a proper pattern exactly, then 50
    whose rows are off by a relative 0.12–0.47; the stream's knobs set directly (``_crude``) where a test needs
    values the config would not choose."""

    def _examples(self):
        return _exact_then_noisy(96)

    def test_the_config_reaches_the_stream(self, monkeypatch):
        # LearnConfig's documented defaults (crude_tol 0.1, min_weight 0.02, 1.5·d² constraints, 2·10⁶ examples,
        # batches from 5,000 doubling to 10⁵) and the fixed budgets (every batch 10⁵, 3·d² constraints).
        from learner.phases import crude_sculpt

        calls = []
        monkeypatch.setattr(sculpt, "_sculpt", lambda source, w_sum, **kw: calls.append(kw))
        X, Y, w_sum = self._examples()
        crude_sculpt(_Recorder(X, Y), w_sum)
        crude_sculpt(_Recorder(X, Y), w_sum, LearnConfig(adaptive=False, crude_constraints=3.0, crude_tol=0.05))
        common = {"min_weight": 0.02, "max_examples": 2_000_000, "batch": 100_000, "truth": None, "workers": None,
                  "label": "phase 2"}
        assert calls == [common | {"tol": 0.1, "target": 96, "first_batch": 5_000},
                         common | {"tol": 0.05, "target": 192, "first_batch": None}]

    def test_defaults(self):
        from learner.phases import crude_sculpt

        X, Y, w_sum = self._examples()
        source = _Recorder(X, Y)
        out = crude_sculpt(source, w_sum)
        # Only the exact rows certify at 0.1 (the others are off by 0.12 or more), two per example: the target,
        # 96 = 1.5·d², is reached at the 48th example; the one batch that holds every example is merged whole.
        assert out.tol == 0.1 and out.stopped == "target" and out.examples_at_target == 48 and out.b.size == 192
        # 2·10⁶ examples from a batch of 5,000 doubling to 10⁵ (all asked for at once).
        assert source.sizes[:6] == [5_000, 10_000, 20_000, 40_000, 80_000, 100_000]
        assert sum(source.sizes) == 2_000_000 and source.consumed == [146]

    def test_first_batch_grows_the_batches(self):
        X, Y, w_sum = self._examples()
        source = _Recorder(X, Y)
        _crude(source, w_sum, first_batch=10, batch=100, max_examples=400)
        assert source.sizes == [10, 20, 40, 80, 100, 100, 50]
        _crude(source, w_sum, first_batch=1, batch=4, max_examples=12)  # one example first is allowed
        assert source.sizes == [1, 2, 4, 4, 1]

    def test_pool_label_and_progress(self, record_bars):
        from learner.parallel import Workers
        from learner.phases import crude_sculpt

        class Spy(Workers):
            labels = []

            def ordered(self, label, fn, tasks):
                self.labels.append(label)
                return super().ordered(label, fn, tasks)

        bars = record_bars(sculpt)
        X, Y, w_sum = self._examples()
        with Spy(None) as pool:
            crude_sculpt(_Recorder(X, Y), w_sum, workers=pool)
        assert Spy.labels == ["2_crude_sculpt"]
        assert [b.args for b in bars] == [(96, "phase 2", "constraint")]

    def test_w_sum_is_used_in_float64(self):
        # A long-double ΣW gives the constraints of its float64 rounding, in float64.
        from learner.phases import crude_sculpt

        X, Y, w_sum = self._examples()
        ref = crude_sculpt(_Recorder(X, Y), w_sum)
        out = crude_sculpt(_Recorder(X, Y), w_sum.astype(np.longdouble))
        for field in ("A", "b", "residual", "p_token", "p_ref"):
            assert getattr(out, field).dtype == np.float64
            np.testing.assert_array_equal(getattr(out, field), getattr(ref, field))

    @pytest.mark.parametrize(("kwargs", "name"), [
        ({"crude_constraints": 0.0}, "crude_constraints"), ({"first_batch": 0}, "first_batch"),
        ({"crude_tol": None}, "crude_tol"), ({"crude_tol": -0.1}, "crude_tol"), ({"crude_tol": 1.0}, "crude_tol"),
        ({"crude_tol": 1.5}, "crude_tol"), ({"min_weight": 0.0}, "min_weight"),
        ({"crude_max_examples": 0}, "crude_max_examples"),
    ], ids=str)
    def test_bad_setting_is_named(self, kwargs, name):
        with pytest.raises((TypeError, ValueError), match=f"`{name}`"):
            LearnConfig(**kwargs)

    @pytest.mark.parametrize(("args", "name"), [
        ((np.eye(D), {"batch": 10}), "config"), ((np.ones(D), None), "w_sum"), ((np.ones((D, 2)), None), "w_sum"),
    ], ids=["config a dict", "w_sum a vector", "w_sum not square"])
    def test_bad_argument_is_refused_before_drawing(self, args, name):
        from learner.phases import crude_sculpt

        w_sum, config = args
        with pytest.raises((TypeError, ValueError), match=f"`{name}`"):
            crude_sculpt(_NeverDrawn(), w_sum, config)


class TestWellPosedness:
    """The fit's well-posedness (from five dot products at k = 2, Gram–Schmidt at k = 3), against the documented rule
    computed from the Gram matrix G = B Bᵀ of the tokens' rows directly: det G > 1e-8 · (tr G / k)^k."""

    @pytest.mark.parametrize("k", [2, 3])
    def test_against_the_gram_matrix(self, k):
        from learner.phases.sculpt import _row_fit

        rng = np.random.default_rng(11)
        n = 4000
        b = rng.standard_normal((n, k - 1, D))
        # The last row c·b₁ + ε·u: det G / (tr G / k)^k spreads over decades, across the threshold at 1e-8.
        c = rng.uniform(-2.0, 3.0, (n, 1))
        eps = 10 ** rng.uniform(-6.0, -2.0, (n, 1)) * np.linalg.norm(b[:, 0], axis=1, keepdims=True)
        last = c * b[:, 0] + eps * rng.standard_normal((n, D))
        X = np.concatenate([b, last[:, None]], axis=1)  # ΣW = I, so B = X
        _, well_posed, _ = _row_fit(X, X, np.eye(D))
        G = np.einsum("nid,njd->nij", X, X)
        ratio = np.linalg.det(G) / (np.trace(G, axis1=1, axis2=2) / k) ** k
        # Both dets round off by ~1e-16·(tr G)^k, a relative ~1e-8 at the threshold: cases within 1e-3 of it are out.
        clear = np.abs(ratio / 1e-8 - 1) > 1e-3
        assert clear.sum() > 0.99 * n
        np.testing.assert_array_equal(well_posed[clear], ratio[clear] > 1e-8)
        # Both verdicts, and many within a factor 3 of the threshold (where a wrong scale flips them).
        near = clear & (np.abs(np.log(ratio / 1e-8)) < np.log(3))
        assert well_posed[clear].any() and not well_posed[clear].all() and near.sum() > 100


class _NeverDrawn:
    """A source whose batches must not be formed: the arguments are refused before anything is drawn."""

    k = 2

    def batches(self, sizes):
        raise AssertionError("a batch was formed")

    def consume(self, n):
        raise AssertionError("examples were consumed")


class TestRefinedSculptDefaults:
    """Phase 4 with LearnConfig's settings on 192 exactly fitted examples, then 50 whose rows are off by a relative
    0.12–0.47; what the config sets in the stream (the pilot, the stability rule); its arguments."""

    def test_the_config_reaches_the_stream(self, monkeypatch):
        # The documented defaults: with m unknown the run plans for max_m = 6 heads (refined_constraints 12·d²,
        # the pilot's exponent (6 − 1)(2 − 1)), with m = 2 for two (6·d², exponent 1); the adaptive pilot's
        # candidates and cost rule; batches from 5,000; the stability rule at hull_stability 0.05. The fixed
        # budgets: the affordable rule, no stability rule, fixed batches.
        from learner.phases import refined_sculpt
        from learner.phases.forecast import ADAPTIVE_CANDIDATES, REACH_CANDIDATES

        calls = []
        monkeypatch.setattr(sculpt, "_sculpt", lambda source, w_sum, **kw: calls.append(kw))
        X, Y, w_sum = _exact_then_noisy(192)
        refined_sculpt(_Recorder(X, Y), w_sum)
        refined_sculpt(_Recorder(X, Y), w_sum, m=2)
        refined_sculpt(_Recorder(X, Y), w_sum, LearnConfig(adaptive=False), m=2)
        refined_sculpt(_Recorder(X, Y), w_sum, LearnConfig(adaptive=False, refined_tol=0.03), m=2, pilot=False)
        common = {"tol": None, "min_weight": 0.02, "max_examples": 10**9, "batch": 100_000, "truth": None,
                  "workers": None, "label": "phase 4"}
        adaptive = {"threshold": AFFORDABLE_EXAMPLES, "candidates": ADAPTIVE_CANDIDATES, "rule": "cost",
                    "reach": REACH_CANDIDATES}
        unknown, two, fixed, direct = calls
        assert {key: unknown[key] for key in common} == common and unknown["first_batch"] == 5_000
        assert unknown["target"] == 12 * D * D and unknown["pilot"] == adaptive | {"n": 5}
        assert {key: unknown["stability"][key] for key in ("tol", "m", "plan_m")} == {"tol": 0.05, "m": None,
                                                                                      "plan_m": 6}
        assert unknown["stability"]["config"].gap_min == 2.0  # chosen for six heads
        assert two["target"] == 6 * D * D and two["pilot"] == adaptive | {"n": 1}
        assert (two["stability"]["m"], two["stability"]["plan_m"], two["stability"]["config"].gap_min) == (2, 2, 3.0)
        assert fixed["pilot"] == {"threshold": AFFORDABLE_EXAMPLES, "candidates": DEFAULT_CANDIDATES,
                                  "rule": "affordable", "n": 1, "reach": ()}
        assert fixed["stability"] is None and fixed["first_batch"] is None and fixed["target"] == 6 * D * D
        assert direct["pilot"] is None and direct["tol"] == 0.03

    def test_fixed_tolerance_without_the_pilot(self):
        from learner.phases import refined_sculpt

        X, Y, w_sum = _exact_then_noisy(192)
        source = _Recorder(X, Y)
        out = refined_sculpt(source, w_sum, LearnConfig(adaptive=False, refined_tol=0.015), m=2, pilot=False)
        # 384 = 6·d² constraints (m = 2) from the exact rows, reached at the 192nd example.
        assert out.tol == 0.015 and out.b.size == 384 and out.stopped == "target" and out.examples_at_target == 192
        assert source.sizes == [100_000] * 10_000 and source.consumed == [242]  # 10⁹ examples in batches of 10⁵

    def test_first_batch_and_truth(self):
        X, Y, w_sum = _exact_then_noisy(192)
        source = _Recorder(X, Y)
        truth = random_layer(2, D, rng=0)
        out = _refined(source, w_sum, first_batch=10, batch=100, max_examples=400, truth=truth)
        assert source.sizes == [10, 20, 40, 80, 100, 100, 50]
        # Each constraint's error against the truth: max over its heads of |A_l vec(Θ_i) − b_l|, computed here.
        expected = np.abs(out.A @ truth.thetas.reshape(2, -1).T - out.b[:, None]).max(axis=1)
        np.testing.assert_allclose(out.errors, expected, rtol=1e-12)

    @pytest.mark.parametrize(("m", "plan_m", "n"), [(None, None, 4), (2, None, 1), (None, 3, 2), (2, 4, 3)])
    def test_the_pilot_plans_for_plan_m_else_m_else_max_m(self, m, plan_m, n):
        """The pilot's window exponent is (plan − 1)(k − 1) with k = 2, the plan being ``plan_m`` when given, else
        ``m``, else ``max_m`` (5 here)."""
        from learner.phases import refined_sculpt

        X, Y, w_sum = _exact_then_noisy(192)
        out = refined_sculpt(_Recorder(X, Y), w_sum, LearnConfig(adaptive=False, max_m=5), m=m, plan_m=plan_m)
        assert out.forecast.n == n

    def test_errors_against_the_truth_and_batches_on_the_callers_pool(self):
        """With the planted layer each constraint's error is max over its heads of |A_l vec(Θ_i) − b_l| (computed
        here); the one batch of 242 examples is certified on the pool the caller passed, which counts it."""
        from learner.parallel import Workers
        from learner.phases import refined_sculpt

        X, Y, w_sum = _exact_then_noisy(192)
        truth = random_layer(2, D, rng=0)
        with Workers(None) as pool:
            out = refined_sculpt(_Recorder(X, Y), w_sum, LearnConfig(adaptive=False, refined_tol=0.015), m=2,
                                 truth=truth, workers=pool, pilot=False)
        expected = np.abs(out.A @ truth.thetas.reshape(2, -1).T - out.b[:, None]).max(axis=1)
        assert out.b.size == 384
        np.testing.assert_allclose(out.errors, expected, rtol=1e-12)
        assert (pool.stats["4_refined_sculpt"]["batches"], pool.stats["4_refined_sculpt"]["examples"]) == (1, 242)

    def test_w_sum_is_used_in_float64(self):
        from learner.phases import refined_sculpt

        X, Y, w_sum = _exact_then_noisy(192)
        config = LearnConfig(adaptive=False, refined_tol=0.015)
        ref = refined_sculpt(_Recorder(X, Y), w_sum, config, m=2, pilot=False)
        out = refined_sculpt(_Recorder(X, Y), w_sum.astype(np.longdouble), config, m=2, pilot=False)
        for field in ("A", "b", "residual", "p_token", "p_ref"):
            assert getattr(out, field).dtype == np.float64
            np.testing.assert_array_equal(getattr(out, field), getattr(ref, field))

    @pytest.mark.parametrize(("m", "plan", "gap_min"), [(None, 6, 2.0), (2, 2, 3.0)])
    def test_the_stability_rule_gets_its_settings(self, monkeypatch, m, plan, gap_min):
        # The hull at each checkpoint (1.25·d² = 80 constraints, then 100, 125, ...) is estimated with the run's m,
        # its plan and the config (gap_min chosen for the plan); here every estimate is undetermined, so the stream
        # runs to its target.
        from learner.phases import refined_sculpt, span

        seen = []

        def estimate(constraints, config, **kwargs):
            seen.append((constraints.b.size, config.gap_min, config.hull_weighting, kwargs))
            raise span.HullUndetermined("not estimated in this test")

        monkeypatch.setattr(span, "estimate_span", estimate)
        X, Y, w_sum = _exact_then_noisy(192)
        config = LearnConfig(hull_stability=0.01, refined_tol=0.015, refined_constraints=6.0)
        out = refined_sculpt(_Recorder(X, Y), w_sum, config, m=m, pilot=False)
        assert [c for c, *_ in seen] == [80, 100, 125, 157, 197, 247, 309]  # ×1.25 rounded up, up to the cap 384
        assert all(tuple(rest) == (gap_min, "precision", {"m": m, "plan_m": plan}) for _, *rest in seen)
        assert out.stopped == "target" and [c["m"] for c in out.checkpoints] == [None] * len(seen)

    @pytest.mark.parametrize(("kwargs", "name"), [
        ({"m": 0}, "m"), ({"m": 1.5}, "m"), ({"plan_m": 0}, "plan_m"), ({"pilot": "yes"}, "pilot"),
        ({"config": {"batch": 10}}, "config"), ({"pilot": False}, "config.refined_tol"),
        ({"w_sum": np.ones(D)}, "w_sum"),
    ], ids=["m=0", "m=1.5", "plan_m=0", "pilot a string", "config a dict", "no pilot, no refined_tol",
            "w_sum a vector"])
    def test_bad_argument_is_refused_before_drawing(self, kwargs, name):
        from learner.phases import refined_sculpt

        args = {"w_sum": np.eye(D)} | kwargs
        with pytest.raises((TypeError, ValueError), match=f"`{name}`"):
            refined_sculpt(_NeverDrawn(), **args)


class TestCertifyRowsExactBoundaries:
    """Rows whose fit is exact in floating point: ΣW = I, tokens b₁ = e₁ and b₂ = e₁ + e₂ (so D = e₂), and an
    output y = b₁ + q·e₂: the residual y − b₁ = q·e₂ is exact, the fitted p₂ = q and p₁ = 1 − q, residual 0."""

    @staticmethod
    def _rows(q, n_rows=2):
        X = np.array([[[1.0, 0.0], [1.0, 1.0]]])
        Y = np.array([[[1.0, q], [1.0, q]]])
        if n_rows == 1:  # the second row far from any pattern: y = −b₂ (p = (1, −1)), improper
            Y[0, 1] = [-1.0, -1.0]
        return X, Y, np.eye(2)

    def test_a_weight_at_the_rounding_allowance_is_improper(self):
        # p₂ = −1e-3 exactly: "no fitted weight below −1e-3" is not enough, the rule is p > −1e-3.
        X, Y, w = self._rows(-1e-3)
        *_, rows = certify_rows(X, Y, w, tol=TOL, min_weight=MIN_WEIGHT)
        assert rows == 0
        *_, rows = certify_rows(X, Y, w, tol=TOL, min_weight=MIN_WEIGHT, screen=False)
        assert rows == 0
        *_, rows = certify_rows(*self._rows(-0.999e-3), tol=TOL, min_weight=MIN_WEIGHT)
        assert rows == 2

    def test_a_weight_equal_to_min_weight_gives_a_constraint(self):
        # p = (0.75, 0.25) exactly, min_weight 0.25: token 2 is used (p >= min_weight), against token 1.
        X, Y, w = self._rows(0.25)
        A, b, res, p_token, p_ref, rows = certify_rows(X, Y, w, tol=TOL, min_weight=0.25)
        assert rows == 2 and b.size == 2 and np.all(p_token == 0.25) and np.all(p_ref == 0.75)
        np.testing.assert_array_equal(b, np.full(2, np.log(0.25 / 0.75)))
        assert certify_rows(X, Y, w, tol=TOL, min_weight=0.2500001)[1].size == 0

    def test_one_certified_row(self):
        X, Y, w = self._rows(0.25, n_rows=1)
        A, b, res, p_token, p_ref, rows = certify_rows(X, Y, w, tol=TOL, min_weight=MIN_WEIGHT)
        assert rows == 1 and b.size == 1 and res[0] == 0.0

    @pytest.mark.parametrize("screen", [True, False], ids=["screen", "no screen"])
    def test_each_constraint_names_its_example(self, screen):
        """Four examples of two exact rows each, min_weight 0.25: p = (0.75, 0.25) gives token 2 against token 1,
        (1.5, −0.5) is improper, (0.25, 0.75) gives token 1 against token 2, (0.9, 0.1) certifies with no token
        heavy enough. So examples 0 and 2 give one constraint per row, ``log(0.25/0.75)``, each naming its example,
        with the row ``x_a ⊗ (b_j − b_j0) = ±x_a ⊗ e₂``; six rows certify."""
        qs = (0.25, -0.5, 0.75, 0.1)
        X = np.array([[[1.0, 0.0], [1.0, 1.0]]] * len(qs))
        Y = np.array([[[1.0, q], [1.0, q]] for q in qs])
        A, b, res, p_token, p_ref, example, rows = certify_rows(X, Y, np.eye(2), tol=TOL, min_weight=0.25,
                                                                screen=screen, with_example=True)
        assert rows == 6
        np.testing.assert_array_equal(example, [0, 0, 2, 2])
        np.testing.assert_array_equal(p_token, np.full(4, 0.25))
        np.testing.assert_array_equal(p_ref, np.full(4, 0.75))
        np.testing.assert_array_equal(b, np.full(4, np.log(0.25 / 0.75)))
        np.testing.assert_array_equal(res, np.zeros(4))
        e2 = np.array([0.0, 1.0])
        expected = [sign * np.outer(x, e2).ravel() for sign in (1, -1) for x in X[0]]
        np.testing.assert_array_equal(A, expected)
        # Without with_example the same columns come back, less the examples.
        plain = certify_rows(X, Y, np.eye(2), tol=TOL, min_weight=0.25, screen=screen)
        assert len(plain) == 6 and plain[-1] == 6
        for x, y in zip(plain[:5], (A, b, res, p_token, p_ref), strict=True):
            np.testing.assert_array_equal(x, y)


class TestStreamArguments:
    """The stream refuses a bad knob by name before any batch is formed. The tolerance is checked whenever one is
    given (with a pilot too, where it is the fixed tolerance) and required without a pilot; a tolerance must lie in
    (0, 1), 1 itself refused."""

    @pytest.mark.parametrize(("run", "kwargs", "error", "match"), [
        (_crude, {"tol": None}, TypeError, r"^`tol` must be a real number; got tol=None\.$"),
        (_crude, {"tol": 0.0}, ValueError, r"^`tol` must be finite and positive; got tol=0\.0\.$"),
        (_crude, {"tol": 1.0}, ValueError, r"^`tol` must be below 1; got tol=1\.0\.$"),
        (_refined, {"tol": 1.5, "pilot": True}, ValueError, r"^`tol` must be below 1; got tol=1\.5\.$"),
        (_crude, {"min_weight": 0.0}, ValueError, r"^`min_weight` must be finite and positive; got min_weight=0\.0"),
        (_crude, {"max_examples": 0}, ValueError, r"^`max_examples` must be at least 1; got max_examples=0\.$"),
    ], ids=["no tol", "tol 0", "tol 1", "pilot's tol 1.5", "min_weight 0", "max_examples 0"])
    def test_a_bad_knob_is_named_before_drawing(self, run, kwargs, error, match):
        with pytest.raises(error, match=match):
            run(_NeverDrawn(), np.eye(D), **kwargs)


class TestStreamBookkeeping:
    """Phase 2 over fixed examples in batches of 20, target out of reach: the stream merges 12 batches and stops at
    its budget of 240 examples."""

    def _source(self):
        from learner.oracle import ArraySource

        X, Y, w_sum = _exact_then_noisy(192)
        return ArraySource(X, Y), X, Y, w_sum

    def test_rows_seen_and_certified_add_up_over_batches(self):
        source, X, Y, w_sum = self._source()
        out = _crude(source, w_sum, target=10**6, batch=20, max_examples=240)
        assert out.n_examples == 240 and out.rows_seen == 480 and (out.tol, out.min_weight) == (0.05, MIN_WEIGHT)
        # The reference: the 240 examples certified at once.
        *_, rows = certify_rows(X[:240], Y[:240], w_sum, tol=0.05, min_weight=MIN_WEIGHT)
        assert out.rows_certified == rows == 384

    @pytest.mark.parametrize(("step", "logged_at"), [(2.5, ["100", "200"]), (2.1, ["100", "200"])])
    def test_progress_is_logged_every_ten_seconds(self, monkeypatch, caplog, step, logged_at):
        # A clock that moves `step` seconds at each reading: the stream reads it twice when it starts and once per
        # merged batch (twice when it logs). With 2.5 s the 4th merge is exactly 10 s after the start (not logged:
        # more than 10 s), the 5th 12.5 s; with 2.1 s the 5th is 10.5 s after it (logged). Each log restarts the wait.
        import logging

        class Clock:
            calls = 0

            @classmethod
            def perf_counter(cls):
                cls.calls += 1
                return cls.calls * step

        monkeypatch.setattr(sculpt, "time", Clock)
        source, _, _, w_sum = self._source()
        with caplog.at_level(logging.INFO, logger="learner"):
            _crude(source, w_sum, target=10**6, batch=20, max_examples=240)
        logged = [r.getMessage() for r in caplog.records if "constraints from" in r.getMessage()]
        # 2 constraints per exactly fitted example: 200 after 100 examples, 384 (all of them) after 200.
        assert logged == [f"phase 2: {c} of 1000000 constraints from {n} examples (budget 240)"
                          for c, n in zip((200, 384), logged_at, strict=True)]


class TestStabilityCheckpoints:
    """Phase 4's stability rule on exactly fitted examples, 40 per batch (80 constraints each), with the hull at each
    checkpoint replaced by a recorded one: checkpoints at 80, 100, 125, ... constraints."""

    def _run(self, monkeypatch, hulls, **kwargs):
        from types import SimpleNamespace

        from learner.oracle import ArraySource
        from learner.phases import span

        calls = []

        def estimate(constraints, config, **kw):
            calls.append(constraints.b.size)
            theta = hulls[len(calls) - 1] if len(calls) <= len(hulls) else None
            if theta is None:
                raise span.HullUndetermined("not estimated in this test")
            return SimpleNamespace(theta_star=np.asarray(theta, dtype=float), directions=np.zeros((4, 0)), m=1)

        monkeypatch.setattr(span, "estimate_span", estimate)
        X, Y, w_sum = _exact_then_noisy(192)
        out = _refined(ArraySource(X, Y), w_sum, batch=40, **kwargs)
        return out, calls

    def test_a_change_equal_to_the_tolerance_is_stable(self, monkeypatch, caplog):
        import logging

        # Θ* = 3e₁ at 80 constraints, 4e₁ at 100: the change is ‖e₁‖/‖4e₁‖ = 1/4 exactly.
        with caplog.at_level(logging.INFO, logger="learner"):
            out, calls = self._run(monkeypatch, [[3, 0, 0, 0], [4, 0, 0, 0]], stability=0.25, target=1000)
        assert calls == [80, 100] and out.stopped == "stable" and out.b.size == 100
        assert [(c["constraints"], c["change"], c["m"]) for c in out.checkpoints] == [(80, None, 1), (100, 0.25, 1)]
        assert ("phase 4: hull stable at 100 constraints (moved 0.25 <= 0.25 since the last checkpoint)"
                in [r.getMessage() for r in caplog.records])

    def test_an_undetermined_hull_restarts_the_comparison(self, monkeypatch):
        # Undetermined at 80, then 3e₁ and 4e₁: the first determined hull has nothing to compare with.
        out, calls = self._run(monkeypatch, [None, [3, 0, 0, 0], [4, 0, 0, 0]], stability=0.25, target=1000)
        assert calls == [80, 100, 125] and out.b.size == 125 and out.stopped == "stable"
        assert [c["change"] for c in out.checkpoints] == [None, None, 0.25]

    def test_each_checkpoint_is_one_run_of_the_stability_section(self, monkeypatch):
        """Three checkpoints (80, 100, 125 constraints), the first undetermined: each hull estimate is one run of
        the profile's stability section, the one that raised included."""
        with recording() as profile:
            out, calls = self._run(monkeypatch, [None, [3, 0, 0, 0], [4, 0, 0, 0]], stability=0.25, target=1000)
        assert calls == [80, 100, 125] and out.stopped == "stable"
        assert profile["phase 4: stability checks (hulls)"].calls == 3

    def test_a_checkpoint_at_the_count_reached(self, monkeypatch):
        # The budget ends with the first batch: 80 constraints, exactly the first checkpoint, which is taken.
        out, calls = self._run(monkeypatch, [], stability=0.01, target=1000, max_examples=40)
        assert calls == [80] and out.b.size == 80 and out.stopped == "budget"

    def test_a_checkpoint_at_the_target(self, monkeypatch):
        out, calls = self._run(monkeypatch, [], stability=0.01, target=80)
        assert calls == [80] and out.b.size == 80 and out.stopped == "target"
