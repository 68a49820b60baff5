"""The congestion-control schemes: names, parameters with defaults, and what the network needs.

Each built-in scheme is one Cython module under `rocesim/_core/` (`cc_<name>.pyx`) with
an `install(sim_capsule, params)` function.  Its parameters are declared here, keyed by
the paper's symbols, so that YAML (`cc: {scheme: ..., params: {...}}`), the Python API
and `rocesim schemes` share one description.  A parameter left at `auto` takes the
scheme's default for the host link rate, scaled the way the HPCC ns-3 fork's scripts
scale it (`finalize`).  A scheme written in Python is named `"package.module:Class"`
(see `rocesim.pyscheme`).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from rocesim.config import Key, boolean, choice, either, integer, number, resolve
from rocesim.errors import ScenarioError
from rocesim.units import parse_rate, parse_size, parse_time

G100 = 100e9


# --- parameter parsers ---------------------------------------------------------------------

def _window(v, key):
    """'none', 'bdp', or a size: the per-flow window of bytes in flight."""
    if v == "none":
        return 0
    if v == "bdp":
        return -1
    return parse_size(v, key)


def _auto(parse):
    return either("auto", parse)


def _positive(parse):
    """A parser that also refuses zero (periods and divisors)."""
    def p(v, key):
        x = parse(v, key)
        if x <= 0:
            raise ScenarioError(key, f"must be positive, got {v!r}")
        return x
    return p


RATE, TIME, SIZE = _auto(parse_rate), _auto(parse_time), _auto(parse_size)
POSITIVE_TIME = _auto(_positive(parse_time))


@dataclass(frozen=True)
class Context:
    """What `auto` defaults may depend on."""

    host_rate_bps: int          # the fastest host link
    max_base_rtt_ps: int        # the largest idle-network RTT among the flows


def _fill(params: dict, defaults: dict) -> dict:
    """Replace 'auto' in params by defaults[name] (already in base units) where one is given."""
    return {k: (defaults[k] if v == "auto" and k in defaults else v) for k, v in params.items()}


@dataclass(frozen=True)
class Scheme:
    name: str
    module: str
    doc: str
    params: dict = field(default_factory=dict)
    finalize: Callable[[dict, Context], dict] = staticmethod(lambda p, ctx: p)
    needs_int: bool = False                     # switches stamp INT (HPCC)
    step_ecn_per_10g: int = 0                   # DCTCP: step marking at K per 10 Gb/s
    nic_defaults: Callable[[dict], dict] = staticmethod(lambda p: {})
    py_class: type | None = None                # a scheme written in Python (rocesim.pyscheme)

    def install_params(self, params: dict) -> dict:
        """What the core module's install() receives: the parameters, or the Python scheme object."""
        return {"scheme": self.py_class(**params)} if self.py_class else params

    def ecn_defaults(self, rate_bps: int, params: dict | None = None) -> tuple[int, int, float]:
        """(kmin, kmax, pmax) for a port of `rate_bps` when the scenario leaves them 'auto'."""
        if self.step_ecn_per_10g:
            k = int(self.step_ecn_per_10g * rate_bps / 10e9)
            return k, k, 1.0
        if params and params.get("preset") == "paper":
            # DCQCN paper, at 40 Gb/s: Kmin 5 KB, Kmax 200 KB, Pmax 1%
            return int(5_000 * rate_bps / 40e9), int(200_000 * rate_bps / 40e9), 0.01
        # HPCC fork: Kmin 100 KB, Kmax 400 KB per 25 Gb/s, Pmax 0.2
        return int(100_000 * rate_bps / 25e9), int(400_000 * rate_bps / 25e9), 0.2


# --- none ---------------------------------------------------------------------------------------

NONE = Scheme(
    "none", "rocesim._core.cc_none", "no congestion control: line rate, PFC alone prevents loss",
    {"window": Key(_window, "none", "bytes in flight per flow: 'none', 'bdp' (line rate x base RTT) or a size")})


# --- DCQCN ---------------------------------------------------------------------------------------

DCQCN_PRESETS = {
    # the HPCC fork's run.py at NIC rate bw: AI 5*bw/25, HAI 50*bw/25 Mb/s, 1 us alpha,
    # 4 us decrease check, 300 us timer, F 1, g 1/256, min rate 1 Gb/s (at 100G)
    "mellanox": dict(g=1 / 256, t_alpha=1_000_000, t_dec=4_000_000, t=300_000_000, b=0, f=1,
                     rai=20e6 / G100, rhai=200e6 / G100, min_rate=1e9 / G100, clamp=False),
    # SIGCOMM 2015, Table/Sec. 5 (at 40 Gb/s): g 1/256, K = T = 55 us, B 10 MB, F 5,
    # R_AI 40 Mb/s; the hyper step is taken as 10 R_AI
    "paper": dict(g=1 / 256, t_alpha=55_000_000, t_dec=0, t=55_000_000, b=10_000_000, f=5,
                  rai=40e6 / 40e9, rhai=400e6 / 40e9, min_rate=1e8 / 40e9, clamp=True),
}


def _dcqcn_finalize(p, ctx):
    d = dict(DCQCN_PRESETS[p["preset"]])
    for k in ("rai", "rhai", "min_rate"):       # stored per bps of host rate
        d[k] = d[k] * ctx.host_rate_bps
    return _fill(p, d)


DCQCN = Scheme(
    "dcqcn", "rocesim._core.cc_dcqcn",
    "DCQCN (Zhu et al. 2015): ECN -> CNP -> multiplicative decrease, timer-driven recovery",
    {
        "preset": Key(choice("mellanox", "paper"), "mellanox",
                      "defaults of the other parameters: 'mellanox' (HPCC ns-3 fork) or 'paper' (SIGCOMM 2015)"),
        "g": Key(_auto(number(0, 1)), "auto", "alpha EWMA gain (1/256)"),
        "t_alpha": Key(POSITIVE_TIME, "auto", "alpha update period (mellanox 1us, paper K = 55us)"),
        "t_dec": Key(TIME, "auto", "rate-decrease check period; 0 = cut on every CNP (mellanox 4us, paper 0)"),
        "t": Key(POSITIVE_TIME, "auto", "rate-increase timer T (mellanox 300us, paper 55us)"),
        "b": Key(SIZE, "auto", "byte counter B; 0 = off (paper 10MB, mellanox off)"),
        "f": Key(_auto(integer(0, 1000)), "auto", "fast-recovery steps F (mellanox 1, paper 5)"),
        "rai": Key(RATE, "auto", "additive increase R_AI (mellanox 20Mbps per 100G, paper 40Mbps per 40G)"),
        "rhai": Key(RATE, "auto", "hyper increase R_HAI (mellanox 200Mbps per 100G, paper 10 R_AI)"),
        "min_rate": Key(RATE, "auto", "lowest rate (1% of line rate, paper 0.25%)"),
        "clamp": Key(_auto(boolean), "auto", "set Rt = Rc on every cut (paper true, mellanox false)"),
        "window": Key(_window, "none", "'bdp' for 'DCQCN+win' (a one-BDP window), or a size"),
    },
    finalize=_dcqcn_finalize,
    # the notification point: mellanox cuts at most once per 4 us, so CNPs more often are
    # useless; the paper's NP sends at most one per 50 us
    nic_defaults=lambda p: {"cnp_interval": "50us" if p.get("preset") == "paper" else "4us"},
)


# --- HPCC -----------------------------------------------------------------------------------------

def _hpcc_finalize(p, ctx):
    t = ctx.max_base_rtt_ps or 10_000_000
    d = dict(t=t, min_rate=1e9 * ctx.host_rate_bps / G100)
    p = _fill(p, d)
    if p["wai"] == "auto":   # W_AI equivalent to 40 Mb/s per 100G of host rate over T
        p["wai"] = 40e6 * ctx.host_rate_bps / G100 * p["t"] / 8e12
    return p


HPCC = Scheme(
    "hpcc", "rocesim._core.cc_hpcc",
    "HPCC (Li et al. 2019): INT-driven window, inflight kept near eta of capacity",
    {
        "eta": Key(number(0.01, 1.0), 0.95, "target utilization"),
        "max_stage": Key(integer(0, 1000), 0, "additive-increase stages before a multiplicative "
                                               "update (0 as in the paper's simulations)"),
        "wai": Key(SIZE, "auto", "additive increase W_AI (auto: 40 Mb/s per 100G over T)"),
        "t": Key(POSITIVE_TIME, "auto", "base RTT T (auto: the largest idle RTT among the flows, as the fork)"),
        "min_rate": Key(RATE, "auto", "lowest rate (1 Gb/s per 100G)"),
    },
    finalize=_hpcc_finalize, needs_int=True)


# --- TIMELY ---------------------------------------------------------------------------------------

def _timely_finalize(p, ctx):
    scale = ctx.host_rate_bps / G100
    # the HPCC fork at NIC rate bw: AI bw Mb/s (100 Mb/s at 100G), HAI 5x
    return _fill(p, dict(delta=100e6 * scale, min_rate=1e9 * scale))


TIMELY = Scheme(
    "timely", "rocesim._core.cc_timely",
    "TIMELY (Mittal et al. 2015): rate from the RTT gradient",
    {
        "alpha": Key(number(0, 1), 0.875, "EWMA weight of the newest RTT difference"),
        "beta": Key(number(0, 1), 0.8, "multiplicative decrease factor"),
        "tlow": Key(parse_time, "50us", "below this RTT always increase"),
        "thigh": Key(parse_time, "500us", "above this RTT always decrease"),
        "min_rtt": Key(_positive(parse_time), "20us", "normalizes the gradient"),
        "delta": Key(RATE, "auto", "additive increase (100 Mb/s per 100G, as the HPCC fork)"),
        "hai_after": Key(integer(1, 1000), 5, "increases in a row before steps of 5 delta (HAI)"),
        "segment": Key(parse_size, "16KB", "bytes per completion event (one RTT sample each)"),
        "min_rate": Key(RATE, "auto", "lowest rate (1 Gb/s per 100G)"),
    },
    finalize=_timely_finalize)


# --- DCTCP -----------------------------------------------------------------------------------------

def _dctcp_finalize(p, ctx):
    scale = ctx.host_rate_bps / G100
    return _fill(p, dict(rai=615e6 * scale, min_rate=1e9 * scale))


DCTCP = Scheme(
    "dctcp", "rocesim._core.cc_dctcp",
    "DCTCP (Alizadeh et al. 2010): ECN step at K, cut by alpha/2 once per window",
    {
        "g": Key(number(0, 1), 1 / 16, "alpha EWMA gain"),
        "mode": Key(choice("rate", "window"), "rate", "'rate' (HPCC fork's RDMA variant) or 'window'"),
        "rai": Key(RATE, "auto", "rate mode: additive increase per window (615 Mb/s per 100G, the fork's)"),
        "min_rate": Key(RATE, "auto", "lowest rate (1 Gb/s per 100G)"),
    },
    finalize=_dctcp_finalize, step_ecn_per_10g=30_000)


# --- Swift ------------------------------------------------------------------------------------------

def _swift_finalize(p, ctx):
    base = p["base_target"]
    p = _fill(p, dict(h=base / 6.55, fs_range=5 * base))
    if not 0 < p["fs_min_cwnd"] < p["fs_max_cwnd"]:
        raise ScenarioError("cc.params.fs_min_cwnd", "needs 0 < fs_min_cwnd < fs_max_cwnd")
    if not 0 < p["min_cwnd"] <= p["max_cwnd"]:
        raise ScenarioError("cc.params.min_cwnd", "needs 0 < min_cwnd <= max_cwnd")
    return p


SWIFT = Scheme(
    "swift", "rocesim._core.cc_swift",
    "Swift (Kumar et al. 2020): delay-target AIMD on a window, target scaled by hops and flows",
    {
        "base_target": Key(parse_time, "25us", "target RTT before scaling (the paper's 100G setting)"),
        "h": Key(TIME, "auto", "target added per switch hop (auto: base_target / 6.55, htsim's)"),
        "fs_range": Key(POSITIVE_TIME, "auto", "largest flow-scaling addition (auto: 5 x base_target)"),
        "fs_min_cwnd": Key(number(1e-6, 1e6), 0.1, "cwnd (packets) at which flow scaling is fs_range"),
        "fs_max_cwnd": Key(number(1e-6, 1e6), 100.0, "cwnd (packets) at which flow scaling is 0"),
        "ai": Key(number(0, 1e6), 1.0, "additive increase, packets per RTT"),
        "beta": Key(number(0, 1), 0.8, "multiplicative decrease per unit of relative excess delay"),
        "max_mdf": Key(number(0, 1), 0.5, "largest multiplicative decrease at once"),
        "min_cwnd": Key(number(1e-9, 1e9), 0.001, "smallest window, packets (below 1: paced)"),
        "max_cwnd": Key(number(1e-9, 1e9), 1000.0, "largest window, packets"),
        "retx_reset": Key(integer(1, 1000), 5, "timeouts in a row that reset cwnd to min_cwnd"),
    },
    finalize=_swift_finalize)


SCHEMES: dict[str, Scheme] = {s.name: s for s in (NONE, DCQCN, HPCC, TIMELY, DCTCP, SWIFT)}


def get_scheme(name: str, key: str = "cc.scheme") -> Scheme:
    """The scheme called `name`, or a Python scheme "package.module:Class"."""
    if isinstance(name, str) and ":" in name:
        from rocesim.pyscheme import python_scheme
        return python_scheme(name, key)
    if name not in SCHEMES:
        raise ScenarioError(key, f"unknown scheme {name!r}; available: {', '.join(SCHEMES)}, "
                                 "or 'package.module:Class' for a scheme written in Python")
    return SCHEMES[name]


def resolve_params(scheme: Scheme, given: dict | None, key: str = "cc.params") -> dict:
    """The scheme's parameters: defaults overlaid with `given`, parsed; unknown keys are errors."""
    return resolve(scheme.params, given, key)


def load_module(scheme: Scheme):
    return importlib.import_module(scheme.module)
