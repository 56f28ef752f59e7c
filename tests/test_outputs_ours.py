"""An output replaces a file only when the toolkit wrote it, known by a mark the toolkit can check, never by the
file's look (``learner.io.foreign_file``): a JSON object's ``written_by`` with the SHA-256 of the rest (or a run
record's own ``record_sha256``), a figure's mark with the SHA-256 of the rest of the file, an ``.npz`` whose header
and array digests check out.

Every file output of every command (read from the parsers, with the files a folder option declares) refuses a
user's file of each kind, naming the option, and leaves it as it was; the toolkit's own files pass (controls). The
marks are checked against a reference written here (chunk parsing, canonical JSON), not against the code's own.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from learner import io as learner_io
from learner import random_layer, save_examples, save_layer
from learner.argparsing import OUTPUT_OPTIONS, check_output_options
from learner.io import atomic_write, check_writable_file, foreign_file, write_json

PACKAGES = ("learner", "theory", "lowerbounds")


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(*extra):
    """A 1×1 grey PNG built by hand (signature, IHDR, IDAT, the ``extra`` chunks, IEND)."""
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"\x00\x80"))
            + b"".join(extra) + _chunk(b"IEND", b""))


def _chunks(blob):
    """``(type, data)`` of every chunk of a PNG, each CRC checked: the reference parser of these tests."""
    pos, out = 8, []
    while pos < len(blob):
        (size,) = struct.unpack(">I", blob[pos:pos + 4])
        kind, data = blob[pos + 4:pos + 8], blob[pos + 8:pos + 8 + size]
        assert struct.unpack(">I", blob[pos + 8 + size:pos + 12 + size])[0] == zlib.crc32(kind + data)
        out.append((kind, data))
        pos += 12 + size
    return out


def _canonical_sha256(value):
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _user_zip(path):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "my notes")


def _plain_npz(path):
    with open(path, "wb") as fh:  # numpy adds .npz to a bare name
        np.savez(fh, thetas=np.ones((2, 4, 4)))


def _npz_of_another_tool(path):
    """The toolkit's layout to the letter (format, schema, each array's SHA-256), written by another program."""
    thetas = np.ones((1, 2, 2))
    meta = {"format": "attention-layer", "schema_version": 1, "created_by": "another-tool 1.0", "metadata": {},
            "arrays": {"thetas": {"shape": [1, 2, 2], "sha256": hashlib.sha256(thetas.tobytes()).hexdigest()},
                       "ws": {"shape": [1, 2, 2], "sha256": hashlib.sha256(thetas.tobytes()).hexdigest()}}}
    with open(path, "wb") as fh:
        np.savez(fh, thetas=thetas, ws=thetas, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))


def _edited_json(path):
    write_json(path, {"kind": "command-record", "schema_version": 1, "note": "ours"})
    path.write_text(path.read_text().replace('"ours"', '"mine now"'))


def _forged_mark(path):
    path.write_text(json.dumps({"parameters": {"m": 2}, "written_by": {"tool": "provable-attention",
                                                                        "sha256": "0" * 64}}))


def _edited_png(path):
    atomic_write(path, lambda fh: fh.write(_png()))
    blob = path.read_bytes()
    at = blob.index(b"IDAT") + 4
    path.write_bytes(blob[:at] + zlib.compress(b"\x00\x00") + blob[at + len(zlib.compress(b"\x00\x80")):])


#: A user's files, each written by hand: a look the toolkit's files share, never the toolkit's mark.
USER_FILES = {
    "thesis-pdf": lambda p: p.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << >>\n%%EOF\n"),
    "png-holding-text": lambda p: p.write_bytes(_png(_chunk(b"tEXt", b"Comment\x00my notes, keep them"))),
    "svg": lambda p: p.write_bytes(b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>\n'),
    "zip": _user_zip,
    "plain-npz": _plain_npz,
    "npz-of-another-tool": _npz_of_another_tool,
    "json-with-parameters": lambda p: p.write_text('{"parameters": {"m": 2}, "kind": "scaling-study"}'),
    "json-of-ours-edited": _edited_json,
    "json-with-a-forged-mark": _forged_mark,
    "png-of-ours-edited": _edited_png,
}


def _file_outputs():
    """``(package, command, dest, option, inside)`` of every file output: the file options, and each file a
    folder option declares (``inside`` its name in the folder)."""
    found = []
    for package in PACKAGES:
        parser = __import__(f"{package}.cli", fromlist=["build_parser"]).build_parser()
        for command, sub in parser.commands.choices.items():
            for action in sub.options:
                if action.dest not in OUTPUT_OPTIONS:
                    continue
                option = action.option_strings[-1]
                if action.metavar != "DIR":
                    found.append((package, command, action.dest, option, None))
                found += [(package, command, action.dest, option, name) for name in getattr(action, "files", ())]
    return found


OUTPUTS = _file_outputs()


def _argv(package, command, dest, value):
    parser = __import__(f"{package}.cli", fromlist=["build_parser"]).build_parser()
    sub = parser.command(command)
    argv = [command]
    for action in sub.options:
        given = value if action.dest == dest else None
        if given is None and action.required:
            given = sorted(action.choices)[0] if action.choices else f"fresh-{action.dest}"
        if not action.option_strings:
            argv.append(given)
        elif given is not None:
            argv += [action.option_strings[-1], given]
    return parser, argv


def _refusal(package, command, dest, value):
    """The check's refusal of the command line (the check itself: a missed refusal must not start the work)."""
    parser, argv = _argv(package, command, dest, value)
    with pytest.raises(ValueError) as exc:
        check_output_options(parser, parser.parse_args(argv))
    return str(exc.value)


@pytest.mark.parametrize("kind", sorted(USER_FILES))
@pytest.mark.parametrize(("package", "command", "dest", "option", "inside"), OUTPUTS,
                         ids=[f"{p}-{c}-{o}" + (f"-{i}" if i else "") for p, c, _, o, i in OUTPUTS])
def test_a_users_file_is_refused_by_every_output(tmp_path, monkeypatch, package, command, dest, option, inside, kind):
    if dest.startswith("plot"):
        pytest.importorskip("matplotlib", reason="a plot option needs matplotlib (the `plot` extra)")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pd").mkdir()
    path = tmp_path / "pd" / inside if inside else tmp_path / "user.file"
    USER_FILES[kind](path)
    before = path.read_bytes()
    message = _refusal(package, command, dest, "pd" if inside else "user.file")
    assert message.startswith(f"`{option}` would replace") and "did not write" in message, message
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["pd", path.name])  # nothing new written


@pytest.mark.parametrize(("package", "argv", "option"), [
    ("learner", ["demo", "--json", "{path}"], "--json"),
    ("theory", ["all", "--plot-dir", "pd"], "--plot-dir"),
    ("lowerbounds", ["sq", "--out", "{path}"], "--out"),
])
def test_the_command_lines_exit_2_with_one_line(tmp_path, monkeypatch, capsys, package, argv, option):
    """The refusal through ``main``: exit status 2, one line naming the option, the user's file untouched."""
    if option == "--plot-dir":
        pytest.importorskip("matplotlib", reason="--plot-dir needs matplotlib (the `plot` extra)")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pd").mkdir()
    path = tmp_path / "pd" / "one_step.png" if option == "--plot-dir" else tmp_path / "thesis.pdf"
    USER_FILES["png-holding-text" if option == "--plot-dir" else "thesis-pdf"](path)
    before = path.read_bytes()
    code = __import__(f"{package}.cli", fromlist=["main"]).main([a.format(path=path) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: `{option}` would replace"), err
    assert path.read_bytes() == before


@pytest.mark.parametrize(("package", "command", "dest", "option", "inside"), OUTPUTS,
                         ids=[f"{p}-{c}-{o}" + (f"-{i}" if i else "") for p, c, _, o, i in OUTPUTS])
def test_control_a_file_of_ours_passes_every_output(tmp_path, monkeypatch, package, command, dest, option, inside):
    """Control: the same outputs over a file the toolkit wrote (a marked figure or a marked record) pass."""
    if dest.startswith("plot"):
        pytest.importorskip("matplotlib", reason="a plot option needs matplotlib (the `plot` extra)")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pd").mkdir()
    path = tmp_path / "pd" / inside if inside else tmp_path / "ours.file"
    if str(path).endswith(".png"):
        atomic_write(path, lambda fh: fh.write(_png()))
    else:
        write_json(path, {"kind": "command-record", "schema_version": 1})
    parser, argv = _argv(package, command, dest, "pd" if inside else "ours.file")
    check_output_options(parser, parser.parse_args(argv))


class TestMarks:
    """The marks, read back by a reference parser written here."""

    def test_json_mark_is_the_sha256_of_the_rest_as_canonical_json(self, tmp_path):
        from learner.sweep.records import record_digest

        record = {"b": [1.5, None], "a": {"é": 1}, "kind": "command-record"}
        value = json.loads(write_json(tmp_path / "r.json", record).read_text(encoding="utf-8"))
        mark = value.pop("written_by")
        assert mark["tool"] == "provable-attention" and value == record
        assert mark["sha256"] == _canonical_sha256(record) == record_digest(record)  # the run records' canon

    def test_a_run_record_vouches_for_itself_and_gets_no_second_mark(self, tmp_path):
        from learner.sweep.records import DIGEST_FIELD, record_digest

        rec = {"kind": "scaling-run", "outcome": "finished"}
        rec[DIGEST_FIELD] = record_digest(rec)
        path = write_json(tmp_path / "run.json", rec)
        assert json.loads(path.read_text()) == rec and foreign_file(path) is None
        path.write_text(path.read_text().replace("finished", "error"))  # edited by hand: someone's work now
        assert "did not write" in foreign_file(path)

    def test_a_png_gets_one_text_chunk_with_the_sha256_of_the_rest(self, tmp_path):
        plain = _png()
        path = tmp_path / "f.png"
        atomic_write(path, lambda fh: fh.write(plain))
        chunks = _chunks(path.read_bytes())
        marks = [data for kind, data in chunks if kind == b"tEXt" and data.startswith(b"provable-attention\x00")]
        assert len(marks) == 1 and marks[0].endswith(b" sha256:" + hashlib.sha256(plain).hexdigest().encode())
        assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"tEXt", b"IEND"]  # before IEND, nothing lost
        assert foreign_file(path) is None

    @pytest.mark.parametrize("fmt", ["png", "pdf", "svg"])
    def test_a_figure_saved_by_the_toolkit_is_ours_and_readable(self, tmp_path, fmt):
        matplotlib = pytest.importorskip("matplotlib", reason="figures need matplotlib (the `plot` extra)")
        matplotlib.use("Agg")
        from matplotlib.figure import Figure

        from learner.io import save_figure

        fig = Figure()
        fig.add_subplot().plot([0, 1], [1, 0])
        path = save_figure(fig, tmp_path / f"f.{fmt}")
        fig.savefig(tmp_path / f"theirs.{fmt}")  # the same figure, saved by matplotlib alone: no mark
        assert foreign_file(path) is None and "did not write" in foreign_file(tmp_path / f"theirs.{fmt}")
        blob = path.read_bytes()
        if fmt == "pdf":  # the mark is a comment line before the last %%EOF, which stays the last line
            assert blob.endswith(b"\n%%EOF\n") and b"\n%provable-attention " in blob[-200:]
        elif fmt == "svg":
            import xml.dom.minidom

            xml.dom.minidom.parseString(blob)  # still well-formed XML
        else:
            import matplotlib.image

            assert matplotlib.image.imread(path).shape[:2] == matplotlib.image.imread(tmp_path / "theirs.png").shape[:2]

    def test_control_layers_and_examples_of_ours_pass(self, tmp_path):
        layer = random_layer(2, 4, check=False, rng=0)
        save_layer(tmp_path / "layer.npz", layer)
        save_examples(tmp_path / "ex.npz", np.ones((2, 2, 4)), np.ones((2, 2, 4)))
        assert foreign_file(tmp_path / "layer.npz") is None and foreign_file(tmp_path / "ex.npz") is None
        check_writable_file("--out", tmp_path / "layer.npz")


def test_control_sample_replaces_its_own_layer(tmp_path):
    """End to end: a layer the toolkit wrote is replaced by the next ``sample --out`` (well under a second)."""
    from learner.cli import main

    path = tmp_path / "layer.npz"
    assert main(["sample", "--m", "2", "--d", "6", "--out", str(path), "--seed", "1"]) == 0
    first = path.read_bytes()
    assert main(["sample", "--m", "2", "--d", "6", "--out", str(path), "--seed", "2"]) == 0
    assert path.read_bytes() != first


def test_a_study_folder_is_ours_through_its_claim(tmp_path, capsys):
    """Inside a study's folder the study's claim vouches for its files: summaries written before the marks existed
    (no ``written_by``) are re-summarised in place, as the committed studies under docs/sweeps/ are."""
    from learner.cli import main

    argv = ["scaling", "--m", "1", "--d", "6", "--k", "2", "--seeds", "1", "--methods", "provable", "--quick",
            "--serial", "--no-progress", "--out", str(tmp_path / "sc")]
    assert main(argv) == 0
    for name in ("summary.json", "study.json"):  # as an older version wrote them: no mark
        path = tmp_path / "sc" / name
        value = json.loads(path.read_text())
        value.pop("written_by")
        path.write_text(json.dumps(value, indent=2, sort_keys=True))
        assert "did not write" in foreign_file(path)
    assert main(argv + ["--summarise-only"]) == 0
    assert foreign_file(tmp_path / "sc" / "summary.json") is None  # rewritten, with the mark


class TestFigureMarks:
    """Which figures carry the toolkit's mark, on constructed files: the mark is a line (a PNG chunk) of its own
    whose last field is the SHA-256 of the rest of the file."""

    TOOL = learner_io.TOOL.encode("ascii")

    def _svg_marked_by_hand(self, body, text):
        return body + b"\n<!-- " + text + b" -->\n"

    @pytest.mark.parametrize("fmt, body", [("svg", b"<svg></svg>"), ("pdf", b"%PDF-1.4\n1 0 obj\n%%EOF\n"),
                                           ("svg", b""), ("png", None)], ids=["svg", "pdf", "empty-svg", "png"])
    def test_control_a_marked_figure_is_ours(self, fmt, body):
        blob = learner_io._mark_figure(_png() if body is None else body, fmt)
        assert learner_io._figure_marked(blob, fmt)
        assert not learner_io._figure_marked(blob.replace(b"svg>", b"svG>") if fmt == "svg" and body else
                                             blob + b"x", fmt)  # edited since: not ours

    def test_an_earlier_line_that_looks_like_a_mark_is_not_the_mark(self):
        body = b"<svg>\n<!-- " + self.TOOL + b" a title that names the tool -->\n</svg>"
        assert learner_io._figure_marked(learner_io._mark_figure(body, "svg"), "svg")

    def test_the_digest_is_the_marks_last_field(self):
        body = b"<svg></svg>"
        digest = hashlib.sha256(body + b"\n").hexdigest().encode()
        text = self.TOOL + b" note sha256:abc sha256:" + digest
        assert learner_io._figure_marked(self._svg_marked_by_hand(body, text), "svg")
        assert not learner_io._figure_marked(self._svg_marked_by_hand(body, self.TOOL + b" sha256:abc"), "svg")

    def test_a_mark_that_is_not_on_a_line_of_its_own_is_not_found(self):
        rest = b"<svg></svg>\n"
        text = self.TOOL + b" 0 sha256:" + hashlib.sha256(rest).hexdigest().encode()
        assert not learner_io._figure_marked(b"<!-- " + text + b" -->\n" + rest, "svg")

    def test_a_png_with_two_marks_or_damaged_chunks_is_not_ours(self):
        once = learner_io._mark_figure(_png(), "png")
        assert learner_io._figure_marked(once, "png")
        assert not learner_io._figure_marked(learner_io._mark_figure(once, "png"), "png")
        assert not learner_io._figure_marked(once[:-3], "png")
        assert not learner_io._figure_marked(_png(_chunk(b"tEXt", b"Title\0plot")), "png")


class TestMarkPlacement:
    """Where the mark goes (written by hand for each case): a PDF's just before its last ``%%EOF`` line, anything
    else at the end, after exactly one newline."""

    @pytest.mark.parametrize("fmt, body, before", [
        ("svg", b"<svg></svg>", None),
        ("svg", b"\n<svg></svg>\n", None),
        ("svg", b"<svg>\n\n", None),
        ("svg", b"<svg>\n%%EOF</svg>\n", None),
        ("pdf", b"%PDF-1.4\n%%EOF\nupdate\n%%EOF\n", b"%%EOF\n"),
        ("pdf", b"\n%%EOF\n", b"%%EOF\n"),
        ("pdf", b"%PDF-1.4 %%EOF\n", None),
    ], ids=["svg", "svg-leading-newline", "svg-blank-last-line", "svg-with-eof-text", "pdf-two-eofs",
            "pdf-eof-at-1", "pdf-eof-mid-line"])
    def test_the_mark_goes_where_the_rule_says(self, fmt, body, before):
        normal = body if body.endswith(b"\n") else body + b"\n"
        at = len(normal) - len(before) if before else len(normal)
        head, tail = learner_io._TRAILERS[fmt]
        expected = normal[:at] + head + learner_io._mark_text(normal) + tail + normal[at:]
        assert learner_io._mark_figure(body, fmt) == expected
        assert learner_io._figure_marked(expected, fmt)

    def test_a_body_without_a_final_newline_gets_exactly_one(self):
        marked = learner_io._mark_figure(b"<svg></svg>", "svg")
        assert marked.startswith(b"<svg></svg>\n<!-- ")


class TestWhatIsReadToJudge:
    """How much of a file is read to judge it, and the limits at their edges (the limits made small here, so the
    edges are files of a few kilobytes)."""

    LIMIT = 10_000  # above the 4096 bytes read first, so a JSON file's judgement reads a head and then the rest

    def _marked_json_of(self, path, size):
        """A JSON file written (and marked) by the toolkit, padded to exactly ``size`` bytes."""
        write_json(path, {"pad": ""})
        pad = size - path.stat().st_size
        write_json(path, {"pad": "x" * pad})
        assert path.stat().st_size == size
        return path

    def test_a_marked_json_file_is_ours_up_to_the_readers_limit_and_not_past_it(self, tmp_path, monkeypatch):
        monkeypatch.setattr(learner_io, "MAX_JSON_BYTES", self.LIMIT)
        at = self._marked_json_of(tmp_path / "at.json", self.LIMIT)
        past = self._marked_json_of(tmp_path / "past.json", self.LIMIT + 1)
        assert foreign_file(at) is None and learner_io.read_json(at)["pad"]
        assert f"larger than the {self.LIMIT:,} bytes" in foreign_file(past)
        with pytest.raises(learner_io.FileFormatError, match="larger than"):  # the reader's own limit agrees
            learner_io.read_json(past)

    def test_a_large_file_is_judged_and_refused_from_its_first_bytes(self, tmp_path, monkeypatch):
        import tracemalloc

        monkeypatch.setattr(learner_io, "MAX_JSON_BYTES", self.LIMIT)
        path = tmp_path / "big.json"
        path.write_bytes(b"[" + b" " * (4 << 20))  # 4 MiB that no limit here lets anyone read whole
        tracemalloc.start()
        try:
            assert "did not write" in foreign_file(path)
            with pytest.raises(learner_io.FileFormatError, match="larger than"):
                learner_io.read_json(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20, f"read {peak:,} bytes to judge a file that the first {self.LIMIT + 1:,} decide"

    def test_a_marked_figure_is_ours_up_to_the_figure_limit(self, tmp_path, monkeypatch):
        blob = learner_io._mark_figure(_png(), "png")
        path = tmp_path / "f.png"
        path.write_bytes(blob)
        monkeypatch.setattr(learner_io, "_MAX_MARKED_BYTES", len(blob))
        assert foreign_file(path) is None
        monkeypatch.setattr(learner_io, "_MAX_MARKED_BYTES", len(blob) - 1)  # past the limit: not judged a figure
        assert "did not write" in foreign_file(path)

    def test_an_unmarked_figure_is_named_by_its_format(self, tmp_path):
        (tmp_path / "f.png").write_bytes(_png())
        assert foreign_file(tmp_path / "f.png").startswith("a PNG figure the toolkit did not write")
        (tmp_path / "f.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
        assert foreign_file(tmp_path / "f.pdf").startswith("a PDF figure")

    def test_save_figure_passes_its_options_to_matplotlib(self, tmp_path):
        matplotlib = pytest.importorskip("matplotlib", reason="figures need matplotlib (the `plot` extra)")
        matplotlib.use("Agg")
        from matplotlib.figure import Figure

        fig = Figure(figsize=(2, 1))
        widths = []
        for dpi in (20, 40):
            blob = learner_io.save_figure(fig, tmp_path / f"f{dpi}.png", dpi=dpi).read_bytes()
            widths.append(struct.unpack(">I", blob[16:20])[0])  # IHDR's width, the first field after its type
        assert widths == [40, 80]

    def test_a_write_that_is_no_figure_is_not_read_back_whole(self, tmp_path):
        """Every atomic write looks at its file's first bytes for a figure to mark; a large examples file must not
        be read back into memory for that."""
        import tracemalloc

        payload = b"PK\x03\x04" + bytes(4 << 20)  # 4 MiB, allocated before the measurement
        tracemalloc.start()
        try:
            atomic_write(tmp_path / "big.npz", lambda fh: fh.write(payload))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert (tmp_path / "big.npz").stat().st_size == len(payload)
        assert peak < 1 << 20, f"{peak:,} bytes held to find out that {len(payload):,} bytes are no figure"


class TestWhereAWriteLands:
    """``write_target`` and ``atomic_write``: what is written, where the temporary file lies, what a refusal says."""

    def test_a_path_is_written_as_given_unless_it_is_itself_a_symlink(self, tmp_path):
        (tmp_path / "real").mkdir()
        (tmp_path / "via").symlink_to(tmp_path / "real")
        through_folder = tmp_path / "via" / "out.json"  # a link in a parent folder, not the file itself
        assert learner_io.write_target(through_folder) == (through_folder, None)
        (tmp_path / "real" / "t.json").write_text("{}")
        (tmp_path / "link.json").symlink_to(tmp_path / "real" / "t.json")
        target, _ = learner_io.write_target(tmp_path / "link.json")
        assert target == tmp_path / "real" / "t.json"

    def test_a_refusal_names_a_symlink_only_when_there_is_one(self, tmp_path):
        (tmp_path / "d").mkdir()
        with pytest.raises(ValueError) as plain:
            learner_io.write_target(tmp_path / "d")
        assert "the target of the symlink" not in str(plain.value)
        (tmp_path / "l").symlink_to(tmp_path / "d")
        with pytest.raises(ValueError, match=f"the target of the symlink {re.escape(repr(str(tmp_path / 'l')))}"):
            learner_io.write_target(tmp_path / "l")

    def test_a_name_too_long_is_refused_as_the_path(self, tmp_path):
        with pytest.raises(ValueError, match="^`path` names a file or folder 300 bytes long"):
            learner_io.write_target(tmp_path / ("a" * 300))

    def test_the_temporary_file_is_hidden_beside_the_target(self, tmp_path, monkeypatch):
        """The rename is atomic only within one file system, so the temporary file lies in the target's folder; it is
        hidden and ends in .tmp, so that a folder's listing does not show a half-written result."""
        renamed = []
        replace = learner_io.os.replace

        def spy(src, dst):
            renamed.append((Path(src), Path(dst)))
            return replace(src, dst)

        monkeypatch.setattr(learner_io.os, "replace", spy)
        atomic_write(tmp_path / "r.json", lambda fh: fh.write(b"{}"))
        (src, dst), = renamed
        assert dst == tmp_path / "r.json" and src.parent == tmp_path
        assert src.name.startswith(".r.json.") and src.name.endswith(".tmp")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]

    def test_a_figure_is_marked_up_to_the_size_limit(self, tmp_path, monkeypatch):
        plain = _png()
        monkeypatch.setattr(learner_io, "_MAX_MARKED_BYTES", len(plain))
        atomic_write(tmp_path / "at.png", lambda fh: fh.write(plain))
        assert learner_io._figure_marked((tmp_path / "at.png").read_bytes(), "png")
        monkeypatch.setattr(learner_io, "_MAX_MARKED_BYTES", len(plain) - 1)
        atomic_write(tmp_path / "past.png", lambda fh: fh.write(plain))
        assert (tmp_path / "past.png").read_bytes() == plain  # left as written: too large to be read back and marked


class TestWhichFilesAreFigures:
    """A figure is told by its first bytes: an SVG starts (after blank space) with its XML prolog or ``<svg``."""

    @pytest.mark.parametrize("body", [b"<svg></svg>", b"\n  <svg></svg>", b"<?xml version='1.0'?>\n<svg></svg>"],
                             ids=["bare", "after-blank-lines", "with-prolog"])
    def test_a_marked_svg_is_ours_however_it_starts(self, tmp_path, body):
        path = tmp_path / "f.svg"
        path.write_bytes(learner_io._mark_figure(body, "svg"))
        assert foreign_file(path) is None
        path.write_bytes(body)  # control: unmarked, it is a figure the toolkit did not write
        assert foreign_file(path).startswith("a SVG figure")

    def test_a_json_file_that_mentions_svg_is_still_json(self, tmp_path):
        value = {"note": "drawn as <svg> by the plot command"}
        path = write_json(tmp_path / "notes.json", value)
        assert foreign_file(path) is None
        assert learner_io.read_json(path)["note"] == value["note"]  # still JSON: no figure mark appended
