"""What a packet-level run will cost, told before it runs (`rocesim check`): the link
crossings its flows will make and the CPU time those take at rocesim's measured rate.

A data flow of `size` bytes is ceil(size / payload) packets (one at least), each crossing
every link of its path: the hops its packets take through the routing tables from its
source to its destination (an explicit `path` when it has one; a packet crosses at most
`nic.ttl` switches), and its ACKs, one per `ack_every` packets and one for the last, cross
the hops back.  Left out, because only the run knows them: CNPs, NACKs, PFC frames,
retransmissions, the ACKs a coalescing timer sends early, and drops.  A run whose flows all
finish, ACKed every packet, makes the crossings predicted within 2% (exactly, when nothing
pauses or is marked; PFC frames add the rest: tests/cli/test_check_cost.py); with
`ack_every` 4 the quickstart makes 8% more (timer ACKs); a stop time may end a run first.

The CPU time is the crossings at the cost per crossing the benchmarks measure (README,
"Speed" and "Scale", on the 2-core development machine, one part, 2026-11-28): about 72 ns
on a star of 9 hosts, 108 ns on the 128-host fat tree, 112 ns on the HPCC fork's 320-host
one, 194 ns at 1024 hosts and 320 ns at 8192, where the fabric's ports and routes no longer
fit in cache (interpolated on the log of the hosts), and up to HEAVY_PFC times that when
PFC holds hundreds of thousands of packets in the buffers (2.5 M crossings per CPU-second
instead of 6.4-7.2 M, measured on the core before the calendar's chunks, issue 33: not
measured since).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# (hosts, ns of CPU per link crossing), measured: README "Speed" and "Scale"
NS_PER_CROSSING = ((9, 72.0), (128, 108.0), (320, 112.0), (1024, 194.0), (8192, 320.0))
HEAVY_PFC = 2.7          # 6.4-7.2 M crossings per CPU-second, 2.5 M under heavy PFC (an earlier core)


@dataclass(frozen=True)
class RunCost:
    """A packet-level run's predicted link crossings (data packets and ACKs) and the CPU
    seconds they take: `cpu_s` at the measured rate for a fabric of its size, `cpu_s_high`
    under heavy PFC."""

    data_crossings: int
    ack_crossings: int
    ns_per_crossing: float
    hosts: int

    @property
    def crossings(self) -> int:
        return self.data_crossings + self.ack_crossings

    @property
    def cpu_s(self) -> float:
        return self.crossings * self.ns_per_crossing * 1e-9

    @property
    def cpu_s_high(self) -> float:
        return self.cpu_s * HEAVY_PFC

    def describe(self) -> str:
        """`rocesim check`'s line."""
        return (f"predicted at the packet level: {_count(self.crossings)} link crossings (data packets "
                f"{_count(self.data_crossings)}, ACKs {_count(self.ack_crossings)}; CNPs, PFC frames and "
                f"retransmissions not counted): about {_duration(self.cpu_s)} of CPU on one thread, up to "
                f"{_duration(self.cpu_s_high)} under heavy PFC ({self.ns_per_crossing:.0f} ns a crossing, as the "
                f"benchmarks measure at {self.hosts:,} hosts)")


def ns_per_crossing(hosts: int) -> float:
    """The measured CPU cost of a crossing on a fabric of `hosts` hosts (NS_PER_CROSSING,
    interpolated on log(hosts), its ends held beyond)."""
    h, ns = (np.array(v, float) for v in zip(*NS_PER_CROSSING))
    return float(np.interp(np.log(max(hosts, 1)), np.log(h), ns))


def predict(sim) -> RunCost:
    """The cost of running `sim` (a `rocesim.Simulation`) at the packet level, from the
    flows added so far (see the module docstring)."""
    net = ~sim.flow_column("compute", copy=False).astype(bool)
    src = sim.flow_column("src", copy=False)[net].astype(np.int64)
    dst = sim.flow_column("dst", copy=False)[net].astype(np.int64)
    size = sim.flow_column("size", copy=False)[net].astype(np.int64)
    nic, arrays = sim.nic, sim.network.arrays
    packets = np.maximum(1, -(-size // nic["payload"]))
    acks = -(-packets // nic["ack_every"])
    data_hops = hop_counts(arrays, src, dst, nic["ttl"])
    for k, fid in enumerate(np.flatnonzero(net)):           # explicit paths (pathology scenarios): few
        path = sim.flow_path(int(fid))
        if path is not None:
            data_hops[k] = len(path) + 1
    ack_hops = hop_counts(arrays, dst, src, nic["ttl"])
    hosts = int(arrays["n_hosts"])
    return RunCost(int(packets @ data_hops), int(acks @ ack_hops), ns_per_crossing(hosts), hosts)


def hop_counts(arrays: dict, src, dst, ttl: int) -> np.ndarray:
    """Links a packet crosses from host `src` to host `dst` (arrays of hosts), following the
    core's routing tables (`arrays`: `Network.arrays`) by their first equal-cost port (all
    equal-cost paths are as long): its host's link, then a link per switch until it
    arrives, at most `ttl` switches (a routing loop's packets die there), or until a switch
    has no route."""
    H, N = int(arrays["n_hosts"]), int(arrays["n_nodes"])
    node, peer = arrays["port_node"], arrays["port_peer"]
    off, cnt, ports, cls = arrays["route_off"], arrays["route_cnt"], arrays["route_ports"], arrays["route_class"]
    classes = len(off) // max(N - H, 1)
    pairs, back = np.unique(np.asarray(src, np.int64) * H + np.asarray(dst, np.int64), return_inverse=True)
    a, b = pairs // H, pairs % H
    at = node[peer[arrays["host_port"][a]]].astype(np.int64)       # across the source's link
    hops = np.ones(pairs.size, np.int64)
    going = np.flatnonzero((at != b) & (at >= H))
    for _ in range(ttl):
        if not going.size:
            break
        row = (at[going] - H) * classes + cls[b[going]]
        c = cnt[row]
        going = going[c != 0]                                          # no route: dropped there
        row, c = row[c != 0], c[c != 0]
        port = ports[off[row] + np.where(c < 0, b[going], 0)]           # -1: direct delivery to the host
        at[going] = node[peer[port]]
        hops[going] += 1
        going = going[(at[going] != b[going]) & (at[going] >= H)]
    return hops[back.ravel()]


def _count(n: int) -> str:
    """1.51 M, 26.7 M, 812 k, 950."""
    for unit, f in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= f:
            return f"{n / f:.3g} {unit}"
    return str(n)


def _duration(seconds: float) -> str:
    """0.4 s, 12 s, 20 min, 3.5 h."""
    if seconds < 100:
        return f"{seconds:.2g} s"
    if seconds < 6000:
        return f"{seconds / 60:.2g} min"
    return f"{seconds / 3600:.2g} h"
