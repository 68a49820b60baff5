"""What a congestion-control scheme declares: its parameters, defaults and network needs.

A built-in scheme is one Cython module `rocesim/_core/cc_<name>.pyx` holding both its
callbacks (in C) and, at its end, its declaration: a module-level `DECLARATION`, plain data
in the core's vocabulary (`rocesim._core.declare`): the parameters keyed by the paper's
symbols, how `auto` values scale with the host link rate (`finalize`, as the HPCC ns-3
fork's scripts scale them), the ECN marking it wants when the scenario leaves the
thresholds `auto`, the NIC settings it implies, and whether it needs INT or CNPs.
`rocesim.cc.registry` turns each declaration into a `Scheme` (below), so YAML
(`cc: {scheme: ..., params: {...}}`), the Python API and `rocesim schemes` share one
description.  A scheme written in Python declares the same on its class
(`rocesim.cc.python`).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from rocesim._core.declare import RED_FORK, WINDOW_BDP, WINDOW_NONE, Context, ecn_thresholds
from rocesim.settings import Custom, Section
from rocesim.units import parse_size

__all__ = ["Context", "Scheme", "WINDOW"]


def _window(v, key):
    """'none', 'bdp', or a size: the per-flow window of bytes in flight (WINDOW_NONE: none,
    WINDOW_BDP: one BDP, which `finalize` turns into bytes with `declare.window_bytes`)."""
    if v == "none":
        return WINDOW_NONE
    if v == "bdp":
        return WINDOW_BDP
    return parse_size(v, key)


WINDOW = Custom("'none', 'bdp' (the largest BDP between two hosts) or a size", _window)


@dataclass(frozen=True)
class Scheme:
    """One congestion-control scheme: what `Simulation` needs to set the network up for it."""

    name: str
    module: str                                 # the core module with `install(core, params)`
    doc: str
    params: dict = field(default_factory=dict)  # name -> rocesim.settings.Setting
    finalize: Callable[[dict, Context], dict] = staticmethod(lambda p, ctx: p)
    needs_int: bool = False                     # switches stamp INT records (HPCC)
    # receivers send CNP packets for ECN-marked data: a flag, or a function of the final params
    needs_cnp: bool | Callable[[dict], bool] = False
    # (kmin, kmax, pmax) for a port of `rate_bps` when the scenario leaves them 'auto'
    # (by default the HPCC fork's RED, declare.RED_FORK)
    ecn: Callable[[int, dict], tuple[int, int, float]] = staticmethod(
        lambda rate_bps, params: ecn_thresholds(RED_FORK, rate_bps))
    # NIC settings the scheme implies (the scenario's own nic: keys override them)
    nic_defaults: Callable[[dict], dict] = staticmethod(lambda p: {})
    py_class: type | None = None                # a scheme written in Python (rocesim.cc.python)

    def install_params(self, params: dict) -> dict:
        """What the core module's install() receives: the parameters, or the Python scheme object."""
        return {"scheme": self.py_class(**params)} if self.py_class else params

    def ecn_defaults(self, rate_bps: int, params: dict | None = None) -> tuple[int, int, float]:
        """(kmin, kmax, pmax) for a port of `rate_bps` when the scenario leaves them 'auto'."""
        return self.ecn(rate_bps, params or {})

    def cnp_needed(self, final_params: dict) -> bool:
        """Whether receivers send CNP packets, given the finalized parameters."""
        return bool(self.needs_cnp(final_params) if callable(self.needs_cnp) else self.needs_cnp)

    def resolve_params(self, given: dict | None, key: str = "cc.params") -> dict:
        """The parameters: defaults overlaid with `given`, parsed; unknown keys are errors."""
        return Section("", **self.params).resolve(given, key)

    def load_module(self):
        """The core module implementing the scheme."""
        return importlib.import_module(self.module)
