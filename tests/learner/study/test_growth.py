"""The growth study: the shapes, their leave-one-out errors, the choice, the bootstrap's intervals and direction,
the values read from records, the summary and the command line."""

import json
import math

import numpy as np
import pytest

from learner.cli import main
from learner.study import growth
from learner.study.growth import (
    GROWTH_LINES,
    GROWTH_OPTIONS,
    GROWTH_SHAPES,
    PHASES,
    QUANTITIES,
    budgeted_frontier,
    choose_shape,
    fit_growth_shapes,
    frontier_markdown,
    growth_of,
    growth_sentence,
    growth_summary,
    growth_table,
    line_end,
    line_values,
    per_head_factor,
    summary_markdown,
)

MS = list(range(1, 11))


def _exact(law):
    return {m: [float(law(m))] for m in MS}


def _loo_by_refitting(xs, y):
    """Leave-one-out rms by refitting without each point (the reference the closed form is held to)."""
    errs = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        coef, *_ = np.linalg.lstsq(xs[keep], y[keep], rcond=None)
        errs.append(y[i] - xs[i] @ coef)
    return math.sqrt(np.mean(np.square(errs)))


class TestShapes:
    @pytest.mark.parametrize(("shape", "law"), [
        ("exp(b·m)", lambda m: 2.0 * math.exp(0.7 * m)),
        ("exp(b·m²)", lambda m: 3.0 * math.exp(0.05 * m * m)),
        ("exp(b·m³)", lambda m: 0.5 * math.exp(0.004 * m**3)),
        ("m^b", lambda m: 7.0 * m**2.5),
        ("exp(b·m + c·m²)", lambda m: math.exp(1.0 + 0.9 * m - 0.04 * m * m)),
    ])
    def test_each_law_is_chosen_for_its_own_data(self, shape, law):
        fits = fit_growth_shapes(_exact(law))
        by = {f["shape"]: f for f in fits}
        assert by[shape]["loo_rms"] == pytest.approx(0.0, abs=1e-9)
        assert choose_shape(fits) == shape
        others = [f["loo_rms"] for f in fits if f["shape"] not in (shape, "exp(b·m + c·m²)")]
        assert min(others) > 1e-3  # the other two-coefficient shapes miss it

    def test_per_head_factor_is_the_ratio_of_the_fit_at_m_and_m_minus_1(self):
        law = lambda m: math.exp(1.0 + 0.9 * m - 0.04 * m * m)  # noqa: E731
        fit = next(f for f in fit_growth_shapes(_exact(law)) if f["shape"] == "exp(b·m + c·m²)")
        assert fit["last_factor"] == pytest.approx(law(10) / law(9), rel=1e-9)
        assert fit["first_factor"] == pytest.approx(law(2) / law(1), rel=1e-9)
        assert per_head_factor("m^b", [0.0, 3.0], 5) == pytest.approx((5 / 4) ** 3)
        with pytest.raises(ValueError, match="`m` must be at least 2"):
            per_head_factor("exp(b·m)", [0.0, 1.0], 1)

    def test_leave_one_out_is_the_refit_without_each_cell(self):
        rng = np.random.default_rng(3)
        values = {m: list(np.exp(0.4 * m + rng.normal(0, 0.3, 4))) for m in MS}
        y = np.log([np.median(values[m]) for m in MS])
        for f in fit_growth_shapes(values):
            xs = np.array([[1.0, *GROWTH_SHAPES[f["shape"]](m)] for m in MS])
            assert f["loo_rms"] == pytest.approx(_loo_by_refitting(xs, y), rel=1e-9)
            assert f["loo_rms"] > f["rms"]  # out of sample is worse than in sample on noisy data

    def test_too_few_cells(self):
        fits = fit_growth_shapes({1: [1.0], 2: [3.0]})
        assert all(f["loo_rms"] is None for f in fits) and choose_shape(fits) is None
        by = {f["shape"]: f for f in fits}
        assert by["exp(b·m)"]["coefficients"] is not None and by["exp(b·m + c·m²)"]["coefficients"] is None
        assert fit_growth_shapes({})[0]["coefficients"] is None
        g = growth_of({1: [1.0], 2: [3.0]})
        assert g["chosen"] is None and g["direction"] == "not measured"
        assert "too few cells" in growth_sentence("time", g)

    def test_a_constant_quantity_is_exponential_with_factor_one(self):
        g = growth_of({m: [75_000.0] * 3 for m in MS}, resamples=50)
        assert g["chosen"] == "exp(b·m)" and g["last_factor"] == pytest.approx(1.0)
        assert g["direction"] == "shows neither speeding up nor slowing"

    def test_ties_go_to_the_shape_listed_first(self):
        assert choose_shape([{"shape": "a", "loo_rms": 0.2 + 1e-12}, {"shape": "b", "loo_rms": 0.2}]) == "a"
        assert choose_shape([{"shape": "a", "loo_rms": 0.3}, {"shape": "b", "loo_rms": 0.2}]) == "b"


class TestBootstrap:
    def _noisy(self, law, sigma, runs, seed):
        rng = np.random.default_rng(seed)
        return {m: list(law(m) * np.exp(rng.normal(0, sigma, runs))) for m in MS}

    @pytest.mark.parametrize(("c", "want"), [(0.06, "speeds up"), (-0.06, "slows"),
                                            (0.0, "shows neither speeding up nor slowing")])
    def test_direction_follows_the_curvature(self, c, want):
        g = growth_of(self._noisy(lambda m: math.exp(0.5 * m + c * m * m), 0.1, 5, 11), resamples=300)
        assert g["direction"] == want
        lo, hi = g["curvature_interval"]
        assert lo < g["curvature"] < hi

    def _coverage(self, n):
        hits = 0
        for seed in range(n):
            g = growth_of(self._noisy(lambda m: math.exp(0.6 * m), 0.3, 5, seed), seed=seed, resamples=200)
            lo, hi = g["last_factor_interval"]
            assert lo < g["last_factor"] < hi  # two-sided
            hits += lo <= math.exp(0.6) <= hi
        return hits

    def test_the_interval_is_two_sided_and_covers_the_truth(self):
        # 95 % intervals on 30 lines: at least 25 (fewer has probability 0.3 % under the nominal coverage)
        assert self._coverage(30) >= 25

    @pytest.mark.slow
    def test_the_interval_covers_the_truth_on_two_hundred_lines(self):
        # at least 180 of 200 (fewer has probability 0.1 % under the nominal coverage)
        assert self._coverage(200) >= 180

    def test_cells_are_resampled_so_a_missed_law_widens_the_interval(self):
        # One run per cell: resampling runs alone gives a zero-width interval; the cells' resampling does not.
        g = growth_of(_exact(lambda m: math.exp(0.5 * m + 0.05 * m * m)), resamples=200)
        lo, hi = growth._bootstrap(_exact(lambda m: math.exp(0.5 * m + 0.05 * m * m)),
                                   np.random.default_rng(0), 200)["last_factor"]["exp(b·m)"]
        assert hi - lo > 0.05
        assert g["chosen"] in ("exp(b·m + c·m²)", "exp(b·m²)")

    def test_the_choice_share_is_the_share_of_resamples_choosing_it(self):
        noisy = growth_of(self._noisy(lambda m: math.exp(0.6 * m), 0.8, 3, 1), resamples=100)
        shares = noisy["chosen_shares"]
        assert noisy["chosen"] == "exp(b·m)" and noisy["chosen_share"] == shares["exp(b·m)"]
        assert len(shares) > 1 and sum(shares.values()) == pytest.approx(1.0)
        assert all(round(v * 100) == pytest.approx(v * 100) for v in shares.values())  # counts of 100 resamples

    @pytest.mark.parametrize(("shape", "law"), [
        ("exp(b·m)", lambda m: 2.0 * math.exp(0.7 * m)),
        ("exp(b·m³)", lambda m: 0.5 * math.exp(0.004 * m**3)),
        ("m^b", lambda m: 7.0 * m**2.5),
        ("exp(b·m + c·m²)", lambda m: math.exp(1.0 + 0.9 * m - 0.04 * m * m)),
    ])
    def test_an_exact_law_resamples_to_itself(self, shape, law):
        # Every resample of exact data is the law: the batched fits give its factor, the choice is always its own.
        boot = growth._bootstrap({m: [law(m)] * 3 for m in MS}, np.random.default_rng(0), 200)
        lo, hi = boot["last_factor"][shape]
        assert lo == pytest.approx(law(10) / law(9), rel=1e-7) and hi == pytest.approx(law(10) / law(9), rel=1e-7)
        assert boot["chosen"] == {shape: 1.0}
        assert boot["counted"][shape] == 200  # no resample drew fewer distinct cells than the shape has coefficients

    def test_reproducible(self):
        v = self._noisy(lambda m: m**2, 0.2, 3, 5)
        assert growth_of(v, seed=4, resamples=50) == growth_of(v, seed=4, resamples=50)
        assert growth_of(v, seed=4, resamples=50) != growth_of(v, seed=5, resamples=50)


def _record(m, seconds, *, d=24, k=2, rel=1e-30, role="eval", outcome="finished", status="6_search"):
    # the six phases take 90 % of the run, in the proportions 1:2:...:6; the rest is 10 %
    timings = {p: 0.9 * seconds * (i + 1) / 21 for i, p in enumerate(PHASES)} | {"total": seconds}
    return {"spec": {"method": "provable", "m": m, "d": d, "k": k, "role": role}, "outcome": outcome,
            "status": status, "errors": {"relative_error": rel}, "timings": timings,
            "examples_drawn": int(1000 * 2**m),
            "diagnostics": {p: {"examples": 100 * m} for p in PHASES if p != "5_span"}
            | {"4_refined_sculpt": {"examples": 100 * m, "tol": 0.1}, "6_search": {"search": "vp", "examples": 4000,
                                                                                   "tuples_in_grid": 10.0 * m}}}


class TestRecords:
    def test_line_values_keep_the_successful_runs_of_the_line(self):
        recs = [_record(1, 2.0), _record(1, 4.0), _record(2, 8.0), _record(2, 99.0, rel=0.5),
                _record(2, 98.0, role="tune"), _record(3, 97.0, d=32), _record(3, 96.0, k=3),
                _record(3, 95.0, outcome="error"), _record(3, 16.0)]
        assert line_values(recs, "seconds", d=24, k=2) == {1: [2.0, 4.0], 2: [8.0], 3: [16.0]}
        assert line_values(recs, "examples", d=24, k=2) == {1: [2000.0, 2000.0], 2: [4000.0], 3: [8000.0]}
        assert line_values(recs, "examples 6_search", d=24, k=2)[3] == [4000.0]
        with pytest.raises(ValueError, match="`quantity` must be one of"):
            line_values(recs, "minutes", d=24, k=2)

    def test_every_quantity_reads_a_record(self):
        rec = _record(3, 21.0)
        for name, get in QUANTITIES.items():
            assert get(rec) is not None and get(rec) > 0, name

    def test_summary_and_markdown(self):
        recs = [_record(m, 2.0 * 1.5**m * (1 + 0.1 * s)) for m in range(1, 8) for s in range(3)]
        recs.append(_record(4, 50.0, rel=0.5, status="5_span"))
        s = growth_summary({"d24": recs}, resamples=50)
        total = next(g for g in s["growth"] if g["quantity"] == "seconds")
        assert total["chosen"] == "exp(b·m)" and total["last_factor"] == pytest.approx(1.5, rel=1e-6)
        assert total["runs"] == [3] * 7
        cell4 = next(c for c in s["cells"]["d24"] if c["m"] == 4)
        assert (cell4["successes"], cell4["runs"], cell4["failures"]) == (3, 4, {"5_span": 1})
        assert cell4["tolerances"] == [0.1] and cell4["searches"] == ["vp"]
        assert cell4["rest_seconds"] == pytest.approx(0.1 * 2.0 * 1.5**4 * 1.1)  # the median run's rest
        assert len(s["statements"]) == 2 and "×1.50" in s["statements"][0]
        assert s["headline"].startswith("At fixed (d, k = 2), with phase 4's tolerance (0.1) and phase 6's search "
                                        "(vp) fixed, the time per learned layer grows like exp(b·m) at d = 24 "
                                        "(m = 1–7; ×1.50 [")
        assert "and the examples it draws grow like exp(b·m) at d = 24 (m = 1–7; ×2.00 [" in s["headline"]
        md = summary_markdown(s)
        assert "| d24 | seconds | 1–7 | exp(b·m) |" in md and "## The cells of d24" in md
        assert "5_span 1" in md
        json.dumps(s)  # the summary is JSON
        with pytest.raises(ValueError, match="lines are"):
            growth_summary({"d99": recs})
        # the lines in GROWTH_LINES' order however they are given (the command's order, the page's folder order)
        d16 = [r | {"spec": r["spec"] | {"d": 16}} for r in recs if r["spec"]["m"] <= 6]
        a = growth_summary({"d24": recs, "d16": d16}, resamples=20)
        b = growth_summary({"d16": d16, "d24": recs}, resamples=20)
        assert [g["line"] for g in a["growth"]] == [g["line"] for g in b["growth"]]
        assert [g["line"] for g in a["growth"]][0] == "d16" and list(a["cells"]) == ["d16", "d24"]
        assert a["headline"] == b["headline"]

    def test_table_of_a_quantity_without_a_choice(self):
        g = growth_of({1: [1.0], 2: [2.0]})
        row = growth_table([("d24", "seconds", g)]).splitlines()[2]
        assert row.startswith("| d24 | seconds | 1–2 | – |")


class TestDesign:
    def test_the_lines_hold_d_k_and_the_options_fixed(self):
        from learner.study.frontier import parse_grid

        for name, blocks in GROWTH_LINES.items():
            cells = parse_grid(blocks)
            assert len({d for _, d, _, _ in cells}) == 1, name
        assert {m for m, _, _, _ in parse_grid(GROWTH_LINES["d16"])} == set(range(1, 7))
        assert {m for m, _, _, _ in parse_grid(GROWTH_LINES["d24"])} == set(range(1, 11))
        assert {m for m, _, _, _ in parse_grid(GROWTH_LINES["d32"])} == set(range(1, 14))
        assert {(m, k) for m, _, k, _ in parse_grid(GROWTH_LINES["k"])} == {
            (m, k) for m in (2, 4, 6, 8) for k in (3, 4)}
        assert GROWTH_OPTIONS == {"refined_tol": 0.1, "search": "vp"}

    @pytest.mark.parametrize("line", ["d16", "d24", "d32"])
    def test_each_line_stops_where_the_setting_does(self, line):
        from learner.assumptions import max_sound_m
        from learner.study.frontier import parse_grid

        cells = parse_grid(GROWTH_LINES[line])
        d = cells[0][1]
        assert max(m for m, _, _, _ in cells) == max_sound_m(d, 2)


class TestCommandLine:
    def test_bad_options_are_named(self, tmp_path, capsys):
        with pytest.raises(SystemExit):
            main(["growth", "--out", str(tmp_path / "g"), "--resamples", "0"])
        assert "--resamples" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            main(["growth", "--out", str(tmp_path / "g"), "--lines", "d99"])
        assert "--lines" in capsys.readouterr().err

    def test_library_refuses_unknown_lines(self, tmp_path):
        with pytest.raises(ValueError, match="`lines` must be names of"):
            growth.growth_study(tmp_path / "g", lines=["d99"])
        assert not (tmp_path / "g").exists()

    @pytest.mark.slow
    def test_a_tiny_line_end_to_end(self, tmp_path, monkeypatch, capsys):
        monkeypatch.setitem(GROWTH_LINES, "d24", ("m=1..3,k=2,d=8,seeds=2",))
        out = tmp_path / "g"
        assert main(["growth", "--out", str(out), "--lines", "d24", "--learn-workers", "1", "--resamples", "20",
                     "--no-progress"]) == 0
        said = capsys.readouterr().out
        assert "time at (d, k) = (8, 2)" in said
        s = json.loads((out / "growth.json").read_text())
        assert [c["m"] for c in s["cells"]["d24"]] == [1, 2, 3]
        assert (out / "growth.md").exists() and (out / "d24" / "summary.json").exists()
        before = (out / "growth.json").read_text()
        assert main(["growth", "--out", str(out), "--lines", "d24", "--resamples", "20", "--summarise-only"]) == 0
        assert (out / "growth.json").read_text() == before


class TestFigure:
    def test_panels_and_the_priced_panel(self, tmp_path, monkeypatch):
        pytest.importorskip("matplotlib")
        import matplotlib.pyplot as plt

        recs = [_record(m, 2.0 * 1.5**m * (1 + 0.1 * s)) for m in range(1, 6) for s in range(2)]
        recs += [_record(m, 3.0 * 1.6**m * (1 + 0.1 * s), d=32) for m in range(1, 5) for s in range(2)]
        prices = [{"m": m, "d": 24, "k": 2, "seconds": 10.0**m, "interval": [5.0**m, 20.0**m], "tuples": 10.0**m,
                   "per_tuple_seconds": 1e-4} for m in range(1, 6)]
        lines = {"d24": [r for r in recs if r["spec"]["d"] == 24], "d32": [r for r in recs if r["spec"]["d"] == 32]}
        titles = []
        real_close = plt.close

        def keep_titles(fig):
            titles.extend(ax.get_title() for ax in fig.axes if ax.get_visible())
            real_close(fig)

        monkeypatch.setattr(plt, "close", keep_titles)
        growth.plot_growth(growth_summary(lines, resamples=20, prices=prices), tmp_path / "g.png")
        assert (tmp_path / "g.png").stat().st_size > 0
        assert titles == ["d = 24, k = 2: time per run and per phase", "d = 32, k = 2: time per run and per phase",
                          "examples per run, k = 2", "ours against the paper's phase 6 (13 points per hull axis)"]
        titles.clear()
        growth.plot_growth(growth_summary({"d24": lines["d24"]}, resamples=20), tmp_path / "h.png")
        assert titles == ["d = 24, k = 2: time per run and per phase", "examples per run, k = 2"]


class TestWhatMutationsFound:
    """Rules a mutation run found untested, each checked where it shows."""

    def test_the_interval_is_the_central_ninety_five_percent(self):
        assert growth._interval(list(range(1001))) == pytest.approx([25.0, 975.0])
        assert growth._interval([None, math.nan, 3.0]) == [3.0, 3.0]
        assert growth._interval([]) is None

    def test_every_cell_is_drawn_the_first_one_too(self):
        # An exact law but for the first cell, a hundred times off: only resamples that draw it move the fit.
        values = {m: [math.exp(0.5 * m) * (100.0 if m == 1 else 1.0)] for m in MS}
        lo, hi = growth._bootstrap(values, np.random.default_rng(0), 300)["last_factor"]["exp(b·m)"]
        assert hi - lo > 0.05

    def test_the_choice_of_each_resample_is_the_leave_one_out_choice(self):
        # One run per cell: every resample is the line itself, so the bootstrap's choice is choose_shape's.
        for seed in range(20):
            rng = np.random.default_rng(seed)
            values = {m: [math.exp(0.4 * m + 0.02 * m * m + rng.normal(0, 0.3))] for m in MS}
            want = choose_shape(fit_growth_shapes(values))
            assert growth._bootstrap(values, np.random.default_rng(1), 5)["chosen"] == {want: 1.0}, seed

    def test_two_cells_give_a_factor_but_no_choice(self):
        fits = {f["shape"]: f for f in fit_growth_shapes({1: [2.0], 2: [6.0]})}
        assert fits["exp(b·m)"]["last_factor"] == pytest.approx(3.0)
        assert fits["exp(b·m)"]["first_factor"] == pytest.approx(3.0)
        g = growth_of({1: [2.0], 2: [6.0]})
        assert g["resamples"] == 0 and g["chosen_share"] is None and g["last_factor_interval"] is None

    def test_values_below_one_are_kept(self):
        recs = [_record(1, 0.5), _record(2, 0.75)]
        assert line_values(recs, "seconds", d=24, k=2) == {1: [0.5], 2: [0.75]}

    def test_a_phase_missing_from_the_timings_counts_as_nothing(self):
        rec = _record(3, 10.0)
        del rec["timings"]["5_span"]
        phases = sum(0.9 * 10.0 * (i + 1) / 21 for i, p in enumerate(PHASES) if p != "5_span")
        assert growth._rest(rec) == pytest.approx(10.0 - phases)


def _adam(m, seconds_to_coarse, *, d=24, method="adam", role="eval"):
    return {"spec": {"method": method, "m": m, "d": d, "k": 2, "role": role}, "outcome": "finished",
            "errors": {"relative_error": 1e-9}, "timings": {"total": 9999.0}, "examples_drawn": 25000,
            "diagnostics": {"fit": {"seconds_to": {"1e-03": seconds_to_coarse, "1e-08": None}}}}


class TestBudgetedFrontier:
    def _rows(self, recs, **kw):
        return {(r["method"], r["d"]): r for r in budgeted_frontier(recs, ds=(16, 24), **kw)}

    def test_largest_m_whose_median_layer_is_within_the_budget(self):
        recs = ([_record(1, t) for t in (10.0, 20.0, 30.0)]
                + [_record(2, t) for t in (100.0, 700.0, 800.0)]  # median 700 s: over
                + [_record(3, t) for t in (50.0, 60.0, 600.0)]  # median 60 s; 600 s is within (at most)
                + [_record(4, t) for t in (1.0, 601.0, 601.0)])  # reached, but two after the budget
        row = self._rows(recs)[("provable", 24)]
        assert (row["m"], row["seconds"], row["layers"], row["within"]) == (3, 60.0, 3, 3)
        assert row["exact"] and row["measured"] == [1, 2, 3, 4]
        # the budget moves the frontier: at 601 s the fourth cell passes and nothing larger was measured
        row = self._rows(recs, budget=601.0)[("provable", 24)]
        assert (row["m"], row["exact"], row["within"]) == (4, False, 3)

    def test_a_layer_not_learned_counts_as_never_however_fast(self):
        recs = [_record(1, 5.0)] * 3 + [_record(2, 1.0, rel=0.5), _record(2, 1.0, rel=0.5), _record(2, 2.0)]
        row = self._rows(recs)[("provable", 24)]
        assert (row["m"], row["exact"]) == (1, True)
        # two layers: the median is within only when both are
        row = self._rows([_record(1, 5.0), _record(1, 5.0, outcome="error")])[("provable", 24)]
        assert row["m"] is None and row["measured"] == [1]

    def test_baselines_are_timed_at_their_first_validation_below_the_tolerance(self):
        recs = ([_adam(5, t) for t in (30.0, 40.0, 50.0)] + [_adam(6, t) for t in (500.0, None, 550.0)]
                + [_adam(7, t) for t in (300.0, None, None)] + [_adam(8, 1.0, role="tune")] * 3
                + [_adam(9, 1.0, d=32)] * 3 + [_adam(6, 2.0, method="torch-adam", d=16)] * 3)
        rows = self._rows(recs)
        assert (rows[("adam", 24)]["m"], rows[("adam", 24)]["seconds"], rows[("adam", 24)]["within"]) == (6, 550.0, 2)
        assert rows[("adam", 24)]["measured"] == [5, 6, 7] and rows[("adam", 24)]["exact"]
        assert rows[("adam", 16)] == {"method": "adam", "d": 16, "k": 2, "m": None, "seconds": None, "layers": 0,
                                      "within": 0, "exact": False, "measured": []}
        assert rows[("torch-adam", 16)]["m"] == 6 and ("adam", 32) not in rows
        assert budgeted_frontier(recs, ds=(24,), k=3) == []

    def test_markdown_and_bad_input(self):
        recs = ([_record(m, 10.0) for m in (1, 2)] + [_record(3, 900.0)]
                + [_adam(2, 5.0, d=16)] * 2 + [_adam(3, None, d=24)] + [_adam(1, 7.0, method="torch-adam")])
        table = frontier_markdown(budgeted_frontier(recs, ds=(16, 24)), {"provable": "learner", "adam": "Adam"})
        assert table.splitlines()[0] == "| d | learner | Adam | torch-adam |"
        assert table.splitlines()[2] == "| 16 | not measured | ≥ 2 (5 s; 2/2) | not measured |"
        assert table.splitlines()[3] == "| 24 | 2 (10 s; 1/1) | none of m = 3 | ≥ 1 (7 s; 1/1) |"
        with pytest.raises(ValueError, match="budget"):
            budgeted_frontier(recs, ds=(16,), budget=0.0)
        # a tolerance the baselines did not time would count every baseline layer as never: refused
        with pytest.raises(ValueError, match=r"`tol` must be a milestone the baselines timed .*got tol=0.0001"):
            budgeted_frontier(recs, ds=(16, 24), tol=1e-4)
        assert budgeted_frontier([_record(1, 10.0)], ds=(24,), tol=1e-4)[0]["m"] == 1  # the learner: any tol


class TestLineEnd:
    def _cells(self, d, ms, slowest=10.0):
        return [{"d": d, "k": 2, "m": m, "successes": 1, "median_seconds": 8.0, "max_seconds": slowest,
                 "phase_seconds": {p: (6.0 if p == "4_refined_sculpt" else 0.2) for p in PHASES}} for m in ms]

    def test_what_stops_a_line(self):
        from learner.assumptions import max_sound_m

        sound = max_sound_m(24, 2)
        end = line_end("d24", self._cells(24, range(1, sound + 1)))
        assert (end["m"], end["stopped_by"], end["sound_m"], end["phase"]) == (sound, "sound", sound,
                                                                              "4_refined_sculpt")
        assert end["phase_share"] == pytest.approx(0.75)
        assert "refuses before its first example" in end["sentence"] and "phase 4 is the costliest" in end["sentence"]
        short = line_end("d24", self._cells(24, range(1, sound - 1)))
        assert short["stopped_by"] == "not run further" and short["m"] == sound - 2
        over = line_end("d24", self._cells(24, range(1, sound + 1), slowest=growth.RUN_BUDGET + 1))
        assert over["stopped_by"] == "budget"
        at = line_end("d24", self._cells(24, range(1, sound + 1), slowest=growth.RUN_BUDGET))
        assert at["stopped_by"] == "sound"  # a run of exactly the budget is within it
        # a grid that steps past the sound m: its next cell is refused, not left unrun
        refused = [c | {"successes": 0} for c in self._cells(24, [sound + 1])]
        skip = line_end("d24", self._cells(24, range(1, sound)) + refused)
        assert skip["stopped_by"] == "grid" and skip["m"] == sound - 1
        assert f"its next m = {sound + 1} is past it" in skip["sentence"]
        # a cell within the sound m that the learner failed: the line ends there, and says why
        below = [c | {"successes": 0, "runs": 3, "failures": {"6_search": 2, "budget": 1}}
                 for c in self._cells(24, [sound])]
        failed = line_end("d24", self._cells(24, range(1, sound)) + below)
        assert failed["stopped_by"] == "failed" and failed["m"] == sound - 1
        assert f"at its next m = {sound} (within the sound m = {sound}) the learner learned none of its 3 " \
               "layers (6_search 2, budget 1)" in failed["sentence"]

    def test_only_successful_cells_at_k_2_count(self):
        cells = self._cells(24, [1, 2, 3])
        cells[-1]["successes"] = 0
        assert line_end("d24", cells)["m"] == 2
        assert line_end("k", [c | {"k": 3} for c in cells]) is None
        at3 = line_end("k", [c | {"k": 3} for c in cells], k=3)
        assert at3["k"] == 3 and at3["m"] == 2
        assert at3["sentence"].startswith("k at k = 3 ends at m = 2: at its next m = 3")


def test_k_axis_table_puts_the_k_line_beside_k_2_at_its_d():
    """The k line's cells beside the d24 line's at the same m; other d and the check lines stay out; a refused
    cell shows its runs without success."""
    def cell(m, k, d=24, successes=1, runs=1, seconds=None):
        return {"m": m, "k": k, "d": d, "successes": successes, "runs": runs,
                "median_seconds": seconds if seconds is not None else 1.5 * m * k, "median_examples": 1000.0 * m}

    cells = {"d24": [cell(m, 2) for m in range(1, 11)], "d16": [cell(2, 2, d=16, seconds=99.0)],
             "exhaustive": [cell(2, 2, seconds=77.0)],
             "k": [cell(2, 3), cell(4, 3), cell(2, 4), cell(4, 4, successes=0, runs=5) | {"failures": {"6_search": 5}},
                   cell(6, 4, successes=0, runs=3) | {"failures": {"setting": 3}}]}
    lines = growth.k_axis_table(cells).splitlines()
    assert lines[0] == "| m | k = 2 | k = 3 | k = 4 |"
    assert lines[2] == "| 2 | 6 s, 2,000 (1/1) | 9 s, 2,000 (1/1) | 12 s, 2,000 (1/1) |"
    assert lines[3] == "| 4 | 12 s, 4,000 (1/1) | 18 s, 4,000 (1/1) | none (0/5) |"
    assert lines[4] == "| 6 | 18 s, 6,000 (1/1) | – | refused: unsound (0/3) |"
    assert len(lines) == 5
