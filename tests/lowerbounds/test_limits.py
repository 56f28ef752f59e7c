"""Limits checked before work: sizes that cannot fit in memory are refused naming the option, and the cost
table's head count is computed in closed form (an enumeration of y up to n(q − 1) would not fit at large n)."""

from __future__ import annotations

import pytest

from learner import validation
from lowerbounds.attacks import linear_attack_bytes, time_attacks
from lowerbounds.lattice import cost_table
from lowerbounds.lwr import switch_count, switch_points


@pytest.mark.parametrize("q", [3, 4, 7, 8, 11, 16])
def test_switch_count_matches_the_enumeration(q):
    for y_max in range(0, 5 * q + 3):
        assert switch_count(q, y_max) == len(switch_points(q, y_max)), y_max


def test_control_switch_count_is_not_a_constant():
    assert switch_count(7, 6) == 1 and switch_count(7, 7) == 2 and switch_count(7, 70) == 20


def test_the_cost_table_at_a_huge_n_is_instant():
    [row] = cost_table([10**8], 7)
    assert row.heads == switch_count(7, 6 * 10**8) == 171_428_571  # 2 switches per period of 7 in 6e8


def test_linear_attack_bytes_grows_as_n_squared():
    assert linear_attack_bytes(256, 7) < 64 * 2**20  # the default sizes fit anywhere
    assert linear_attack_bytes(100_000, 7) > 2**40  # n = 100 000: terabytes


class TestCheckMemory:
    def test_refused_when_it_does_not_fit(self, monkeypatch):
        monkeypatch.setattr(validation, "available_memory", lambda: 2**30)
        with pytest.raises(ValueError, match=r"^`ns` asks for the linear-algebra attack at n = 5000, about .* more "
                                             r"than the 1 GiB of memory this machine has free; got ns=\[8, 5000\]"):
            time_attacks([8, 5000], 7, attacks=("linear",), repeats=1, rng=0)

    def test_control_it_runs_when_it_fits(self, monkeypatch):
        monkeypatch.setattr(validation, "available_memory", lambda: 2**30)
        out = time_attacks([8], 7, attacks=("linear",), repeats=1, rng=0)
        assert out["rows"][0]["n"] == 8

    def test_unknown_memory_checks_nothing(self, monkeypatch):
        monkeypatch.setattr(validation, "available_memory", lambda: None)
        validation.check_memory("x", 1e30, "everything", 1)

    def test_the_command_names_its_option_before_any_attack(self, capsys, monkeypatch):
        from lowerbounds.cli import main

        monkeypatch.setattr(validation, "available_memory", lambda: 2**30)
        assert main(["lwe-attack", "--linear-n", "4096"]) == 2  # within its size limit, beyond the memory
        captured = capsys.readouterr()
        assert captured.err.startswith("error: `--linear-n` asks for the linear-algebra attack at n = 4096")
        assert "got --linear-n 4096" in captured.err and captured.out == ""  # nothing ran, nothing printed


def test_sample_refuses_examples_that_cannot_fit_before_writing_anything(tmp_path, capsys, monkeypatch):
    from learner.cli import main

    monkeypatch.setattr(validation, "available_memory", lambda: 2**30)
    argv = ["sample", "--m", "2", "--d", "8", "--k", "4", "--out", str(tmp_path / "L.npz"), "--examples",
            str(tmp_path / "E.npz")]
    assert main([*argv, "--n-samples", "10000000"]) == 2  # 10 M × 4 × 8 floats, three copies: 7.2 GiB
    err = capsys.readouterr().err
    assert err.startswith("error: `--n-samples` asks for 10,000,000 examples of 4 tokens in dimension 8")
    assert list(tmp_path.iterdir()) == []  # not even the layer was written
    assert main([*argv, "--n-samples", "1000"]) == 0  # control
    assert sorted(p.name for p in tmp_path.iterdir()) == ["E.npz", "L.npz"]
