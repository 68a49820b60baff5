"""NCCL's NVLS algorithms (NVLink SHARP: the NVSwitch reduces and multicasts): `nccl_nvls`
inside one server (all-reduce, reduce-scatter, all-gather), `nccl_nvls_tree` across servers
(all-reduce, NVLS_TREE: the double binary tree over the servers between the switch's stages).

Where NCCL's tuning has them (`nvls_available`) and their tuned times are NCCL's
(src/graph/tuning.cc; `rocesim.training.nccl`'s tuning constants).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.training.algorithms.nccl_ring import nccl_estimate, nccl_ring
from rocesim.training.algorithms.registry import Algorithm
from rocesim.training.chunks import split_bytes
from rocesim.training.nccl import BASE_LATENCY_US, HW_LATENCY_US, NcclConfig, nics_used
from rocesim.training.transfers import Transfers
from rocesim.training.trees import binary_trees, tree_depths

__all__ = ["NVLS_PIECES", "nccl_nvls", "nvls_available", "nvls_bus_bps", "nvls_in_server_ps", "NCCL_NVLS",
           "NCCL_NVLS_TREE"]

NVLS_BW_RATIO = 5 / 6                # NVLS / NVLS_TREE all-reduce: algorithm bandwidth = 5/6 of the bus's
NVLS_GATHER_NET_FACTOR = 0.9         # NVLS all-gather / reduce-scatter: min(intra (k-1)/k, inter x 0.9)
NVLS_MIN_GPUS = 3                    # src/transport/nvls.cc, ncclNvlsInit: no NVLS on 2 GPUs or fewer
NVLS_MAX_ARITY = 32                  # src/include/device.h NCCL_MAX_NVLS_ARITY: all-gather/reduce-scatter


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


def nccl_nvls(t: Transfers, op: str, m: int, cfg: NcclConfig, across: str = "ring") -> None:
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
    groups, in_server = _server_groups(t, op)
    su, g, kw = t.platform.scale_up, t.graph, t.node_kw
    hosts = t.platform.host[t.ranks]
    k = groups.shape[1]
    send_side = recv_side = reduced = gathered = None                     # per position: the last stage node
    for piece in split_bytes(m, NVLS_PIECES):
        piece = int(piece)
        if piece <= 0:
            continue
        stage_ps = int(np.ceil(piece * (k - 1) / k * 8e12 / su.rate_bps)) + su.delay_ps
        if op == "allgather":
            if gathered is None:              # every GPU's part is there once its server has started
                gathered = g.compute(hosts[groups[:, 0]], 0, **kw)
                t.mark_first(np.repeat(gathered, k), groups.ravel())
                t.add_nodes(gathered)
        else:
            send_side, reduced = _reduce_scatter(t, hosts, groups, stage_ps, send_side, cfg)
            if op == "reducescatter":
                continue
            gathered = (reduced if groups.shape[0] == 1                # the slices are all there
                        else _across_servers(t, hosts, groups, in_server, max(1, piece // k), reduced, cfg, across))
        ag = g.compute(hosts, stage_ps, delay=cfg.step_latency, **kw)   # the multicast to each GPU's port
        g.depend(ag, gathered[in_server])
        if recv_side is not None:
            g.depend(ag, recv_side)
        recv_side = ag
        t.add_nodes(ag)
    t.mark_final(recv_side if op != "reducescatter" else reduced[in_server], np.arange(t.ranks.size))


def _server_groups(t: Transfers, op: str) -> tuple[np.ndarray, np.ndarray]:
    """(the positions server by server, (servers, k); each position's server index), once
    NVLS can run `op` on the ranks of `t`."""
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
    return groups, np.searchsorted(servers, server)


def _reduce_scatter(t: Transfers, hosts, groups, stage_ps: int, send_side, cfg: NcclConfig):
    """One piece's reduce-scatter through the switch: each GPU's sending side busy for a
    stage after its previous piece's (`send_side`), then each server's slices reduced.
    Returns (the GPUs' stage nodes, each server's reduced node)."""
    g, kw = t.graph, t.node_kw
    rs = g.compute(hosts, stage_ps, delay=cfg.step_latency, **kw)
    if send_side is None:
        t.mark_first(rs, np.arange(hosts.size))
    else:
        g.depend(rs, send_side)
    reduced = g.compute(hosts[groups[:, 0]], 0, **kw)                    # the server's slices are reduced
    g.depend(np.repeat(reduced, groups.shape[1]), rs[groups.ravel()])
    t.add_nodes(rs, reduced)
    return rs, reduced


def _across_servers(t: Transfers, hosts, groups, in_server, m: int, reduced, cfg: NcclConfig, across: str):
    """The all-reduce of each GPU's reduced slice of `m` bytes across the servers, rail by
    rail: NCCL's ring on each rail, or every rail at once over the double binary tree of the
    servers (`across` = "tree", `_nvls_trees`).  Returns each server's node for when its
    slices are all there."""
    gathered = t.graph.compute(hosts[groups[:, 0]], 0, **t.node_kw)
    if across == "tree":
        _nvls_trees(t, groups, m, reduced, gathered, cfg)
    else:
        # the collective's rings together (one per piece and rail) are cut into at most
        # `max_transfers` slices, as one ring is (`nccl.ring_plan`), not each of them
        ring_cfg = replace(cfg, max_transfers=max(1, cfg.max_transfers // (NVLS_PIECES * groups.shape[1])))
        for col in groups.T:                                              # rail by rail across servers
            sub = t.subset(col)
            nccl_ring(sub, "allreduce", m, ring_cfg)
            for ids, src in sub.starts():
                t.graph.depend(ids, reduced[in_server[col[src]]])
            for ids, dst in sub.finals():
                t.graph.depend(gathered[in_server[col[dst]]], ids)
            t.adopt(sub)
    t.add_nodes(gathered)
    return gathered


def _nvls_trees(t: Transfers, groups, m: int, reduced, gathered, cfg: NcclConfig) -> None:
    """NVLS_TREE's step across servers: on every rail at once (column c of `groups`, the
    positions server by server), an all-reduce of `m` bytes over the double binary tree of
    the servers, half of `m` on each tree: up the tree level by level (a server sends when
    its children's halves have arrived and its `reduced` node is done), then down from the
    root; each server's `gathered` node waits for what reaches it.  Every send leaves
    `step_latency` after what it waits for and is at least `min_message` bytes."""
    S, k = groups.shape
    t.pace(cfg.step_latency, cfg.min_message)
    cols = lambda ids, i: ids[:, i * k:(i + 1) * k]                  # edge i's k rails
    own = lambda servers: np.repeat(reduced[servers], k)[None, :]
    for parent, half in zip(binary_trees(S), split_bytes(m, 2)):
        if half <= 0:
            continue
        depth = tree_depths(parent)
        kids = [np.flatnonzero(parent == s) for s in range(S)]
        got = [[] for _ in range(S)]                                  # per server: (pieces, k) arrivals it waits for
        for d in range(int(depth.max()), 0, -1):                      # up, deepest level first
            ss = np.flatnonzero(depth == d)
            after = [own(ss)] + [np.concatenate([got[s][j] if len(got[s]) > j else np.full((t.pieces, k), -1)
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
            after = [np.concatenate([got[s][j] if len(got[s]) > j else np.full((t.pieces, k), -1) for s in a], axis=1)
                     for j in range(2)] + ([own(a)] if d == 0 else [])
            arrived = t.send(groups[a].ravel(), groups[b].ravel(), int(half), after)
            for i, c in enumerate(b):
                got[c] = [cols(arrived, i)]
        for s in range(S):
            for ids in got[s]:
                t.graph.depend(np.broadcast_to(gathered[s], ids.shape), ids)
        t.graph.depend(gathered[root:root + 1], reduced[root:root + 1])


def _tuned(name: str):
    """NCCL's estimate of the time of NVLS (`nccl_nvls`) or NVLS_TREE (`nccl_nvls_tree`), from
    tuning.cc: no base latency, the NVLink latency once and the network's once per level
    (NVLS_TREE: 2 log2(servers)), bytes over `nvls_bus_bps` (x 5/6 for all-reduce)."""
    def tuned_us(op: str, platform, ranks, nbytes: int) -> float:
        ranks = np.asarray(ranks, np.int64)
        nodes = np.unique(platform.server[ranks]).size
        intra, inter = HW_LATENCY_US["nvlink"][name], HW_LATENCY_US["net"][name]
        bus = nvls_bus_bps(op, platform, ranks) / 8 / 1e6
        levels = 2 * int(np.log2(nodes)) if name == "nccl_nvls_tree" else int(nodes > 1)
        return (BASE_LATENCY_US[name] + intra + levels * inter
                + nbytes / (bus * (NVLS_BW_RATIO if op == "allreduce" else 1.0)))
    return tuned_us


NCCL_NVLS = Algorithm("nccl_nvls", ("allreduce", "reducescatter", "allgather"), nccl_estimate,
                      build=lambda t, plan: nccl_nvls(t, plan.op, plan.size, plan.nccl, "ring"),
                      closed_form=lambda t, plan: nvls_in_server_ps(t.platform, t.ranks, plan.op, plan.size,
                                                                    plan.nccl.step_latency),
                      tuned_us=_tuned("nccl_nvls"),
                      available=lambda op, platform, ranks: nvls_available(op, platform, ranks) == "nccl_nvls")
NCCL_NVLS_TREE = Algorithm("nccl_nvls_tree", ("allreduce",), nccl_estimate,
                           build=lambda t, plan: nccl_nvls(t, plan.op, plan.size, plan.nccl, "tree"),
                           tuned_us=_tuned("nccl_nvls_tree"),
                           available=lambda op, platform, ranks: nvls_available(op, platform, ranks) == "nccl_nvls_tree")
