"""One home per default: the phases take their settings from :class:`learner.LearnConfig`, and a phase called on
its own does what :func:`learner.learn` does with it.

The rules are read from the phase modules themselves (every public function of every module of
:mod:`learner.phases`), so a function added later is held to them with no edit here:

- no public function of the phases declares a default for a parameter named like a config field other than the
  config's own;
- every phase function (the six phases, the noise-floor test and the decisions on m) takes ``config`` and no
  parameter named like a config field at all, and at most :data:`MAX_PARAMETERS` parameters besides ``config``.

Each rule has a control built to break it. The replay at the end is the behaviour the rules are for: the phases
called one after another with the defaults give the layer, bit for bit, that ``learn`` gives with the defaults.
"""

import dataclasses
import importlib
import inspect
import pkgutil

import numpy as np

import learner.phases as phases_pkg
from learner import LayerOracle, LearnConfig, learn, random_layer
from learner.phases import (
    crude_sculpt,
    crude_sum_w,
    estimate_span,
    refine_sum_w,
    refined_sculpt,
    search_heads,
    select,
)

#: The most parameters a phase function takes besides its config.
MAX_PARAMETERS = 8
#: The phase functions beyond the package's exports: the decisions on m after phase 6.
DECISIONS = (select.select_m, select.probe_more_heads, select.drop_redundant)

CONFIG_DEFAULTS = {f.name: f.default for f in dataclasses.fields(LearnConfig)}


def public_functions(package):
    """``{dotted name: function}`` of every public function defined in a module of ``package``."""
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, obj in vars(module).items():
            # "__mutmut_" names are mutmut's copies of a function during a mutation run, not an API
            if (not name.startswith("_") and "__mutmut_" not in name and inspect.isfunction(obj)
                    and obj.__module__ == module.__name__):
                found[f"{module.__name__}.{name}"] = obj
    return found


def phase_functions(package=phases_pkg, extra=DECISIONS):
    """The package's phases (its ``PHASES``), plus ``extra``: ``{name: function}``."""
    return {f.__name__: f for f in (*package.PHASES, *extra)}


def drifting_defaults(functions, defaults=CONFIG_DEFAULTS):
    """``(function, parameter, its default, the config's)`` wherever a default differs from the config's."""
    out = []
    for name, f in functions.items():
        for p in inspect.signature(f).parameters.values():
            if p.name in defaults and p.default is not inspect.Parameter.empty and p.default != defaults[p.name]:
                out.append((name, p.name, p.default, defaults[p.name]))
    return out


def phase_problems(functions, fields=CONFIG_DEFAULTS, limit=MAX_PARAMETERS):
    """What breaks the phase-function rule: no ``config``, a parameter named like a field, too many parameters."""
    out = []
    for name, f in functions.items():
        params = inspect.signature(f).parameters
        if "config" not in params:
            out.append((name, "takes no config"))
        out += [(name, f"takes the config field {p!r} itself") for p in params if p in fields]
        if len(params) - ("config" in params) > limit:
            out.append((name, f"takes {len(params) - ('config' in params)} parameters besides its config"))
    return out


class TestOneHomePerDefault:
    def test_no_public_function_of_the_phases_redeclares_a_default(self):
        functions = public_functions(phases_pkg)
        assert len(functions) > 30  # every module was read
        assert drifting_defaults(functions) == []

    def test_every_phase_function_reads_the_config_and_takes_few_parameters(self):
        functions = phase_functions()
        assert {"crude_sum_w", "refined_sculpt", "search_heads", "select_m", "noise_floor"} <= set(functions)
        assert phase_problems(functions) == []

    def test_control_a_redeclared_default_is_found(self):
        def sculpt(source, w_sum, *, min_weight=0.1, batch=100_000, max_examples=None, config=None):
            return source

        found = drifting_defaults({"sculpt": sculpt})
        assert found == [("sculpt", "min_weight", 0.1, 0.02)]  # batch is the config's; max_examples too (None)

    def test_control_a_phase_that_bypasses_the_config_is_found(self):
        def search(source, theta, directions, m, a, b, c, d, e, *, n_search=2000):
            return source

        def fine(source, theta, directions, m, config=None, *, truth=None, workers=None, threads=1, device=None):
            return source

        assert phase_problems({"search": search, "fine": fine}) == [
            ("search", "takes no config"), ("search", "takes the config field 'n_search' itself"),
            ("search", "takes 10 parameters besides its config")]

    def test_control_the_walk_finds_a_function_in_a_new_module(self, tmp_path, monkeypatch):
        package = tmp_path / "toyphases"
        package.mkdir()
        (package / "__init__.py").write_text("__all__ = []\n")
        (package / "newphase.py").write_text("def new_phase(source, *, keep_tuples=5):\n    return source\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        toy = importlib.import_module("toyphases")
        assert drifting_defaults(public_functions(toy)) == [("toyphases.newphase.new_phase", "keep_tuples", 5, 20)]


class TestAPhaseOnItsOwnIsWhatLearnRuns:
    """The six phases called one after another with ``LearnConfig()`` and the learner's m, on an oracle of the same
    seed, give every intermediate result and the layer that ``learn`` gives with its defaults (both in this process:
    the examples are the same batches, and the arithmetic is the same)."""

    def test_replay_of_two_heads(self):
        truth, m = random_layer(2, 8, rng=0), 2
        result = learn(LayerOracle(truth, 2, rng=1), m=m, progress=False)
        assert result.success and "tight_retry" not in result.diagnostics["4_refined_sculpt"]
        cfg = LearnConfig()
        oracle = LayerOracle(truth, 2, rng=1)
        p1 = crude_sum_w(oracle, cfg)
        p2 = crude_sculpt(oracle, p1.w_sum, cfg)
        theta = estimate_span(p2, cfg, m=m).theta_star if p2.count >= 64 else None
        w_sum = p1.w_sum
        for _ in range(cfg.outer_rounds):
            p3 = refine_sum_w(oracle, w_sum, theta, cfg)
            w_sum = p3.w_sum
            p4 = refined_sculpt(oracle, w_sum, cfg, m=m)
            p5 = estimate_span(p4, cfg, m=m, allow_deficit=True)
            theta = p5.theta_star
            if p3.details["stopped"] == "standard error":
                break
        p6 = search_heads(oracle, p5.theta_star, p5.directions, p5.m, cfg)
        ran = result.phases
        np.testing.assert_array_equal(p1.w_sum, ran["1_crude_sum"].w_sum)
        np.testing.assert_array_equal(p2.b, ran["2_crude_sculpt"].b)
        np.testing.assert_array_equal(p3.w_sum, ran["3_refine_sum"].w_sum)
        np.testing.assert_array_equal(p4.b, ran["4_refined_sculpt"].b)
        assert p4.tol == ran["4_refined_sculpt"].tol
        np.testing.assert_array_equal(p5.theta_star, ran["5_span"].theta_star)
        np.testing.assert_array_equal(p6.layer.thetas, result.layer.thetas)
        np.testing.assert_array_equal(p6.layer.ws, result.layer.ws)
        # the run then drew its certificate's fresh examples, which the replay does not
        cert = result.diagnostics["certificate"]
        assert oracle.n_drawn + cert["n_calibration"] + cert["n_measured"] == result.examples_drawn

    def test_control_a_phase_with_another_default_gives_another_run(self):
        # The replay's own control: phase 2 at the minimum weight its function once declared (0.1 against the
        # config's 0.02) certifies other constraints from the same examples.
        truth = random_layer(2, 8, rng=0)
        p1 = crude_sum_w(LayerOracle(truth, 2, rng=1))
        ours = crude_sculpt(LayerOracle(truth, 2, rng=1), p1.w_sum)
        other = crude_sculpt(LayerOracle(truth, 2, rng=1), p1.w_sum, LearnConfig(min_weight=0.1))
        assert ours.b.shape != other.b.shape or not np.array_equal(ours.b, other.b)

