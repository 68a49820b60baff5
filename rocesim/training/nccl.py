"""NCCL's collectives on a platform: channels of rings (`nccl_ring`), the double binary tree
(`nccl_tree`), NVLink SHARP (`nccl_nvls`), and the tuning model that picks one (`auto`).

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

Here a slice between servers is one flow NIC -> NIC (or `qps_per_connection` flows of
equal parts, as NCCL splits a message over the queue pairs of a connection,
NCCL_IB_QPS_PER_CONNECTION, src/transport/net_ib.cc) that starts when its data is there and
the slice WINDOW slices before it on the connection has arrived: the slices in flight on a
connection share the NIC as flows do (NCCL's queue pair sends them one after the other:
the same bytes per second, a slice finishing a little later); a slice inside a server is a fluid
transfer over the scale-up domain at the channel's share of it (the channels that send
over a GPU's port share it equally: `ScaleUp.share_bps`), then the hop's latency.  Each
slice is sent `step_latency` after what it waits for (NCCL's per-step synchronisation:
flags in the peer's memory, the proxy thread's post for the network), and a slice smaller
than `min_message` travels as `min_message` bytes (the protocol's small-message floor;
SimAI rounds its messages below 4096 B up in the same way).

In an idle network the bus bandwidth of a ring all-reduce on S servers of G GPUs, each
with its own NIC of rate B_nic and a scale-up rate B_su per GPU, tends to
min(G x B_nic, B_su x G/(G-1)) (each NIC carries one channel's share in each direction,
each GPU's port the shares of the channels that do not leave the server at it; CASES.md,
and SimAI's analytical formula); tests/training/test_nccl.py checks it.

`nccl_tree` and `nccl_nvls` (NVLS, and NVLS_TREE as `nccl_nvls_tree`) are described where
they are built; `auto_algorithm` is NCCL's tuning model (src/graph/tuning.cc, with NVLS where
the scale-up switch reduces: `nvls_available`).  A collective that would be cut into more than
`max_transfers` slices is built coarser (`ring_plan`, `tree_chunks`), so that a 1024-GPU
job fits in memory.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.settings import Choice, Integer, Section, Setting, Size, Time, Word
from rocesim.training.chunks import split_bytes, split_bytes_each
from rocesim.training.trees import binary_trees, tree_allreduce, tree_depths

__all__ = ["NCCL", "NcclConfig", "RingLayout", "ring_layout", "channels_for", "nccl_ring", "nccl_ring_stream",
           "ring_place_bytes", "nccl_tree", "nccl_tree_stream", "tree_streams", "tree_chunks",
           "nccl_slice_estimate", "RING_STEPS", "auto_algorithm", "tuned_time_us", "nccl_nvls", "nvls_available",
           "nvls_bus_bps", "nvls_in_server_ps", "PXN_DEFAULT"]

NCCL_STEPS = 8                          # src/include/device.h
CHUNKSTEPS = NCCL_STEPS // 2            # src/include/collectives.h: ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS
SLICESTEPS = NCCL_STEPS // 4            # ... _SLICESTEPS
MAXCHANNELS = 64                        # src/include/device.h
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

NCCL = Section(
    "how NCCL runs collectives (the nccl_ring algorithm): channels, buffer, per-step latency, queue pairs",
    channels=Setting(Word("auto") | Integer(1, MAXCHANNELS), "auto",
                     "channels (rings) per communicator; 'auto' = as NCCL picks: 4 per NIC the communicator's "
                     f"GPUs of a server use (at most {MAXCHANNELS}), fewer for small messages (NCCL_MIN/MAX_NCHANNELS)"),
    buffer=Setting(Size(64 * 1024, 1 << 30), "4MiB",
                   "NCCL_BUFFSIZE of the Simple protocol: a ring step moves buffer / 8 x 4 bytes (a chunk) per "
                   "rank and loop, in two slices"),
    step_latency=Setting(Time(), "1us", "software latency before each slice is sent (NCCL's per-step "
                                        "synchronisation; SimAI's per-flow send latency AS_SEND_LAT is 6us by default)"),
    min_message=Setting(Size(), "0B", "a slice smaller than this is sent as this many bytes (SimAI: 4096B)"),
    qps_per_connection=Setting(Integer(1, 128), 1, "NCCL_IB_QPS_PER_CONNECTION: each slice between servers is "
                                                   "split over this many queue pairs (flows)"),
    pipeline=Setting(Choice("auto", "slices", "stream"), "auto",
                     "how a ring collective's pipeline is built: 'slices' (NCCL's loops, steps and slices, each "
                     "waiting for what it needs), 'stream' (each hop of each channel one transfer of all its bytes, "
                     "the steps' synchronisation added in closed form: far fewer nodes); 'auto' = slices at the "
                     "packet level, stream in flow mode"),
    max_transfers=Setting(Integer(1000), 1_000_000,
                          "the most slices (transfers) one collective is cut into: above it, NCCL's duplicate "
                          "channels of a NIC merge into one and slices and chunks grow (fewer, larger flows: the "
                          "same bytes on the same NICs and rings, a coarser pipeline), so that 1024-GPU jobs fit"),
)


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


def nccl_ring(t, op: str, m: int, cfg: NcclConfig) -> None:
    """NCCL's ring `op` (allreduce, reducescatter, allgather) of `m` bytes (nccl-tests'
    size) on the ranks of `t` (a collectives `_Transfers`): adds every slice's nodes and
    their dependencies, and what `t.connect` needs to tie them to the start and done nodes."""
    p = t.ranks.size
    nch, S, chunk = ring_plan(t.platform, t.ranks, op, m, cfg)
    ring = _Ring(t, ring_layout(t.platform, t.ranks, nch), S, cfg,
                 max(1, WINDOW * S * cfg.chunk // ((CHUNKSTEPS // SLICESTEPS) * chunk)))
    parts = split_bytes(m, nch)                          # each channel's contiguous part
    loop_bytes = p * chunk
    for loop in range(int(-(-parts.max() // loop_bytes))):
        this = np.minimum(np.maximum(parts - loop * loop_bytes, 0), loop_bytes)   # the loop's bytes per channel
        if not this.any():
            break
        blocks = np.stack([split_bytes(int(x), p) for x in this])   # (nch, p): block j of each channel
        arrived = None
        for s in range(RING_STEPS[op](p)):
            # place i of channel c sends block (i - s) mod p of its ring (all-reduce runs the
            # reduce-scatter steps straight into the all-gather ones)
            j = (np.arange(p)[None, :] - s) % p
            arrived = ring.step(np.take_along_axis(blocks, j, axis=1).ravel(), arrived, first_step=s == 0)
    ring.finish()


def ring_place_bytes(parts: np.ndarray, p: int, steps: int, chunk: int) -> tuple[np.ndarray, int, np.ndarray]:
    """What each place of each channel sends over a whole ring collective: (bytes (nch, p),
    loops, a full loop's block per channel).  Loop by loop the channel's part is cut into p
    blocks; at step s place i sends block (i - s) mod p, so over `steps` steps it sends
    every block steps // p times and the r = steps % p blocks i, i-1, .., i-r+1 once more."""
    nch = parts.size
    loop_bytes = p * chunk
    loops = int(-(-parts.max() // loop_bytes))
    out = np.zeros((nch, p), np.int64)
    q, r = divmod(steps, p)
    for loop in range(loops):
        this = np.minimum(np.maximum(parts - loop * loop_bytes, 0), loop_bytes)
        blocks = split_bytes_each(this, p).T                            # (nch, p)
        ring = np.cumsum(np.concatenate([blocks, blocks], axis=1), axis=1)
        i = np.arange(p) + p
        once = ring[:, i] - ring[:, i - r]                               # blocks i-r+1 .. i
        out += q * this[:, None] + once
    return out, loops, split_bytes_each(np.minimum(parts, loop_bytes), p).max(axis=0)


def nccl_ring_stream(t, op: str, m: int, cfg: NcclConfig) -> None:
    """NCCL's ring `op` of `m` bytes as streams (`pipeline: stream`): each hop of each
    channel is one transfer of everything that hop carries over the whole collective, all
    started together (between servers: flows NIC to NIC on the channel's rail; inside a
    server: the channel's share of the GPU's port), then the steps' synchronisation.

    In the slices' pipeline (see `nccl_ring`) a step takes the longer of: the slowest hop
    sending its S slices (t each at the hop's rate; inside a server each slice also waits
    `step_latency` on the port), and a block's way one hop further, t + L averaged over the
    ring's hops (L: step_latency plus the hop's latency: the scale-up hop's delay, or the two
    NIC links' delays of a rail-aligned path between servers).  The streams give S t of the
    slowest hop per step by themselves (the fluid rate, with what shares the links); the
    rest, loops x steps x the difference at the hops' uncontended rates, is added at each
    transfer's arrival.  Far fewer nodes than the
    slices (channels x ranks transfers instead of channels x loops x steps x ranks x S):
    the flow mode's default, where what matters is each link's load over time."""
    pf = t.platform
    p = t.ranks.size
    nch = channels_for(pf, t.ranks, m, cfg)
    S = CHUNKSTEPS // SLICESTEPS
    steps = RING_STEPS[op](p)
    ring = _Ring(t, ring_layout(pf, t.ranks, nch), 1, cfg, 1)
    sent, loops, block = ring_place_bytes(split_bytes(m, nch), p, steps, cfg.chunk)
    sent = sent.ravel()
    slice_bits = np.repeat(block, p) * 8 / S                            # per place: a full loop's slice
    per_rail = nch / np.unique(ring.rail).size
    rate = np.where(ring.net, pf.topology.host_rate(int(ring.host_a[0])) / per_rail, np.maximum(ring.share, 1))
    latency = cfg.step_latency + np.where(ring.net, 2 * pf.topology.host_delay(int(ring.host_a[0])), ring.hop_ps)
    t_slice = slice_bits * 1e12 / rate
    # a step: the slowest hop's S slices (inside a server each slice also waits its step
    # latency on the port: `_Ring._scale_up`), or a block's way one hop further on average
    busy = S * (t_slice + np.where(ring.net, 0, cfg.step_latency))
    step = max(busy.max(), float(np.mean(t_slice + latency)))
    wait = int(loops * steps * (step - S * t_slice.max()))
    live = sent > 0
    first = np.full(sent.size, -1, np.int64)
    arrive = np.full(sent.size, -1, np.int64)
    net, su = live & ring.net, live & ~ring.net
    kw = ring.kw
    if net.any():
        Q = cfg.qps_per_connection
        ids = t.g.flows(np.tile(ring.nic_a[net], Q), np.tile(ring.nic_b[net], Q), split_bytes_each(sent[net], Q).ravel(),
                        prio=ring.prio, delay=cfg.step_latency, **kw).reshape(Q, -1)
        first[net] = ids[0]
        arrive[net] = t.g.compute(ring.host_b[net], wait, **kw)
        t.g.depend(np.broadcast_to(arrive[net], ids.shape), ids)
        t.nodes += [ids.ravel(), arrive[net]]
    if su.any():
        busy = np.ceil(sent[su] * 8e12 / ring.share[su]).astype(np.int64)
        first[su] = t.g.compute(ring.host_a[su], busy, delay=cfg.step_latency, **kw)
        arrive[su] = t.g.compute(ring.host_b[su], ring.hop_ps[su] + wait, **kw)
        t.g.depend(arrive[su], first[su])
        t.nodes += [first[su], arrive[su]]
    t.first.append(first[live])
    t.src.append(ring.pos_a[live])
    t.final.append(arrive[live])
    t.dst.append(ring.pos_b[live])


class _Ring:
    """The slices of one NCCL ring collective under construction, step by step: every
    (channel, place) sends to the next place of its channel's ring, between servers NIC to
    NIC on the channel's rail, inside a server at the channel's share of the GPU's port."""

    def __init__(self, t, layout: RingLayout, slices: int, cfg: NcclConfig, window_slices: int):
        pf, ranks = t.platform, t.ranks
        self.t, self.cfg, self.S, self.window_slices = t, cfg, slices, window_slices
        nch, p = layout.order.shape
        nxt = np.roll(layout.order, -1, axis=1)
        self.pos_a, self.pos_b = layout.order.ravel(), nxt.ravel()      # rank positions of sender, receiver
        a, b = ranks[self.pos_a], ranks[self.pos_b]
        self.net = pf.server[a] != pf.server[b]
        self.rail = rail = np.repeat(layout.rail, p)                     # the channel's NIC on both sides
        self.nic_a = pf.server[a] * pf.nics_per_server + rail
        self.nic_b = pf.server[b] * pf.nics_per_server + rail
        self.host_a, self.host_b = pf.host[a], pf.host[b]
        self.share = np.zeros(a.size)
        self.hop_ps = np.zeros(a.size, np.int64)
        su = ~self.net
        if su.any():
            self.share[su] = pf.scale_up.share_bps(a[su], b[su], pf.gpus_per_server)
            self.hop_ps[su] = pf.scale_up.delay_ps * pf.scale_up.hops(pf.local[a[su]], pf.local[b[su]],
                                                                       pf.gpus_per_server)
        # the place (channel, place) each one's transfer arrives at
        place = np.arange(nch * p)
        self.into = (place + 1) % p + place // p * p
        self.kw, self.prio = t.node_kw, t.kw["prio"]
        self.port_last = np.full(nch * p, -1, np.int64)   # per place: its last scale-up send
        self.window = []                                  # the last slices' arrivals per connection between servers
        self.final = np.full((slices, nch * p), -1, np.int64)   # per place: its last step's arrivals
        self.nodes, self.first, self.src = [], [], []

    def step(self, nbytes, arrived, first_step: bool):
        """One ring step: place i sends `nbytes[i]` in slices, slice k after slice k of the
        previous step arrived at i (`arrived`, indexed by the receiving place); returns what
        arrived where in this step."""
        S = self.S
        live = nbytes > 0
        sizes = split_bytes_each(np.maximum(nbytes, 1), S)                  # (S, places)
        sizes = np.maximum(sizes, max(self.cfg.min_message, 1)) * live[None, :]
        first = np.full(sizes.shape, -1, np.int64)
        last = np.full(sizes.shape, -1, np.int64)
        if (live & self.net).any():
            self._network(sizes, live & self.net, first, last)
        if (live & ~self.net).any():
            self._scale_up(sizes, live & ~self.net, first, last)
        if arrived is not None:                   # slice k waits for slice k of the previous step
            ok = (first >= 0) & (arrived >= 0)
            self.t.g.depend(first[ok], arrived[ok])
        self.window = (self.window + [np.where(self.net, last[q], -1) for q in range(S)])[-self.window_slices:]
        if first_step:                            # a loop's first step needs only the rank's input
            self.first.append(first[:, live].ravel())
            self.src.append(np.tile(self.pos_a[live], S))
        self.final[:, live] = last[:, live]
        got = np.full_like(last, -1)
        got[:, self.into] = last
        return got

    def _network(self, sizes, sel, first, last):
        """Slices between servers: `qps_per_connection` flows each, NIC to NIC, each after the
        slice `window_slices` before it on its connection has arrived."""
        t, S, Q, k = self.t, self.S, self.cfg.qps_per_connection, int(sel.sum())
        per_qp = split_bytes_each(sizes[:, sel].ravel(), Q)                 # (Q, S*k)
        ids = t.g.flows(np.tile(self.nic_a[sel], S * Q), np.tile(self.nic_b[sel], S * Q), per_qp.ravel(),
                        prio=self.prio, delay=self.cfg.step_latency, **self.kw).reshape(Q, S, k)
        self.nodes.append(ids.ravel())
        first[:, sel] = last[:, sel] = ids[0]
        if Q > 1:                                 # a slice is there when all its parts are
            last[:, sel] = t.g.compute(np.tile(self.host_b[sel], S), 0, **self.kw).reshape(S, k)
            t.g.depend(np.broadcast_to(last[:, sel], (Q, S, k)), ids)
            self.nodes.append(last[:, sel].ravel())
        for q in range(S):                        # the receiver's buffer: its slices in flight per connection
            back = len(self.window) + q - self.window_slices
            prev = self.window[back][sel] if back >= 0 else np.full(k, -1, np.int64)
            ok = prev >= 0
            t.g.depend(ids[:, q][:, ok], np.broadcast_to(prev[ok], (Q, int(ok.sum()))))

    def _scale_up(self, sizes, sel, first, last):
        """Slices inside a server: the sender's share of its port, slice after slice, then the hop."""
        t, S = self.t, self.S
        busy = np.ceil(sizes[:, sel] * 8e12 / self.share[sel]).astype(np.int64)
        wire = t.g.compute(np.tile(self.host_a[sel], S), busy.ravel(), delay=self.cfg.step_latency,
                           **self.kw).reshape(S, -1)
        land = t.g.compute(np.tile(self.host_b[sel], S), np.tile(self.hop_ps[sel], S), **self.kw).reshape(S, -1)
        t.g.depend(land, wire)
        t.g.depend(wire[1:], wire[:-1])                              # the channel's port, in order
        prev = self.port_last[sel]
        ok = prev >= 0
        t.g.depend(wire[0][ok], prev[ok])
        self.port_last[sel] = wire[-1]
        first[:, sel], last[:, sel] = wire, land
        self.nodes += [wire.ravel(), land.ravel()]

    def finish(self):
        """Hand the slices to `t`: every first-step slice waits for its rank's start; each
        rank is done when its last step's slices have arrived (every other slice comes
        before one of them: the ring's data and each connection's order chain them)."""
        t = self.t
        t.nodes += self.nodes
        t.first += self.first
        t.src += self.src
        have = self.final >= 0
        t.final.append(self.final[have])
        t.dst.append(np.broadcast_to(self.pos_b, self.final.shape)[have])


def tree_chunks(platform, ranks, m: int, cfg: NcclConfig) -> tuple[int, int]:
    """(chunks, channels) of NCCL's tree: each channel cuts its part into chunks of one step
    of the buffer (buffer / NCCL_STEPS: the Simple tree's chunk, src/enqueue.cc), at least 1;
    when that makes more than `max_transfers` transfers (2 per chunk and rank), the
    duplicate channels of each NIC merge and the chunks grow."""
    nch = channels_for(platform, ranks, m, cfg)
    p = len(ranks)
    chunks = lambda: max(1, -(-(-(-m // nch)) // (cfg.buffer // NCCL_STEPS)))
    if nch * chunks() * 2 * p > cfg.max_transfers:
        nch = min(nch, nics_used(platform, ranks).size)
    return max(1, min(chunks(), cfg.max_transfers // (nch * 2 * p))), nch


def _tree_channels(t):
    """Per channel of NCCL's tree on the ranks of `t`: (ring order of positions, parents in
    that order).  Inside each server a chain headed by the GPU on the channel's rail;
    across servers a binary tree over the heads, the two trees of the double binary tree
    alternating on each NIC's channels (when it has several), else channel by channel."""
    pf, ranks = t.platform, t.ranks
    p = ranks.size
    nch = t.lanes                                          # tree_chunks' channels
    layout = ring_layout(pf, ranks, nch)
    servers, counts = np.unique(pf.server[ranks], return_counts=True)
    if (counts != counts[0]).any():
        raise ScenarioError("ranks", "NCCL's tree needs the same number of the communicator's GPUs in every "
                                     "server; use nccl_ring")
    servers, k = servers.size, int(counts[0])
    trees = binary_trees(servers)
    idx = np.arange(p)
    rails = np.unique(layout.rail).size
    out = []
    for c in range(nch):
        across = trees[(c // rails) % 2 if nch >= 2 * rails else c % 2]
        parent = idx - 1                                   # the chain inside each server
        head = idx % k == 0
        up = across[idx[head] // k]
        parent[head] = np.where(up >= 0, up * k, -1)
        out.append((layout.order[c], parent))
    return out


def tree_streams(platform, ranks, m: int, cfg: NcclConfig) -> bool:
    """Whether NCCL's tree all-reduce is built as streams (`nccl_tree_stream`): with
    `pipeline: stream`, when each channel's chunks are at least 4 x the tree's depth (the
    chain in a server plus the binary tree over the servers), so that fill and drain are a
    small part of the time; a shorter pipeline is built chunk by chunk (few nodes anyway).
    Measured against the chunks in flow mode: within 1% on 4x4 GPUs at 256 MB, 4.6% on
    8x8 at 1 GiB; 24% on 4x4 at 16 MB (2 chunks), hence the rule."""
    if cfg.pipeline != "stream":
        return False
    pf = platform
    servers = np.unique(pf.server[np.asarray(ranks, np.int64)]).size
    depth = len(ranks) // servers - 1 + int(np.ceil(np.log2(servers + 1)))
    return tree_chunks(pf, ranks, m, cfg)[0] >= 4 * depth


def nccl_tree(t, m: int, cfg: NcclConfig) -> None:
    """NCCL's tree all-reduce of `m` bytes on the ranks of `t` (a collectives `_Transfers`
    built with `tree_chunks` chunks): per channel (`_tree_channels`), reduce up the tree then
    broadcast down, chunk by chunk (src/graph/trees.cc, connect.cc: chains inside nodes,
    the double binary tree across them), so every server head is inner in one tree and a
    leaf in the other.  Every chunk is sent `step_latency` after what it waits for and is
    at least `min_message` bytes (queue pairs per connection: one)."""
    parts = split_bytes(m, t.lanes)
    t.step_delay, t.min_bytes = cfg.step_latency, cfg.min_message
    for c, (order, parent) in enumerate(_tree_channels(t)):
        t.lane = c                                         # the channel's share of each GPU's port
        tree_allreduce(t, parent, int(parts[c]), t.ranks.size, order=order)


def nccl_tree_stream(t, m: int, cfg: NcclConfig) -> None:
    """NCCL's tree all-reduce as streams (`pipeline: stream`; `t` built with one chunk):
    every edge of every channel's tree carries the channel's part up and down at once,
    each direction one transfer; then the pipeline's fill and drain, which the streams
    leave out: 2 x the tree's depth x (a chunk's time + its latency), at the hops'
    uncontended rates (network hops: the channel's share of its NIC, latency step_latency
    plus two NIC links' delays; chain hops inside a server: the channel's share of the
    GPU's port, its delay), plus each chunk's step_latency on a GPU's port."""
    pf = t.platform
    p = t.ranks.size
    chunks, _ = tree_chunks(pf, t.ranks, m, cfg)
    parts = split_bytes(m, t.lanes)
    k = p // np.unique(pf.server[t.ranks]).size
    host = int(pf.host[t.ranks[0]])
    nic_bps = pf.topology.host_rate(host) * np.unique(pf.rail[t.ranks]).size / t.lanes
    su_bps = pf.scale_up.neighbour_bps(pf.gpus_per_server) / t.lanes if k > 1 else np.inf
    chunk_bits = parts.max() * 8 / chunks
    net_hop = chunk_bits * 1e12 / nic_bps + cfg.step_latency + 2 * pf.topology.host_delay(host)
    su_hop = (chunk_bits * 1e12 / su_bps + cfg.step_latency + pf.scale_up.delay_ps) if k > 1 else 0
    t.step_delay = cfg.step_latency
    for c, (order, parent) in enumerate(_tree_channels(t)):
        t.lane = c
        child = np.flatnonzero(parent >= 0)
        depth = tree_depths(parent)                        # hops to the root, of which `net` between servers
        server = pf.server[t.ranks[order]]
        net = np.zeros(p, np.int64)
        for i in child[np.argsort(depth[child])]:
            net[i] = net[parent[i]] + (server[i] != server[parent[i]])
        wait = int(2 * max(net * net_hop + (depth - net) * su_hop) - max(net_hop, su_hop)
                   + (chunks * cfg.step_latency if k > 1 else 0))
        src = np.concatenate([order[child], order[parent[child]]])
        dst = np.concatenate([order[parent[child]], order[child]])
        arrive = t.send(src, dst, int(parts[c]))[0]
        t.final[-1] = t.g.compute(pf.host[t.ranks[dst]], wait, **t.node_kw)
        t.g.depend(t.final[-1], arrive)
        t.nodes.append(t.final[-1])


# NCCL's tuning model (src/graph/tuning.cc, ncclTopoTuneModel, Simple protocol; the values of
# NCCL 2.23-2.27), in us: a collective takes latency + bytes / algorithm bandwidth, and NCCL
# runs the fastest of the algorithms available (src/enqueue.cc, updateCollCostTable and
# topoGetAlgoInfo).  NVLS and NVLS_TREE have no base latency; NVLS's latency is its NVLink
# one alone (one server), NVLS_TREE's the NVLink one + 2 x log2(servers) network ones.
BASE_LATENCY_US = {"nccl_ring": 8.4, "nccl_tree": 8.4, "nccl_nvls": 0.0, "nccl_nvls_tree": 0.0}   # baseLat
HW_LATENCY_US = {"nvlink": {"nccl_ring": 3.4, "nccl_tree": 4.0, "nccl_nvls": 25.0, "nccl_nvls_tree": 25.0},
                 "net": {"nccl_ring": 14.0, "nccl_tree": 14.0, "nccl_nvls": 18.0, "nccl_nvls_tree": 14.0}}  # hwLat
TREE_BW_FACTOR = 0.92                                                # the tree all-reduce's busBw x .92
NVLS_BW_RATIO = 5 / 6                # NVLS / NVLS_TREE all-reduce: algorithm bandwidth = 5/6 of the bus's
NVLS_GATHER_NET_FACTOR = 0.9         # NVLS all-gather / reduce-scatter: min(intra (k-1)/k, inter x 0.9)
NVLS_MIN_GPUS = 3                    # src/transport/nvls.cc, ncclNvlsInit: no NVLS on 2 GPUs or fewer
NVLS_MAX_ARITY = 32                  # src/include/device.h NCCL_MAX_NVLS_ARITY: all-gather/reduce-scatter


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


def nvls_bus_bps(op: str, platform, ranks) -> float:
    """The bus bandwidth of NCCL's NVLS algorithms, bit/s (tuning.cc): its channels together
    have a GPU's NVLink port (intra) and, across servers, the NICs the communicator's GPUs
    of a server use (inter).  One server: all-reduce the port, all-gather and reduce-scatter
    the port x (k-1)/k; across servers (NVLS_TREE, all-reduce): min(port, NICs), the NICs
    halved beyond 2 servers (a tree's inner node sends to and receives from two)."""
    pf = platform
    ranks = np.asarray(ranks, np.int64)
    servers = np.unique(pf.server[ranks]).size
    port = float(pf.scale_up.rate_bps)
    k = ranks.size // servers
    if servers == 1:
        return port if op == "allreduce" else min(port * (k - 1) / k, port * NVLS_GATHER_NET_FACTOR)
    nic = nics_used(pf, ranks).size * float(pf.topology.host_rate(int(pf.host[ranks[0]])))
    return min(port, nic if servers <= 2 else nic / 2)


def nvls_available(op: str, platform, ranks) -> str | None:
    """The NVLS algorithm NCCL's tuning may pick for `op` on `ranks`, or None (src/enqueue.cc,
    updateCollCostTable; src/transport/nvls.cc, ncclNvlsInit; tuning.cc): NVLS needs a
    scale-up switch that reduces (`scale_up.nvls`, NVLink SHARP: NCCL's nvlsSupport, which
    NCCL_NVLS_ENABLE=2, the default, takes from the GPU's multicast support) and more than 2
    of the communicator's GPUs in each server, as many in every server (and a reduction NVLS
    supports, src/include/device.h ncclNvlsSupported: sums of fp16, bf16, fp32, as training
    reduces).  In one server `nccl_nvls` for all-reduce, all-gather and reduce-scatter (these
    two at most 32 GPUs; NCCL 2.19+); across servers `nccl_nvls_tree` for all-reduce only
    (NVLS proper across servers needs CollNet, and NVLS all-gather/reduce-scatter too, which
    rocesim has not)."""
    pf = platform
    su = pf.scale_up
    if su is None or not su.nvls:
        return None
    counts = np.unique(pf.server[np.asarray(ranks, np.int64)], return_counts=True)[1]
    k = int(counts[0])
    if (counts != k).any() or k < NVLS_MIN_GPUS:
        return None
    if counts.size == 1:
        return "nccl_nvls" if op == "allreduce" or k <= NVLS_MAX_ARITY else None
    return "nccl_nvls_tree" if op == "allreduce" else None


def tuned_time_us(algorithm: str, op: str, platform, ranks, nbytes: int) -> float:
    """NCCL's estimate of a collective's time with `algorithm` (Simple protocol): latency
    (base + per-step NVLink and network latencies) + bytes over the algorithm bandwidth
    (ring: bus bandwidth x n / steps; tree: half of 0.92 x the bus bandwidth; NVLS and
    NVLS_TREE all-reduce: 5/6 of `nvls_bus_bps`, NVLS all-gather/reduce-scatter: all of it)."""
    pf = platform
    ranks = np.asarray(ranks, np.int64)
    n = ranks.size
    nodes = np.unique(pf.server[ranks]).size
    intra, inter = HW_LATENCY_US["nvlink"][algorithm], HW_LATENCY_US["net"][algorithm]
    if algorithm in ("nccl_nvls", "nccl_nvls_tree"):
        bus = nvls_bus_bps(op, pf, ranks) / 8 / 1e6
        levels = 2 * int(np.log2(nodes)) if algorithm == "nccl_nvls_tree" else int(nodes > 1)
        return (BASE_LATENCY_US[algorithm] + intra + levels * inter
                + nbytes / (bus * (NVLS_BW_RATIO if op == "allreduce" else 1.0)))
    bus = platform_bus_bps(pf, ranks) / 8 / 1e6                      # bytes per us
    if algorithm == "nccl_ring":
        steps = RING_STEPS[op](n)
        inter_steps = 0 if nodes == 1 else (2 if op == "allreduce" else 1) * (nodes - 1)
        latency = BASE_LATENCY_US[algorithm] + (steps - inter_steps) * intra + inter_steps * inter
        algbw = bus * n / steps
    else:
        latency = BASE_LATENCY_US[algorithm] + 2 * ((n // nodes - 1) * intra + int(np.log2(nodes)) * inter)
        algbw = bus * TREE_BW_FACTOR * 0.5
    return latency + nbytes / algbw


def auto_algorithm(op: str, platform, ranks, nbytes: int) -> str:
    """The algorithm NCCL's tuning model picks for `op` of `nbytes` on `ranks`, the fastest by
    `tuned_time_us` among: the ring; the tree for all-reduce (NCCL runs reduce-scatter and
    all-gather on rings) on servers holding the same number of the communicator's GPUs; and
    NVLS where `nvls_available` says NCCL has it."""
    counts = np.unique(platform.server[np.asarray(ranks, np.int64)], return_counts=True)[1]
    candidates = ["nccl_ring"]
    if op == "allreduce" and (counts == counts[0]).all():       # the tree needs even servers
        candidates.append("nccl_tree")
    nvls = nvls_available(op, platform, ranks)
    if nvls is not None:
        candidates.append(nvls)
    if len(candidates) == 1:
        return candidates[0]
    return min(candidates, key=lambda a: tuned_time_us(a, op, platform, ranks, nbytes))


NVLS_PIECES = 16      # pieces the NVLS stages pipeline in: one piece's reduce-scatter, network and
                     # all-gather overlap the next's (NCCL pipelines them chunk by chunk)


def nvls_in_server_ps(platform, ranks, op: str, m: int, step_latency: int) -> int | None:
    """How long `nccl_nvls` takes for `op` of `m` bytes on `ranks`, all in one server and
    starting together, or None without NVLink SHARP: what its pieces give, each stage
    step_latency + (k-1)/k of the piece at the GPU's rate + the hop; the reduce-scatter
    stages one after the other, each piece's all-gather after its reduce-scatter and the
    previous piece's all-gather (all-gather or reduce-scatter: their stages in a row)."""
    su = platform.scale_up
    if su is None or not su.nvls:
        return None
    k = len(ranks)
    rs_end = ag_end = 0
    for piece in split_bytes(m, NVLS_PIECES):
        if piece <= 0:
            continue
        stage = step_latency + int(np.ceil(int(piece) * (k - 1) / k * 8e12 / su.rate_bps)) + su.delay_ps
        if op != "allgather":
            rs_end += stage
        if op != "reducescatter":
            ag_end = max(rs_end, ag_end) + stage
    return rs_end if op == "reducescatter" else ag_end


def nccl_nvls(t, op: str, m: int, cfg: NcclConfig, across: str = "ring") -> None:
    """NCCL's NVLS `op` of `m` bytes (NVLink SHARP: the NVSwitch reduces and multicasts;
    src/device/all_reduce.h runNvls and runNvlsTree, all_gather.h and reduce_scatter.h
    runNvls), on the ranks of `t`, in NVLS_PIECES pieces.

    All-reduce, per piece, inside each server: a reduce-scatter through the switch (each
    GPU's port sends (k-1)/k of the piece, the switch hands GPU g the reduced slice g), then
    with several servers an all-reduce of each slice across the servers among the GPUs of
    the same local index (each over its own NIC: rail by rail), `across` = "ring" (NCCL's
    ring) or "tree" (NVLS_TREE, `nccl_nvls_tree`: the double binary tree over the servers,
    half of the slice on each of its trees), then an all-gather by multicast (each GPU
    writes its slice once, its port receives the (k-1)/k of the piece the others wrote).
    Reduce-scatter (m the input) is the first stage alone, all-gather (m the output) the
    last alone, both inside one server.  The switch's work is fluid: the reduce-scatter
    holds a GPU's sending side, the all-gather its receiving side, so successive pieces
    overlap them (an idle server, all-reduce: (1 + 1/NVLS_PIECES) (k-1)/k m / R, where a
    ring takes 2 (k-1)/k m / R; all-gather or reduce-scatter: (k-1)/k m / R + one stage's
    latency per piece, as the ring)."""
    pf, ranks = t.platform, t.ranks
    su = pf.scale_up
    if su is None or not su.nvls:
        raise ScenarioError("algorithm", "NVLS needs a scale-up switch with NVLink SHARP "
                                         "(topology.scale_up.nvls: true)")
    server = pf.server[ranks]
    servers, counts = np.unique(server, return_counts=True)
    if (counts != counts[0]).any():
        raise ScenarioError("ranks", "NVLS needs the same number of the communicator's GPUs in every server")
    k, S = int(counts[0]), servers.size
    if op != "allreduce" and S > 1:
        raise ScenarioError("ranks", f"NVLS {op} runs inside one server (across servers NCCL needs CollNet)")
    groups = np.lexsort((pf.local[ranks], server)).reshape(S, k)         # positions, server by server
    in_server = np.searchsorted(servers, server)                          # each position's server index
    hosts = pf.host[ranks]
    kw = t.node_kw
    send_side = recv_side = reduced = None                                # per position: the last stage node
    for piece in split_bytes(m, NVLS_PIECES):
        piece = int(piece)
        if piece <= 0:
            continue
        share_ps = int(np.ceil(piece * (k - 1) / k * 8e12 / su.rate_bps))
        if op == "allgather":
            if recv_side is None:             # every GPU's part is there once its server has started
                gathered = t.g.compute(hosts[groups[:, 0]], 0, **kw)
                t.first.append(np.repeat(gathered, k))
                t.src.append(groups.ravel())
                t.nodes.append(gathered)
        else:
            rs = t.g.compute(hosts, share_ps + su.delay_ps, delay=cfg.step_latency, **kw)
            if send_side is None:
                t.first.append(rs)
                t.src.append(np.arange(ranks.size))
            else:
                t.g.depend(rs, send_side)
            send_side = rs
            reduced = t.g.compute(hosts[groups[:, 0]], 0, **kw)              # the server's slices are reduced
            t.g.depend(np.repeat(reduced, k), rs[groups.ravel()])
            t.nodes += [rs, reduced]
            if op == "reducescatter":
                continue
            gathered = reduced                                                # the slices are all there
            if S > 1:
                gathered = t.g.compute(hosts[groups[:, 0]], 0, **kw)
                if across == "tree":                                          # every rail at once
                    _nvls_trees(t, groups, max(1, piece // k), reduced, gathered, cfg)
                else:
                    for col in groups.T:                                      # rail by rail across servers
                        sub = t.subset(col)
                        nccl_ring(sub, "allreduce", max(1, piece // k), cfg)
                        for ids, src in zip(sub.first, sub.src):
                            t.g.depend(ids, reduced[in_server[col[src]]])
                        for ids, dst in zip(sub.final, sub.dst):
                            t.g.depend(gathered[in_server[col[dst]]], ids)
                        t.nodes += sub.nodes
                t.nodes.append(gathered)
        ag = t.g.compute(hosts, share_ps + su.delay_ps, delay=cfg.step_latency, **kw)
        t.g.depend(ag, gathered[in_server])
        if recv_side is not None:
            t.g.depend(ag, recv_side)
        recv_side = ag
        t.nodes.append(ag)
    t.final.append(recv_side if op != "reducescatter" else reduced[in_server])
    t.dst.append(np.arange(ranks.size))


def _nvls_trees(t, groups, m: int, reduced, gathered, cfg: NcclConfig) -> None:
    """NVLS_TREE's step across servers: on every rail at once (column c of `groups`, the
    positions server by server), an all-reduce of `m` bytes over the double binary tree of
    the servers, half of `m` on each tree: up the tree level by level (a server sends when
    its children's halves have arrived and its `reduced` node is done), then down from the
    root; each server's `gathered` node waits for what reaches it.  Every send leaves
    `step_latency` after what it waits for and is at least `min_message` bytes."""
    S, k = groups.shape
    t.step_delay, t.min_bytes = cfg.step_latency, cfg.min_message
    cols = lambda ids, i: ids[:, i * k:(i + 1) * k]                  # edge i's k rails
    own = lambda servers: np.repeat(reduced[servers], k)[None, :]
    for parent, half in zip(binary_trees(S), split_bytes(m, 2)):
        if half <= 0:
            continue
        depth = tree_depths(parent)
        kids = [np.flatnonzero(parent == s) for s in range(S)]
        got = [[] for _ in range(S)]                                  # per server: (C, k) arrivals it waits for
        for d in range(int(depth.max()), 0, -1):                      # up, deepest level first
            ss = np.flatnonzero(depth == d)
            after = [own(ss)] + [np.concatenate([got[s][j] if len(got[s]) > j else np.full((t.C, k), -1)
                                                 for s in ss], axis=1) for j in range(2)]
            arrived = t.send(groups[ss].ravel(), groups[parent[ss]].ravel(), int(half), after)
            for i, s in enumerate(ss):
                got[parent[s]].append(cols(arrived, i))
        root = int(np.flatnonzero(parent < 0)[0])
        for d in range(int(depth.max())):                             # down, from the root
            edges = [(s, c) for s in np.flatnonzero(depth == d) for c in kids[s]]
            if not edges:
                continue
            a, b = (np.array(x) for x in zip(*edges))
            after = [np.concatenate([got[s][j] if len(got[s]) > j else np.full((t.C, k), -1) for s in a], axis=1)
                     for j in range(2)] + ([own(a)] if d == 0 else [])
            arrived = t.send(groups[a].ravel(), groups[b].ravel(), int(half), after)
            for i, c in enumerate(b):
                got[c] = [cols(arrived, i)]
        for s in range(S):
            for ids in got[s]:
                t.g.depend(np.broadcast_to(gathered[s], ids.shape), ids)
        t.g.depend(gathered[root:root + 1], reduced[root:root + 1])
