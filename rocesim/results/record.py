"""What a run was made of, frozen when it ends: the settings it used, the topology, what
was added to it.  `Results.from_core` reads this record and the core's readout, never the
Simulation, so a change to how a Simulation is put together cannot change its results."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class RunRecord:
    """A run's inputs, as its results need them."""

    scheme: str                      # the congestion-control scheme's name
    mode: str                        # "packet" or "flow"
    seed: int
    topology: str                    # the topology's name
    hosts: int
    switches: int
    original_ids: np.ndarray         # each node's id in the topology's source file
    port_node: np.ndarray            # per port: its node, the peer port, the rate (bit/s)
    port_peer: np.ndarray
    port_rate_bps: np.ndarray
    port_tier: np.ndarray            # per port: the tier of its switch if it goes up a tier (1: a ToR's
                                     #   uplink, 2: an aggregation's ...), else 0
    faults: list                     # each fault's record (`Fault.record()`), in the order added
    partition: str                   # the level the packet core ran at ("none": one part)
    parts: int
    lookahead_ps: int                # 0 in one part
    fluid_calibration: dict          # the flow mode's calibration {share, startup (ps), source}
    delivery: str                    # how receivers take data: nic.delivery ("ordered" or "unordered")
    multipath: bool                  # the switches may send one connection's packets over several paths
                                     #   (per-packet or flowlet load balancing, sender entropy): with
                                     #   ordered receivers the summary says so (multipath_into_ordered)
    collectives: object              # rocesim.training.collectives.Collectives: every collective added
    iteration_jobs: dict             # iteration id -> the job it belongs to
    # one column of the nodes (flows and compute steps) by name (rocesim.world.nodes.COLUMNS),
    # read only (views of the arrays the Simulation holds where it can)
    node_column: Callable[[str], np.ndarray] = field(repr=False, default=None)
