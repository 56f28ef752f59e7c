"""A study refuses a d whose learner runs cannot fit in memory before anything is planted or claimed (a run would
spend its planting first, then fail), naming the option typed."""

from __future__ import annotations

import pytest

from learner.cli import main


@pytest.mark.parametrize(("argv", "flag"), [(["--m", "1", "--d", "500"], "--d"),
                                            (["--grid", "m=1,k=2,d=1000"], "a d of --grid")])
def test_the_command_refuses_a_d_too_large(tmp_path, capsys, argv, flag):
    out = tmp_path / "study"
    assert main(["scaling", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    given = argv[-1].split("=")[-1]
    assert err.startswith(f"error: {flag} must fit in this machine's memory") and f"got {flag} {given}" in err
    assert not out.exists()


def test_the_library_names_d_and_a_small_d_passes(tmp_path):
    from learner.study.scaling import _check_methods

    with pytest.raises(ValueError, match=r"^`d` must fit in this machine's memory: .* \(1, 1000, 2\)"):
        _check_methods(["provable"], [(1, 1000, 2)], [0.01], None, None)
    _check_methods(["provable"], [(1, 12, 2)], [0.01], None, None)  # control
    _check_methods(["adam"], [(1, 1000, 2)], [0.01], None, None)  # Adam's runs hold no constraint matrix
