"""Finite but huge scales (1e308 for a logit scale, a W scale, label noise, a sharpness) are refused where they are
typed, naming the option or parameter, instead of overflowing later in an array the user never named."""

from __future__ import annotations

import pytest

from learner.validation import SCALE_BELOW, Scale

CASES = [
    ("learner", ["learn", "--m", "2", "--d", "8", "--k", "2"], "--noise"),
    ("learner", ["learn", "--m", "2", "--d", "8", "--k", "2"], "--w-scale"),
    ("learner", ["learn", "--m", "2", "--d", "8", "--k", "2"], "--logit-scale"),
    ("learner", ["sample", "--m", "2", "--d", "8", "--n-samples", "5"], "--w-scale"),
    ("learner", ["sample", "--m", "2", "--d", "8", "--n-samples", "5"], "--logit-scale"),
    ("learner", ["scaling", "--out", "{out}"], "--logit-scale"),
    ("learner", ["noise-study", "--out", "{out}"], "--sigma"),
    ("lowerbounds", ["lwe"], "--sharpness"),
]


@pytest.mark.parametrize(("package", "argv", "option"), CASES, ids=[f"{p}-{a[0]}-{o}" for p, a, o in CASES])
def test_the_option_typed_is_named(tmp_path, capsys, package, argv, option):
    main = __import__(f"{package}.cli", fromlist=["main"]).main
    with pytest.raises(SystemExit) as exc:  # refused while the options are read
        main([a.replace("{out}", str(tmp_path / "out")) for a in argv] + [option, "1e308"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    if argv[0] == "learn" and option == "--logit-scale":  # learn's own size limit is lower (SIZE_LIMITS)
        assert f"`{option}` must be below 1000" in err
    else:
        assert f"`{option}` must be below 1e+100" in err and "overflow" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["logit_scale", "w_scale"])
def test_the_library_names_the_parameter(name):
    from learner import random_layer

    with pytest.raises(ValueError, match=f"`{name}` must be below 1e\\+100"):
        random_layer(2, 8, **{name: 1e308})
    layer = random_layer(2, 8, **{name: 1e99})  # control: just below the bound, a finite layer
    assert layer.thetas.max() < float("inf") and layer.ws.max() < float("inf")


def test_the_rule_and_its_control():
    rule = Scale(allow_zero=True)
    assert rule.check("noise", 0.0) == 0.0 and rule.check("noise", 9.9e99) == 9.9e99
    with pytest.raises(ValueError, match="`noise` must be below 1e\\+100"):
        rule.check("noise", SCALE_BELOW)


def test_a_label_at_the_bound_and_its_square_stay_finite():
    """The bound's reason, checked: labels of a layer with W scale just below it, and their squares, are finite."""
    import numpy as np

    from learner import LayerOracle, random_layer

    X, Y = LayerOracle(random_layer(2, 8, w_scale=9.9e99, rng=0), 2, noise=9.9e99, rng=1).draw(200)
    assert np.isfinite(Y).all() and np.isfinite(np.sum(Y * Y))
