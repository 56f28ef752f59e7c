"""The grids of scaling studies: noise levels and logit scales (plumbing, on tiny budgets)."""

import importlib.util
import json

import pytest

from learner.cli import main
from learner.study.grids import grid_rows, noise_study, sharpness_study

# peers and race run torch's Adam: without the torch extra they stop first, with the extra's message.
_NEEDS_TORCH = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs the torch extra")


@pytest.fixture(scope="module")
def noise_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("noise")
    noise_study(out, sigmas=(0.0, 1e-2), cells=("m=1,k=2,d=6",), seeds=1, backend="serial", quick=True)
    return out


def test_noise_study_runs_every_level_on_the_same_layers(noise_dir):
    rows = grid_rows(noise_dir, "sigma-")
    assert sorted((r["method"], r["noise"]) for r in rows) == [
        ("adam", 0.0), ("adam", 0.01), ("provable", 0.0), ("provable", 0.01)]
    assert {r["folder"] for r in rows} == {"sigma-0", "sigma-0.01"}
    summary = json.loads((noise_dir / "summary.json").read_text())
    assert summary["kind"] == "noise-study-summary" and len(summary["rows"]) == 4
    assert {(f["method"], f["m"]) for f in summary["fits"]} == {("adam", 1), ("provable", 1)}
    assert (noise_dir / "noise.png").stat().st_size > 0
    assert "| σ |" in (noise_dir / "summary.md").read_text()


def test_summarise_only_reads_the_folders_and_runs_nothing(noise_dir, capsys):
    before = sorted(p.stat().st_mtime_ns for p in noise_dir.glob("sigma-*/runs/*.json"))
    argv = ["noise-study", "--out", str(noise_dir), "--summarise-only", "--no-progress", "--quick", "--seeds", "1",
            "--sigma", "0", "0.01", "--cells", "m=1,k=2,d=6"]
    assert main(argv) == 0
    assert "provable" in capsys.readouterr().out
    assert sorted(p.stat().st_mtime_ns for p in noise_dir.glob("sigma-*/runs/*.json")) == before


def test_summarise_only_refuses_a_missing_point_and_a_missing_record(noise_dir, tmp_path, capsys):
    """A grid's summary never leaves a cell out silently: a level never run, or a point with a record missing, is
    refused with the count (the scaling study's own check), and a folder that is not a grid is not summarised."""
    import shutil

    base = ["noise-study", "--summarise-only", "--no-progress", "--quick", "--seeds", "1", "--cells", "m=1,k=2,d=6"]
    assert main(base + ["--out", str(noise_dir), "--sigma", "0", "0.01", "0.1"]) == 2  # sigma 0.1 was never run
    assert "sigma-0.1', which does not exist" in capsys.readouterr().err
    copy = tmp_path / "copy"
    shutil.copytree(noise_dir, copy)
    next((copy / "sigma-0.01" / "runs").glob("provable-eval-*.json")).unlink()
    assert main(base + ["--out", str(copy), "--sigma", "0", "0.01"]) == 2
    assert "1 of 1 runs have no finished record" in capsys.readouterr().err  # the learner's run at sigma 0.01
    for missing in (tmp_path / "nothing-here", tmp_path):  # a new path, and a folder that holds no grid
        assert main(base + ["--out", str(missing), "--sigma", "0"]) == 2
        assert "there is nothing to summarise" in capsys.readouterr().err
    assert not (tmp_path / "nothing-here").exists()  # nothing was created


def test_a_folder_that_is_not_a_study_is_not_claimed(tmp_path):
    """Running into a folder that holds someone's files (and no study) is refused before anything is written; an
    empty folder is claimed (control)."""
    from learner.study.scaling import scaling_study

    for name, run in (("noise", lambda out: noise_study(out, sigmas=(0.0,), cells=("m=1,k=2,d=6",), seeds=1,
                                                         backend="serial", quick=True)),
                      ("sharpness", lambda out: sharpness_study(out, scales=(1.0,), ds=(6,), ks=(2,), seeds=1,
                                                                adam_seeds=0, backend="serial", quick=True)),
                      ("scaling", lambda out: scaling_study(out, ms=[1], d=6, k=2, seeds=1, methods=["provable"],
                                                            backend="serial", plot=False))):
        user = tmp_path / f"{name}-user"
        user.mkdir()
        (user / "summary.md").write_text("NOTES")
        with pytest.raises(ValueError, match="is not empty and holds no .*summary.md"):
            run(user)
        assert sorted(p.name for p in user.iterdir()) == ["summary.md"] and (user / "summary.md").read_text() == "NOTES"
        empty = tmp_path / f"{name}-empty"
        empty.mkdir()
        run(empty)
        assert (empty / "summary.md").exists()


def test_sharpness_study_tables_each_scale(tmp_path):
    """The learner on `seeds` layers per cell, Adam on the first `adam_seeds` of them in its own folder."""
    summary = sharpness_study(tmp_path, scales=(1.0, 4.0), ds=(6,), ks=(2,), seeds=2, adam_seeds=1,
                              backend="serial", quick=True)
    assert sorted((r["method"], r["logit_scale"], r["runs"]) for r in summary["rows"]) == [
        ("adam", 1.0, 1), ("adam", 4.0, 1), ("provable", 1.0, 2), ("provable", 4.0, 2)]
    assert sorted(p.name for p in tmp_path.glob("ls-*")) == ["ls-1-d6", "ls-1-d6-adam", "ls-4-d6", "ls-4-d6-adam"]
    adam = {r["seed"] for r in grid_rows(tmp_path, "ls-") if r["method"] == "adam"}
    assert adam == {0}  # the learner's first layer
    assert "| d | k | 1 | 4 |" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "sharpness.png").stat().st_size > 0


def test_sharpness_study_without_adam(tmp_path):
    summary = sharpness_study(tmp_path, scales=(1.0,), ds=(6,), ks=(2,), seeds=1, adam_seeds=0, backend="serial",
                              quick=True)
    assert {r["method"] for r in summary["rows"]} == {"provable"}
    assert [p.name for p in tmp_path.glob("ls-*")] == ["ls-1-d6"]


def test_adam_runs_on_no_more_layers_than_the_learner(tmp_path):
    summary = sharpness_study(tmp_path, scales=(1.0,), ds=(6,), ks=(2,), seeds=1, adam_seeds=2, backend="serial",
                              quick=True)
    assert sorted((r["method"], r["runs"]) for r in summary["rows"]) == [("adam", 1), ("provable", 1)]


@pytest.mark.parametrize("argv", [["noise-study", "--sigma", "-1"], ["sharpness", "--logit-scale", "nan"],
                                  ["sharpness", "--d", "0"], ["sharpness", "--adam-seeds", "-1"]])
def test_bad_options_are_refused_naming_them(argv, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(tmp_path)])
    assert exc.value.code == 2 and argv[1] in capsys.readouterr().err


def test_the_learners_sharpness_reach_is_the_one_the_records_give():
    """learner.assumptions.SHARPNESS_REACH is made by reach_boundaries from the committed reach records."""
    from pathlib import Path

    from learner.assumptions import SHARPNESS_REACH
    from learner.study.grids import reach_boundaries

    records = Path(__file__).resolve().parents[3] / "docs" / "sweeps" / "reach-sharpness"
    if not records.is_dir():
        pytest.skip("the reach records are not in this tree (an installed copy without docs/)")
    assert reach_boundaries(records) == SHARPNESS_REACH
    assert SHARPNESS_REACH, "the measured reach has at least one boundary"


@pytest.mark.parametrize(("pattern", "expected"), [
    ({1: 0, 4: 0, 6: 1, 8: 2}, 6.0),   # half (1 of 2) or more from 6 on
    ({1: 0, 4: 2, 6: 0, 8: 2}, 8.0),   # 4 fails but 6 recovers: the boundary is where failing stays
    ({1: 0, 4: 0, 6: 1, 8: 0}, None),  # control: never half from some scale on: no boundary
])
def test_reach_boundaries_rule(monkeypatch, pattern, expected):
    """The rule on synthetic rows (failures out of 2 layers per scale)."""
    from learner.study import grids

    rows = [{"method": "provable", "outcome": "finished", "d": 8, "k": 2, "logit_scale": float(s),
             "success": i >= fails, "status": "6_search" if i >= fails else "5_span",
             "message": "the constraints do not determine the hull: 9 constraints of rank 7 for d²=64"}
            for s, fails in pattern.items() for i in range(2)]
    monkeypatch.setattr(grids, "grid_rows", lambda out, prefix: rows)
    table = grids.reach_boundaries("unused")
    assert (table[(8, 2)][0] if table else None) == expected
    if expected is not None:
        assert "phase 5 for lack of certified constraints (rank 7)" in table[(8, 2)][1]


@pytest.mark.parametrize("argv", [
    ["scaling", "--m", "1", "--d", "6", "--k", "2", "--seeds", "1", "--quick", "--serial"],
    pytest.param(["peers", "--m", "1", "--d", "6", "--seeds", "1", "--quick", "--serial"], marks=_NEEDS_TORCH),
    pytest.param(["race", "--grid", "m=1,k=2,d=6", "--seeds", "1", "--quick", "--serial"], marks=_NEEDS_TORCH),
    ["noise-study", "--sigma", "0", "--cells", "m=1,k=2,d=6", "--seeds", "1", "--quick", "--serial"],
    ["sharpness", "--logit-scale", "1", "--d", "6", "--seeds", "1", "--quick", "--serial"],
    ["learn-hard", "--quick", "--serial"],
], ids=lambda argv: argv[0])
def test_every_study_command_leaves_a_users_folder_alone(tmp_path, capsys, argv):
    from learner.cli import main as learner_main
    from lowerbounds.cli import main as lowerbounds_main

    user = tmp_path / "notes"
    user.mkdir()
    (user / "summary.md").write_text("NOTES")
    main = lowerbounds_main if argv[0] == "learn-hard" else learner_main
    assert main([*argv, "--no-progress", "--out", str(user)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--out" in err and "must be a new or empty folder" in err
    assert "summary.md" in err and "`out`" not in err  # the option typed, never the parameter
    assert sorted(p.name for p in user.iterdir()) == ["summary.md"] and (user / "summary.md").read_text() == "NOTES"


def test_the_sharpness_figure_keeps_each_lines_colour_and_its_legend_off_the_data(tmp_path, monkeypatch):
    """A (d, k) line has the same colour in both panels even where one panel lacks a line, and the legend is the
    figure's, below the panels, not one over each panel's data."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from learner.study.grids import plot_sharpness

    figures = []
    subplots = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **kw: figures.append(subplots(*a, **kw)) or figures[-1])
    monkeypatch.setattr(plt, "close", lambda fig: None)
    table = [{"method": method, "d": d, "k": 2, "logit_scale": s, "successes": 1, "runs": 2}
             for method, ds in (("provable", (8, 12)), ("adam", (12,))) for d in ds for s in (1.0, 2.0)]
    plot_sharpness(table, tmp_path / "s.png")
    fig, axes = figures[0]
    learner, adam = axes[0]
    assert learner.get_legend() is None and adam.get_legend() is None and len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["d = 8, k = 2", "d = 12, k = 2"]
    assert learner.get_lines()[1].get_color() == adam.get_lines()[0].get_color()  # d = 12 in both
