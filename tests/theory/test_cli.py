"""python -m theory: list, check, all."""

import json

import pytest

from theory.cli import main


class TestList:
    def test_lists_every_check(self, capsys):
        assert main(["list"]) == 0
        out = capsys.readouterr().out
        for name in ("one_step", "softmax_concentration", "local_clt", "min_norm_orthogonality"):
            assert name in out


class TestCheck:
    def test_default_holds_and_writes_json(self, tmp_path, capsys):
        path = tmp_path / "r.json"
        assert main(["check", "min_norm_orthogonality", "--seed", "3", "--json", str(path)]) == 0
        record = json.loads(path.read_text())
        assert record["holds"] is True and record["seed_entropy"] == 3

    def test_control_fails_as_expected(self, capsys):
        # Exit 0: the negative control failed, which is what it is for.
        assert main(["check", "min_norm_orthogonality", "--control"]) == 0
        assert "FAILS" in capsys.readouterr().out

    def test_param_reaches_the_case(self, tmp_path, capsys):
        path = tmp_path / "r.json"
        assert main(["check", "min_norm_orthogonality", "--param", "m=4", "--param", "d=3", "--json", str(path)]) == 0
        params = json.loads(path.read_text())["parameters"]
        assert (params["m"], params["d"]) == (4, 3)

    def test_bad_param_is_a_clear_error(self, capsys):
        assert main(["check", "min_norm_orthogonality", "--param", "nonsense=1"]) == 2
        err = capsys.readouterr().err
        # Names the check, the case and what it does take, not an internal function's signature.
        assert "the default case of 'min_norm_orthogonality' takes no parameter 'nonsense'; it takes" in err
        assert "got an unexpected keyword argument" not in err

    @pytest.mark.parametrize("argv", [
        ["--param", "k=12"],
        ["--param", "k=13"],
        ["--param", "d=5", "--param", "k=5"],
        ["--control", "--param", "k=12"],
    ], ids=["k-equals-d", "k-above-d", "small-d", "control"])
    def test_yield_prediction_refuses_k_at_least_d_up_front(self, argv, capsys, monkeypatch):
        """k >= d is refused as the learner refuses it: one line naming k and d, exit 2, nothing computed."""
        import theory.yield_model as ym

        def never(*args, **kwargs):
            raise AssertionError("computed a yield for k >= d")

        monkeypatch.setattr(ym, "predicted_yield", never)
        monkeypatch.setattr(ym, "measured_yield", never)
        assert main(["check", "yield_prediction", *argv]) == 2
        out, err = capsys.readouterr()
        params = dict(a.split("=") for a in argv if "=" in a)
        k, d = params["k"], params.get("d", "12")
        assert err == f"error: `k` must be smaller than `d` for certification; got k={k}, d={d}.\n"
        assert out == ""

    def test_unknown_check(self, capsys):
        with pytest.raises(SystemExit):
            main(["check", "no_such_check"])

    @pytest.mark.parametrize(("argv", "words"), [
        (["local_clt", "--param", "n=2"], "`n` must be at least 4; got n=2."),
        (["local_clt", "--control", "--param", "delta_factor=0"],
         "`delta_factor` must be finite and positive; got delta_factor=0.0."),
        (["softmax_concentration", "--param", "d=3"], "`d` must be at least 4; got d=3."),
        (["softmax_concentration", "--control", "--param", "block=-1"],
         "`block` must be finite and positive; got block=-1.0."),
    ], ids=["n", "delta-factor", "d", "block"])
    def test_param_is_checked_by_the_cases_declared_rule(self, argv, words, capsys):
        """--param values reach the case builder, whose declared rule refuses them: one line, exit 2."""
        assert main(["check", *argv]) == 2
        out, err = capsys.readouterr()
        assert err == f"error: {words}\n" and out == ""


def _options():
    import argparse

    from theory.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {(command, action.option_strings[-1]): action
            for command, p in sub.choices.items() for action in p._actions if action.option_strings}


def test_yield_study_options_run_the_functions_rules():
    """Single source: --n-geometry and --fit-tol parse with the very rule objects yield_study declares, and
    --geometry's and --density's choices are their rules'; --max-seconds has its own (0 is no limit: the
    function's None)."""
    from learner.validation import Real
    from theory.yield_study import yield_study

    options = _options()
    for flag, name in (("--n-geometry", "n_geometry"), ("--fit-tol", "fit_tol")):
        action = options[("yield-study", flag)]
        assert action.declared == (yield_study, yield_study.rules[name]), flag
        assert getattr(action, "unlimited", action.type).rule is yield_study.rules[name], flag  # before its limit
    assert tuple(options[("yield-study", "--geometry")].choices) == yield_study.rules["geometry"].values
    assert tuple(options[("yield-study", "--density")].choices) == yield_study.rules["density"].values
    max_seconds = options[("yield-study", "--max-seconds")]
    assert max_seconds.declared == (None, Real(allow_zero=True)) and max_seconds.type("0") == 0.0
