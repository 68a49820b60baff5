"""SimAI.conf (SimAI 1.6's ns-3 settings, the HPCC ns-3 fork's config format) as scenario sections.

SimAI 1.6 runs its ns-3 backend with a config file of one ``KEY value...`` per line, read
by ``ReadConf`` in aliyun/SimAI astra-sim-alibabacloud/astra-sim/network_frontend/ns3/
common.h (the HPCC fork's simulation/scratch/third.cc reads the same keys, plus
TOPOLOGY_FILE and QLEN_MON_START/END).  :func:`read_simai_conf` turns each key into the
rocesim setting with the same meaning (units converted), or lists it as ignored with the
reason: an output file or monitor (rocesim writes its own), a key SimAI does not act on,
or a behaviour rocesim has no setting for.  What the keys mean follows ns-3-alibabacloud's
rdma-hw.cc, switch-mmu.cc, switch-node.cc and qbb-net-device.cc.

Only the keys in the file are mapped: a key the file leaves out keeps rocesim's default,
not SimAI's (common.h's: e.g. a 16 MiB buffer, CC_MODE 1), except that a file without
CC_MODE is read as DCQCN, SimAI's default.  ``rocesim simai-conf FILE`` prints the result
as YAML to paste into a scenario.
"""
from __future__ import annotations

import math
import os
import re

import yaml

from rocesim._textfile import Line, read_lines
from rocesim.errors import ScenarioError
from rocesim.units import format_rate, format_time

__all__ = ["read_simai_conf", "CC_MODES"]

# CC_MODE -> rocesim's scheme (rdma-hw.cc: 1 DCQCN "mlx", 3 HPCC, 7 TIMELY, 8 DCTCP, 10 HPCC-PINT)
CC_MODES = {1: "dcqcn", 3: "hpcc", 7: "timely", 8: "dctcp", 10: None}
_MODE_NAMES = {1: "DCQCN", 3: "HPCC", 7: "TIMELY", 8: "DCTCP", 10: "HPCC-PINT"}
SIMAI_DEFAULT_CC_MODE = 1       # common.h: cc_mode = 1
SIMAI_DEFAULT_PAYLOAD = 1000    # common.h: packet_payload_size = 1000

OUTPUT = "output/monitoring, rocesim writes its own (OUTPUTS.md)"
FORK_ONLY = "; a key of the HPCC fork's third.cc that SimAI 1.6 does not read"

# keys ignored whatever their value
_ALWAYS_IGNORED = {
    **{k: OUTPUT for k in ("TRACE_FILE", "TRACE_OUTPUT_FILE", "FCT_OUTPUT_FILE", "PFC_OUTPUT_FILE",
                           "ENABLE_TRACE", "QLEN_MON_FILE", "BW_MON_FILE", "RATE_MON_FILE", "CNP_MON_FILE",
                           "MON_START", "MON_END", "QP_MON_INTERVAL", "BW_MON_INTERVAL", "QLEN_MON_INTERVAL")},
    "QLEN_MON_START": OUTPUT + FORK_ONLY,
    "QLEN_MON_END": OUTPUT + FORK_ONLY,
    "TOPOLOGY_FILE": "the topology is the scenario's topology section (kind simai_file or hpcc_file)" + FORK_ONLY,
    "FLOW_FILE": "SimAI's flows come from its workload (rocesim: a workload entry of kind simai, or traffic "
                 "of kind hpcc_flow_file for the fork's flow files)",
    "DATA_RATE": "each link's rate comes from the topology file (SimAI overwrites this value with it)",
    "LINK_DELAY": "each link's delay comes from the topology file (SimAI overwrites this value with it)",
    "SIMULATOR_STOP_TIME": "SimAI 1.6 reads it but runs until the workload ends (AstraSimNetwork.cc; the "
                           "HPCC fork stops there): rocesim's top-level `stop` key ends a run early if wanted",
    "GLOBAL_T": "SimAI 1.6 sets it to 1 whatever the file says (common.h ReadConf): one window and base RTT "
                "for all flows, the largest over host pairs, as rocesim's window 'bdp' and hpcc's T",
    "PAUSE_TIME": "the fork's PAUSE holds its queue until the XON frame whatever this time field says "
                  "(qbb-net-device.cc Receive), as rocesim's PFC does: nothing to set",
    "L2_CHUNK_SIZE": "the fork's extra ACK whenever the next expected byte is a multiple of it (and, with "
                     "L2_BACK_TO_ZERO 1, the chunk a NACK goes back to): rocesim has no chunks",
    "INT_MULTI": "the granularity of the fork's INT byte counters (IntHop::multi); rocesim's INT records "
                 "are exact",
}

# keys that belong to some CC_MODEs only
_SCHEME_KEYS = {
    "ALPHA_RESUME_INTERVAL": (1,), "RATE_DECREASE_INTERVAL": (1,), "RP_TIMER": (1,), "FAST_RECOVERY_TIMES": (1,),
    "CLAMP_TARGET_RATE": (1,), "EWMA_GAIN": (1, 8), "RATE_AI": (1, 3, 7, 10), "RATE_HAI": (1, 7),
    "MIN_RATE": (1, 3, 7, 8, 10), "DCTCP_RATE_AI": (8,), "U_TARGET": (3, 10), "MI_THRESH": (3, 10),
    "FAST_REACT": (3, 10), "MULTI_RATE": (3,), "SAMPLE_FEEDBACK": (3,), "PINT_LOG_BASE": (10,),
    "PINT_PROB": (10,), "HAS_WIN": (1, 3, 7, 8, 10), "VAR_WIN": (1, 3, 7, 8, 10),
}

# how many values each key takes after its name (None: a rate-keyed map "n rate value ...")
_ARITY = {**{k: 1 for k in (*_ALWAYS_IGNORED, *_SCHEME_KEYS)}, "LINK_DOWN": 3,
          "KMAX_MAP": None, "KMIN_MAP": None, "PMAX_MAP": None,
          **{k: 1 for k in ("ENABLE_QCN", "USE_DYNAMIC_PFC_THRESHOLD", "PACKET_PAYLOAD_SIZE", "L2_ACK_INTERVAL",
                            "L2_BACK_TO_ZERO", "CC_MODE", "ERROR_RATE_PER_LINK", "RATE_BOUND", "ACK_HIGH_PRIO",
                            "NIC_TOTAL_PAUSE_TIME", "BUFFER_SIZE")}}

# ns-3's DataRate strings ("50Mb/s", "1Gbps", "10MB/s"): SI or binary prefix, bits or Bytes
_DATA_RATE = re.compile(r"^([0-9.eE+-]+)\s*(|k|K|M|G|Ki|Mi|Gi)(b|B)(ps|/s)$")
_PREFIX = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


class _Conf:
    """The file's keys, each with its Line (the last line wins, as SimAI reads the file)."""

    def __init__(self, path):
        self.lines: dict[str, Line] = {}
        self.ignored: list[tuple[str, str]] = []
        for line in read_lines(path):
            key, values = line.fields[0], line.fields[1:]
            arity = _ARITY.get(key, len(values))
            if arity is None:
                _check_map(line)
            elif len(values) != arity:
                raise line.error(f"{key} takes {arity} value{'s' if arity > 1 else ''}, found {len(values)}: "
                                 f"{' '.join(values)!r}")
            if key in self.lines:
                self.ignored.append((key, f"line {self.lines[key].number} is overridden by line {line.number} "
                                          "(SimAI keeps the last)"))
            self.lines[key] = line

    def __contains__(self, key):
        return key in self.lines

    def int(self, key, lo=0):
        value = self.lines[key].int_field(1, key)
        if value < lo:
            raise self.lines[key].error(f"{key} must be at least {lo}, got {value}")
        return value

    def flag(self, key):
        return self.int(key) != 0          # SimAI reads these as integers: non-zero is on

    def number(self, key, lo=0.0):
        value = self.lines[key].float_field(1, key)
        if not math.isfinite(value) or value < lo:
            raise self.lines[key].error(f"{key} must be a finite number of at least {lo:g}, got {value!r}")
        return value

    def time_us(self, key):
        """A time the fork reads in microseconds (rdma-hw.cc schedules MicroSeconds(v)), as rocesim's."""
        return format_time(round(self.number(key) * 1e6))

    def rate(self, key):
        """An ns-3 DataRate string, as rocesim's rate."""
        return format_rate(self.bps(key))

    def bps(self, key):
        """An ns-3 DataRate string, in bits per second."""
        line = self.lines[key]
        m = _DATA_RATE.match(line.fields[1])
        if not m:
            raise line.error(f"{key} must be an ns-3 data rate such as 50Mb/s or 1Gbps, got {line.fields[1]!r}")
        try:
            bps = float(m.group(1)) * _PREFIX[m.group(2)] * (8 if m.group(3) == "B" else 1)
        except ValueError:
            raise line.error(f"{key} must be an ns-3 data rate such as 50Mb/s, got {line.fields[1]!r}") from None
        if not math.isfinite(bps) or bps < 1:
            raise line.error(f"{key} must be a positive rate, got {line.fields[1]!r}")
        return round(bps)

    def rate_map(self, key, value):
        """A "count rate value ..." map as {rocesim rate: value(text, name)}."""
        line = self.lines[key]
        out = {}
        for i in range(2, len(line.fields), 2):
            rate = line.int_field(i, f"{key}'s port rate (bps)")
            if rate <= 0:
                raise line.error(f"{key}'s port rate must be positive bps, got {rate}")
            out[format_rate(rate)] = value(line, i + 1, f"{key}'s value for {format_rate(rate)}")
        return out


def _check_map(line):
    key, values = line.fields[0], line.fields[1:]
    count = line.int_field(1, f"{key}'s count") if values else -1
    if count < 0 or len(values) != 1 + 2 * count:
        raise line.error(f"{key} takes 'count rate value rate value ...' with count pairs, found "
                         f"{' '.join(values)!r}")


def _kilobytes(line, i, name):
    kb = line.int_field(i, name)
    if kb < 0:
        raise line.error(f"{name} must be a non-negative number of KB, got {kb}")
    return f"{kb}KB"                       # switch-mmu.cc ConfigEcn: kmin * 1000 bytes


def _probability(line, i, name):
    p = line.float_field(i, name)
    if not 0.0 <= p <= 1.0:
        raise line.error(f"{name} must be a probability in [0, 1], got {p!r}")
    return p


def read_simai_conf(path: str | os.PathLike[str]) -> tuple[dict, list[tuple[str, str]]]:
    """Read a SimAI.conf (or an HPCC ns-3 fork config) into rocesim scenario sections.

    Returns ``(sections, ignored)``: ``sections`` holds the ``nic``, ``switch`` and ``cc``
    mappings of a scenario (values as YAML would give them: "9000B", "32MiB",
    {"100Gbps": "400KB"}), only for the keys the file sets; ``ignored`` lists, in file
    order, every other key with the reason it has no rocesim setting.  A malformed line or
    value raises one :class:`ScenarioError` keyed "file:line".
    """
    conf = _Conf(path)
    out = _Sections()
    for read in (_switches, _nics, _links, _congestion_control):
        read(conf, out)
    return out.result(conf)


class _Sections:
    """What the file's keys become: the scenario's sections as they fill, and per key read
    so far None (mapped) or the reason it is ignored."""

    def __init__(self):
        self.nic, self.switch, self.ecn, self.pfc, self.cc, self.params = {}, {}, {}, {}, {}, {}
        self.done: dict[str, str | None] = {}

    def mapped(self, key, section, name, value):
        section[name] = value
        self.done[key] = None

    def ignore(self, key, reason):
        self.done[key] = reason

    def result(self, conf: _Conf) -> tuple[dict, list[tuple[str, str]]]:
        """(sections, ignored) of `read_simai_conf`, the keys not read yet ignored."""
        for key in conf.lines:
            if key not in self.done:
                self.done[key] = _ALWAYS_IGNORED.get(key, "unknown to SimAI 1.6 (common.h ReadConf skips it)")
        if self.ecn:
            self.switch["ecn"] = self.ecn
        if self.pfc:
            self.switch["pfc"] = self.pfc
        sections = {name: s for name, s in (("nic", self.nic), ("switch", self.switch), ("cc", self.cc)) if s}
        by_line = sorted(conf.lines, key=lambda k: conf.lines[k].number)
        return sections, conf.ignored + [(k, self.done[k]) for k in by_line if self.done[k] is not None]


def _switches(conf: _Conf, out: _Sections) -> None:
    if "BUFFER_SIZE" in conf:       # common.h: ConfigBufferSize(buffer_size * 1024 * 1024)
        out.mapped("BUFFER_SIZE", out.switch, "buffer", f"{conf.int('BUFFER_SIZE', 1)}MiB")
    if "ENABLE_QCN" in conf:        # switch-node.cc EcnEnabled: ECN marking at every switch
        out.mapped("ENABLE_QCN", out.ecn, "enabled", conf.flag("ENABLE_QCN"))
    for key, name, value in (("KMIN_MAP", "kmin", _kilobytes), ("KMAX_MAP", "kmax", _kilobytes),
                             ("PMAX_MAP", "pmax", _probability)):
        if key in conf:
            out.mapped(key, out.ecn, name, conf.rate_map(key, value))
    if "USE_DYNAMIC_PFC_THRESHOLD" in conf:
        if conf.flag("USE_DYNAMIC_PFC_THRESHOLD"):   # switch-mmu.cc GetPfcThreshold: free >> shift
            out.mapped("USE_DYNAMIC_PFC_THRESHOLD", out.pfc, "threshold", "dynamic")
        else:
            out.ignore("USE_DYNAMIC_PFC_THRESHOLD", "0 has no effect: the fork's switches always use the dynamic "
                       "threshold (QbbNetDevice's DynamicThreshold is never read; switch-mmu.cc GetPfcThreshold), "
                       "as rocesim's switch.pfc.threshold 'dynamic', its default")


def _nics(conf: _Conf, out: _Sections) -> None:
    payload = conf.int("PACKET_PAYLOAD_SIZE", 1) if "PACKET_PAYLOAD_SIZE" in conf else SIMAI_DEFAULT_PAYLOAD
    if "PACKET_PAYLOAD_SIZE" in conf:
        out.mapped("PACKET_PAYLOAD_SIZE", out.nic, "payload", f"{payload}B")
    if "L2_ACK_INTERVAL" in conf:   # rdma-hw.cc ReceiverCheckSeq: an ACK each time the next
        interval = conf.int("L2_ACK_INTERVAL")  # expected byte passes a milestone moved by it
        if interval == 0:
            out.ignore("L2_ACK_INTERVAL", "0: SimAI's receivers send no ACKs (rdma-hw.cc); rocesim's always do")
        elif interval <= payload or interval % payload == 0:
            out.mapped("L2_ACK_INTERVAL", out.nic, "ack_every", max(1, interval // payload))
        else:
            out.ignore("L2_ACK_INTERVAL", f"{interval} bytes is not a multiple of the {payload} B payload: SimAI "
                       f"ACKs every {interval / payload:.3g} packets on average; rocesim's nic.ack_every is a "
                       "whole number of packets")
    if "L2_BACK_TO_ZERO" in conf:
        if conf.flag("L2_BACK_TO_ZERO"):
            out.ignore("L2_BACK_TO_ZERO", "1 (go back to the start of the L2 chunk on a NACK): rocesim has no "
                       "chunks; its go-back-N resends from the first missing byte")
        else:
            out.mapped("L2_BACK_TO_ZERO", out.nic, "loss_recovery", "go_back_n")
    if "ACK_HIGH_PRIO" in conf:
        if conf.flag("ACK_HIGH_PRIO"):
            out.ignore("ACK_HIGH_PRIO", "1 puts ACKs in the never-paused queue 0 at the NICs only (RdmaEgressQueue "
                       "ack_q_idx; SimAI never sets the switches' AckHighPrio, so they keep ACKs at the flow's "
                       "priority); rocesim's nic.ack_high_priority does it at every hop, so it is left false")
        else:
            out.mapped("ACK_HIGH_PRIO", out.nic, "ack_high_priority", False)
    if "RATE_BOUND" in conf:
        out.ignore("RATE_BOUND", "1: each flow is paced at its rate, as rocesim's NICs always do"
                   if conf.flag("RATE_BOUND")
                   else "0 (send at line rate, limited by the window only): rocesim always paces at the rate")


def _links(conf: _Conf, out: _Sections) -> None:
    if "ERROR_RATE_PER_LINK" in conf:
        out.ignore("ERROR_RATE_PER_LINK", "0: no random loss, as in rocesim"
                   if conf.number("ERROR_RATE_PER_LINK") == 0
                   else "random packet loss on every link: rocesim has no equivalent")
    if "LINK_DOWN" in conf:
        line = conf.lines["LINK_DOWN"]
        t, a, b = (line.int_field(i, n) for i, n in ((1, "LINK_DOWN's time (us)"), (2, "node A"), (3, "node B")))
        out.ignore("LINK_DOWN", "0: no link failure" if t == 0 else
                   f"a link failure: give it as rocesim's `faults: [{{kind: link_down, link: [{a}, {b}], "
                   f"at: {format_time(2 * 10**12 + t * 10**6)}}}]` (SimAI takes it down at 2 s + {t} us)")
    if "NIC_TOTAL_PAUSE_TIME" in conf:
        out.ignore("NIC_TOTAL_PAUSE_TIME", "0: off" if conf.int("NIC_TOTAL_PAUSE_TIME") == 0 else
                   "NIC pauses emulating PCIe back-pressure (rdma-hw.cc TotalPauseTimes): rocesim has no equivalent")


def _congestion_control(conf: _Conf, out: _Sections) -> None:
    """CC_MODE as cc.scheme, and the keys of its scheme as its parameters."""
    mode = conf.int("CC_MODE") if "CC_MODE" in conf else SIMAI_DEFAULT_CC_MODE
    if mode not in CC_MODES:
        raise conf.lines["CC_MODE"].error(
            f"CC_MODE must be one of {', '.join(f'{m} ({n})' for m, n in _MODE_NAMES.items())}, got {mode}")
    scheme = CC_MODES[mode]
    if "CC_MODE" in conf:
        if scheme:
            out.mapped("CC_MODE", out.cc, "scheme", scheme)
        else:
            out.ignore("CC_MODE", "10 (HPCC-PINT): rocesim has no PINT; the nearest is cc.scheme hpcc")
    for key, modes in _SCHEME_KEYS.items():
        if key in conf and mode not in modes:
            out.ignore(key, f"a parameter of CC_MODE {' and '.join(map(str, modes))} only; this file runs "
                            f"{mode} ({_MODE_NAMES[mode]})")
    present = [k for k in _SCHEME_KEYS if k in conf and k not in out.done]
    if scheme is None:
        for key in present:
            out.ignore(key, "a parameter of HPCC-PINT (CC_MODE 10), which rocesim does not have")
    else:
        _SCHEMES[scheme](conf, out.params, out.mapped, out.ignore)
        if out.params:      # (a file without CC_MODE: SimAI's default scheme, said explicitly)
            out.cc.update(scheme=scheme, params=out.params)


def _windows(conf, params, mapped, ignore):
    """HAS_WIN and VAR_WIN as a rate-based scheme's `window` (rdma-hw.cc: the window is the
    largest BDP (GLOBAL_T 1), scaled by rate / line rate under VAR_WIN, as rocesim's 'bdp'
    window is).  A key the file leaves out has SimAI's default (common.h: has_win 1, var_win 0)."""
    present = [k for k in ("HAS_WIN", "VAR_WIN") if k in conf]
    has = conf.flag("HAS_WIN") if "HAS_WIN" in conf else True
    var = conf.flag("VAR_WIN") if "VAR_WIN" in conf else False
    for key in present:
        if not has and key == "VAR_WIN":
            ignore(key, "no effect without a window (HAS_WIN 0)")
        elif not has or var:
            mapped(key, params, "window", "bdp" if has else "none")
        else:
            ignore(key, f"HAS_WIN 1 with VAR_WIN 0 is a fixed one-BDP window; rocesim's window for this scheme is "
                        "'none' or one BDP scaled by rate / line rate (VAR_WIN 1): no equivalent")


def _dcqcn(conf, params, mapped, ignore):
    for key, name, read in (("ALPHA_RESUME_INTERVAL", "t_alpha", conf.time_us),
                            ("RATE_DECREASE_INTERVAL", "t_dec", conf.time_us),
                            ("RP_TIMER", "t", conf.time_us),
                            ("EWMA_GAIN", "g", lambda k: conf.number(k)),
                            ("FAST_RECOVERY_TIMES", "f", lambda k: conf.int(k)),
                            ("RATE_AI", "rai", conf.rate), ("RATE_HAI", "rhai", conf.rate),
                            ("MIN_RATE", "min_rate", conf.rate),
                            ("CLAMP_TARGET_RATE", "clamp", conf.flag)):
        if key in conf:
            mapped(key, params, name, read(key))
    _windows(conf, params, mapped, ignore)
    if params:      # the fork's DCQCN: ACKs of CE-marked packets are CNPs, no byte counter
        params["preset"] = "mellanox"


def _dctcp(conf, params, mapped, ignore):
    for key, name, read in (("EWMA_GAIN", "g", lambda k: conf.number(k)), ("DCTCP_RATE_AI", "rai", conf.rate),
                            ("MIN_RATE", "min_rate", conf.rate)):
        if key in conf:
            mapped(key, params, name, read(key))
    _windows(conf, params, mapped, ignore)


def _timely(conf, params, mapped, ignore):
    if "RATE_AI" in conf:
        mapped("RATE_AI", params, "delta", conf.rate("RATE_AI"))
    if "MIN_RATE" in conf:
        mapped("MIN_RATE", params, "min_rate", conf.rate("MIN_RATE"))
    if "RATE_HAI" in conf:
        same = "RATE_AI" in conf and conf.bps("RATE_HAI") == 5 * conf.bps("RATE_AI")
        ignore("RATE_HAI", "5 x RATE_AI, as rocesim's timely steps by 5 delta after hai_after increases" if same
               else "rocesim's timely's hyper step is 5 delta (5 x RATE_AI); another RATE_HAI has no equivalent")
    if "HAS_WIN" in conf:
        ignore("HAS_WIN", "0: no window, as rocesim's timely" if not conf.flag("HAS_WIN")
               else "1: rocesim's timely has no window: no equivalent")
    if "VAR_WIN" in conf:
        ignore("VAR_WIN", "rocesim's timely has no window")


def _hpcc(conf, params, mapped, ignore):
    if "U_TARGET" in conf:
        mapped("U_TARGET", params, "eta", conf.number("U_TARGET"))
    if "MI_THRESH" in conf:
        mapped("MI_THRESH", params, "max_stage", conf.int("MI_THRESH"))
    if "MIN_RATE" in conf:
        mapped("MIN_RATE", params, "min_rate", conf.rate("MIN_RATE"))
    if "RATE_AI" in conf:
        ignore("RATE_AI", "HPCC's additive increase as a rate; rocesim's hpcc takes it as bytes per base RTT T: "
               f"set cc.params.wai to {conf.rate('RATE_AI')} x T / 8 (auto: 40Mbps per 100G of host rate)")
    built_in = {"FAST_REACT": (1, "rocesim's hpcc reacts to every ACK and moves its reference window once per "
                                  "RTT, as FAST_REACT 1"),
                "MULTI_RATE": (0, "rocesim's hpcc keeps one window from the most loaded hop, as MULTI_RATE 0"),
                "SAMPLE_FEEDBACK": (0, "rocesim's hpcc uses every ACK's INT, as SAMPLE_FEEDBACK 0"),
                "HAS_WIN": (1, "rocesim's hpcc always has its window, as HAS_WIN 1"),
                "VAR_WIN": (1, "rocesim's hpcc's window follows its rate, as VAR_WIN 1")}
    for key, (same, reason) in built_in.items():
        if key in conf:
            value = conf.int(key)
            ignore(key, f"{value}: {reason}" if (value != 0) == bool(same)
                   else f"{value}: no rocesim equivalent ({reason})")


_SCHEMES = {"dcqcn": _dcqcn, "dctcp": _dctcp, "timely": _timely, "hpcc": _hpcc}


def conf_yaml(path: str | os.PathLike[str]) -> str:
    """The sections of :func:`read_simai_conf` as YAML to paste into a scenario, with the
    ignored keys and their reasons as comments."""
    sections, ignored = read_simai_conf(path)
    head = [f"# rocesim settings from {os.fspath(path)} (SimAI 1.6 / HPCC ns-3 fork config)"]
    text = yaml.safe_dump(sections, sort_keys=False, default_flow_style=False) if sections else ""
    tail = ["# keys with no rocesim setting:"] + [f"#   {key}: {reason}" for key, reason in ignored]
    return "\n".join(head) + "\n" + text + "\n".join(tail) + "\n"
