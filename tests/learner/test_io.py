"""Tests for learner.io: pickle-free .npz files with a verified JSON header, written atomically."""

import gc
import hashlib
import json
import math
import pickle
import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import learner.io
from learner import (
    AttentionLayer,
    FileFormatError,
    load_examples,
    load_layer,
    random_layer,
    read_metadata,
    sample_inputs,
    save_examples,
    save_layer,
    write_json,
)

DAMAGED = "is damaged or not a toolkit .npz file"


def _read_npz(path):
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    return arrays, json.loads(arrays.pop("__meta__").tobytes().decode("utf-8"))


def _write_npz(path, arrays, meta):
    """Write an archive by hand, with an arbitrary (possibly inconsistent) header."""
    blob = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays, __meta__=blob)


def _sha256(a):
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()


@pytest.fixture
def layer():
    return random_layer(2, 3, check=False, rng=0)


@pytest.fixture
def layer_path(tmp_path, layer):
    path = tmp_path / "layer.npz"
    save_layer(path, layer, metadata={"seed": 0, "note": "planted"})
    return path


class TestSaveLayer:
    def test_round_trip_exact(self, layer, layer_path):
        """load_layer returns exactly the saved parameters (and hence the same function)."""
        loaded = load_layer(layer_path)
        assert isinstance(loaded, AttentionLayer)
        assert_array_equal(loaded.thetas, layer.thetas)
        assert_array_equal(loaded.ws, layer.ws)
        X = sample_inputs(5, 4, 3, rng=0)
        assert_array_equal(loaded(X), layer(X))

    def test_str_path_and_return_value(self, tmp_path, layer):
        """A str path works and the written path is returned."""
        path = tmp_path / "by-str.npz"
        assert save_layer(str(path), layer) == path
        assert_array_equal(load_layer(str(path)).thetas, layer.thetas)
        assert read_metadata(path)["metadata"] == {}

    def test_no_pickle_in_file(self, layer_path):
        """The archive loads with allow_pickle=False and holds only float64 arrays and the uint8 header."""
        with np.load(layer_path, allow_pickle=False) as archive:
            assert sorted(archive.files) == ["__meta__", "thetas", "ws"]
            assert archive["thetas"].dtype == archive["ws"].dtype == np.float64
            assert archive["__meta__"].dtype == np.uint8

    def test_no_temporary_files_left(self, tmp_path, layer, layer_path):
        """After saving (twice, overwriting) the directory holds only the target file."""
        save_layer(layer_path, layer, metadata={"again": True})
        assert [p.name for p in tmp_path.iterdir()] == ["layer.npz"]
        assert read_metadata(layer_path)["metadata"] == {"again": True}

    @pytest.mark.parametrize(
        "metadata",
        [{"bad": object()}, {"nan": math.nan}, {"inf": [math.inf]}],
        ids=["object", "nan", "inf"],
    )
    def test_bad_metadata_leaves_target_unchanged(self, tmp_path, layer_path, metadata):
        """Metadata that is not strict JSON raises ValueError; the existing file and directory are untouched."""
        before = layer_path.read_bytes()
        with pytest.raises(ValueError, match="`metadata` must be JSON-serialisable"):
            save_layer(layer_path, random_layer(1, 2, check=False, rng=1), metadata=metadata)
        assert layer_path.read_bytes() == before
        assert [p.name for p in tmp_path.iterdir()] == ["layer.npz"]

    def test_failure_while_writing_leaves_target_unchanged(self, tmp_path, layer_path, monkeypatch):
        """If writing fails half-way, the old file survives intact and the temporary file is removed."""
        before = layer_path.read_bytes()

        def broken_savez(fh, **arrays):
            fh.write(b"PK\x03\x04 half an archive")
            raise OSError("disk full (simulated)")

        monkeypatch.setattr(np, "savez", broken_savez)
        with pytest.raises(OSError, match="disk full"):
            save_layer(layer_path, random_layer(1, 2, check=False, rng=1))
        assert layer_path.read_bytes() == before
        assert [p.name for p in tmp_path.iterdir()] == ["layer.npz"]

    def test_failure_while_renaming_leaves_target_unchanged(self, tmp_path, layer_path, monkeypatch):
        """If the final rename fails, the old file survives and the complete temporary file is removed."""
        before = layer_path.read_bytes()

        def broken_replace(src, dst):
            raise OSError("rename failed (simulated)")

        monkeypatch.setattr(learner.io.os, "replace", broken_replace)
        with pytest.raises(OSError, match="rename failed"):
            save_layer(layer_path, random_layer(1, 2, check=False, rng=1))
        assert layer_path.read_bytes() == before
        assert [p.name for p in tmp_path.iterdir()] == ["layer.npz"]


class TestLoadLayer:
    def test_missing_file(self, tmp_path):
        """A path that does not exist raises FileNotFoundError naming it."""
        with pytest.raises(FileNotFoundError, match=r"no such file: .*absent\.npz"):
            load_layer(tmp_path / "absent.npz")

    @pytest.mark.parametrize("keep", [0.5, 0.9, 0.99], ids=["half", "90pct", "99pct"])
    def test_truncated_file(self, layer_path, keep):
        """A file cut short is reported as damaged."""
        raw = layer_path.read_bytes()
        layer_path.write_bytes(raw[: int(len(raw) * keep)])
        with pytest.raises(FileFormatError, match=DAMAGED):
            load_layer(layer_path)

    @pytest.mark.parametrize("where", ["middle-of-file", "thetas-data", "ws-data", "json-header"])
    def test_flipped_byte(self, layer, layer_path, where):
        """A flipped byte mid-file, in either array's data or in the JSON header is caught (zip CRC-32, header
        checks)."""
        raw = bytearray(layer_path.read_bytes())
        position = {
            "middle-of-file": len(raw) // 2,
            "thetas-data": raw.find(layer.thetas.tobytes()) + 8 * 9,
            "ws-data": raw.find(layer.ws.tobytes()) + 8 * 9 + 3,
            "json-header": raw.find(b'"schema_version"') + 3,
        }[where]
        assert position > 16  # the landmark was found
        raw[position] ^= 0xFF
        layer_path.write_bytes(bytes(raw))
        with pytest.raises(FileFormatError, match=DAMAGED):
            load_layer(layer_path)

    @pytest.mark.parametrize(
        "content",
        [b"", b"\x00", b"hello, this is not an archive\n" * 20, np.random.default_rng(0).bytes(2000)],
        ids=["empty", "one-byte", "text", "random-bytes"],
    )
    def test_not_an_archive(self, tmp_path, content):
        """Files that are not zip archives at all are named so (never unpickled, never called "pickled data")."""
        path = tmp_path / "junk.npz"
        path.write_bytes(content)
        with pytest.raises(FileFormatError, match=r"is not a toolkit \.npz file \(not a zip archive\)"):
            load_layer(path)

    def test_a_directory_is_not_a_file(self, tmp_path):
        with pytest.raises(FileFormatError, match="is a directory, not a toolkit .npz file"):
            load_layer(tmp_path)


class TestWritePaths:
    """Writing names the real problem: a directory given as the file, or a missing directory (not the temp file)."""

    @pytest.mark.parametrize("write", [lambda p: write_json(p, {}), lambda p: save_layer(p, random_layer(1, 3, rng=0))],
                             ids=["json", "layer"])
    def test_directory_as_file(self, tmp_path, write):
        with pytest.raises(ValueError, match="it is a directory; give a file name"):
            write(tmp_path)

    @pytest.mark.parametrize("write", [lambda p: write_json(p, {}), lambda p: save_layer(p, random_layer(1, 3, rng=0))],
                             ids=["json", "layer"])
    def test_missing_directory(self, tmp_path, write):
        target = tmp_path / "missing" / "out.json"
        with pytest.raises(FileNotFoundError, match=r"its directory .*missing' does not exist"):
            write(target)
        assert not (tmp_path / "missing").exists()

    def test_plain_npz_without_header(self, tmp_path, layer):
        """An .npz written by np.savez (no __meta__) is not a toolkit file."""
        path = tmp_path / "plain.npz"
        np.savez(path, thetas=layer.thetas, ws=layer.ws)
        with pytest.raises(FileFormatError, match="is not a toolkit file \\(no __meta__ entry\\)"):
            load_layer(path)

    def test_examples_file_is_wrong_format(self, tmp_path):
        """load_layer refuses an examples file, naming both formats."""
        path = tmp_path / "examples.npz"
        X = sample_inputs(3, 2, 2, rng=0)
        save_examples(path, X, X)
        with pytest.raises(FileFormatError, match="holds format 'attention-examples'; expected attention-layer"):
            load_layer(path)

    def test_future_schema_version(self, layer_path):
        """A header with schema_version 99 is refused (and the version is named)."""
        arrays, meta = _read_npz(layer_path)
        meta["schema_version"] = 99
        _write_npz(layer_path, arrays, meta)
        with pytest.raises(FileFormatError, match="has schema_version 99; this version reads 1"):
            load_layer(layer_path)

    def test_arrays_fail_sha256(self, layer_path):
        """Arrays changed after writing (with a consistent zip, so only the hash can tell) are refused."""
        arrays, meta = _read_npz(layer_path)
        arrays["ws"] = arrays["ws"].copy()
        arrays["ws"][0, 0, 0] = np.nextafter(arrays["ws"][0, 0, 0], np.inf)  # one ulp
        _write_npz(layer_path, arrays, meta)
        with pytest.raises(FileFormatError, match="array 'ws' fails its SHA-256 check"):
            load_layer(layer_path)

    @pytest.mark.parametrize(
        ("edit", "match"),
        [
            (lambda a, m: a.update(thetas=a["thetas"][:1]), r"array 'thetas' has dtype float64 and shape \(1, 3, 3\)"),
            (lambda a, m: a.update(ws=a["ws"].astype(np.float32)), r"array 'ws' has dtype float32"),
            (lambda a, m: a.update(extra=np.zeros(2)), r"arrays \['extra', 'thetas', 'ws'\] do not match"),
            (lambda a, m: a.pop("ws"), r"arrays \['thetas'\] do not match the metadata"),
            (lambda a, m: m.pop("format"), r"holds format None; expected attention-layer"),
        ],
        ids=["shape-differs", "dtype-differs", "extra-array", "missing-array", "no-format"],
    )
    def test_header_disagrees_with_arrays(self, layer_path, edit, match):
        """Any disagreement between the header and the stored arrays is refused."""
        arrays, meta = _read_npz(layer_path)
        edit(arrays, meta)
        _write_npz(layer_path, arrays, meta)
        with pytest.raises(FileFormatError, match=match):
            load_layer(layer_path)

    def test_consistent_file_but_invalid_layer(self, tmp_path):
        """Arrays that match their header but do not form a layer are refused as such."""
        arrays = {"thetas": np.zeros((1, 2, 2)), "ws": np.zeros((1, 3, 3))}
        meta = {
            "format": "attention-layer",
            "schema_version": 1,
            "arrays": {n: {"shape": list(a.shape), "sha256": _sha256(a)} for n, a in arrays.items()},
            "metadata": {},
        }
        path = tmp_path / "odd.npz"
        _write_npz(path, arrays, meta)
        with pytest.raises(FileFormatError, match="does not hold a valid layer"):
            load_layer(path)

    def test_npy_file_is_wrong_format(self, tmp_path):
        """A plain .npy array file is 'of another kind': FileFormatError, as documented."""
        path = tmp_path / "array.npy"
        np.save(path, np.zeros((1, 2, 2)))
        with pytest.raises(FileFormatError):
            load_layer(path)

    def test_damaged_compression_field(self, layer_path):
        """A damaged compression-method field in the zip directory is reported as a damaged file."""
        raw = bytearray(layer_path.read_bytes())
        central = raw.find(b"PK\x01\x02")  # first central-directory entry; method is at offset 10
        raw[central + 10 : central + 12] = (99).to_bytes(2, "little")
        layer_path.write_bytes(bytes(raw))
        with pytest.raises(FileFormatError, match=DAMAGED):
            load_layer(layer_path)

    def test_damaged_zip_closes_its_file(self, layer_path):
        """Loading a truncated file leaves no file handle open (no ResourceWarning)."""
        layer_path.write_bytes(layer_path.read_bytes()[:-30])
        gc.collect()  # garbage left by earlier tests (a killed subprocess's pipes) is not this load's
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            with pytest.raises(FileFormatError, match=DAMAGED):
                load_layer(layer_path)
            gc.collect()
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


class TestSaveExamples:
    def test_round_trip_exact(self, tmp_path, layer):
        """load_examples returns exactly the saved X and Y."""
        X = sample_inputs(6, 4, 3, distribution="gaussian", rng=0)
        Y = layer(X)
        path = save_examples(tmp_path / "ex.npz", X, Y, metadata={"k": 4})
        X2, Y2 = load_examples(path)
        assert_array_equal(X2, X)
        assert_array_equal(Y2, Y)
        assert X2.dtype == Y2.dtype == np.float64
        assert [p.name for p in tmp_path.iterdir()] == ["ex.npz"]

    def test_mismatched_shapes_raise(self, tmp_path):
        """X and Y must have the same shape; nothing is written otherwise."""
        X = sample_inputs(3, 2, 2, rng=0)
        with pytest.raises(ValueError, match=r"`X` and `Y` must have the same shape; got \(3, 2, 2\) and \(2, 2, 2\)"):
            save_examples(tmp_path / "ex.npz", X, X[:2])
        assert list(tmp_path.iterdir()) == []


class TestLoadExamples:
    def test_layer_file_is_wrong_format(self, layer_path):
        """load_examples refuses a layer file."""
        with pytest.raises(FileFormatError, match="holds format 'attention-layer'; expected attention-examples"):
            load_examples(layer_path)

    def test_missing_file(self, tmp_path):
        """A path that does not exist raises FileNotFoundError."""
        with pytest.raises(FileNotFoundError, match="no such file"):
            load_examples(tmp_path / "absent.npz")


class TestReadMetadata:
    def test_header_contents(self, layer, layer_path):
        """The header records format, schema version 1, array shapes and hashes, the writer and user metadata."""
        meta = read_metadata(layer_path)
        assert meta["format"] == "attention-layer"
        assert meta["schema_version"] == 1
        assert meta["metadata"] == {"seed": 0, "note": "planted"}
        assert meta["arrays"]["thetas"] == {"shape": [2, 3, 3], "sha256": _sha256(layer.thetas)}
        assert meta["arrays"]["ws"]["shape"] == [2, 3, 3]
        assert meta["created_by"].startswith("learner ")

    def test_examples_header(self, tmp_path):
        """read_metadata reads examples files too."""
        X = sample_inputs(3, 2, 2, rng=0)
        path = save_examples(tmp_path / "ex.npz", X, 2 * X, metadata={"n": 3})
        meta = read_metadata(path)
        assert meta["format"] == "attention-examples" and meta["metadata"] == {"n": 3}
        assert meta["arrays"]["X"]["shape"] == [3, 2, 2]

    def test_damaged_file(self, layer_path):
        """read_metadata verifies the arrays as well: a damaged file raises FileFormatError."""
        arrays, meta = _read_npz(layer_path)
        arrays["thetas"] = arrays["thetas"] + 1.0
        _write_npz(layer_path, arrays, meta)
        with pytest.raises(FileFormatError, match="fails its SHA-256 check"):
            read_metadata(layer_path)


class TestWriteJson:
    def test_round_trip_with_numpy_and_non_finite(self, tmp_path):
        """numpy scalars and arrays become plain JSON; NaN and ±inf become null; keys are sorted."""
        record = {
            "b": np.float64(0.25),
            "a": {"n": np.int64(3), "flag": np.bool_(True), "v": np.array([1.0, np.nan, -np.inf])},
            "c": (1, math.inf, "text"),
        }
        path = learner.io.write_json(tmp_path / "run.json", record)
        assert path == tmp_path / "run.json"
        text = path.read_text(encoding="utf-8")
        written = json.loads(text)
        assert written.pop("written_by")["tool"] == "provable-attention"  # the toolkit's mark (test_outputs_ours)
        assert written == {
            "a": {"flag": True, "n": 3, "v": [1.0, None, None]},
            "b": 0.25,
            "c": [1, None, "text"],
        }
        assert text.index('"a"') < text.index('"b"') < text.index('"c"')
        assert [p.name for p in tmp_path.iterdir()] == ["run.json"]

    def test_unserialisable_leaves_target_unchanged(self, tmp_path):
        """A record json cannot encode raises TypeError; an existing file and the directory are untouched."""
        path = learner.io.write_json(tmp_path / "run.json", {"ok": 1})
        before = path.read_bytes()
        with pytest.raises(TypeError, match="not JSON serializable"):
            learner.io.write_json(path, {"bad": object()})
        assert path.read_bytes() == before
        assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


class TestSizesBeforeInflation:
    """``_check_sizes`` against constructed zip directories: each member's inflated size against 8 bytes per
    declared entry plus the .npy header's room, the total against the free memory, the header against its cap.
    The boundaries are the rules' own (at the limit passes, one byte over is refused)."""

    ROOM = learner.io._NPY_HEADER_ROOM

    @staticmethod
    def _archive(**sizes):
        from types import SimpleNamespace

        infos = {f"{name}.npy": SimpleNamespace(file_size=size) for name, size in sizes.items()}
        return SimpleNamespace(zip=SimpleNamespace(NameToInfo=infos))

    @staticmethod
    def _meta(**shapes):
        return {"arrays": {name: {"shape": shape} for name, shape in shapes.items()}}

    @pytest.fixture(autouse=True)
    def _plenty_of_memory(self, monkeypatch):
        monkeypatch.setattr(learner.io, "available_memory", lambda: 2**40)

    def test_a_member_up_to_its_declared_size_and_room_passes_one_byte_more_does_not(self):
        limit = 8 * 2 * 3 * 4 + self.ROOM
        learner.io._check_sizes("f", self._archive(X=limit), self._meta(X=[2, 3, 4]))
        with pytest.raises(learner.io.FileFormatError, match="array 'X' inflates to .* shape \\(2, 3, 4\\), 192 bytes"):
            learner.io._check_sizes("f", self._archive(X=limit + 1), self._meta(X=[2, 3, 4]))

    def test_an_empty_declared_array_leaves_room_for_the_header_only(self):
        with pytest.raises(learner.io.FileFormatError, match="array 'X' inflates to"):
            learner.io._check_sizes("f", self._archive(X=10**7), self._meta(X=[0, 4]))

    def test_every_member_is_checked_whatever_comes_before_it(self):
        sizes = {learner.io._META: 100, "skipped": 10**9, "X": 8 + self.ROOM, "Y": 10**7}
        meta = {"arrays": {"X": {"shape": [1]}, "Y": {"shape": [1]}, "skipped": 3}}
        with pytest.raises(learner.io.FileFormatError, match="array 'Y' inflates to"):
            learner.io._check_sizes("f", self._archive(**sizes), meta)

    @pytest.mark.parametrize("shape", [["a"], [2.0, 3], "23", None], ids=repr)
    def test_a_shape_that_is_not_a_list_of_counts_is_left_to_the_checks_after_reading(self, shape):
        learner.io._check_sizes("f", self._archive(X=10**7), {"arrays": {"X": {"shape": shape}}})

    @pytest.mark.parametrize("meta", [[1, 2], "text", {"arrays": [1]}, {"arrays": {"X": 5}}], ids=repr)
    def test_a_header_of_the_wrong_shape_is_left_to_the_checks_after_reading(self, meta):
        learner.io._check_sizes("f", self._archive(X=10**7), meta)

    def test_the_total_against_the_free_memory_is_inclusive(self, monkeypatch):
        sizes, meta = {"X": 4000, "Y": 4000}, self._meta(X=[500], Y=[500])
        monkeypatch.setattr(learner.io, "available_memory", lambda: 8000)
        learner.io._check_sizes("f", self._archive(**sizes), meta)
        monkeypatch.setattr(learner.io, "available_memory", lambda: 7999)
        with pytest.raises(ValueError, match="holds arrays of 8,000 bytes once inflated, more than the 7,999"):
            learner.io._check_sizes("f", self._archive(**sizes), meta)

    def test_no_free_memory_figure_skips_only_the_total(self, monkeypatch):
        monkeypatch.setattr(learner.io, "available_memory", lambda: None)
        learner.io._check_sizes("f", self._archive(X=4000), self._meta(X=[500]))

    def test_the_header_up_to_its_cap_passes_one_byte_more_does_not(self):
        cap = learner.io.META_MAX_BYTES
        learner.io._check_sizes("f", self._archive(**{learner.io._META: cap}), None)
        learner.io._check_sizes("f", self._archive(X=10**12), None)  # no header member: nothing to size yet
        with pytest.raises(learner.io.FileFormatError, match="its header inflates to"):
            learner.io._check_sizes("f", self._archive(**{learner.io._META: cap + 1}), None)


class TestExamplesShapes:
    def test_save_refuses_arrays_that_are_not_three_dimensional(self, tmp_path):
        with pytest.raises(ValueError, match="`X`"):
            learner.io.save_examples(tmp_path / "e.npz", np.ones((4, 3)), np.ones((4, 3)))
        with pytest.raises(ValueError, match="`Y` must be finite"):
            learner.io.save_examples(tmp_path / "e.npz", np.ones((2, 3, 4)), np.full((2, 3, 4), np.nan))
        assert not (tmp_path / "e.npz").exists()

    def test_load_refuses_a_verified_file_of_two_dimensional_arrays(self, tmp_path):
        path = learner.io._write_record(tmp_path / "e.npz", learner.io._EXAMPLES, {"X": np.ones((4, 3)),
                                                                                   "Y": np.ones((4, 3))}, None)
        with pytest.raises(learner.io.FileFormatError, match="are not \\(n, k, d\\) alike"):
            learner.io.load_examples(path)


class TestRecordsOnDisk:
    def test_files_are_byte_identical_whatever_the_metadatas_key_order(self, tmp_path):
        X = np.ones((2, 3, 4))
        a = learner.io.save_examples(tmp_path / "a.npz", X, X, metadata={"b": 1, "a": {"y": 1, "x": 2}})
        b = learner.io.save_examples(tmp_path / "b.npz", X, X, metadata={"a": {"x": 2, "y": 1}, "b": 1})
        assert a.read_bytes() == b.read_bytes()

    def test_integer_arrays_are_stored_as_float64(self, tmp_path):
        X = np.ones((2, 3, 4), dtype=np.int64)
        path = learner.io._write_record(tmp_path / "e.npz", learner.io._EXAMPLES, {"X": X, "Y": X}, None)
        X2, Y2 = learner.io.load_examples(path)
        assert X2.dtype == np.float64 and Y2.dtype == np.float64

    def test_max_d_is_the_largest_d_read(self, tmp_path):
        from learner import random_layer

        path = learner.io.save_layer(tmp_path / "L.npz", random_layer(2, 4, check=False, rng=0))
        assert learner.io.load_layer(path, max_d=4).d == 4
        with pytest.raises(ValueError, match="d = 4"):
            learner.io.load_layer(path, max_d=3)

    def test_a_pickled_member_is_refused_not_unpickled(self, tmp_path):
        path = tmp_path / "p.npz"
        np.savez(path, X=np.array([{"a": 1}], dtype=object))  # numpy pickles object arrays
        with pytest.raises(learner.io.FileFormatError):
            learner.io.load_examples(path)

    def test_a_pickled_member_beside_a_well_formed_header_is_never_unpickled(self, tmp_path):
        """The header checks pass (format, schema, sizes), so the refusal must come from the member's pickle
        never being run: unpickling it would call ``_note_unpickled``."""
        path = tmp_path / "p.npz"
        header = {"format": "attention-examples", "schema_version": learner.io.SCHEMA_VERSION,
                  "arrays": {"X": {"shape": [1000, 1, 1]}, "Y": {"shape": [1000, 1, 1]}}}
        watched = np.array([_Watched()], dtype=object)
        np.savez(path, X=watched, Y=watched, **{learner.io._META: np.frombuffer(json.dumps(header).encode(), np.uint8)})
        _UNPICKLED.clear()
        with pytest.raises(learner.io.FileFormatError, match="damaged or not a toolkit"):
            learner.io.load_examples(path)
        assert _UNPICKLED == []
        pickle.loads(pickle.dumps(_Watched()))  # control: unpickling it is seen
        assert _UNPICKLED == ["unpickled"]

    def test_refusals_before_inflating_name_the_file(self, tmp_path):
        big_header = tmp_path / "header.npz"
        np.savez(big_header, X=np.ones(1), **{learner.io._META: np.zeros(learner.io.META_MAX_BYTES + 1, np.uint8)})
        with pytest.raises(learner.io.FileFormatError, match=f"^{re.escape(repr(str(big_header)))}: its header"):
            learner.io.load_examples(big_header)
        big_member = tmp_path / "member.npz"
        header = {"format": "attention-examples", "schema_version": learner.io.SCHEMA_VERSION,
                  "arrays": {"X": {"shape": [1]}, "Y": {"shape": [1]}}}
        np.savez(big_member, X=np.ones(10**5), Y=np.ones(1),
                 **{learner.io._META: np.frombuffer(json.dumps(header).encode(), np.uint8)})
        with pytest.raises(learner.io.FileFormatError, match=f"^{re.escape(repr(str(big_member)))}: array 'X'"):
            learner.io.load_examples(big_member)

    def test_max_d_reads_d_from_the_last_axis_of_thetas(self, tmp_path):
        """A header declaring thetas (1, 2, 100): d is the last axis, so max_d = 10 refuses it from the header
        (a reader taking another axis would let it through to the layer's own check)."""
        path = learner.io._write_record(tmp_path / "L.npz", learner.io._LAYER,
                                        {"thetas": np.ones((1, 2, 100)), "ws": np.ones((1, 2, 100))}, None)
        with pytest.raises(ValueError, match="holds a layer of d = 100 .m = 1., more than the d = 10"):
            learner.io.load_layer(path, max_d=10)

    def test_only_the_first_bytes_of_a_file_that_is_not_an_archive_are_read(self, tmp_path):
        import tracemalloc

        path = tmp_path / "big.npz"
        path.write_bytes(b"\0" * 2**25)  # 32 MiB that is neither a zip nor a .npy
        tracemalloc.start()
        try:
            with pytest.raises(learner.io.FileFormatError):
                learner.io.load_examples(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 2**22

    @pytest.mark.parametrize("header", [[1, 2], {"format": "attention-examples", "arrays": {"X": 5, "Y": 5}},
                                        {"format": "attention-examples", "schema_version": learner.io.SCHEMA_VERSION,
                                         "arrays": {"X": 5, "Y": 5}}],
                             ids=["a list", "arrays entries not objects", "entries not objects, schema right"])
    def test_a_header_of_the_wrong_shape_is_a_format_error(self, tmp_path, header):
        path = tmp_path / "h.npz"
        X = np.ones((2, 3, 4))
        np.savez(path, X=X, Y=X, **{learner.io._META: np.frombuffer(json.dumps(header).encode(), np.uint8)})
        with pytest.raises(learner.io.FileFormatError):
            learner.io.load_examples(path)

    def test_a_user_file_is_named_as_given(self, tmp_path):
        (tmp_path / "x.json").write_text("a user's notes")
        with pytest.raises(ValueError, match=r"got out='[^']*x.json'\."):
            learner.io.check_writable_file("out", tmp_path / "x.json")


@pytest.mark.parametrize("value", [[1, 2], "text", 3, None], ids=repr)
def test_json_that_is_not_an_object_is_never_ours(tmp_path, value):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(value))
    assert learner.io.foreign_file(path) is not None
    learner.io.write_json(tmp_path / "ours.json", {"a": 1})
    assert learner.io.foreign_file(tmp_path / "ours.json") is None  # control


class TestJsonLimits:
    def test_depth_counts_dict_and_list_levels_from_zero(self):
        assert learner.io._depth(3) == 0 and learner.io._depth([]) == 1 and learner.io._depth({"a": [[1]]}) == 3
        assert learner.io._depth({"a": {"b": 1}, "c": [1]}) == 2
        assert learner.io._depth([{"a": [1, {"b": []}]}]) == 5

    def test_a_file_of_exactly_the_byte_cap_is_read_one_byte_more_is_refused(self, tmp_path, monkeypatch):
        monkeypatch.setattr(learner.io, "MAX_JSON_BYTES", 1000)
        exact = tmp_path / "exact.json"
        exact.write_text('"' + "x" * 998 + '"')
        assert len(learner.io.read_json(exact)) == 998
        exact.write_text('"' + "x" * 999 + '"')
        with pytest.raises(learner.io.FileFormatError, match="larger than"):
            learner.io.read_json(exact)

    def test_a_record_read_back_and_written_again_is_still_ours(self, tmp_path):
        path = learner.io.write_json(tmp_path / "r.json", {"a": 1})
        again = learner.io.write_json(tmp_path / "r.json", learner.io.read_json(path) | {"b": 2})
        assert learner.io.foreign_file(again) is None


class TestFolderMessagesNameWhatWasGiven:
    def test_a_file_given_as_a_folder(self, tmp_path):
        (tmp_path / "f").write_text("x")
        with pytest.raises(ValueError, match=r"`out` must be a directory; got out='[^']*f', which is a file"):
            learner.io.check_writable_dir("out", tmp_path / "f")

    @pytest.mark.parametrize("check, kind", [("check_writable_dir", "directory"), ("check_writable_file", "file")])
    def test_a_folder_that_cannot_be_written(self, tmp_path, monkeypatch, check, kind):
        # As root every folder takes files, so the refusal is staged where the probe opens its file.
        import tempfile

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(tempfile, "NamedTemporaryFile", refuse)
        target = tmp_path / ("new" if kind == "directory" else "new.json")
        with pytest.raises(ValueError, match=rf"`out` {kind} cannot be written: .* got out='[^']*{target.name}'\."):
            getattr(learner.io, check)("out", target)


_UNPICKLED: list[str] = []


def _note_unpickled(tag):
    _UNPICKLED.append(tag)
    return tag


class _Watched:
    """An object whose unpickling is seen (it calls ``_note_unpickled``)."""

    def __reduce__(self):
        return _note_unpickled, ("unpickled",)
