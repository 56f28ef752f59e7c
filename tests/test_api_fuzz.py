"""The API fuzz: public functions against bad parameter values.

Each case calls one public function with fast valid arguments and one parameter replaced by a bad value.
It must either return, or raise ``ValueError``/``TypeError`` whose message names the parameter (```name```
or ``name=``) — never another exception, never a run over :data:`CASE_SECONDS`. The default run tries a
sample drawn by Hypothesis (derandomized); ``-m slow`` tries every case.
"""

from __future__ import annotations

import math
import signal
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learner import (
    LayerOracle,
    PlantingError,
    attention_statistics,
    match_heads,
    random_layer,
    relative_error,
    sample_inputs,
)
from learner.baselines import fit_gradient
from learner.phases import LearnConfig

CASE_SECONDS = 30
BAD = (0, -1, 1.5, math.nan, math.inf, -math.inf, 1e308, 10**30, "x", "", None, True, [1], np.float64("nan"))

_LAYER = random_layer(2, 4, rng=0)


def _oracle():
    return LayerOracle(_LAYER, 2, rng=0)


#: (function, valid keyword arguments, the parameters to fuzz).
FUNCTIONS = {
    "random_layer": (random_layer, {"m": 2, "d": 4, "rng": 0},
                     ("m", "d", "logit_scale", "w_scale", "check", "max_tries", "rng")),
    "sample_inputs": (sample_inputs, {"n_samples": 5, "k": 2, "d": 4, "rng": 0},
                      ("n_samples", "k", "d", "distribution", "rng")),
    "LayerOracle": (LayerOracle, {"layer": _LAYER, "k": 2, "rng": 0}, ("layer", "k", "distribution", "rng")),
    "relative_error": (relative_error, {"f": _LAYER, "g": _LAYER, "k": 2, "n_samples": 50, "rng": 0},
                       ("f", "g", "k", "n_samples", "rng")),
    "attention_statistics": (attention_statistics, {"layer": _LAYER, "k": 2, "n_samples": 50, "rng": 0},
                             ("layer", "k", "n_samples", "batch", "rng")),
    "match_heads": (match_heads, {"reference": _LAYER, "estimate": _LAYER}, ("reference", "estimate")),
    "fit_gradient": (fit_gradient, {"source": None, "m": 2, "max_iter": 5, "restarts": 1, "n_train": 50,
                                    "n_val": 20, "rng": 0},
                     ("m", "lr", "max_iter", "restarts", "batch", "n_train", "n_val", "tol", "patience",
                      "init_scale", "success_tol")),
    "LearnConfig": (LearnConfig, {}, ("max_examples", "n_crude", "success_tol", "refined_tol", "gap_min")),
}

CASES = [(name, param, value) for name, (_, _, params) in FUNCTIONS.items() for param in params for value in BAD]


class _TooLong(BaseException):
    pass


def _call(name, param, value):
    fn, kwargs, _ = FUNCTIONS[name]
    kwargs = dict(kwargs)
    if "source" in kwargs:
        kwargs["source"] = _oracle()
    kwargs[param] = value

    def alarm(signum, frame):
        raise _TooLong

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(CASE_SECONDS)
    try:
        fn(**kwargs)
    except (ValueError, TypeError, PlantingError) as exc:  # PlantingError: random_layer's documented refusal
        message = str(exc)
        assert f"`{param}`" in message or f"{param}=" in message, f"{name}({param}={value!r}): {message}"
    except _TooLong:
        pytest.fail(f"{name}({param}={value!r}) ran longer than {CASE_SECONDS} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_control_a_message_that_names_another_parameter_fails():
    """Negative control: a refusal that blames the wrong parameter is caught by the check."""
    FUNCTIONS["_control"] = (lambda **kw: (_ for _ in ()).throw(ValueError("`d` must be at least 1")), {}, ())
    try:
        with pytest.raises(AssertionError, match="must be at least 1"):
            _call("_control", "m", 0)
    finally:
        del FUNCTIONS["_control"]


@settings(max_examples=20, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES))
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_fast_sample(case):
    _call(*case)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{p}={v!r}" for n, p, v in CASES])
def test_every_case(case):
    _call(*case)


def test_control_valid_arguments_return():
    """Control: every function's base arguments are valid (a refusal would otherwise pass for the wrong reason)."""
    for fn, kwargs, _ in FUNCTIONS.values():
        kwargs = dict(kwargs)
        if "source" in kwargs:
            kwargs["source"] = _oracle()
        fn(**kwargs)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_control_a_real_refusal_stripped_of_the_name_fails(name, monkeypatch):
    """Negative control on the real functions: each refuses ``"x"`` for its first fuzzed parameter, naming it, and
    the check passes; the same refusal with the parameter's name replaced fails the check."""
    fn, kwargs, params = FUNCTIONS[name]
    param = params[0]
    _call(name, param, "x")
    refused = []

    def renamed(**kw):
        try:
            return fn(**kw)
        except (ValueError, TypeError, PlantingError) as exc:
            refused.append(exc)
            text = str(exc).replace(f"`{param}`", "`other`").replace(f"{param}=", "other=")
            raise ValueError(text) from None

    monkeypatch.setitem(FUNCTIONS, name, (renamed, kwargs, params))
    with pytest.raises(AssertionError, match=rf"{name}\({param}='x'\)"):
        _call(name, param, "x")
    assert len(refused) == 1  # the real function refused: the check failed on its message, not on a return


def test_control_another_exception_escapes():
    """Negative control: an exception other than a named refusal is not swallowed by the check."""
    def broken(m):
        return 1 / (m - m)

    FUNCTIONS["_control"] = (broken, {}, ("m",))
    try:
        with pytest.raises(ZeroDivisionError):
            _call("_control", "m", 0)
    finally:
        del FUNCTIONS["_control"]


def test_control_a_run_over_the_limit_fails(monkeypatch):
    """Negative control: a call that outlives the limit fails the case (the limit set to 1 s here)."""
    import time

    def hang(m):
        time.sleep(30)

    monkeypatch.setattr(sys.modules[__name__], "CASE_SECONDS", 1)
    monkeypatch.setitem(FUNCTIONS, "_control", (hang, {}, ("m",)))
    with pytest.raises(pytest.fail.Exception, match=r"_control\(m=0\) ran longer than 1 s"):
        _call("_control", "m", 0)
