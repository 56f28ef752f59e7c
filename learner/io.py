"""Saving and loading layers and labelled examples: ``.npz`` without pickle, JSON metadata.

File layout (schema version 1): a NumPy ``.npz`` archive holding float64 arrays
and one uint8 array ``__meta__`` with UTF-8 JSON::

    {"format": "attention-layer" | "attention-examples", "schema_version": 1,
     "arrays": {name: {"shape": [...], "sha256": "..."}}, "metadata": {...}, "created_by": "..."}

Files are written to a temporary file in the target directory, flushed to disk
and renamed over the target, so a crash never leaves a half-written file. On
loading, archives are opened with ``allow_pickle=False`` and every array is
checked against the shape and SHA-256 recorded in the metadata; anything wrong
raises :class:`FileFormatError` and nothing half-loaded is returned.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
from numpy.typing import ArrayLike

from ._version import __version__
from .errors import FileFormatError, NotRegularFile
from .hints import PathLike
from .layer import AttentionLayer
from .validation import available_memory, check_real_array

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MARK_FIELD",
    "SCHEMA_VERSION",
    "TOOL",
    "atomic_write",
    "NAME_MAX",
    "check_name_length",
    "check_path",
    "check_writable_dir",
    "check_writable_file",
    "foreign_file",
    "json_safe",
    "load_examples",
    "load_layer",
    "open_regular",
    "read_json",
    "read_metadata",
    "save_figure",
    "versions",
    "save_examples",
    "save_layer",
    "special_kind",
    "write_json",
    "write_target",
]

#: Version of the layout of the files written here (ours: the first layout; a new layout gets a new number).
SCHEMA_VERSION = 1
_META = "__meta__"
_LAYER = "attention-layer"
_EXAMPLES = "attention-examples"


def versions() -> dict[str, str]:
    """The versions a record is written with: learner, numpy, scipy, Python and the machine's architecture.

    Returns
    -------
    dict of str to str
        Keys ``"learner"``, ``"numpy"``, ``"scipy"``, ``"python"`` and ``"machine"`` (``platform.machine()``).
    """
    import platform

    import scipy

    return {"learner": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "python": platform.python_version(), "machine": platform.machine()}


def _version():
    return f"learner {__version__}"


def _probe(directory, name, value, what):
    """Create and remove a file in ``directory``: the one test of writability that holds for root and immutable dirs."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".write-probe-"):
            pass
    except OSError as exc:
        raise ValueError(f"`{name}` {what} cannot be written: {directory} is not writable "
                         f"({exc.strerror or exc}); got {name}={value!r}.") from None


#: The longest file name (one path component) in bytes that the file systems the toolkit meets accept (ours:
#: Linux's NAME_MAX and macOS's; a longer name fails only when the file is opened, after the work).
NAME_MAX = 255


def check_name_length(name: str, path: PathLike) -> None:
    """ValueError naming ``name`` when a component of ``path`` is longer than :data:`NAME_MAX` bytes.

    Parameters
    ----------
    name : str
        The parameter or option that gave the path, for the message.
    path : str or os.PathLike
        The path; each component is measured in bytes of the file system's encoding.

    Raises
    ------
    ValueError
        If a component is longer than :data:`NAME_MAX` bytes.
    """
    for part in Path(path).parts:
        size = len(os.fsencode(part))
        if size > NAME_MAX:
            raise ValueError(f"`{name}` names a file or folder {size} bytes long ({part[:24]!r}…); file systems "
                             f"take at most {NAME_MAX} bytes per name; got {name} of {len(str(path))} characters.")


def check_path(name: str, path: PathLike) -> None:
    """ValueError naming ``name`` when ``path`` cannot be followed: a name in it too long, or a symlink loop.

    A loop (``a.json → b.json → a.json``, or a folder on the way that is one) makes every later use of the path
    fail with an OSError; checked here, it is one line naming the option.

    Parameters
    ----------
    name : str
        The parameter or option that gave the path, for the message.
    path : str or os.PathLike
        The path; it need not exist.

    Raises
    ------
    ValueError
        If a component is longer than :data:`NAME_MAX` bytes, or following ``path`` runs into a symlink loop.
    """
    check_name_length(name, path)
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            return  # missing or unreadable: the reader or writer says so
        raise ValueError(f"`{name}` cannot be followed: {str(path)!r} runs into a symlink loop (a link that leads "
                         f"back to itself); got {name}={str(path)!r}. Remove the loop or give another path.") from None


def check_writable_dir(name: str, path: PathLike) -> Path:
    """``path`` as a Path to a directory that takes files, or can be created where files can be; else ValueError.

    For the outputs of a long command: checked before it starts, so a bad path costs nothing.
    Nothing is created: a missing directory's nearest existing ancestor must be a directory
    that takes files. The ValueError names ``name`` and the path.

    Parameters
    ----------
    name : str
        The parameter or option that gave the path, for the message.
    path : str or os.PathLike
        The directory.

    Returns
    -------
    pathlib.Path
        ``path`` as a Path.

    Raises
    ------
    ValueError
        If ``path`` is empty, names a file or a special file, has a name too long, or its nearest existing
        ancestor is not a directory that takes files.
    """
    value = path
    if path is None or not str(path).strip():
        raise ValueError(f"`{name}` must name a directory; got {name}={value!r}.")
    check_path(name, path)
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"`{name}` must be a directory; got {name}={str(value)!r}, which is "
                         f"{special_kind(path) or 'a file'}.")
    existing = path.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"`{name}` cannot be created: {str(existing)!r} is a file where a directory is expected; "
                         f"got {name}={str(value)!r}.")
    _probe(existing, name, str(value), "directory")
    return path


def check_writable_file(name: str, path: PathLike, *, given: PathLike | None = None) -> Path:
    """``path`` as a Path whose directory exists and takes files (the file itself is written later, atomically).

    Parameters
    ----------
    name : str
        The parameter or option that gave the path, for the message.
    path : str or os.PathLike
        The file to be written; a symlink is checked at its target (:func:`write_target`).
    given : str or os.PathLike, optional
        What the user gave, for the message, when it is not ``path`` itself (a folder option whose files are
        checked one by one); default ``path``.

    Returns
    -------
    pathlib.Path
        ``path`` as a Path.

    Raises
    ------
    ValueError
        Naming ``name``, if ``path`` is empty, a directory, a special file, a symlink loop, read-only, a file the
        toolkit did not write (:func:`foreign_file`), has a name too long, or its directory is missing or does not
        take files.
    """
    value = path if given is None else given
    if path is None or not str(path).strip():
        raise ValueError(f"`{name}` must name a file; got {name}={value!r}.")
    check_path(name, path)
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"`{name}` must be a file, not a directory; got {name}={str(value)!r}.")
    kind = special_kind(path)
    if kind is not None:
        raise ValueError(f"`{name}` must name a regular file or a new one; got {name}={str(value)!r}, which is "
                         f"{kind} (left untouched).")
    try:
        target, _ = write_target(path)
    except ValueError as exc:
        raise ValueError(f"`{name}` {str(exc).rstrip('.')}; got {name}={str(value)!r}.") from None
    parent = target.parent
    if not parent.is_dir():
        raise ValueError(f"`{name}`'s directory {str(parent)!r} does not exist or is not a directory; "
                         f"got {name}={str(value)!r}.")
    what = foreign_file(target)
    if what is not None:
        raise ValueError(f"`{name}` would replace {str(target)!r}, {what}: only a file the toolkit wrote (or a new "
                         f"name) is replaced; got {name}={str(value)!r}. Give another name or move the file away.")
    _probe(parent, name, str(value), "file")
    return path


#: The name the toolkit signs its files with (ours): the key of a JSON object's mark, the keyword of a PNG's
#: text chunk, the first word of the comment that marks a PDF or an SVG (:func:`foreign_file`).
TOOL = "provable-attention"
#: The top-level field of every JSON object :func:`write_json` writes (ours): who wrote the file and the SHA-256
#: of the rest of it, so a file is known as the toolkit's by checking the digest, not by its look.
MARK_FIELD = "written_by"
#: The field with which a study's run record vouches for its own content (``learner.sweep.records.DIGEST_FIELD``,
#: named here because the study sits above this module): a record that carries it gets no second mark.
_RECORD_DIGEST = "record_sha256"
#: The largest file whose mark is checked (ours): the toolkit's records and figures are far smaller; a larger
#: file is not taken for one of them.
_MAX_MARKED_BYTES = 256 << 20
_PNG = b"\x89PNG\r\n\x1a\n"
#: The comment that marks a PDF or an SVG, around ``TOOL <version> sha256:<hex>``: a PDF comment line just
#: before the closing ``%%EOF`` (after ``startxref``, so no offset moves), an XML comment after the root element.
_TRAILERS = {"pdf": (b"%", b"\n"), "svg": (b"<!-- ", b" -->\n")}


def _content_digest(value):
    """The SHA-256 of ``value`` as canonical JSON: sorted keys, no spaces, :func:`json_safe`'s values."""
    blob = json.dumps(json_safe(value), sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _json_marked(value):
    """Whether a parsed JSON value is one the toolkit wrote: its mark (or a run record's own digest) matches."""
    if not isinstance(value, dict):
        return False
    mark = value.get(MARK_FIELD)
    if mark is not None:
        rest = {k: v for k, v in value.items() if k != MARK_FIELD}
        return isinstance(mark, dict) and mark.get("tool") == TOOL and mark.get("sha256") == _content_digest(rest)
    stored = value.get(_RECORD_DIGEST)
    return isinstance(stored, str) and stored == _content_digest({k: v for k, v in value.items()
                                                                  if k != _RECORD_DIGEST})


def _mark_text(blob):
    return f"{TOOL} {__version__} sha256:{hashlib.sha256(blob).hexdigest()}".encode("ascii")


def _png_chunks(blob):
    """``(start, end, type, data)`` of each chunk of a PNG, in order; ValueError if the chunks do not parse."""
    pos, chunks = len(_PNG), []
    while pos < len(blob):
        if pos + 12 > len(blob):
            raise ValueError("truncated chunk")
        size = int.from_bytes(blob[pos:pos + 4], "big")
        end = pos + 12 + size
        if end > len(blob):
            raise ValueError("truncated chunk")
        chunks.append((pos, end, blob[pos + 4:pos + 8], blob[pos + 8:pos + 8 + size]))
        pos = end
    return chunks


def _figure_format(head):
    """``"png"``, ``"pdf"`` or ``"svg"`` from a file's first bytes; None for anything else."""
    if head.startswith(_PNG):
        return "png"
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.lstrip().startswith((b"<?xml", b"<svg")) and b"<svg" in head:
        return "svg"
    return None


def _mark_figure(blob, fmt):
    """``blob`` with the toolkit's mark: a PNG ``tEXt`` chunk before ``IEND``, or a comment near its end."""
    if fmt == "png":
        start = _png_chunks(blob)[-1][0]  # IEND, the last chunk
        data = TOOL.encode("ascii") + b"\0" + _mark_text(blob)
        chunk = len(data).to_bytes(4, "big") + b"tEXt" + data
        return blob[:start] + chunk + zlib.crc32(b"tEXt" + data).to_bytes(4, "big") + blob[start:]
    head, tail = _TRAILERS[fmt]
    blob += b"" if blob.endswith(b"\n") else b"\n"
    # A PDF's last line stays its %%EOF: the comment goes just before it (after startxref: no offset moves).
    at = blob.rfind(b"%%EOF") if fmt == "pdf" else -1
    at = len(blob) if at <= 0 or blob[at - 1:at] != b"\n" else at
    return blob[:at] + head + _mark_text(blob) + tail + blob[at:]


def _figure_marked(blob, fmt):
    """Whether ``blob`` carries the toolkit's mark and the SHA-256 in it matches the rest of the file."""
    if fmt == "png":
        try:
            marks = [(s, e, d) for s, e, kind, d in _png_chunks(blob)
                     if kind == b"tEXt" and d.startswith(TOOL.encode("ascii") + b"\0")]
        except ValueError:
            return False
        if len(marks) != 1:
            return False
        start, end, data = marks[0]
        text, rest = data[len(TOOL) + 1:], blob[:start] + blob[end:]
    else:
        head, tail = _TRAILERS[fmt]
        at = blob.rfind(b"\n" + head + TOOL.encode("ascii") + b" ")
        end = blob.find(tail, at + 1 + len(head)) if at >= 0 else -1
        if end < 0:
            return False
        text, rest = blob[at + 1 + len(head):end], blob[:at + 1] + blob[end + len(tail):]
    found = text.rsplit(b" sha256:", 1)
    return (len(found) == 2 and text.startswith(TOOL.encode("ascii") + b" ")
            and found[1] == hashlib.sha256(rest).hexdigest().encode("ascii"))


def _npz_ours(path):
    """Whether ``path`` is a layer or examples archive this module wrote: header, schema and every array's SHA-256."""
    try:
        _, meta = _read(path, (_LAYER, _EXAMPLES))
    except (OSError, FileFormatError):
        return False
    return str(meta.get("created_by", "")).startswith("learner ")


def foreign_file(path: PathLike) -> str | None:
    """Why an existing, non-empty regular file at ``path`` is not one the toolkit wrote, or None.

    A file is the toolkit's only when it carries a mark the toolkit wrote and the mark checks out (ours): a JSON
    object whose :data:`MARK_FIELD` holds the SHA-256 of the rest of it (:func:`write_json`), or a study's run
    record whose ``record_sha256`` matches its content; a PNG, PDF or SVG figure with the toolkit's mark and the
    SHA-256 of the rest of the file (:func:`atomic_write` marks every figure it writes); a layer or examples
    ``.npz`` whose header names the toolkit and whose every array matches its SHA-256. A file's look (its
    extension, its first bytes, a familiar key) never makes it ours, and a file of ours edited since is not ours
    any more: someone's work is in it. Torch files and Markdown carry no mark, so no output option replaces them.

    Parameters
    ----------
    path : str or os.PathLike
        The file an output would replace.

    Returns
    -------
    str or None
        Why the file is not the toolkit's, in words for a message; None when it may be replaced (or is missing,
        empty, or unreadable: the writer's own checks say so).

    See Also
    --------
    check_writable_file : The check of an output option, which refuses such a file.

    Notes
    -----
    Inside a study's folder the study's claim (its ``study.json``, checked before the study writes) vouches for
    the files it writes there, its summaries and figures, marked or not (committed studies written before the
    marks existed re-summarise); this function judges the files a user names.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     ours = write_json(os.path.join(tmp, "run.json"), {"parameters": {"m": 2}})
    ...     with open(os.path.join(tmp, "mine.json"), "w") as fh:
    ...         _ = fh.write('{"parameters": {"m": 2}}')
    ...     print(foreign_file(ours), "|", foreign_file(os.path.join(tmp, "mine.json")))
    None | a JSON file the toolkit did not write (no valid `written_by` mark, or edited since)
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode) or os.path.getsize(path) == 0:
            return None
        size = os.path.getsize(path)
        with open_regular(path, "file") as fh:
            head = fh.read(4096)
            fmt = _figure_format(head)
            if fmt is not None and size <= _MAX_MARKED_BYTES:
                blob = head + fh.read()
                return None if _figure_marked(blob, fmt) else (f"a {fmt.upper()} figure the toolkit did not write "
                                                               "(no valid provable-attention mark, or edited since)")
            if fmt is None and head.startswith(b"PK\x03\x04"):
                return None if _npz_ours(path) else ("a zip archive the toolkit did not write as a layer or "
                                                     "examples file (only those are replaced)")
            blob = head + fh.read(MAX_JSON_BYTES + 1 - len(head))
    except (OSError, FileFormatError):
        return None  # missing or unreadable: the writer's own checks say so
    if len(blob) > MAX_JSON_BYTES:  # more than read_json reads: not a JSON file of the toolkit's
        return (f"a file the toolkit did not write (larger than the {MAX_JSON_BYTES:,} bytes of its JSON files, and "
                "not a layer, examples file or figure of its)")
    try:
        value = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "a file the toolkit did not write (not JSON, nor a layer, examples file or figure of the toolkit's)"
    if _json_marked(value):
        return None
    return f"a JSON file the toolkit did not write (no valid `{MARK_FIELD}` mark, or edited since)"


def special_kind(path: PathLike) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory ("a FIFO", "a character
    device", …, following symlinks); None otherwise. Outputs never replace such a file: it is not ours.

    Parameters
    ----------
    path : str or os.PathLike
        The path.

    Returns
    -------
    str or None
        ``"a FIFO"``, ``"a character device"``, ``"a block device"``, ``"a socket"`` or ``"not a regular file"``;
        None for a regular file, a directory, or a path that does not exist.
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((kind for test, kind in kinds if test(mode)), "not a regular file")


#: The largest JSON file a reader takes (ours: the toolkit's records and studies are kilobytes to a few
#: megabytes; 64 MiB stops a reader from filling the memory with a file that is not one).
MAX_JSON_BYTES = 64 << 20
#: The deepest nesting of arrays and objects a JSON file may have (ours: the toolkit's records nest fewer than
#: ten levels; 100 stays far below Python's recursion limit, so later code that walks a record cannot overflow).
MAX_JSON_DEPTH = 100


def open_regular(path: PathLike, what: str = "file") -> BinaryIO:
    """``path`` opened for reading in binary, or :class:`FileFormatError` naming it when it is not a regular file.

    The file is opened without blocking and checked on the open descriptor, so a FIFO, a device or a socket
    is refused by name and never waited on (opening a FIFO for reading otherwise blocks until a writer
    comes): :class:`~learner.errors.NotRegularFile`, a FileFormatError. OSErrors (missing, unreadable) pass
    through.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str, default "file"
        The kind of file expected, in the messages (``"toolkit .npz file"``).

    Returns
    -------
    file object
        The file, open for reading in binary (blocking); the caller closes it.

    Raises
    ------
    FileFormatError
        If ``path`` is not a regular file (:class:`~learner.errors.NotRegularFile`) or a name in it is too long.
    OSError
        If it is missing or unreadable.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        raise FileFormatError(f"{str(path)[:60]!r}… cannot be a {what}: a name in it is longer than {NAME_MAX} "
                              "bytes, which file systems refuse.") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else special_kind(path) or "not a regular file"
            raise NotRegularFile(f"{str(path)!r} is {kind}, not a {what}: only regular files are read.")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _depth(value: object) -> int:
    """The nesting depth of a parsed JSON value (a scalar is 0, ``[]`` 1, ``[[]]`` 2), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level + isinstance(item, (dict, list)))
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def read_json(path: PathLike, what: str = "JSON file") -> Any:
    """The JSON value in ``path``, or :class:`FileFormatError` naming the file and what is wrong with it.

    Only a regular file is read (:func:`open_regular`), of at most :data:`MAX_JSON_BYTES` bytes, UTF-8, and
    nested at most :data:`MAX_JSON_DEPTH` levels; ``what`` names the kind of file in the messages. An
    OSError (missing, unreadable) passes through.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str, default "JSON file"
        The kind of file expected, in the messages (``"study record"``).

    Returns
    -------
    object
        The parsed value (a dict for every record the toolkit writes).

    Raises
    ------
    FileFormatError
        If the file is not regular, too large, not UTF-8 JSON, or nested too deep.
    OSError
        If it is missing or unreadable.

    See Also
    --------
    write_json : Write a record that this reads back.
    """
    with open_regular(path, what) as fh:
        blob = fh.read(MAX_JSON_BYTES + 1)
    if len(blob) > MAX_JSON_BYTES:
        raise FileFormatError(f"{str(path)!r} is larger than {MAX_JSON_BYTES >> 20} MiB, too large for a {what}.")
    try:
        value = json.loads(blob.decode("utf-8"))
    except RecursionError:
        raise FileFormatError(f"{str(path)!r} is nested deeper than a {what} can be (JSON nested past Python's "
                              "recursion limit).") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FileFormatError(f"{str(path)!r} is not a readable {what} ({type(exc).__name__}: {exc}).") from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise FileFormatError(f"{str(path)!r} is nested more than {MAX_JSON_DEPTH} levels deep, deeper than any "
                              f"{what} the toolkit writes.")
    return value


def write_target(path: PathLike) -> tuple[Path, int | None]:
    """Where a write to ``path`` lands and the permission bits to give it: ``(target, mode)``.

    A symlink is written through (the target is its resolved path; the link stays a link), an existing regular
    file keeps its permission bits (``mode``), and a new file gets None (0644 when written). ValueError, before
    anything is written, for a path that is a directory, a FIFO, a device or a socket (not ours), or an existing
    file without its owner's write permission (read-only: the toolkit does not replace it, root or not).

    Parameters
    ----------
    path : str or os.PathLike
        Where the caller asked to write.

    Returns
    -------
    target : pathlib.Path
        The path written: ``path``, or a symlink's resolved target.
    mode : int or None
        The existing file's permission bits, which the new file keeps; None for a new file.

    Raises
    ------
    ValueError
        If the target is a directory, a FIFO, a device, a socket or read-only, a name in ``path`` is too long, or
        ``path`` runs into a symlink loop.
    """
    check_name_length("path", path)
    try:
        check_path("path", path)
    except ValueError:
        raise ValueError(f"cannot write {str(path)!r}: it runs into a symlink loop (a link that leads back to "
                         "itself); remove the loop or give another path.") from None
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    through = f" (the target of the symlink {str(path)!r})" if target != path else ""
    if target.is_dir():
        raise ValueError(f"cannot write {str(target)!r}{through}: it is a directory; give a file name.")
    kind = special_kind(target)
    if kind is not None:
        raise ValueError(f"cannot write {str(target)!r}{through}: it exists and is {kind}, not a regular file; "
                         "it is left untouched (give the name of a regular file or a new one).")
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except (FileNotFoundError, NotADirectoryError):  # a new file (its directory is checked by the writer)
        return target, None
    if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        raise ValueError(f"cannot write {str(target)!r}{through}: it is read-only (mode {mode:04o}); it is left "
                         "untouched (make it writable or give another name).")
    return target, mode


def atomic_write(path: PathLike, write: Callable[[BinaryIO], object]) -> None:
    """Call ``write(fh)`` on a temporary file beside ``path``, fsync it, and rename it over ``path``.

    What may be replaced is decided by :func:`write_target`, before anything is written: a symlink is written
    through to its target, an existing file keeps its permission bits, and a directory, a FIFO, a device, a
    socket or a read-only file is refused (ValueError) and left as it is.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    write : callable
        Called once with the temporary file, open for writing in binary; it writes the whole content.

    Raises
    ------
    ValueError
        If :func:`write_target` refuses the path.
    FileNotFoundError
        If the file's directory does not exist.

    Notes
    -----
    On any exception (``write``'s own, or an interruption) the temporary file is removed and ``path`` is left
    as it was. A PNG, PDF or SVG figure gets the toolkit's mark before the rename (:func:`foreign_file`): a
    ``tEXt`` chunk ``provable-attention`` in a PNG, a comment at the end of a PDF or an SVG, each with the SHA-256
    of the rest of the file, so the toolkit knows its figures and replaces no one else's.
    """
    path, mode = write_target(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot write {str(path)!r}: its directory {str(path.parent)!r} does not exist.")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes owner-only files: a new result is meant to be shared (0644), a replaced file keeps its bits
        os.chmod(tmp, 0o644 if mode is None else mode)
        with os.fdopen(fd, "w+b") as fh:
            write(fh)
            fh.flush()
            _mark_written(fh)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mark_written(fh):
    """Mark the figure just written to ``fh`` (open for reading and writing), if it is one; else leave it."""
    fh.seek(0)
    fmt = _figure_format(fh.read(4096))
    if fmt is None or fh.seek(0, os.SEEK_END) > _MAX_MARKED_BYTES:
        return
    fh.seek(0)
    marked = _mark_figure(fh.read(), fmt)
    fh.seek(0)
    fh.write(marked)
    fh.truncate()
    fh.flush()


def save_figure(fig: Figure, path: PathLike, **kwargs: Any) -> Path:
    """Save a matplotlib figure to ``path`` atomically (format from the suffix, png without one).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or os.PathLike
        The file; its suffix (``.png``, ``.pdf``, ``.svg``, ...) gives the format.
    **kwargs : object
        Passed to ``fig.savefig`` (``dpi``, ``bbox_inches``, ...).

    Returns
    -------
    pathlib.Path
        ``path`` as a Path.
    """
    path = Path(path)
    fmt = path.suffix[1:].lower() or "png"
    atomic_write(path, lambda fh: fig.savefig(fh, format=fmt, **kwargs))
    return path


def write_json(path: PathLike, record: object) -> Path:
    """Write a JSON-serialisable ``record`` to ``path`` atomically (NaN and inf become null).

    The record passes through :func:`json_safe` first; the file is indented by two spaces, its keys sorted, and
    written by :func:`atomic_write` (a crash never leaves half a file). A dict gets the toolkit's mark, the field
    :data:`MARK_FIELD`: ``{"tool": "provable-attention", "version": ..., "sha256": ...}``, the SHA-256 of the rest
    of the record as canonical JSON (sorted keys, no spaces), by which :func:`foreign_file` knows the file as the
    toolkit's (a mark the record brings is replaced). A study's run record, which carries its own digest
    (``record_sha256``), is marked by it and gets no second mark.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    record : object
        Dicts, lists, tuples, strings, numbers, booleans, None, numpy scalars and arrays.

    Returns
    -------
    pathlib.Path
        ``path`` as a Path.

    Raises
    ------
    TypeError
        If ``record`` holds something JSON cannot represent (a set, an arbitrary object).
    ValueError
        If :func:`write_target` refuses the path.

    See Also
    --------
    read_json : Read it back, with limits on size and nesting.
    json_safe : The conversion applied first.
    save_layer : Layers go to ``.npz`` files instead.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = write_json(os.path.join(tmp, "run.json"), {"error": np.float64(0.5), "sigma": float("nan")})
    ...     record = read_json(path)
    >>> record["error"], record["sigma"], record["written_by"]["tool"]
    (0.5, None, 'provable-attention')
    """
    value = json_safe(record)
    if isinstance(value, dict):
        value.pop(MARK_FIELD, None)  # a record read back and written again gets a fresh mark
        if _RECORD_DIGEST not in value:  # a study's run record vouches for itself with its own digest
            value[MARK_FIELD] = {"tool": TOOL, "version": __version__, "sha256": _content_digest(value)}
    blob = json.dumps(value, indent=2, sort_keys=True, allow_nan=False).encode("utf-8")
    atomic_write(path, lambda fh: fh.write(blob))
    return Path(path)


def json_safe(value: object) -> Any:
    """Replace non-finite floats by None and numpy scalars/arrays by Python values.

    Parameters
    ----------
    value : object
        A record: dicts, lists and tuples are converted entry by entry.

    Returns
    -------
    object
        A copy ``json.dumps`` takes with ``allow_nan=False``: dict keys as strings, tuples and arrays as lists,
        numpy scalars as Python ones, NaN and ±inf as None; anything else unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> json_safe({1: np.arange(2), "x": np.inf, "t": (np.float32(0.5),)})
    {'1': [0, 1], 'x': None, 't': [0.5]}
    """
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _write_record(path, kind, arrays, metadata):
    path = Path(path)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise TypeError(f"`metadata` must be a dict; got {type(metadata).__name__}.")
    # float64 arrays; typed Any for np.savez's stub, which reads a ** mapping's values as its `allow_pickle` too
    payload: dict[str, Any] = {name: np.ascontiguousarray(a, dtype=np.float64) for name, a in arrays.items()}
    meta = {
        "format": kind,
        "schema_version": SCHEMA_VERSION,
        "created_by": _version(),
        "arrays": {
            name: {"shape": list(a.shape), "sha256": hashlib.sha256(a.tobytes()).hexdigest()}
            for name, a in payload.items()
        },
        "metadata": metadata,
    }
    try:
        blob = json.dumps(meta, allow_nan=False, sort_keys=True).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"`metadata` must be JSON-serialisable (no NaN/inf): {exc}") from exc
    payload[_META] = np.frombuffer(blob, dtype=np.uint8)
    atomic_write(path, lambda fh: np.savez(fh, **payload))
    return path


#: The largest JSON header a toolkit file may have (ours): headers hold shapes, digests and a run's metadata, a few
#: KB; a larger one is damaged or a compression bomb, refused before it is inflated.
META_MAX_BYTES = 16 * 2**20
#: Room for an .npy member's own header beyond its data (ours: numpy pads it to a multiple of 64 bytes).
_NPY_HEADER_ROOM = 4096


def _check_sizes(path, archive, meta):
    """Before anything is inflated: the header's size (``meta`` None), or each array member's size as the zip
    directory declares it against the shape the header declares, and their total against the free memory."""
    sizes = {name[:-4]: info.file_size for name, info in archive.zip.NameToInfo.items() if name.endswith(".npy")}
    if meta is None:
        if sizes.get(_META, 0) > META_MAX_BYTES:
            raise FileFormatError(f"{str(path)!r}: its header inflates to {sizes[_META]:,} bytes, more than the "
                                  f"{META_MAX_BYTES:,} a toolkit file's header takes (ours); damaged or not ours.")
        return
    declared = meta.get("arrays") if isinstance(meta, dict) else None
    if not isinstance(declared, dict):
        return  # the checks after reading name the problem
    total = 0
    for name, size in sizes.items():
        shape = declared.get(name, {}).get("shape") if isinstance(declared.get(name), dict) else None
        if name == _META or not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
            continue
        expected = 8 * int(np.prod(shape, dtype=object))
        if size > expected + _NPY_HEADER_ROOM:
            raise FileFormatError(f"{str(path)!r}: array {name!r} inflates to {size:,} bytes; its header declares "
                                  f"float64 of shape {tuple(shape)}, {expected:,} bytes.")
        total += size
    free = available_memory()
    if free is not None and total > free:
        raise _Refused(f"{str(path)!r} holds arrays of {total:,} bytes once inflated, more than the {free:,} bytes of "
                       "memory this machine has free.")


class _Refused(ValueError):
    """A file refused from its header, before its arrays are inflated (not a damaged file)."""


def _read(path, kinds, limit=None):
    """Return (arrays, meta) from a file whose format is one of ``kinds``, verified; ``limit(meta)`` may refuse
    the file from its header, before its arrays are inflated."""
    path = Path(path)
    if path.is_dir():
        raise FileFormatError(f"{str(path)!r} is a directory, not a toolkit .npz file.")
    kind = special_kind(path)
    if kind is not None:  # never opened: reading a FIFO would block
        raise FileFormatError(f"{str(path)!r} is {kind}, not a toolkit .npz file.")
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    # Open the file ourselves: np.load(path) leaks its handle when zipfile rejects the archive.
    with open_regular(path, "toolkit .npz file") as fh:
        head = fh.read(6)
        fh.seek(0)
        # An .npz is a zip archive and an .npy starts with its magic; anything else would reach
        # np.load's pickle branch, whose refusal ("pickled data") would misname the problem.
        if not head.startswith((b"PK\x03\x04", b"\x93NUMPY")):
            raise FileFormatError(f"{str(path)!r} is not a toolkit .npz file (not a zip archive).")
        try:
            archive = np.load(fh, allow_pickle=False)
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise FileFormatError(f"{str(path)!r} is a bare .npy array, not a toolkit .npz file.")
            with archive:
                if _META not in archive.files:
                    raise FileFormatError(f"{str(path)!r} is not a toolkit file (no {_META} entry).")
                _check_sizes(path, archive, None)  # the header's own size, before it is inflated
                meta = json.loads(archive[_META].tobytes().decode("utf-8"))
                _check_sizes(path, archive, meta)  # every array's, from the header, before any is inflated
                if limit is not None:
                    try:
                        limit(meta)
                    except ValueError as exc:
                        raise _Refused(str(exc)) from None
                arrays = {name: archive[name] for name in archive.files if name != _META}
        except (FileFormatError, _Refused):
            raise
        except Exception as exc:  # zipfile/npy parsing fails in many ways on damaged bytes
            raise FileFormatError(f"{str(path)!r} is damaged or not a toolkit .npz file: {exc}") from exc
    found = meta.get("format") if isinstance(meta, dict) else None
    if found not in kinds:
        raise FileFormatError(f"{str(path)!r} holds format {found!r}; expected {' or '.join(kinds)}.")
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise FileFormatError(
            f"{str(path)!r} has schema_version {meta.get('schema_version')!r}; "
            f"this version reads {SCHEMA_VERSION}."
        )
    declared = meta.get("arrays")
    if not isinstance(declared, dict) or set(declared) != set(arrays):
        raise FileFormatError(
            f"{str(path)!r}: arrays {sorted(arrays)} do not match the metadata "
            f"{sorted(declared) if isinstance(declared, dict) else declared!r}."
        )
    for name, arr in arrays.items():
        info = declared[name] if isinstance(declared[name], dict) else {}
        if arr.dtype != np.float64 or list(arr.shape) != info.get("shape"):
            raise FileFormatError(
                f"{str(path)!r}: array {name!r} has dtype {arr.dtype} and shape {arr.shape}; "
                f"metadata says float64 and {info.get('shape')}."
            )
        if hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest() != info.get("sha256"):
            raise FileFormatError(f"{str(path)!r}: array {name!r} fails its SHA-256 check (corrupted).")
    return arrays, meta


def save_layer(path: PathLike, layer: AttentionLayer, *, metadata: dict[str, Any] | None = None) -> Path:
    """Write ``layer`` (and a JSON-serialisable ``metadata`` dict) to ``path`` atomically.

    The file is an ``.npz`` archive of the arrays ``thetas`` and ``ws`` and a JSON header with each array's shape
    and SHA-256 (the module's layout, schema version :data:`SCHEMA_VERSION`); no pickle.

    Parameters
    ----------
    path : str or os.PathLike
        The file (any suffix: ``numpy.savez`` writes to the open file, so none is added).
    layer : AttentionLayer
        The layer.
    metadata : dict, optional
        Anything JSON-serialisable without NaN or inf (a seed, a configuration), stored in the header.

    Returns
    -------
    pathlib.Path
        ``path`` as a Path.

    Raises
    ------
    TypeError
        If ``layer`` is not an :class:`~learner.AttentionLayer` or ``metadata`` not a dict.
    ValueError
        If ``metadata`` is not JSON-serialisable, or :func:`write_target` refuses the path.

    See Also
    --------
    load_layer : Read it back.
    read_metadata : Read the header alone.
    save_examples : The same for labelled examples.
    learner.to_torch : A torch module, for PyTorch's own files.

    Examples
    --------
    >>> import tempfile, os
    >>> from learner import random_layer
    >>> layer = random_layer(2, 4, check=False, rng=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "layer.npz")
    >>> _ = save_layer(path, layer, metadata={"seed": 0})
    >>> bool(np.array_equal(load_layer(path).thetas, layer.thetas))
    True
    """
    if not isinstance(layer, AttentionLayer):
        raise TypeError(f"`layer` must be an AttentionLayer; got {type(layer).__name__}.")
    return _write_record(path, _LAYER, {"thetas": layer.thetas, "ws": layer.ws}, metadata)


def load_layer(path: PathLike, *, max_d: int | None = None) -> AttentionLayer:
    """Read a layer written by :func:`save_layer`.

    Every array's size is checked from the file's header and the archive's directory before it is inflated (a
    small file may inflate to gigabytes): against the shapes declared, the memory free, and ``max_d``.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    max_d : int, optional
        Refuse a layer of a larger token dimension (a command's size limit), before its arrays are read.

    Returns
    -------
    AttentionLayer
        The layer, its arrays verified against the header's shapes and SHA-256 digests.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    FileFormatError
        If the file is damaged, of another kind, or of an unsupported schema.
    ValueError
        If its arrays would not fit in the memory free, or its d exceeds ``max_d``.

    See Also
    --------
    save_layer : Write it.
    read_metadata : The header, with the metadata saved beside the layer.
    learner.load_torch_layer : A layer from a PyTorch file instead.

    Examples
    --------
    >>> import os, tempfile
    >>> from learner import random_layer
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = save_layer(os.path.join(tmp, "layer.npz"), random_layer(2, 4, check=False, rng=0))
    ...     print(load_layer(path))
    AttentionLayer(m=2, d=4)
    """
    def limit(meta):
        shape = ((meta.get("arrays") or {}).get("thetas") or {}).get("shape")
        if max_d is not None and isinstance(shape, list) and len(shape) == 3 and shape[-1] > max_d:
            raise ValueError(f"{str(path)!r} holds a layer of d = {shape[-1]} (m = {shape[0]}), more than the "
                             f"d = {max_d} this command takes; got max_d={max_d}.")

    arrays, _ = _read(path, (_LAYER,), limit)
    if set(arrays) != {"thetas", "ws"}:
        raise FileFormatError(f"{str(path)!r}: a layer file holds arrays thetas and ws; found {sorted(arrays)}.")
    try:
        return AttentionLayer(arrays["thetas"], arrays["ws"])
    except (KeyError, ValueError, TypeError) as exc:
        raise FileFormatError(f"{str(path)!r} does not hold a valid layer: {exc}") from exc


def save_examples(path: PathLike, X: ArrayLike, Y: ArrayLike, *, metadata: dict[str, Any] | None = None) -> Path:
    """Write labelled examples ``X`` (n, k, d) and ``Y = F(X)`` (n, k, d) to ``path`` atomically.

    The same layout as :func:`save_layer`'s, with arrays ``X`` and ``Y``.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    X : array_like, shape (n, k, d)
        The inputs; finite reals.
    Y : array_like, shape (n, k, d)
        Their labels (a layer's outputs, noisy or not); finite reals of ``X``'s shape.
    metadata : dict, optional
        Anything JSON-serialisable without NaN or inf, stored in the header.

    Returns
    -------
    pathlib.Path
        ``path`` as a Path.

    Raises
    ------
    ValueError
        If the arrays are not finite, not 3-D, or of different shapes, if ``metadata`` is not JSON-serialisable,
        or if :func:`write_target` refuses the path.
    TypeError
        If ``metadata`` is not a dict or the arrays are not real.

    See Also
    --------
    load_examples : Read them back.
    learner.ArraySource : Hand saved examples to :func:`learner.learn`.
    learner.LayerOracle : Draw examples from a layer.

    Examples
    --------
    >>> import os, tempfile
    >>> from learner import random_layer, sample_inputs
    >>> layer = random_layer(2, 4, check=False, rng=0)
    >>> X = sample_inputs(5, 2, 4, rng=1)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = save_examples(os.path.join(tmp, "examples.npz"), X, layer(X), metadata={"seed": 1})
    ...     X2, Y2 = load_examples(path)
    >>> X2.shape, bool(np.array_equal(Y2, layer(X)))
    ((5, 2, 4), True)
    """
    X = check_real_array("X", X, ndim=3)
    Y = check_real_array("Y", Y, ndim=3)
    if X.shape != Y.shape:
        raise ValueError(f"`X` and `Y` must have the same shape; got {X.shape} and {Y.shape}.")
    return _write_record(path, _EXAMPLES, {"X": X, "Y": Y}, metadata)


def load_examples(path: PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read ``(X, Y)`` written by :func:`save_examples`.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    X : numpy.ndarray, shape (n, k, d)
        The inputs, float64.
    Y : numpy.ndarray, shape (n, k, d)
        Their labels, float64; both verified against the header's shapes and SHA-256 digests.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    FileFormatError
        If the file is damaged, of another kind, or of an unsupported schema.

    See Also
    --------
    save_examples : Write them.
    learner.ArraySource : The examples as a source for :func:`learner.learn`.
    read_metadata : The header, with the metadata saved beside them.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> X = np.ones((3, 2, 4))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     X2, Y2 = load_examples(save_examples(os.path.join(tmp, "ex.npz"), X, 2 * X))
    >>> X2.shape, float(Y2.max())
    ((3, 2, 4), 2.0)
    """
    arrays, _ = _read(path, (_EXAMPLES,))
    if set(arrays) != {"X", "Y"}:
        raise FileFormatError(f"{str(path)!r}: an examples file holds arrays X and Y; found {sorted(arrays)}.")
    X, Y = arrays["X"], arrays["Y"]
    if X.ndim != 3 or X.shape != Y.shape:
        raise FileFormatError(f"{str(path)!r}: X and Y shapes {X.shape}, {Y.shape} are not (n, k, d) alike.")
    return X, Y


def read_metadata(path: PathLike) -> dict[str, Any]:
    """The JSON header of a toolkit file (format, schema version, arrays, user metadata).

    The whole file is read and verified, as by :func:`load_layer` and :func:`load_examples`.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save_layer` or :func:`save_examples`.

    Returns
    -------
    dict
        ``"format"`` (``"attention-layer"`` or ``"attention-examples"``), ``"schema_version"``, ``"created_by"``
        (the toolkit's version), ``"arrays"`` (each array's shape and SHA-256) and ``"metadata"`` (the dict
        passed when saving, ``{}`` if none).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    FileFormatError
        If the file is damaged, of another kind, or of an unsupported schema.

    See Also
    --------
    save_layer : Writes a layer with its metadata.
    save_examples : Writes examples with their metadata.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     meta = read_metadata(save_examples(os.path.join(tmp, "ex.npz"), np.ones((3, 2, 4)), np.ones((3, 2, 4)),
    ...                                        metadata={"seed": 7}))
    >>> meta["format"], meta["arrays"]["X"]["shape"], meta["metadata"]
    ('attention-examples', [3, 2, 4], {'seed': 7})
    """
    return _read(path, (_LAYER, _EXAMPLES))[1]
