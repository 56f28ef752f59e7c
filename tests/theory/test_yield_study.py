"""The yield study: sweep records in, measured against predicted yields and the log-linear fit out."""

import json
import logging
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from learner.sweep.engine import run_sweep
from learner.sweep.records import DIGEST_FIELD, record_digest
from learner.sweep.runs import QUICK_OPTIONS, RunSpec, plan_runs, planted_instance
from theory.cli import main
from theory.yield_model import measured_yield, predicted_yield
from theory.yield_study import SIMULATE_EXAMPLES, fit_log_yield, load_learner_records, plot_yield, yield_study


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A tiny learner sweep (quick budgets: the runs reach phase 4 and stop there) plus one Adam run. Phase 4's
    tolerance is fixed at 0.015 (the pilot of the data-driven budgets would choose among 0.015–0.08)."""
    out = tmp_path_factory.mktemp("sweep")
    specs = plan_runs(ms=(1, 2), d=6, k=3, seeds=2, methods=("provable",), entropy=3,
                      options={"provable": QUICK_OPTIONS["provable"] | {"refined_tol": 0.015}})
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
    assert first["predicted_model"] == direct.constraints_per_1000
    # The simulation of the rule at the true ΣW, on the seed's child, is the prediction where it counted
    # at least 100 rows; else the window model's.
    sim = measured_yield(planted_instance(spec)[0], spec.k, tol=first["tol"], min_weight=first["min_weight"],
                         n_examples=SIMULATE_EXAMPLES, rng=seed.spawn(1)[0])
    assert first["predicted_simulated"] == sim.constraints_per_1000 and first["simulated_rows"] == sim.rows_certified
    by = "simulation" if sim.rows_certified >= 100 else "model"
    assert first["predicted_by"] == by
    assert first["predicted"] == (sim.constraints_per_1000 if by == "simulation" else direct.constraints_per_1000)
    assert {(s["m"], s["k"]) for s in study.settings} == {(r["m"], r["k"]) for r in study.runs}
    table = study.table()
    assert "| m | d | k |" in table and "log(yield) against n" in table
    json.dumps(study.to_dict(), allow_nan=True)


def test_without_simulation_the_window_model_predicts(sweep):
    """Control of the simulation: ``n_simulate=0`` leaves every prediction to the window model."""
    study = yield_study(sweep, n_geometry=500, rng=5, n_simulate=0)
    assert all(r["predicted_by"] == "model" and r["predicted"] == r["predicted_model"] for r in study.runs)
    assert all(r["predicted_simulated"] is None for r in study.runs)


def test_simulation_sees_a_wrong_sum(sweep, tmp_path):
    """The comparison can fail: certifying against a ΣŴ 30 % off gives over 3 times fewer constraints than the rule
    at the true ΣW (the study's prediction), so a run whose phase 3 went wrong would leave the 3× band."""
    from learner.sweep.runs import planted_instance as planted

    rec = json.loads((sweep / "runs" / _EDITED).read_text())
    spec = RunSpec.from_dict(rec["spec"])
    layer = planted(spec)[0]
    tol, mw = 0.08, 0.02
    good = measured_yield(layer, spec.k, tol=tol, min_weight=mw, n_examples=20_000, rng=0)
    from learner import LayerOracle
    from learner.phases.sculpt import certify_rows

    X, Y = LayerOracle(layer, spec.k, rng=1).draw(20_000)
    wrong = certify_rows(X, Y, layer.ws.sum(axis=0) * 1.3, tol=tol, min_weight=mw)[1].size * 1000 / 20_000
    assert good.constraints_per_1000 > 3 * wrong


def test_slice_density_is_passed_to_every_prediction(sweep, tmp_path, monkeypatch):
    """density="slice": each run's model prediction is predicted_yield's with that density, on its seed; the
    study and its record name the density; the command line's --density reaches the function."""
    records = load_learner_records(sweep)
    study = yield_study(sweep, density="slice", n_geometry=500, rng=5, n_simulate=0)
    spec = RunSpec.from_dict(records[-1]["spec"])
    seed = np.random.default_rng(5).bit_generator.seed_seq.spawn(len(records))[-1]
    last = study.runs[-1]
    direct = predicted_yield(planted_instance(spec)[0], spec.k, tol=last["tol"], min_weight=last["min_weight"],
                             density="slice", n_geometry=500, rng=seed)
    assert spec.m == 2 and last["predicted_model"] == direct.constraints_per_1000
    assert study.density == "slice" and study.to_dict()["density"] == "slice"
    assert yield_study(sweep, n_geometry=500, rng=5, n_simulate=0).to_dict()["density"] == "gaussian"
    seen = {}

    def spy(*args, **kwargs):
        seen.update(kwargs)
        raise ValueError("reached the study")

    monkeypatch.setattr("theory.cli.yield_study", spy)
    assert main(["yield-study", str(sweep), "--density", "slice"]) == 2
    assert seen["density"] == "slice"


def test_progress_bar_only_when_asked(sweep, capsys):
    yield_study(sweep, n_geometry=500, rng=1, n_simulate=0)  # the bar is the predictions' (no simulation needed)
    assert "yield predictions" not in capsys.readouterr().err
    yield_study(sweep, n_geometry=500, rng=1, progress=True, n_simulate=0)
    assert "yield predictions" in capsys.readouterr().err


def test_cli_writes_json_and_names_bad_directories(sweep, tmp_path, capsys):
    path = tmp_path / "y.json"
    assert main(["yield-study", str(sweep), "--n-geometry", "1000", "--json", str(path)]) == 0
    assert json.loads(path.read_text())["kind"] == "yield-study"
    assert main(["yield-study", str(tmp_path / "nothing")]) == 2
    assert "no runs/ directory" in capsys.readouterr().err


def _never(*args, **kwargs):
    raise AssertionError("a prediction ran before the arguments were checked")


BAD_ARGUMENTS = [
    ({"geometry": "flat"}, ValueError, r"`geometry` must be one of .*; got geometry='flat'"),
    ({"geometry": None}, ValueError, r"got geometry=None"),
    ({"density": "row"}, ValueError, r"`density` must be one of .*; got density='row'"),
    ({"n_geometry": 0}, ValueError, r"`n_geometry` must be at least 2; got n_geometry=0"),
    ({"n_geometry": 1}, ValueError, r"`n_geometry` must be at least 2; got n_geometry=1"),
    ({"n_geometry": 2.5}, TypeError, r"`n_geometry` must be an integer; got n_geometry=2.5"),
    ({"fit_tol": math.nan}, ValueError, r"`fit_tol` must be finite and positive; got fit_tol=nan"),
    ({"fit_tol": math.inf}, ValueError, r"`fit_tol` must be finite and positive; got fit_tol=inf"),
    ({"fit_tol": 0.0}, ValueError, r"`fit_tol` must be finite and positive; got fit_tol=0.0"),
    ({"fit_tol": -1.0}, ValueError, r"`fit_tol` must be finite and positive; got fit_tol=-1.0"),
    ({"fit_tol": 1.5}, ValueError, r"`fit_tol` must be below 1; got fit_tol=1.5\."),
    ({"fit_tol": 1}, ValueError, r"`fit_tol` must be below 1; got fit_tol=1.0\."),
    ({"fit_tol": "0.015"}, TypeError, r"`fit_tol` must be a real number; got fit_tol='0.015'"),
    ({"fit_tol": 0.02}, ValueError, r"`fit_tol` must be a tolerance the runs used, one of 0.015; got fit_tol=0.02"),
    ({"rng": -1}, ValueError, r"`rng` must be a non-negative integer seed; got rng=-1"),
    # The library's "no limit" is None; 0 is refused (the command line's --max-seconds 0 stands for None).
    ({"max_seconds": 0}, ValueError, r"`max_seconds` must be finite and positive; got max_seconds=0.0\."),
    ({"max_seconds": "600"}, TypeError, r"`max_seconds` must be a real number; got max_seconds='600'"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD_ARGUMENTS,
                         ids=[f"{k}={v!r}" for kw, _, _ in BAD_ARGUMENTS for k, v in kw.items()])
def test_bad_arguments(sweep, kwargs, error, match, monkeypatch):
    """Every argument is checked before the first prediction (which would fail later or give nonsense)."""
    monkeypatch.setattr("theory.yield_study.predicted_yield", _never)
    with pytest.raises(error, match=match):
        yield_study(sweep, **kwargs)


def test_fit_tol_of_the_runs_is_accepted(sweep):
    study = yield_study(sweep, n_geometry=500, fit_tol=0.015, rng=1)
    assert study.fit_tol == 0.015 and study.fit_measured["points"] == len(study.runs)


BAD_OPTIONS = [
    (["--fit-tol", "0.02"], "`--fit-tol` must be a tolerance the runs used, one of 0.015; got --fit-tol=0.02"),
]

#: Refused at parsing by yield_study's declared rules (or --max-seconds's own): the whole line of standard error.
PARSE_ERRORS = [
    (["--fit-tol", "0"], "argument --fit-tol: `--fit-tol` must be finite and positive; got --fit-tol=0.0"),
    (["--fit-tol", "-1"], "argument --fit-tol: `--fit-tol` must be finite and positive; got --fit-tol=-1.0"),
    (["--fit-tol", "2"], "argument --fit-tol: `--fit-tol` must be below 1; got --fit-tol=2.0"),
    (["--n-geometry", "1"], "argument --n-geometry: `--n-geometry` must be at least 2; got --n-geometry=1"),
    (["--n-geometry", "2.5"], "argument --n-geometry: `--n-geometry` must be an integer; got --n-geometry '2.5'"),
    (["--max-seconds", "-1"],
     "argument --max-seconds: `--max-seconds` must be finite and non-negative; got --max-seconds=-1.0"),
]


@pytest.mark.parametrize(("option", "value"), [("--n-geometry", v) for v in ("0", "1", "-5", "x", "1e9")]
                         + [("--fit-tol", "nan"), ("--fit-tol", "inf")])
def test_cli_bad_value_is_one_line_naming_the_option(sweep, option, value, capsys, monkeypatch):
    """Parsed by the validation layer's rules: exit 2, one line naming the option, before any prediction."""
    monkeypatch.setattr("theory.yield_study.predicted_yield", _never)
    with pytest.raises(SystemExit) as exc:
        main(["yield-study", str(sweep), option, value])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"python -m theory yield-study: error: argument {option}: "
                                                   f"`{option}` must be"), err


@pytest.mark.parametrize(("argv", "words"), PARSE_ERRORS, ids=[" ".join(a) for a, _ in PARSE_ERRORS])
def test_cli_refuses_at_parsing_by_the_declared_rule(sweep, argv, words, capsys, monkeypatch):
    monkeypatch.setattr("theory.yield_study.predicted_yield", _never)
    with pytest.raises(SystemExit) as exc:
        main(["yield-study", str(sweep), *argv])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == ""
    assert err == f"python -m theory yield-study: error: {words}\n"


def test_cli_max_seconds_zero_is_no_limit(sweep, capsys, monkeypatch):
    """Control of the above: --max-seconds 0 parses and means no limit (the estimate is not consulted), while a
    positive --max-seconds under the estimate refuses the study in the command line's words."""
    def stop(*args, **kwargs):
        raise ValueError("reached the predictions")

    monkeypatch.setattr("theory.yield_study._estimated_seconds", lambda *args: 1e9)
    monkeypatch.setattr("theory.yield_study.predicted_yield", stop)
    assert main(["yield-study", str(sweep), "--max-seconds", "30"]) == 2
    err = capsys.readouterr().err
    assert "over --max-seconds 30; lower --n-geometry, or raise --max-seconds (0 for no limit)." in err, err
    assert main(["yield-study", str(sweep), "--max-seconds", "0"]) == 2
    assert capsys.readouterr().err == "error: reached the predictions\n"


@pytest.mark.parametrize(("argv", "words"), BAD_OPTIONS, ids=[" ".join(a) for a, _ in BAD_OPTIONS])
def test_cli_bad_numeric_option_is_one_line_before_any_prediction(sweep, argv, words, capsys, monkeypatch):
    monkeypatch.setattr("theory.yield_study.predicted_yield", _never)
    assert main(["yield-study", str(sweep), *argv]) == 2
    out, err = capsys.readouterr()
    assert err == f"error: {words}.\n" and out == ""


def test_cli_plot_without_matplotlib_is_refused_before_any_prediction(sweep, tmp_path, capsys, monkeypatch):
    """Covered by learner.argparsing.check_output_options (called by theory's main): no second check here."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails, find_spec says None
    monkeypatch.setattr("theory.yield_study.predicted_yield", _never)
    assert main(["yield-study", str(sweep), "--plot", str(tmp_path / "y.png")]) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "y.png").exists()


def test_plot_yield_without_matplotlib_says_so(monkeypatch, tmp_path):
    """Reached anyway (from the library): a ValueError naming the extra, not a bare ModuleNotFoundError."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ValueError, match=r"plot_yield needs matplotlib \(the `plot` extra"):
        plot_yield(None, tmp_path / "y.png")


# --------------------------------------------------------------------------- #
# records checked on load
# --------------------------------------------------------------------------- #

_DELETE = object()
#: The record edited below: m = 2, k = 3 (n = 2), so that m and k each have a diagnostic to disagree with.
_EDITED = "provable-eval-m2-d6-k3-ls1-boolean-s0.json"


def _edit(rec, path, value):
    *parents, last = path.split(".")
    node = rec
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value


P4 = "diagnostics.4_refined_sculpt"
#: (field, new value or _DELETE, words of the warning). Every edit makes the record unusable; none may crash.
BAD_RECORDS = [
    ("kind", _DELETE, "field `kind` is missing"),
    ("spec", _DELETE, "field `spec` is missing"),
    ("spec", [2, 6, 3], "field `spec` must be a JSON object; got [2, 6, 3]"),
    ("spec.role", _DELETE, "field `spec.role` is missing"),
    ("outcome", None, "field `outcome` must be a non-empty string; got None"),
    ("diagnostics", None, "field `diagnostics` must be a JSON object; got None"),
    ("run_id", 7, "field `run_id` must be a non-empty string; got 7"),
    ("run_id", "../../x", "field `run_id` must be the one its spec gives"),
    ("spec.noise", "x", "field `spec.noise` must be a finite number >= 0; got 'x'"),
    ("spec.noise", [], "field `spec.noise` must be a finite number >= 0; got []"),
    ("success", "yes", "field `success` must be true or false; got 'yes'"),
    ("success", _DELETE, "field `success` is missing"),
    ("spec.m", 2.5, "field `spec.m` must be an integer >= 1; got 2.5"),
    ("spec.m", "2", "field `spec.m` must be an integer >= 1; got '2'"),
    ("spec.m", 0, "field `spec.m` must be an integer >= 1; got 0"),
    ("spec.m", 5, "field `diagnostics.0_setting.planned_m` must equal `spec.m` (the learner plans the m it is "
                  "given); got planned_m=2, m=5"),
    ("spec.k", 1, "field `spec.k` must be an integer >= 2; got 1"),
    ("spec.k", 2, f"field `{P4}.rows_seen` must be k × examples"),
    ("spec.k", 6, "field `spec.k` must be smaller than `spec.d` for certification; got k=6, d=6"),
    ("spec.d", True, "field `spec.d` must be an integer >= 1; got True"),
    ("spec.d", 8, "field `run_id` must be the one its spec gives, 'provable-eval-m2-d8-k3-ls1-boolean-s0'"),
    ("spec.entropy", -1, "field `spec.entropy` must be an integer >= 0; got -1"),
    ("spec.seed_index", None, "field `spec.seed_index` must be an integer >= 0; got None"),
    ("spec.distribution", "cube", "field `spec.distribution` must be one of ('boolean', 'gaussian'); got 'cube'"),
    ("spec.options", None, "field `spec.options` must be a JSON object; got None"),
    ("spec.logit_scale", math.nan, "field `spec.logit_scale` must be a finite number > 0; got nan"),
    ("spec.logit_scale", -1.0, "field `spec.logit_scale` must be a finite number > 0; got -1.0"),
    ("diagnostics.0_setting", _DELETE, "field `diagnostics.0_setting` is missing"),
    (f"{P4}", "phase 4", f"field `{P4}` must be a JSON object; got 'phase 4'"),
    (f"{P4}.constraints", -3, f"field `{P4}.constraints` must be an integer >= 0; got -3"),
    (f"{P4}.constraints", math.nan, f"field `{P4}.constraints` must be an integer >= 0; got nan"),
    (f"{P4}.constraints", 10**6, f"field `{P4}.constraints_per_1000_examples` must be 1000 × constraints / examples"),
    (f"{P4}.examples", 0, f"field `{P4}.examples` must be an integer >= 1; got 0"),
    (f"{P4}.examples", -20000, f"field `{P4}.examples` must be an integer >= 1; got -20000"),
    (f"{P4}.examples", "20000", f"field `{P4}.examples` must be an integer >= 1; got '20000'"),
    (f"{P4}.constraints_per_1000_examples", math.nan,
     f"field `{P4}.constraints_per_1000_examples` must be a finite number >= 0; got nan"),
    (f"{P4}.constraints_per_1000_examples", -2.0,
     f"field `{P4}.constraints_per_1000_examples` must be a finite number >= 0; got -2.0"),
    (f"{P4}.constraints_per_1000_examples", _DELETE, f"field `{P4}.constraints_per_1000_examples` is missing"),
    (f"{P4}.constraints_per_1000_examples", 124386.0,
     f"field `{P4}.constraints_per_1000_examples` must be 1000 × constraints / examples"),
    (f"{P4}.tol", _DELETE, f"field `{P4}.tol` is missing"),
    (f"{P4}.tol", 0.0, f"field `{P4}.tol` must be a finite number in (0, 1); got 0.0"),
    (f"{P4}.tol", math.inf, f"field `{P4}.tol` must be a finite number in (0, 1); got inf"),
    (f"{P4}.min_weight", 1.0, f"field `{P4}.min_weight` must be a finite number in (0, 1); got 1.0"),
    (f"{P4}.rows_seen", 7, f"field `{P4}.rows_seen` must be k × examples"),
    (f"{P4}.rank", 10**4, f"field `{P4}.rank` must be at most min(constraints, d²)"),
    ("diagnostics.0_setting.planned_m", 3, "field `diagnostics.0_setting.planned_m` must equal `spec.m`"),
    (f"{P4}.forecast.n", 4, f"field `{P4}.forecast.n` must be (m−1)(k−1) = 2 for m=2, k=3; got n=4"),
    ("run_id", "provable-eval-m3-d6-k3-ls1-boolean-s0", "field `run_id` must be the one its spec gives"),
    # Tampered timings are refused before the time predictions (where a string crashes, 1e300 is plotted).
    ("timings.total", "slow", "field `timings.total` must be a duration in seconds (0 to 1e+08); got 'slow'"),
    ("timings.total", 1e300, "field `timings.total` must be a duration in seconds (0 to 1e+08); got 1e+300"),
    ("timings.4_refined_sculpt", -1.0, "field `timings.4_refined_sculpt` must be a duration in seconds"),
    ("timings", [1, 2], "field `timings` must be an object of durations; got [1, 2]"),
]


def _sweep_with(sweep, tmp_path, text, sign=True):
    """A copy of ``sweep`` whose record _EDITED has the content ``text``; an object is signed again (its digest
    recomputed, as a faulty writer would) unless ``sign`` is False, so that the study's own field rules are tested."""
    out = tmp_path / "edited"
    shutil.copytree(sweep, out)
    try:
        rec = json.loads(text)
    except ValueError:
        rec = None
    if sign and isinstance(rec, dict) and DIGEST_FIELD in rec:
        rec[DIGEST_FIELD] = record_digest(rec)
        text = json.dumps(rec)
    (out / "runs" / _EDITED).write_text(text, encoding="utf-8")
    return out


def test_an_unsigned_edit_is_skipped_with_a_warning(sweep, tmp_path, caplog):
    rec = json.loads((sweep / "runs" / _EDITED).read_text())
    rec["success"] = not rec["success"]
    edited = _sweep_with(sweep, tmp_path, json.dumps(rec), sign=False)
    with caplog.at_level(logging.WARNING, logger="theory.yield_study"):
        records = load_learner_records(edited)
    assert len(records) == len(load_learner_records(sweep)) - 1
    assert "edited or damaged after it was written" in caplog.text


@pytest.mark.parametrize("null", [False, True], ids=["digest missing", "digest null"])
def test_a_record_without_its_digest_is_skipped_with_a_warning(sweep, tmp_path, caplog, null):
    """The digest is required: a record without one, or with null, is left out by name (nothing vouches for it)."""
    rec = json.loads((sweep / "runs" / _EDITED).read_text())
    if null:
        rec[DIGEST_FIELD] = None
    else:
        del rec[DIGEST_FIELD]
    edited = _sweep_with(sweep, tmp_path, json.dumps(rec), sign=False)
    with caplog.at_level(logging.WARNING, logger="theory.yield_study"):
        records = load_learner_records(edited)
    assert {r["run_id"] for r in records} == {r["run_id"] for r in load_learner_records(sweep)} - {_EDITED[:-5]}
    state = "null" if null else "missing"
    assert f"ignoring record {edited / 'runs' / _EDITED}: `{DIGEST_FIELD}` is {state}" in caplog.text


@pytest.mark.parametrize(("path", "value", "words"), BAD_RECORDS,
                         ids=[f"{p}={'deleted' if v is _DELETE else repr(v)}" for p, v, _ in BAD_RECORDS])
def test_bad_record_is_skipped_with_a_warning(sweep, tmp_path, caplog, path, value, words):
    """A hand-edited record that breaks what the study reads is left out, named with its field; never used."""
    rec = json.loads((sweep / "runs" / _EDITED).read_text())
    assert P4 + ".forecast" not in path or "forecast" in rec["diagnostics"]["4_refined_sculpt"]
    _edit(rec, path, value)
    edited = _sweep_with(sweep, tmp_path, json.dumps(rec))
    with caplog.at_level(logging.WARNING, logger="theory.yield_study"):
        records = load_learner_records(edited)
    assert {r["run_id"] for r in records} == {r["run_id"] for r in load_learner_records(sweep)} - {_EDITED[:-5]}
    [message] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert message.startswith(f"ignoring record {edited / 'runs' / _EDITED}: ") and words in message


@pytest.mark.parametrize(("text", "words"), [
    ("{not json", "is not a readable record (JSONDecodeError: Expecting property name"),
    ("[1, 2]", "the record must be a JSON object; got list"),
    ("", "is not a readable record (JSONDecodeError: Expecting value"),
], ids=["broken-json", "a-list", "empty"])
def test_unreadable_record_is_skipped_with_a_warning(sweep, tmp_path, caplog, text, words):
    edited = _sweep_with(sweep, tmp_path, text)
    with caplog.at_level(logging.WARNING, logger="theory.yield_study"):
        records = load_learner_records(edited)
    assert len(records) == len(load_learner_records(sweep)) - 1
    [message] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert str(edited / "runs" / _EDITED) in message and words in message


@pytest.mark.parametrize(("path", "value"), [("status", _DELETE), ("errors", _DELETE), ("timings", None),
                                             ("message", _DELETE)],
                         ids=["status-deleted", "errors-deleted", "timings-null", "message-deleted"])
def test_fields_the_study_does_not_read_do_not_matter(sweep, tmp_path, caplog, path, value):
    rec = json.loads((sweep / "runs" / _EDITED).read_text())
    _edit(rec, path, value)
    edited = _sweep_with(sweep, tmp_path, json.dumps(rec))
    with caplog.at_level(logging.WARNING, logger="theory.yield_study"):
        assert len(load_learner_records(edited)) == len(load_learner_records(sweep))
    assert not caplog.records


def test_a_study_goes_on_without_the_bad_record_and_lists_it(sweep, tmp_path, capsys, caplog):
    """A run whose spec m is edited from 2 to 5 (read, it gives a ratio of 124 386) is left out, named."""
    rec = json.loads((sweep / "runs" / _EDITED).read_text())
    rec["spec"]["m"] = 5
    edited = _sweep_with(sweep, tmp_path, json.dumps(rec))
    study = yield_study(edited, n_geometry=500, rng=1, n_simulate=0)
    assert _EDITED[:-5] not in {r["run_id"] for r in study.runs}
    assert all(r["m"] <= 2 for r in study.runs)
    [skipped] = study.skipped
    assert skipped["file"] == str(edited / "runs" / _EDITED) and "`spec.m`" in skipped["reason"]
    assert study.to_dict()["skipped"] == study.skipped
    assert main(["yield-study", str(edited), "--n-geometry", "500", "--n-simulate", "0"]) == 0
    assert "1 records skipped as unreadable or invalid (see the warnings)" in capsys.readouterr().out


def test_only_bad_records_is_an_error_that_says_so(sweep, tmp_path):
    out = tmp_path / "bad"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / _EDITED).write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"no finished learner run .*\(1 records skipped as unreadable or invalid"):
        yield_study(out, n_geometry=500)


def test_committed_sweeps_pass_the_checks(caplog):
    """Every record the learner wrote for the README's studies loads (the checks reject no genuine record); the
    studies whose runs are not the learner's scaling runs are left out: the hard families by name, the trained heads
    by the kind of their claim."""
    root = Path(__file__).resolve().parents[2] / "docs" / "sweeps"

    def kind(folder):
        claim = folder / "study.json"
        return json.loads(claim.read_text(encoding="utf-8")).get("kind") if claim.exists() else None

    sweeps = [p for p in sorted(root.iterdir()) if (p / "runs").is_dir() and p.name != "learn-hard"
              and kind(p) != "trained-study"]
    if not sweeps:
        pytest.skip("no committed sweeps")
    with caplog.at_level(logging.WARNING, logger="theory.yield_study"):
        for d in sweeps:
            assert load_learner_records(d)
    assert not caplog.records


def test_every_cell_gets_a_row_even_without_a_measurement(sweep, tmp_path):
    """A cell whose runs all ended before phase 4 (here: edited to have raised) is a row saying so, not a gap."""
    out = tmp_path / "cells"
    shutil.copytree(sweep, out)
    changed = 0
    for path in sorted((out / "runs").glob("provable-*-m2-*.json")):
        rec = json.loads(path.read_text())
        rec["outcome"], rec["status"], rec["diagnostics"] = "error", "error", {}
        rec[DIGEST_FIELD] = record_digest(rec)  # as a run that raised would have written it
        path.write_text(json.dumps(rec))
        changed += 1
    assert changed
    study = yield_study(out, n_geometry=500, rng=1, n_simulate=0)
    rows = {(s["m"], s["k"]): s for s in study.settings}
    assert rows[(2, 3)]["runs"] == 0 and rows[(2, 3)]["statuses"] == {"error": changed}
    assert "| 2 | 6 | 3 | 2 | – | 0 | no run reached phase 4 (error 2) |" in study.table()
    # Control: the untouched sweep measures that cell.
    assert {(s["m"], s["k"]): s for s in yield_study(sweep, n_geometry=500, rng=1,
                                                          n_simulate=0).settings}[(2, 3)]["runs"] > 0


def test_predicted_examples_and_time_of_a_run(sweep):
    """Phase 4's target over the predicted yield, and the run's time with phase 4 at that many examples."""
    study = yield_study(sweep, n_geometry=500, rng=1)
    records = {r["run_id"]: r for r in load_learner_records(sweep)}
    checked = 0
    for run in study.runs:
        rec = records[run["run_id"]]
        p4 = rec["diagnostics"]["4_refined_sculpt"]
        target = p4["forecast"]["target"]
        assert run["target"] == target and run["examples_measured"] == (p4.get("examples_at_target") or p4["examples"])
        if run["predicted"] > 0:
            assert run["examples_predicted"] == pytest.approx(1000 * target / run["predicted"], rel=1e-12)
            rate = rec["execution"]["phases"]["4_refined_sculpt"]["examples_per_second"]
            rounds = max(1, len(p4.get("rounds") or [None]))
            others = rec["timings"]["total"] - rec["timings"]["4_refined_sculpt"]
            want = others + rounds * run["examples_predicted"] / rate
            assert run["seconds_predicted"] == pytest.approx(want, rel=1e-12)
            checked += 1
    assert checked


def test_a_study_that_would_take_hours_is_refused_with_its_estimate(sweep):
    """--n-geometry 100000000 would run for hours: the estimate refuses it at once, naming the time."""
    with pytest.raises(ValueError, match=r"`n_geometry`=100,000,000 over \d+ runs would take up to about .* "
                                         r"over max_seconds=600"):
        yield_study(sweep, n_geometry=10**8, rng=1)


def test_the_estimate_does_not_touch_the_predictions(sweep):
    """Control: the calibration has its own generator; with or without the limit the study is the same."""
    a = yield_study(sweep, n_geometry=500, rng=1, n_simulate=0)
    b = yield_study(sweep, n_geometry=500, rng=1, max_seconds=None, n_simulate=0)
    assert [r["predicted"] for r in a.runs] == [r["predicted"] for r in b.runs]


def test_cli_refuses_the_long_study_in_its_own_words(sweep, capsys):
    from theory.cli import main

    assert main(["yield-study", str(sweep), "--n-geometry", "100000000"]) == 2
    err = capsys.readouterr().err
    assert "error: --n-geometry 100,000,000 over" in err and "raise --max-seconds (0 for no limit)" in err, err


@pytest.mark.parametrize(("extra", "panels"), [({}, 1), ({"examples_measured": 5e4, "examples_predicted": 6e4}, 2),
                                                ({"examples_measured": 5e4, "seconds": 3.0}, 3)],
                         ids=["the yield alone", "examples", "examples and seconds"])
def test_plot_yield_draws_a_panel_only_where_some_run_has_its_quantity(tmp_path, monkeypatch, extra, panels):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from theory.yield_study import YieldStudy

    drawn = []
    subplots = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **kw: drawn.append(a) or subplots(*a, **kw))
    runs = [{"m": m, "k": 2, "n": m - 1, "measured": 10.0 ** -m, "predicted": 2 * 10.0 ** -m} | extra
            for m in (2, 3)]
    fit = {"slope": -2.3, "intercept": 0.0, "delta": 0.1}
    study = YieldStudy(runs=runs, settings=[], fit_tol=0.08, fit_measured=fit, fit_predicted=fit, geometry="exact",
                       seconds=0.0, skipped=[], density="gaussian")
    plot_yield(study, tmp_path / "y.png")
    assert drawn == [(1, panels)] and (tmp_path / "y.png").stat().st_size > 1000
