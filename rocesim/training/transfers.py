"""The transfers of one collective under construction: what a collective algorithm builds with.

An algorithm (a file of `rocesim.training.algorithms`) adds its sends, joins and compute
steps to a `Transfers` and marks which of its nodes start from a rank's input (`mark_first`)
and which a rank must have received before it is done (`mark_final`); `connect` then ties
them to the collective's per-rank start and done nodes.  Everything goes through the
methods below and the public methods of the `Graph` (`Transfers.graph`): no module writes
the attributes of another.

A transfer between ranks of different servers is one flow per piece between their NICs;
inside a server it is a fluid scale-up transfer: a compute node on the sender that holds
its port (`ScaleUp.port_time_ps`), then one for the latency.  With rail-aligned forwarding
(`Platform.relay`) a transfer to another rail first crosses the scale-up domain to the GPU
on the destination's rail, then that GPU's NIC.

A collective of a communicator (`comm`, `rocesim.training.connections.communicator`) sends
its flows on its connections: one per (lane, peer pair), the peers named by `peers`
(positions in the collective, unless told otherwise), whose label every piece of every
transfer between them carries (`connections`); without a communicator each flow is its
own queue pair.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from rocesim.config import OWN_QP
from rocesim.network.platform import Platform
from rocesim.network.topology import Topology
from rocesim.training.chunks import split_bytes_each
from rocesim.training.connections import connection_labels
from rocesim.training.graph import Graph

__all__ = ["Transfers", "hosts_platform"]


def hosts_platform(ranks: ArrayLike) -> Platform:
    """The plain platform for collectives on hosts (rank = host) up to the largest rank."""
    return Platform.hosts(Topology(int(np.max(ranks)) + 1 if np.size(ranks) else 1))


class Transfers:
    """The transfers of one collective on `ranks` of `platform` (None: ranks are hosts),
    added to `graph`, each cut into `pieces` that go in order.

    Its nodes carry the collective's `prio` (flows), id `collective`, `iteration` and `tag`;
    nodes without parents start at `start`.  `lanes` (NCCL's channels) split a GPU's
    scale-up port equally and run side by side; `pxn` forwards transfers to other rails
    through the scale-up domain first.  Positions (0..len(ranks)-1) name the ranks in
    every method.  With a communicator id `comm` its flows ride its connections, one per
    (lane, pair of `peers`: each position's id in the communicator, by default the
    position itself); without one (None) each flow is its own queue pair.
    """

    def __init__(self, graph: Graph, ranks: ArrayLike, pieces: int, prio: int, collective: int, iteration: int, tag: int,
                 platform: Platform | None = None, pxn: bool = False, lanes: int = 1, *, start: int = 0,
                 comm: int | None = None, peers: ArrayLike | None = None):
        self._graph = graph
        self._ranks = np.asarray(ranks, np.int64)
        self._comm = comm
        self._peers = np.arange(self._ranks.size) if peers is None else np.asarray(peers, np.int64)
        # the positions by rank, to find a rank's position (`_position`) when flows ride connections
        self._by_rank = None if comm is None else np.argsort(self._ranks, kind="stable")
        self._pieces = int(pieces)
        self._platform = hosts_platform(self._ranks) if platform is None else platform
        self._pxn = pxn
        self._prio = prio
        self._node_kw = dict(collective=collective, iteration=iteration, tag=tag, start=start)
        # the last scale-up send of each GPU (rank id) in each lane: a GPU's port carries one
        # send (or one step's concurrent sends, sharing it) at a time per lane, in the order
        # they are issued; `_lane` is the one being built
        self._lanes, self._lane = lanes, 0
        self._port_last = np.full((lanes, self._platform.n_ranks), -1, np.int64)
        # NCCL's per-send software latency and small-message floor (0: the textbook algorithms)
        self._step_delay, self._min_bytes = 0, 0
        self._first: list[np.ndarray] = []     # per block: ids of each transfer's first node,
        self._src: list[np.ndarray] = []       # ... its sender's position
        self._final: list[np.ndarray] = []     # ... ids of what a receiver waits for,
        self._dst: list[np.ndarray] = []       # ... its receiver's position
        self._nodes: list[np.ndarray] = []     # every node

    # what the collective is built on

    @property
    def graph(self) -> Graph:
        """The graph the transfers are added to (algorithms call its public methods)."""
        return self._graph

    @property
    def ranks(self) -> np.ndarray:
        """The collective's ranks, by position."""
        return self._ranks

    @property
    def pieces(self) -> int:
        """How many pieces each transfer is cut into (they go in order)."""
        return self._pieces

    @property
    def platform(self) -> Platform:
        """The platform of the ranks (the plain one of hosts when none was given)."""
        return self._platform

    @property
    def lanes(self) -> int:
        """How many lanes (NCCL's channels) share each GPU's scale-up port."""
        return self._lanes

    @property
    def prio(self) -> int:
        """The flows' priority."""
        return self._prio

    def connections(self, lane: ArrayLike, a: ArrayLike, b: ArrayLike, qp: ArrayLike = 0) -> np.ndarray:
        """The labels (`Graph.flows`' `qp`) of queue pairs `qp` of the connections in `lane`
        from the rank at position a[k] to the one at b[k] (arrays broadcast); `OWN_QP`
        throughout without a communicator."""
        if self._comm is None:
            return np.full(np.broadcast_shapes(*(np.shape(x) for x in (lane, a, b, qp))), OWN_QP, np.int64)
        return connection_labels(self._comm, lane, self._peers[np.asarray(a)], self._peers[np.asarray(b)], qp)

    @property
    def node_kw(self) -> dict:
        """The graph keywords of this collective's nodes (`Graph.compute`; with `prio`, `Graph.flows`)."""
        return dict(self._node_kw)

    # how the next sends are made

    def use_lane(self, lane: int) -> None:
        """Build the next scale-up sends in `lane` (0..lanes-1): its share of each GPU's port,
        in order after that lane's earlier sends."""
        self._lane = int(lane)

    def pace(self, step_delay: int, min_bytes: int = 0) -> None:
        """Send every next transfer `step_delay` ps after what it waits for, and at least
        `min_bytes` bytes (NCCL's per-step latency and small-message floor)."""
        self._step_delay, self._min_bytes = int(step_delay), int(min_bytes)

    def subset(self, positions: ArrayLike) -> "Transfers":
        """Transfers among some of the ranks (`positions`), in the same graph and collective,
        one lane, unpaced; `adopt` counts their nodes as this collective's."""
        positions = np.asarray(positions)
        return Transfers(self._graph, self._ranks[positions], self._pieces, self._prio,
                         self._node_kw["collective"], self._node_kw["iteration"], self._node_kw["tag"],
                         self._platform, self._pxn, start=self._node_kw["start"], comm=self._comm,
                         peers=self._peers[positions])

    # adding transfers

    def send(self, src: ArrayLike, dst: ArrayLike, nbytes: ArrayLike, after: Sequence[ArrayLike] = (), *,
             final: bool = True) -> np.ndarray:
        """Transfers src[k] -> dst[k] (positions) of nbytes[k]; returns the ids of their
        arrivals, shape (pieces, k).

        `after` lists arrays of ids of shape (pieces, k) (-1: none): piece c of transfer k
        waits for after[j][c, k] for every j.  Every transfer waits for its sender's start
        (`mark_first`); with `final` its receiver is done only once it has arrived (else the
        caller marks what the receiver waits for with `mark_final`).
        """
        src, dst = np.atleast_1d(src), np.atleast_1d(dst)
        nbytes = np.broadcast_to(np.asarray(nbytes, np.int64), src.shape)
        if not src.size:
            return np.zeros((self._pieces, 0), np.int64)
        first, arrival = self.route(self._ranks[src], self._ranks[dst], split_bytes_each(nbytes, self._pieces))
        for a in after:
            a = np.broadcast_to(np.asarray(a), first.shape)
            ok = a >= 0
            self._graph.depend(first[ok], a[ok])
        self.mark_first(first.ravel(), np.tile(src, self._pieces))
        if final:
            self.mark_final(arrival.ravel(), np.tile(dst, self._pieces))
        return arrival

    def route(self, a: np.ndarray, b: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pieces of transfers from ranks (not positions) a[k] to b[k] of sizes[c, k] bytes,
        issued together, through the relay GPU when rail-aligned forwarding applies
        (`Platform.relay`); returns (first, last) ids of shape (pieces, k): the node that
        occupies the sender and the arrival.  Neither is marked first or final."""
        relay = self._platform.relay(a, b, self._pxn)
        hop = relay >= 0
        # the connection between a and b: its flows leave from the relay's NIC when forwarded
        qp = (self.connections(self._lane, self._position(a), self._position(b)) if self._comm is not None
              else np.full(a.shape, OWN_QP, np.int64))
        first, last = self._leg(a, np.where(hop, relay, b), sizes, qp)
        if hop.any():                             # then from the relay over its own NIC
            f2, l2 = self._leg(relay[hop], b[hop], sizes[:, hop], qp[hop])
            self._graph.depend(f2, last[:, hop])
            last[:, hop] = l2
        return first, last

    def _position(self, ranks: np.ndarray) -> np.ndarray:
        """The position of each of `ranks` (one of the collective's) in it."""
        return self._by_rank[np.searchsorted(self._ranks, ranks, sorter=self._by_rank)]

    def _leg(self, a, b, sizes, qp):
        """`route` without the relay; network flows ride the queue pairs labelled `qp`."""
        pf, g = self._platform, self._graph
        C, k = sizes.shape
        sizes = np.maximum(sizes, self._min_bytes)
        first = np.empty((C, k), np.int64)
        last = np.empty((C, k), np.int64)
        net = pf.server[a] != pf.server[b]
        kw = self.node_kw
        if net.any():
            ids = g.flows(np.tile(pf.host[a[net]], C), np.tile(pf.host[b[net]], C), sizes[:, net].ravel(),
                          prio=self._prio, delay=self._step_delay, qp=np.tile(qp[net], C), **kw).reshape(C, -1)
            first[:, net] = last[:, net] = ids
            self._nodes.append(ids.ravel())
        su = ~net
        if su.any():
            su_up = pf.scale_up
            aa, bb = a[su], b[su]
            # each distinct row of piece sizes once: a transfer's pieces differ by a byte at most,
            # so there are few, however many pieces (NCCL's tree has thousands)
            rows, row_of = np.unique(sizes[:, su], axis=0, return_inverse=True)
            busy = np.stack([su_up.port_time_ps(aa, bb, row, pf.gpus_per_server) for row in rows])[row_of.reshape(-1)]
            busy *= self._lanes
            lat = su_up.delay_ps * su_up.hops(pf.local[aa], pf.local[bb], pf.gpus_per_server)
            wire = g.compute(np.tile(pf.host[aa], C), np.maximum(busy, 0).ravel(), delay=self._step_delay,
                             **kw).reshape(C, -1)
            arrive = g.compute(np.tile(pf.host[bb], C), np.tile(lat, C), **kw).reshape(C, -1)
            g.depend(arrive, wire)
            queued = self._port_last[self._lane, aa]
            g.depend(wire[0][queued >= 0], queued[queued >= 0])
            self._port_last[self._lane, aa] = wire[-1]
            first[:, su], last[:, su] = wire, arrive
            self._nodes += [wire.ravel(), arrive.ravel()]
        g.depend(first[1:], first[:-1])          # the pieces of a transfer go in order
        return first, last

    def join(self, parents: Iterable[ArrayLike], position: int) -> np.ndarray:
        """Zero-length nodes (pieces,) on the rank at `position` that wait for every array of
        ids (pieces,) in `parents` (-1: none): a point where several inputs are all there."""
        ids = self._graph.compute(np.full(self._pieces, self._platform.host[self._ranks[position]]), 0,
                                  **self.node_kw)
        for a in parents:
            a = np.asarray(a)
            ok = a >= 0
            self._graph.depend(ids[ok], a[ok])
        self._nodes.append(ids)
        return ids

    def rounds_in_server_ps(self, a: np.ndarray, b: np.ndarray, nbytes: np.ndarray, rounds: int,
                            step_latency: int = 0) -> int:
        """How long `rounds` rounds of the transfers a[k] -> b[k] (ranks of one server) of
        nbytes[k] take in the fluid scale-up model, each round after the last: the busiest
        port's time, `step_latency` and the longest hop, per round (a closed form inside one
        server: what the step-by-step transfers give with one piece when every rank starts
        together, tests/network/test_platform.py)."""
        pf = self._platform
        su, G = pf.scale_up, pf.gpus_per_server
        busy = su.port_time_ps(a, b, nbytes, G).max()
        return rounds * int(busy + step_latency + su.delay_ps * su.hops(pf.local[a], pf.local[b], G).max())

    # what the algorithm made itself, with the graph

    def add_nodes(self, *ids: ArrayLike) -> None:
        """Count nodes the algorithm added to the graph itself as this collective's."""
        self._nodes += [np.asarray(x) for x in ids]

    def mark_first(self, ids: ArrayLike, positions: ArrayLike) -> None:
        """Nodes ids[i] start from the input of the rank at positions[i]: each waits for that
        rank's start node."""
        self._first.append(np.asarray(ids))
        self._src.append(np.asarray(positions))

    def mark_final(self, ids: ArrayLike, positions: ArrayLike) -> None:
        """The rank at positions[i] is done only after node ids[i]."""
        self._final.append(np.asarray(ids))
        self._dst.append(np.asarray(positions))

    def starts(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """What `mark_first` marked, in order: (ids, positions) blocks."""
        return list(zip(self._first, self._src))

    def finals(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """What `mark_final` marked, in order: (ids, positions) blocks."""
        return list(zip(self._final, self._dst))

    def adopt(self, sub: "Transfers") -> None:
        """Count the nodes of `sub` (a `subset`) as this collective's; its starts and finals
        are the caller's to tie (`starts`, `finals`)."""
        self._nodes += sub._nodes

    def connect(self, start_nodes: np.ndarray, done_nodes: np.ndarray) -> np.ndarray:
        """Every node marked first waits for its rank's start node; each rank's done node
        waits for every node marked final for it.  Returns the collective's nodes, sorted."""
        g = self._graph
        g.depend(done_nodes, start_nodes)              # every done node has a parent
        if not self._first:
            return np.zeros(0, np.int64)
        # a rank sends nothing before its own input is ready, and is done only when
        # everything addressed to it has arrived (not just the last step's data)
        g.depend(np.concatenate(self._first), start_nodes[np.concatenate(self._src)])
        g.depend(done_nodes[np.concatenate(self._dst)], np.concatenate(self._final))
        return np.sort(np.concatenate(self._nodes))
