"""learn's wiring: what each phase is handed from the config and the run, and what the run records.

The phase functions that ``learner.learn`` calls are wrapped by recorders that call the real function and keep
the arguments they received and the result they returned; the arguments are checked against the values the run
reports it used (``diagnostics["0_setting"]["config"]``, documented as every value used) and the documented
rules, and the result's records against the recorded phase results.
"""

import dataclasses
import logging
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from learner import arrays, random_layer, relative_error
from learner.errors import LearnInterrupted
from learner.learn import learn
from learner.oracle import LayerOracle
from learner.parallel import Workers
from learner.phases import FIXED_BUDGETS, LearnConfig, resolve_config
from learner.phases.forecast import ADAPTIVE_CANDIDATES

LEARN = sys.modules["learner.learn"]  # the module; `learner.learn` is also the function

# (m, d, k) = (2, 8, 2) on the cube: sound, and learned to ~1e-30 in about 0.3 s with these budgets.
M, D, K = 2, 8, 2
SMALL = {"n_crude": 20_000, "n_refine": 20_000, "batch": 10_000, "outer_rounds": 2}
PRE_DRAWN = 7  # examples drawn from the oracle before the run: not counted in examples_drawn


class Recorder:
    """Wraps ``learner.learn.<name>``: calls the real function (or ``fake``), keeps (args, kwargs, result)."""

    def __init__(self, mp, name, fake=None):
        self.calls = []
        real = getattr(LEARN, name)

        def wrapper(*args, **kw):
            call = [args, dict(kw), None]  # the result stays None when the call raises
            self.calls.append(call)
            call[2] = fake(real, self, *args, **kw) if fake else real(*args, **kw)
            return call[2]

        mp.setattr(LEARN, name, wrapper)


NAMES = ("crude_sum_w", "crude_sculpt", "estimate_span", "refine_sum_w", "refined_sculpt", "search_heads",
         "truth_errors")


def _record(mp, fakes=None):
    fakes = fakes or {}
    return {name: Recorder(mp, name, fakes.get(name)) for name in NAMES}


def _run(config, *, m=M, fakes=None, **kw):
    truth = random_layer(M, D, rng=0)
    oracle = LayerOracle(truth, K, rng=1)
    oracle.draw(PRE_DRAWN)
    with pytest.MonkeyPatch.context() as mp:
        rec = _record(mp, fakes)
        t0 = time.perf_counter()
        result = learn(oracle, m=m, k=K, config=config, truth=truth, rng=0, progress=False, **kw)
        wall = time.perf_counter() - t0
    return SimpleNamespace(truth=truth, oracle=oracle, rec=rec, result=result, wall=wall,
                           cfg=result.diagnostics["0_setting"]["config"])


# One run of each kind for the module's tests (tests/conftest.py credits its calls to every test that reads it,
# including through request.getfixturevalue, so each judges the mutants of the functions the run called).
@pytest.fixture(scope="module")
def adaptive():
    logit = float(np.max(np.linalg.norm(random_layer(M, D, rng=0).thetas.reshape(M, -1), axis=1)))
    run = _run(LearnConfig(**SMALL), logit_scale=logit)
    run.logit_scale = logit
    return run


@pytest.fixture(scope="module")
def fixed():
    return _run(LearnConfig(**SMALL, **FIXED_BUDGETS))


def _calls(run, name):
    return run.rec[name].calls


class TestPhaseArguments:
    """Every phase gets the config's values, the run's truth and pool, and the documented derived counts."""

    @pytest.mark.parametrize("which", ["adaptive", "fixed"])
    def test_phases_1_and_2(self, which, request):
        # Each phase reads its knobs from the run's config itself (tests/learner/phases hold each phase to the
        # config's fields): the run hands every phase the config it reports, resolved, and nothing in its place.
        run = request.getfixturevalue(which)
        config = LearnConfig(**run.cfg)
        ((args1, kw1, p1),) = _calls(run, "crude_sum_w")
        assert args1 == (run.oracle, config) and args1[1].refined_constraints is not None  # resolved
        assert isinstance(kw1.pop("workers"), Workers)
        assert kw1 == {"truth": run.truth}
        ((args2, kw2, p2),) = _calls(run, "crude_sculpt")
        assert args2[0] is run.oracle and args2[1] is p1.w_sum and args2[2] == config
        assert isinstance(kw2.pop("workers"), Workers)
        assert kw2 == {"truth": run.truth}
        # The crude hull (p2 has at least d² constraints here): Θ* for phase 3, no truth.
        assert p2.count >= D * D
        crude_args, crude_kw, crude5 = _calls(run, "estimate_span")[0]
        assert len(crude_args) == 2 and crude_args[0] is p2 and crude_args[1] == config
        assert crude_kw == {"m": M, "plan_m": M}
        # Phase 3 starts from the crude hull's Θ*, or from none when the crude constraints leave it undetermined.
        theta = _calls(run, "refine_sum_w")[0][0][2]
        assert theta is (crude5.theta_star if crude5 is not None else None)

    @pytest.mark.parametrize("which", ["adaptive", "fixed"])
    def test_phases_3_to_6_of_every_round(self, which, request):
        run = request.getfixturevalue(which)
        config = LearnConfig(**run.cfg)
        refines, sculpts = _calls(run, "refine_sum_w"), _calls(run, "refined_sculpt")
        spans = _calls(run, "estimate_span")[1:]
        rounds = 1 if run.cfg["adaptive"] else 2  # adaptive: phase 3 met its target in round 1 here; fixed: every
        assert len(refines) == len(sculpts) == len(spans) == rounds
        w_sum = _calls(run, "crude_sum_w")[0][2].w_sum
        for r in range(rounds):
            args3, kw3, p3 = refines[r]
            assert args3[0] is run.oracle and args3[1] is w_sum and args3[3] == config
            if r > 0:  # the next round's Θ* is the last round's hull
                assert args3[2] is spans[r - 1][2].theta_star
            assert kw3 == {"truth": run.truth}
            w_sum = p3.w_sum
            args4, kw4, p4 = sculpts[r]
            assert args4[0] is run.oracle and args4[1] is w_sum and args4[2] == config
            assert isinstance(kw4.pop("workers"), Workers)
            assert kw4 == {"m": M, "plan_m": M, "truth": run.truth}  # the pilot runs: refined_sculpt's default
            assert p4.forecast is not None
            args5, kw5, _ = spans[r]
            assert len(args5) == 2 and args5[0] is p4 and args5[1] == config
            assert kw5 == {"m": M, "plan_m": M, "truth": run.truth, "allow_deficit": True}  # m is given
        ((args6, kw6, _),) = _calls(run, "search_heads")
        last5 = spans[-1][2]
        assert args6[0] is run.oracle and args6[1] is last5.theta_star and args6[3] == M and args6[4] == config
        assert args6[2] is last5.directions
        assert isinstance(kw6.pop("workers"), Workers)
        assert kw6.pop("threads") == 1  # no local workers: the run's one BLAS thread
        assert kw6.pop("device") is arrays.NUMPY  # the run's one backend: numpy unless learn(device=...)
        assert kw6 == {"truth": run.truth}


class TestRecords:
    """What the run reports: the result's fields, the diagnostics per round, the timings, the execution."""

    def test_result_fields(self, adaptive):
        run, logit = adaptive, adaptive.logit_scale
        r = run.result
        ((_, _, p6),) = _calls(run, "search_heads")
        assert r.success is True and r.status == "6_search" and r.m == M and r.m_estimated is False
        assert r.layer is p6.layer
        assert r.examples_drawn == run.oracle.n_drawn - PRE_DRAWN
        assert r.phases["6_search"] is p6 and r.phases["1_crude_sum"] is _calls(run, "crude_sum_w")[0][2]
        assert r.noise == (p6.noise.sigma if p6.noise is not None else p6.residual_sigma) and r.noise is not None
        assert r.diagnostics["0_setting"]["logit_scale"] == logit
        assert r.diagnostics["0_setting"]["distribution"] == "boolean"
        assert "model_selection" not in r.diagnostics["5_span"] and r.diagnostics["5_span"]["gap_resolved"]
        # The errors against the truth: of the layer returned, on inputs drawn by rng=0's generator.
        ((args, kw, errors),) = _calls(run, "truth_errors")
        truth, layer, k, source, rng = args
        assert (truth, layer, k, source) == (run.truth, p6.layer, K, run.oracle) and not kw
        assert isinstance(rng, np.random.Generator)
        assert r.errors == errors and errors["relative_error"] < 1e-20
        assert rng.bit_generator.state["bit_generator"] == "PCG64"
        again = np.random.default_rng(0)
        _ = relative_error(run.truth, p6.layer, K, n_samples=8192, distribution="boolean", rng=again)
        assert rng.bit_generator.state == again.bit_generator.state  # the same draws as rng=0's

    def test_phases_4_and_5_record_their_errors_against_the_truth(self, adaptive):
        """With the truth, phase 4 records its constraints' errors and phase 5 how far its hull lies from the planted
        heads; the cosine and the distance are computed here from the hull and the truth by hand."""
        run = adaptive
        d4, d5 = run.result.diagnostics["4_refined_sculpt"], run.result.diagnostics["5_span"]
        assert 0 <= d4["constraint_error_median"] <= d4["constraint_error_p90"]
        assert 0 <= d5["theta_star_error"] < 0.1
        p5 = run.result.phases["5_span"]
        star, v = p5.theta_star.ravel(), p5.directions[:, 0]  # two heads: a hull of one direction
        heads = run.truth.thetas.reshape(M, -1)
        step = heads[1] - heads[0]
        assert d5["principal_cosines"] == [pytest.approx(abs(v @ step) / np.linalg.norm(step), rel=1e-9)]
        off = [(t - star) - v * (v @ (t - star)) for t in heads]
        distance = max(np.linalg.norm(o) / np.linalg.norm(t) for o, t in zip(off, heads, strict=True))
        assert d5["hull_distance"] == pytest.approx(distance, rel=1e-9) and distance < 0.1

    def test_execution(self, adaptive):
        run = adaptive
        ex = run.result.execution
        assert ex["backend"] == "serial"
        assert ex["blas_threads"] == {"alone": 1, "while_workers_stream": 1, "workers": 1, "phase6_products": 1}
        assert "phase4_time_estimate" not in ex
        # The streaming phases' batches went through the run's pool, which records each one's examples/s.
        assert set(ex["phases"]) == {"1_crude_sum", "2_crude_sculpt", "4_refined_sculpt"}
        assert all(ex["phases"][phase]["examples"] > 0 for phase in ex["phases"])

    @pytest.mark.parametrize("which", ["adaptive", "fixed"])
    def test_timings_sum_each_phase(self, which, request):
        run = request.getfixturevalue(which)
        t = run.result.timings
        per = {"1_crude_sum": "crude_sum_w", "2_crude_sculpt": "crude_sculpt", "3_refine_sum": "refine_sum_w",
               "4_refined_sculpt": "refined_sculpt", "6_search": "search_heads"}
        for phase, name in per.items():
            assert t[phase] == pytest.approx(sum(c[2].seconds for c in _calls(run, name)), rel=1e-12)
        assert t["5_span"] == pytest.approx(sum(c[2].seconds for c in _calls(run, "estimate_span")[1:]), rel=1e-12)
        assert isinstance(t["total"], float) and 0 < t["total"] <= run.wall
        assert t["total"] >= sum(v for key, v in t.items() if key != "total") * 0.999

    def test_rounds_of_phase_3(self, fixed):
        d3 = fixed.result.diagnostics["3_refine_sum"]
        p3s = [c[2] for c in _calls(fixed, "refine_sum_w")]
        assert d3["rounds_stopped"] == "outer_rounds=2 rounds run" and d3["round"] == 1
        assert len(d3["rounds"]) == 2
        for r, (row, p3) in enumerate(zip(d3["rounds"], p3s, strict=True)):
            assert row["round"] == r and row["examples"] == p3.n_examples and row["seconds"] == p3.seconds
            assert row["sum_w_error"] == p3.error and "stages" not in row
            assert row["stopped"] == p3.details["stopped"]
        assert d3["examples"] == p3s[-1].n_examples
        d4 = fixed.result.diagnostics["4_refined_sculpt"]
        assert [row["round"] for row in d4["rounds"]] == [0, 1] and d4["round"] == 1
        assert [row["examples"] for row in d4["rounds"]] == [c[2].n_examples for c in _calls(fixed, "refined_sculpt")]

    def test_adaptive_rounds_end_when_phase_3_meets_its_target(self, adaptive):
        run = adaptive
        d3 = run.result.diagnostics["3_refine_sum"]
        p3 = _calls(run, "refine_sum_w")[0][2]
        assert p3.details["stopped"] == "standard error"
        assert d3["rounds_stopped"].startswith("phase 3 met its target in round 1 (standard error")
        assert [row["round"] for row in d3["rounds"]] == [0] and d3["round"] == 0

    def test_the_phases_are_logged_with_their_round_and_budget(self, caplog):
        with caplog.at_level(logging.INFO, logger="learner.learn"):
            run = _run(LearnConfig(**SMALL, **FIXED_BUDGETS))
        text = "\n".join(caplog.messages)
        assert "phase 1: one-step estimate of ΣW from 20,000 examples" in text
        assert (f"phase 2: crude sculpting, up to {int(run.cfg['crude_constraints'] * D * D)} constraints from at "
                f"most {run.cfg['crude_max_examples']:,} examples") in text
        for r in (1, 2):
            assert f"phase 3 (round {r} of at most 2): refining ΣW from 20,000 examples" in text
            assert (f"phase 4 (round {r}): refined sculpting, up to {int(run.cfg['refined_constraints'] * D * D)} "
                    f"constraints from at most {run.cfg['max_examples']:,} examples") in text
        assert "phase 3 (round 3" not in text and "phase 3 (round 0" not in text
        # The crude constraints of this run leave the hull undetermined: phase 3 starts without Θ*.
        assert _calls(run, "refine_sum_w")[0][0][2] is None
        assert any(msg.startswith("phase 2: no crude hull for phase 3 (the constraints do not determine the hull")
                   for msg in caplog.messages)

    def test_adaptive_budgets_are_logged_as_caps(self, caplog):
        with caplog.at_level(logging.INFO, logger="learner.learn"), pytest.raises(LearnInterrupted):
            _run(LearnConfig(**SMALL), fakes={"refined_sculpt": _interrupt})
        assert "phase 1: one-step estimate of ΣW from at most 20,000 examples" in caplog.messages
        assert "phase 3 (round 1 of at most 2): refining ΣW from at most 20,000 examples" in caplog.messages

    def test_adaptive_rounds_go_on_while_phase_3_stops_at_its_cap(self):
        """A standard-error target phase 3 cannot meet in its cap: every outer round runs (stopped before phase 6)."""
        cfg = LearnConfig(**SMALL | {"n_refine": 10_000, "refine_se": 1e-9})
        with pytest.raises(LearnInterrupted) as exc:
            _run(cfg, fakes={"search_heads": _interrupt})
        d3 = exc.value.result.diagnostics["3_refine_sum"]
        assert [row["stopped"] for row in d3["rounds"]] == ["cap", "cap"]
        assert d3["rounds_stopped"] == "outer_rounds=2 rounds run"


def _interrupt(real, rec, *args, **kw):
    raise KeyboardInterrupt


class TestInterrupted:
    """Ctrl-C in a phase: the result names the phase that was running and carries no errors against the truth."""

    @pytest.mark.parametrize(("name", "phase"), [("crude_sum_w", "1_crude_sum"), ("crude_sculpt", "2_crude_sculpt"),
                                                 ("estimate_span", "5_span"), ("refine_sum_w", "3_refine_sum"),
                                                 ("refined_sculpt", "4_refined_sculpt"),
                                                 ("search_heads", "6_search")])
    def test_the_running_phase_is_named(self, name, phase, caplog):
        with caplog.at_level(logging.INFO, logger="learner.learn"), pytest.raises(LearnInterrupted) as exc:
            _run(LearnConfig(**SMALL), fakes={name: _interrupt})
        r = exc.value.result
        assert r.status == "interrupted" and r.layer is None and not r.success
        assert r.diagnostics["interrupted"] == {"phase": phase}
        assert f"interrupted by the user in phase {phase} after" in r.message
        assert r.errors == {}
        assert f"learn: interrupted in {phase}" in caplog.messages
        assert str(exc.value) == r.message

    def test_one_head_pilot_has_no_free_dimensions(self):
        """The pilot's n is (m - 1)(k - 1): 0 for one head."""
        truth = random_layer(1, D, rng=0)
        seen = {}

        def stop(real, rec, *args, **kw):
            seen.update(kw, forecast=real(*args, **kw).forecast)
            raise KeyboardInterrupt

        with pytest.MonkeyPatch.context() as mp:
            Recorder(mp, "refined_sculpt", stop)
            with pytest.raises(LearnInterrupted):
                learn(LayerOracle(truth, 3, rng=1), m=1, config=LearnConfig(**SMALL), progress=False)
        assert seen["forecast"].n == 0 and seen["m"] == 1 and seen["plan_m"] == 1

    @pytest.mark.parametrize(("blas", "recorded"), [(2, {"alone": 2, "while_workers_stream": 2, "workers": 1,
                                                         "phase6_products": 2}),
                                                    (None, None)])
    def test_no_config_is_the_default_config(self, blas, recorded):
        """No config is the default config; without workers the streaming phases keep ``blas_threads`` too."""
        with pytest.MonkeyPatch.context() as mp:
            rec = Recorder(mp, "crude_sum_w", _interrupt)
            with pytest.raises(LearnInterrupted) as exc:
                learn(LayerOracle(random_layer(1, D, rng=0), 2, rng=1), m=1, progress=False, blas_threads=blas)
        r = exc.value.result
        assert r.diagnostics["0_setting"]["config"]["batch"] == LearnConfig().batch
        assert rec.calls[0][0][1] == resolve_config(LearnConfig(), 1)[0]
        if recorded is None:
            assert r.execution["blas_threads"].startswith("not set: the process's own setting")
        else:
            assert r.execution["blas_threads"] == recorded


def _first(constraints, count):
    """The first ``count`` of a set of constraints (every per-constraint array cut to its first rows)."""
    n = constraints.count
    cut = {f.name: getattr(constraints, f.name)[:count] for f in dataclasses.fields(constraints)
           if isinstance(getattr(constraints, f.name), np.ndarray) and getattr(constraints, f.name).shape[:1] == (n,)}
    return dataclasses.replace(constraints, **cut)


@pytest.mark.parametrize(("count", "hull"), [(D * D, True), (D * D - 1, False)], ids=["d^2", "d^2-1"])
def test_a_crude_hull_needs_d_squared_constraints(count, hull):
    """Phase 2's constraints give a crude hull for phase 3 from d² constraints on, not below."""

    def crude(real, rec, *args, **kw):
        p2 = real(*args, **kw)
        assert p2.count > count
        return _first(p2, count)

    truth = random_layer(M, D, rng=0)
    with pytest.MonkeyPatch.context() as mp:
        rec = _record(mp, {"crude_sculpt": crude, "refine_sum_w": _interrupt})
        with pytest.raises(LearnInterrupted):
            learn(LayerOracle(truth, K, rng=1), m=M, config=LearnConfig(**SMALL), truth=truth, progress=False)
    p2 = rec["crude_sculpt"].calls[0][2]
    assert p2.count == count
    spans = rec["estimate_span"].calls
    if hull:
        assert len(spans) == 1 and spans[0][0][0] is p2
    else:
        assert spans == [] and rec["refine_sum_w"].calls[0][0][2] is None


def _failing_search(real, rec, *args, **kw):
    """Phase 6 with its held-out error replaced by 1.0 (a search that missed)."""
    p6 = real(*args, **kw)
    return dataclasses.replace(p6, heldout_error=1.0, noise=None, noise_test=None)


class TestMissedSearch:
    def test_a_missed_search_is_retried_tight_and_the_failure_message_ends_cleanly(self):
        run = _run(LearnConfig(**SMALL), fakes={"search_heads": _failing_search})
        r = run.result
        assert not r.success and r.status == "6_search"
        assert r.message.endswith("the search or the refinement did not reach the planted layer.")
        sculpts = _calls(run, "refined_sculpt")
        assert len(sculpts) == 2 and len(_calls(run, "search_heads")) == 2
        tight = sculpts[1][0][2]  # the retry's config: the tightest candidate, fixed budgets (no stability rule)
        assert tight.refined_tol == min(ADAPTIVE_CANDIDATES) and tight.adaptive is False
        assert sculpts[1][2].forecast.rule == "affordable" and sculpts[1][2].checkpoints == ()
        assert r.diagnostics["4_refined_sculpt"]["tight_retry"] == {
            "first_heldout_relative_error": 1.0, "retry_heldout_relative_error": 1.0, "kept": "first", "tol": 0.015}

    def test_unknown_m_failure_message_ends_cleanly(self):
        run = _run(LearnConfig(**SMALL), m=None, fakes={"search_heads": _failing_search})
        r = run.result
        assert not r.success and r.m_estimated is True
        assert "model_selection" in r.diagnostics["5_span"]
        assert r.message.endswith("the search or the refinement did not reach the planted layer.")


class TestSetting:
    def test_k_is_checked_against_the_examples(self):
        truth = random_layer(1, 4, rng=0)
        with pytest.raises(ValueError, match="`k` must match the examples' 2 tokens; got k=3"):
            learn(LayerOracle(truth, 2, rng=0), m=1, k=3)
        with pytest.raises(ValueError, match="`k` must be smaller than `d`"):
            learn(LayerOracle(truth, 4, rng=0), m=1, k=4)

    @pytest.mark.parametrize(("X", "expected"), [(np.array([[[1.0, -1.0]]]), "boolean"),
                                                 (np.array([[[1.0, 2.0]]]), "gaussian"),
                                                 (np.array([[[-1.0, 0.5]]]), "gaussian")])
    def test_distribution_of_fixed_arrays(self, X, expected):
        assert LEARN._distribution(SimpleNamespace(X=X)) == expected
        assert LEARN._distribution(SimpleNamespace(X=X, distribution="gaussian")) == "gaussian"

    def test_fixed_arrays_without_truth(self):
        truth = random_layer(2, 8, rng=0)
        X = np.sign(np.random.default_rng(0).standard_normal((1000, 4, 8)))
        result = learn((X, truth(X)), m=2, progress=False)
        assert result.status == "examples" and result.diagnostics["0_setting"]["distribution"] == "boolean"
        assert result.errors == {}


def _blas_now():
    from threadpoolctl import threadpool_info

    return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def test_blas_threads_with_workers_are_one_while_they_stream():
    """With workers, this process keeps ``blas_threads`` where it computes alone and one while they stream."""
    seen = {}
    check = LEARN.check_setting

    def check_setting(*args, **kw):
        seen["alone"] = _blas_now()
        return check(*args, **kw)

    def stop(real, rec, *args, **kw):
        seen["streaming"] = _blas_now()
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LEARN, "check_setting", check_setting)
        Recorder(mp, "crude_sum_w", stop)
        with pytest.raises(LearnInterrupted) as exc:
            learn(LayerOracle(random_layer(2, 8, rng=0), 2, rng=1), m=2, workers=2, blas_threads=2, progress=False)
    assert seen == {"alone": {2}, "streaming": {1}}
    ex = exc.value.result.execution
    assert ex["backend"] == "local"
    assert ex["blas_threads"] == {"alone": 2, "while_workers_stream": 1, "workers": 1, "phase6_products": 2}


class _SlowToCount(LayerOracle):
    """An oracle that takes ``PAUSE`` seconds to say how many examples it has drawn, the first time it is asked."""

    PAUSE = 0.25

    @property
    def n_drawn(self):
        if not getattr(self, "_asked", False):
            self._asked = True
            time.sleep(self.PAUSE)
        return self._n_drawn

    @n_drawn.setter
    def n_drawn(self, value):
        self._n_drawn = value


def test_the_total_time_is_the_whole_call():
    """``timings["total"]`` is the whole call, the checks of its arguments included: learn asks the oracle for its
    count before the first phase, and a run refused at phase 0 ((3, 8, 2) on the cube) takes little besides."""
    oracle = _SlowToCount(random_layer(3, D, rng=0), K, rng=1)
    t0 = time.perf_counter()
    result = learn(oracle, m=3, progress=False)
    wall = time.perf_counter() - t0
    assert result.status == "setting"
    assert _SlowToCount.PAUSE <= result.timings["total"] <= wall


def test_forecast_over_budget_records_the_time_estimate():
    """A forecast beyond max_examples stops the run; the time estimate goes with ``execution``, not the message."""
    # The pilot forecasts about 9e2 examples for 6·d² constraints at the loosest tolerance it may turn to (0.15),
    # 1.5e3 at the candidates' loosest (0.08): over a budget of 500 at both.
    r = _run(LearnConfig(**SMALL | {"max_examples": 500})).result
    assert r.status == "budget" and not r.success and r.message.startswith("phase 4 would need about")
    assert r.execution["phase4_time_estimate"].startswith("the pilot ran at")
    assert "the pilot ran at" not in r.message
    assert f"Time: {r.execution['phase4_time_estimate']}." in " ".join(r.report().split())  # wrapped at the width


def test_the_noise_floor_of_phase_6_is_reported():
    """The result's noise and expected parameter error are those of phase 6's noise floor, when it has one."""
    floor = SimpleNamespace(sigma=0.25, expected_param_error=0.125, relative_noise=0.0, summary=dict)

    def with_floor(real, rec, *args, **kw):
        p6 = real(*args, **kw)
        return dataclasses.replace(p6, noise=floor)

    r = _run(LearnConfig(**SMALL), fakes={"search_heads": with_floor}).result
    assert r.success and (r.noise, r.expected_param_error) == (0.25, 0.125)


class TestForecastMissWarning:
    """Phase 4 warns where the examples the target needed leave [1/FORECAST_MISS, FORECAST_MISS] times the
    pilot's forecast, bounds included, and only when the target was reached; a censored phase without an
    over-budget forecast does not stop the run for its budget."""

    @staticmethod
    def _run_with(monkeypatch, caplog, *, at_target=None, stopped="target", miss=None):
        seen = {}

        def changed(real, rec, *args, **kw):
            p4 = real(*args, **kw)
            changes = {}
            if at_target is not None:
                changes["examples_at_target"] = at_target(p4.forecast.predicted_examples)
            p4 = dataclasses.replace(p4, stopped=stopped, **changes)
            seen["ratio"], seen["p4"] = p4.needed_ratio, p4
            if miss is not None:
                monkeypatch.setattr(LEARN, "FORECAST_MISS", miss(p4.needed_ratio))
            return p4

        with caplog.at_level(logging.WARNING, logger="learner.learn"):
            result = _run(LearnConfig(**SMALL | {"outer_rounds": 1}), fakes={"refined_sculpt": changed}).result
        warned = [r for r in caplog.records if "the forecast missed" in r.getMessage()]
        return result, seen, warned

    def test_a_miss_above_is_warned_with_the_round_examples_and_ratio(self, monkeypatch, caplog):
        result, seen, warned = self._run_with(monkeypatch, caplog, at_target=lambda p: int(4 * p) + 1)
        p4 = seen["p4"]
        assert seen["ratio"] > 4
        (record,) = warned
        assert record.args == (1, f"{p4.examples_at_target:,}", seen["ratio"], p4.forecast.predicted_examples)

    def test_a_miss_below_is_warned(self, monkeypatch, caplog):
        _, seen, warned = self._run_with(monkeypatch, caplog, at_target=lambda p: max(int(p / 4) - 1, 1))
        assert seen["ratio"] < 1 / 3 and len(warned) == 1

    def test_a_ratio_inside_the_band_is_not_a_miss(self, monkeypatch, caplog):
        _, seen, warned = self._run_with(monkeypatch, caplog, at_target=lambda p: int(p) + 1)
        assert 1 / 3 <= seen["ratio"] <= 3 and warned == []

    def test_the_upper_bound_itself_is_not_a_miss(self, monkeypatch, caplog):
        _, seen, warned = self._run_with(monkeypatch, caplog, at_target=lambda p: int(2 * p), miss=lambda r: r)
        assert seen["ratio"] > 1 and warned == []

    def test_the_lower_bound_itself_is_not_a_miss(self, monkeypatch, caplog):
        # FORECAST_MISS = 1/ratio, chosen where 1/(1/ratio) is ratio again in floating point.
        def at_target(p):
            n = int(p / 2)
            while 1 / (1 / (n / p)) != n / p:
                n -= 1
            return n

        _, seen, warned = self._run_with(monkeypatch, caplog, at_target=at_target, miss=lambda r: 1 / r)
        assert seen["ratio"] < 1 and warned == []

    def test_no_warning_when_the_target_was_not_reached(self, monkeypatch, caplog):
        result, seen, warned = self._run_with(monkeypatch, caplog, at_target=lambda p: int(4 * p) + 1,
                                              stopped="budget")
        assert seen["ratio"] > 4 and warned == []
        # Censored, but the pilot's forecast was within the budget: the run is not stopped for its budget.
        assert not seen["p4"].forecast.over_budget and result.status != "budget"


def test_an_over_budget_forecast_is_logged_with_its_time_estimate(caplog):
    with caplog.at_level(logging.INFO, logger="learner.learn"):
        r = _run(LearnConfig(**SMALL | {"max_examples": 500})).result  # over it even at 0.15
    (line,) = [m for m in caplog.messages if m.startswith("phase 4: ")]
    assert line == f"phase 4: {r.message}; {r.execution['phase4_time_estimate']}"


def test_phases_5_and_6_are_logged_with_the_round_gap_ratios_and_search(caplog):
    with caplog.at_level(logging.INFO, logger="learner.learn"):
        run = _run(LearnConfig(**SMALL | {"outer_rounds": 1}))
    ((_, _, p4),) = _calls(run, "refined_sculpt")
    p5 = _calls(run, "estimate_span")[-1][2]
    lines = caplog.messages
    assert (f"phase 5 (round 1): {p4.count} constraints, m = {M}, gap ratios "
            f"{np.array2string(p5.gap_ratios[:M], precision=3)}") in lines
    assert f"phase 6: searching the hull (m = {M}, search={run.cfg['search']})" in lines
    ((_, _, p6),) = _calls(run, "search_heads")
    assert f"phase 6: {p6.search} search, held-out relative error {p6.heldout_error:.3g}" in lines


def test_a_partly_unpinned_hull_is_logged_with_the_directions_left(caplog):
    """One sharp head on the cube at (1, 8, 2): phase 4's constraints have rank 62 of d² = 64 (the hull of one head
    is a point), so phase 5 leaves 64 − 62 = 2 directions of Θ unpinned, and says so in the log."""
    ls, os_, es = np.random.SeedSequence(0).spawn(3)
    truth = random_layer(1, D, rng=ls)
    with caplog.at_level(logging.INFO, logger="learner.learn"), pytest.raises(LearnInterrupted) as exc:
        with pytest.MonkeyPatch.context() as mp:
            Recorder(mp, "search_heads", _interrupt)
            learn(LayerOracle(truth, K, rng=os_), m=1, rng=es, progress=False,
                  logit_scale=float(np.linalg.norm(truth.thetas[0])))
    diag = exc.value.result.diagnostics
    unpinned = D * D - diag["4_refined_sculpt"]["rank"]
    assert unpinned > 0 and diag["5_span"]["rank_deficit"] == unpinned
    assert (f"phase 5: the constraints leave {unpinned} direction(s) of Θ unpinned; phase 6 refines from the "
            "min-norm point") in caplog.messages


def test_without_the_noise_floor_phase_6_tests_no_noise():
    seen = {}

    def stop(real, rec, *args, **kw):
        seen["config"] = args[4]
        raise KeyboardInterrupt

    with pytest.raises(LearnInterrupted):
        _run(LearnConfig(**SMALL | {"noise_floor": False}), fakes={"search_heads": stop})
    assert seen["config"].noise_floor is False and seen["config"].noise_z == LearnConfig().noise_z


def test_an_interrupt_in_a_rounds_span_names_phase_5():
    with pytest.raises(LearnInterrupted) as exc:
        _run(LearnConfig(**SMALL), fakes={"estimate_span": _interrupt_after_first})
    assert exc.value.result.diagnostics["interrupted"] == {"phase": "5_span"}


@pytest.mark.parametrize(("scale", "refused"), [(1.0, False), (1 - 1e-12, True)], ids=["at", "below"])
def test_a_sum_estimate_below_sum_w_min_is_refused(scale, refused):
    """Phase 1's ΣŴ counts as zero strictly below SUM_W_MIN (a norm equal to it goes on to phase 2)."""

    def tiny(real, rec, *args, **kw):
        p1 = real(*args, **kw)
        w = np.zeros_like(p1.w_sum)
        w[0, 0] = LEARN.SUM_W_MIN * scale  # a single entry: the Frobenius norm is its absolute value, exactly
        return dataclasses.replace(p1, w_sum=w)

    if refused:
        r = _run(LearnConfig(**SMALL), fakes={"crude_sum_w": tiny}).result
        assert r.status == "1_crude_sum" and "the estimate of ΣW_i is degenerate" in r.message
    else:
        with pytest.raises(LearnInterrupted) as exc:
            _run(LearnConfig(**SMALL), fakes={"crude_sum_w": tiny, "crude_sculpt": _interrupt})
        assert exc.value.result.diagnostics["interrupted"] == {"phase": "2_crude_sculpt"}


@pytest.mark.parametrize(("count", "stops"), [(D * D, False), (D * D - 1, True)], ids=["d^2", "d^2-1"])
def test_phase_4_needs_d_squared_constraints(count, stops):
    """Phase 4's hull needs d² constraints: one fewer stops the run, naming phase 4, the count and d²."""

    def cut(real, rec, *args, **kw):
        p4 = real(*args, **kw)
        assert p4.count > count
        return _first(p4, count)

    if stops:
        r = _run(LearnConfig(**SMALL), fakes={"refined_sculpt": cut}).result
        assert r.status == "4_refined_sculpt" and not r.success
        assert r.message.startswith(f"only {count} constraints from ") and f"at least d²={D * D} " in r.message
    else:
        with pytest.raises(LearnInterrupted) as exc:
            _run(LearnConfig(**SMALL), fakes={"refined_sculpt": cut, "estimate_span": _interrupt_after_first})
        assert exc.value.result.diagnostics["interrupted"] == {"phase": "5_span"}


def _interrupt_after_first(real, rec, *args, **kw):
    if len(rec.calls) > 1:  # the first call is phase 2's crude hull
        raise KeyboardInterrupt
    return real(*args, **kw)
