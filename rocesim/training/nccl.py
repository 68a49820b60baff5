"""NCCL's model, shared by its algorithms (`rocesim.training.algorithms`: `nccl_ring`,
`nccl_tree`, `nccl_nvls` and `nccl_nvls_tree`, `auto`): its settings (`NCCL`), its channels and
their rings, the pieces a ring collective is cut into, and its tuning model's constants.

NCCL (github.com/NVIDIA/nccl) does not run one ring: it runs *channels*, each a ring through
every rank of the communicator, each moving its own contiguous part of the buffer.  On
servers of several GPUs a channel's ring enters a server through one NIC, visits the
server's GPUs over the scale-up domain (NVLink) and leaves it through the same NIC, so the
flows between servers of channel c all go NIC r -> NIC r of the next server (rail-aligned);
the channels are spread over the NICs the communicator's GPUs have (src/graph/search.cc
finds one ring per NIC; `ncclTopoDupChannels` doubles the channels when the intra-server
bandwidth allows, and src/graph/connect.cc doubles them again: 4 channels per NIC, at
most MAXCHANNELS = 64, src/include/device.h).  A small message uses fewer channels: NCCL
drops channels while the message is below channels x threads x NCCL_SIMPLE_THREAD_THRESHOLD
(64 B per thread, 512 threads: 32 KiB per channel; src/enqueue.cc, topoGetAlgoInfo).

Inside a channel (src/device/all_reduce.h, runRing, Simple protocol) the channel's part is
processed in loops of `ranks x chunk` bytes, chunk = NCCL_BUFFSIZE / NCCL_STEPS x
CHUNKSTEPS (4 MiB / 8 x 4 = 2 MiB; smaller in a last, partial loop); in each loop the
ring runs its steps (2(p-1) for all-reduce, p-1 for reduce-scatter and all-gather), every
step moving one chunk from each rank to the next, cut into CHUNKSTEPS / SLICESTEPS = 2
slices that pipeline through the steps: a rank forwards slice k of step s as soon as it has
received slice k of step s-1 and has sent slice k-1 (one connection sends in order), and
while the receiver holds at most NCCL_STEPS steps of it (4 slices) not yet consumed.

How each algorithm is built is described in its file; `auto` is NCCL's tuning model
(src/graph/tuning.cc, with NVLS where the scale-up switch reduces).  A collective that would
be cut into more than `max_transfers` slices is built coarser (`ring_plan`,
`algorithms.nccl_tree.tree_chunks`), so that a 1024-GPU job fits in memory.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rocesim.config import NCCL, NCCL_MAXCHANNELS

__all__ = ["NCCL", "NcclConfig", "RingLayout", "ring_layout", "ring_plan", "channels_for", "nics_used",
           "nccl_slice_estimate", "RING_STEPS", "PXN_DEFAULT", "BASE_LATENCY_US", "HW_LATENCY_US",
           "platform_bus_bps"]

NCCL_STEPS = 8                          # src/include/device.h
CHUNKSTEPS = NCCL_STEPS // 2            # src/include/collectives.h: ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS
SLICESTEPS = NCCL_STEPS // 4            # ... _SLICESTEPS
MAXCHANNELS = NCCL_MAXCHANNELS           # src/include/device.h (declared with the settings it bounds)
CHANNELS_PER_NIC = 4                    # one ring per NIC (search.cc), doubled twice (search.cc, connect.cc)
SIMPLE_THREAD_THRESHOLD = 64            # src/include/comm.h: NCCL_SIMPLE_THREAD_THRESHOLD, bytes per thread
SIMPLE_MAX_NTHREADS = 512               # src/include/device.h: NCCL_SIMPLE_MAX_NTHREADS
WINDOW = NCCL_STEPS // SLICESTEPS       # slices a connection may have in flight (its buffer's NCCL_STEPS slots)
RING_STEPS = {"allreduce": lambda p: 2 * (p - 1), "reducescatter": lambda p: p - 1, "allgather": lambda p: p - 1}
# PXN (rail-aligned forwarding, `Platform.relay`) is on unless told otherwise, as in NCCL since
# 2.12: NCCL_PXN_DISABLE defaults to 0 (src/graph/paths.cc, ncclPxnDisable) and
# NCCL_P2P_PXN_LEVEL to 2 (src/graph/search.cc, ncclTopoGetNetDev), so a send/recv (and so an
# all-to-all) to a GPU of another server leaves through the NIC on the destination's rail, via
# the GPU of its own server on that rail over NVLink.  Rings, trees and NVLS are rail-aligned
# already and do not change; textbook algorithms' cross-rail hops are forwarded the same way.
PXN_DEFAULT = True



@dataclass(frozen=True)
class NcclConfig:
    """NCCL's settings for one simulation (see `NCCL`); sizes in bytes, times in ps."""

    channels: int | str = "auto"
    buffer: int = 4 << 20
    step_latency: int = 10**6
    min_message: int = 0
    qps_per_connection: int = 1
    max_transfers: int = 1_000_000
    pipeline: str = "auto"
    qp_spread: str = "split"
    connections: str = "per_flow"

    @classmethod
    def resolve(cls, given, key: str = "nccl", mode: str = "packet") -> "NcclConfig":
        """The settings from a mapping (missing keys take their defaults), checked; a
        `pipeline` of 'auto' becomes what `mode` (the simulation's: packet or flow) runs best."""
        cfg = given if isinstance(given, cls) else cls(**NCCL.resolve(given, key))
        if cfg.pipeline == "auto":
            cfg = replace(cfg, pipeline="stream" if mode == "flow" else "slices")
        return cfg

    @property
    def chunk(self) -> int:
        """Bytes one ring step moves per rank in a full loop (stepSize x CHUNKSTEPS)."""
        return self.buffer // NCCL_STEPS * CHUNKSTEPS


@dataclass
class RingLayout:
    """The channels of a communicator: for channel c, `order[c]` lists the rank positions
    around its ring, `nic[c]` the rail its server boundaries cross."""

    order: np.ndarray        # (channels, p) positions in ring order
    rail: np.ndarray         # (channels,) the NIC (rail) index of each channel


def nics_used(platform, ranks) -> np.ndarray:
    """The rails (NIC indices) the communicator's GPUs of one server use, sorted."""
    pf = platform
    first_server = pf.server[ranks] == pf.server[ranks[0]]
    return np.unique(pf.rail[ranks[first_server]])


def channels_for(platform, ranks, nbytes: int, cfg: NcclConfig) -> int:
    """How many channels NCCL runs a collective of `nbytes` on (see the module's doc)."""
    pf = platform
    if cfg.channels == "auto":
        n = min(MAXCHANNELS, CHANNELS_PER_NIC * nics_used(pf, ranks).size)
    else:
        n = int(cfg.channels)
    return _fewer_for_small(n, nbytes)


def _fewer_for_small(channels: int, nbytes: int) -> int:
    """NCCL drops channels while a message is below 32 KiB per channel (enqueue.cc)."""
    return int(max(1, min(channels, nbytes // (SIMPLE_MAX_NTHREADS * SIMPLE_THREAD_THRESHOLD))))


def ring_transfers(m: int, p: int, steps: int, channels: int, slices: int, chunk: int) -> int:
    """Slices of a ring of `steps` steps on `p` ranks moving `m` bytes: channels x loops
    (of p x chunk bytes of a channel's part) x steps x ranks x slices per step."""
    return channels * -(-(-(-m // channels)) // (p * chunk)) * steps * p * slices


def nccl_slice_estimate(op: str, p: int, nbytes: int, cfg: NcclConfig) -> int:
    """About how many slices (transfers) NCCL's ring `op` of `nbytes` on `p` ranks has, an
    upper end: channels x loops x steps x ranks x slices per step, with as many channels
    as NCCL could use, at most `max_transfers` unless even one loop of one slice per step
    on every distinct ring (one per NIC, at most MAXCHANNELS / CHANNELS_PER_NIC) is more
    (the memory guard's estimate, before the platform is looked at)."""
    nch = _fewer_for_small(MAXCHANNELS if cfg.channels == "auto" else int(cfg.channels), nbytes)
    steps = RING_STEPS[op](p)
    full = ring_transfers(nbytes, p, steps, nch, CHUNKSTEPS // SLICESTEPS, cfg.chunk)
    floor = min(nch, MAXCHANNELS // CHANNELS_PER_NIC) * steps * p
    return min(full, max(cfg.max_transfers, floor)) * cfg.qps_per_connection


def ring_plan(platform, ranks, op: str, m: int, cfg: NcclConfig) -> tuple[int, int, int]:
    """(channels, slices per step, chunk bytes) of NCCL's ring `op` of `m` bytes: NCCL's
    (module doc), or, when that makes more than `max_transfers` slices, coarser: one slice
    per step, then the duplicate channels of each NIC merged (one ring per NIC), then
    chunks doubled until the loops fit."""
    p = len(ranks)
    steps = RING_STEPS[op](p)
    nch, S, chunk = channels_for(platform, ranks, m, cfg), CHUNKSTEPS // SLICESTEPS, cfg.chunk
    count = lambda: ring_transfers(m, p, steps, nch, S, chunk)
    if count() > cfg.max_transfers:
        S = 1
    if count() > cfg.max_transfers:
        nch = min(nch, nics_used(platform, ranks).size)
    while count() > cfg.max_transfers and -(-m // nch) > p * chunk:
        chunk *= 2
    return nch, S, chunk


def ring_layout(platform, ranks, channels: int) -> RingLayout:
    """Each channel's ring over the positions of `ranks`: servers in order of their lowest
    rank, inside a server the GPUs from the one on the channel's rail upwards (cyclically
    by local index; a server with no GPU of the communicator on that rail starts at its
    lowest), so the ring leaves the server from the GPU before it and both the arrival and
    the departure use the channel's NIC.  Channel c takes the c-th NIC (mod) among those
    the communicator's GPUs of its first server use.  Servers may hold different numbers
    of the communicator's GPUs."""
    pf = platform
    ranks = np.asarray(ranks, np.int64)
    server = pf.server[ranks]
    by_local = np.lexsort((pf.local[ranks], server))                 # positions, server by server
    cuts = np.flatnonzero(np.diff(server[by_local])) + 1
    rows = np.split(by_local, cuts)
    rows.sort(key=lambda row: int(ranks[row].min()))
    rails = nics_used(pf, ranks)
    ch_rail = rails[np.arange(channels) % rails.size]
    order = np.empty((channels, ranks.size), np.int64)
    for c, r in enumerate(ch_rail):
        parts = []
        for row in rows:
            on_rail = np.flatnonzero(pf.rail[ranks[row]] == r)
            parts.append(np.roll(row, -int(on_rail[0]) if on_rail.size else 0))
        order[c] = np.concatenate(parts)
    return RingLayout(order, ch_rail)


# NCCL's tuning model (src/graph/tuning.cc, ncclTopoTuneModel, Simple protocol; the values of
# NCCL 2.23-2.27), in us: a collective takes latency + bytes / algorithm bandwidth, and NCCL
# runs the fastest of the algorithms available (src/enqueue.cc, updateCollCostTable and
# topoGetAlgoInfo).  NVLS and NVLS_TREE have no base latency; NVLS's latency is its NVLink
# one alone (one server), NVLS_TREE's the NVLink one + 2 x log2(servers) network ones.
BASE_LATENCY_US = {"nccl_ring": 8.4, "nccl_tree": 8.4, "nccl_nvls": 0.0, "nccl_nvls_tree": 0.0}   # baseLat
HW_LATENCY_US = {"nvlink": {"nccl_ring": 3.4, "nccl_tree": 4.0, "nccl_nvls": 25.0, "nccl_nvls_tree": 25.0},
                 "net": {"nccl_ring": 14.0, "nccl_tree": 14.0, "nccl_nvls": 18.0, "nccl_nvls_tree": 14.0}}  # hwLat


def platform_bus_bps(platform, ranks) -> float:
    """The bus bandwidth a ring can reach on the communicator's servers, bit/s: the NICs its
    GPUs use in a server, or the scale-up domain's G/(G-1) share, whichever is less (the
    scale-up alone inside one server)."""
    pf = platform
    ranks = np.asarray(ranks, np.int64)
    servers = np.unique(pf.server[ranks]).size
    k = ranks.size // servers
    su = float("inf")
    if k > 1 and pf.scale_up is not None:
        su = pf.scale_up.neighbour_bps(pf.gpus_per_server) * k / (k - 1)
    if servers == 1:
        return su
    nic = float(pf.topology.host_rate(int(pf.host[ranks[0]])))
    return min(nics_used(pf, ranks).size * nic, su)
