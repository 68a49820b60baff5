"""Discovery of the built-in congestion-control schemes.

Every core module named `cc_<name>` that declares a module-level `SCHEME` is a scheme
(`rocesim.cc.scheme`); adding a scheme is adding its file, with no table to edit here.
A name with a colon, "package.module:Class", is a scheme written in Python.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from rocesim import _core
from rocesim.cc.python import python_scheme
from rocesim.cc.scheme import Scheme
from rocesim.errors import ScenarioError


@lru_cache(maxsize=1)
def builtin_schemes() -> dict[str, Scheme]:
    """The built-in schemes by name, `none` first, then alphabetical."""
    found = {}
    for info in pkgutil.iter_modules(_core.__path__):
        if info.name.startswith("cc_"):
            scheme = getattr(importlib.import_module(f"rocesim._core.{info.name}"), "SCHEME", None)
            if isinstance(scheme, Scheme):
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
