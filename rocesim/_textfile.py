"""Reading whitespace-separated text files line by line, with errors that cite the line."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from collections.abc import Iterator

from .errors import ScenarioError

__all__ = ["Line", "read_lines", "read_text", "decode_utf8", "end_of_file_error", "recording_reads", "note_read"]

# the dicts of the `recording_reads` blocks open in this thread (or task)
_recorders: contextvars.ContextVar[tuple[dict, ...]] = contextvars.ContextVar("rocesim_read_recorders", default=())


@contextlib.contextmanager
def recording_reads():
    """Note every input file read inside the block: yields a dict, absolute path -> SHA-256
    of the bytes read.  Files read through this module are noted, and so is anything a
    reader passes to :func:`note_read` (a sweep records what each run was made from)."""
    files: dict[str, str] = {}
    token = _recorders.set(_recorders.get() + (files,))
    try:
        yield files
    finally:
        _recorders.reset(token)


def note_read(path: str | os.PathLike[str], data: bytes) -> None:
    """Tell the open :func:`recording_reads` blocks that ``path`` was read as ``data``."""
    recorders = _recorders.get()
    if recorders:
        digest = hashlib.sha256(data).hexdigest()
        for files in recorders:
            files[os.path.abspath(os.fspath(path))] = digest


class Line:
    """One non-blank line of a text file: its fields and where it came from."""

    __slots__ = ("path", "number", "fields")

    def __init__(self, path: str, number: int, fields: list[str]) -> None:
        self.path = path
        self.number = number
        self.fields = fields

    @property
    def where(self) -> str:
        """``"file:line"``, the key used for errors about this line."""
        return f"{self.path}:{self.number}"

    def error(self, reason: str) -> ScenarioError:
        """A :class:`ScenarioError` about this line."""
        return ScenarioError(self.where, reason)

    def int_field(self, index: int, name: str) -> int:
        """Field ``index`` as an integer, or an error naming the field."""
        text = self.fields[index]
        try:
            return int(text)
        except ValueError:
            raise self.error(f"{name} must be an integer, got {text!r}") from None

    def float_field(self, index: int, name: str) -> float:
        """Field ``index`` as a float, or an error naming the field."""
        text = self.fields[index]
        try:
            return float(text)
        except ValueError:
            raise self.error(f"{name} must be a number, got {text!r}") from None

    def expect_fields(self, count: int, layout: str) -> None:
        """Raise unless the line has exactly ``count`` fields, described by ``layout``."""
        if len(self.fields) != count:
            raise self.error(
                f"expected {count} fields '{layout}', found {len(self.fields)}: "
                f"{' '.join(self.fields)!r}"
            )


def decode_utf8(name: str, data: bytes) -> str:
    """``data`` decoded as UTF-8, or a :class:`ScenarioError` citing ``name:line``.

    The error gives the line and the byte offset of the first byte that is not UTF-8 and
    says what it is, so that a binary file or a file saved in another encoding (Latin-1,
    UTF-16, ...) is named as such rather than failing later with a decoding traceback.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start : exc.start + 1].hex()
        hint = " (it looks like UTF-16)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ScenarioError(
            f"{name}:{line}",
            f"not UTF-8 text: byte 0x{bad} at byte offset {exc.start} cannot be decoded{hint}; "
            "save the file as UTF-8",
        ) from None


def read_text(path: str | os.PathLike[str]) -> str:
    """The whole of ``path`` as UTF-8 text.

    A missing or unreadable file, or one that is not UTF-8, raises :class:`ScenarioError`
    keyed by the path (``path:line`` for bytes that are not UTF-8).
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as stream:
            data = stream.read()
    except OSError as exc:
        raise ScenarioError(name, f"cannot read file: {exc.strerror or exc}") from None
    note_read(name, data)
    return decode_utf8(name, data)


def read_lines(path: str | os.PathLike[str]) -> list[Line]:
    """Read the non-blank lines of ``path``, dropping ``#`` comments.

    A missing or unreadable file, or one that is not UTF-8 text, raises
    :class:`ScenarioError` keyed by the path.
    """
    name = os.fspath(path)
    return list(_split(name, read_text(name)))


def _split(name: str, text: str) -> Iterator[Line]:
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split("#", 1)[0].split()
        if fields:
            yield Line(name, number, fields)


def end_of_file_error(
    path: str | os.PathLike[str], lines: list[Line], reason: str
) -> ScenarioError:
    """An error about missing content, cited at the file's last non-blank line."""
    number = lines[-1].number if lines else 1
    return ScenarioError(f"{os.fspath(path)}:{number}", reason)


def declared_records(
    path: str | os.PathLike[str], lines: list[Line], first: int, count: int, what: str
) -> list[Line]:
    """The ``count`` lines from index ``first`` on, as a header declared.

    Raises :class:`ScenarioError` when the file holds fewer or more lines than that;
    ``what`` names the records in the message (e.g. ``"links"``).
    """
    records = lines[first:]
    if len(records) < count:
        raise end_of_file_error(
            path, lines, f"line 1 declares {count} {what} but the file has {len(records)}"
        )
    if len(records) > count:
        raise records[count].error(f"unexpected line after the {count} {what} declared on line 1")
    return records
