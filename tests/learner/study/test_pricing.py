"""The paper's phase 6 priced: the net's tuple count, the scoring the price times, the price, its records, and the
table of ours against the paper's."""

import itertools
import json
import math
import os

import numpy as np
import pytest

from learner.errors import RecordError
from learner.phases.search import exhaustive_gram, score_tuples
from learner.study import pricing
from learner.study.growth import pricing_of
from learner.study.pricing import grid_points, net_tuples, price_cells, price_search, time_tuple_scoring


class TestCount:
    def test_grid_points_follow_the_learner_grid(self):
        from learner.phases.search import _grid

        for m in (1, 2, 3, 4):
            assert grid_points(m, net_points=5, points_per_axis=3) == len(_grid(m, 5, 3))

    @pytest.mark.parametrize("m", [1, 2, 3, 4])
    def test_tuples_are_every_m_subset(self, m):
        p = grid_points(m, net_points=7, points_per_axis=3)
        assert net_tuples(m, net_points=7, points_per_axis=3) == sum(
            1 for _ in itertools.combinations(range(p), m))


class TestScoring:
    def test_each_tuple_is_scored_by_its_least_squares_residual(self):
        rng = np.random.default_rng(0)
        p, n, k, d, m = 5, 40, 2, 3, 2
        Phi, Ys = rng.standard_normal((p, n, k, d)), rng.standard_normal((n, k, d))
        tuples = np.array(list(itertools.combinations(range(p), m)))
        got = score_tuples(exhaustive_gram(Phi, Ys), tuples, chunk=3)  # batches that do not divide the count
        Y = Ys.reshape(-1, d)
        for t, score in zip(tuples, got, strict=True):
            D = np.concatenate([Phi[i].reshape(-1, d) for i in t], axis=1)
            W, *_ = np.linalg.lstsq(D, Y, rcond=None)
            assert score == pytest.approx(np.sum((Y - D @ W) ** 2) / np.sum(Y**2), rel=1e-6)

    def test_timing(self):
        t = time_tuple_scoring(2, 4, 2, n_search=50, repeats=3, min_seconds=0.01)
        lo, hi = t["per_tuple_range"]
        assert 0 < lo <= t["per_tuple_seconds"] <= hi
        assert t["tuples_timed"] >= 16 and math.log2(t["tuples_timed"]) % 1 == 0
        assert t["gram_points"] == 5 and t["gram_range"][0] <= t["gram_seconds"] <= t["gram_range"][1]
        with pytest.raises(ValueError, match="`m` must be"):
            time_tuple_scoring(0, 4, 2)


class TestPrice:
    def test_price_is_tuples_times_cost_plus_the_scaled_gram(self):
        t = {"m": 4, "d": 8, "per_tuple_seconds": 2e-6, "per_tuple_range": [1e-6, 3e-6], "gram_points": 7,
             "gram_seconds": 0.5, "gram_range": [0.4, 0.6]}
        pr = price_search(t, points_per_axis=5)
        p = 5**3
        tuples = math.comb(p, 4)
        assert pr["grid_points"] == p and pr["tuples"] == tuples
        assert pr["gram_bytes"] == 8 * (p * 8) ** 2
        assert pr["seconds"] == pytest.approx(tuples * 2e-6 + 0.5 * (p / 7) ** 2)
        assert pr["interval"] == pytest.approx([tuples * 1e-6 + 0.4 * (p / 7) ** 2, tuples * 3e-6 + 0.6 * (p / 7) ** 2])

    def test_huge_counts_stay_finite(self):
        t = {"m": 13, "d": 32, "per_tuple_seconds": 0.03, "per_tuple_range": [0.02, 0.04], "gram_points": 16,
             "gram_seconds": 1.0, "gram_range": [1.0, 1.0]}
        pr = price_search(t)
        assert 1e160 < pr["tuples"] < 1e170 and math.isfinite(pr["seconds"])
        assert json.loads(json.dumps(pr))["tuples"] == pr["tuples"]

    def test_seconds_text(self):
        assert pricing._seconds_text(12.0) == "12 s"
        assert pricing._seconds_text(7200.0) == "2 h"
        assert pricing._seconds_text(3 * 86400.0) == "3 days"
        assert pricing._seconds_text(2 * 365.25 * 86400) == "2 years"


class TestRecords:
    def _fake_timing(self, calls):
        def timing(m, d, k, **kw):
            calls.append((m, d, k))
            return {"m": m, "d": d, "k": k, "n_search": 2000, "repeats": 1, "batch": 1, "tuples_timed": 16,
                    "per_tuple_seconds": 1e-5 * m, "per_tuple_range": [1e-5 * m, 1e-5 * m], "gram_points": m + 3,
                    "gram_seconds": 0.01, "gram_range": [0.01, 0.01]}
        return timing

    def test_resumes_from_its_records(self, tmp_path, monkeypatch):
        calls = []
        monkeypatch.setattr(pricing, "time_tuple_scoring", self._fake_timing(calls))
        first = price_cells(tmp_path, [(3, 8, 2), (2, 8, 2), (3, 8, 2)])
        assert calls == [(2, 8, 2), (3, 8, 2)] and [r["m"] for r in first] == [2, 3]
        again = price_cells(tmp_path, [(2, 8, 2), (3, 8, 2)])
        assert calls == [(2, 8, 2), (3, 8, 2)]  # nothing timed again
        assert [r["seconds"] for r in again] == [r["seconds"] for r in first]
        assert price_cells(tmp_path, [(2, 8, 2)], run=False)[0]["kind"] == "growth-pricing"

    def test_missing_forged_and_foreign_records_are_refused(self, tmp_path, monkeypatch):
        calls = []
        monkeypatch.setattr(pricing, "time_tuple_scoring", self._fake_timing(calls))
        with pytest.raises(RecordError, match="is missing"):
            price_cells(tmp_path, [(2, 8, 2)], run=False)
        price_cells(tmp_path, [(2, 8, 2)])
        src, dst = tmp_path / "pricing" / "m2-d8-k2.json", tmp_path / "pricing" / "m3-d8-k2.json"
        dst.write_bytes(src.read_bytes())  # a record of another cell under this cell's name
        with pytest.raises(RecordError, match="not \\(3, 8, 2\\)"):
            price_cells(tmp_path, [(3, 8, 2)])
        dst.unlink()
        dst.write_text(json.dumps({"kind": "scaling-run", "schema_version": 2}))
        with pytest.raises(RecordError, match="not a growth-pricing record"):
            price_cells(tmp_path, [(3, 8, 2)])

    def test_a_link_is_never_written_through(self, tmp_path, monkeypatch):
        monkeypatch.setattr(pricing, "time_tuple_scoring", self._fake_timing([]))
        (tmp_path / "pricing").mkdir()
        target = tmp_path / "elsewhere.json"
        os.symlink(target, tmp_path / "pricing" / "m2-d8-k2.json")
        with pytest.raises((ValueError, RecordError)):
            price_cells(tmp_path, [(2, 8, 2)])
        assert not target.exists()


def _run(m, total, search, *, refine=0.5, rel=1e-30, d=24):
    return {"spec": {"m": m, "d": d, "k": 2, "role": "eval"}, "outcome": "finished", "status": "6_search",
            "errors": {"relative_error": rel}, "timings": {"total": total, "6_search": search},
            "diagnostics": {"6_search": {"seconds": search, "refine_seconds": refine}}}


class TestPaperAgainstOurs:
    def test_rows_and_checks(self):
        prices = [{"m": 3, "d": 24, "k": 2, "seconds": 100.0, "interval": [80.0, 130.0], "tuples": 790244.0,
                   "per_tuple_seconds": 1.2e-4}]
        lines = {"d24": [_run(3, 10.0, 2.0), _run(3, 14.0, 3.0), _run(3, 30.0, 9.0, rel=0.5), _run(2, 9.0, 1.0)],
                 "exhaustive": [_run(3, 70.0, 60.5), _run(3, 90.0, 80.5), _run(3, 95.0, 85.0, rel=0.5)]}
        out = pricing_of(lines, prices)
        (row,) = out["rows"]
        assert (row["line"], row["m"]) == ("d24", 3)
        assert row["ours_search_s"] == 2.5 and row["rest_s"] == 9.5  # medians of (2, 3) and (8, 11)
        assert row["pipeline_s"] == 109.5 and row["pipeline_interval"] == [89.5, 139.5]
        (check,) = out["checks"]
        assert (check["successes"], check["runs"]) == (2, 3)
        assert check["measured_s"] == 70.0 and check["ratio"] == pytest.approx(100 / 70)


class TestWhatMutationsFound:
    def test_the_check_line_first_still_lets_the_others_be_priced(self):
        prices = [{"m": 3, "d": 24, "k": 2, "seconds": 100.0, "interval": [80.0, 130.0], "tuples": 790244.0,
                   "per_tuple_seconds": 1.2e-4}]
        lines = {"exhaustive": [_run(3, 70.0, 60.5), _run(2, 5.0, 1.0)], "d24": [_run(3, 10.0, 2.0)]}
        out = pricing_of(lines, prices)
        assert [(r["line"], r["m"], r["d"]) for r in out["rows"]] == [("d24", 3, 24)]
        assert [(c["m"], c["d"], c["k"]) for c in out["checks"]] == [(2, 24, 2), (3, 24, 2)]
        unpriced = out["checks"][0]
        assert unpriced["priced_s"] is None and unpriced["ratio"] is None and unpriced["measured_s"] == 0.5

    def test_a_run_without_its_refinement_time_is_not_measured(self):
        run = _run(3, 70.0, 60.5)
        run["diagnostics"]["6_search"]["refine_seconds"] = None
        (check,) = pricing_of({"exhaustive": [run]}, [])["checks"]
        assert check["measured_s"] is None and check["successes"] == 1

    def test_the_phase_6_time_of_ours_is_its_own(self):
        prices = [{"m": 3, "d": 24, "k": 2, "seconds": 100.0, "interval": [80.0, 130.0], "tuples": 1.0,
                   "per_tuple_seconds": 1.0}]
        run = _run(3, 10.0, 2.0)
        del run["timings"]["6_search"]
        (row,) = pricing_of({"d24": [run]}, prices)["rows"]
        assert row["ours_search_s"] == 0.0 and row["rest_s"] == 10.0

    def test_the_timing_gets_the_cells_seed_and_repeats(self, tmp_path, monkeypatch):
        seen = []

        def timing(m, d, k, **kw):
            seen.append(kw)
            return TestRecords()._fake_timing([])(m, d, k)

        monkeypatch.setattr(pricing, "time_tuple_scoring", timing)
        price_cells(tmp_path, [(2, 8, 2)], repeats=7, seed=11)
        assert seen == [{"repeats": 7, "seed": 11}]
        rec = json.loads((tmp_path / "pricing" / "m2-d8-k2.json").read_text())
        assert rec["date"].endswith("Z") and rec["date"][:2] == "20"
