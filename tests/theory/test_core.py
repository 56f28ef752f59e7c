"""theory._core: the shared helpers (here: the plot extra, required before any computation)."""

import sys

import pytest

from theory._core import MissingMatplotlib, require_matplotlib
from theory.concentration import plot_expectation_vs_sample
from theory.local_clt import plot_local_clt
from theory.one_step import plot_one_step
from theory.yield_study import plot_yield


def _never(*args, **kwargs):
    raise AssertionError("computed before finding that matplotlib is missing")


class TestRequireMatplotlib:
    def test_returns_the_module(self):
        matplotlib = pytest.importorskip("matplotlib")
        assert require_matplotlib("a plot") is matplotlib

    def test_missing_is_a_value_error_naming_the_extra(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
        with pytest.raises(MissingMatplotlib, match=r"^a plot needs matplotlib \(the `plot` extra: pip install"):
            require_matplotlib("a plot")
        assert issubclass(MissingMatplotlib, ValueError) and issubclass(MissingMatplotlib, ImportError)

    # (plot function, positional arguments, what it would compute first, patched to fail)
    PLOTS = [
        (plot_yield, (None,), None),
        (plot_one_step, (), "theory.one_step.stable_rank_sweep"),
        (plot_local_clt, (), "theory.local_clt.local_clt_sweep"),
        (plot_expectation_vs_sample, (), "theory.concentration.expectation_vs_sample"),
    ]

    @pytest.mark.parametrize(("plot", "args", "computation"), PLOTS, ids=[p[0].__name__ for p in PLOTS])
    def test_every_plot_says_so_before_computing(self, plot, args, computation, monkeypatch, tmp_path):
        monkeypatch.setitem(sys.modules, "matplotlib", None)
        if computation:
            monkeypatch.setattr(computation, _never)
        with pytest.raises(ValueError, match=rf"^{plot.__name__} needs matplotlib"):
            plot(*args, tmp_path / "x.png")
        assert not (tmp_path / "x.png").exists()
