"""A reader for the protobuf wire format, enough to decode messages without generated code.

A message is a sequence of fields, each a key (a varint: field number << 3 | wire
type) followed by its value: a varint (wire type 0), 8 little-endian bytes (1), a
varint length and that many bytes (2: strings, bytes, sub-messages, packed repeated
numbers), a group up to the matching end-group key (3 and 4, deprecated but still
skippable) or 4 little-endian bytes (5).  Positions are absolute offsets into one
buffer, so errors can say at which byte of the file the problem is.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5
WIRE_NAMES = {VARINT: "varint", I64: "64-bit", LEN: "length-delimited", SGROUP: "start-group",
              EGROUP: "end-group", I32: "32-bit"}
MASK64 = (1 << 64) - 1


class WireError(Exception):
    """Malformed wire data at byte `offset` of the buffer."""

    def __init__(self, offset: int, reason: str) -> None:
        self.offset = offset
        self.reason = reason
        super().__init__(f"byte {offset}: {reason}")


class Field(NamedTuple):
    """One field: its number, wire type, value and the offset of its key.

    `value` is an int for varint and fixed-size fields, a (start, end) slice of the
    buffer for length-delimited ones and None for a skipped group."""

    number: int
    wire: int
    value: object
    offset: int


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at `pos` (at most 10 bytes, before `end`) and the position after it."""
    if pos < end and buf[pos] < 0x80:          # the common case: one byte
        return buf[pos], pos + 1
    start = pos
    result = shift = 0
    while True:
        if pos >= end:
            raise WireError(start, "truncated varint (the data ends inside it)")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & MASK64, pos
        shift += 7
        if shift >= 70:
            raise WireError(start, "varint longer than 10 bytes")


def _fixed(buf: bytes, pos: int, end: int, size: int, at: int) -> tuple[int, int]:
    if pos + size > end:
        raise WireError(at, f"truncated {8 * size}-bit value (needs {size} bytes, {end - pos} left)")
    return int.from_bytes(buf[pos:pos + size], "little"), pos + size


def _value(buf: bytes, pos: int, end: int, number: int, wire: int, at: int) -> tuple[object, int]:
    """The value of a field whose key was read at `at`, and the position after it."""
    if wire == VARINT:
        return read_varint(buf, pos, end)
    if wire == I64:
        return _fixed(buf, pos, end, 8, at)
    if wire == I32:
        return _fixed(buf, pos, end, 4, at)
    if wire == LEN:
        length, pos = read_varint(buf, pos, end)
        if length > end - pos:
            raise WireError(at, f"field {number} declares {length} bytes but only {end - pos} remain")
        return (pos, pos + length), pos + length
    if wire == SGROUP:
        return None, _skip_group(buf, pos, end, number, at)
    if wire == EGROUP:
        raise WireError(at, f"end-group for field {number} without a matching start-group")
    raise WireError(at, f"invalid wire type {wire} (field {number})")


def _skip_group(buf: bytes, pos: int, end: int, number: int, at: int) -> int:
    """The position after the end-group key that closes the group of field `number`."""
    while pos < end:
        key_at = pos
        key, pos = read_varint(buf, pos, end)
        if key & 7 == EGROUP:
            if key >> 3 != number:
                raise WireError(key_at, f"end-group for field {key >> 3} inside the group of field {number}")
            return pos
        _, pos = _value(buf, pos, end, key >> 3, key & 7, key_at)
    raise WireError(at, f"group of field {number} is not closed")


def fields(buf: bytes, start: int, end: int) -> Iterator[Field]:
    """The fields of the message in buf[start:end], in order."""
    pos = start
    while pos < end:
        at = pos
        key, pos = read_varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError(at, "field number 0 is not allowed")
        value, pos = _value(buf, pos, end, number, wire, at)
        yield Field(number, wire, value, at)


def packed(buf: bytes, start: int, end: int, wire: int) -> list[int]:
    """The numbers of a packed repeated field in buf[start:end] with element wire type `wire`."""
    out = []
    pos = start
    size = {I64: 8, I32: 4}.get(wire)
    while pos < end:
        if size is None:
            v, pos = read_varint(buf, pos, end)
        else:
            v, pos = _fixed(buf, pos, end, size, pos)
        out.append(v)
    return out


def as_signed(v: int, bits: int = 64) -> int:
    """Two's complement reading of an unsigned `bits`-bit value (int32/int64, sfixed)."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def unzigzag(v: int) -> int:
    """The sint32/sint64 value of a zigzag-encoded varint."""
    return (v >> 1) ^ -(v & 1)


def as_double(v: int) -> float:
    return struct.unpack("<d", v.to_bytes(8, "little"))[0]


def as_float(v: int) -> float:
    return struct.unpack("<f", v.to_bytes(4, "little"))[0]


def text(buf: bytes, span: tuple[int, int]) -> str:
    """A string field (invalid UTF-8 is replaced, not fatal: names are informational)."""
    return bytes(buf[span[0]:span[1]]).decode("utf-8", errors="replace")
