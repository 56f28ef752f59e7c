"""The learn-hard study: learners on the hard families (lowerbounds.learnhard)."""

import itertools
import json
import math
import sys
from decimal import Decimal

import mpmath
import numpy as np
import pytest

from learner import enumerate_cube
from learner.sweep.engine import comparable
from lowerbounds import learnhard
from lowerbounds.cli import main
from lowerbounds.learnhard import (
    HardSpec,
    HardStudyResult,
    cell_subset,
    check_study,
    learn_hard_study,
    plan_hard_runs,
    planted_member,
    run_hard,
    summarise_hard,
)
from lowerbounds.registry import family_names
from lowerbounds.sq import sparse_linear_instance, sq_hard_instance

TINY_ADAM = {"max_iter": 60, "restarts": 1, "patience": 60}


def _spec(family="sq", method="adam", m=2, d=6, seed=0, **budget):
    b = {"start": 200, "max_examples": 2000, "max_seconds": 30.0, "target": 1e-3} | budget
    opts = learnhard.ADAM_OPTIONS | TINY_ADAM if method == "adam" else {}
    return HardSpec(family, method, m, d, seed, 7, budget=tuple(sorted(b.items())) if method == "adam" else (),
                    options=tuple(sorted(opts.items())))


class TestControl:
    def test_formula_holds_on_every_input(self):
        ctl = sparse_linear_instance(6, 4, subset=(1, 3, 5))
        X = next(enumerate_cube(2, 6, batch=4096))
        z = X[:, 0] * X[:, 1]
        signal = (X[:, 0, 0] - X[:, 1, 0]) * z[:, [1, 3, 5]].sum(axis=1) / 3
        np.testing.assert_allclose(ctl.layer(X)[:, 0, 0], 2 * X[:, 1, 0] + signal, atol=1e-12)
        assert ctl.sharpness_error < 1e-12

    def test_weight_on_degree_one_where_the_parity_has_none(self):
        ctl, hard = sparse_linear_instance(10, 4, rng=3), sq_hard_instance(10, 4, rng=3)
        assert ctl.subset == hard.subset  # the same hidden subset from the same seed
        A_ctl, A_hard = ctl.fourier_by_degree[0], hard.fourier_by_degree[0]
        assert abs(A_ctl[1] - mpmath.mpf(1) / 3) < 1e-12 and all(abs(a) < 1e-12 for a in A_ctl[2:])
        # Negative control: the parity member has nothing below degree r = 3.
        assert all(abs(a) < 1e-12 for a in A_hard[:3]) and abs(A_hard[3] - 1) < 1e-12

    def test_m2_control_is_the_parity_member(self):
        np.testing.assert_allclose(sparse_linear_instance(8, 2, rng=1).layer.ws, sq_hard_instance(8, 2, rng=1).layer.ws,
                                   atol=1e-12)


class TestProtocol:
    def test_sizes_double_until_the_example_budget(self):
        # 60 Adam steps cannot fit a parity of two coordinates: every size is tried.
        rec = run_hard(_spec(m=3, d=8, max_examples=1100))  # fits of 450, 650, 1050 examples; the next: 1850
        assert [a["examples"] for a in rec["attempts"]] == [450, 650, 1050]
        assert not rec["success"] and rec["budget_out"] == "examples" and rec["examples"] == 1050
        assert all(a["error"] > 1e-3 for a in rec["attempts"])
        assert rec["examples_drawn"] == sum(a["examples"] for a in rec["attempts"])
        assert rec["steps"] == sum(a["steps"] for a in rec["attempts"]) > 0

    def test_time_budget_stops_the_growth(self):
        rec = run_hard(_spec(family="sq", m=3, d=8, max_examples=10**6, max_seconds=1e-3))
        assert len(rec["attempts"]) == 1 and rec["budget_out"] == "time" and not rec["success"]
        assert rec["status"] == "budget (time)" and "time budget" in rec["message"]

    def test_success_is_the_relative_error_on_fresh_inputs(self):
        """m = 2, d = 6 is learned from a few hundred examples; the stop is the first size that reaches the target."""
        spec = HardSpec("control", "adam", 2, 6, 0, 7, budget=tuple(sorted(
            {"start": 200, "max_examples": 5000, "max_seconds": 60.0, "target": 1e-3}.items())),
            options=tuple(sorted(learnhard.ADAM_OPTIONS.items())))
        rec = run_hard(spec)
        assert rec["success"] and rec["final_error"] <= 1e-3 and rec["budget_out"] is None
        assert all(a["error"] > 1e-3 for a in rec["attempts"][:-1])

    def test_a_run_is_a_function_of_its_specification(self):
        a, b = run_hard(_spec()), run_hard(HardSpec.from_dict(_spec().to_dict()))
        assert comparable(a) == comparable(b)
        # sq and control of one seed share the member's subset and the examples' seed.
        assert planted_member(_spec("sq", m=3, d=8))[0].subset == planted_member(_spec("control", m=3, d=8))[0].subset

    def test_learner_and_exhaustive_records(self):
        prov = run_hard(HardSpec("sq", "provable", 2, 8, 0, 7, options=tuple(sorted(
            (learnhard.PROVABLE_OPTIONS | learnhard.QUICK["provable"]).items()))))
        assert prov["outcome"] == "finished" and not prov["success"] and prov["message"]
        ex = run_hard(HardSpec("lwr", "exhaustive", 0, 5, 0, 7, n=3, q=7))
        assert ex["success"] and ex["secrets_tried"] == 343 and ex["member"]["secret"]

    def test_a_raising_run_is_recorded(self, monkeypatch):
        import lowerbounds.sq

        def broken(*a, **k):
            raise RuntimeError("injected")

        monkeypatch.setattr(lowerbounds.sq, "sq_hard_instance", broken)
        rec = run_hard(_spec())
        assert rec["outcome"] == "error" and "injected" in rec["message"] and "Traceback" in rec["traceback"]


def _record(family, m, d, examples, seconds, budget_out=None, success=True):
    return {"spec": {"family": family, "method": "adam", "m": m, "d": d, "n": 0, "q": 0}, "outcome": "finished",
            "success": success, "examples": examples, "examples_drawn": examples, "seconds": seconds, "steps": 10,
            "final_error": 1e-4, "budget_out": budget_out, "status": "learned", "message": ""}


class TestSummary:
    def test_slopes_are_recovered(self):
        recs = [_record("sq", 3, d, 5.0 * d**2, 0.1 * d**3) for d in (8, 12, 16, 24)]
        recs += [_record("control", 3, d, 1000.0, 2.0) for d in (8, 12, 16, 24)]  # flat: the negative control
        g = summarise_hard(recs)["growth"]
        assert g["sq, m=3"]["examples_slope"] == pytest.approx(2.0)
        assert g["sq, m=3"]["seconds_slope"] == pytest.approx(3.0)
        assert g["control, m=3"]["examples_slope"] == pytest.approx(0.0, abs=1e-9)
        assert g["sq, m=3"]["sq_prediction"] == 2 and not g["sq, m=3"]["censored"]
        assert g["sq, m=3"]["examples_slope_learned"] == pytest.approx(2.0)  # every cell learned: the same fit

    def test_budget_out_marks_the_fit_censored(self):
        recs = [_record("sq", 4, d, 1000.0 * d, 40.0, budget_out="time" if d > 8 else None, success=d == 8)
                for d in (8, 12)]
        g = summarise_hard(recs)["growth"]["sq, m=4"]
        assert g["censored"] and not g["all_learned"]
        assert g["ds_learned"] == [8] and np.isnan(g["examples_slope_learned"])  # one learned cell: no fit


    def test_a_cell_where_every_run_raised_is_not_all_learned(self):
        """``all_learned`` counts the cells where every run raised: a family whose runs all raised is not "all
        learned" (as the empty ``all`` over the finished cells alone would say)."""
        recs = [_record("sq", 3, d, 0, 0) | {"outcome": "error", "success": False} for d in (8, 12)]
        assert not summarise_hard(recs)["growth"]["sq, m=3"]["all_learned"]
        learned = [_record("sq", 3, d, 100.0 * d, 1.0) for d in (8, 12)]  # control: every run learned
        assert summarise_hard(learned)["growth"]["sq, m=3"]["all_learned"]


class TestPlotWhenNothingFinished:
    """When every run raised, ``plot_hard`` draws its figure without a warning (no legend of lines without
    points, in either panel) and the log says, per panel, that no run finished."""

    @staticmethod
    def _plot(recs, tmp_path):
        pytest.importorskip("matplotlib")
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            path = learnhard.plot_hard(summarise_hard(recs), tmp_path / "h.png")
        assert path.read_bytes()[:4] == b"\x89PNG"

    def test_says_no_run_finished(self, tmp_path, caplog):
        recs = [_record(f, 3, d, 0, 0) | {"outcome": "error"} for f in ("sq", "control") for d in (8, 12)]
        recs += [_lwr_record(6, 11)]
        self._plot(recs, tmp_path)
        assert "(sq, control): no run finished: 4 of 4 runs raised an error" in caplog.text
        assert "(lwr): no run finished: 1 of 1 runs raised an error" in caplog.text

    def test_control_finished_runs_say_nothing(self, tmp_path, caplog):
        recs = [_record(f, 3, d, 100.0 * d, 1.0) for f in ("sq", "control") for d in (8, 12)]
        recs += [_lwr_record(6, 11, outcome="finished")]
        self._plot(recs, tmp_path)
        assert "no run finished" not in caplog.text


def _lwr_record(n, q, outcome="error"):
    """A run of the LWR family; by default one that raised (as a member too large to build does)."""
    rec = {"spec": {"family": "lwr", "method": "adam", "m": 0, "d": n + 2, "n": n, "q": q}, "outcome": outcome,
           "success": False, "status": outcome, "message": "ValueError: refused"}
    if outcome == "finished":
        rec |= {"member": {"m": 3}, "examples": 100, "examples_drawn": 100, "seconds": 1.0, "steps": 10,
                "final_error": 0.5, "budget_out": "time", "status": "budget (time)"}
    return rec


def _sci(count):
    """``count`` as the table writes it past 2^53, from the exact integer (Decimal rounds exactly)."""
    mantissa, exponent = format(Decimal(count), ".2e").split("e")
    return f"{mantissa}e{int(exponent)}"


class TestSecretCount:
    """The LWR rows' q^n: finite in JSON and in the table for any n and q (n = 200, q = 1009 overflowed float64)."""

    @pytest.mark.parametrize("n, q, exact", [
        pytest.param(3, 7, True, id="small-exact"),
        pytest.param(8, 7, True, id="defaults-largest"),
        pytest.param(646, 3, False, id="just-below-float-max"),  # 3^646 ≈ 1.6e308 < 1.8e308
        pytest.param(647, 3, False, id="just-above-float-max"),
        pytest.param(200, 1009, False, id="n200-q1009"),
        pytest.param(5000, 1009, False, id="beyond-int-str-limit"),  # q^n has 15 020 digits
    ])
    def test_summary_json_and_table(self, tmp_path, n, q, exact):
        from learner.io import write_json

        summary = summarise_hard([_lwr_record(n, q), _lwr_record(n, q, "finished")])
        row = summary["lwr"][0]
        assert row["log2_secrets_q_n"] == pytest.approx(n * math.log2(q), rel=1e-15)
        log2 = n * math.log2(q)
        if log2 < 1023.9:  # float64 holds q^n: correctly rounded from the exact integer
            assert row["secrets_q_n"] == float(q**n)
        elif log2 > 1024:
            assert row["secrets_q_n"] is None
        written = json.loads(write_json(tmp_path / "summary.json", summary).read_text())
        assert written["lwr"][0]["log2_secrets_q_n"] == pytest.approx(log2, rel=1e-15)
        table = HardStudyResult([], summary, {}, {}).table()
        if exact:
            assert f"| {n} | {q**n:,} |" in table
        elif log2 < 4000:  # the exact integer is cheap to print for the reference
            assert f"| {n} | {_sci(q**n)} |" in table
        else:
            assert f"| {n} | " in table and "e15019 |" in table

    def test_lwr_error_rows_are_counted(self):
        row = summarise_hard([_lwr_record(200, 1009)])["rows"][0]
        assert row["errors_raised"] == 1 and row["m"] is None and row["statuses"] == {"error": 1}


class TestCellSubset:
    @pytest.mark.parametrize("m, d", [(2, 4), (3, 5), (4, 6), (3, 8), (2, 24), (4, 12)])
    def test_a_small_cell_is_a_random_order_of_every_subset(self, m, d):
        every = list(itertools.combinations(range(1, d), m - 1))
        drawn = [cell_subset(m, d, i, entropy=0) for i in range(len(every))]
        assert sorted(drawn) == every  # each subset exactly once

    @pytest.mark.parametrize("m, d", [(7, 24), (5, 40)])  # C(23, 6) = 100 947, C(39, 4) = 82 251: by rejection
    def test_a_large_cell_never_repeats(self, m, d):
        drawn = [cell_subset(m, d, i, entropy=3) for i in range(40)]
        assert len(set(drawn)) == 40 and all(len(S) == m - 1 and 0 not in S and max(S) < d for S in drawn)

    def test_the_study_draws_distinct_subsets_shared_with_the_control(self):
        """The 3 cells of docs/sweeps/learn-hard whose seeds repeated a subset (seed 0, 5 subsets)."""
        checked = check_study(ds=[8, 12, 24], ms=[2, 3, 4], subsets=5, lwr_ns=[2], q=7, families=["sq", "control"],
                              methods=["adam"], start=1000, max_examples=32_000, max_seconds=40.0, target=1e-3,
                              provable_seeds=1)
        specs = plan_hard_runs(checked, entropy=0)
        for m, d in ((2, 24), (3, 8), (4, 12)):
            sq = [planted_member(s)[0].subset for s in specs if (s.family, s.m, s.d) == ("sq", m, d)]
            ctl = [planted_member(s)[0].subset for s in specs if (s.family, s.m, s.d) == ("control", m, d)]
            assert len(sq) == 5 and len(set(sq)) == 5 and sq == ctl

    def test_other_entropy_other_order(self):
        """Negative control: the order depends on the study's seed (a fixed enumeration would pass the tests above)."""
        assert [cell_subset(3, 12, i, entropy=0) for i in range(5)] != [cell_subset(3, 12, i, entropy=1)
                                                                         for i in range(5)]

    @pytest.mark.parametrize("kw, match", [
        pytest.param({"m": 2, "d": 4, "index": 3}, r"`index` must be below the 3 hidden subsets of the cell m=2, d=4 "
                     r"\(C\(3, 1\)\); got index=3", id="index-past-the-cell"),
        pytest.param({"m": 2, "d": 4, "index": -1}, r"`index` must be at least 0; got index=-1", id="negative-index"),
        pytest.param({"m": 5, "d": 4, "index": 0}, r"d=4 is too small for m=5", id="d-below-m"),
        pytest.param({"m": 1, "d": 4, "index": 0}, r"`m` must be at least 2; got m=1", id="one-head"),
    ])
    def test_bad_inputs(self, kw, match):
        with pytest.raises(ValueError, match=match):
            cell_subset(**kw, entropy=0)


class TestStudy:
    @pytest.mark.slow  # a quick study end to end
    def test_quick_cli_end_to_end_and_resume(self, tmp_path, capsys):
        out = tmp_path / "study"
        assert main(["learn-hard", "--quick", "--out", str(out), "--no-progress", "--workers", "2"]) == 0
        text = capsys.readouterr().out
        runs = sorted((out / "runs").glob("*.json"))
        checked = check_study(**{k: learnhard.QUICK[k] for k in ("ds", "ms", "subsets", "lwr_ns", "start",
                                                                  "max_examples", "max_seconds")},
                              q=7, families=family_names(), methods=learnhard.METHODS, target=1e-3,
                              provable_seeds=1)
        planned = len(plan_hard_runs(checked, entropy=0))
        assert len(runs) == planned  # every registered family's runs
        if family_names() == ("sq", "control", "lwr"):  # the built-in three alone: 2 d × 2 m × 2 methods for the
            assert planned == 22                        # SQ family and its control, 2 n × 3 methods for LWR
        for name in ("summary.json", "summary.md", "learn_hard.png"):
            assert (out / name).exists()
        summary = json.loads((out / "summary.json").read_text())
        assert {r["family"] for r in summary["rows"]} == set(family_names())
        assert "Fitted growth in d" in text and "| 2 | 49 |" in text
        assert main(["learn-hard", "--quick", "--out", str(out), "--no-progress", "--serial"]) == 0
        assert f"runs: 0 run now, {planned} kept from earlier" in capsys.readouterr().out

    @pytest.mark.slow  # a quick learn-hard and a quick scaling study (~10 s); claim_study's unit tests run by default
    def test_one_study_per_directory_both_ways(self, tmp_path, capsys):
        out = tmp_path / "study"
        assert main(["learn-hard", "--quick", "--out", str(out), "--no-progress", "--serial"]) == 0
        capsys.readouterr()
        # One study per directory: learn-hard with other parameters, or a scaling study, is refused first.
        before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
        assert main(["learn-hard", "--quick", "--seed", "1", "--out", str(out), "--no-progress", "--serial"]) == 2
        assert "holds a learn-hard-study with other parameters (seed: 0 there, 1 here)" in capsys.readouterr().err
        from learner.cli import main as learner_main

        argv = ["scaling", "--m", "1", "--d", "6", "--k", "3", "--quick", "--serial", "--no-progress",
                "--out", str(out)]
        assert learner_main(argv) == 2
        assert "holds a learn-hard-study (see" in capsys.readouterr().err
        assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
        scaling_dir = tmp_path / "scaling"  # and the reverse
        assert learner_main(argv[:-1] + [str(scaling_dir)]) == 0
        capsys.readouterr()
        assert main(["learn-hard", "--quick", "--out", str(scaling_dir), "--no-progress", "--serial"]) == 2
        assert "holds a scaling-study (see" in capsys.readouterr().err

    @pytest.mark.parametrize("kw, match", [
        ({"ds": [3], "ms": [4]}, r"d=3 is too small for m=4: the hidden subset needs m − 1 = 3 coordinates"),
        ({"families": ["sq", "dense"]}, r"`families` entries must be in \(.*'sq'.*\); got 'dense'"),
        ({"methods": ["sgd"]}, r"`methods` entries must be in \('adam', 'provable', 'exhaustive'\); got 'sgd'"),
        ({"max_examples": 0}, r"`max_examples` must be at least 1; got max_examples=0"),
        ({"max_examples": 1000}, r"`max_examples` must allow the first fit \(start=1000 plus validation: 1250\)"),
        ({"max_seconds": 0}, r"`max_seconds`"),
        ({"max_seconds": -5.0}, r"`max_seconds`"),
        ({"start": 0}, r"`start` must be at least 1; got start=0"),
        ({"target": 0}, r"`target`"),
        ({"target": 2.0}, r"`target` must be below 1"),
        ({"subsets": 0}, r"`subsets` must be at least 1; got subsets=0"),
        ({"ms": [9]}, r"`ms` entries must be at most 7"),
        ({"q": 2}, r"`q` must be at least 3; got q=2"),
        ({"lwr_ns": [12]}, r"the exhaustive search refuses q\^n"),
        ({"ds": []}, r"`ds` must hold at least one value; got ds=\[\]"),
        ({"ds": [4, 8], "ms": [2], "subsets": 4}, r"`subsets` must be at most the number of distinct hidden subsets "
         r"of every \(m, d\) cell; the cell m=2, d=4 has C\(3, 1\) = 3; got subsets=4"),
        ({"ds": [5, 8], "ms": [2, 3], "subsets": 5}, r"the cell m=2, d=5 has C\(4, 1\) = 4; got subsets=5"),
    ])
    def test_bad_parameters_refused_before_anything_runs(self, tmp_path, kw, match):
        out = tmp_path / "never"
        with pytest.raises((TypeError, ValueError), match=match):
            learn_hard_study(out, **kw)
        assert not out.exists()

    def test_cli_bad_parameter_exit_2(self, tmp_path, capsys):
        assert main(["learn-hard", "--out", str(tmp_path / "x"), "--d", "3", "--m", "4"]) == 2
        assert "--d=3 is too small for --m=4" in capsys.readouterr().err
        assert not (tmp_path / "x").exists()


class TestCliBackend:
    """``learn-hard``'s backend flags: refused in one line, exit 2, before the study starts or ``--out`` exists."""

    @pytest.fixture
    def no_study(self, monkeypatch):
        def started(*a, **k):
            raise AssertionError("the study must not start")

        monkeypatch.setattr(learnhard, "learn_hard_study", started)

    @pytest.mark.parametrize("flags, message", [
        pytest.param(["--scheduler", ""], "error: --scheduler must be a Dask scheduler address (e.g. "
                     "tcp://host:8786); got an empty address --scheduler ''.", id="empty-scheduler"),
        pytest.param(["--scheduler", "  "], "error: --scheduler must be a Dask scheduler address (e.g. "
                     "tcp://host:8786); got an empty address --scheduler '  '.", id="blank-scheduler"),
        pytest.param(["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"],
                     "error: give at most one of --workers and --scheduler: the Dask cluster's workers are its own; "
                     "got --workers 2 --scheduler tcp://127.0.0.1:1.", id="workers-and-scheduler"),
        pytest.param(["--scheduler", "tcp://127.0.0.1:1", "--serial"],
                     "error: give at most one of --scheduler and --serial.", id="serial-and-scheduler"),
    ])
    def test_bad_flags(self, tmp_path, capsys, no_study, flags, message):
        out = tmp_path / "never"
        assert main(["learn-hard", "--quick", "--out", str(out), "--no-progress", *flags]) == 2
        assert capsys.readouterr().err == message + "\n"
        assert not out.exists()

    def test_an_unreachable_scheduler_is_one_line_and_claims_nothing(self, tmp_path, capsys, monkeypatch):
        pytest.importorskip("dask.distributed")
        from learner import parallel

        monkeypatch.setattr(parallel, "SCHEDULER_CONNECT_TIMEOUT", 1.0)
        out = tmp_path / "never"
        assert main(["learn-hard", "--quick", "--out", str(out), "--scheduler", "tcp://127.0.0.1:1"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: could not reach the Dask scheduler at 'tcp://127.0.0.1:1' (--scheduler)")
        assert err.count("\n") == 1 and not out.exists()

    def test_scheduler_without_dask(self, tmp_path, capsys, monkeypatch, no_study):
        monkeypatch.setitem(sys.modules, "dask.distributed", None)  # `import dask.distributed` raises ImportError
        out = tmp_path / "never"
        assert main(["learn-hard", "--quick", "--out", str(out), "--scheduler", "tcp://127.0.0.1:1"]) == 2
        err = capsys.readouterr().err
        assert err == "error: --scheduler needs Dask: pip install 'provable-attention[distributed]'\n"
        assert not out.exists()

    def test_too_many_subsets(self, tmp_path, capsys):
        out = tmp_path / "never"
        assert main(["learn-hard", "--out", str(out), "--families", "sq", "--methods", "adam", "--d", "4", "8",
                     "--m", "2", "--subsets", "4"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: `--subsets` must be at most")
        assert "--m=2, --d=4 has C(3, 1) = 3; got --subsets=4" in err
        assert err.count("\n") == 1 and not out.exists()


def test_every_line_of_the_examples_panel_has_its_own_colour(tmp_path, monkeypatch):
    """The SQ family and its control at the same m are two lines: a shared colour would tell them apart by dash
    alone (two families at two m: four lines, four colours)."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    figures = []
    subplots = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **kw: figures.append(subplots(*a, **kw)) or figures[-1])
    monkeypatch.setattr(plt, "close", lambda fig: None)  # keep the figure to read its lines
    recs = [_record(f, m, d, 100.0 * d, 1.0) for f in ("sq", "control") for m in (2, 3) for d in (8, 12)]
    learnhard.plot_hard(summarise_hard(recs), tmp_path / "h.png")
    lines = [line for line in figures[0][1][0].get_lines() if not line.get_label().startswith("_")]
    assert sorted(line.get_label() for line in lines) == ["control, m=2", "control, m=3", "sq, m=2", "sq, m=3"]
    assert len({line.get_color() for line in lines}) == 4
