"""The yield study: sweep records in, measured against predicted yields and the log-linear fit out."""

import json
import math

import numpy as np
import pytest

from learner.scaling import QUICK_OPTIONS, RunSpec, plan_runs, planted_instance, run_sweep
from theory.cli import main
from theory.yield_model import predicted_yield
from theory.yield_study import fit_log_yield, load_learner_records, yield_study


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A tiny learner sweep (quick budgets: the runs reach phase 4 and stop there) plus one Adam run."""
    out = tmp_path_factory.mktemp("sweep")
    specs = plan_runs(ms=(1, 2), d=6, k=3, seeds=2, methods=("provable",), entropy=3,
                      options={"provable": QUICK_OPTIONS["provable"]})
    specs += plan_runs(ms=(1,), d=6, k=3, seeds=1, methods=("adam",), entropy=3,
                       options={"adam": QUICK_OPTIONS["adam"] | {"lr": 0.03}})
    run_sweep(specs, out, backend="serial")
    return out


def test_fit_recovers_a_planted_slope_and_reports_zeros():
    n = [0, 1, 2, 3, 3]
    y = [5.0 * 0.1**v for v in n[:4]] + [0.0]
    fit = fit_log_yield(n, y)
    assert fit["slope"] == pytest.approx(math.log(0.1)) and fit["delta"] == pytest.approx(0.1)
    assert fit["rms"] == pytest.approx(0.0, abs=1e-12) and (fit["points"], fit["zeros"]) == (4, 1)
    noisy = fit_log_yield(n[:4], [5.0, 0.9, 0.05, 0.004])  # the control: not a line, a visible residual
    assert noisy["rms"] > 0.1
    assert math.isnan(fit_log_yield([1, 1], [1.0, 2.0])["slope"])


def test_records_predictions_and_fit(sweep):
    records = load_learner_records(sweep)
    assert records and all(r["spec"]["method"] == "provable" for r in records)
    study = yield_study(sweep, n_geometry=2000, rng=5)
    assert len(study.runs) == len(records)
    # A prediction is that of the run's own planted layer at the run's tolerance, seeded in run-id order.
    first = study.runs[0]
    spec = RunSpec.from_dict(records[0]["spec"])
    seed = np.random.default_rng(5).bit_generator.seed_seq.spawn(len(records))[0]
    direct = predicted_yield(planted_instance(spec)[0], spec.k, tol=first["tol"], min_weight=first["min_weight"],
                             geometry="conditional", n_geometry=2000, rng=seed)
    assert first["predicted"] == direct.constraints_per_1000
    assert {(s["m"], s["k"]) for s in study.settings} == {(r["m"], r["k"]) for r in study.runs}
    table = study.table()
    assert "| m | d | k |" in table and "log(yield) against n" in table
    json.dumps(study.to_dict(), allow_nan=True)


def test_progress_bar_only_when_asked(sweep, capsys):
    yield_study(sweep, n_geometry=500, rng=1)
    assert "yield predictions" not in capsys.readouterr().err
    yield_study(sweep, n_geometry=500, rng=1, progress=True)
    assert "yield predictions" in capsys.readouterr().err


def test_cli_writes_json_and_names_bad_directories(sweep, tmp_path, capsys):
    path = tmp_path / "y.json"
    assert main(["yield-study", str(sweep), "--n-geometry", "1000", "--json", str(path)]) == 0
    assert json.loads(path.read_text())["kind"] == "yield-study"
    assert main(["yield-study", str(tmp_path / "nothing")]) == 2
    assert "no runs/ directory" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, match", [
    ({"geometry": "flat"}, "geometry='flat'"), ({"n_geometry": 0}, "n_geometry"),
], ids=["geometry", "n_geometry"])
def test_bad_arguments(sweep, kwargs, match):
    with pytest.raises(ValueError, match=match):
        yield_study(sweep, **kwargs)
