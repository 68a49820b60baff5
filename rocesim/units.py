"""Parsing and formatting of sizes, rates and times written with explicit units.

Every parser returns a Python ``int`` in the base unit of its quantity: bytes for sizes,
bits per second for rates, picoseconds for times. Numbers are read exactly (``"0.1us"`` is
100000 ps, not a float approximation), and a value that does not come out as a whole
number of base units is an error rather than being rounded silently.

A number without a unit is rejected unless the caller passes ``bare_ok=True``, in which
case it is taken to be in the base unit. Problems raise :class:`ScenarioError` naming the
key that holds the value.
"""

from __future__ import annotations

import math
import numbers
import operator
import re
from dataclasses import dataclass
from fractions import Fraction

from .errors import ScenarioError

__all__ = [
    "parse_size",
    "parse_rate",
    "parse_time",
    "format_size",
    "format_rate",
    "format_time",
    "MAX_TIME_PS",
]


@dataclass(frozen=True)
class _Quantity:
    """How one kind of quantity is written: its units and the words used in errors."""

    noun: str  # "size"
    base: str  # base unit symbol, e.g. "B"
    base_plural: str  # base unit in words, e.g. "bytes"
    example: str  # a typical valid value, e.g. "1MB"
    units: dict[str, int]  # every accepted unit symbol -> factor in base units
    decimal_display: tuple[str, ...]  # units format_* may use (powers of ten), ascending
    exact_display: tuple[str, ...] = ()  # further units used only when exact, descending


_SIZE = _Quantity(
    noun="size",
    base="B",
    base_plural="bytes",
    example="1MB",
    units={
        "B": 1,
        "kB": 10**3,
        "KB": 10**3,
        "MB": 10**6,
        "GB": 10**9,
        "TB": 10**12,
        "KiB": 2**10,
        "MiB": 2**20,
        "GiB": 2**30,
        "TiB": 2**40,
    },
    decimal_display=("B", "KB", "MB", "GB", "TB"),
    exact_display=("TiB", "GiB", "MiB", "KiB"),
)

_RATE = _Quantity(
    noun="rate",
    base="bps",
    base_plural="bits per second",
    example="100Gbps",
    units={
        "bps": 1,
        "b/s": 1,
        "kbps": 10**3,
        "Kbps": 10**3,
        "kb/s": 10**3,
        "Kb/s": 10**3,
        "Mbps": 10**6,
        "Mb/s": 10**6,
        "Gbps": 10**9,
        "Gb/s": 10**9,
        "Tbps": 10**12,
        "Tb/s": 10**12,
    },
    decimal_display=("bps", "Kbps", "Mbps", "Gbps", "Tbps"),
)

_TIME = _Quantity(
    noun="time",
    base="ps",
    base_plural="picoseconds",
    example="1us",
    units={
        "ps": 1,
        "ns": 10**3,
        "us": 10**6,
        "\u00b5s": 10**6,  # micro sign
        "\u03bcs": 10**6,  # Greek small letter mu
        "ms": 10**9,
        "s": 10**12,
    },
    decimal_display=("ps", "ns", "us", "ms", "s"),
)

# A decimal number (optionally in exponent notation), optional blanks, optional unit.
_QUANTITY_RE = re.compile(
    r"\s*(?P<number>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
    r"\s*(?P<unit>[^\s\d.+-]\S*)?\s*"
)


def _no_unit(text: str, key: str, q: _Quantity, amount: Fraction | None, limit: int) -> ScenarioError:
    """The error for a number without its unit; the number with the base unit is suggested
    only when that is a valid value, a whole number in 0..`limit` (`amount`: the number,
    None when it is none: nan, inf)."""
    if amount is not None and 0 <= amount <= limit and amount.denominator == 1:
        return ScenarioError(key, f"{text!r} has no unit; write e.g. {text}{q.base} or {q.example}")
    return ScenarioError(key, f"{text!r} has no unit; write a number with its unit, e.g. {q.example}")


def _read_amount(value: object, key: str, q: _Quantity, bare_ok: bool, limit: int) -> tuple[Fraction, str]:
    """Return the exact amount in base units and the text to quote in errors (`limit`: the
    largest valid amount, for the hint of a number without its unit)."""
    if isinstance(value, bool):
        raise ScenarioError(key, f"expected a {q.noun} such as {q.example}, got {value}")
    if isinstance(value, numbers.Integral) and abs(int(value)) > 10**30:
        raise ScenarioError(key, f"{q.noun} is too large: {type(value).__name__} of "
                                 f"{int(value).bit_length()} bits")
    if isinstance(value, numbers.Real):
        text = str(value)
        if isinstance(value, numbers.Integral):
            amount = Fraction(int(value))
        else:
            number = float(value)
            amount = Fraction(number) if math.isfinite(number) else None
        if not bare_ok:
            raise _no_unit(text, key, q, amount, limit)
        if amount is None:
            raise ScenarioError(key, f"{q.noun} must be a finite number, got {text}")
        return amount, text
    if not isinstance(value, str):
        raise ScenarioError(
            key,
            f"expected a {q.noun} such as {q.example}, got {type(value).__name__} "
            f"{_brief(value)}",
        )
    match = _QUANTITY_RE.fullmatch(value) if len(value) <= 100 else None
    if match is None:
        raise ScenarioError(
            key,
            f"cannot read {_short(value)} as a {q.noun}; write a number and a unit, "
            f"e.g. {q.example}",
        )
    exponent = re.search(r"[eE]([-+]?\d+)$", match["number"])
    if exponent and abs(int(exponent[1])) > 30:
        raise ScenarioError(
            key, f"the exponent in {_short(value)} is out of range; write e.g. {q.example}"
        )
    unit = match["unit"]
    if unit is None:
        if not bare_ok:
            raise _no_unit(value.strip(), key, q, Fraction(match["number"]), limit)
        unit = q.base
    factor = q.units.get(unit)
    if factor is None:
        raise ScenarioError(
            key,
            f"unknown {q.noun} unit {unit!r} in {value!r}; valid units: {', '.join(q.units)}",
        )
    return Fraction(match["number"]) * factor, value


_INT64_MAX = 2**63 - 1

# The simulator's time horizon: no time (a start, a delay, a duration, a stop time) may
# exceed it, and a run ends there at the latest.  int64 picoseconds reach 9.2e18; a
# horizon of 1e18 ps (a million seconds, 11.6 days) leaves room for every sum the core
# forms (an event at most a horizon after the clock, which never passes the horizon).
MAX_TIME_PS = 10**18


def _short(text: str, limit: int = 60) -> str:
    """``repr(text)``, cut to ``limit`` characters for messages."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


def _brief(value: object, limit: int = 60) -> str:
    """``repr(value)`` of any value, cut to ``limit`` characters for messages."""
    try:
        shown = repr(value)
    except ValueError:  # an int with too many digits to print
        shown = f"<{type(value).__name__}>"
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _parse(value: object, key: str, q: _Quantity, bare_ok: bool,
           limit: int = _INT64_MAX, why: str = "what fits the simulator's 64-bit counters") -> int:
    """Parse ``value`` into a non-negative whole number of base units, at most ``limit``."""
    if bare_ok and type(value) is int and 0 <= value <= limit:
        return value                  # already base units (topology builders pass these per link)
    amount, text = _read_amount(value, key, q, bare_ok, limit)
    if amount < 0:
        raise ScenarioError(key, f"{q.noun} must not be negative, got {text!r}")
    if amount > limit:
        raise ScenarioError(
            key,
            f"{_short(text)} is too large: at most {_format(limit, q)} "
            f"({limit} {q.base_plural}, {why})",
        )
    if amount.denominator != 1:
        nearest = _format(round(amount), q)
        raise ScenarioError(
            key,
            f"{text!r} is not a whole number of {q.base_plural}; "
            f"the nearest valid value is {nearest}",
        )
    return int(amount)


def parse_size(value: object, key: str = "size", bare_ok: bool = False) -> int:
    """Parse a size such as ``"32MB"``, ``"1.5 KiB"`` or ``"1000B"`` into bytes.

    Units: B, KB (or kB), MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of
    1024. A bare number (an ``int``, or a string without a unit) counts as bytes only when
    ``bare_ok`` is true. The result must be a non-negative whole number of bytes.
    """
    return _parse(value, key, _SIZE, bare_ok)


def parse_rate(value: object, key: str = "rate", bare_ok: bool = False) -> int:
    """Parse a rate such as ``"100Gbps"`` or ``"40 Gb/s"`` into bits per second.

    Units: bps, Kbps (or kbps), Mbps, Gbps, Tbps in powers of 1000, each also written
    ``b/s`` style. A bare number counts as bits per second only when ``bare_ok`` is
    true. The result must be a positive whole number of bits per second.
    """
    bps = _parse(value, key, _RATE, bare_ok)
    if bps == 0:
        raise ScenarioError(
            key, f"rate must be positive, got {value!r}; write e.g. {_RATE.example}"
        )
    return bps


def parse_time(value: object, key: str = "time", bare_ok: bool = False) -> int:
    """Parse a time such as ``"1us"``, ``"0.5 ms"`` or ``"1e3ns"`` into picoseconds.

    Units: ps, ns, us (also written with a micro sign), ms, s. A bare number counts as
    picoseconds only when ``bare_ok`` is true. The result must be a non-negative whole
    number of picoseconds, at most ``MAX_TIME_PS`` (a million seconds).
    """
    return _parse(value, key, _TIME, bare_ok, MAX_TIME_PS, "the simulator's time horizon")


def _format(value: int, q: _Quantity) -> str:
    """Shortest exact rendering of a whole number of base units."""
    value = operator.index(value)
    if value < 0:
        return "-" + _format(-value, q)
    unit = q.decimal_display[0]
    for candidate in q.decimal_display:
        if q.units[candidate] <= value:
            unit = candidate
    factor = q.units[unit]
    whole, rest = divmod(value, factor)
    if rest == 0:
        return f"{whole}{unit}"
    for exact in q.exact_display:
        if value % q.units[exact] == 0:
            return f"{value // q.units[exact]}{exact}"
    digits = len(str(factor)) - 1  # factor is a power of ten
    return f"{whole}.{str(rest).rjust(digits, '0').rstrip('0')}{unit}"


def format_size(n_bytes: int) -> str:
    """Render a byte count briefly and exactly, e.g. ``"32MB"``, ``"1MiB"``, ``"1.5KB"``."""
    return _format(n_bytes, _SIZE)


def format_rate(bps: int) -> str:
    """Render bits per second briefly and exactly, e.g. ``"100Gbps"``, ``"2.5Gbps"``."""
    return _format(bps, _RATE)


def format_time(ps: int) -> str:
    """Render picoseconds briefly and exactly, e.g. ``"1us"``, ``"1.5us"``, ``"250ns"``."""
    return _format(ps, _TIME)
