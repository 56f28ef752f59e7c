"""Outputs never replace or block on a file that is not ours: FIFOs and device nodes.

``learn --json FIFO`` must not write a regular file over the FIFO, nor ``demo --json DEVICE`` replace the
device node (``mknod … c 1 3``) with a regular file, nor the theory plots open such a path directly. The
suite runs as root on CI, where ``mknod`` works; elsewhere the device cases skip.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from learner.io import (
    atomic_write,
    check_writable_dir,
    check_writable_file,
    save_figure,
    special_kind,
    write_json,
)


def _fifo(tmp_path):
    path = tmp_path / "fifo"
    try:
        os.mkfifo(path)
    except (OSError, AttributeError) as exc:  # pragma: no cover - platforms without FIFOs
        pytest.skip(f"mkfifo refused here: {exc}")
    return path


def _device(tmp_path):
    """A character device with /dev/null's numbers (1, 3): writing to it would lose the bytes silently."""
    path = tmp_path / "null-device"
    try:
        os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    except (OSError, AttributeError) as exc:
        pytest.skip(f"mknod refused here (needs root or CAP_MKNOD): {exc}")
    return path


def _unmarked(path):
    """The JSON object in ``path`` without the toolkit's mark (its own tests: tests/test_outputs_ours.py)."""
    value = json.loads(path.read_text())
    value.pop("written_by")
    return value


SPECIAL = {"fifo": (_fifo, stat.S_ISFIFO, "a FIFO"), "device": (_device, stat.S_ISCHR, "a character device")}


@pytest.fixture(params=sorted(SPECIAL))
def special(request, tmp_path):
    make, test, kind = SPECIAL[request.param]
    path = make(tmp_path)
    yield path, kind
    assert test(os.stat(path).st_mode), f"{path} was replaced"  # every test: the special file is still there


class TestLibrary:
    def test_special_kind(self, special, tmp_path):
        path, kind = special
        assert special_kind(path) == kind
        (tmp_path / "regular").write_text("x")
        assert special_kind(tmp_path / "regular") is None and special_kind(tmp_path) is None
        assert special_kind(tmp_path / "missing") is None

    def test_atomic_write_refuses(self, special):
        path, kind = special
        called = []
        with pytest.raises(ValueError, match=f"is {kind}, not a regular file; it is left untouched"):
            atomic_write(path, called.append)
        assert called == []  # nothing was written, not even to a temporary file

    def test_write_json_refuses(self, special):
        with pytest.raises(ValueError, match="not a regular file"):
            write_json(special[0], {"a": 1})
        assert [p.name for p in special[0].parent.iterdir() if p.name.endswith(".tmp")] == []

    def test_save_figure_refuses(self, special):
        matplotlib = pytest.importorskip("matplotlib")
        matplotlib.use("Agg")
        from matplotlib.figure import Figure

        with pytest.raises(ValueError, match="not a regular file"):
            save_figure(Figure(), special[0])

    def test_option_checks_name_the_option(self, special):
        path, kind = special
        with pytest.raises(ValueError, match=f"`--json` must name a regular file or a new one; .* which is {kind}"):
            check_writable_file("--json", path)
        with pytest.raises(ValueError, match=f"`--out` must be a directory; .* which is {kind}"):
            check_writable_dir("--out", path)

    def test_control_a_regular_file_and_a_symlink_to_one_are_replaced(self, tmp_path):
        """Negative control: the refusal is for special files only; our own regular files are rewritten."""
        target = tmp_path / "old.json"
        target.write_text('{"kind": "command-record"}')  # a record of ours (a user's file is refused: below)
        write_json(target, {"a": 1, "kind": "command-record"})
        assert target.read_text().startswith("{\n  \"a\": 1")
        link = tmp_path / "link.json"
        link.symlink_to(target)
        check_writable_file("--json", link)
        write_json(link, {"b": 2})
        assert '"b": 2' in link.read_text()
        assert link.is_symlink() and '"b": 2' in target.read_text()  # written through: the link stays a link


class TestWhatIsReplaced:
    """Symlinks are written through, an existing file keeps its permission bits, a read-only file is refused
    (root or not: the owner's write bit decides), and a new file is 0644."""

    def test_a_symlink_is_written_through(self, tmp_path):
        target = tmp_path / "sub" / "real.json"
        target.parent.mkdir()
        target.write_text("{}")
        link = tmp_path / "link.json"
        link.symlink_to(target)
        write_json(link, {"a": 1})
        assert link.is_symlink() and os.readlink(link) == str(target)
        assert _unmarked(target) == {"a": 1}
        assert {p.name for p in tmp_path.iterdir()} == {"link.json", "sub"}  # no temporary file left behind
        assert [p.name for p in target.parent.iterdir()] == ["real.json"]

    def test_a_dangling_symlink_creates_its_target(self, tmp_path):
        link = tmp_path / "link.json"
        link.symlink_to(tmp_path / "new.json")
        write_json(link, {"a": 1})
        assert link.is_symlink() and _unmarked(tmp_path / "new.json") == {"a": 1}

    def test_permission_bits_are_kept(self, tmp_path):
        path = tmp_path / "private.json"
        path.write_text("{}")
        os.chmod(path, 0o600)
        write_json(path, {"a": 1})
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and _unmarked(path) == {"a": 1}

    def test_control_a_new_file_is_shared(self, tmp_path):
        path = write_json(tmp_path / "new.json", {"a": 1})
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644

    def test_a_read_only_file_is_refused(self, tmp_path):
        path = tmp_path / "frozen.json"
        path.write_text("KEEP")
        os.chmod(path, 0o444)
        with pytest.raises(ValueError, match=r"it is read-only \(mode 0444\); it is left untouched"):
            write_json(path, {"a": 1})
        with pytest.raises(ValueError, match=r"^`--json` cannot write .* read-only .*; got --json="):
            check_writable_file("--json", path)
        link = tmp_path / "link.json"
        link.symlink_to(path)
        with pytest.raises(ValueError, match="the target of the symlink"):
            write_json(link, {"a": 1})
        assert path.read_text() == "KEEP" and stat.S_IMODE(os.stat(path).st_mode) == 0o444

    def test_a_symlink_to_a_special_file_is_refused(self, special, tmp_path):
        link = tmp_path / "link.json"
        link.symlink_to(special[0])
        with pytest.raises(ValueError, match=f"is {special[1]}, not a regular file"):
            write_json(link, {"a": 1})
        assert link.is_symlink()


# Every command with an output option, with a file output and a directory output among them; the check runs
# before any work, so each call takes well under a second (no layer is learned or sampled).
COMMANDS = [
    ("learner", ["demo", "--json", "{path}"], "--json"),
    ("learner", ["learn", "--json", "{path}"], "--json"),
    ("learner", ["sample", "--out", "{path}"], "--out"),
    ("learner", ["sample", "--m", "2", "--d", "4", "--examples", "{path}", "--n-samples", "5"], "--examples"),
    ("learner", ["scaling", "--out", "{path}", "--m", "1"], "--out"),
    ("learner", ["peers", "--out", "{path}", "--m", "1"], "--out"),
    ("theory", ["check", "one_step", "--json", "{path}"], "--json"),
    ("theory", ["check", "one_step", "--plot", "{path}"], "--plot"),
    ("theory", ["all", "--plot-dir", "{path}"], "--plot-dir"),
    ("lowerbounds", ["sq", "--out", "{path}"], "--out"),
    ("lowerbounds", ["lwe", "--out", "{path}"], "--out"),
    ("lowerbounds", ["sq-simulate", "--json", "{path}"], "--json"),
    ("lowerbounds", ["learn-hard", "--out", "{path}", "--quick"], "--out"),
]


@pytest.mark.parametrize(("package", "argv", "option"), COMMANDS,
                         ids=[f"{p}-{a[0]}-{o}" for p, a, o in COMMANDS])
def test_commands_refuse_before_any_work(special, package, argv, option, capsys):
    if option == "--plot":
        pytest.importorskip("matplotlib")
    path, kind = special
    main = __import__(f"{package}.cli", fromlist=["main"]).main
    code = main([a.replace("{path}", str(path)) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith(f"error: `{option}`") and kind in err[-1], err


def test_learn_writes_its_record_where_the_path_is_new(tmp_path):
    """Control for the commands: a new path is written (the refusal is not a refusal of everything)."""
    from learner.cli import main

    out = tmp_path / "demo.json"
    assert main(["demo", "--n-samples", "200", "--json", str(out)]) == 0
    assert out.is_file() and out.stat().st_size > 0


@pytest.mark.parametrize(("package", "argv", "option"), COMMANDS, ids=[f"{p}-{a[0]}-{o}" for p, a, o in COMMANDS])
def test_a_name_too_long_is_named_before_any_work(tmp_path, package, argv, option, capsys):
    """A name over 255 bytes fails only when the file is opened, after the work: every output option refuses it
    first, naming the option (control: the same command with a short new name passes this check)."""
    if option == "--plot":
        pytest.importorskip("matplotlib")
    main = __import__(f"{package}.cli", fromlist=["main"]).main
    long_name = tmp_path / ("a" * 300)
    code = main([a.replace("{path}", str(long_name)) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith(f"error: `{option}` names a file or folder 300 bytes long"), err
    assert list(tmp_path.iterdir()) == []


def test_control_a_name_of_255_bytes_passes(tmp_path):
    check_writable_file("--json", tmp_path / ("a" * 255))
    check_writable_dir("--out", tmp_path / ("é" * 127))  # 254 bytes in UTF-8
    with pytest.raises(ValueError, match="256 bytes long"):
        check_writable_dir("--out", tmp_path / ("é" * 128))


@pytest.mark.parametrize(("package", "argv", "option"), [c for c in COMMANDS if c[2] != "--plot-dir"
                                                         and c[2] != "--out" or c[1][0] in ("sample", "sq", "lwe")],
                         ids=[f"{p}-{a[0]}-{o}" for p, a, o in COMMANDS if o != "--plot-dir"
                              and o != "--out" or a[0] in ("sample", "sq", "lwe")])
def test_a_file_the_toolkit_did_not_write_is_not_replaced(tmp_path, package, argv, option, capsys):
    """Every file output refuses to replace a user's file (its format is not one the toolkit writes) before any
    work, and leaves it as it was."""
    if option == "--plot":
        pytest.importorskip("matplotlib")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    main = __import__(f"{package}.cli", fromlist=["main"]).main
    code = main([a.replace("{path}", str(notes)) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith(f"error: `{option}` would replace") and "did not write" in err[-1], err
    assert notes.read_text() == "my notes\n"


def test_control_the_toolkits_own_files_are_replaced(tmp_path):
    from learner.io import foreign_file

    record = tmp_path / "run.json"
    write_json(record, {"kind": "command-record", "schema_version": 1})
    check_writable_file("--json", record)  # a record of ours: replaceable
    (tmp_path / "empty").write_bytes(b"")
    assert foreign_file(record) is None
    assert foreign_file(tmp_path / "empty") is None and foreign_file(tmp_path / "new") is None
    (tmp_path / "other.json").write_text('{"mine": 1}')
    assert "JSON file the toolkit did not write" in foreign_file(tmp_path / "other.json")
