"""The command line: each subcommand runs, writes what it says, and fails clearly."""

import json

import numpy as np
import pytest

from learner import load_examples, load_layer, read_metadata
from learner.cli import main


class TestDemo:
    def test_prints_report_and_figures(self, capsys, tmp_path):
        out_json = tmp_path / "demo.json"
        assert main(["demo", "--n-samples", "2000", "--json", str(out_json)]) == 0
        text = capsys.readouterr().out
        assert "Assumption report: m=2, d=8, k=4" in text
        assert "all checked conditions hold" in text
        assert "mean largest attention weight" in text
        record = json.loads(out_json.read_text())
        assert record["seed_entropy"] == 0 and record["assumptions"]["ok"] is True

    def test_same_seed_same_output(self, capsys):
        main(["demo", "--n-samples", "500", "--seed", "7"])
        first = capsys.readouterr().out
        main(["demo", "--n-samples", "500", "--seed", "7"])
        second = capsys.readouterr().out
        def strip(s):
            return [ln for ln in s.splitlines() if not ln.strip().startswith("time")]

        assert strip(first) == strip(second)


class TestSample:
    def test_writes_layer_and_examples(self, tmp_path, capsys):
        layer_path, ex_path = tmp_path / "layer.npz", tmp_path / "ex.npz"
        args = ["sample", "--m", "3", "--d", "8", "--seed", "1", "--out", str(layer_path),
                "--examples", str(ex_path), "--n-samples", "50", "--k", "4"]
        assert main(args) == 0
        layer = load_layer(layer_path)
        X, Y = load_examples(ex_path)
        assert (layer.m, layer.d) == (3, 8) and X.shape == (50, 4, 8)
        # Labels are exactly the saved layer's outputs (same code path, same inputs).
        np.testing.assert_array_equal(Y, layer(X))
        meta = read_metadata(layer_path)["metadata"]
        assert meta["seed_entropy"] == 1 and meta["parameters"]["m"] == 3

    def test_labels_with_an_existing_layer(self, tmp_path, capsys):
        layer_path, ex_path = tmp_path / "layer.npz", tmp_path / "ex.npz"
        main(["sample", "--seed", "2", "--out", str(layer_path)])
        assert main(["sample", "--layer", str(layer_path), "--examples", str(ex_path), "--n-samples", "10",
                     "--distribution", "gaussian"]) == 0
        X, Y = load_examples(ex_path)
        np.testing.assert_array_equal(Y, load_layer(layer_path)(X))

    def test_layer_flags_with_an_existing_layer_are_refused(self, tmp_path, capsys):
        """--layer fixes m and d: a --d beside it would be silently ignored, so it is an error naming both."""
        layer_path = tmp_path / "layer.npz"
        main(["sample", "--seed", "2", "--out", str(layer_path)])
        assert main(["sample", "--layer", str(layer_path), "--examples", str(tmp_path / "ex.npz"), "--d", "5"]) == 2
        assert f"--layer {layer_path} fixes the layer; --d 5 would be ignored" in capsys.readouterr().err

    def test_nothing_to_write(self, capsys):
        with pytest.raises(SystemExit, match="nothing to write"):
            main(["sample", "--seed", "0"])

    def test_bad_size_is_a_clear_error(self, tmp_path, capsys):
        with pytest.raises(SystemExit) as exc:
            main(["sample", "--m", "0", "--out", str(tmp_path / "x.npz")])
        assert exc.value.code == 2
        assert "argument --m: `--m` must be at least 1; got --m=0" in capsys.readouterr().err
        assert not (tmp_path / "x.npz").exists()


class TestInfo:
    def test_report_of_saved_layer(self, tmp_path, capsys):
        path = tmp_path / "layer.npz"
        main(["sample", "--seed", "3", "--out", str(path)])
        assert main(["info", str(path), "--k", "8"]) == 0
        text = capsys.readouterr().out
        assert "k_below_d" in text and "FAILED: k_below_d" in text

    def test_damaged_file(self, tmp_path, capsys):
        path = tmp_path / "bad.npz"
        path.write_bytes(b"not a zip file")
        assert main(["info", str(path)]) == 2
        assert "not a toolkit .npz file (not a zip archive)" in capsys.readouterr().err
        assert main(["info", str(tmp_path)]) == 2
        assert "is a directory, not a toolkit .npz file" in capsys.readouterr().err


class TestBench:
    def test_quick_run_prints_ratios(self, capsys, tmp_path):
        out_json = tmp_path / "bench.json"
        assert main(["bench", "--quick", "--repeat", "1", "--json", str(out_json)]) == 0
        text = capsys.readouterr().out
        assert "vs GEMM" in text and "exact cube expectation" in text
        assert "certification pipeline at (m, d, k) = (3, 12, 2)" in text and "of the forward pass" in text
        record = json.loads(out_json.read_text())
        # The fast path and the einsum reference compute the same function.
        assert record["rows"][0]["max_abs_diff"] < 1e-12
        cert = record["certification"]
        assert cert["same_rows"] is True and cert["pipeline_ratio"] > 0 and cert["batch"] == 2000


class TestSeedFlag:
    """Every command line's --seed is checked by argparse and the error names the flag (not numpy's words)."""

    @pytest.mark.parametrize("value", ["-1", "abc", "1.5"])
    @pytest.mark.parametrize(
        "argv",
        [("learner", ["demo"]), ("lowerbounds", ["sq", "--d", "8", "--m", "3"]), ("theory", ["check", "one_step"])],
        ids=["learner", "lowerbounds", "theory"],
    )
    def test_bad_seed(self, argv, value, capsys):
        import importlib

        package, args = argv
        cli = importlib.import_module(f"{package}.cli")
        with pytest.raises(SystemExit) as exc:
            cli.main([*args, "--seed", value])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert f"argument --seed: `--seed` must be a non-negative integer (seed entropy); got --seed '{value}'" in err


class TestOutputPaths:
    """Every output option is checked before the command runs: one line naming it, exit 2, nothing run or written."""

    @staticmethod
    def _main(cli):
        import importlib

        return importlib.import_module(f"{cli}.cli").main

    # (command line, path to give, expected words). {file}: an existing file; {dir}: an existing directory.
    LEARN = ["learn", "--m", "1", "--d", "6", "--k", "2", "--json"]
    SCALING = ["scaling", "--m", "1", "--quick", "--out"]
    NO_DIR, A_FILE = "does not exist or is not a directory", "is a file where a directory is expected"
    CASES = [
        ("learner", LEARN, "{file}/run.json", NO_DIR),
        ("learner", LEARN, "{dir}", "must be a file, not a directory"),
        ("learner", LEARN, "", "must name a file"),
        ("learner", SCALING, "", "must name a directory"),
        ("learner", SCALING, "{file}", "which is a file"),
        ("learner", SCALING, "{file}/sub", A_FILE),
        ("learner", ["sample", "--m", "1", "--d", "4", "--out"], "{file}/layer.npz", NO_DIR),
        ("learner", ["demo", "--json"], "{dir}", "must be a file, not a directory"),
        ("lowerbounds", ["learn-hard", "--quick", "--out"], "", "must name a directory"),
        ("lowerbounds", ["learn-hard", "--quick", "--out"], "{file}/sub", A_FILE),
        ("theory", ["yield-study", "{dir}", "--json"], "{file}/x.json", NO_DIR),
    ]

    @pytest.mark.parametrize(("cli", "argv", "path", "words"), CASES,
                             ids=[f"{c[0]} {c[1][0]} {c[2] or 'empty'}" for c in CASES])
    def test_bad_output_is_refused_first(self, cli, argv, path, words, tmp_path, capsys):
        afile = tmp_path / "afile"
        afile.write_text("x")
        def fill(s):
            return s.format(file=afile, dir=tmp_path)

        before = sorted(tmp_path.rglob("*"))
        assert self._main(cli)([fill(a) for a in argv] + [fill(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: `--") and words in err and "Traceback" not in err
        assert sorted(tmp_path.rglob("*")) == before  # nothing created

    def test_unwritable_directory_is_named(self, tmp_path, capsys, monkeypatch):
        """A directory that refuses files (read-only, immutable; root ignores modes, so the probe is made to fail)."""
        import tempfile

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(tempfile, "NamedTemporaryFile", refuse)
        assert main(["learn", "--m", "1", "--d", "6", "--k", "2", "--json", str(tmp_path / "run.json")]) == 2
        err = capsys.readouterr().err
        assert "`--json` file cannot be written" in err and "is not writable (Permission denied)" in err

    @pytest.mark.skipif(not __import__("os").path.isdir("/proc"), reason="needs Linux's /proc")
    @pytest.mark.parametrize(("argv", "words"), [
        (["scaling", "--m", "1", "--quick", "--out", "/proc/study"], "`--out` directory cannot be written: /proc is"),
        (["learn", "--m", "1", "--d", "6", "--k", "2", "--json", "/proc/run.json"],
         "`--json` file cannot be written: /proc is"),
    ], ids=["scaling --out", "learn --json"])
    def test_a_directory_that_refuses_files_for_real(self, argv, words, capsys):
        """A directory that refuses new files to every user, root included (/proc takes none): the probe's own
        refusal, with nothing mocked, names the option before the command runs."""
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert words in captured.err and "is not writable (" in captured.err and "Traceback" not in captured.err
        assert captured.out == ""  # refused before the command printed anything

    def test_plot_without_matplotlib_is_refused_first(self, tmp_path, capsys, monkeypatch):
        import importlib.util

        from theory.cli import main as theory_main

        real = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a: None if name == "matplotlib" else real(name, *a))
        assert theory_main(["yield-study", str(tmp_path), "--plot", str(tmp_path / "y.png")]) == 2
        assert "--plot needs matplotlib" in capsys.readouterr().err


class TestSchedulerOptions:
    @pytest.mark.parametrize(("argv", "words"), [
        (["learn", "--workers", "3", "--scheduler", "tcp://127.0.0.1:1"], "give either --workers"),
        (["learn", "--scheduler", ""], "must be a Dask scheduler's address"),
        (["learn", "--scheduler", "  "], "must be a Dask scheduler's address"),
        (["scaling", "--quick", "--scheduler", "", "--out", "{dir}"], "must be a Dask scheduler's address"),
        (["scaling", "--quick", "--serial", "--workers", "2", "--out", "{dir}"], "--workers sizes the local pool"),
        (["scaling", "--quick", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2", "--out", "{dir}"],
         "--workers sizes the local pool"),
    ], ids=["learn workers+scheduler", "learn empty", "learn blank", "scaling empty", "scaling serial+workers",
            "scaling scheduler+workers"])
    def test_conflicts_and_empty_addresses_are_named(self, argv, words, tmp_path, capsys):
        argv = [a.format(dir=tmp_path / "study") for a in argv]
        assert main(argv[:1] + ["--m", "1", "--d", "6", "--k", "2"] + argv[1:]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and words in err and "Traceback" not in err
        assert not (tmp_path / "study").exists()

    @pytest.mark.parametrize("command", ["learn", "scaling"])
    def test_missing_dask_extra_is_one_line(self, command, tmp_path, capsys, monkeypatch):
        import sys

        monkeypatch.setitem(sys.modules, "dask.distributed", None)  # `import dask.distributed` raises ImportError
        extra = ["--quick", "--out", str(tmp_path / "study")] if command == "scaling" else []
        argv = [command, "--m", "1", "--d", "6", "--k", "2", "--scheduler", "tcp://127.0.0.1:1"] + extra
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: a Dask scheduler needs the optional extra `distributed`")
        assert "Traceback" not in err


@pytest.mark.parametrize("command", ["sample", "demo"])
def test_planting_error_is_one_line_and_exit_2(command, tmp_path, capsys):
    """A setting where no planted layer meets the conditions is a one-line error and exit 2, no traceback."""
    argv = [command, "--m", "8", "--d", "3", "--seed", "0"] + (["--out", str(tmp_path / "x.npz")]
                                                             if command == "sample" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: no layer with --m 8 --d 3 --logit-scale 3 satisfied"), err
    assert not (tmp_path / "x.npz").exists()
