"""theory._core: the shared helpers: the verdict of a check, the Chebyshev radius, seeding, the plot extra."""

import json
import math
import operator
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.stats import binom, chi2

from theory._core import CheckResult, MissingMatplotlib, chebyshev_radius, finish, require_matplotlib, seeded
from theory.concentration import plot_expectation_vs_sample
from theory.local_clt import plot_local_clt
from theory.one_step import plot_one_step
from theory.yield_study import plot_yield


def _never(*args, **kwargs):
    raise AssertionError("computed before finding that matplotlib is missing")


class TestRequireMatplotlib:
    def test_returns_the_module(self):
        matplotlib = pytest.importorskip("matplotlib")
        assert require_matplotlib("a plot") is matplotlib

    def test_missing_is_a_value_error_naming_the_extra(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
        with pytest.raises(MissingMatplotlib, match=r"^a plot needs matplotlib \(the `plot` extra: pip install"):
            require_matplotlib("a plot")
        assert issubclass(MissingMatplotlib, ValueError) and issubclass(MissingMatplotlib, ImportError)

    # (plot function, positional arguments, what it would compute first, patched to fail)
    PLOTS = [
        (plot_yield, (None,), None),
        (plot_one_step, (), "theory.one_step.stable_rank_sweep"),
        (plot_local_clt, (), "theory.local_clt.local_clt_sweep"),
        (plot_expectation_vs_sample, (), "theory.concentration.expectation_vs_sample"),
    ]

    @pytest.mark.parametrize(("plot", "args", "computation"), PLOTS, ids=[p[0].__name__ for p in PLOTS])
    def test_every_plot_says_so_before_computing(self, plot, args, computation, monkeypatch, tmp_path):
        monkeypatch.setitem(sys.modules, "matplotlib", None)
        if computation:
            monkeypatch.setattr(computation, _never)
        with pytest.raises(ValueError, match=rf"^{plot.__name__} needs matplotlib"):
            plot(*args, tmp_path / "x.png")
        assert not (tmp_path / "x.png").exists()


#: Replications of each coverage experiment (vectorised: one array of shape (REPS, N_MEAN, dim)).
REPS = 2000
#: Vectors averaged per replication.
N_MEAN = 8
#: The coverage test's own failure probability (it is a random experiment: a correct radius fails it this rarely).
TEST_FAILURE = 1e-6
#: Per-coordinate standard deviations of the test distributions (anisotropic: the radius uses only the trace).
SCALES = np.array([1.0, 2.0, 0.5, 3.0])


def _sample(distribution, rng, dim):
    """REPS × N_MEAN i.i.d. vectors of mean 0 and covariance diag(SCALES[:dim]²)."""
    shape = (REPS, N_MEAN, dim)
    if distribution == "gaussian":
        return rng.standard_normal(shape) * SCALES[:dim]
    return rng.choice([-1.0, 1.0], size=shape) * SCALES[:dim]  # Rademacher: variance 1 per unit scale


class TestChebyshevRadius:
    @pytest.mark.parametrize("delta", [0.1, 0.2])
    @pytest.mark.parametrize("dim", [1, 2, 4])
    @pytest.mark.parametrize("distribution", ["gaussian", "rademacher"])
    def test_covers_the_mean(self, distribution, dim, delta):
        """Over REPS means of N_MEAN vectors, ‖μ̂ − μ‖ >= radius happens at most a fraction δ of the time.

        If the true failure rate is <= δ, the failure count is stochastically below Binomial(REPS, δ), which
        exceeds its (1 − TEST_FAILURE)-quantile with probability <= TEST_FAILURE. A third of the radius fails
        0.28–0.58 of the time in these cases, above that quantile (0.13 of REPS at δ = 0.1, 0.24 at 0.2)."""
        rng = np.random.default_rng([dim, int(100 * delta), int(distribution == "gaussian")])
        errors = np.linalg.norm(_sample(distribution, rng, dim).mean(axis=1), axis=1)  # μ = 0
        radius = chebyshev_radius(float(np.sum(SCALES[:dim] ** 2)), N_MEAN, delta)
        failures = int(np.sum(errors >= radius))
        assert failures <= binom.ppf(1 - TEST_FAILURE, REPS, delta), (failures, radius)

    @pytest.mark.parametrize("delta", [0.05, 0.1, 0.2])
    @pytest.mark.parametrize("dim", [1, 2, 4])
    def test_width_against_the_exact_gaussian_quantile(self, dim, delta):
        """For Gaussian vectors of covariance s²I the best radius is the exact (1 − δ)-quantile of ‖μ̂ − μ‖:
        n‖μ̂ − μ‖²/s² is χ²_dim, so q = s·sqrt(χ²_{dim,1−δ}/n). Chebyshev gives t = s·sqrt(dim/(nδ)), hence
        t/q = F = sqrt(dim/(δ·χ²_{dim,1−δ})) (in dimension 1, sqrt(1/δ)/z_{1−δ/2}: 1.92 at δ = 0.1, 2.28 at
        δ = 0.05; 2.90 at dim 4, δ = 0.05, the largest here). The radius must cover (t >= q) and be no wider
        than F·q: a third of it falls below q, three times it far above F·q."""
        s = 1.5
        q = s * math.sqrt(chi2.ppf(1 - delta, dim) / N_MEAN)
        factor = math.sqrt(dim / (delta * chi2.ppf(1 - delta, dim)))
        assert 1.0 < factor < 3.0
        t = chebyshev_radius(dim * s**2, N_MEAN, delta)
        # Both sides from the same quantile and square roots: a few roundings.
        assert q <= t <= factor * q * (1 + 1e-12)

    @pytest.mark.parametrize("dim", [1, 4])
    def test_simulated_quantile_brackets_the_exact_one(self, dim):
        """The simulation is the distribution the width test assumes: order statistics of REPS simulated
        errors bracket the exact (1 − δ)-quantile (each side fails with probability <= TEST_FAILURE), and the
        radius lies between the lower bracket and F times the upper one."""
        delta, s = 0.1, 1.5
        rng = np.random.default_rng(dim)
        errors = np.sort(np.linalg.norm(rng.standard_normal((REPS, N_MEAN, dim)).mean(axis=1) * s, axis=1))
        # P(X_(j) > q) = P(Bin(REPS, 1 − δ) <= j − 1) and P(X_(j) < q) = P(Bin(REPS, 1 − δ) >= j), j 1-based:
        # j = ppf(TEST_FAILURE) for the lower end, j = isf(TEST_FAILURE) + 1 for the upper one (0-based j − 1).
        lo = errors[int(binom.ppf(TEST_FAILURE, REPS, 1 - delta)) - 1]
        hi = errors[int(binom.isf(TEST_FAILURE, REPS, 1 - delta))]
        q = s * math.sqrt(chi2.ppf(1 - delta, dim) / N_MEAN)
        assert lo <= q <= hi
        factor = math.sqrt(dim / (delta * chi2.ppf(1 - delta, dim)))
        assert lo <= chebyshev_radius(dim * s**2, N_MEAN, delta) <= factor * hi

    def test_zero_or_negative_trace_gives_zero(self):
        """A (rounded) negative trace is a zero variance: the mean is exact."""
        assert chebyshev_radius(-1e-18, 10, 0.05) == chebyshev_radius(0.0, 10, 0.05) == 0.0

    @pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
    def test_failure_probability_outside_zero_one_raises(self, bad):
        with pytest.raises(ValueError, match=r"`failure_probability` must be in \(0, 1\)"):
            chebyshev_radius(1.0, 10, bad)


def _finish(measured, bound, relation="<=", interval=None, failure_probability=None):
    return finish(name="demo", claim="x is small", source="ours", parameters={"x": 1}, measured=measured,
                  bound=bound, relation=relation, interval=interval, failure_probability=failure_probability)


class TestFinish:
    # (measured, interval, relation, bound): the point estimate satisfies the relation in every case; the
    # verdict is whether the *whole* interval does (both ends, checked here end by end).
    CASES = [
        (0.5, (0.4, 1.2), "<=", 1.0),  # upper end above the bound
        (0.5, (0.4, 1.0), "<=", 1.0),  # upper end at the bound
        (0.5, (0.4, 0.9), "<=", 1.0),
        (1.2, (0.8, 1.5), ">=", 1.0),  # lower end below the bound
        (1.2, (1.0, 1.5), ">=", 1.0),  # lower end at the bound
        (1.2, (1.1, math.inf), ">=", 1.0),  # unbounded above satisfies >=
        (0.5, (0.4, math.inf), "<=", 1.0),
        (0.5, (math.nan, 0.9), ">=", 0.1),
        (1.0, None, "<=", 1.0),  # exact, at the bound
        (1.0 + 1e-12, None, "<=", 1.0),
        (1.0 - 1e-12, None, ">=", 1.0),
    ]

    @pytest.mark.parametrize(("measured", "interval", "relation", "bound"), CASES, ids=str)
    def test_holds_when_the_whole_interval_satisfies_the_relation(self, measured, interval, relation, bound):
        op = {"<=": operator.le, ">=": operator.ge}[relation]
        ends = (measured, measured) if interval is None else interval
        expected = all(not math.isnan(x) and op(x, bound) for x in ends)
        result = _finish(measured, bound, relation, interval)
        assert result.holds is expected
        assert result.interval == tuple(float(x) for x in ends)

    def test_bad_relation_raises(self):
        with pytest.raises(ValueError, match=r"`relation` must be one of \['<=', '>='\]; got relation='<'"):
            _finish(0.5, 1.0, "<")

    @pytest.mark.parametrize(("interval", "failure_probability", "text", "exact"), [
        (None, None, "0.5 (exact)", True),
        ((0.4, 0.6), None, "0.5 in [0.4, 0.6] (certain bracket)", True),
        ((0.4, 0.6), 0.01, "0.5 in [0.4, 0.6] (fails w.p. <= 0.01)", False),
    ], ids=["exact", "bracket", "monte carlo"])
    def test_summary_says_which_uncertainty(self, interval, failure_probability, text, exact):
        result = _finish(0.5, 1.0, interval=interval, failure_probability=failure_probability)
        assert isinstance(result, CheckResult) and result.exact is exact
        assert result.summary() == f"demo: x is small | measured {text} <= 1: holds"

    def test_to_dict_is_strict_json(self):
        """Non-finite values become null, so the record is valid JSON."""
        record = json.loads(json.dumps(_finish(0.5, 1.0, interval=(0.4, math.inf), failure_probability=0.1)
                                       .to_dict(), allow_nan=False))
        assert record["interval"] == [0.4, None] and record["holds"] is False


class TestTimer:
    """The check's seconds come from an injected clock: no wall time is read or compared."""

    @pytest.fixture
    def clock(self, monkeypatch):
        import theory._core as core

        ticks = iter([100.0, 103.5])  # construction, then elapsed()
        monkeypatch.setattr(core.time, "perf_counter", lambda: next(ticks))

    def test_elapsed_is_the_clock_difference(self, clock):
        from theory._core import Timer

        assert Timer().elapsed() == 3.5

    def test_finish_records_the_timer_and_zero_without_one(self, clock):
        from theory._core import Timer

        timed = finish(name="demo", claim="x", source="ours", parameters={}, measured=0.5, bound=1.0, timer=Timer())
        assert timed.seconds == 3.5
        assert _finish(0.5, 1.0).seconds == 0.0  # no timer: nothing was timed


class TestSeeded:
    @pytest.mark.parametrize("rng", [None, 12345, np.random.SeedSequence(7), np.random.default_rng(99)],
                             ids=["None", "int", "SeedSequence", "Generator"])
    def test_the_entropy_replays_the_generator(self, rng):
        """np.random.default_rng(entropy) draws what the returned generator draws."""
        generator, entropy = seeded(rng)
        assert_allclose(np.random.default_rng(entropy).random(5), generator.random(5), rtol=0)
