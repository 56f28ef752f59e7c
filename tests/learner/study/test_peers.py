"""learner.study.peers: the learner, numpy Adam and torch Adam side by side (quick budgets: a smoke test)."""

import importlib.util
import json
import math

import pytest

from learner.cli import main
from learner.study.peers import peer_rows, peer_table, seconds_to

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="the torch extra is not installed (pip install -e '.[torch]')")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("peers") / "study"
    argv = ["peers", "--m", "1", "2", "--d", "6", "--seeds", "1", "--quick", "--serial", "--no-progress",
            "--seed", "3", "--out", str(out)]
    assert main(argv) == 0
    return out, json.loads((out / "summary.json").read_text(encoding="utf-8"))


@needs_torch
class TestPeerStudy:
    def test_every_method_on_the_same_layers(self, study):
        out, summary = study
        from learner.sweep.methods import present_names

        methods = present_names()  # every method this machine can run, read from the registry
        assert {"provable", "adam", "torch-adam"} <= set(methods)
        assert [(r["m"], r["method"]) for r in summary["rows"]] == [(m, mt) for m in (1, 2) for mt in methods]
        records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((out / "runs").glob("*.json"))]
        assert len(records) == 2 * len(methods)
        by_m = {}
        for rec in records:  # the method is not part of the seed: one entropy and spawn key per m
            by_m.setdefault(rec["spec"]["m"], set()).add((rec["spec"]["entropy"], tuple(rec["spec"]["spawn_key"])))
        assert all(len(keys) == 1 for keys in by_m.values())
        torch_rec = next(r for r in records if r["spec"]["method"] == "torch-adam")
        assert torch_rec["diagnostics"]["fit"]["threads"] == 1  # like with like: one thread per method
        import torch

        assert summary["versions"]["torch"] == torch.__version__

    def test_table_and_summarise_only(self, study, capsys):
        out, summary = study
        table = (out / "summary.md").read_text(encoding="utf-8")
        assert "time to 1e-03 (reached)" in table and "| torch-adam |" in table
        capsys.readouterr()
        assert main(["peers", "--m", "1", "2", "--d", "6", "--seeds", "1", "--quick", "--no-progress", "--seed", "3",
                     "--summarise-only", "--out", str(out)]) == 0
        from learner.sweep.methods import present_names

        assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["rows"] == summary["rows"]
        assert f"0 run now, {2 * len(present_names())} kept" in capsys.readouterr().out  # two layers per method

    def test_other_parameters_are_refused_in_the_same_directory(self, study, capsys):
        out, _ = study
        assert main(["peers", "--m", "1", "--d", "6", "--seeds", "1", "--quick", "--serial", "--no-progress",
                     "--out", str(out)]) == 2
        assert "use another --out directory" in capsys.readouterr().err


def _rec(method, *, total=10.0, err=1e-12, seconds_to=None, outcome="finished"):
    rec = {"spec": {"method": method, "m": 1, "d": 4, "k": 2}, "outcome": outcome, "timings": {"total": total},
           "errors": {"relative_error": err}, "examples_drawn": 100, "diagnostics": {}}
    if seconds_to is not None:
        rec["diagnostics"] = {"fit": {"seconds_to": seconds_to}}
    return rec


class TestMilestoneTimes:
    def test_learner_time_is_its_total_when_its_layer_is_good_enough(self):
        assert seconds_to(_rec("provable", err=1e-12), 1e-8) == 10.0
        assert seconds_to(_rec("provable", err=1e-5), 1e-8) is None  # control: not that good
        assert seconds_to(_rec("provable", err=1e-5), 1e-3) == 10.0
        assert seconds_to(_rec("provable", outcome="error"), 1e-3) is None

    def test_without_torch_the_command_says_how_to_install_it(self, tmp_path, capsys, monkeypatch):
        import sys

        monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
        assert main(["peers", "--quick", "--no-progress", "--out", str(tmp_path / "o")]) == 2
        assert "pip install -e '.[torch]'" in capsys.readouterr().err

    def test_baselines_report_their_own_crossings(self):
        rec = _rec("adam", seconds_to={"1e-03": 2.0, "1e-08": None})
        assert seconds_to(rec, 1e-3) == 2.0 and seconds_to(rec, 1e-8) is None

    def test_rows_count_who_reached_and_take_medians_of_those(self):
        recs = [_rec("torch-adam", seconds_to={"1e-03": t, "1e-08": None}) for t in (1.0, 3.0, None)]
        (row,) = peer_rows(recs)
        assert row["milestones"]["1e-03"] == {"reached": 2, "median_seconds": 2.0}
        assert row["milestones"]["1e-08"] == {"reached": 0, "median_seconds": None}
        assert "2.0 s (2/3)" in peer_table([row]) and "– s (0/3)" in peer_table([row])


@needs_torch
class TestPeerErrors:
    @pytest.mark.parametrize(("argv", "match"), [
        (["--m", "2", "2"], "argument --m: `--m` must hold distinct values"),
        (["--k", "1"], "argument --k: `--k` must be at least 2"),
        (["--d", "2"], "`d` must be at least 3"),
        (["--workers", "2", "--serial"], "--workers sizes the local pool"),
    ], ids=["m-repeated", "k1", "d-small", "workers-serial"])
    def test_named_errors(self, argv, match, tmp_path, capsys):
        try:  # a usage error exits from argparse; a check of the study returns 2
            code = main(["peers", "--quick", "--no-progress", "--out", str(tmp_path / "o")] + argv)
        except SystemExit as exc:
            code = exc.code
        assert code == 2
        assert match in capsys.readouterr().err


class TestOptions:
    """Bad baseline options exit 2 naming the option before anything runs (rather than every Adam run failing
    inside the records), and an explicit --epochs/--batch applies with --quick."""

    @pytest.mark.parametrize(("option", "value", "message"), [
        ("--adam-lr", "0", "`--adam-lr` must be finite and positive; got --adam-lr=0.0"),
        ("--adam-lr", "-1", "`--adam-lr` must be finite and positive"),
        ("--torch-lr", "nan", "`--torch-lr` must be finite and positive; got --torch-lr=nan"),
        ("--torch-lr", "inf", "`--torch-lr` must be finite and positive"),
        ("--epochs", "-3", "`--epochs` must be at least 1; got --epochs=-3"),
        ("--epochs", "2.5", "`--epochs` must be an integer"),
        ("--batch", "0", "`--batch` must be at least 1; got --batch=0"),
        ("--seeds", "0", "`--seeds` must be at least 1"),
        ("--m", "0", "`--m` must be at least 1; got --m=0"),
    ])
    def test_bad_values_exit_2_naming_the_option(self, tmp_path, capsys, option, value, message):
        with pytest.raises(SystemExit) as exc:
            main(["peers", "--m", "1", "--quick", "--out", str(tmp_path / "o"), option, value])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {option}: {message}" in err, err
        assert not (tmp_path / "o").exists()  # refused before anything was run or created

    def test_scaling_refuses_a_bad_learning_rate_among_several(self, tmp_path, capsys):
        with pytest.raises(SystemExit) as exc:
            main(["scaling", "--out", str(tmp_path / "o"), "--adam-lr", "0.01", "-2"])
        assert exc.value.code == 2 and "`--adam-lr` must be finite and positive" in capsys.readouterr().err

    @needs_torch
    def test_explicit_epochs_and_batch_apply_with_quick(self, tmp_path):
        out = tmp_path / "o"
        assert main(["peers", "--m", "1", "--d", "6", "--seeds", "1", "--quick", "--serial", "--no-progress",
                     "--seed", "3", "--epochs", "2", "--batch", "32", "--out", str(out)]) == 0
        (path,) = (out / "runs").glob("torch-adam-*.json")
        options = json.loads(path.read_text(encoding="utf-8"))["spec"]["options"]
        assert (options["epochs"], options["batch"]) == (2, 32)
        assert options["n_train"] == 300  # the rest of --quick's budgets still apply

    @needs_torch
    def test_control_quick_alone_keeps_its_budgets(self, study):
        """Control: without explicit flags --quick's own torch budgets are used (the study fixture)."""
        out, _ = study
        path = next((out / "runs").glob("torch-adam-*.json"))
        options = json.loads(path.read_text(encoding="utf-8"))["spec"]["options"]
        assert (options["epochs"], options["batch"]) == (3, 64)


@pytest.fixture(scope="module")
def race(tmp_path_factory):
    out = tmp_path_factory.mktemp("race") / "study"
    argv = ["race", "--grid", "m=1..2,k=2,d=6", "--seeds", "1", "--quick", "--serial", "--no-progress",
            "--seed", "3", "--out", str(out)]
    assert main(argv) == 0
    return out, json.loads((out / "summary.json").read_text(encoding="utf-8"))


@needs_torch
class TestRace:
    """The race: every method on the same layers, each Adam's learning rate tuned per cell."""

    def test_tuned_per_cell_and_the_same_layers(self, race):
        out, summary = race
        records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((out / "runs").glob("*.json"))]
        tune = [r for r in records if r["spec"]["role"] == "tune"]
        from learner.sweep.methods import method_names, present_names

        # Each tuned method (the two Adams) × two learning rates × two cells, one tuning layer each; then every
        # method present × 2 cells measured.
        tuned = [name for name in method_names(tuned_lr=True) if name in present_names()]
        assert len(tune) == len(tuned) * 2 * 2 and len(records) == len(tune) + 2 * len(present_names())
        for method in ("adam", "torch-adam"):
            for cell in ("m=1, d=6, k=2", "m=2, d=6, k=2"):
                lr = summary["tuning"][method][cell]["lr"]
                m = int(cell[2])
                [rec] = [r for r in records if r["spec"]["role"] == "eval" and r["spec"]["method"] == method
                         and r["spec"]["m"] == m]
                assert rec["spec"]["options"]["lr"] == lr in (0.01, 0.03)
        evals = [r for r in records if r["spec"]["role"] == "eval"]
        for m in (1, 2):  # one entropy and spawn key per cell and layer, whatever the method
            assert len({(r["spec"]["entropy"], tuple(r["spec"]["spawn_key"])) for r in evals
                        if r["spec"]["m"] == m}) == 1
        assert (out / "race.png").stat().st_size > 0 and "| (m, d, k) | method |" in (out / "summary.md").read_text()

    def test_summarise_only_rewrites_the_same_summary(self, race):
        out, summary = race
        assert main(["race", "--grid", "m=1..2,k=2,d=6", "--seeds", "1", "--quick", "--seed", "3",
                     "--summarise-only", "--no-progress", "--out", str(out)]) == 0
        again = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        assert again["rows"] == summary["rows"] and again["tuning"] == summary["tuning"]


def _race_rec(method, total, rel, examples, seconds_to=None, cell=(2, 12, 2)):
    fit = {"seconds_to": seconds_to or {}} if method != "provable" else None
    return {"spec": {"method": method, "m": cell[0], "d": cell[1], "k": cell[2]}, "outcome": "finished",
            "timings": {"total": total}, "examples_drawn": examples, "errors": {"relative_error": rel},
            "diagnostics": {"fit": fit} if fit else {}}


def test_race_rows_give_examples_to_each_milestone():
    from learner.study.peers import _race_rows, race_table

    recs = [_race_rec("provable", 0.7, 1e-30, 59_000), _race_rec("provable", 0.9, 1e-30, 69_000),
            _race_rec("adam", 40.0, 3e-10, 25_000, {"1e-03": 6.0, "1e-08": 30.0}),
            _race_rec("adam", 50.0, 2e-4, 25_000, {"1e-03": 8.0})]
    rows = {r["method"]: r for r in _race_rows(recs)}
    assert rows["provable"]["milestones"]["1e-08"] == {"reached": 2, "median_seconds": 0.8, "median_examples": 64_000}
    # Adam: one run reached 1e-8, both 1e-3; examples are what each drew.
    assert rows["adam"]["milestones"]["1e-08"] == {"reached": 1, "median_seconds": 30.0, "median_examples": 25_000}
    assert rows["adam"]["milestones"]["1e-03"]["reached"] == 2
    table = race_table(list(rows.values()))
    assert "| (2, 12, 2) | provable | 2 | 2/2, 0.8 s, 64,000 | 2/2, 0.8 s, 64,000 | 1e-30 |" in table
    assert "| (2, 12, 2) | adam | 2 | 2/2, 7 s, 25,000 | 1/2, 30 s, 25,000 |" in table


@pytest.mark.slow  # a race search end to end
@needs_torch
def test_race_search_bisects_the_halving_ladder(tmp_path):
    """The minimum-examples search on real runs: fixed sets of the oracle's first N examples on the measured runs'
    layers, N on the halving ladder from twice the learner's most examples (rounded up to 1000), bisected until the
    fewest examples that learned and a size that did not are neighbouring rungs; the quick Adams fail at their first
    size (their measured runs) and are not searched further."""
    from learner.study.peers import search_ladder

    out = tmp_path / "race"
    assert main(["race", "--grid", "m=1,k=2", "--seeds", "1", "--quick", "--serial", "--no-progress",
                 "--search-rounds", "6", "--search-methods", "provable", "adam", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = {r["method"]: r for r in summary["search"]}
    assert set(rows) == {"provable", "adam"}  # --search-methods: torch Adam not searched
    records = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in (out / "runs").glob("*.json")}
    [learner_eval] = [r for r in records.values() if r["spec"]["method"] == "provable" and r["spec"]["role"] == "eval"]
    ladder = search_ladder(-(-2 * learner_eval["examples_drawn"] // 1000) * 1000, 1, 12, 2)
    tried = {t["examples"]: t["reached"] for t in rows["provable"]["tried"]}
    assert set(tried) <= set(ladder) and len(tried) <= 6
    best = rows["provable"]["min_examples"]
    assert best in ladder and tried[best] == 1  # the fewest that learned ...
    assert best == ladder[-1] or tried.get(best // 2) == 0  # ... and the next rung down did not
    assert all(ok == (n >= best) for n, ok in tried.items())  # a monotone record on this layer
    mins = [r for r in records.values() if r["spec"]["role"] == "min"]
    assert all(r["spec"]["spawn_key"] == learner_eval["spec"]["spawn_key"] for r in mins)  # the measured layer
    assert all(r["run_id"] == f"provable-min-n{r['spec']['options']['examples']}-m1-d12-k2-ls1-boolean-s0"
               for r in mins)
    assert rows["adam"]["tried"] == [{"examples": 400, "runs": 1, "reached": 0}]  # the quick n_train + n_val
    assert rows["adam"]["min_examples"] is None and not [r for r in mins if r["spec"]["method"] != "provable"]


def test_search_ladder_stops_at_the_counting_limit():
    from learner.study.peers import search_ladder
    from learner.sweep.runs import param_limit

    assert param_limit(1, 12, 2) == 12
    assert search_ladder(25_000, 1, 12, 2) == [25_000 // 2**j for j in range(12)]  # ..., 24, 12
    assert search_ladder(25_000, 6, 16, 2)[-1] == 97  # 48 < 96 = 2·6·16/2
    assert search_ladder(10, 6, 16, 2) == []


def _fake_search(monkeypatch, needs, rounds, first=None):
    """_search against a stand-in for the runs: a layer learns when its fixed set has at least ``needs[method]``
    examples. The baselines' measured runs learned at their first size when ``first`` says so."""
    from learner.study import peers

    calls = []

    def run_sweep(specs, out, **ex):
        calls.append(sorted({dict(s.options)["examples"] for s in specs}))
        recs = [{"run_id": s.run_id, "outcome": "finished",
                 "errors": {"relative_error": 1e-12 if dict(s.options)["examples"] >= needs[s.method] else 1e-2}}
                for s in specs]
        return recs, {"run": len(specs), "kept": 0}

    monkeypatch.setattr(peers, "run_sweep", run_sweep)
    evals = [{"spec": {"m": 1, "d": 12, "k": 2, "method": "provable"}, "examples_drawn": 59_000}]
    evals += [{"spec": {"m": 1, "d": 12, "k": 2, "method": "adam"}, "outcome": "finished",
               "errors": {"relative_error": 1e-12 if (first or {}).get("adam", True) else 1e-2}} for _ in range(3)]
    rows, _, _ = peers._search([(1, 12, 2, 3)], ["provable", "adam"], dict.fromkeys(["provable", "adam"],
                               lambda key: {}), evals, None, {}, {"entropy": 0, "logit_scale": 1.0}, rounds)
    return {r["method"]: r for r in rows}, calls


def test_search_bisection_finds_what_halving_finds(monkeypatch):
    """On a monotone stand-in the bisection returns the rung a halving down to the first failure returns, for every
    threshold on the ladder, in at most ceil(log2(rungs + 1)) rounds; the learner's ladder starts at twice its most
    examples (118,000), the baselines' at their measured 25,000."""
    from learner.study.peers import search_ladder

    for method, start in (("provable", 118_000), ("adam", 25_000)):
        ladder = search_ladder(start, 1, 12, 2)
        other = "adam" if method == "provable" else "provable"
        for j, need in enumerate(ladder):
            for needs in ({method: need, other: 10**9}, {method: need - 1, other: 10**9}):
                rows, _ = _fake_search(monkeypatch, needs, rounds=math.ceil(math.log2(len(ladder) + 1)))
                pairs = zip(ladder, ladder[1:] + [0], strict=True)
                halving = next((n for n, below in pairs if below < needs[method]), None)
                assert rows[method]["min_examples"] == halving == ladder[j], (method, need)
                assert not rows[method].get("open")
        # The last threshold learned only at the bottom rung: the row says it stopped at the counting limit's rung.
        assert rows[method]["min_examples"] == ladder[-1] and rows[method]["at_limit"] is True


def test_search_bisection_says_open_and_none(monkeypatch):
    """Rounds that run out leave the bracket open (no answer, said so); a baseline whose measured runs failed has
    no fewest examples and runs nothing; a method that learns at every rung ends at the counting limit's rung."""
    from learner.study.peers import search_rows

    rows, _ = _fake_search(monkeypatch, {"provable": 59_000, "adam": 1_000}, rounds=1)
    assert rows["provable"]["min_examples"] is None and rows["provable"]["open"]
    assert "open (more rounds)" in search_rows(list(rows.values()))
    rows, calls = _fake_search(monkeypatch, {"provable": 59_000, "adam": 1_000}, rounds=10, first={"adam": False})
    assert rows["adam"] == {"m": 1, "d": 12, "k": 2, "method": "adam", "min_examples": None,
                            "tried": [{"examples": 25_000, "runs": 3, "reached": 0}]}
    assert all(size != 12_500 for sizes in calls for size in sizes)  # adam's ladder below 25,000 never ran
    rows, _ = _fake_search(monkeypatch, {"provable": 1, "adam": 1}, rounds=10)
    assert rows["adam"]["min_examples"] == 12 and rows["adam"]["at_limit"]  # 12 = 2md/k, nothing below is run
    table = search_rows(list(rows.values()))
    assert "| (1, 12, 2) | adam | 25,000: 3/3, " in table and "12 (the counting limit's rung)" in table


def test_plot_race_with_nothing_reached(tmp_path):
    """A race where no run reached 1e-3 (tiny budgets) still gets its figure: empty panels, no log scale of nothing
    (the command-line fuzz found `--quick` races failing there)."""
    from learner.study.peers import _race_rows, plot_race

    rows = _race_rows([_race_rec("adam", 5.0, 0.5, 25_000), _race_rec("provable", 1.0, None, 1_000)])
    path = plot_race(rows, tmp_path / "race.png")
    assert (tmp_path / "race.png").stat().st_size > 0 and path.endswith("race.png")


def test_plot_race_names_only_the_methods_that_ran_and_its_title_fits(tmp_path, monkeypatch):
    """Four cells make the narrowest figure: its title lies inside it, and its legend names the methods of the rows
    (torch Adam on the GPU did not run here), each in its registry colour."""
    import matplotlib.pyplot as plt

    from learner.study.peers import _race_rows, plot_race

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to look at it
    recs = [_race_rec("provable", 14.0, 1e-30, 3_000_000, cell=(m, 20, 2)) for m in (7, 8, 9, 10)]
    recs += [_race_rec("torch-adam", 50.0, 1e-11, 25_000, {"1e-03": 30.0, "1e-08": 43.0}, cell=(m, 20, 2))
             for m in (7, 8, 9, 10)]
    plot_race(_race_rows(recs), tmp_path / "race.png")
    (fig,) = figures
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["provable, to 1e-08", "provable, to 1e-03", "torch-adam, to 1e-08", "torch-adam, to 1e-03"]
    renderer = fig.canvas.get_renderer()
    title = ax.title.get_window_extent(renderer)
    assert 0 <= title.x0 and title.x1 <= fig.bbox.width, (title, fig.bbox)
    from matplotlib.colors import to_rgba

    colours = {c.get_label(): tuple(c.get_edgecolor()[0]) for c in ax.collections if c.get_label()}
    assert colours["torch-adam, to 1e-08"] == to_rgba("C2")  # the third registered method's colour
    plt.close("all")


def test_search_options_keep_torch_adams_steps():
    """On a fixed set torch Adam's epochs are raised so that its steps per restart are at least its measured runs'
    (200 epochs of 78 mini-batches of 256 = 15,600); numpy Adam, full-batch, and the learner keep their options."""
    from learner.study.peers import search_options

    def steps(opts):
        n_train = opts["examples"] - max(1, opts["examples"] // 5)
        return opts["epochs"] * (n_train // min(256, n_train))

    assert search_options("torch-adam", {"lr": 0.01}, 25_000) == {"lr": 0.01, "examples": 25_000, "epochs": 200,
                                                                   "eval_every": 78}
    for size in (12_500, 3_125, 781, 195, 40):
        opts = search_options("torch-adam", {"lr": 0.01, "threads": 1}, size)
        assert 15_600 <= steps(opts) < 15_600 + max(1, (size - size // 5) // 256), (size, opts)
        assert opts["eval_every"] == 78  # validated as often as the measured runs, not every shorter epoch
    # Control: without the raise a halved set would get half the steps.
    assert steps({"examples": 12_500, "epochs": 200}) == 7_800
    # Given options count: 3 epochs of 300 // 64 = 4 batches are 12 steps, kept on 100 examples (80 // 64 = 1 batch).
    assert search_options("torch-adam", {"epochs": 3, "batch": 64, "n_train": 300, "n_val": 100}, 100)["epochs"] == 12
    assert search_options("adam", {"lr": 0.03}, 6_250) == {"lr": 0.03, "examples": 6_250}
    assert search_options("provable", {}, 59_000) == {"examples": 59_000}


def test_plot_race_with_the_search_has_a_third_panel(tmp_path):
    """With the search's rows the figure gains a panel of the fewest examples (a cross where no size learned);
    without them it keeps its two panels (the control)."""
    import matplotlib.image

    from learner.study.peers import _race_rows, plot_race

    rows = _race_rows([_race_rec("adam", 40.0, 3e-10, 25_000, {"1e-03": 6.0, "1e-08": 30.0}),
                       _race_rec("provable", 1.0, 1e-30, 59_000)])
    search = [{"m": 2, "d": 12, "k": 2, "method": "provable", "min_examples": 59_000,
               "tried": [{"examples": 118_000, "runs": 1, "reached": 1},
                         {"examples": 59_000, "runs": 1, "reached": 1}]},
              {"m": 2, "d": 12, "k": 2, "method": "adam", "min_examples": None,
               "tried": [{"examples": 25_000, "runs": 1, "reached": 0}]}]
    three = matplotlib.image.imread(plot_race(rows, tmp_path / "three.png", search))
    two = matplotlib.image.imread(plot_race(rows, tmp_path / "two.png"))
    assert three.shape[0] == pytest.approx(1.5 * two.shape[0], rel=0.01) and three.shape[1] == two.shape[1]
