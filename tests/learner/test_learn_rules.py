"""learn: the deciding rules of the run, each on a constructed case whose answer is known by hand.

Phase 0's refusals and budget choices (``_plan``), the verdict (``_verdict``, ``_fits``), the choice of m when it is
unknown (``_select_m``), the probe for more heads (``_more_heads``), the gap clause (``_gap_note``), the merge of
redundant heads (``_drop_redundant``), the retry's note (``_tight_retry``) and the data-driven switches
(``_adaptive``). The phases themselves are replaced by recorders, so that each rule is tested on constructed inputs.
"""

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from learner import AttentionLayer, LayerOracle, random_layer, relative_error
from learner.metrics import truth_errors
from learner.phases import HullUndetermined, LearnConfig


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
        assert _module()._adaptive(LearnConfig(adaptive=True, **values)) == values
        assert _module()._adaptive(LearnConfig(adaptive=False, **values)) == dict.fromkeys(values)


class TestFits:
    """``_fits``: held-out error at most success_tol, or a noise floor was found."""

    @pytest.mark.parametrize(("error", "noise", "fits"), [(1e-10, None, True), (2e-10, None, False),
                                                          (2e-10, "floor", True), (0.5, "floor", True)],
                             ids=["at tol", "above", "floor", "floor far above"])
    def test_rule(self, error, noise, fits):
        run = SimpleNamespace(cfg=SimpleNamespace(success_tol=1e-10))
        assert _module()._fits(run, SimpleNamespace(heldout_error=error, noise=noise)) is fits


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


class TestMoreHeads:
    """``_more_heads``: with m given and a residual that shows structure (p < STRUCTURE_ALPHA), phase 6 is probed
    with m + 1 heads (at most max_m) on phase 4's constraints."""

    @pytest.fixture
    def calls(self, monkeypatch):
        module = _module()
        calls = {"span": [], "search": [], "probe_error": 1e-11, "undetermined": False}

        def estimate_span(*args, **kw):
            calls["span"].append((args, kw))
            if calls["undetermined"]:
                raise HullUndetermined("rank 3")
            return "span"

        def search_phase(run, p5, record=True):
            calls["search"].append((run, p5, record))
            return SimpleNamespace(heldout_error=calls["probe_error"], noise=None)

        monkeypatch.setattr(module, "estimate_span", estimate_span)
        monkeypatch.setattr(module, "_search_phase", search_phase)
        return calls

    @staticmethod
    def _run(m=2, max_m=3):
        cfg = SimpleNamespace(max_m=max_m, gap_min=3.0, hull_weighting="precision", success_tol=1e-10)
        return SimpleNamespace(m=m, cfg=cfg, phases={"4_refined_sculpt": "p4"}, diag={"6_search": {}})

    @staticmethod
    def _p6(p):
        return SimpleNamespace(noise_test=SimpleNamespace(structure_p=p))

    def test_a_probe_that_reaches_the_floor_is_named(self, calls):
        run = self._run()  # m + 1 = 3 = max_m: allowed
        note = _module()._more_heads(run, self._p6(0.0))
        assert note == ("; the residual shows more heads: with m = 3 phase 6 reaches held-out relative error 1e-11 "
                        "on the same constraints (give m = 3, or no m)")
        assert calls["span"] == [(("p4",), {"m": 3, "gap_min": 3.0, "max_m": 3, "weighting": "precision"})]
        assert calls["search"] == [(run, "span", False)]
        assert run.diag["6_search"]["more_heads_probe"] == {"m": 3, "heldout_relative_error": 1e-11,
                                                           "reaches_floor": True}

    def test_a_probe_that_misses_adds_nothing(self, calls):
        calls["probe_error"] = 0.5
        run = self._run()
        assert _module()._more_heads(run, self._p6(0.0)) == ""
        assert run.diag["6_search"]["more_heads_probe"] == {"m": 3, "heldout_relative_error": 0.5,
                                                           "reaches_floor": False}

    def test_an_undetermined_hull_adds_nothing(self, calls):
        calls["undetermined"] = True
        run = self._run()
        assert _module()._more_heads(run, self._p6(0.0)) == ""
        assert calls["search"] == [] and run.diag["6_search"] == {}

    @pytest.mark.parametrize(("m", "max_m", "p"), [(None, 3, 0.0), (2, 3, "no test"), (2, 3, "alpha"), (3, 3, 0.0)],
                             ids=["m unknown", "no noise test", "p at alpha", "m + 1 above max_m"])
    def test_no_probe(self, calls, m, max_m, p):
        from learner.phases import STRUCTURE_ALPHA

        p6 = (SimpleNamespace(noise_test=None) if p == "no test"
              else self._p6(STRUCTURE_ALPHA if p == "alpha" else p))
        run = self._run(m, max_m)
        assert _module()._more_heads(run, p6) == ""
        assert calls["span"] == [] and calls["search"] == [] and run.diag["6_search"] == {}


class TestSelectM:
    """``_select_m``: the candidates (1, the gap rule's m, every m <= plan_m whose ratio is at least
    CANDIDATE_GAP = 1.5), tried smallest first until one is kept; else the gap rule's m."""

    @pytest.fixture
    def world(self, monkeypatch):
        """Phase 6 stand-in: the held-out error of each m in ``world["errors"]`` (an m in ``world["floor"]`` has a
        noise floor); the conditions fail for the m's in ``world["violates"]``; the hull of the m's in
        ``world["undetermined"]`` is undetermined."""
        module = _module()
        world = {"errors": {}, "floor": set(), "violates": set(), "undetermined": set(), "span": [], "search": []}

        def estimate_span(p4, **kw):
            world["span"].append((p4, kw))
            if kw.get("m") in world["undetermined"]:
                raise HullUndetermined("rank 3")
            m = kw.get("m")
            return SimpleNamespace(m=m, summary=lambda: {"span": m})

        def search_phase(run, span, record=True):
            world["search"].append(span)
            m = span.m
            return SimpleNamespace(heldout_error=world["errors"][m], noise="floor" if m in world["floor"] else None,
                                   layer=f"layer{m}", summary=lambda: {"p6": m})

        def assumptions(layer):
            bad = int(layer[5:]) in world["violates"]
            return SimpleNamespace(ok=not bad, failed=("theta_incoherence", "w_incoherence") if bad else ())

        monkeypatch.setattr(module, "estimate_span", estimate_span)
        monkeypatch.setattr(module, "_search_phase", search_phase)
        monkeypatch.setattr(module, "assumptions", assumptions)
        return world

    @staticmethod
    def _run(plan_m, diag5):
        cfg = SimpleNamespace(gap_min=3.0, hull_weighting="precision", success_tol=1e-10)
        return SimpleNamespace(plan_m=plan_m, cfg=cfg, truth="T", phases={"4_refined_sculpt": "p4"},
                               diag={"5_span": diag5})

    @staticmethod
    def _p5(m, ratios):
        return SimpleNamespace(m=m, gap_ratios=np.array(ratios), summary=lambda: {"span": "gap rule"})

    @staticmethod
    def _missed(m, error):
        return {"m": m, "heldout_relative_error": error, "verdict": "does not reach the floor"}

    def test_none_kept_leaves_the_gap_rules_m(self, world, caplog):
        # Ratios 1.5 (m = 2: at CANDIDATE_GAP), 1.0 (m = 3: below), 2.0 (m = 4), 1.6 (m = 5, beyond plan_m = 4):
        # the candidates are 1, 2 and 4. None reaches the floor: the gap rule's m = 1 is kept, though m = 2 missed
        # by less.
        world["errors"] = {1: 0.3, 2: 0.1, 4: 0.2}
        run, p5 = self._run(4, {"round": 2}), self._p5(1, [1.5, 1.0, 2.0, 1.6, 1.0])
        with caplog.at_level("INFO", logger="learner.learn"):
            span, p6 = _module()._select_m(run, p5)
        tried = [self._missed(1, 0.3), self._missed(2, 0.1), self._missed(4, 0.2)]
        assert span is p5 and p6.layer == "layer1"
        assert run.phases["5_span"] is p5 and run.phases["6_search"] is p6
        assert run.diag["5_span"] == {"span": "gap rule", "round": 2, "gap_m": 1, "model_selection": tried}
        assert run.diag["6_search"] == {"p6": 1}
        # The gap rule's m uses phase 5's own hull; the others are spanned from phase 4's constraints.
        kw = {"gap_min": 3.0, "max_m": 4, "weighting": "precision", "truth": "T"}
        assert world["span"] == [("p4", {"m": 2, **kw}), ("p4", {"m": 4, **kw})]
        assert world["search"][0] is p5 and [s.m for s in world["search"]] == [1, 2, 4]
        assert caplog.messages == ["unknown m: m = 1, held-out relative error 0.3: does not reach the floor",
                                   "unknown m: m = 2, held-out relative error 0.1: does not reach the floor",
                                   "unknown m: m = 4, held-out relative error 0.2: does not reach the floor"]

    def test_a_ratio_past_the_last_is_not_read(self, world):
        # Two ratios: m = 3 reads the second (2.0, a candidate); m = 4 would need a third. No round recorded: 0.
        world["errors"] = {1: 0.3, 3: 0.2}
        run = self._run(4, {})
        _module()._select_m(run, self._p5(1, [1.0, 2.0]))
        assert run.diag["5_span"]["model_selection"] == [self._missed(1, 0.3), self._missed(3, 0.2)]
        assert run.diag["5_span"]["round"] == 0

    def test_the_first_kept_m_ends_the_search(self, world):
        # Candidates 1..5 (ratios 1.5, 1.6, 2.0 for m = 2, 3, 4; the gap rule says 5): m = 1 misses, m = 2's hull is
        # undetermined, m = 3 reaches the floor but violates the conditions, m = 4 reaches the noise floor and is
        # kept; m = 5 is never tried.
        world["errors"] = {1: 0.2, 3: 1e-12, 4: 1e-3, 5: 1e-13}
        world["floor"], world["violates"], world["undetermined"] = {4}, {3}, {2}
        run = self._run(5, {"round": 1})
        span, p6 = _module()._select_m(run, self._p5(5, [1.5, 1.6, 2.0, 1.0]))
        assert span.m == 4 and p6.layer == "layer4"
        assert run.diag["5_span"]["model_selection"] == [
            self._missed(1, 0.2),
            {"m": 2, "verdict": "hull undetermined: rank 3"},
            {"m": 3, "heldout_relative_error": 1e-12,
             "verdict": "reaches the floor but violates the conditions (theta_incoherence, w_incoherence)"},
            {"m": 4, "heldout_relative_error": 1e-3, "verdict": "kept"}]
        assert run.diag["5_span"]["gap_m"] == 5 and run.diag["5_span"]["span"] == 4
        assert run.diag["6_search"] == {"p6": 4}
        assert [s.m for s in world["search"]] == [1, 3, 4]


class TestDropRedundantRules:
    """``_drop_redundant``'s thresholds on constructed heads: a head is empty at ‖W‖_F <= 1e-6 of the largest, two
    heads are one at ‖ΔΘ‖_F <= 1e-3 ‖Θ‖_F (the norm floored at 1e-300 only); the merge is kept at held-out error
    <= success_tol or <= 2× the given fit's. The refit, the draws and the scores are stand-ins."""

    @pytest.fixture
    def calls(self, monkeypatch):
        import learner.oracle as oracle
        import learner.phases.search as search

        calls = {"draws": [], "refit": [], "errors": (1e-12, 1e-12)}
        reduced = SimpleNamespace(m=None, name="reduced")

        def draw_checked(source, n):
            calls["draws"].append((source, n))
            return f"X{len(calls['draws'])}", f"Y{len(calls['draws'])}"

        def refit(start, X, Y, **kw):
            calls["refit"].append((np.array(start), X, Y, kw))
            return reduced

        def heldout(layer, X, Y):
            assert (X, Y) == ("X2", "Y2")  # scored on the second, fresh draw
            return calls["errors"][0] if layer is reduced else calls["errors"][1]

        monkeypatch.setattr(oracle, "draw_checked", draw_checked)
        monkeypatch.setattr(search, "refit", refit)
        monkeypatch.setattr(search, "heldout_relative_error", heldout)
        monkeypatch.setattr(_module(), "assumptions", lambda layer: SimpleNamespace(ok=True))
        calls["reduced"] = reduced
        return calls

    @staticmethod
    def _run():
        cfg = SimpleNamespace(n_search=50, max_nfev=17, search_memory=12345, success_tol=1e-10)
        return SimpleNamespace(cfg=cfg, source="source", diag={})

    @staticmethod
    def _layer(thetas, ws):
        thetas, ws = np.array(thetas, dtype=float), np.array(ws, dtype=float)
        return SimpleNamespace(thetas=thetas, ws=ws, m=len(thetas))

    def test_an_empty_head_at_the_threshold_is_dropped(self, calls):
        # ‖W‖_F = 2, 2e-6 (exactly 1e-6 of the largest), 1: head 1 is empty; heads 0 and 2 are refitted. The
        # merge's error equals success_tol exactly and the given fit's is 0: kept by the success_tol rule.
        t = [[[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]]]
        w = [[[2.0, 0.0], [0.0, 0.0]], [[2e-6, 0.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]]]
        calls["errors"] = (1e-10, 0.0)
        run = self._run()
        out = _module()._drop_redundant(run, self._layer(t, w))
        assert out == (calls["reduced"], 1e-10, "head 1 is empty (‖W‖_F = 2e-06)")
        assert calls["draws"] == [("source", 50), ("source", 50)]
        (start, X, Y, kw), = calls["refit"]
        np.testing.assert_array_equal(start, np.array([t[0], t[2]]))
        assert (X, Y, kw) == ("X1", "Y1", {"max_iter": 17, "max_bytes": 12345})
        assert run.diag["redundant_heads"] == {"notes": ["head 1 is empty (‖W‖_F = 2e-06)"], "heads_kept": 2,
                                               "heldout_relative_error": 1e-10,
                                               "given_m_heldout_relative_error": 0.0}

    def test_heads_at_the_duplicate_threshold_are_merged(self, calls):
        # ‖Θ_1‖_F = 1000 and ‖Θ_1 − Θ_0‖_F = 1 = 1e-3·1000: one head, the mean Θ. The merge's error is exactly
        # twice the given fit's (both above success_tol): kept.
        t = [[[1000.0, 1.0], [0.0, 0.0]], [[1000.0, 0.0], [0.0, 0.0]]]
        w = [[[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]]]
        calls["errors"] = (2 * 3e-6, 3e-6)
        out = _module()._drop_redundant(self._run(), self._layer(t, w))
        assert out == (calls["reduced"], 6e-6, "head 1 duplicates head 0 (‖ΔΘ‖/‖Θ‖ = 0.001; merged)")
        np.testing.assert_array_equal(calls["refit"][0][0], [[[1000.0, 0.5], [0.0, 0.0]]])

    def test_small_distinct_heads_are_not_merged(self, calls):
        # ‖Θ‖_F ≈ 0.01 and ‖ΔΘ‖_F = 5e-4: 5 % apart, not duplicates (the relative tolerance is not floored at 1).
        t = [[[0.01, 0.0], [0.0, 0.0]], [[0.01, 5e-4], [0.0, 0.0]]]
        w = [[[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]]]
        run = self._run()
        assert _module()._drop_redundant(run, self._layer(t, w)) is None
        assert calls["refit"] == [] and run.diag == {}


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
