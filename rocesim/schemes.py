"""The congestion-control schemes: names, parameters with defaults, and what the switch needs.

Each scheme is one Cython module under `rocesim/_core/` (`cc_<name>.pyx`) with an
`install(sim_capsule, params)` function; its parameters are declared here, with the
paper's symbol as the key, so that YAML (`cc: {scheme: ..., params: {...}}`), the
Python API and `rocesim schemes` share one description.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from rocesim.config import Key, resolve
from rocesim.errors import ScenarioError
from rocesim.units import parse_size


def _window(v, key):
    """'none', 'bdp', or a size: the per-flow window of bytes in flight."""
    if v == "none":
        return 0
    if v == "bdp":
        return -1
    return parse_size(v, key)


@dataclass(frozen=True)
class Scheme:
    name: str
    module: str
    doc: str
    params: dict = field(default_factory=dict)
    needs_int: bool = False                 # switches stamp INT (HPCC)
    # ECN defaults when the scenario leaves them 'auto': (kmin, kmax) in bytes per
    # 25 Gb/s of port rate and pmax (HPCC fork: 100KB / 400KB x rate/25G, 0.2)
    ecn_kmin_per_25g: int = 100_000
    ecn_kmax_per_25g: int = 400_000
    ecn_pmax: float = 0.2

    def ecn_defaults(self, rate_bps: int) -> tuple[int, int, float]:
        scale = rate_bps / 25e9
        return int(self.ecn_kmin_per_25g * scale), int(self.ecn_kmax_per_25g * scale), self.ecn_pmax


SCHEMES: dict[str, Scheme] = {
    "none": Scheme(
        "none", "rocesim._core.cc_none",
        "no congestion control: line rate, PFC alone prevents loss",
        {"window": Key(_window, "none", "bytes in flight per flow: 'none', 'bdp' (line rate x base RTT) or a size")},
    ),
}


def get_scheme(name: str, key: str = "cc.scheme") -> Scheme:
    if name not in SCHEMES:
        raise ScenarioError(key, f"unknown scheme {name!r}; available: {', '.join(SCHEMES)}")
    return SCHEMES[name]


def resolve_params(scheme: Scheme, given: dict | None, key: str = "cc.params") -> dict:
    """The scheme's parameters: defaults overlaid with `given`, parsed; unknown keys are errors."""
    return resolve(scheme.params, given, key)


def load_module(scheme: Scheme):
    return importlib.import_module(scheme.module)
