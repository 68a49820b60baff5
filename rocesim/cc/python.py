"""Congestion-control schemes written in plain Python.

Subclass `PythonScheme`, declare parameters, and select the class from YAML as
`cc: {scheme: "package.module:ClassName", params: {...}}` (or `Simulation(cc=...)`).
The core calls the methods below for each event of a flow; a method steers its flow
by setting `flow.rate_bps` (pacing) and `flow.window_bytes` (bytes in flight, 0 = no
window).  It runs per ACK in Python, so it is slower than the built-in schemes but
sees exactly the same events.  See `examples/ecn_aimd.py`.

    class MyScheme(PythonScheme):
        params = {"ai": rate("100Mbps", "additive increase per ACK")}
        def on_start(self, flow):
            flow.rate_bps = flow.line_rate_bps
        def on_ack(self, flow, ack):     # ack.acked_bytes, .seq, .rtt_ps, .ecn, .packets, .marked_packets, .hops
            ...

Class attributes: `needs_cnp` (receivers send CNPs for ECN-marked data; default
False), `needs_int` (switches stamp INT records, `ack.hops`; default False).  Each
`flow` handle has a `state` attribute for the scheme's per-flow data, and
`flow.set_timer(delay_ps, timer_id)` schedules `on_timer(flow, timer_id)`.
"""
from __future__ import annotations

import importlib
import os
import sys

from rocesim.cc.scheme import Scheme
from rocesim.errors import ScenarioError
from rocesim.settings import Number, Rate, Setting, Size, Time


def rate(default, doc=""):
    """A rate parameter (value in bit/s after parsing, e.g. "100Mbps")."""
    return Setting(Rate(), default, doc)


def size(default, doc=""):
    """A size parameter (bytes after parsing, e.g. "16KB")."""
    return Setting(Size(), default, doc)


def time(default, doc=""):
    """A time parameter (picoseconds after parsing, e.g. "10us")."""
    return Setting(Time(), default, doc)


def number(default, doc=""):
    """A plain number parameter."""
    return Setting(Number(float("-inf"), float("inf"), closed=True), default, doc)


class PythonScheme:
    """Base class of schemes written in Python; every callback defaults to doing nothing."""

    params: dict = {}
    needs_cnp = False
    needs_int = False

    def __init__(self, **params):
        for name, value in params.items():
            setattr(self, name, value)

    def on_start(self, flow):
        """The flow starts: called when its NIC first sends for it (its queue pair opens then;
        a flow released while its NIC serves others waits its turn first).  It sends at
        flow.rate_bps (line rate) with no window unless set."""

    def on_ack(self, flow, ack):
        """An ACK arrived (ack.acked_bytes, ack.seq, ack.rtt_ps, ack.ecn, ack.packets,
        ack.marked_packets: the data packets it covers and how many were CE-marked, ack.hops)."""

    def on_nack(self, flow):
        """A NACK arrived (the NIC has already gone back to the first missing byte)."""

    def on_cnp(self, flow):
        """A CNP arrived (only when needs_cnp)."""

    def on_timeout(self, flow):
        """The retransmission timeout fired."""

    def on_timer(self, flow, timer_id):
        """A timer set with flow.set_timer fired."""


def _import(module_name: str):
    """Import a module, also looking in the current folder (last, so nothing is shadowed)."""
    try:
        return importlib.import_module(module_name)
    except ImportError:
        if os.getcwd() in sys.path:
            raise
        sys.path.append(os.getcwd())
        try:
            return importlib.import_module(module_name)
        finally:
            sys.path.remove(os.getcwd())


def python_scheme(spec: str, key: str = "cc.scheme") -> Scheme:
    """The `Scheme` of a Python class named "package.module:ClassName"."""
    module_name, _, class_name = spec.partition(":")
    try:
        module = _import(module_name)
    except ImportError as e:
        raise ScenarioError(key, f"cannot import module {module_name!r} ({e}); is it on PYTHONPATH "
                                 "or under the current folder?") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, PythonScheme)):
        raise ScenarioError(key, f"{spec!r} is not a subclass of rocesim.cc.PythonScheme")
    return Scheme(spec, "rocesim._core.cc_python", (cls.__doc__ or spec).strip().splitlines()[0],
                  dict(cls.params), needs_int=bool(cls.needs_int), needs_cnp=bool(cls.needs_cnp),
                  py_class=cls)
