"""The study over (m, k): the grid specification, the seed rule, failure reasons, the fits, the frontier figure."""

import json
import math

import numpy as np
import pytest

from learner.cli import main
from learner.study import frontier
from learner.study.frontier import (
    AUTO_FIRST,
    AUTO_FULL,
    AUTO_SECONDS,
    DEFAULT_GRID,
    SHAPES,
    budgets_table,
    cells_table,
    failure_reason,
    fit_shapes,
    frontier_cells,
    frontier_table,
    parse_grid,
    plot_frontier,
    seeds_for,
    side_by_side,
)
from learner.study.scaling import scaling_study
from learner.sweep.runs import QUICK_OPTIONS, sound_d


def _sound(m, k):
    return sound_d(m, k)


class TestGrid:
    def test_the_default_grid_is_the_issues_study(self):
        cells = parse_grid(DEFAULT_GRID, sound_d=_sound)
        got = {(m, k) for m, _, k, _ in cells}
        want = ({(m, 2) for m in range(1, 7)} | {(2, k) for k in range(2, 9)} | {(3, k) for k in (2, 3, 4)}
                | {(4, k) for k in (2, 3)})
        assert got == want and len(cells) == 15  # (2, 2), (3, 2), (4, 2) named twice, kept once
        assert all(ss == "auto" and d == sound_d(m, k) for m, d, k, ss in cells)

    def test_blocks_set_d_and_seeds_of_their_cells(self):
        cells = parse_grid(["m=1..2,k=2", "m=2,k=8,d=24,seeds=3", "m=3, k=2..3, seeds=auto"], d=12, seeds=10)
        assert cells == [(1, 12, 2, 10), (2, 12, 2, 10), (2, 24, 8, 3), (3, 12, 2, "auto"), (3, 12, 3, "auto")]

    def test_a_cell_named_twice_alike_is_one_cell(self):
        assert parse_grid(["m=2,k=2", "m=1..2,k=2"], d=8, seeds=2) == [(1, 8, 2, 2), (2, 8, 2, 2)]

    @pytest.mark.parametrize("grid, match", [
        ("m=1,k=2", r"`grid` must be a list of blocks"),
        ([], r"at least one block"),
        ([""], r"non-empty strings"),
        ([3], r"non-empty strings"),
        (["m=0,k=2"], r"'m=0,k=2'.*m must be at least 1; got m='0'"),
        (["m=1,k=1"], r"k must be at least 2; got k='1'"),
        (["m=1..x,k=2"], r"m must be an integer or a range a\.\.b; got m='1\.\.x'"),
        (["m=3..1,k=2"], r"a range a\.\.b needs a <= b; got m='3\.\.1'"),
        (["m=2"], r"'m=2'.*k is missing"),
        (["m=2,k=2,n=3"], r"each part must be one of m=…, k=…, d=…, seeds=…; got 'n=3'"),
        (["m=2,k=2,k=3"], r"k is given twice"),
        (["m=2,k=2,d=8..12"], r"d must be one integer or auto; got d='8\.\.12'"),
        (["m=2,k=2,seeds=0"], r"seeds must be at least 1; got seeds='0'"),
        (["m=2,k=2,seeds=2..3"], r"seeds must be one integer or auto"),
        (["m=2,k=4,d=4"], r"the learner needs k < d; got k=4, d=4 at \(m=2, k=4\)"),
        (["m=2,k=2", "m=2,k=2,d=16"], r"cell \(m=2, k=2\) is given twice with different d: 12 in 'm=2,k=2', "
                                      r"16 in 'm=2,k=2,d=16'"),
    ])
    def test_bad_grids_are_named(self, grid, match):
        with pytest.raises(ValueError, match=match):
            parse_grid(grid, d=12, seeds=3)

    @pytest.mark.parametrize("kwargs, match", [
        ({"d": 1}, r"`d` must be an integer >= 2 or 'auto'; got d=1"),
        ({"d": "12"}, r"`d` must be an integer >= 2 or 'auto'; got d='12'"),
        ({"seeds": 0}, r"`seeds` must be a positive integer or 'auto'; got seeds=0"),
        ({"seeds": True}, r"`seeds` must be a positive integer or 'auto'; got seeds=True"),
        ({"seeds": "10"}, r"`seeds` must be a positive integer or 'auto'; got seeds='10'"),
    ])
    def test_bad_defaults_are_named(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            parse_grid(["m=1,k=2"], **({"d": 12, "seeds": 3} | kwargs))

    def test_auto_d_needs_a_rule(self):
        with pytest.raises(ValueError, match=r"d=auto needs `sound_d`"):
            parse_grid(["m=1,k=2"])

    def test_study_refuses_grid_with_ms_or_k(self, tmp_path):
        with pytest.raises(ValueError, match=r"give either `grid` or `ms` and `k`"):
            scaling_study(tmp_path / "s", grid=["m=1,k=2"], ms=[1])
        with pytest.raises(ValueError, match=r"`grid` block 'm=1,k=2,x=1'"):
            scaling_study(tmp_path / "s", grid=["m=1,k=2,x=1"])
        assert not (tmp_path / "s").exists()  # refused before anything was written

    def test_cli_refuses_grid_with_m(self, tmp_path, capsys):
        assert main(["scaling", "--grid", "m=1,k=2", "--m", "1", "--out", str(tmp_path / "s")]) == 2
        assert "give either --grid or --m/--k" in capsys.readouterr().err

    @pytest.mark.parametrize("value", ["0", "some", "-2"])
    def test_cli_bad_seeds(self, tmp_path, capsys, value):
        with pytest.raises(SystemExit):
            main(["scaling", "--grid", "m=1,k=2", "--seeds", value, "--out", str(tmp_path / "s")])
        err = capsys.readouterr().err
        assert "argument --seeds: `--seeds` must be" in err and "'auto'" in err and value in err


class TestSeedRule:
    def test_quick_cells_get_the_full_count(self):
        assert seeds_for("auto", [AUTO_SECONDS * 0.5] * 3) == AUTO_FULL
        assert seeds_for("auto", [AUTO_SECONDS * 2] * 3) == AUTO_FIRST
        assert seeds_for("auto", [AUTO_SECONDS] * 3) == AUTO_FIRST  # "under" two minutes
        assert seeds_for(4, [1.0]) == 4 and seeds_for(4, [1e6]) == 4  # a number is a number

    def test_the_median_decides_not_the_mean(self):
        assert seeds_for("auto", [10.0, 20.0, 10_000.0]) == AUTO_FULL


def _rec(method="provable", m=2, d=12, k=2, seed=0, status="6_search", rel=1e-30, outcome="finished", total=10.0,
         examples=1000, forecast=None, timings=None):
    diag = {}
    if forecast is not None:
        diag["4_refined_sculpt"] = {"forecast": {"predicted_examples": forecast}}
    return {"spec": {"method": method, "role": "eval", "m": m, "d": d, "k": k, "seed_index": seed},
            "outcome": outcome, "status": status, "errors": {} if rel is None else {"relative_error": rel},
            "timings": (timings or {}) | {"total": total}, "examples_drawn": examples, "diagnostics": diag}


class TestCells:
    @pytest.mark.parametrize("rec, why", [
        (_rec(), None),
        (_rec(rel=2e-3), "search"),
        (_rec(status="budget", rel=None, forecast=5e9), "budget"),
        (_rec(status="5_span", rel=None), "gap"),
        (_rec(status="4_refined_sculpt", rel=None), "examples"),
        (_rec(outcome="error", status="error", rel=None), "error"),
        (_rec(method="adam", status="budget (time)", rel=0.5), "budget"),
        (_rec(method="adam", status="gradient", rel=2e-3), "inaccurate"),
        (_rec(method="adam", status="not_converged", rel=0.5), "not_converged"),
    ])
    def test_failure_reasons(self, rec, why):
        assert failure_reason(rec, 1e-3) == why

    def test_cell_figures(self):
        t = {"1_crude_sum": 1.0, "2_crude_sculpt": 1.0, "3_refine_sum": 2.0, "4_refined_sculpt": 4.0,
             "5_span": 0.5, "6_search": 1.5}
        recs = [_rec(seed=0, total=10.0, examples=100, timings=t), _rec(seed=1, total=30.0, examples=300, timings=t),
                _rec(seed=2, total=20.0, status="5_span", rel=None, examples=900, timings=t),
                _rec(k=3, status="budget", rel=None, forecast=4e9, total=5.0, examples=10),
                _rec(k=3, seed=1, status="budget", rel=None, forecast=6e9, total=5.0, examples=10)]
        cells = {c["k"]: c for c in frontier_cells(recs, success_tol=1e-3, seed_rules={(2, 12, 2): "auto"})}
        c = cells[2]
        assert (c["runs"], c["successes"], c["failures"], c["seed_rule"]) == (3, 2, {"gap": 1}, "auto")
        assert (c["median_seconds"], c["median_seconds_success"]) == (20.0, 20.0)
        assert (c["median_examples"], c["median_examples_success"]) == (300, 200)
        assert (c["median_seconds_phases_1_4"], c["median_seconds_phases_5_6"]) == (8.0, 2.0)
        assert not c["beyond_budget"] and c["predicted_examples"] is None
        b = cells[3]
        assert b["beyond_budget"] and b["predicted_examples"] == 5e9 and b["successes"] == 0
        assert b["median_examples"] is None  # a run stopped for budget drew only its pilot
        assert "beyond budget, 0/2, forecast 5 G ex." in frontier_table(list(cells.values()), "provable")
        assert "| provable | 2 | 12 | 3 | 2 | 2 (–) | 0/2 | budget 2 |" in cells_table(list(cells.values()))


    def test_side_by_side_compares_the_cells_both_hold(self):
        """One row per (cell, method) present in both groups, with the ratio of the second's time to the first's;
        a cell only one group ran is left out."""
        a = frontier_cells([_rec(seed=0, total=10.0, examples=100), _rec(seed=1, total=30.0, examples=300),
                            _rec(k=3, total=5.0)], success_tol=1e-3)
        b = frontier_cells([_rec(seed=0, total=40.0, examples=100), _rec(seed=1, total=40.0, examples=100,
                                                                         rel=2e-3)], success_tol=1e-3)
        table = side_by_side({"Boolean": a, "Gaussian": b})
        rows = table.splitlines()[2:]
        assert rows == ["| (2, 12, 2) | provable | 2/2, 20 s, 200 | 1/2, 40 s, 100 | 2 |"], table
        assert "time Gaussian / Boolean" in table.splitlines()[0]


    def test_budgets_table_gives_the_examples_ratio_and_the_baseline(self):
        """The learner's cells under fixed and data-driven budgets, the examples ratio, and Adam's median
        time from the second study with the learner's time over it; a cell only one study ran is left out."""
        fixed = frontier_cells([_rec(seed=0, total=10.0, examples=1_500_000), _rec(seed=1, total=30.0,
                                                                                   examples=1_500_000),
                                _rec(k=3, total=5.0)], success_tol=1e-3)
        adaptive = frontier_cells([_rec(seed=0, total=0.5, examples=60_000), _rec(seed=1, total=0.7, examples=50_000),
                                   _rec(method="adam", total=40.0, examples=25_000)], success_tol=1e-3)
        rows = budgets_table(fixed, adaptive).splitlines()
        assert rows[2:] == ["| (2, 12, 2) | 2/2, 1.5 M, 20 s | 2/2, 55 k, 0.6 s | 27.3 | 40 s | 0.015 |"], rows
        # Control: without the baseline's cell the last columns are empty, not invented.
        rows = budgets_table(fixed, [c for c in adaptive if c["method"] == "provable"]).splitlines()
        assert rows[2].endswith("| – | – |")


class TestFits:
    @pytest.mark.parametrize("shape", list(SHAPES))
    def test_each_shape_recovers_its_own_data(self, shape):
        cells = [(m, k, d) for m, k, d in ((1, 2, 12), (2, 2, 12), (3, 2, 12), (4, 2, 12), (5, 2, 16), (2, 4, 12),
                                           (2, 8, 16), (3, 3, 12), (4, 3, 12))]
        coef = [1.5, 0.3, 0.2][: len(SHAPES[shape](1, 2, 3)) + 1]
        pts = [(m, k, d, math.exp(coef[0] + np.dot(coef[1:], SHAPES[shape](m, k, d)))) for m, k, d in cells]
        fits = {f["shape"]: f for f in fit_shapes(pts)}
        mine = fits[shape]
        np.testing.assert_allclose(mine["coefficients"], coef, atol=1e-9)
        assert mine["rms"] < 1e-9 and mine["loo_rms"] < 1e-9 and len(mine["residuals"]) == len(cells)
        # Control: the other shapes do not fit this data exactly (the comparison can tell shapes apart).
        for other, f in fits.items():
            if other != shape:
                assert f["rms"] > 1e-3, other

    def test_noise_shows_in_the_residuals(self):
        rng = np.random.default_rng(1)
        pts = [(m, 2, 12, math.exp(0.5 + 0.7 * m + rng.normal(0, 0.3))) for m in range(1, 9)]
        f = {r["shape"]: r for r in fit_shapes(pts)}["a + b·m·log(dk)"]
        assert 0.1 < f["rms"] < 0.6 and f["loo_rms"] > f["rms"]

    def test_too_few_cells_fit_nothing(self):
        f = {r["shape"]: r for r in fit_shapes([(1, 2, 12, 3.0), (2, 2, 12, 9.0), (3, 2, 12, -1.0)])}
        assert f["a + b·(m−1)(k−1)"]["points"] == 2 and f["a + b·(m−1)(k−1)"]["loo_rms"] is None
        assert f["a + b·m + c·k"]["coefficients"] is None  # m and k: three coefficients, two cells


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A ``--quick`` study over three cells (tiny budgets: it measures nothing; Adam never converges in 30 steps)."""
    out = tmp_path_factory.mktemp("frontier") / "sweep"
    argv = ["scaling", "--grid", "m=1..2,k=2", "m=2,k=3", "--d", "6", "--quick", "--seeds", "2", "--serial",
            "--methods", "provable", "adam", "--no-progress", "--seed", "3", "--out", str(out)]
    assert main(argv) == 0
    return out, json.loads((out / "summary.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # a quick study end to end (its set-up runs the study)
class TestQuickStudy:
    """The frontier, the table and the fits of the quick study."""

    def test_every_cell_of_both_methods_is_summarised(self, study):
        out, summary = study
        cells = summary["frontier"]
        assert sorted((c["method"], c["m"], c["k"]) for c in cells) == sorted(
            (method, m, k) for method in ("adam", "provable") for m, k in ((1, 2), (2, 2), (2, 3)))
        assert all(c["runs"] == 2 and c["seed_rule"] == 2 for c in cells)
        assert summary["parameters"]["grid"] == ["m=1..2,k=2", "m=2,k=3"]
        assert (out / "frontier.png").stat().st_size > 10_000
        md = (out / "summary.md").read_text(encoding="utf-8")
        assert "adam: median time per run and successes per cell" in md and "a + b·m³·log(dk)" in md

    def test_a_cell_without_successes_is_drawn_as_such(self, study, tmp_path):
        _, summary = study
        cells = summary["frontier"]
        failed = [c for c in cells if c["successes"] == 0]
        assert failed, "the quick study has cells without a success (Adam's at least)"
        _, drawn = plot_frontier(cells, tmp_path / "f.png")
        states = {(mt, m, k): (label, state) for mt, m, k, label, state in drawn}
        assert len(states) == len(cells)  # every cell is drawn
        for c in failed:
            label, state = states[(c["method"], c["m"], c["k"])]
            assert state in ("no success", "beyond budget") and f"0/{c['runs']}" in label
            assert f"0/{c['runs']}" in frontier_table(cells, c["method"])
        for c in cells:  # control: the state follows the count, it is not one answer for all
            assert (states[(c["method"], c["m"], c["k"])][1] == "success") == (c["successes"] > 0
                                                                                and not c["beyond_budget"])
        # Control: leave the failed cells out and they are not drawn (the check above can fail).
        _, fewer = plot_frontier([c for c in cells if c["successes"] > 0], tmp_path / "g.png")
        assert not any(state != "success" for *_, state in fewer)

    def test_fits_use_the_cells_with_a_success(self, study):
        _, summary = study
        for method, entry in summary["fits"].items():
            ok = sorted([c["m"], c["k"]] for c in summary["frontier"] if c["method"] == method and c["successes"])
            assert sorted(entry["cells"]) == ok
            for f in entry["seconds"]:
                assert f["points"] == len(ok)

    def test_summarise_only_gives_the_same_summary(self, study, capsys):
        out, summary = study
        assert main(["scaling", "--grid", "m=1..2,k=2", "m=2,k=3", "--d", "6", "--quick", "--seeds", "2",
                     "--no-progress", "--seed", "3", "--summarise-only", "--out", str(out)]) == 0
        again = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        assert again["frontier"] == summary["frontier"] and again["fits"] == summary["fits"]
        capsys.readouterr()


class TestAutoSeeds:
    def test_quick_cells_are_extended_to_ten(self, tmp_path, monkeypatch):
        # Under --quick every run takes well under two minutes: 3 layers first, then 10.
        out = tmp_path / "s"
        study = scaling_study(out, grid=["m=1,k=2"], d=6, seeds="auto", methods=["adam"], adam_lrs=(0.03,),
                              adam_options=QUICK_OPTIONS["adam"], backend="serial", plot=False)
        assert study.stats == {"ran": AUTO_FULL, "skipped": 0}
        assert [c["runs"] for c in study.summary["frontier"]] == [AUTO_FULL]
        # Control: with a threshold no run beats, the same cell stops at three (and its records are kept).
        monkeypatch.setattr(frontier, "AUTO_SECONDS", 0.0)
        out2 = tmp_path / "s2"
        study2 = scaling_study(out2, grid=["m=1,k=2"], d=6, seeds="auto", methods=["adam"], adam_lrs=(0.03,),
                               adam_options=QUICK_OPTIONS["adam"], backend="serial", plot=False)
        assert study2.stats["ran"] == AUTO_FIRST
