"""Units and errors (rocesim.units, rocesim.errors): parsing, formatting, ScenarioError."""

import pickle

import numpy as np
import pytest

from rocesim.errors import ScenarioError
from rocesim.units import (
    format_rate,
    format_size,
    format_time,
    parse_rate,
    parse_size,
    parse_time,
)


def test_scenario_error_message_and_fields():
    error = ScenarioError("traffic[1].size", "must be positive")
    assert str(error) == "traffic[1].size: must be positive"
    assert (error.key, error.reason) == ("traffic[1].size", "must be positive")
    assert isinstance(error, ValueError)
    assert str(ScenarioError("", "just the reason")) == "just the reason"


def test_scenario_error_pickles():
    error = pickle.loads(pickle.dumps(ScenarioError("a.b", "bad")))
    assert (error.key, error.reason, str(error)) == ("a.b", "bad", "a.b: bad")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1000B", 1000),
        ("10 MB", 10_000_000),
        ("32MB", 32_000_000),
        ("1.5MB", 1_500_000),
        ("7kB", 7000),
        ("7KB", 7000),
        ("2GB", 2 * 10**9),
        ("1TB", 10**12),
        ("1KiB", 1024),
        ("1.5KiB", 1536),
        ("4MiB", 4 * 2**20),
        ("1GiB", 2**30),
        ("1TiB", 2**40),
        ("  64 KB  ", 64_000),
        ("1e3B", 1000),
        ("0B", 0),
    ],
)
def test_parse_size(text, expected):
    value = parse_size(text)
    assert value == expected
    assert type(value) is int


@pytest.mark.parametrize(
    "text, expected",
    [
        ("100Gbps", 100 * 10**9),
        ("40 Gb/s", 40 * 10**9),
        ("2.5Gbps", 2_500_000_000),
        ("10Mbps", 10**7),
        ("1Kbps", 1000),
        ("1kb/s", 1000),
        ("1Tbps", 10**12),
        ("800bps", 800),
    ],
)
def test_parse_rate(text, expected):
    assert parse_rate(text, "link.rate") == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1us", 10**6),
        ("0.5us", 500_000),
        ("1e3ns", 10**6),
        ("1000ns", 10**6),
        ("2\u00b5s", 2 * 10**6),
        ("2\u03bcs", 2 * 10**6),
        ("1.5 ms", 1_500_000_000),
        ("1s", 10**12),
        ("7ps", 7),
        ("0.1us", 100_000),  # exact, no float rounding
        ("0s", 0),
    ],
)
def test_parse_time(text, expected):
    assert parse_time(text) == expected


def test_bare_numbers_need_bare_ok():
    with pytest.raises(ScenarioError) as info:
        parse_size(1000)
    assert str(info.value) == "size: '1000' has no unit; write e.g. 1000B or 1MB"
    with pytest.raises(ScenarioError, match="has no unit"):
        parse_size("1000", "buffer")
    with pytest.raises(ScenarioError, match=r"link\.rate: '100' has no unit; write e\.g\. 100bps"):
        parse_rate(100, "link.rate")
    with pytest.raises(ScenarioError, match="has no unit; write e.g. 5ps or 1us"):
        parse_time(5)


def test_bare_numbers_with_bare_ok_are_base_units():
    assert parse_size(1000, bare_ok=True) == 1000
    assert parse_size("1000", bare_ok=True) == 1000
    assert parse_rate(10**11, bare_ok=True) == 10**11
    assert parse_rate(np.int64(25), bare_ok=True) == 25
    assert parse_time(1_000_000, bare_ok=True) == 1_000_000
    assert parse_time(2.0, bare_ok=True) == 2
    # units still work with bare_ok
    assert parse_time("1us", bare_ok=True) == 10**6


@pytest.mark.parametrize("parse", [parse_size, parse_rate, parse_time])
def test_booleans_are_rejected(parse):
    with pytest.raises(ScenarioError, match="got True"):
        parse(True, "k", bare_ok=True)


@pytest.mark.parametrize("value", [[1], None, {"a": 1}])
def test_wrong_types_are_rejected(value):
    with pytest.raises(ScenarioError, match="^x: expected a size such as 1MB"):
        parse_size(value, "x")


def test_unknown_unit_lists_valid_units():
    with pytest.raises(ScenarioError) as info:
        parse_size("5XB", "switch.buffer")
    message = str(info.value)
    assert message.startswith("switch.buffer: unknown size unit 'XB' in '5XB'")
    assert "MiB" in message and "KB" in message
    with pytest.raises(ScenarioError, match="unknown rate unit 'GBps'"):
        parse_rate("100GBps")
    with pytest.raises(ScenarioError, match="unknown time unit 'min'"):
        parse_time("3min")


@pytest.mark.parametrize("text", ["", "abc", "MB", "1.2.3MB", "1 2 MB", "--1MB"])
def test_unparseable_text(text):
    with pytest.raises(ScenarioError, match="cannot read .* as a size; write a number and a unit"):
        parse_size(text)


def test_negative_values():
    with pytest.raises(ScenarioError, match="^size: size must not be negative, got '-1MB'"):
        parse_size("-1MB")
    with pytest.raises(ScenarioError, match="must not be negative"):
        parse_time("-5ns")
    with pytest.raises(ScenarioError, match="must not be negative"):
        parse_size(-3, bare_ok=True)
    with pytest.raises(ScenarioError, match="must not be negative"):
        parse_rate("-1Gbps")


def test_rate_must_be_positive():
    with pytest.raises(ScenarioError, match="^r: rate must be positive"):
        parse_rate("0Gbps", "r")


def test_non_integral_values():
    with pytest.raises(ScenarioError) as info:
        parse_size("1.5B")
    assert "'1.5B' is not a whole number of bytes" in str(info.value)
    assert "nearest valid value is 2B" in str(info.value)
    with pytest.raises(ScenarioError, match="not a whole number of picoseconds"):
        parse_time("0.5ps")
    with pytest.raises(ScenarioError, match="not a whole number of picoseconds"):
        parse_time("1.0000001ns")
    with pytest.raises(ScenarioError, match="not a whole number of bits per second"):
        parse_rate("0.5bps")
    with pytest.raises(ScenarioError, match="not a whole number of bytes"):
        parse_size(2.5, bare_ok=True)


@pytest.mark.parametrize("value, parse", [(float("nan"), parse_size), (-1e9, parse_time), ("-5", parse_size),
                                          (1.5, parse_size), (float("inf"), parse_rate), (2**70, parse_time)])
def test_a_number_without_its_unit_is_never_shown_a_wrong_fix(value, parse):
    """The hint wrote "nanB" and "-1000000000.0ps", values refused in their turn: the
    number with the base unit is suggested only when that value is valid."""
    with pytest.raises(ScenarioError) as info:
        parse(value)
    assert info.value.reason.endswith("has no unit; write a number with its unit, e.g. " +
                                      {parse_size: "1MB", parse_time: "1us", parse_rate: "100Gbps"}[parse])


def test_non_finite_bare_float():
    with pytest.raises(ScenarioError, match="finite"):
        parse_time(float("inf"), bare_ok=True)


@pytest.mark.parametrize(
    "fmt, value, expected",
    [
        (format_size, 32_000_000, "32MB"),
        (format_size, 1_500_000, "1.5MB"),
        (format_size, 2**20, "1MiB"),
        (format_size, 1536, "1.536KB"),
        (format_size, 999, "999B"),
        (format_size, 0, "0B"),
        (format_rate, 100 * 10**9, "100Gbps"),
        (format_rate, 2_500_000_000, "2.5Gbps"),
        (format_rate, 40 * 10**6, "40Mbps"),
        (format_time, 10**6, "1us"),
        (format_time, 1_500_000, "1.5us"),
        (format_time, 12_240_000, "12.24us"),
        (format_time, 250_000, "250ns"),
        (format_time, 7, "7ps"),
        (format_time, 3 * 10**12, "3s"),
        (format_time, -2000, "-2ns"),
    ],
)
def test_format(fmt, value, expected):
    assert fmt(value) == expected


@pytest.mark.parametrize("value", [1, 999, 1001, 123_456_789, 10**12 + 1, 2**30, 1_048_000])
def test_format_round_trips(value):
    assert parse_size(format_size(value)) == value
    assert parse_time(format_time(value)) == value
    assert parse_rate(format_rate(value)) == value
