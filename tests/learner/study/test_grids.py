"""The grids of scaling studies: noise levels and logit scales (plumbing, on tiny budgets)."""

import json

import pytest

from learner.cli import main
from learner.study.grids import grid_rows, noise_study, sharpness_study


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
    assert main(["noise-study", "--out", str(noise_dir), "--summarise-only", "--no-progress"]) == 0
    assert "provable" in capsys.readouterr().out
    assert sorted(p.stat().st_mtime_ns for p in noise_dir.glob("sigma-*/runs/*.json")) == before


def test_sharpness_study_tables_each_scale(tmp_path):
    summary = sharpness_study(tmp_path, scales=(1.0, 4.0), ds=(6,), ks=(2,), seeds=1, backend="serial", quick=True)
    assert sorted({(r["method"], r["logit_scale"]) for r in summary["rows"]}) == [
        ("adam", 1.0), ("adam", 4.0), ("provable", 1.0), ("provable", 4.0)]
    assert sorted(p.name for p in tmp_path.glob("ls-*")) == ["ls-1-d6", "ls-4-d6"]
    assert "| d | k | 1 | 4 |" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("argv", [["noise-study", "--sigma", "-1"], ["sharpness", "--logit-scale", "nan"],
                                  ["sharpness", "--d", "0"]])
def test_bad_options_are_refused_naming_them(argv, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(tmp_path)])
    assert exc.value.code == 2 and argv[1] in capsys.readouterr().err
