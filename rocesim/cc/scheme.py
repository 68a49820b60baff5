"""What a congestion-control scheme declares: its parameters, defaults and network needs.

A built-in scheme is one Cython module `rocesim/_core/cc_<name>.pyx` holding both its
callbacks (in C) and, at its end, its declaration: a module-level `SCHEME = Scheme(...)`
with the parameters keyed by the paper's symbols, how `auto` values scale with the host
link rate (`finalize`, as the HPCC ns-3 fork's scripts scale them), the ECN marking it
wants when the scenario leaves the thresholds `auto`, the NIC settings it implies, and
whether it needs INT or CNPs.  `rocesim.cc.registry` discovers the declarations, so
YAML (`cc: {scheme: ..., params: {...}}`), the Python API and `rocesim schemes` share
one description.  A scheme written in Python declares the same on its class
(`rocesim.cc.python`).

Declarations in a .pyx are compiled with `cdivision`: write `1 / 256.0`, not `1 / 256`,
which Cython folds as C integer division (0).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from rocesim.config import Key, boolean, choice, either, integer, number, resolve  # noqa: F401 (for the declarations)
from rocesim.errors import ScenarioError
from rocesim.units import parse_rate, parse_size, parse_time

G100 = 100e9


# --- parameter parsers shared by the declarations -------------------------------------------

def window(v, key):
    """'none', 'bdp', or a size: the per-flow window of bytes in flight (0: none, -1: one BDP,
    which `finalize` turns into bytes with `window_bytes`)."""
    if v == "none":
        return 0
    if v == "bdp":
        return -1
    return parse_size(v, key)


def auto(parse):
    """A parser that also takes the word 'auto' (filled in by the scheme's `finalize`)."""
    return either("auto", parse)


def positive(parse):
    """A parser that also refuses zero (periods and divisors)."""
    def p(v, key):
        x = parse(v, key)
        if x <= 0:
            raise ScenarioError(key, f"must be positive, got {v!r}")
        return x
    return p


RATE, TIME, SIZE = auto(parse_rate), auto(parse_time), auto(parse_size)
POSITIVE_TIME = auto(positive(parse_time))


@dataclass(frozen=True)
class Context:
    """What `auto` defaults may depend on."""

    host_rate_bps: int          # the fastest host link
    max_base_rtt_ps: int        # the largest idle-network RTT between two hosts (or of a flow)
    max_bdp_bytes: int = 0      # the largest bandwidth-delay product between two hosts


def window_bytes(w, ctx: Context) -> int:
    """A parsed `window` value in bytes: 'bdp' (-1) is the largest BDP between two hosts of
    the topology, one window for every flow, as the HPCC fork's `GLOBAL_T`/`HAS_WIN` set it
    (third.cc computes maxBdp over all host pairs)."""
    return ctx.max_bdp_bytes if w < 0 else w


def fill(params: dict, defaults: dict) -> dict:
    """Replace 'auto' in params by defaults[name] (already in base units) where one is given."""
    return {k: (defaults[k] if v == "auto" and k in defaults else v) for k, v in params.items()}


# --- ECN marking a scheme asks of the switches ----------------------------------------------

def red_ecn(kmin_per_25g: float = 100_000, kmax_per_25g: float = 400_000, pmax: float = 0.2):
    """RED marking scaled with the port rate; the defaults are the HPCC fork's
    (Kmin 100 KB, Kmax 400 KB per 25 Gb/s, Pmax 0.2)."""
    def ecn(rate_bps: int, params: dict) -> tuple[int, int, float]:
        return int(kmin_per_25g * rate_bps / 25e9), int(kmax_per_25g * rate_bps / 25e9), pmax
    return ecn


def step_ecn(k_per_10g: float):
    """Step marking at K (DCTCP) scaled with the port rate."""
    def ecn(rate_bps: int, params: dict) -> tuple[int, int, float]:
        k = int(k_per_10g * rate_bps / 10e9)
        return k, k, 1.0
    return ecn


@dataclass(frozen=True)
class Scheme:
    """One congestion-control scheme: what `Simulation` needs to set the network up for it."""

    name: str
    module: str                                 # the core module with `install(capsule, params)`
    doc: str
    params: dict = field(default_factory=dict)  # name -> config.Key
    finalize: Callable[[dict, Context], dict] = staticmethod(lambda p, ctx: p)
    needs_int: bool = False                     # switches stamp INT records (HPCC)
    # receivers send CNP packets for ECN-marked data: a flag, or a function of the final params
    needs_cnp: bool | Callable[[dict], bool] = False
    # (kmin, kmax, pmax) for a port of `rate_bps` when the scenario leaves them 'auto'
    ecn: Callable[[int, dict], tuple[int, int, float]] = staticmethod(red_ecn())
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
        return resolve(self.params, given, key)

    def load_module(self):
        """The core module implementing the scheme."""
        return importlib.import_module(self.module)
