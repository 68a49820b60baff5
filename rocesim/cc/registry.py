"""Discovery of the built-in congestion-control schemes, and their declarations made Schemes.

Every core module named `cc_<name>` with a module-level `DECLARATION` is a scheme; adding a
scheme is adding its file, with no table to edit here.  A declaration is plain data in the
core's vocabulary (`rocesim._core.declare`, which says what each type tag means); this module,
above the core, turns it into a `Scheme` whose parameters are `config.Key`s with the same
parsers as every other setting, so YAML, the API and `rocesim schemes` read it alike.
A name with a colon, "package.module:Class", is a scheme written in Python.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from rocesim import _core
from rocesim._core import declare
from rocesim.cc.python import python_scheme
from rocesim.cc.scheme import WINDOW, Scheme
from rocesim.settings import Boolean, Choice, Integer, Number, Rate, Setting, Size, Time, Word
from rocesim.errors import ScenarioError

# a type tag of rocesim._core.declare -> its rocesim.settings type, given the tag's arguments
TYPES = {
    "number": lambda lo, hi: Number(lo, hi, closed=True),
    "integer": Integer,
    "choice": lambda options: Choice(*options),
    "boolean": Boolean,
    "size": Size,
    "positive_size": lambda: Size(1),
    "rate": Rate,
    "time": Time,
    "positive_time": lambda: Time(positive=True),
    "window": lambda: WINDOW,
}


def setting_type(kind: tuple):
    """The settings type of a declared parameter type (a tag, its arguments, its words:
    ('size', 'auto') is `Word('auto') | Size()`)."""
    tag, args, words = declare.split_type(kind)
    t = TYPES[tag](*args)
    for word in reversed(words):
        t = Word(word) | t
    return t


def scheme_of(declaration: dict, module: str) -> Scheme:
    """The `Scheme` a core module's `DECLARATION` describes (`module`: where its install() is)."""
    declare.check(declaration)
    finalize = declaration.get("finalize")
    ecn = declaration.get("ecn", declare.RED_FORK)
    nic = declaration.get("nic_defaults", {})

    def final(params: dict, ctx: declare.Context) -> dict:
        if finalize is None:
            return params
        try:
            return finalize(params, ctx)
        except declare.ParamError as e:
            raise ScenarioError(f"cc.params.{e.name}", e.reason) from None

    return Scheme(
        declaration["name"], module, declaration["doc"],
        {name: Setting(setting_type(kind), default, doc) for name, kind, default, doc in declaration["params"]},
        finalize=final,
        needs_int=bool(declaration.get("needs_int", False)),
        needs_cnp=declaration.get("needs_cnp", False),
        ecn=lambda rate_bps, params: declare.ecn_thresholds(ecn(params) if callable(ecn) else ecn, rate_bps),
        nic_defaults=nic if callable(nic) else (lambda params: dict(nic)),
    )


@lru_cache(maxsize=1)
def builtin_schemes() -> dict[str, Scheme]:
    """The built-in schemes by name, `none` first, then alphabetical."""
    found = {}
    for info in pkgutil.iter_modules(_core.__path__):
        if info.name.startswith("cc_"):
            module = importlib.import_module(f"rocesim._core.{info.name}")
            declaration = getattr(module, "DECLARATION", None)
            if declaration is not None:
                scheme = scheme_of(declaration, module.__name__)
                found[scheme.name] = scheme
    return dict(sorted(found.items(), key=lambda kv: (kv[0] != "none", kv[0])))


def get_scheme(name, key: str = "cc.scheme") -> Scheme:
    """The scheme called `name`, or a Python scheme "package.module:Class"."""
    schemes = builtin_schemes()
    if not isinstance(name, str):
        raise ScenarioError(key, f"expected a scheme name, got {name!r}; available: {', '.join(schemes)}")
    if ":" in name:
        return python_scheme(name, key)
    if name not in schemes:
        raise ScenarioError(key, f"unknown scheme {name!r}; available: {', '.join(schemes)}, "
                                 "or 'package.module:Class' for a scheme written in Python")
    return schemes[name]
