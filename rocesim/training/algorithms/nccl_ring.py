"""NCCL's ring (`nccl_ring`: all-reduce, reduce-scatter, all-gather): its channels' rings
(`rocesim.training.nccl`), slice by slice (`pipeline: slices`) or as streams (`pipeline: stream`).

Here a slice between servers is one flow NIC -> NIC on a queue pair of its channel's
connection to the next rank (`qps_per_connection` of them, NCCL_IB_QPS_PER_CONNECTION,
src/transport/net_ib.cc: with `qp_spread: split` the slice is cut into one flow of equal
part per queue pair, as NCCL_IB_SPLIT_DATA_ON_QPS=1 splits a message; with `round_robin`
whole slices go on the queue pairs in turn) that starts when its data is there and
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
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from rocesim.training.algorithms.registry import Algorithm, Plan
from rocesim.training.algorithms.ring import RING_OPS, ring_in_server_ps
from rocesim.training.chunks import split_bytes, split_bytes_each
from rocesim.training.nccl import (BASE_LATENCY_US, CHUNKSTEPS, HW_LATENCY_US, RING_STEPS, SLICESTEPS, WINDOW,
                                   NcclConfig, RingLayout, channels_for, nccl_slice_estimate, platform_bus_bps,
                                   ring_layout, ring_plan)
from rocesim.training.transfers import Transfers

__all__ = ["nccl_ring", "nccl_ring_stream", "ring_place_bytes", "nccl_estimate", "NCCL_RING"]


# From this loop on a ring's full loops are the same slices with the same waits, moved by a
# loop's nodes: a slice waits for what came at most two steps before it (the receiver's window
# holds at most two steps' slices: WINDOW x S x NCCL's chunk / 2 / a chunk at least NCCL's;
# the GPU's port and the ring's data, one step), so for nothing before the loop two back.
STEADY_LOOP = 2


def nccl_ring(t: Transfers, op: str, m: int, cfg: NcclConfig) -> None:
    """NCCL's ring `op` (allreduce, reducescatter, allgather) of `m` bytes (nccl-tests'
    size) on the ranks of `t`: adds every slice's nodes and their dependencies, marking the
    first and final ones.  The loops that are full on every channel are the same slices:
    from `STEADY_LOOP` on, once built for one period of the queue pairs' rotation
    (`_Ring.period`), they are copied (`Graph.repeat`), not built loop by loop: a collective
    of terabytes has hundreds of thousands of loops."""
    p = t.ranks.size
    nch, S, chunk = ring_plan(t.platform, t.ranks, op, m, cfg)
    ring = _Ring(t, ring_layout(t.platform, t.ranks, nch), S, cfg,
                 max(1, WINDOW * S * cfg.chunk // ((CHUNKSTEPS // SLICESTEPS) * chunk)))
    parts = split_bytes(m, nch)                          # each channel's contiguous part
    loop_bytes = p * chunk
    steps = RING_STEPS[op](p)
    loops, full = int(-(-parts.max() // loop_bytes)), int(parts.min() // loop_bytes)
    period = ring.period(steps)
    loop, pattern = 0, None
    while loop < loops:
        if loop == STEADY_LOOP:
            pattern = ring.mark()
        elif pattern is not None and loop == STEADY_LOOP + period and full - loop >= period:
            times = (full - loop) // period
            ring.repeat(pattern, times)
            loop += times * period
            continue
        this = np.minimum(np.maximum(parts - loop * loop_bytes, 0), loop_bytes)   # the loop's bytes per channel
        if not this.any():
            break
        blocks = np.stack([split_bytes(int(x), p) for x in this])   # (nch, p): block j of each channel
        arrived = None
        for s in range(steps):
            # place i of channel c sends block (i - s) mod p of its ring (all-reduce runs the
            # reduce-scatter steps straight into the all-gather ones)
            j = (np.arange(p)[None, :] - s) % p
            arrived = ring.step(np.take_along_axis(blocks, j, axis=1).ravel(), arrived, first_step=s == 0)
        loop += 1
    ring.finish()


def ring_place_bytes(parts: np.ndarray, p: int, steps: int, chunk: int) -> tuple[np.ndarray, int, np.ndarray]:
    """What each place of each channel sends over a whole ring collective: (bytes (nch, p),
    loops, a full loop's block per channel).  Loop by loop the channel's part is cut into p
    blocks; at step s place i sends block (i - s) mod p, so over `steps` steps it sends
    every block steps // p times and the r = steps % p blocks i, i-1, .., i-r+1 once more.
    Every loop of a channel but its last is full (p x chunk bytes) and sends the same: the
    full loops are counted, not run (a collective of exabytes has billions of loops)."""
    loop_bytes = p * chunk
    loops = int(-(-parts.max() // loop_bytes))
    q, r = divmod(steps, p)

    def one_loop(this):                     # what each place sends in a loop of `this` bytes per channel
        blocks = split_bytes_each(this, p).T                            # (nch, p)
        ring = np.cumsum(np.concatenate([blocks, blocks], axis=1), axis=1)
        i = np.arange(p) + p
        return q * this[:, None] + ring[:, i] - ring[:, i - r]          # blocks i-r+1 .. i once more

    full, rest = np.divmod(np.asarray(parts, np.int64), loop_bytes)
    out = full[:, None] * one_loop(np.full(parts.size, loop_bytes, np.int64)) + one_loop(rest)
    return out, loops, split_bytes_each(np.minimum(parts, loop_bytes), p).max(axis=0)


def nccl_ring_stream(t: Transfers, op: str, m: int, cfg: NcclConfig) -> None:
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
    kw, g = ring.kw, t.graph
    if net.any():
        Q = cfg.qps_per_connection                 # (split or round robin: each queue pair an equal part)
        qp = t.connections(ring.channel[net], ring.pos_a[net], ring.pos_b[net], np.arange(Q)[:, None])
        ids = g.flows(np.tile(ring.nic_a[net], Q), np.tile(ring.nic_b[net], Q), split_bytes_each(sent[net], Q).ravel(),
                      prio=ring.prio, delay=cfg.step_latency, qp=qp.ravel(), **kw).reshape(Q, -1)
        first[net] = ids[0]
        arrive[net] = g.compute(ring.host_b[net], wait, **kw)
        g.depend(np.broadcast_to(arrive[net], ids.shape), ids)
        t.add_nodes(ids.ravel(), arrive[net])
    if su.any():
        busy = np.ceil(sent[su] * 8e12 / ring.share[su]).astype(np.int64)
        first[su] = g.compute(ring.host_a[su], busy, delay=cfg.step_latency, **kw)
        arrive[su] = g.compute(ring.host_b[su], ring.hop_ps[su] + wait, **kw)
        g.depend(arrive[su], first[su])
        t.add_nodes(first[su], arrive[su])
    t.mark_first(first[live], ring.pos_a[live])
    t.mark_final(arrive[live], ring.pos_b[live])


class _Ring:
    """The slices of one NCCL ring collective under construction, step by step: every
    (channel, place) sends to the next place of its channel's ring, between servers NIC to
    NIC on the channel's rail, inside a server at the channel's share of the GPU's port."""

    def __init__(self, t: Transfers, layout: RingLayout, slices: int, cfg: NcclConfig, window_slices: int):
        pf, ranks = t.platform, t.ranks
        self.t, self.cfg, self.S, self.window_slices = t, cfg, slices, window_slices
        nch, p = layout.order.shape
        nxt = np.roll(layout.order, -1, axis=1)
        self.pos_a, self.pos_b = layout.order.ravel(), nxt.ravel()      # rank positions of sender, receiver
        self.channel = np.repeat(np.arange(nch), p)                      # each place's channel
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
        self.kw, self.prio = t.node_kw, t.prio
        self.port_last = np.full(nch * p, -1, np.int64)   # per place: its last scale-up send
        self.window = []                                  # the last slices' arrivals per connection between servers
        self.sent = np.zeros(nch * p, np.int64)           # per place: slices sent (round robin over queue pairs)
        self.final = np.full((slices, nch * p), -1, np.int64)   # per place: its last step's arrivals
        self.nodes, self.first, self.src = [], [], []

    def period(self, steps: int) -> int:
        """After how many full loops of `steps` steps the slices ride the same queue pairs
        again: 1, or with `qp_spread: round_robin` the loops the rotation over the queue
        pairs takes to come back (each loop sends S x steps slices per connection)."""
        if self.cfg.qp_spread == "split":
            return 1
        q = self.cfg.qps_per_connection
        return q // math.gcd(q, self.S * steps)

    def mark(self) -> tuple:
        """Where the next loop starts: (the graph's nodes, its edges, the loops' first
        slices marked so far, the slices each place has sent), for `repeat`."""
        g = self.t.graph
        return g.n, g.n_edges, len(self.first), self.sent.copy()

    def repeat(self, mark: tuple, times: int) -> None:
        """Add `times` more copies of the loops built since `mark` (full loops whose waits
        all lie within the two loops before each: `STEADY_LOOP`), as if built one by one:
        the same nodes, edges and queue pairs, every id moved by the copies before."""
        g = self.t.graph
        n0, e0, f0, sent0 = mark
        k = g.n - n0                              # the pattern's nodes
        g.repeat(n0, e0, times)
        moves = np.arange(1, times + 1, dtype=np.int64)[:, None] * k
        self.nodes.append(np.arange(g.n - times * k, g.n, dtype=np.int64))
        self.first.append((np.concatenate(self.first[f0:])[None, :] + moves).ravel())
        self.src.append(np.tile(np.concatenate(self.src[f0:]), times))
        moved = lambda ids: np.where(ids >= 0, ids + times * k, ids)
        self.final = moved(self.final)
        self.port_last = moved(self.port_last)
        self.window = [moved(w) for w in self.window]
        self.sent += times * (self.sent - sent0)

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
            self.t.graph.depend(first[ok], arrived[ok])
        self.window = (self.window + [np.where(self.net, last[q], -1) for q in range(S)])[-self.window_slices:]
        if first_step:                            # a loop's first step needs only the rank's input
            self.first.append(first[:, live].ravel())
            self.src.append(np.tile(self.pos_a[live], S))
        self.final[:, live] = last[:, live]
        got = np.full_like(last, -1)
        got[:, self.into] = last
        return got

    def _network(self, sizes, sel, first, last):
        """Slices between servers, NIC to NIC on the queue pairs of their connection: each
        split into `qps_per_connection` flows, one per queue pair (`qp_spread: split`), or
        one flow on the next queue pair in turn (`round_robin`); each after the slice
        `window_slices` before it on its connection has arrived."""
        t, S, k = self.t, self.S, int(sel.sum())
        Q = self.cfg.qps_per_connection if self.cfg.qp_spread == "split" else 1     # flows per slice
        if self.cfg.qp_spread == "split":
            qp = np.arange(Q)[:, None, None]
        else:
            qp = (self.sent[sel][None, :] + np.arange(S)[:, None]) % self.cfg.qps_per_connection
            self.sent[sel] += S
        labels = np.broadcast_to(t.connections(self.channel[sel], self.pos_a[sel], self.pos_b[sel], qp), (Q, S, k))
        per_qp = split_bytes_each(sizes[:, sel].ravel(), Q)                 # (Q, S*k)
        g = t.graph
        ids = g.flows(np.tile(self.nic_a[sel], S * Q), np.tile(self.nic_b[sel], S * Q), per_qp.ravel(),
                      prio=self.prio, delay=self.cfg.step_latency, qp=labels.ravel(), **self.kw).reshape(Q, S, k)
        self.nodes.append(ids.ravel())
        first[:, sel] = last[:, sel] = ids[0]
        if Q > 1:                                 # a slice is there when all its parts are
            last[:, sel] = g.compute(np.tile(self.host_b[sel], S), 0, **self.kw).reshape(S, k)
            g.depend(np.broadcast_to(last[:, sel], (Q, S, k)), ids)
            self.nodes.append(last[:, sel].ravel())
        for q in range(S):                        # the receiver's buffer: its slices in flight per connection
            back = len(self.window) + q - self.window_slices
            prev = self.window[back][sel] if back >= 0 else np.full(k, -1, np.int64)
            ok = prev >= 0
            g.depend(ids[:, q][:, ok], np.broadcast_to(prev[ok], (Q, int(ok.sum()))))

    def _scale_up(self, sizes, sel, first, last):
        """Slices inside a server: the sender's share of its port, slice after slice, then the hop."""
        g, S = self.t.graph, self.S
        busy = np.ceil(sizes[:, sel] * 8e12 / self.share[sel]).astype(np.int64)
        wire = g.compute(np.tile(self.host_a[sel], S), busy.ravel(), delay=self.cfg.step_latency,
                         **self.kw).reshape(S, -1)
        land = g.compute(np.tile(self.host_b[sel], S), np.tile(self.hop_ps[sel], S), **self.kw).reshape(S, -1)
        g.depend(land, wire)
        g.depend(wire[1:], wire[:-1])                              # the channel's port, in order
        prev = self.port_last[sel]
        ok = prev >= 0
        g.depend(wire[0][ok], prev[ok])
        self.port_last[sel] = wire[-1]
        first[:, sel], last[:, sel] = wire, land
        self.nodes += [wire.ravel(), land.ravel()]

    def finish(self):
        """Hand the slices to `t`: every first-step slice waits for its rank's start; each
        rank is done when its last step's slices have arrived (every other slice comes
        before one of them: the ring's data and each connection's order chain them)."""
        t = self.t
        t.add_nodes(*self.nodes)
        for ids, positions in zip(self.first, self.src):
            t.mark_first(ids, positions)
        have = self.final >= 0
        t.mark_final(self.final[have], np.broadcast_to(self.pos_b, self.final.shape)[have])


def nccl_estimate(op: str, p: int, chunks: int, size: int, cfg: NcclConfig) -> int:
    """About how many nodes NCCL's ring `op` adds (two per slice, `nccl.nccl_slice_estimate`,
    and a few per rank), an upper end; also the estimate of what NVLS and `auto` may run."""
    return 2 * nccl_slice_estimate(op, p, size, cfg) + 4 * p


def _build(t: Transfers, plan: Plan) -> None:
    (nccl_ring_stream if plan.nccl.pipeline == "stream" else nccl_ring)(t, plan.op, plan.size, plan.nccl)


def _tuned_us(op: str, platform, ranks, nbytes: int) -> float:
    """NCCL's estimate of its ring's time (tuning.cc, Simple protocol): base latency + an
    NVLink latency per step inside servers and a network one per step between them + bytes
    over the algorithm bandwidth (the bus bandwidth x n / steps)."""
    ranks = np.asarray(ranks, np.int64)
    n = ranks.size
    nodes = np.unique(platform.server[ranks]).size
    intra, inter = HW_LATENCY_US["nvlink"]["nccl_ring"], HW_LATENCY_US["net"]["nccl_ring"]
    bus = platform_bus_bps(platform, ranks) / 8 / 1e6                      # bytes per us
    steps = RING_STEPS[op](n)
    inter_steps = 0 if nodes == 1 else (2 if op == "allreduce" else 1) * (nodes - 1)
    latency = BASE_LATENCY_US["nccl_ring"] + (steps - inter_steps) * intra + inter_steps * inter
    return latency + nbytes / (bus * n / steps)


NCCL_RING = Algorithm("nccl_ring", RING_OPS, nccl_estimate, build=_build,
                      plan=lambda plan, platform, ranks: replace(plan, pieces=1),     # NCCL cuts its own slices
                      closed_form=lambda t, plan: ring_in_server_ps(t, plan.op, plan.size, plan.nccl.step_latency),
                      tuned_us=_tuned_us, available=lambda op, platform, ranks: True)
