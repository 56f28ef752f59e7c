"""The command-line fuzz: every option of every command against a table of bad values.

Each case runs one command in this process, ``main(argv)`` of its package, with a base command line
that is fast when it is accepted (tiny sizes, ``--quick``, ``--serial``) and one option replaced by a
bad value. The verdict (:func:`verdict`) is ``None`` when the command behaved:

- exit 2 with exactly one line on standard error, which names the option as written (``--d``; a
  positional by the value given), and nothing written over a special file; or
- exit 0 or 1 (a finished command; 1 is a learner's or a check's negative verdict) without a traceback;

and a sentence saying what went wrong otherwise: a traceback, another exit status, several lines, a
message that does not name the option, or a run longer than :data:`CASE_SECONDS`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import stat
import traceback
from dataclasses import dataclass

#: The longest a case may take (ours): a hang detector, not a speed test. A refused value is refused before any
#: work, in well under a second; an accepted one runs the base command line, a few seconds on a quiet machine, but
#: `theory all --plot-dir` took over 60 s on a loaded 2-core machine; a hang never ends, so the limit is generous.
CASE_SECONDS = 300

#: Bad numbers: out of range, not finite, not numbers, and finite but huge (1e308: a scale that would overflow).
NUMBER_VALUES = ("0", "-1", "nan", "inf", "-inf", "1e400", "1e308", "1" + "0" * 30, "abc", "", "1.5")
CHOICE_VALUES = ("bogus", "")
#: Bad outputs: files that are not ours (special files, a read-only file, a symlink to a FIFO), impossible paths,
#: a name over 255 bytes, and the same file as another of the command's files (an input or another output).
OUTPUT_VALUES = ("<fifo>", "<device>", "<dir>", "<missing-parent>", "<file-parent>", "<read-only>", "<link-to-fifo>",
                 "<long-name>", "<same-as-other>")
#: Bad inputs: special files, missing or empty ones, a name over 255 bytes, JSON nested past any parser's limit.
INPUT_VALUES = ("<fifo>", "<dir>", "<missing>", "<empty-file>", "<long-name>", "<deep-json>")
#: A study's folder holding a FIFO where a record goes (``runs/x.json``): reading it must not block.
STUDY_DIR_VALUES = ("<fifo-record>",)


@dataclass(frozen=True)
class Case:
    package: str
    command: str
    option: str  # the flag, or the positional's dest
    value: str

    @property
    def id(self):
        return f"{self.package}-{self.command}-{self.option}={self.value!r}"


def _base(package, command, tmp):
    """A fast command line for ``command``; ``tmp`` is a folder the case may write in."""
    out = str(tmp / "out")
    return {
        ("learner", "demo"): ["demo", "--n-samples", "200"],
        ("learner", "learn"): ["learn", "--m", "1", "--d", "4", "--k", "2", "--max-examples", "3000", "--workers",
                               "1"],
        ("learner", "sample"): ["sample", "--m", "1", "--d", "4", "--out", str(tmp / "s.npz")],
        ("learner", "info"): ["info", str(tmp / "layer.npz"), "--k", "2"],
        ("learner", "bench"): ["bench", "--certification", "--quick", "--repeat", "1", "--m", "2", "--d", "6",
                               "--k", "2"],
        ("learner", "scaling"): ["scaling", "--m", "1", "--d", "6", "--k", "2", "--seeds", "1", "--methods",
                                 "adam", "--quick", "--serial", "--no-progress", "--out", out],
        ("learner", "peers"): ["peers", "--m", "1", "--d", "6", "--seeds", "1", "--quick", "--serial",
                               "--no-progress", "--out", out],
        ("learner", "race"): ["race", "--grid", "m=1,k=2,d=6", "--seeds", "1", "--quick", "--serial",
                              "--no-progress", "--out", out],
        ("learner", "noise-study"): ["noise-study", "--sigma", "0", "--cells", "m=1,k=2,d=6", "--seeds", "1",
                                     "--quick", "--serial", "--no-progress", "--out", out],
        ("learner", "sharpness"): ["sharpness", "--logit-scale", "1", "--d", "6", "--seeds", "1", "--quick",
                                   "--serial", "--no-progress", "--out", out],
        ("learner", "growth"): ["growth", "--lines", "d24", "--quick", "--resamples", "10", "--learn-workers", "1",
                                "--no-progress", "--out", out],
        ("learner", "budget"): ["budget", "--ds", "6", "--methods", "adam", "--start", "6=1", "--seeds", "1",
                                "--quick", "--workers", "1", "--no-progress", "--out", out],
        ("learner", "trained"): ["trained", "--tasks", "teacher", "--quick", "--workers", "1", "--out", out],
        ("theory", "list"): ["list"],
        ("theory", "check"): ["check", "one_step"],
        ("theory", "all"): ["all"],
        ("theory", "yield-study"): ["yield-study", str(tmp / "sweep"), "--n-geometry", "300"],
        ("lowerbounds", "sq"): ["sq", "--d", "8", "--m", "2"],
        ("lowerbounds", "sq-simulate"): ["sq-simulate", "--d", "8", "--m", "2", "--trials", "2"],
        ("lowerbounds", "lwe"): ["lwe", "--n", "3", "--q", "7", "--seed", "1"],
        ("lowerbounds", "lwe-attack"): ["lwe-attack", "--q", "7", "--n", "2", "--linear-n", "8", "--lattice-n",
                                        "--cost-n", "16", "--repeats", "1"],
        ("lowerbounds", "learn-hard"): ["learn-hard", "--quick", "--serial", "--no-progress", "--out", out],
        ("lowerbounds", "families"): ["families"],
    }[(package, command)]


def _parser(package):
    return __import__(f"{package}.cli", fromlist=["build_parser"]).build_parser()


def _values(action):
    """The bad values of one option, by what it takes."""
    from learner.argparsing import OUTPUT_OPTIONS

    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return CHOICE_VALUES
    if action.dest in OUTPUT_OPTIONS:
        return OUTPUT_VALUES + (STUDY_DIR_VALUES if action.metavar == "DIR" else ())
    if action.dest in ("path", "torch_layer", "layer"):
        return INPUT_VALUES
    if action.dest == "sweeps":
        return ("", "bogus") + STUDY_DIR_VALUES
    if action.dest in ("scheduler", "name", "param", "grid", "sweeps", "cells"):
        return ("", "bogus")
    return NUMBER_VALUES


def all_cases():
    """Every (command, option, bad value) of the three command lines."""
    cases = []
    for package in ("learner", "theory", "lowerbounds"):
        sub = next(a for a in _parser(package)._actions if isinstance(a, argparse._SubParsersAction))
        for command, parser in sub.choices.items():
            for action in parser._actions:
                if isinstance(action, argparse._HelpAction) or action.nargs == 0:
                    continue
                if action.dest in ("scheduler", "workers", "learn_workers") and package != "theory":
                    continue  # start pools or connect to clusters: their checks have their own tests
                name = action.option_strings[-1] if action.option_strings else action.dest
                cases += [Case(package, command, name, v) for v in _values(action)]
    return cases


def _other_file(argv, option):
    """The value of another file option (an input or an output) of the base command line, or None."""
    from learner.argparsing import INPUT_OPTIONS, OUTPUT_OPTIONS

    flags = {"--" + dest.replace("_", "-") for dest in OUTPUT_OPTIONS + INPUT_OPTIONS} - {option, "--out"}
    for i, arg in enumerate(argv[:-1]):
        if arg in flags and not argv[i + 1].startswith("--"):
            return argv[i + 1]
    if argv[0] == "info" and option == "--json":
        return argv[1]  # the layer it reads
    if "--out" in argv and option != "--out" and not argv[argv.index("--out") + 1].endswith("out"):
        return argv[argv.index("--out") + 1]  # a file output (not a study's folder)
    return None


def _special(value, tmp, argv=(), option=""):
    """The path a placeholder value stands for, made in ``tmp``; None where this OS refuses to make it (or, for
    ``<same-as-other>``, where the command has no other file)."""
    path = tmp / value.strip("<>")
    if value == "<same-as-other>":
        return _other_file(list(argv), option)
    if value == "<read-only>":
        path.write_text("KEEP")
        os.chmod(path, 0o444)
    elif value == "<link-to-fifo>":
        os.mkfifo(tmp / "the-fifo")
        path.symlink_to(tmp / "the-fifo")
    elif value == "<long-name>":
        path = tmp / ("a" * 300)
    elif value == "<deep-json>":
        path = tmp / "deep.json"
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif value == "<fifo-record>":
        (path / "runs").mkdir(parents=True)
        os.mkfifo(path / "runs" / "x.json")
    elif value == "<fifo>":
        os.mkfifo(path)
    elif value == "<device>":
        try:
            os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
        except OSError:
            return None
    elif value == "<dir>":
        path.mkdir()
    elif value == "<missing-parent>":
        path = tmp / "no-such-folder" / "x.json"
    elif value == "<file-parent>":
        (tmp / "a-file").write_text("x")
        path = tmp / "a-file" / "x.json"
    elif value == "<missing>":
        path = tmp / "no-such-file.npz"
    elif value == "<empty-file>":
        path.write_bytes(b"")
    return str(path)


class _TooLong(BaseException):
    pass


def _prepare(case, tmp):
    """Files the base command lines read: a saved layer for ``info``, a tiny sweep for ``yield-study``."""
    if case.command == "info":
        from learner import random_layer, save_layer

        save_layer(tmp / "layer.npz", random_layer(1, 4, rng=0))
    if case.command == "yield-study":
        import shutil
        from pathlib import Path

        src = Path(__file__).resolve().parents[1] / "docs" / "sweeps" / "ksweep"
        shutil.copytree(src, tmp / "sweep", ignore=shutil.ignore_patterns("*.png"))


def run(case, tmp):
    """Run ``case`` in ``tmp``: ``(exit status, standard error, traceback or None, special path or None)``."""
    _prepare(case, tmp)
    argv = _base(case.package, case.command, tmp)
    value = case.value
    special = None
    if value.startswith("<"):
        value = _special(value, tmp, argv, case.option)
        if value is None:
            return None
        if case.value in ("<fifo>", "<device>", "<read-only>", "<link-to-fifo>", "<same-as-other>"):
            special = value
            if os.path.isfile(value):  # what the file held before: it must hold it after
                with open(value, "rb") as fh:
                    special = (value, fh.read())
    if case.option.startswith("--"):
        if case.option in argv:
            i = argv.index(case.option)
            j = i + 1
            while j < len(argv) and not argv[j].startswith("--"):
                j += 1
            argv = argv[:i] + argv[j:]
        argv = argv + [case.option, value]
    else:  # a positional: the base's first argument after the command
        argv = [argv[0], value] + argv[2:] if len(argv) > 1 and not argv[1].startswith("--") else \
            [argv[0], value] + argv[1:]
    main = __import__(f"{case.package}.cli", fromlist=["main"]).main
    err, tb, code = io.StringIO(), None, None

    def alarm(signum, frame):
        raise _TooLong

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(CASE_SECONDS)
    cwd = os.getcwd()
    try:
        os.chdir(tmp)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
    except _TooLong:
        code = "timeout"
    except BaseException:  # noqa: BLE001 — a traceback is the finding
        tb = traceback.format_exc()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        os.chdir(cwd)
    return code, err.getvalue(), tb, special, argv


def verdict(case, outcome):
    """None if the command behaved (module docstring), else what went wrong."""
    if outcome is None:
        return None  # the special file could not be made here
    code, err, tb, special, argv = outcome
    if tb is not None:
        return f"traceback: {tb.strip().splitlines()[-1]}"
    if code == "timeout":
        return f"took longer than {CASE_SECONDS} s"
    if case.value in ("<same-as-other>", "<read-only>") and code != 2:
        return f"accepted {case.value} (exit status {code!r}): it must be refused"
    if isinstance(special, tuple):  # a regular file that is not the output's to replace
        path, before = special
        with open(path, "rb") as fh:
            if fh.read() != before:
                return f"changed {path}, which was not the output's to replace"
    elif case.value == "<same-as-other>":
        pass  # the other file did not exist yet: the refusal (exit 2) is what counts
    elif special is not None and not os.path.islink(special) and stat.S_ISREG(os.stat(special).st_mode):
        return f"replaced the special file {special}"
    elif special is not None and os.path.islink(special) and not os.path.exists(os.readlink(special)):
        return f"broke the symlink {special}"
    if code in (0, 1):
        return None
    if code != 2:
        return f"exit status {code!r}"
    if case.option != "--out" and "--out" in argv:  # refused: nothing may have been created or claimed first
        out = argv[argv.index("--out") + 1]
        if out.endswith("out") and os.path.exists(out):
            return f"refused, yet created or claimed --out {out}"
    lines = [line for line in err.splitlines() if line.strip()]
    if len(lines) != 1:
        return f"{len(lines)} lines on standard error: {err[-300:]!r}"
    line = lines[0]
    if case.option.startswith("--"):
        # The flag as the user wrote it (the validation layer names `--adam-lr`, not `lr`).
        names = (case.option,)
    else:  # a positional is named by the value given (the file or directory the message is about)
        names = (str(argv[1]),) if argv[1] else ("''",)
    # argparse cannot attribute a value that looks like an option (``--n -inf``): it names the value.
    names += (f"unrecognized arguments: {case.value}",)
    if not any(name in line for name in names):
        return f"the message does not name {case.option}: {line[:200]!r}"
    return None
