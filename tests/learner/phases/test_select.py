"""After phase 6 (:mod:`learner.phases.select`): the choice of m when it is unknown, the probe for more heads and the
merge of redundant heads, each rule on constructed hulls and fits whose answer is known by hand. Phase 6, the hull
estimate, the refit and the conditions are replaced by recorders."""

from types import SimpleNamespace

import numpy as np
import pytest

from learner import LearnConfig
from learner.phases import HullUndetermined, resolve_config, select


class TestReachesFloor:
    """``reaches_floor``: held-out error at most success_tol, or a noise floor was found."""

    @pytest.mark.parametrize(("error", "noise", "fits"), [(1e-10, None, True), (2e-10, None, False),
                                                          (2e-10, "floor", True), (0.5, "floor", True)],
                             ids=["at tol", "above", "floor", "floor far above"])
    def test_rule(self, error, noise, fits):
        assert select.reaches_floor(SimpleNamespace(heldout_error=error, noise=noise), 1e-10) is fits



class TestMoreHeads:
    """``probe_more_heads``: with m given and a residual that shows structure (p < STRUCTURE_ALPHA), phase 6 is probed
    with m + 1 heads (at most the config's max_m) on phase 4's constraints, the hull spanned with the config."""

    @pytest.fixture
    def calls(self, monkeypatch):
        calls = {"span": [], "search": [], "probe_error": 1e-11, "undetermined": False}

        def estimate_span(*args, **kw):
            calls["span"].append((args, kw))
            if calls["undetermined"]:
                raise HullUndetermined("rank 3")
            return "span"

        def search(span):
            calls["search"].append(span)
            return SimpleNamespace(heldout_error=calls["probe_error"], noise=None)

        monkeypatch.setattr(select, "estimate_span", estimate_span)
        calls["config"] = lambda max_m=3, success_tol=1e-10: LearnConfig(
            max_m=max_m, success_tol=success_tol, gap_min=3.0, hull_weighting="precision")
        calls["probe"] = lambda p6, m=2, max_m=3, success_tol=1e-10: select.probe_more_heads(
            "p4", p6, search, calls["config"](max_m, success_tol), m=m)
        return calls

    @staticmethod
    def _p6(p):
        return SimpleNamespace(noise_test=SimpleNamespace(structure_p=p))

    def test_a_probe_that_reaches_the_floor_is_named(self, calls):
        probe, note = calls["probe"](self._p6(0.0))  # m + 1 = 3 = max_m: allowed
        assert note == ("; the residual shows more heads: with m = 3 phase 6 reaches held-out relative error 1e-11 "
                        "on the same constraints (give m = 3, or no m)")
        # The hull of m + 1 heads is spanned with the config as given (its gap_min, hull_weighting and max_m).
        assert calls["span"] == [(("p4", calls["config"]()), {"m": 3})]
        assert calls["search"] == ["span"]
        assert probe == {"m": 3, "heldout_relative_error": 1e-11, "reaches_floor": True}

    def test_a_probe_that_misses_adds_nothing(self, calls):
        calls["probe_error"] = 0.5
        assert calls["probe"](self._p6(0.0)) == ({"m": 3, "heldout_relative_error": 0.5, "reaches_floor": False}, "")

    def test_the_floor_is_the_configs_success_tol(self, calls):
        # The probe's 1e-11 reaches the floor at success_tol = 1e-10 (above), not at 1e-12.
        assert calls["probe"](self._p6(0.0), success_tol=1e-12) == (
            {"m": 3, "heldout_relative_error": 1e-11, "reaches_floor": False}, "")

    def test_an_undetermined_hull_adds_nothing(self, calls):
        calls["undetermined"] = True
        assert calls["probe"](self._p6(0.0)) == (None, "")
        assert calls["search"] == []

    @pytest.mark.parametrize(("m", "max_m", "p"), [(None, 3, 0.0), (2, 3, "no test"), (2, 3, "alpha"), (3, 3, 0.0)],
                             ids=["m unknown", "no noise test", "p at alpha", "m + 1 above max_m"])
    def test_no_probe(self, calls, m, max_m, p):
        from learner.phases import STRUCTURE_ALPHA

        p6 = (SimpleNamespace(noise_test=None) if p == "no test"
              else self._p6(STRUCTURE_ALPHA if p == "alpha" else p))
        assert calls["probe"](p6, m, max_m) == (None, "")
        assert calls["span"] == [] and calls["search"] == []



class TestSelectM:
    """``select_m``: the candidates (1, the gap rule's m, every m <= plan_m whose ratio is at least
    CANDIDATE_GAP = 1.5), tried smallest first until one is kept; else the gap rule's m."""

    @pytest.fixture
    def world(self, monkeypatch):
        """Phase 6 stand-in: the held-out error of each m in ``world["errors"]`` (an m in ``world["floor"]`` has a
        noise floor); the conditions fail for the m's in ``world["violates"]``; the hull of the m's in
        ``world["undetermined"]`` is undetermined."""
        world = {"errors": {}, "floor": set(), "violates": set(), "undetermined": set(), "span": [], "search": []}

        def estimate_span(p4, cfg, **kw):
            world["span"].append((p4, cfg, kw))
            if kw.get("m") in world["undetermined"]:
                raise HullUndetermined("rank 3")
            m = kw.get("m")
            return SimpleNamespace(m=m, summary=lambda: {"span": m})

        def search(span):
            world["search"].append(span)
            m = span.m
            return SimpleNamespace(heldout_error=world["errors"][m], noise="floor" if m in world["floor"] else None,
                                   layer=f"layer{m}", summary=lambda: {"p6": m})

        def assumptions(layer):
            bad = int(layer[5:]) in world["violates"]
            return SimpleNamespace(ok=not bad, failed=("theta_incoherence", "w_incoherence") if bad else ())

        monkeypatch.setattr(select, "estimate_span", estimate_span)
        monkeypatch.setattr(select, "assumptions", assumptions)
        world["config"] = LearnConfig(success_tol=1e-10, gap_min=3.0, hull_weighting="precision")
        world["select"] = lambda p5, plan_m, config=world["config"]: select.select_m("p4", p5, search, config,
                                                                                    plan_m=plan_m, truth="T")
        return world

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
        p5 = self._p5(1, [1.5, 1.0, 2.0, 1.6, 1.0])
        assert select.candidate_ms(p5.gap_ratios, 1, 4) == [1, 2, 4]
        with caplog.at_level("INFO", logger="learner.phases.select"):
            span, p6, tried = world["select"](p5, 4)
        assert tried == [self._missed(1, 0.3), self._missed(2, 0.1), self._missed(4, 0.2)]
        assert span is p5 and p6.layer == "layer1"
        # The gap rule's m uses phase 5's own hull; the others are spanned from phase 4's constraints, with the
        # config resolved for the m planned (its gap_min and hull_weighting as given).
        cfg, _ = resolve_config(world["config"], 4)
        assert (cfg.gap_min, cfg.hull_weighting) == (3.0, "precision")
        kw = {"plan_m": 4, "truth": "T"}
        assert world["span"] == [("p4", cfg, {"m": 2, **kw}), ("p4", cfg, {"m": 4, **kw})]
        assert world["search"][0] is p5 and [s.m for s in world["search"]] == [1, 2, 4]
        assert caplog.messages == ["unknown m: m = 1, held-out relative error 0.3: does not reach the floor",
                                   "unknown m: m = 2, held-out relative error 0.1: does not reach the floor",
                                   "unknown m: m = 4, held-out relative error 0.2: does not reach the floor"]

    def test_the_plan_defaults_to_max_m_and_sets_the_hulls_config(self, world):
        # No plan_m: the config's max_m (6) is the plan, so m = 6 (ratio 1.5) is a candidate, and gap_min, left at
        # None, is chosen for 6 heads (2) in the hulls' config; the config's own max_m = 3 plans for 3 heads (3).
        world["errors"] = {1: 0.3, 2: 0.1, 6: 0.2}
        p5 = self._p5(1, [1.5, 1.0, 1.0, 1.0, 1.5])
        _, _, tried = world["select"](p5, None, LearnConfig())
        assert [t["m"] for t in tried] == [1, 2, 6]
        assert [(cfg.gap_min, kw["plan_m"]) for _, cfg, kw in world["span"]] == [(2.0, 6), (2.0, 6)]
        world["span"].clear()
        _, _, tried = world["select"](p5, None, LearnConfig(max_m=3))
        assert [t["m"] for t in tried] == [1, 2]
        assert [(cfg.gap_min, kw["plan_m"]) for _, cfg, kw in world["span"]] == [(3.0, 3)]

    def test_a_ratio_past_the_last_is_not_read(self, world):
        # Two ratios: m = 3 reads the second (2.0, a candidate); m = 4 would need a third. No round recorded: 0.
        world["errors"] = {1: 0.3, 3: 0.2}
        _, _, tried = world["select"](self._p5(1, [1.0, 2.0]), 4)
        assert tried == [self._missed(1, 0.3), self._missed(3, 0.2)]

    def test_the_first_kept_m_ends_the_search(self, world):
        # Candidates 1..5 (ratios 1.5, 1.6, 2.0 for m = 2, 3, 4; the gap rule says 5): m = 1 misses, m = 2's hull is
        # undetermined, m = 3 reaches the floor but violates the conditions, m = 4 reaches the noise floor and is
        # kept; m = 5 is never tried.
        world["errors"] = {1: 0.2, 3: 1e-12, 4: 1e-3, 5: 1e-13}
        world["floor"], world["violates"], world["undetermined"] = {4}, {3}, {2}
        span, p6, tried = world["select"](self._p5(5, [1.5, 1.6, 2.0, 1.0]), 5)
        assert span.m == 4 and p6.layer == "layer4"
        assert tried == [
            self._missed(1, 0.2),
            {"m": 2, "verdict": "hull undetermined: rank 3"},
            {"m": 3, "heldout_relative_error": 1e-12,
             "verdict": "reaches the floor but violates the conditions (theta_incoherence, w_incoherence)"},
            {"m": 4, "heldout_relative_error": 1e-3, "verdict": "kept"}]
        assert [s.m for s in world["search"]] == [1, 3, 4]



class TestDropRedundantRules:
    """``drop_redundant``'s thresholds on constructed heads: a head is empty at ‖W‖_F <= 1e-6 of the largest, two
    heads are one at ‖ΔΘ‖_F <= 1e-3 ‖Θ‖_F (the norm floored at 1e-300 only); the merge is kept at held-out error
    <= success_tol or <= 2× the given fit's. The refit, the draws and the scores are stand-ins."""

    @pytest.fixture
    def calls(self, monkeypatch):
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

        monkeypatch.setattr(select, "draw_checked", draw_checked)
        monkeypatch.setattr(select, "refit", refit)
        monkeypatch.setattr(select, "heldout_relative_error", heldout)
        monkeypatch.setattr(select, "assumptions", lambda layer: SimpleNamespace(ok=True))
        calls["reduced"] = reduced
        calls["drop"] = lambda layer: select.drop_redundant(
            layer, "source", LearnConfig(n_search=50, max_nfev=17, search_memory=12345, success_tol=1e-10,
                                      refine_solver="cg"))
        return calls

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
        out, record = calls["drop"](self._layer(t, w))
        assert out == (calls["reduced"], 1e-10, "head 1 is empty (‖W‖_F = 2e-06)")
        assert calls["draws"] == [("source", 50), ("source", 50)]
        (start, X, Y, kw), = calls["refit"]
        np.testing.assert_array_equal(start, np.array([t[0], t[2]]))
        assert (X, Y, kw) == ("X1", "Y1", {"max_iter": 17, "max_bytes": 12345, "solver": "cg"})
        assert record == {"notes": ["head 1 is empty (‖W‖_F = 2e-06)"], "heads_kept": 2,
                                               "heldout_relative_error": 1e-10,
                                               "given_m_heldout_relative_error": 0.0}

    def test_heads_at_the_duplicate_threshold_are_merged(self, calls):
        # ‖Θ_1‖_F = 1000 and ‖Θ_1 − Θ_0‖_F = 1 = 1e-3·1000: one head, the mean Θ. The merge's error is exactly
        # twice the given fit's (both above success_tol): kept.
        t = [[[1000.0, 1.0], [0.0, 0.0]], [[1000.0, 0.0], [0.0, 0.0]]]
        w = [[[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]]]
        calls["errors"] = (2 * 3e-6, 3e-6)
        out, _ = calls["drop"](self._layer(t, w))
        assert out == (calls["reduced"], 6e-6, "head 1 duplicates head 0 (‖ΔΘ‖/‖Θ‖ = 0.001; merged)")
        np.testing.assert_array_equal(calls["refit"][0][0], [[[1000.0, 0.5], [0.0, 0.0]]])

    def test_small_distinct_heads_are_not_merged(self, calls):
        # ‖Θ‖_F ≈ 0.01 and ‖ΔΘ‖_F = 5e-4: 5 % apart, not duplicates (the relative tolerance is not floored at 1).
        t = [[[0.01, 0.0], [0.0, 0.0]], [[0.01, 5e-4], [0.0, 0.0]]]
        w = [[[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]]]
        assert calls["drop"](self._layer(t, w)) == (None, None)
        assert calls["refit"] == []
