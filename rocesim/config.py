"""Settings of switches and NICs: every key, its unit, default and meaning, in one place.

The YAML scenario (`switch:` and `nic:` sections) and the Python API
(`Simulation(switch={...}, nic={...})`) read the same keys through `resolve`, which
rejects unknown keys and bad values with a `ScenarioError` naming the key path.
Defaults follow the HPCC ns-3 fork (the reference most RoCE results come from),
except where a comment says otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from rocesim.errors import ScenarioError
from rocesim.units import parse_rate, parse_size, parse_time

DATA_PRIORITIES = (1, 2, 3, 4, 5, 6, 7)   # priority 0 is the strict-priority control queue
DEFAULT_FLOW_PRIORITY = 3                 # the HPCC fork's data priority group
AUTO_RTO = 10**9                          # nic.rto: auto on lossy priorities: 1 ms (in ps)


@dataclass(frozen=True)
class Key:
    """One setting: `parse(value, key_path) -> value`, its default and its meaning."""

    parse: Callable[[Any, str], Any]
    default: Any
    doc: str


# --- value parsers: parse(value, key_path) -> value, or a ScenarioError naming the key ---

def boolean(v, key):
    if not isinstance(v, bool):
        raise ScenarioError(key, f"expected true or false, got {v!r}")
    return v


def integer(lo, hi):
    def parse(v, key):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ScenarioError(key, f"expected an integer, got {v!r}")
        if not lo <= v <= hi:
            raise ScenarioError(key, f"must be between {lo} and {hi}, got {v}")
        return v
    return parse


def number(lo, hi):
    def parse(v, key):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ScenarioError(key, f"expected a number, got {v!r}")
        if not lo <= v <= hi:
            raise ScenarioError(key, f"must be between {lo} and {hi}, got {v}")
        return float(v)
    return parse


def choice(*options):
    def parse(v, key):
        if v not in options:
            raise ScenarioError(key, f"must be one of {', '.join(map(str, options))}; got {v!r}")
        return v
    return parse


def _bounded_size(v, key, lo, hi):
    n = parse_size(v, key)
    if not lo <= n <= hi:
        raise ScenarioError(key, f"must be between {lo}B and {hi}B, got {n}B")
    return n


def _priorities(v, key):
    if not isinstance(v, (list, tuple)) or not v:
        raise ScenarioError(key, f"expected a non-empty list of priorities 1..7, got {v!r}")
    for p in v:
        integer(1, 7)(p, key)
    return tuple(sorted(set(v)))


def either(word, parse_other):
    """The literal `word` (e.g. 'auto', 'dynamic'), or a value `parse_other` accepts."""
    def parse(v, key):
        return v if v == word else parse_other(v, key)
    return parse


def _per_rate_size(v, key):
    """'auto', one size for every port, or {rate: size} by port rate."""
    if v == "auto":
        return v
    if isinstance(v, dict):
        out = {}
        for rate, size in v.items():
            out[parse_rate(rate, f"{key}.{rate}")] = parse_size(size, f"{key}.{rate}")
        return out
    return parse_size(v, key)


def _positive_time(v, key):
    t = parse_time(v, key)
    if t <= 0:
        raise ScenarioError(key, f"must be positive, got {v!r}")
    return t


SWITCH = {
    "buffer": Key(parse_size, "32MB", "shared buffer per switch"),
    "pfc": {
        "enabled": Key(boolean, True, "priority flow control (lossless) on the data priorities"),
        "priorities": Key(_priorities, DATA_PRIORITIES, "priorities that are lossless when PFC is on"),
        "threshold": Key(either("dynamic", parse_size), "dynamic",
                         "XOFF threshold: 'dynamic' (free buffer / 2**shift, the HPCC fork's rule; "
                         "shift 3 at host link speed, one less per doubling of port rate) or a static "
                         "size of shared buffer per (ingress port, priority)"),
        "headroom": Key(either("auto", parse_size), "auto",
                        "headroom per port for bytes that still arrive after XOFF; 'auto' = the larger of "
                        "3 x rate x delay (the HPCC fork's) and the worst case (3 MTU frames + the PAUSE "
                        "frames + a round trip at line rate); a size below the worst case is refused"),
        "reserve": Key(parse_size, "4KiB", "private buffer per (ingress port, priority)"),
        "resume_offset": Key(parse_size, "3KiB", "XON when shared use is this far below the threshold"),
        "bounce_priority": Key(either("none", either("next", integer(1, 7))), "none",
                               "deadlock avoidance: a data packet that comes down from an upper-layer "
                               "switch and goes up again (against up-down routing: after a failure or "
                               "a stale route) moves to the 'next' priority (Tagger-style, a lossless "
                               "class per bounce) or to the priority given (a lossy one drops instead "
                               "of pausing); 'none' = off"),
        # the PFC watchdog as vendors ship it (SONiC's PFC watchdog design; Juniper's defaults:
        # polls every 100 ms, detection after 200 ms, restoration 200 ms)
        "watchdog": {
            "enabled": Key(boolean, False, "the PFC watchdog on every switch port and lossless priority"),
            "poll_interval": Key(_positive_time, "100ms", "time between two polls of the queues"),
            "detection_time": Key(parse_time, "200ms",
                                  "a queue paused all along with packets waiting this long is in a storm"),
            "restoration_time": Key(parse_time, "200ms",
                                    "a stormed queue is lossless again once its peer has not paused it "
                                    "for this long"),
            "action": Key(choice("drop", "forward"), "drop",
                          "drop: flush the queue, drop its arrivals and the peer's packets of that "
                          "priority (send it no PAUSE); forward: ignore the peer's PAUSE"),
        },
    },
    "ecn": {
        "enabled": Key(boolean, True, "RED/ECN marking of data packets at egress dequeue"),
        "kmin": Key(_per_rate_size, "auto",
                    "marking starts above this queue: a size, {rate: size}, or 'auto' "
                    "(the scheme's default; 100KB x rate/25G for most)"),
        "kmax": Key(_per_rate_size, "auto", "marking probability reaches pmax here (above: always mark)"),
        "pmax": Key(either("auto", number(0.0, 1.0)), "auto", "marking probability at kmax; 'auto' = the scheme's (0.2)"),
        "priorities": Key(_priorities, DATA_PRIORITIES, "priorities whose packets may be marked"),
    },
    "lossy": {
        "dynamic": Key(boolean, True, "without PFC: drop when the egress queue exceeds alpha x free buffer"),
        "alpha": Key(number(0.0, 1e6), 1.0, "dynamic-threshold alpha for lossy queues"),
    },
}

NIC = {
    "payload": Key(lambda v, k: _bounded_size(v, k, 1, 65536), "1000B",
                   "payload bytes per data packet (MTU payload), 1B to 64KiB"),
    "header": Key(parse_size, "48B", "header bytes of a data packet on the wire (Eth+IP+UDP+BTH)"),
    "int_header": Key(parse_size, "42B", "extra bytes on data packets when INT is on (HPCC: 5 hop slots)"),
    "ack_size": Key(parse_size, "60B", "ACK/NACK bytes on the wire (46B of headers padded to 60B)"),
    "cnp_size": Key(parse_size, "64B", "CNP bytes on the wire"),
    "pause_size": Key(parse_size, "64B", "PFC PAUSE frame bytes on the wire"),
    "ack_every": Key(integer(1, 255), 1, "the receiver ACKs every N in-order data packets (and the last "
                                          "byte, and at the latest ack_timeout after the first packet "
                                          "owed); the ACK echoes how many of them were ECN-marked"),
    "ack_timeout": Key(either("auto", parse_time), "auto",
                       "with ack_every > 1, the longest the receiver holds an ACK it owes (a coalescing "
                       "timer from the first packet the ACK covers): a sender whose window holds fewer "
                       "than ack_every packets gets its ACK then; 'auto' = the time ack_every full "
                       "data packets take on the receiver's link, so a flow arriving at line rate is "
                       "still ACKed every ack_every packets (RoCE requesters ask for an ACK with the "
                       "AckReq bit and responders answer at once: no ACK waits longer than that); 0us = "
                       "no timer (the HPCC fork's receiver: such a window then stalls for good)"),
    "ack_high_priority": Key(boolean, False,
                             "true: ACK/NACK/CNP in strict-priority queue 0 (never paused); false "
                             "(default): in the flow's data priority, as at the HPCC fork's switches"),
    "cnp_interval": Key(parse_time, "50us", "at most one CNP per flow per interval (DCQCN NP)"),
    "nack_interval": Key(parse_time, "500us", "at most one NACK per flow per interval for the same gap"),
    "rto": Key(either("auto", parse_time), "auto",
               "retransmission timeout: no ACK progress for this long; 'auto' = none for flows on "
               "lossless (PFC) priorities, as the HPCC fork has none (a timeout firing during a long "
               "pause would turn a deadlock into retransmissions), 1ms on lossy ones; a time applies "
               "to every flow; 0 turns it off"),
    "loss_recovery": Key(choice("go_back_n", "selective_repeat"), "go_back_n",
                         "go-back-N (RoCE NICs) or IRN-style selective repeat for lossy RoCE"),
    "ttl": Key(integer(1, 255), 64, "hop limit of every packet (a routing loop without PFC ends)"),
    "serialization": Key(choice("exact", "whole_ns"), "exact",
                         "time a frame takes on a wire (every port) and between two packets a NIC "
                         "paces: 'exact' (bytes x 8 / rate, to the ps); 'whole_ns' rounds it down to "
                         "whole nanoseconds, as ns-3 with its 1 ns time step does (the HPCC fork's "
                         "runs: a 1048 B frame takes 83 ns at 100 Gb/s instead of 83.84, 20 ns at "
                         "400 Gb/s instead of 20.96): for comparison with such runs only, since every "
                         "link then beats its rate by up to 1 ns per frame"),
}


DEADLOCK = {
    "enabled": Key(boolean, False, "check for PFC deadlocks while the run goes (true as soon as a "
                                   "`deadlock:` section is given; `deadlock: true` takes the defaults)"),
    "interval": Key(_positive_time, "100us", "time between two checks of the wait-for graph"),
    "threshold": Key(parse_time, "1ms", "a cycle is a deadlock when all its queues have been paused "
                                        "continuously for this long (transient pauses are not)"),
    "stop": Key(boolean, False, "end the run at the first deadlock found"),
}


def resolve_deadlock(given, where="deadlock") -> dict:
    """The `deadlock:` section: true/false, or a mapping of DEADLOCK keys (on unless
    `enabled: false`)."""
    if given is None or isinstance(given, bool):
        return resolve(DEADLOCK, {"enabled": bool(given)}, where)
    if isinstance(given, dict) and "enabled" not in given:
        given = {**given, "enabled": True}
    return resolve(DEADLOCK, given, where)


def resolve(spec: dict, given: dict | None, where: str) -> dict:
    """Defaults of `spec` overlaid with the user's `given` dict, parsed; unknown keys are errors."""
    given = {} if given is None else given
    if not isinstance(given, dict):
        raise ScenarioError(where, f"expected a mapping of settings, got {type(given).__name__}")
    unknown = set(given) - set(spec)
    if unknown:
        k = sorted(map(str, unknown))[0]
        raise ScenarioError(f"{where}.{k}", f"unknown key; valid keys here: {', '.join(spec)}")
    out = {}
    for name, entry in spec.items():
        path = f"{where}.{name}"
        if isinstance(entry, dict):
            out[name] = resolve(entry, given.get(name), path)
        else:
            out[name] = entry.parse(given.get(name, entry.default), path)
    return out


def describe(spec: dict, prefix: str = "") -> list[tuple[str, Any, str]]:
    """(key path, default, meaning) of every setting, for docs and `rocesim keys`."""
    rows = []
    for name, entry in spec.items():
        if isinstance(entry, dict):
            rows += describe(entry, f"{prefix}{name}.")
        else:
            rows.append((prefix + name, entry.default, entry.doc))
    return rows
