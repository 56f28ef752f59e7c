"""The learn report is read by people: sentences and aligned tables, no Python reprs, no line over 119 characters
(the JSON record keeps every figure as it is)."""

from __future__ import annotations

import re

import pytest

from learner.tables import REPORT_WIDTH, plain, report_lines

# What a Python repr of a container or a constant looks like inside a line: the report must show none of them.
REPR = re.compile(r"\{'|\[\{|\['|\bTrue\b|\bFalse\b|\bNone\b")


class TestPieces:
    @pytest.mark.parametrize(("value", "text"), [
        (None, "–"), (True, "yes"), (False, "no"), (7, "7"), (12345, "12,345"), (0.000123456, "0.0001235"),
        ([1, 2.5, None], "1, 2.5, –"), ([], "none"), ({"a": 1, "b": False}, "a = 1; b = no"), ("x y", "x y")])
    def test_plain(self, value, text):
        assert plain(value) == text

    def test_a_list_of_mappings_is_an_aligned_table(self):
        rows = [{"tol": 0.015, "constraints": 101}, {"tol": 0.2, "constraints": 1564, "note": "direct"}]
        lines = report_lines("table", rows, indent="")
        assert lines[0] == "table:"
        header, *body = lines[1:]
        assert header.split() == ["tol", "constraints", "note"] and len(body) == 2
        # Right-aligned columns: each value ends where its header ends (an independent reading of the layout).
        for row, values in zip(body, (["0.015", "101", "–"], ["0.2", "1564", "direct"]), strict=True):
            for name, value in zip(["tol", "constraints", "note"], values, strict=True):
                assert row.index(value) + len(value) == header.index(name) + len(name)

    def test_a_table_too_wide_becomes_numbered_lines(self):
        rows = [{f"column_{i}": 123456.789 * i for i in range(12)}] * 2
        lines = report_lines("wide", rows, indent="")
        assert lines[1].startswith("    1. column_0 = 0; column_1 = 1.235e+05")
        assert all(len(line) <= REPORT_WIDTH for line in lines)

    def test_nested_mappings_indent_and_long_values_wrap(self):
        value = {"inner": {"x": list(range(100))}, "flat": 1}
        lines = report_lines("outer", value, indent="")
        assert lines[:2] == ["outer:", "    inner:"] and lines[2].startswith("        x: 0, 1, 2")
        assert all(len(line) <= REPORT_WIDTH for line in lines) and len(lines) > 4
        assert lines[-1] == "    flat: 1"

    def test_control_the_detector_sees_a_repr(self):
        assert REPR.search(str({"a": [{"b": None}]})) and not REPR.search(plain({"a": [{"b": None}]}))


def test_the_learn_command_prints_a_readable_report(capsys):
    from learner.cli import main

    assert main(["learn", "--m", "2", "--d", "8", "--k", "2", "--logit-scale", "1", "--workers", "1",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) > 40
    too_long = [line for line in out if len(line) > REPORT_WIDTH]
    assert too_long == []
    reprs = [line for line in out if REPR.search(line)]
    assert reprs == []
    assert any(line.strip().split()[:3] == ["tol", "constraints", "rows"] for line in out)  # the forecast's table
