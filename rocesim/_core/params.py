"""The core's parameters: one row each, naming the setting, the C field and the conversion once.

`core_params` turns the resolved settings (the `nic:` and `switch:` sections, the scheme's
needs, the mode, the flow mode's calibration, the seed) into the dict `Core(world, params)`
takes.  A row of `NET` is a field of the C struct `NetParams` (defs.pxd) of the same name:
`Core` checks the dict against the rows' ranges (`check`) and fills the struct from it in
one step with Cython's dict-to-struct conversion, which refuses a field that has no row;
`check_fields` refuses a row that has no field.  A row of `RUN` is read by `Core` itself.
Where the C value is the setting's value (in bytes, ps, a count) the field has the
setting's name; a value derived from several settings (a mask of priorities, a quantum)
is named for what it holds, and its row says where it comes from.

Plain data and plain-Python functions, as declare.py: the core imports nothing above
itself, and nothing else names a parameter between the settings' declarations
(rocesim/config.py) and the C code that reads it.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

NPRIO = 8                    # priorities per port (defs.pxd's NPRIO; engine.pyx checks they agree)
ACK_HEADERS = 46             # bytes of headers of an ACK: one echoing INT carries these and the INT header
AUTO_RTO = 10**9             # nic.rto 'auto', where packets can be lost (_rto_mask): 1 ms (ps)
WHOLE_NS = 1000              # nic.serialization 'whole_ns': wire and pacing times in whole ns (ps)
LOSS_RECOVERY = ("go_back_n", "selective_repeat")   # nic.loss_recovery as C takes it: the index
                                                    # (defs.pxd's LossRecovery enum, in this order)
DELIVERY = ("ordered", "unordered")                 # nic.delivery, likewise (defs.pxd's Delivery enum)
ENTROPY = ("fixed", "oblivious", "reps")            # nic.entropy, likewise (defs.pxd's EntropyMode enum)
DATA_PRIORITIES = 0xFE                              # priorities 1..7 (0 is the control queue)


class Range(NamedTuple):
    """The values C accepts for a row: lo..hi (None: unbounded), lo itself excluded if
    `lo_open`; `means` says what the values stand for, for the error."""

    lo: float | None = None
    hi: float | None = None
    means: str = ""
    lo_open: bool = False

    def __contains__(self, v) -> bool:
        above = self.lo is None or (v > self.lo if self.lo_open else v >= self.lo)
        return above and (self.hi is None or v <= self.hi)


class Param(NamedTuple):
    """One parameter: its `name` (the dict's key and, in `NET`, the C field), the `setting`
    it comes from (a dotted path into the resolved sections), the conversion of that value
    into what C takes (`convert(value, sections)`), and the range C accepts."""

    name: str
    setting: str
    convert: Callable[[Any, dict], Any] | None = None
    range: Range | None = None


def _auto(value_for_auto) -> Callable[[Any, dict], Any]:
    """A setting that may be the word 'auto': C's number for it, else the value."""
    return lambda v, sections: value_for_auto if v == "auto" else v


def _as_int(v, sections) -> int:
    return int(v)


def _mask(priorities) -> int:
    """Bit p set for each priority p."""
    return sum(1 << p for p in priorities)


def _mask_if(enabled: str) -> Callable[[Any, dict], int]:
    """The priorities given, as a mask, when the boolean setting `enabled` is on; else 0."""
    return lambda v, sections: _mask(v) if _setting(sections, enabled) else 0


def _ack_int_size(ack_size, sections) -> int:
    """An ACK echoing INT: its headers and the INT header, at least the ACK size."""
    return max(ack_size, ACK_HEADERS + _setting(sections, "nic.int_header"))


def _rto_mask(rto, sections) -> int:
    """Priorities whose flows arm the retransmission timeout: with `nic.rto: auto`, those on
    which a packet can be lost.  The lossy ones (the HPCC fork has no timeout; under PFC
    nothing is lost to buffers), and all of them when a connection's packets may take
    several paths into ordered receivers: go-back-N discards what arrives out of order and
    NACKs a gap once per nack_interval, so that a last packet that overtakes its
    predecessor twice (its first NACK's retransmission reordered again) is never asked for
    again, and without a timeout the flow waits for good.  A RoCE requester recovers it
    with its transport timer (the local ACK timeout, 4.096 us x 2**timeout, which every
    reliable-connected queue pair arms): so does this one (issue 31)."""
    if rto != "auto" or sections["multipath_into_ordered"]:
        return 0xFF
    pfc = _setting(sections, "switch.pfc")
    lossless = _mask(pfc["priorities"]) if pfc["enabled"] else 0
    return 0xFF & ~lossless


def _sack_carried(delivery, sections) -> int:
    """ACKs and NACKs carry the seq of the data packet they answer (a SACK) when receivers
    keep what arrives out of order: unordered delivery, or selective repeat."""
    return int(delivery == "unordered" or _setting(sections, "nic.loss_recovery") == "selective_repeat")


def _trim_mask(enabled, sections) -> int:
    """Priorities whose data switches trim (switch.trimming on): the data priorities PFC does
    not make lossless."""
    if not enabled:
        return 0
    pfc = _setting(sections, "switch.pfc")
    return DATA_PRIORITIES & ~(_mask(pfc["priorities"]) if pfc["enabled"] else 0)


def _bounce_priority(v, sections) -> int:
    return {"none": 0, "next": -1}.get(v, v)


# name, setting, conversion (None: the value as it is), range C accepts
NET = (
    Param("payload", "nic.payload", None, Range(1, None, "positive")),
    Param("header", "nic.header"),
    Param("int_header", "nic.int_header"),
    Param("ack_size", "nic.ack_size"),
    Param("ack_int_size", "nic.ack_size", _ack_int_size),
    Param("cnp_size", "nic.cnp_size"),
    Param("pause_size", "nic.pause_size"),
    Param("ack_every", "nic.ack_every", None, Range(1, 255, "1..255")),
    Param("ack_timeout", "nic.ack_timeout", _auto(-1),
          Range(-1, None, "-1 (auto), 0 (none) or a positive number of ps")),
    Param("ack_high_priority", "nic.ack_high_priority", _as_int),
    Param("loss_recovery", "nic.loss_recovery", lambda v, sections: LOSS_RECOVERY.index(v)),
    Param("delivery", "nic.delivery", lambda v, sections: DELIVERY.index(v)),
    Param("reorder_threshold", "nic.reorder_threshold", None, Range(0, 2**31 - 1, "0 (off) or a number of packets")),
    Param("sack_carried", "nic.delivery", _sack_carried),
    Param("ttl", "nic.ttl", None, Range(1, 255, "1..255")),
    Param("cnp_interval", "nic.cnp_interval"),
    Param("nack_interval", "nic.nack_interval"),
    Param("rto", "nic.rto", _auto(AUTO_RTO)),
    Param("rto_mask", "nic.rto", _rto_mask),
    Param("entropy_every", "nic.entropy_every", lambda v, sections: 0 if v == "none" else v,
          Range(0, 1 << 30, "0 (none) or a number of packets")),
    Param("entropy", "nic.entropy", lambda v, sections: ENTROPY.index(v)),
    Param("entropy_values", "nic.entropy_values", None, Range(1, 1 << 15, "a power of two up to 32768")),
    Param("entropy_seed", "seed", None, Range(0, 2**64 - 1, "0 .. 2**64-1")),
    Param("tx_quantum", "nic.serialization", lambda v, sections: WHOLE_NS if v == "whole_ns" else 0,
          Range(0, None, "0 (exact) or a positive number of ps")),
    Param("rccc", "nic.rccc", _as_int),
    Param("rccc_credit", "nic.rccc_credit", None, Range(1, None, "positive")),
    Param("rccc_pace", "nic.rccc_pace", None, Range(0, 1, "in (0, 1]", lo_open=True)),
    Param("rccc_speculative", "nic.rccc_speculative", None, Range(0, None, ">= 0")),
    Param("reserve", "switch.pfc.reserve"),
    Param("resume_offset", "switch.pfc.resume_offset"),
    Param("pfc_mask", "switch.pfc.priorities", _mask_if("switch.pfc.enabled")),
    Param("pfc_dynamic", "switch.pfc.threshold", lambda v, sections: int(v == "dynamic")),
    Param("pfc_threshold", "switch.pfc.threshold", lambda v, sections: 0 if v == "dynamic" else v),
    Param("bounce_priority", "switch.pfc.bounce_priority", _bounce_priority,
          Range(-1, NPRIO - 1, "-1 (next), 0 (off) or 1..7")),
    Param("ecn_mask", "switch.ecn.priorities", _mask_if("switch.ecn.enabled")),
    Param("lossy_dynamic", "switch.lossy.dynamic", _as_int),
    Param("lossy_alpha", "switch.lossy.alpha"),
    Param("trim_mask", "switch.trimming.enabled", _trim_mask),
    Param("trim_threshold", "switch.trimming.threshold", _auto(0), Range(0, None, "0 (auto) or a size in bytes")),
    Param("trim_size", "switch.trimming.size", None, Range(1, 2**31 - 1, "a positive size in bytes")),
    Param("trim_priority", "switch.trimming.priority", None, Range(0, NPRIO - 1, "0..7")),
    Param("int_enabled", "scheme.needs_int", _as_int),
)

RUN = (
    Param("seed", "seed"),
    Param("shared_hash_seed", "switch.load_balancing.hash_seed", lambda v, sections: int(v == "shared")),
    Param("fluid", "mode", lambda v, sections: v == "flow"),     # network flows as fluids (fluid.pyx)
    Param("fluid_share", "flow.share", None, Range(0, 1, "in (0, 1]", lo_open=True)),
    Param("fluid_startup_ps", "flow.startup", None, Range(0, None, ">= 0")),
)


def _setting(sections: dict, path: str):
    value = sections
    for key in path.split("."):
        value = value[key]
    return value


def core_params(*, seed: int, nic: dict, switch: dict, needs_int: bool, mode: str, flow: dict,
                multipath_into_ordered: bool) -> dict:
    """The core's parameters from the resolved settings: `nic` and `switch` (config.NIC,
    config.SWITCH), whether the scheme needs INT, the mode ('packet' or 'flow'), the flow
    mode's calibration ({share, startup}) and whether switches or senders may spread a
    connection over several paths into ordered receivers; one key per row of NET and RUN."""
    sections = dict(seed=seed, nic=nic, switch=switch, scheme={"needs_int": needs_int}, mode=mode, flow=flow,
                    multipath_into_ordered=multipath_into_ordered)
    out = {}
    for row in NET + RUN:
        value = _setting(sections, row.setting)
        out[row.name] = value if row.convert is None else row.convert(value, sections)
    return out


def check(params: dict) -> None:
    """Refuse a parameter out of its row's range (ValueError naming it and what it may be)."""
    for row in NET + RUN:
        if row.range is not None and params[row.name] not in row.range:
            raise ValueError(f"core params: {row.name} must be {row.range.means}, got {params[row.name]!r}")


def check_fields(fields: dict) -> None:
    """Refuse a `NetParams` (`fields`: the struct as a dict) that lacks a row of NET (Cython's
    own conversion refuses the other way: a field with no row)."""
    missing = [row.name for row in NET if row.name not in fields]
    if missing:
        raise ValueError(f"core params: rows {missing} have no field in NetParams (fields: {', '.join(fields)})")
