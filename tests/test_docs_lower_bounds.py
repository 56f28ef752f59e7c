"""The figures the lower-bounds guide (``docs/guide/lower-bounds.md``) types by hand, held to the committed records
they quote: the cost model's checks in ``docs/sweeps/growth/lower/lwe.json`` and the learn-hard study in
``docs/sweeps/learn-hard/``. Each test reads the figure off the page and the value off the record, so it fails when
either changes alone."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "lower-bounds.md"
ATTACKS = ROOT / "docs" / "sweeps" / "growth" / "lower" / "lwe.json"
STUDY = ROOT / "docs" / "sweeps" / "learn-hard"


def said(pattern):
    """The groups of ``pattern`` in the page, its lines joined by single spaces (a sentence may wrap anywhere)."""
    match = re.search(pattern, " ".join(PAGE.read_text(encoding="utf-8").split()))
    assert match, f"the guide no longer says {pattern!r}"
    return match.groups()


def number(text):
    """A figure as the page writes it (``10 000``, ``1250``, ``1.93``) as a float."""
    return float(text.replace(" ", ""))


@pytest.fixture(scope="module")
def attacks():
    return json.loads(ATTACKS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def summary():
    return json.loads((STUDY / "summary.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs():
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted((STUDY / "runs").glob("*.json"))]


def select(runs, *, family, method, **spec):
    return [r for r in runs if r["spec"]["family"] == family and r["spec"]["method"] == method
            and all(r["spec"][key] == value for key, value in spec.items())]


def test_the_core_svp_exponent_is_the_cost_tables(attacks):
    from lowerbounds.lattice import CORE_SVP_CLASSICAL

    (exponent,) = said(r"core-SVP cost \$([\d.]+)\\beta\$")
    rows = attacks["cost_table"]
    assert rows and {round(row["log2_core_svp"] / row["beta"], 3) for row in rows} == {number(exponent)}
    assert CORE_SVP_CLASSICAL == number(exponent)


def test_the_kyber_checks_are_the_records(attacks):
    from lowerbounds import REFERENCE_ESTIMATES

    figures = said(r"Kyber512 \(\$\\beta = (\d+)\$, \$d = (\d+)\$\) and Kyber768 \(\$\\beta = (\d+)\$, "
                   r"\$d = (\d+)\$\) exactly")
    checks = {check["name"]: check for check in attacks["model_checks"]}
    for name, beta, dimension in (("Kyber512", *figures[:2]), ("Kyber768", *figures[2:])):
        check = checks[name]
        assert number(beta) == check["model_beta"] == check["reference_beta"] == REFERENCE_ESTIMATES[name].beta
        assert (number(dimension) == check["model_dimension"] == check["reference_dimension"]
                == REFERENCE_ESTIMATES[name].dimension)


def test_the_study_budget_is_the_records_and_the_default(summary, runs):
    from lowerbounds.learnhard import DEFAULTS

    (examples,) = said(r"the next fit would need more than ([\d ]+) examples \(`--max-examples`\)")
    (seconds,) = said(r"would pass (\d+) s \(`--max-seconds`\)")
    assert said(r"Within a (\d+) s / ([\d ]+)-example budget") == (seconds, examples)
    budget = summary["parameters"]["budget"]
    assert number(seconds) == budget["max_seconds"] == DEFAULTS["max_seconds"]
    assert number(examples) == budget["max_examples"] == DEFAULTS["max_examples"]
    assert all(r["spec"]["budget"] == budget for r in runs if r["spec"]["method"] == "adam")


def test_the_run_count_is_the_records(runs):
    (count,) = said(r"\(`docs/sweeps/learn-hard/`, (\d+) runs")
    assert number(count) == len(runs)


def test_the_controls_successes_and_examples_are_the_records(runs):
    figures = said(r"On the control Adam learns (\d+) of (\d+) members up to \$d = (\d+)\$ at \$m = 3\$ and (\d+) of "
                   r"(\d+) at \$m = 4\$, from (\d+)–(\d+) examples")
    *counts, smallest, largest = map(number, figures)
    learned, tried, d_max = counts[0:3]
    cells = {m: [r for r in select(runs, family="control", method="adam", m=m) if r["spec"]["d"] <= d_max]
             for m in (3, 4)}
    assert (learned, tried) == (sum(r["status"] == "learned" for r in cells[3]), len(cells[3]))
    assert tuple(counts[3:]) == (sum(r["status"] == "learned" for r in cells[4]), len(cells[4]))
    examples = [r["examples"] for m in (3, 4) for r in cells[m] if r["status"] == "learned"]
    assert (smallest, largest) == (min(examples), max(examples))


def test_the_parity_familys_censored_slope_is_the_records(summary):
    (slope,) = said(r"the \$m = 3\$ fit over every \$d\$, ([\d.]+), runs through censored cells")
    fit = summary["growth"]["sq, m=3"]
    assert slope == f"{fit['examples_slope']:.2f}" and fit["censored"]


def test_the_lwr_figures_are_the_records(runs):
    figures = said(r"Adam gives a perfect LWR predictor up to \$n = (\d+)\$ from ([\d ]+)–([\d ]+) samples "
                   r"\((\d+)–(\d+) s\) and runs out of time at \$n = (\d+)\$ \((\d+) heads\); the exhaustive search "
                   r"recovers every secret, its time growing with \$q\^n\$ \(([\d.]+) s at \$n = (\d+)\$\)")
    n_max, fewest, most, fastest, slowest, n_out, heads, exhaustive_seconds, n_exhaustive = figures
    adam = {r["spec"]["n"]: r for r in select(runs, family="lwr", method="adam")}
    learned = [r for n, r in adam.items() if n <= number(n_max)]
    assert all(r["status"] == "learned" for r in learned) and max(adam) == number(n_out) == number(n_max) + 1
    assert adam[number(n_out)]["status"] == "budget (time)" and adam[number(n_out)]["member"]["m"] == number(heads)
    assert (number(fewest), number(most)) == (min(r["examples"] for r in learned), max(r["examples"] for r in learned))
    assert (number(fastest), number(slowest)) == (round(min(r["seconds"] for r in learned)),
                                                  round(max(r["seconds"] for r in learned)))
    exhaustive = {r["spec"]["n"]: r for r in select(runs, family="lwr", method="exhaustive")}
    assert all(r["status"] == "recovered" for r in exhaustive.values())
    assert exhaustive_seconds == f"{exhaustive[number(n_exhaustive)]['seconds']:.1f}"


def console_blocks():
    """``(command, shown lines)`` of every console block of the page that writes one member (``sq`` or ``lwe`` with
    ``--out``): quick, deterministic runs whose output the page shows with ``…`` for the elided figures."""
    blocks = re.findall(r"```console\n\$ (python -m lowerbounds (?:sq|lwe) [^\n]*--out [^\n]*)\n(.*?)```",
                        PAGE.read_text(encoding="utf-8"), flags=re.S)
    return [(command, shown.splitlines()) for command, shown in blocks]


def matches(shown, printed):
    """Whether the page's line ``shown`` is the printed line, ``…`` standing for any text."""
    return re.fullmatch(".*?".join(map(re.escape, shown.split("…"))), printed) is not None


def test_the_page_shows_two_member_commands():
    assert [command.split()[3] for command, _ in console_blocks()] == ["sq", "lwe"]


@pytest.mark.parametrize(("command", "shown"), console_blocks(), ids=["sq", "lwe"])
def test_the_shown_output_is_the_commands(tmp_path, command, shown):
    """Run the command (the installed package, in an empty folder) and match each shown line with its output line,
    ``…`` standing for any text: the page cannot show a line or a figure the command does not print."""
    import shlex
    import subprocess
    import sys

    args = shlex.split(command)
    out = subprocess.run([sys.executable, *args[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         check=True).stdout.splitlines()
    assert len(out) == len(shown), (out, shown)
    for line, printed in zip(shown, out, strict=True):
        assert matches(line, printed), (line, printed)


def test_the_control_a_line_the_command_does_not_print_is_refused():
    line = "  family: … members; correlation by overlap 0: 0, 1: …, 2: 0.5"
    printed = "  family: 105 members; correlation by overlap 0: 0, 1: 1.27e-32, 2: 1"
    assert not matches(line, printed)
    assert matches(line.replace("0.5", "1"), printed)
