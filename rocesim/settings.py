"""How every setting is declared: once, with its type (and unit), default, range and meaning.

A `Setting` is a `Type` (which parses a user's value, checks its range and says in words
what it accepts), a default (or `REQUIRED`) and a meaning.  Settings are grouped into a
`Section` (a mapping such as `switch.pfc`), and sections of one family are chosen by a
`kind:` key in `Kinds` (topology kinds, traffic kinds, faults).  Everything else comes
from the declarations:

* the YAML loader and the Python API resolve a user's mapping with `Section.resolve`
  (defaults filled in, every value parsed, unknown and missing keys refused with one
  `ScenarioError` naming the key path), so the two cannot drift;
* `--set` writes a value into the mapping before it is resolved, so it is checked the same;
* `rocesim keys` prints `describe()` of the declarations, and nothing else.

Types never coerce silently: `1.7` is not an integer, `true` is not a number, a size needs
a unit.  Units are those of `rocesim.units`.
"""
from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from typing import Any

from rocesim.errors import ScenarioError
from rocesim.units import format_size, parse_rate, parse_size, parse_time


class _Required:
    def __repr__(self) -> str:
        return "required"


REQUIRED = _Required()
"""The default of a setting the user must give."""


def show(v, limit: int = 60) -> str:
    """A short repr of a user value for messages (huge lists and strings are cut)."""
    if isinstance(v, (dict, list)):
        text = f"{type(v).__name__} {v!r}" if len(v) <= 8 else f"{type(v).__name__} of {len(v)} items"
    else:
        try:
            text = repr(v)
        except ValueError:                 # an int too long to print
            text = f"{type(v).__name__} too long to show"
    return text if len(text) <= limit else text[:limit - 3] + "..."


# --- types: parse(value, key) -> value, and what they accept in words --------------------------

class Type:
    """What a setting accepts: `parse` returns the value in base units (bytes, bit/s,
    picoseconds) or raises ScenarioError naming `key`; `text` says it in words."""

    text = "a value"

    def parse(self, v, key):
        return v

    def __or__(self, other) -> "Type":
        return OneOf(self, other)


class Boolean(Type):
    text = "true or false"

    def parse(self, v, key):
        if not isinstance(v, bool):
            raise ScenarioError(key, f"expected true or false, got {show(v)}")
        return v


def whole_number(v) -> bool:
    """Whether `v` is a whole number as the API takes one: an int or a numpy integer, not a
    boolean (True is not 1) nor a float (never rounded)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


class Integer(Type):
    """An integer in [lo, hi] (a float or a boolean is refused, never rounded; a numpy
    integer is taken as the int it is)."""

    def __init__(self, lo: int = 0, hi: int | None = None, text: str | None = None):
        self.lo, self.hi = lo, hi
        self.text = text or (f"an integer >= {lo}" if hi is None else f"an integer in {lo}..{hi}")

    def parse(self, v, key):
        if (not whole_number(v)) or v < self.lo or (self.hi is not None and v > self.hi):
            raise ScenarioError(key, f"expected {self.text}, got {show(v)}")
        return int(v)


class Number(Type):
    """A number in (lo, hi] (`closed`: [lo, hi])."""

    def __init__(self, lo: float = 0.0, hi: float = float("inf"), closed: bool = False):
        self.lo, self.hi, self.closed = lo, hi, closed
        left = "[" if closed else "("
        self.text = f"a number in {left}{lo:g}, {hi:g}]"

    def parse(self, v, key):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ScenarioError(key, f"expected {self.text}, got {show(v)}")
        if not ((self.lo <= v) if self.closed else (self.lo < v)) or not v <= self.hi:
            raise ScenarioError(key, f"expected {self.text}, got {show(v)}")
        return float(v)


class _Quantity(Type):
    """A size, rate or time with its unit, at least `lo` (in base units); `bare_ok`: a
    number without a unit is in base units (the Python API's ints)."""

    def __init__(self, noun, parser, example, lo=0, hi=None, lo_text=None, bare_ok=False):
        self.parser, self.lo, self.hi, self.bare_ok = parser, lo, hi, bare_ok
        bound = "" if lo == 0 and hi is None else f" ({lo_text or 'at least ' + str(lo)}"
        bound += (f", at most {format_size(hi)}" if hi is not None else "") + (")" if bound else "")
        self.text = f"a {noun} with its unit, e.g. {example}{bound}"

    def parse(self, v, key):
        x = self.parser(v, key, bare_ok=self.bare_ok)
        if x < self.lo:
            raise ScenarioError(key, "must be positive, got " + show(v) if self.lo == 1
                                else f"must be at least {self.lo}, got {show(v)}")
        if self.hi is not None and x > self.hi:
            raise ScenarioError(key, f"must be at most {format_size(self.hi)}, got {show(v)}")
        return x


def Size(lo: int = 0, hi: int | None = None) -> Type:
    """Bytes: `32MB`, `4KiB` (`lo=1`: positive)."""
    return _Quantity("size", parse_size, "32MB", lo, hi, "positive" if lo == 1 else f"at least {lo}B")


def Rate(bare_ok: bool = False) -> Type:
    """Bits per second: `100Gbps` (always positive)."""
    return _Quantity("rate", parse_rate, "100Gbps", bare_ok=bare_ok)


def Time(positive: bool = False, bare_ok: bool = False) -> Type:
    """Picoseconds: `1us`, `0.5ms`."""
    return _Quantity("time", parse_time, "1us", 1 if positive else 0, None, "positive" if positive else None,
                     bare_ok)


class Choice(Type):
    """One of the given values (compared with their type: `true` is not `"true"`)."""

    def __init__(self, *options):
        self.options = options
        self.text = "one of " + ", ".join(map(str, options))

    def parse(self, v, key):
        if not any(v == o and type(v) is type(o) for o in self.options):
            raise ScenarioError(key, f"must be one of {', '.join(map(str, self.options))}; got {show(v)}")
        return v


class Name(Choice):
    """A name from a table (a topology kind, a collective): 'unknown X' or 'missing'."""

    def __init__(self, what: str, options, valid: str = "valid"):
        super().__init__(*options)
        self.what, self.valid = what, valid
        self.text = f"a {what}: " + ", ".join(options)

    def parse(self, v, key):
        if isinstance(v, str) and v in self.options:
            return v
        if v is None:
            got = "missing (required)"
        elif isinstance(v, str):
            got = f"unknown {self.what} {v!r}"
        else:
            got = f"expected a {self.what} name, got {show(v)}"
        raise ScenarioError(key, f"{got}; {self.valid}: {', '.join(self.options)}")


class Word(Type):
    """A literal word (`auto`, `all`, `never`)."""

    def __init__(self, word: str):
        self.word = word
        self.text = repr(word)

    def parse(self, v, key):
        if v != self.word:
            raise ScenarioError(key, f"expected {self.word!r}, got {show(v)}")
        return v


class OneOf(Type):
    """The first of `types` that accepts the value (written `Word("auto") | Size()`); the
    error is the last type's, which the others' words precede."""

    def __init__(self, *types: Type):
        flat = []
        for t in types:
            flat += t.types if isinstance(t, OneOf) else [t]
        self.types = flat
        self.text = " or ".join(t.text for t in flat)

    def parse(self, v, key):
        for t in self.types[:-1]:
            if isinstance(t, Word):
                if v == t.word:
                    return v
                continue
            try:
                return t.parse(v, key)
            except ScenarioError:
                pass
        return self.types[-1].parse(v, key)


class ListOf(Type):
    """A non-empty list whose items `item` accepts (sorted and unique with `as_set`)."""

    def __init__(self, item: Type, what: str = "", as_set: bool = False):
        self.item, self.as_set = item, as_set
        self.text = f"a non-empty list of {what or item.text}"

    def parse(self, v, key):
        if not isinstance(v, (list, tuple)) or not v:
            raise ScenarioError(key, f"expected {self.text}, got {show(v)}")
        out = [self.item.parse(x, f"{key}[{i}]") for i, x in enumerate(v)]
        return tuple(sorted(set(out))) if self.as_set else out


class Ids(Type):
    """`all` or a list of node/host/rank ids (their range is checked where the network is
    known)."""

    def __init__(self, what: str):
        self.what = what
        self.text = f"'all' or a list of {what} ids"

    def parse(self, v, key):
        if isinstance(v, str) and v == "all":
            return v
        if not isinstance(v, list) or not v or not all(isinstance(h, int) and not isinstance(h, bool) for h in v):
            raise ScenarioError(key, f"expected 'all' or a list of {self.what} ids, got {show(v)}")
        return v


class Text(Type):
    """A string (`what` names it in messages: "a scheme name")."""

    def __init__(self, what: str = "a string"):
        self.text = what

    def parse(self, v, key):
        if not isinstance(v, str):
            raise ScenarioError(key, f"expected {self.text}, got {show(v)}")
        return v


class Path(Type):
    """A file path, relative to the scenario's folder (its existence is checked where the
    folder is known: `resolve_path`)."""

    text = "a file path (relative to the scenario's folder)"

    def parse(self, v, key):
        if not isinstance(v, str) or not v:
            raise ScenarioError(key, f"expected a file path, got {show(v)}")
        if "\0" in v:
            raise ScenarioError(key, f"a file path cannot contain a NUL character, got {show(v)}")
        return v


def resolve_path(base_dir: str, v, key: str) -> str:
    """`v` (a checked `Path`) read from `base_dir`; ScenarioError if no such file."""
    p = v if os.path.isabs(v) else os.path.join(base_dir, v)
    if not os.path.isfile(p):
        raise ScenarioError(key, f"no such file: {p}")
    return p


class Custom(Type):
    """A value only its reader can check (a list of links, a model name or file, a CDF):
    `text` says what it is; `parse` is the reader's, or passes it on as given."""

    def __init__(self, text: str, parse=None):
        self.text = text
        self._parse = parse

    def parse(self, v, key):
        return self._parse(v, key) if self._parse else v


# --- settings, sections, kinds -------------------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """One setting: its type, its default (`REQUIRED`, or None for "not set"), its meaning."""

    type: Type
    default: Any = REQUIRED
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def parse(self, v, key):
        """The value in base units; None stays None for a setting whose default is None."""
        if v is None and self.default is None:
            return None
        return self.type.parse(v, key)


def keys_of(d, key: str, allowed, required=()) -> dict:
    """Check that `d` is a mapping with no key outside `allowed` and every `required` one."""
    if not isinstance(d, dict):
        raise ScenarioError(key or "scenario", f"expected a mapping (key: value, ...), got {show(d)}")
    for k in d:
        if k not in allowed:
            raise ScenarioError(f"{key}.{k}" if key else str(k),
                                f"unknown key; valid keys here: {', '.join(sorted(map(str, allowed)))}")
    for k in required:
        if k not in d:
            raise ScenarioError(f"{key}.{k}" if key else k, "missing (required)")
    return d


class Section(Type):
    """A mapping of settings (and nested sections), e.g. `switch`, `switch.pfc`.

    `resolve(given, key)` returns every setting's value, the user's or the default, parsed;
    an unknown or missing key is one ScenarioError naming it."""

    def __init__(self, doc: str = "", **entries):
        self.doc = doc
        self.entries: dict[str, Setting | Section] = entries

    @property
    def text(self) -> str:
        """What the section accepts, as a type: a mapping of its keys."""
        return "a mapping {" + ", ".join(self.entries) + "}"

    def parse(self, v, key) -> dict:
        """A Section is also a Type: a nested mapping such as a link's {rate, delay}."""
        return self.resolve(v, key)

    @classmethod
    def of(cls, doc: str, entries: dict) -> "Section":
        """A section from a dict of settings, nested dicts becoming sections."""
        return cls(doc, **{k: cls.of("", v) if isinstance(v, dict) else v for k, v in entries.items()})

    def __getitem__(self, name):
        return self.entries[name]

    def __iter__(self):
        return iter(self.entries)

    def items(self):
        return self.entries.items()

    def required(self) -> tuple:
        return tuple(k for k, e in self.entries.items() if isinstance(e, Setting) and e.required)

    def resolve(self, given, key: str, extra=()) -> dict:
        """`given` (a mapping, or None for all defaults) checked and completed; `extra`
        names keys the caller reads itself (e.g. `kind`)."""
        given = {} if given is None else given
        keys_of(given, key, tuple(self.entries) + tuple(extra), self.required())
        out = {}
        for name, entry in self.entries.items():
            path = f"{key}.{name}" if key else name
            if isinstance(entry, Section):
                out[name] = entry.resolve(given.get(name), path)
            else:
                out[name] = entry.parse(given[name] if name in given else entry.default, path)
        return out

    def describe(self, prefix: str = "") -> list[tuple[str, str, Any, str]]:
        """(key path, what it accepts, default, meaning) of every setting, in order."""
        rows = []
        for name, entry in self.entries.items():
            if isinstance(entry, Section):
                rows += entry.describe(f"{prefix}{name}.")
            else:
                rows.append((prefix + name, entry.type.text, entry.default, entry.doc))
        return rows


class Kinds:
    """A family of sections chosen by a `kind:` key (topologies, traffic entries, faults)."""

    def __init__(self, what: str, doc: str = "", **kinds: Section):
        self.what, self.doc, self.kinds = what, doc, kinds

    def kind_of(self, d, key: str) -> str:
        """The `kind:` of mapping `d` at `key`."""
        if not isinstance(d, dict):
            raise ScenarioError(key, f"expected a mapping (key: value, ...), got {show(d)}")
        return Name(self.what, tuple(self.kinds), "valid kinds").parse(d.get("kind"), f"{key}.kind")

    def resolve(self, d, key: str, kind: str | None = None) -> tuple[str, dict]:
        """(kind, its settings resolved) of mapping `d`."""
        kind = kind or self.kind_of(d, key)
        return kind, self.kinds[kind].resolve(d, key, extra=("kind",))

    def describe(self, prefix: str) -> list[tuple[str, str, Any, str]]:
        rows = []
        for kind, section in self.kinds.items():
            rows.append((f"{prefix}kind = {kind}", "", "", section.doc))
            rows += section.describe(f"{prefix}{kind}: ")
        return rows
