"""NCCL's tree all-reduce (`nccl_tree`): per channel, chains inside the servers and the double
binary tree across them, chunk by chunk (`pipeline: slices`) or as streams (`pipeline: stream`).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.training.algorithms.registry import Algorithm, Plan
from rocesim.training.chunks import split_bytes
from rocesim.training.nccl import (BASE_LATENCY_US, HW_LATENCY_US, NCCL_STEPS, NcclConfig, channels_for, nics_used,
                                   platform_bus_bps, ring_layout)
from rocesim.training.transfers import Transfers
from rocesim.training.trees import binary_trees, tree_allreduce, tree_depths

__all__ = ["tree_chunks", "tree_streams", "nccl_tree", "nccl_tree_stream", "NCCL_TREE"]

TREE_BW_FACTOR = 0.92                                                # the tree all-reduce's busBw x .92 (tuning.cc)


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


def _tree_channels(t: Transfers):
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


def nccl_tree(t: Transfers, m: int, cfg: NcclConfig) -> None:
    """NCCL's tree all-reduce of `m` bytes on the ranks of `t` (built with `tree_chunks`
    chunks as its pieces): per channel (`_tree_channels`), reduce up the tree then
    broadcast down, chunk by chunk (src/graph/trees.cc, connect.cc: chains inside nodes,
    the double binary tree across them), so every server head is inner in one tree and a
    leaf in the other.  Every chunk is sent `step_latency` after what it waits for and is
    at least `min_message` bytes (queue pairs per connection: one)."""
    parts = split_bytes(m, t.lanes)
    t.pace(cfg.step_latency, cfg.min_message)
    for c, (order, parent) in enumerate(_tree_channels(t)):
        t.use_lane(c)                                      # the channel's share of each GPU's port
        tree_allreduce(t, parent, int(parts[c]), t.ranks.size, order=order)


def nccl_tree_stream(t: Transfers, m: int, cfg: NcclConfig) -> None:
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
    t.pace(cfg.step_latency)
    for c, (order, parent) in enumerate(_tree_channels(t)):
        t.use_lane(c)
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
        arrive = t.send(src, dst, int(parts[c]), final=False)[0]
        done = t.graph.compute(pf.host[t.ranks[dst]], wait, **t.node_kw)    # after the fill and drain
        t.graph.depend(done, arrive)
        t.add_nodes(done)
        t.mark_final(done, dst)


def _estimate(op: str, p: int, chunks: int, size: int, cfg: NcclConfig) -> int:
    """Every chunk of every channel up and down the tree, at most `max_transfers` (or two
    per rank and channel, 16 channels)."""
    tree = 2 * p * max(1, size // (cfg.buffer // 8))
    return 2 * min(tree, max(cfg.max_transfers, 2 * p * 16)) + 4 * p


def _plan(plan: Plan, platform, ranks) -> Plan:
    """NCCL cuts its own chunks (`tree_chunks`), one lane per channel; streams are one piece."""
    pieces, lanes = tree_chunks(platform, ranks, plan.size, plan.nccl)
    stream = tree_streams(platform, ranks, plan.size, plan.nccl)
    return replace(plan, pieces=1 if stream else pieces, lanes=lanes, stream=stream)


def _tuned_us(op: str, platform, ranks, nbytes: int) -> float:
    """NCCL's estimate of its tree's time (tuning.cc, Simple protocol): base latency + the
    NVLink latencies up and down the chain and the network ones up and down the tree +
    bytes over half of 0.92 x the bus bandwidth."""
    ranks = np.asarray(ranks, np.int64)
    n = ranks.size
    nodes = np.unique(platform.server[ranks]).size
    intra, inter = HW_LATENCY_US["nvlink"]["nccl_tree"], HW_LATENCY_US["net"]["nccl_tree"]
    bus = platform_bus_bps(platform, ranks) / 8 / 1e6                      # bytes per us
    latency = BASE_LATENCY_US["nccl_tree"] + 2 * ((n // nodes - 1) * intra + int(np.log2(nodes)) * inter)
    return latency + nbytes / (bus * TREE_BW_FACTOR * 0.5)


def _even_servers(op: str, platform, ranks) -> bool:
    """NCCL's tree needs servers holding the same number of the communicator's GPUs."""
    counts = np.unique(platform.server[np.asarray(ranks, np.int64)], return_counts=True)[1]
    return bool((counts == counts[0]).all())


NCCL_TREE = Algorithm("nccl_tree", ("allreduce",), _estimate, plan=_plan,
                      build=lambda t, plan: (nccl_tree_stream if plan.stream else nccl_tree)(t, plan.size, plan.nccl),
                      tuned_us=_tuned_us, available=_even_servers)
