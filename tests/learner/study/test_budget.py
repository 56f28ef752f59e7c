"""The budgeted frontier's walk: the cells it visits, the learning rate it tunes, the verdicts and its claim.

The sweeps are replaced by a constructed one whose runs reach a relative error of 1e-3 after a time set by the
cell (so the verdict of every cell is known beforehand); one real walk at tiny budgets checks the plumbing."""

import json

import pytest

from learner.study.budget import budget_walk, walk_steps


class TestWalkSteps:
    @pytest.mark.parametrize("frontier", [0, 1, 3, 6, 10])
    @pytest.mark.parametrize("start", [1, 4, 6, 7, 10, 99])
    def test_the_frontier_is_found_from_any_start(self, frontier, start):
        """For a monotone verdict the walk ends at the frontier: its largest passing m is the frontier, m + 1
        was visited (and failed) unless the frontier is the cap, and it visits no cell twice."""
        calls = []

        def passes(m):
            calls.append(m)
            return m <= frontier

        seen = walk_steps(start, 10, passes)
        assert len(calls) == len(set(calls)) == len(seen)
        passed = [m for m, ok in seen.items() if ok]
        assert (max(passed) if passed else 0) == frontier
        if 0 < frontier < 10:
            assert seen[frontier + 1] is False
        if frontier == 0:
            assert seen[1] is False
        # the cells visited are contiguous, from the start (clipped to [1, cap]) towards the frontier
        first = min(max(start, 1), 10)
        assert list(seen)[0] == first and sorted(seen) == list(range(min(seen), max(seen) + 1))

    def test_a_cap_of_one_visits_m_one(self):
        # the smallest cap the walk accepts: one cell, whatever the start and the verdict
        assert walk_steps(1, 1, lambda m: True) == {1: True}
        assert walk_steps(4, 1, lambda m: False) == {1: False}

    def test_bad_cap(self):
        with pytest.raises(ValueError, match="`cap` must be at least 1; got cap=0"):
            walk_steps(1, 0, lambda m: True)


def _fake_sweep(reach):
    """A run_sweep whose runs of (method, m, d) reach 1e-3 after ``reach(method, m, d, lr, seed_index)`` seconds
    (None: never); the tuning runs' validation error is lower for the rate 0.03 than for 0.01."""
    ran = []

    def run_sweep(specs, out, **ex):
        records = []
        for s in specs:
            ran.append(s)
            lr = dict(s.options)["lr"]
            t = reach(s.method, s.m, s.d, lr, s.seed_index)
            records.append({"spec": {"method": s.method, "m": s.m, "d": s.d, "k": s.k, "role": s.role,
                                     "options": dict(s.options), "seed_index": s.seed_index},
                            "run_id": s.run_id, "outcome": "finished",
                            "errors": {"relative_error": 1e-9}, "timings": {"total": 1.0},
                            "diagnostics": {"fit": {"seconds_to": {"1e-03": t, "1e-08": None},
                                                    "val_relative_error": 0.5 if lr == 0.01 else 0.1}}})
        return records, {"ran": len(records), "skipped": 0}

    return run_sweep, ran


class TestBudgetWalk:
    def test_walks_each_method_and_d_to_its_frontier(self, tmp_path, monkeypatch):
        """numpy Adam reaches m = 5 at d = 16 within 600 s (its layers take 120·m s: 600 s at m = 5, 720 s at
        m = 6); torch Adam reaches the cap. The walk tunes the rate (0.03 wins), passes the budget to every run
        as max_seconds, and reports the frontier exact or at the cap."""
        from learner.sweep import engine

        def reach(method, m, d, lr, seed):
            if method == "adam":
                return 120.0 * m if lr == 0.03 else None
            return 10.0

        fake, ran = _fake_sweep(reach)
        monkeypatch.setattr(engine, "run_sweep", fake)
        s = budget_walk(tmp_path / "walk", ds=[16], start={16: 4}, seeds=3)
        rows = {r["method"]: r for r in s["rows"]}
        assert rows["adam"]["m"] == 5 and rows["adam"]["exact"] and rows["adam"]["seconds"] == 600.0
        assert rows["torch-adam"]["m"] == 6 and not rows["torch-adam"]["exact"]  # the cap at d = 16 is 6
        visited = [(c["method"], c["m"], c["passed"]) for c in s["cells"]]
        assert visited == [("adam", 4, True), ("adam", 5, True), ("adam", 6, False),
                           ("torch-adam", 4, True), ("torch-adam", 5, True), ("torch-adam", 6, True)]
        assert {c["lr"] for c in s["cells"]} == {0.03}
        assert all(dict(sp.options)["max_seconds"] == 600.0 for sp in ran)
        assert {dict(sp.options).get("threads") for sp in ran if sp.method == "torch-adam"} == {1}  # the race's rule
        measured = [sp for sp in ran if sp.role == "eval"]
        assert all(dict(sp.options)["lr"] == 0.03 for sp in measured) and len(measured) == 6 * 3
        claim = json.loads((tmp_path / "walk" / "study.json").read_text())
        assert claim["kind"] == "budget-study" and claim["parameters"]["caps"] == {"16": 6}
        assert json.loads((tmp_path / "walk" / "summary.json").read_text())["rows"] == s["rows"]
        assert "| 16 | 5 (600 s; 3/3) | ≥ 6 (10 s; 3/3) |" in (tmp_path / "walk" / "summary.md").read_text()

    def test_each_method_starts_where_it_is_told(self, tmp_path, monkeypatch):
        """A per-method start: numpy Adam from m = 2 up, torch Adam from the cap down; a d's single start is every
        method's; the claim records each method's start."""
        from learner.sweep import engine

        fake, _ = _fake_sweep(lambda method, m, d, lr, seed: 120.0 * m if method == "adam" else 10.0 * m)
        monkeypatch.setattr(engine, "run_sweep", fake)
        s = budget_walk(tmp_path / "walk", ds=[16], start={16: {"adam": 2, "torch-adam": 6}}, seeds=1)
        visited = [(c["method"], c["m"]) for c in s["cells"]]
        assert visited == [("adam", 2), ("adam", 3), ("adam", 4), ("adam", 5), ("adam", 6), ("torch-adam", 6)]
        claim = json.loads((tmp_path / "walk" / "study.json").read_text())
        assert claim["parameters"]["start"] == {"adam:16": 2, "torch-adam:16": 6}
        one = budget_walk(tmp_path / "one", ds=[16], start={16: 5}, seeds=1)
        assert [(c["method"], c["m"]) for c in one["cells"]] == [("adam", 5), ("adam", 6), ("torch-adam", 5),
                                                                 ("torch-adam", 6)]
        # the smallest start there is, m = 1, is a start like any other
        low = budget_walk(tmp_path / "low", ds=[16], start={16: {"adam": 1, "torch-adam": 6}}, seeds=1)
        assert [(c["method"], c["m"]) for c in low["cells"]][:2] == [("adam", 1), ("adam", 2)]
        # a method not named starts at its cap
        cap = budget_walk(tmp_path / "cap", ds=[16], start={16: {"adam": 5}}, seeds=1)
        assert [(c["method"], c["m"]) for c in cap["cells"]] == [("adam", 5), ("adam", 6), ("torch-adam", 6)]

    def test_a_smaller_budget_moves_the_frontier_down(self, tmp_path, monkeypatch):
        from learner.sweep import engine

        fake, _ = _fake_sweep(lambda method, m, d, lr, seed: 100.0 * m)
        monkeypatch.setattr(engine, "run_sweep", fake)
        s = budget_walk(tmp_path / "walk", ds=[16], methods=["adam"], seeds=3, budget=250.0)
        assert [(c["m"], c["passed"]) for c in s["cells"]] == [(6, False), (5, False), (4, False), (3, False),
                                                               (2, True)]
        assert s["rows"][0]["m"] == 2 and s["rows"][0]["exact"]

    @pytest.mark.parametrize(("kwargs", "match"), [
        ({"methods": ["provable"]}, "gradient baselines"),
        ({"budget": 0.0}, "`budget`"),
        ({"options": {"adam": {"lr": 0.1}}}, "must not set 'lr'"),
        ({"options": {"adam": {"max_seconds": 9.0}}}, "must not set 'lr'.*'max_seconds'"),
        ({"options": {"provable": {}}}, "name methods the walk does not run"),
        ({"ds": [0]}, "ds"),
        ({"ds": [16], "start": {24: 3}}, "`start` must name only d of `ds`"),
        ({"ds": [16], "start": {16: {"provable": 3}}}, r"d = 16 names methods the walk does not run: \['provable"),
        ({"ds": [16], "methods": ["adam"], "start": {16: {"torch-adam": 3}}}, "names methods the walk does not run"),
        ({"ds": [16], "start": {16: 0}}, "positive integer m; got 0 for adam at d = 16"),
        ({"ds": [16], "start": {16: {"adam": 2.5}}}, "positive integer m; got 2.5"),
        ({"ds": [16], "start": {16: True}}, "positive integer m; got True"),
        ({"ds": [2]}, "none at d = \\[2\\]"),
    ])
    def test_bad_input(self, tmp_path, kwargs, match):
        with pytest.raises(ValueError, match=match):
            budget_walk(tmp_path / "walk", **kwargs)
        assert not (tmp_path / "walk" / "study.json").exists()


def test_a_real_walk_at_tiny_budgets(tmp_path):
    """Two real numpy Adam cells at d = 8 with a tiny optimisation budget: every run fails to reach 1e-3, so the
    walk from m = 2 goes down to m = 1 and stops there; the records resume (nothing is run again)."""
    opts = {"adam": {"max_iter": 20, "n_train": 200, "n_val": 100, "restarts": 1}}
    s = budget_walk(tmp_path / "walk", ds=[8], methods=["adam"], start={8: 2}, seeds=1, lrs=[0.03], budget=30.0,
                    options=opts, workers=1)
    assert [(c["m"], c["passed"]) for c in s["cells"]] == [(2, False), (1, False)]
    assert s["rows"][0]["m"] is None and s["rows"][0]["measured"] == [1, 2]
    runs = sorted(p.name for p in (tmp_path / "walk" / "runs").glob("*.json"))
    assert len(runs) == 4  # per cell one tuning run and one measured run
    again = budget_walk(tmp_path / "walk", ds=[8], methods=["adam"], start={8: 2}, seeds=1, lrs=[0.03],
                        budget=30.0, options=opts, workers=1, run=False)
    assert again["rows"] == s["rows"]


class TestStartOption:
    """``--start`` on the command line: a d's m for every method, or a method's own (``adam:32=8``)."""

    def _walk(self, monkeypatch, tmp_path, *starts):
        from learner import cli
        from learner.study import cli as study_cli

        seen = {}

        def fake(out, **kw):
            seen.update(kw)
            return {"rows": [], "cells": [], "parameters": {}, "files": {}}

        monkeypatch.setattr(study_cli, "budget_walk", fake)
        rc = cli.main(["budget", "--ds", "16", "32", "--out", str(tmp_path / "w"), "--no-progress", "--start", *starts])
        return rc, seen.get("start")

    def test_pairs_per_d_and_per_method(self, monkeypatch, tmp_path):
        assert self._walk(monkeypatch, tmp_path, "32=8", "16=3")[1] == {32: 8, 16: 3}
        assert self._walk(monkeypatch, tmp_path, "adam:32=8", "torch-adam:32=13")[1] == {
            32: {"adam": 8, "torch-adam": 13}}

    @pytest.mark.parametrize(("value", "words"), [
        (["32"], "pairs [METHOD:]D=M"), (["32=0"], "pairs [METHOD:]D=M"), (["x=3"], "pairs [METHOD:]D=M"),
        ([":32=3"], "pairs [METHOD:]D=M"), (["32=8", "adam:32=3"], "both for every method and for adam"),
        (["adam:32=3", "32=8"], "both for every method and per method"),
    ])
    def test_bad_pairs_are_refused_by_name(self, monkeypatch, tmp_path, capsys, value, words):
        rc, _ = self._walk(monkeypatch, tmp_path, *value)
        err = capsys.readouterr().err
        assert rc == 2 and "`--start`" in err and words in err and "Traceback" not in err, err
