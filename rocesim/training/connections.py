"""Which queue pair a flow rides: connection labels (issue 31).

On a RoCE cluster every message travels on a queue pair (QP) of a connection, and a
switch's ECMP hash sees the QP's 5-tuple, whose UDP source port is fixed when the
connection is set up: every message on a QP takes the same path, for as long as the
connection lives.  NCCL sets its connections up once per communicator, one per channel
and peer, each with NCCL_IB_QPS_PER_CONNECTION QPs (src/transport/net_ib.cc), so a
collision between two of a job's QPs lasts for the job's life.

A flow's *label* (the `qp` column of a `Graph` and of a Simulation's nodes) names its QP
together with the flow's two hosts: flows with the same (src, dst, label) ride one QP;
`OWN_QP` (-1) makes a flow its own QP, hashed from its id as before issue 31.
`rocesim.world.connections` turns labels into 5-tuples and the hashes the core uses.

Labels are non-negative 63-bit numbers.  Those made here (collectives' connections,
traffic kinds' per-pair ones) have bit 62 set (`GENERATED`); a user's own connection keys
(explicit flows' `connection`) are below it, so the two never meet.  A collective's label
is its communicator's id XOR the label of (channel, peers, QP) inside it
(`connection_labels`), so that a collective built once and copied to another group of
ranks (`collectives.Templates`) takes that group's connections by one XOR (`rebased`).
"""
from __future__ import annotations

import hashlib

import numpy as np
from numpy.typing import ArrayLike

from rocesim.config import OWN_QP

__all__ = ["GENERATED", "LABEL_BITS", "mix64", "fold", "generated", "text_id", "communicator",
           "communicators", "connection_labels", "rebased"]

LABEL_BITS = 62                   # a user's labels and every id below are < 2**62
GENERATED = np.int64(1 << LABEL_BITS)
_MASK = np.uint64((1 << LABEL_BITS) - 1)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix64(x: ArrayLike) -> np.ndarray:
    """The splitmix64 finalizer (the core's `rng.mix64`), element by element, as uint64."""
    z = np.array(x, dtype=np.uint64, copy=True, ndmin=1)
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def fold(*parts: ArrayLike) -> np.ndarray:
    """A 64-bit hash (uint64) of the whole numbers `parts` taken in order, element by element
    (arrays broadcast): each part mixed into the hash of those before it."""
    h = np.full(1, 0x5EED5EED, np.uint64)
    with np.errstate(over="ignore"):
        for part in parts:
            h = mix64(h * _GOLDEN ^ np.asarray(part).astype(np.uint64))
    return h


def generated(*parts: ArrayLike) -> np.ndarray:
    """Labels (int64 >= 0, bit 62 set) made of `parts` (`fold`), element by element."""
    return (fold(*parts) & _MASK).astype(np.int64) | GENERATED


def text_id(text: str) -> int:
    """A stable id (< 2**62) of a name: the same in every process and run."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & int(_MASK)


def communicators(job: str, algorithm: str, rows: ArrayLike) -> np.ndarray:
    """The id (int64, < 2**62) of each row's communicator: the set of ranks of the row,
    within `job`, for `algorithm` (NCCL sets up a ring's connections apart from a tree's).
    The same group in every iteration and collective has the same id."""
    rows = np.atleast_2d(np.asarray(rows, np.int64))
    with np.errstate(over="ignore"):
        members = mix64(rows ^ np.int64(0x2545F4914F6CDD1D)).reshape(rows.shape).sum(axis=1, dtype=np.uint64)
    return (fold(text_id(job), text_id(algorithm), rows.shape[1], members) & _MASK).astype(np.int64)


def communicator(job: str, algorithm: str, ranks: ArrayLike) -> int:
    """`communicators` of one group of ranks."""
    return int(communicators(job, algorithm, np.asarray(ranks, np.int64)[None, :])[0])


def connection_labels(comm: int, channel: ArrayLike, peer_a: ArrayLike, peer_b: ArrayLike, qp: ArrayLike = 0
                      ) -> np.ndarray:
    """The labels (int64) of the queue pairs `qp` of the connections of communicator `comm`
    in `channel` from `peer_a` to `peer_b` (ids of the peers inside the communicator: their
    positions in a collective), element by element."""
    return generated(channel, peer_a, peer_b, qp) ^ np.int64(comm)


def rebased(labels: np.ndarray, old: int, new: np.ndarray) -> np.ndarray:
    """`labels` of a communicator `old` as those of communicator(s) `new` (broadcast over
    the labels' leading axes); `OWN_QP` stays."""
    return np.where(labels >= 0, labels ^ np.int64(old) ^ np.asarray(new, np.int64), np.int64(OWN_QP))
