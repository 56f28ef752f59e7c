"""The grid studies on the README's plain install, which has no matplotlib: ``noise-study`` and ``sharpness`` run,
write and print their tables, and say in one line how to get the figure; ``--summarise-only`` does the same. With
matplotlib the figure is drawn (the control).

matplotlib is made missing in a fresh interpreter (``sys.modules["matplotlib"] = None``, so that every import of
it fails as on an install without it) rather than uninstalled.
"""

import subprocess
import sys

import pytest

#: The smallest study of each command (one point, one layer, tiny budgets; the learner only for sharpness).
STUDIES = {
    "noise-study": (["noise-study", "--sigma", "0", "--cells", "m=1,k=2,d=6", "--seeds", "1"], "noise.png"),
    "sharpness": (["sharpness", "--logit-scale", "1", "--d", "6", "--seeds", "1", "--adam-seeds", "0"],
                  "sharpness.png"),
}
FAST = ["--quick", "--serial", "--no-progress"]

WITHOUT_MATPLOTLIB = """
import sys
sys.modules["matplotlib"] = None  # every `import matplotlib...` now raises ImportError
from learner.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _without_matplotlib(argv):
    return subprocess.run([sys.executable, "-c", WITHOUT_MATPLOTLIB, *argv], capture_output=True, text=True,
                          timeout=600)


def _says_how_to_get_the_figure(done, out, figure):
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"learner.study.grids: {figure} not drawn: matplotlib is not installed")
    assert f"The tables are in {out / 'summary.md'}" in lines[0]
    assert "pip install 'matplotlib>=3.8'" in lines[0] and "--summarise-only" in lines[0]
    tables = (out / "summary.md").read_text()
    assert "|---|" in tables and tables in done.stdout  # a table written, then printed
    assert (out / "summary.json").is_file()
    assert not (out / figure).exists()


# The sharpness study runs the same check with -m slow (a second whole study, about 3 s).
@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.slow) if c == "sharpness" else c
                                     for c in sorted(STUDIES)])
def test_the_tables_without_matplotlib_and_the_figure_with_it(command, tmp_path, capsys):
    argv, figure = STUDIES[command]
    out = tmp_path / "study"
    argv = argv + FAST + ["--out", str(out)]
    _says_how_to_get_the_figure(_without_matplotlib(argv), out, figure)
    _says_how_to_get_the_figure(_without_matplotlib(argv + ["--summarise-only"]), out, figure)

    pytest.importorskip("matplotlib", reason="the control draws the figure (the plot extra)")
    from learner.cli import main

    assert main(argv + ["--summarise-only"]) == 0  # control: what the warning says to do draws it
    assert (out / figure).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "not drawn" not in capsys.readouterr().err
