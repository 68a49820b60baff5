"""How close per-packet load balancing brings a permutation to line rate on a 1:1 fabric
(issue 31, Measured): each host of leaf_spine(4 leaves, 4 spines, 4 hosts per leaf, 100 Gb/s,
1 us) sends `size` bytes to the host one leaf on (every flow crosses the fabric, every uplink
is fully loaded), seed 3, one part, under each load-balancing scheme and congestion control.

    python validation/lb_line_rate.py                          # the table, in markdown
    python validation/lb_line_rate.py --sizes 4MB --buffers 400KB --ccs none

A host's goodput is its bytes over the last flow's finish (the last ACK).  Line rate is what
a 100 Gb/s host link carries of payload while it also carries the ACKs of the data its host
receives: 1000 B of every 1048 B data frame, one 60 B ACK per frame, 90.25 Gb/s.  "One
switch" is the same permutation through a single non-blocking switch (`topology.star`, 32 MB,
the same NICs): the most a fabric could give, start-up and ACKs included.  Unordered
receivers take a reorder threshold deeper than any reordering here (`--threshold`), so that
what the table shows is the fabric's, not spurious retransmissions (TCP's 3 resends what
adaptive routing only delayed).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocesim import Simulation, topology, traffic  # noqa: E402
from rocesim.units import parse_size  # noqa: E402

LINE_GBPS = 100 * 1000 / (1000 + 48 + 60)
SCHEMES = {
    "ecmp": ({"scheme": "ecmp"}, False),
    "spray, random": ({"scheme": "spray"}, True),
    "spray, round robin": ({"scheme": "spray", "order": "round_robin"}, True),
    "adaptive, gap 0": ({"scheme": "adaptive", "gap": "0us"}, True),
    "adaptive, gap 0, ties by hash": ({"scheme": "adaptive", "gap": "0us", "ties": "hash"}, True),
}


def permutation(t, size: int, cc: str, balancing: dict, nic: dict, buffer: str):
    """Each host's `size` bytes to the host 4 on; (goodput per host in Gb/s, summary)."""
    sim = Simulation(t, seed=3, cc=cc, nic=nic, partition="none",
                     switch={"buffer": buffer, "load_balancing": balancing})
    src = np.arange(t.n_hosts)
    sim.add_flows(traffic.FlowTable(src, (src + 4) % t.n_hosts, np.full(src.size, size), np.zeros(src.size)))
    res = sim.run(progress=False, threads=1)
    return size * 8 / np.max(res.flows["start_ns"] + res.flows["fct_ns"]), res.summary


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1MB,4MB,10MB")
    ap.add_argument("--buffers", default="400KB,32MB", help="switch.buffer (400KB: the tests' fabric)")
    ap.add_argument("--ccs", default="none,dcqcn")
    ap.add_argument("--threshold", type=int, default=1000, help="nic.reorder_threshold of unordered receivers")
    a = ap.parse_args(argv)
    print("| size | buffer | cc | load balancing | Gb/s per host | % of line rate | % of one switch "
          "| PFC pauses | ECN echoes |\n|---|---|---|---|---|---|---|---|---|")
    for size in (parse_size(s, "size") for s in a.sizes.split(",")):
        for cc in a.ccs.split(","):
            one, _ = permutation(topology.star(16, "100Gbps", "1us"), size, cc, {}, {}, "32MB")
            for buffer in a.buffers.split(","):
                for name, (balancing, unordered) in SCHEMES.items():
                    nic = {"delivery": "unordered", "reorder_threshold": a.threshold} if unordered else {}
                    g, s = permutation(topology.leaf_spine(4, 4, 4, "100Gbps", "1us"), size, cc, balancing, nic,
                                       buffer)
                    print(f"| {size / 1e6:g} MB | {buffer} | {cc} | {name} | {g:.1f} | {100 * g / LINE_GBPS:.1f} "
                          f"| {100 * g / one:.1f} | {s['pfc_pauses']} | {s['ecn_echoes']} |", flush=True)


if __name__ == "__main__":
    main()
