"""learn: the deciding rules of the run, each on a constructed case whose answer is known by hand.

Phase 0's refusals and budget choices (``_plan``), the verdict (``_verdict``), the gap clause (``_gap_note``), the
retry's note (``_tight_retry``), the data-driven switches (``_adaptive``) and how the run calls the decisions after
phase 6 (``_select_m``, ``_more_heads``, ``_drop_redundant``; their rules are in tests/learner/phases/test_select.py).
The phases themselves are replaced by recorders, so that each rule is tested on constructed inputs.
"""

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from learner import ArraySource, AttentionLayer, LayerOracle, random_layer, relative_error
from learner.metrics import truth_errors
from learner.parallel import Workers
from learner.phases import LearnConfig


def _module():
    return sys.modules["learner.learn"]  # the module; `learner.learn` is also the function


class _Refused(Exception):
    def __init__(self, status, message):
        super().__init__(status)
        self.status, self.message = status, message


def _done(status, message, layer=None, m_final=None, success=False, noise=None, expected=None):
    """A stand-in for the run's ``done``: the arguments it was given, as a dict."""
    return {"status": status, "message": message, "layer": layer, "m_final": m_final, "success": success,
            "noise": noise, "expected": expected}


class TestPlan:
    """``_plan`` (phase 0): the setting checked for the m given (or m = 1 when unknown), the plan's m, the refusals
    (an unsound setting, too little memory) and what is logged."""

    @staticmethod
    def _run(m, d, k, *, distribution="boolean", **config):
        def stop(status, message):
            raise _Refused(status, message)

        return SimpleNamespace(m=m, d=d, k=k, cfg=LearnConfig(**config),
                               source=SimpleNamespace(distribution=distribution), logit_scale=None, diag={}, plan_m=0,
                               stop=stop)

    @pytest.fixture(autouse=True)
    def plenty_of_memory(self, monkeypatch):
        monkeypatch.setattr(_module(), "physical_memory", lambda: 2**50)

    def test_gaussian_inputs_have_no_cube_condition(self):
        # (3, 8, 2): Boolean inputs fail the cube count (2^16/2·0.06² ≈ 118 < 128); Gaussian inputs only need
        # m(k−1) < d, so every m <= 7 is sound.
        run = self._run(3, 8, 2, distribution="gaussian")
        _module()._plan(run)
        diag = run.diag["0_setting"]
        assert (diag["distribution"], diag["sound"], diag["failed"]) == ("gaussian", True, [])
        assert diag["max_sound_m"] == 7 and diag["planned_m"] == 3 == run.plan_m

    def test_the_given_m_is_the_plan(self):
        # (8, 4) allows m = 2; the given m = 1 is the plan, not the largest sound m.
        run = self._run(1, 8, 4)
        _module()._plan(run)
        assert run.diag["0_setting"]["max_sound_m"] == 2
        assert run.plan_m == 1 == run.diag["0_setting"]["planned_m"]

    def test_unknown_m_where_only_one_head_is_sound_runs(self, caplog):
        # (d, k) = (3, 2): m = 1 has 2·1·2^6/(2·2!) = 32 >= 2·3² = 18 cube constraints, m = 2 only 32·0.06 ≈ 1.9:
        # the largest sound m is 1, so an unknown m is planned as 1 and the run is not refused.
        run = self._run(None, 3, 2)
        with caplog.at_level("INFO", logger="learner.learn"):
            _module()._plan(run)
        diag = run.diag["0_setting"]
        assert (diag["sound"], diag["failed"], diag["max_sound_m"], diag["planned_m"]) == (True, [], 1, 1)
        assert run.plan_m == 1
        assert caplog.messages[-1].startswith("learn: (m, d, k) = (unknown, at most 1, 3, 2), boolean inputs; "
                                              "sound up to m = 1; chosen from the setting: ")

    def test_allow_unsound_plans_the_configured_cap(self):
        run = self._run(None, 3, 2, allow_unsound=True, max_m=5)
        _module()._plan(run)
        assert run.plan_m == 5 == run.diag["0_setting"]["planned_m"]
        assert run.diag["0_setting"]["max_sound_m"] == 1

    def test_an_unsound_given_m_is_refused_with_the_settings_message(self, caplog):
        run = self._run(3, 8, 2)
        with caplog.at_level("INFO", logger="learner.learn"), pytest.raises(_Refused) as refused:
            _module()._plan(run)
        assert refused.value.status == "setting"
        message = refused.value.message
        assert message.startswith("(m, d, k) = (3, 8, 2) with boolean inputs is not sound for certification: "
                                  "cube_configurations: ")
        assert message.endswith("; this (d, k) allows at most m = 2. "
                                "Pass LearnConfig(allow_unsound=True) to run anyway.")
        logged = message[: -len(" Pass LearnConfig(allow_unsound=True) to run anyway.")]
        assert caplog.messages == [f"learn: {logged}"]

    def test_an_unknown_m_where_none_is_sound_is_refused(self):
        run = self._run(None, 8, 1)  # one token: no m is sound
        with pytest.raises(_Refused) as refused:
            _module()._plan(run)
        assert refused.value.status == "setting"
        assert refused.value.message.startswith("no number of heads is sound at (d, k) = (8, 1) with boolean "
                                                "inputs: (m, d, k) = (1, 8, 1)")

    def test_too_little_memory_is_refused_with_the_sizes(self, monkeypatch):
        # d = 100: 6·100² = 60,000 constraints of d² = 10,000 unknowns, three float64 copies: 3·8·60,000·10,000 bytes
        # = 13.4 GiB, against a machine of 8 GiB.
        need = 3 * 8 * 60_000 * 10_000
        assert need == 14_400_000_000
        monkeypatch.setattr(_module(), "physical_memory", lambda: 2**33)
        run = self._run(1, 100, 2, refined_constraints=6.0)
        with pytest.raises(_Refused) as refused:
            _module()._plan(run)
        assert refused.value.status == "setting"
        assert refused.value.message == (
            "d=100 needs more memory than this machine has: phase 5 alone holds 60,000 constraints of d²=10,000 "
            "unknowns, three copies (the matrix, its weighted copy, the SVD's factor), 13.4 GiB, against 8.0 GiB "
            "of RAM; the memory grows as d⁴.")

    @pytest.mark.parametrize("have", [14_400_000_000, None], ids=["exactly enough", "unknown"])
    def test_memory_exactly_enough_or_unknown_is_not_refused(self, monkeypatch, have):
        monkeypatch.setattr(_module(), "physical_memory", lambda: have)
        run = self._run(1, 100, 2, refined_constraints=6.0)
        _module()._plan(run)
        assert run.plan_m == 1

    def test_the_log_names_the_setting_and_the_choices(self, caplog):
        # resolve_config's rules at m = 2: refined_constraints 6.0 (m <= 3), gap_min 3.0 (m <= 4),
        # net_points_3d 13 (m <= 4), max_examples 10^9.
        run = self._run(2, 8, 4)
        with caplog.at_level("INFO", logger="learner.learn"):
            _module()._plan(run)
        assert caplog.messages == [
            "learn: (m, d, k) = (2, 8, 4), boolean inputs; sound up to m = 2; chosen from the setting: gap_min=3.0, "
            "max_examples=1000000000, net_points_3d=13, refined_constraints=6.0"]

    def test_the_log_says_when_nothing_was_chosen(self, caplog):
        run = self._run(2, 8, 4, refined_constraints=6.0, gap_min=3.0, net_points_3d=13, max_examples=10**6)
        with caplog.at_level("INFO", logger="learner.learn"):
            _module()._plan(run)
        assert run.diag["0_setting"]["chosen_from_setting"] == []
        assert caplog.messages[-1].endswith("; chosen from the setting: nothing")


class TestAdaptive:
    def test_the_switch_gives_the_settings_or_none(self):
        values = {"crude_se": 0.03, "first_batch": 700, "refine_se": 0.01, "hull_stability": 0.07}
        on, off = LearnConfig(adaptive=True, **values), LearnConfig(adaptive=False, **values)
        assert {name: on.if_adaptive(name) for name in values} == values
        assert {name: off.if_adaptive(name) for name in values} == dict.fromkeys(values)
        assert off.if_adaptive("batch") is None and on.if_adaptive("batch") == 100_000


class TestProductsThreads:
    """Phase 6's refinement products run on the run's BLAS threads (one when they are not set), or on every local
    worker's core when there are more workers (they are idle while this process refines); a Dask cluster's
    workers are on other machines and lend this process no core."""

    @staticmethod
    def _dask(workers):
        pool = Workers(scheduler="tcp://127.0.0.1:8786")  # not connected: the client is made at the first batch
        pool.workers = workers  # what the first batch counts on the cluster
        return pool

    @pytest.mark.parametrize(("blas", "pool", "threads"), [
        (None, Workers(None), 1),
        (3, Workers(None), 3),
        (1, Workers(2), 2),
        (None, Workers(2), 2),
        (3, Workers(2), 3),
        (1, _dask(3), 1),
        (None, _dask(3), 1),
    ], ids=["unset", "serial", "workers", "workers-unset", "more threads", "dask", "dask-unset"])
    def test_the_threads(self, blas, pool, threads):
        assert _module()._products_threads(blas, pool) == threads


class TestSearchPhaseThreads:
    """Phase 6 is handed the products' threads the run records (``execution["blas_threads"]["phase6_products"]``):
    two for ``blas_threads=2`` without workers, two for one thread beside two idle local workers."""

    @pytest.mark.parametrize(("blas", "workers"), [(2, None), (1, 2)])
    def test_the_threads_phase_6_gets(self, monkeypatch, blas, workers):
        module, seen = _module(), {}
        p6 = SimpleNamespace(search="vp", heldout_error=0.0, seconds=0.0)

        def search_heads(*args, **kw):
            seen.update(kw)
            return p6

        monkeypatch.setattr(module, "search_heads", search_heads)
        run = SimpleNamespace(cfg=LearnConfig(), source="source", truth=None, pool=Workers(workers), blas=blas,
                              backend="backend", phase="5_span", add_time=lambda name, seconds: None)
        hull = SimpleNamespace(theta_star="Θ*", directions="V", m=2)
        assert module._search_phase(run, hull, record=False) is p6
        assert seen["threads"] == 2


class TestDistinctInputs:
    """The distinct inputs a source can give: ``2^(kd)`` for exact labels on the Boolean cube up to 2^62; past
    it, and for noisy labels or Gaussian inputs, None."""

    @pytest.mark.parametrize(("k", "d", "options", "count"), [
        (2, 4, {}, 2**8),
        (2, 31, {}, 2**62),
        (3, 21, {}, None),  # kd = 63
        (7, 9, {}, None),  # kd = 63
        (2, 4, {"noise": 0.1}, None),
        (2, 4, {"distribution": "gaussian"}, None),
    ])
    def test_the_count(self, k, d, options, count):
        oracle = LayerOracle(random_layer(1, d, rng=0), k, rng=1, **options)
        assert _module()._distinct_inputs(SimpleNamespace(source=oracle, k=k, d=d)) == count

    def test_fixed_examples_have_no_count(self):
        X = np.ones((5, 2, 4))
        assert _module()._distinct_inputs(SimpleNamespace(source=ArraySource(X, X), k=2, d=4)) is None


class TestGapNoteRules:
    """``_gap_note`` beyond tests/learner/test_learn.py: m = 2 has a gap, too few ratios read as 0, and the log."""

    @staticmethod
    def _run(m):
        return SimpleNamespace(m=m, cfg=SimpleNamespace(gap_min=3.0), diag={"5_span": {}})

    def test_two_heads_read_the_first_ratio(self, caplog):
        run = self._run(2)
        with caplog.at_level("INFO", logger="learner.learn"):
            note = _module()._gap_note(run, SimpleNamespace(gap_ratios=np.array([1.2, 9.0])))
        assert note == ("; phase 5 showed no clear 1-dimensional hull (singular-value ratio 1.2 < gap_min=3.0): the "
                        "heads may not be distinct, or the constraints too noisy")
        assert run.diag["5_span"]["gap_resolved"] is False
        assert caplog.messages == ["phase 5: singular-value ratio 1.2 < gap_min=3; phase 6 searches the hull anyway"]

    def test_too_few_ratios_read_as_zero(self):
        # m = 3 needs ratio number 2; one ratio only: the gap counts as 0.
        run = self._run(3)
        note = _module()._gap_note(run, SimpleNamespace(gap_ratios=np.array([5.0])))
        assert "(singular-value ratio 0 < gap_min=3.0)" in note
        assert run.diag["5_span"]["gap_resolved"] is False


class TestTightRetryNote:
    def test_a_kept_retry_notes_its_own_gap(self, monkeypatch):
        """The retry's phase 5 replaces the first: the gap clause is the retry's (ratio 1.2 at m = 3)."""
        module = _module()
        first5 = SimpleNamespace(gap_ratios=np.array([5.0, 9.0]))
        tight5 = SimpleNamespace(gap_ratios=np.array([5.0, 1.2]))
        tight6 = SimpleNamespace(heldout_error=1e-12, summary=lambda: {"name": "tight6"})
        run = SimpleNamespace(cfg=LearnConfig(refined_tol=0.08, gap_min=3.0), m=3,
                              phases={"3_refine_sum": SimpleNamespace(w_sum="ΣŴ"), "5_span": first5,
                                      "6_search": SimpleNamespace(heldout_error=1e-6)},
                              diag={"4_refined_sculpt": {"rounds": [{}]}, "5_span": {}, "6_search": {}})

        def span_round(run_, r, p4):
            run_.phases["5_span"], run_.diag["5_span"] = tight5, {}
            return tight5

        monkeypatch.setattr(module, "_refined_sculpt_round", lambda run_, r, w_sum: "p4")
        monkeypatch.setattr(module, "_span_round", span_round)
        monkeypatch.setattr(module, "_search_phase", lambda run_, p5, record=True: tight6)
        p5, p6, note = module._tight_retry(run, first5, run.phases["6_search"], "")
        assert (p5, p6) == (tight5, tight6)
        assert note.startswith("; phase 5 showed no clear 2-dimensional hull (singular-value ratio 1.2 < gap_min=3.0)")
        assert run.diag["5_span"]["gap_resolved"] is False


class TestVerdict:
    """``_verdict``: each outcome on a constructed phase 6 (the layer's conditions, the probe for more heads and
    the merge of redundant heads replaced by stand-ins)."""

    FLOOR = SimpleNamespace(sigma=0.003, expected_param_error=0.02, relative_noise=1e-5, residuals=1500,
                            describe=lambda: "σ̂ = 0.003 (test)", test_clause=lambda: "the test clause")
    ROWS = [
        SimpleNamespace(name="theta_incoherence", value=0.9, worst="heads 0 and 1", relation="<=", threshold=0.5,
                        ok=False),
        SimpleNamespace(name="stable_rank", value=3.0, worst="head 0", relation=">=", threshold=1.5, ok=True),
        SimpleNamespace(name="lattice_distance", value=0.2, worst="head 1", relation=">=", threshold=0.1, ok=None),
        SimpleNamespace(name="w_incoherence", value=0.95, worst="heads 0 and 1", relation="<=", threshold=0.5,
                        ok=False),
    ]

    @pytest.fixture
    def calls(self, monkeypatch):
        """Stand-ins: the conditions hold unless ``calls["violated"]``; the probe says ``calls["more"]``; the merge
        returns ``calls["reduced"]``. Each records its calls."""
        module = _module()
        calls = {"violated": False, "more": "", "reduced": None, "more_calls": [], "drop_calls": []}

        def assumptions(layer):
            if calls["violated"]:
                return SimpleNamespace(ok=False, failed=("theta_incoherence", "w_incoherence"), rows=self.ROWS)
            return SimpleNamespace(ok=True, failed=(), rows=[self.ROWS[1]])

        def more_heads(run, p6):
            calls["more_calls"].append((run, p6))
            return calls["more"]

        def drop_redundant(run, layer):
            calls["drop_calls"].append((run, layer))
            return calls["reduced"]

        monkeypatch.setattr(module, "assumptions", assumptions)
        monkeypatch.setattr(module, "_more_heads", more_heads)
        monkeypatch.setattr(module, "_drop_redundant", drop_redundant)
        return calls

    @staticmethod
    def _run(m):
        return SimpleNamespace(m=m, cfg=SimpleNamespace(success_tol=1e-10), diag={}, done=_done)

    @staticmethod
    def _p6(error, floor=None, test=True):
        noise_test = SimpleNamespace(describe=lambda: "structure p = 0.001") if test else None
        return SimpleNamespace(heldout_error=error, noise=floor, residual_sigma=0.7, noise_test=noise_test,
                               layer="L6", refit_examples=2000)

    def test_more_heads_ends_the_failure_message(self, calls):
        calls["more"] = "; MORE"
        run, p6 = self._run(2), self._p6(0.5)
        out = _module()._verdict(run, SimpleNamespace(m=2), p6, "; UNRES")
        assert out == {"status": "6_search", "message": "held-out relative error 0.5 > success_tol=1e-10; the "
                       "residual is not label noise alone (structure p = 0.001); MORE.", "layer": "L6",
                       "m_final": 2, "success": False, "noise": 0.7, "expected": None}
        assert calls["more_calls"] == [(run, p6)]

    def test_a_miss_without_more_heads_names_the_search(self, calls):
        out = _module()._verdict(self._run(2), SimpleNamespace(m=2), self._p6(0.5), "; UNRES")
        assert out == {"status": "6_search", "message": "held-out relative error 0.5 > success_tol=1e-10; the "
                       "residual is not label noise alone (structure p = 0.001): the search or the refinement did "
                       "not reach the planted layer; UNRES.", "layer": "L6", "m_final": 2, "success": False,
                       "noise": 0.7, "expected": None}

    def test_an_error_at_success_tol_is_a_success(self, calls):
        run = self._run(2)
        out = _module()._verdict(run, SimpleNamespace(m=2), self._p6(1e-10), "")
        assert out == {"status": "6_search", "message": "held-out relative error 1e-10 <= 1e-10", "layer": "L6",
                       "m_final": 2, "success": True, "noise": 0.7, "expected": None}
        assert calls["more_calls"] == [] and calls["drop_calls"] == []  # the conditions hold: nothing to merge
        assert run.diag["assumptions"] == {"failed": []}

    @pytest.mark.parametrize(("heads", "text"), [(1, "1 head"), (2, "2 heads")])
    def test_redundant_heads_merged_are_a_success(self, calls, heads, text):
        calls["violated"] = True
        reduced = SimpleNamespace(m=heads)
        calls["reduced"] = (reduced, 2e-11, "head 2 is empty (NOTE)")
        run, p6 = self._run(3), self._p6(1e-12)
        out = _module()._verdict(run, SimpleNamespace(m=3), p6, "")
        assert out == {"status": "6_search", "message": f"m = 3 was given, but the data show {text}: head 2 is empty "
                       f"(NOTE); the {heads}-head layer refitted on fresh examples has held-out relative error 2e-11 "
                       "and meets the paper's conditions.", "layer": reduced, "m_final": heads, "success": True,
                       "noise": 0.7, "expected": None}
        assert calls["drop_calls"] == [(run, "L6")]
        assert run.diag["assumptions"] == {"failed": ["theta_incoherence", "w_incoherence"]}

    @pytest.mark.parametrize("m", [None, 3], ids=["unknown m", "no merge"])
    def test_violated_conditions_name_the_failed_rows(self, calls, m):
        calls["violated"] = True
        calls["reduced"] = ("must not be used", 0.0, "") if m is None else None
        run = self._run(m)
        out = _module()._verdict(run, SimpleNamespace(m=2), self._p6(1e-12), "")
        assert out == {"status": "assumptions", "message": "F is matched (held-out relative error 1e-12) but the "
                       "learned layer violates the paper's conditions, so its parameters are not identified: "
                       "theta_incoherence = 0.9 (heads 0 and 1, needs <= 0.5); w_incoherence = 0.95 (heads 0 and 1, "
                       "needs <= 0.5)", "layer": "L6", "m_final": 2, "success": False, "noise": 0.7, "expected": None}
        assert len(calls["drop_calls"]) == (m is not None)

    def test_an_exact_fit_with_label_noise_says_so(self, calls):
        out = _module()._verdict(self._run(2), SimpleNamespace(m=2), self._p6(1e-12, self.FLOOR), "")
        assert out == {"status": "6_search", "message": "held-out relative error 1e-12 <= 1e-10; label noise "
                       "σ̂ = 0.003 (test)", "layer": "L6", "m_final": 2, "success": True, "noise": 0.003,
                       "expected": 0.02}

    def test_noise_at_float64_rounding_is_not_named(self, calls):
        from learner.phases import NOISE_MIN

        floor = SimpleNamespace(**{**vars(self.FLOOR), "relative_noise": NOISE_MIN})
        out = _module()._verdict(self._run(2), SimpleNamespace(m=2), self._p6(1e-12, floor), "")
        assert out["message"] == "held-out relative error 1e-12 <= 1e-10" and out["success"] is True

    def test_a_fit_to_the_noise_floor_is_a_success(self, calls):
        out = _module()._verdict(self._run(2), SimpleNamespace(m=2), self._p6(1e-3, self.FLOOR), "")
        assert out == {"status": "6_search", "message": "fit to the noise floor σ̂ = 0.003, expected parameter error "
                       "0.02: held-out relative error 0.001 > success_tol=1e-10, all of it label noise (the test "
                       "clause; σ̂ from 1,500 residuals of 2,000 examples).", "layer": "L6", "m_final": 2,
                       "success": True, "noise": 0.003, "expected": 0.02}
        assert calls["more_calls"] == []


class TestTruthErrors:
    """The errors against the truth are measured on fresh inputs of the source's own distribution (boolean where
    the source names none), with the parameter error only where the numbers of heads agree."""

    def test_fresh_inputs_follow_the_source(self):
        truth = random_layer(2, 4, rng=0)
        layer = AttentionLayer(truth.thetas * 1.1, truth.ws)
        errors = truth_errors(truth, layer, 3, LayerOracle(truth, 3, distribution="gaussian", rng=1),
                                        rng=5)
        gaussian = relative_error(truth, layer, 3, n_samples=8192, distribution="gaussian", rng=5)
        boolean = relative_error(truth, layer, 3, n_samples=8192, distribution="boolean", rng=5)
        assert errors["relative_error"] == gaussian != boolean
        # A source with no distribution at all (not even the attribute) is on the cube.
        bare = truth_errors(truth, layer, 3, object(), rng=5)
        assert bare["relative_error"] == boolean and bare["param_error"] == errors["param_error"] > 0
        fewer = AttentionLayer(truth.thetas[:1], truth.ws[:1])
        assert set(truth_errors(truth, fewer, 3, object(), rng=5)) == {"relative_error"}
        assert truth_errors(None, layer, 3, object(), rng=5) == {}


class TestSelectionWiring:
    """The run's use of :mod:`learner.phases.select` (its rules are tested in tests/learner/phases/test_select.py):
    what each call is given from the run, and where its result and record go."""

    def test_select_m_gets_the_runs_hulls_and_phase_6_and_records_the_kept_m(self, monkeypatch):
        module, seen = _module(), {}
        span, p6 = SimpleNamespace(summary=lambda: {"span": 3}), SimpleNamespace(summary=lambda: {"p6": 3})

        def select_m(p4, p5, search, config, **kw):
            seen.update(p4=p4, p5=p5, config=config, kw=kw, probe=search("hull"))
            return span, p6, ["tried"]

        monkeypatch.setattr(module, "select_m", select_m)
        monkeypatch.setattr(module, "_search_phase", lambda run_, hull, record=True: (run_, hull, record))
        cfg = SimpleNamespace(success_tol=1e-10, gap_min=3.0, hull_weighting="irls")
        run = SimpleNamespace(plan_m=4, cfg=cfg, truth="T", phases={"4_refined_sculpt": "p4"},
                              diag={"5_span": {"round": 2}})
        p5 = SimpleNamespace(m=2)
        assert module._select_m(run, p5) == (span, p6)
        assert seen == {"p4": "p4", "p5": p5, "probe": (run, "hull", True), "config": cfg,
                        "kw": {"plan_m": 4, "truth": "T"}}
        assert run.phases == {"4_refined_sculpt": "p4", "5_span": span, "6_search": p6}
        assert run.diag == {"5_span": {"span": 3, "round": 2, "gap_m": 2, "model_selection": ["tried"]},
                            "6_search": {"p6": 3}}
        run.diag = {"5_span": {}}
        module._select_m(run, p5)
        assert run.diag["5_span"]["round"] == 0

    @pytest.mark.parametrize("probe", [None, {"m": 3}], ids=["no probe", "probe"])
    def test_more_heads_probes_without_recording_phase_6(self, monkeypatch, probe):
        module, seen = _module(), {}

        def probe_more_heads(p4, p6, search, config, **kw):
            seen.update(p4=p4, p6=p6, config=config, kw=kw, search=search("hull"))
            return probe, "clause"

        monkeypatch.setattr(module, "probe_more_heads", probe_more_heads)
        monkeypatch.setattr(module, "_search_phase", lambda run_, hull, record=True: (run_, hull, record))
        cfg = SimpleNamespace(max_m=5, gap_min=3.0, hull_weighting="none", success_tol=1e-9)
        run = SimpleNamespace(m=2, cfg=cfg, phases={"4_refined_sculpt": "p4"}, diag={"6_search": {}})
        assert module._more_heads(run, "p6") == "clause"
        assert seen == {"p4": "p4", "p6": "p6", "search": (run, "hull", False), "config": cfg, "kw": {"m": 2}}
        assert run.diag["6_search"] == ({} if probe is None else {"more_heads_probe": probe})

    @pytest.mark.parametrize("record", [None, {"heads_kept": 1}], ids=["nothing redundant", "record"])
    def test_drop_redundant_gets_the_runs_budgets_and_records(self, monkeypatch, record):
        module, seen = _module(), {}

        def drop_redundant(layer, source, config, **kw):
            seen.update(layer=layer, source=source, config=config, kw=kw)
            return "kept", record

        monkeypatch.setattr(module, "drop_redundant", drop_redundant)
        cfg = SimpleNamespace(n_search=50, max_nfev=17, search_memory=12345, success_tol=1e-10)
        run = SimpleNamespace(cfg=cfg, source="source", diag={})
        assert module._drop_redundant(run, "layer") == "kept"
        assert seen == {"layer": "layer", "source": "source", "config": cfg, "kw": {}}
        assert run.diag == ({} if record is None else {"redundant_heads": record})

    def test_fits_is_the_floor_rule_at_the_runs_tolerance(self):
        run = SimpleNamespace(cfg=SimpleNamespace(success_tol=1e-10))
        assert _module()._fits(run, SimpleNamespace(heldout_error=1e-10, noise=None)) is True
        assert _module()._fits(run, SimpleNamespace(heldout_error=2e-10, noise=None)) is False
