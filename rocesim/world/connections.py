"""The 5-tuple of the queue pair each flow rides, and the ECMP hashes of it handed to the core.

A switch's ECMP hash sees a RoCEv2 packet's 5-tuple: its two hosts' addresses, UDP
destination port 4791 and the UDP source port of its queue pair (QP), which ConnectX
derives from the QP (`nic.udp_source_port: per_qp`); a NIC may also use one source port
per host pair (`fixed`).  E-ECMP (Meta, SIGCOMM'24) makes switches hash the destination QP
number too (`switch.load_balancing.hash_qp`), which spreads the QPs of a host pair even
with a fixed port.

A flow's `qp` label (`rocesim.training.connections`) names its QP with its two hosts: the
flows with the same (src, dst, label) share a 5-tuple, so every one takes the same path.
Each flow's *key* stands for its 5-tuple: for a flow that is its own QP (label -1) its id,
which the core hashes exactly as it always has; for a QP a hash of (src, dst, source port,
QP number when hashed).  The core's hashes of the keys (`five_tuple_hashes`: forward for
data, reverse for ACKs, NACKs and CNPs) are handed to it as `flow_hash` and `flow_rhash`,
only when some flow rides a QP with a label: otherwise nothing is, and every flow keeps
the hash of its id, bit for bit.
"""
from __future__ import annotations

import numpy as np

from rocesim._core.engine import five_tuple_hashes
from rocesim.errors import ScenarioError
from rocesim.settings import show
from rocesim.training.connections import LABEL_BITS, fold, text_id

__all__ = ["user_label", "five_tuple_keys", "hash_arrays"]


def user_label(connection, key: str) -> int:
    """The label of a user's connection key: a whole number 0 .. 2**62-1 (kept), or a name
    (its stable id); ScenarioError naming `key` otherwise."""
    if isinstance(connection, str) and connection:
        return text_id(connection)
    if (isinstance(connection, bool) or not isinstance(connection, (int, np.integer))
            or not 0 <= connection < 1 << LABEL_BITS):
        raise ScenarioError(key, f"expected a connection key: a whole number 0..2**{LABEL_BITS}-1 or a name, "
                                 f"got {show(connection)}")
    return int(connection)


def five_tuple_keys(src: np.ndarray, dst: np.ndarray, qp: np.ndarray, *, udp_source_port: str,
                    hash_qp: bool) -> np.ndarray:
    """Each flow's key (uint64): its id when it is its own QP (qp < 0), else a hash of its
    5-tuple (src, dst, the QP's UDP source port: the QP's own with 'per_qp', none but the
    host pair's with 'fixed') and, with `hash_qp`, of its QP number."""
    qp = np.asarray(qp, np.int64)
    keys = np.arange(qp.size, dtype=np.uint64)
    on = np.flatnonzero(qp >= 0)
    if on.size:
        label = qp[on] + 1                              # (0: no such field)
        port = label if udp_source_port == "per_qp" else 0
        number = label if hash_qp else 0
        keys[on] = fold(np.asarray(src)[on], np.asarray(dst)[on], port, number)
    return keys


def hash_arrays(src: np.ndarray, dst: np.ndarray, qp: np.ndarray, *, switch: dict, nic: dict) -> dict:
    """The core's `flow_hash` and `flow_rhash` for flows of hosts `src` -> `dst` riding the
    QPs labelled `qp` under the resolved `switch` and `nic` settings; {} when no flow has a
    label (each its own QP: the core hashes its id)."""
    if not (np.asarray(qp) >= 0).any():
        return {}
    keys = five_tuple_keys(src, dst, qp, udp_source_port=nic["udp_source_port"],
                           hash_qp=switch["load_balancing"]["hash_qp"])
    forward, reverse = five_tuple_hashes(keys)
    return dict(flow_hash=forward, flow_rhash=reverse)
