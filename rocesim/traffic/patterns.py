"""Fixed communication patterns: incast and random permutation."""

from __future__ import annotations

import numpy as np

from ..errors import ScenarioError
from ..units import parse_size, parse_time
from ._args import host_id, host_ids, priority
from .flowtable import DEFAULT_PRIO, FlowTable

__all__ = ["incast", "permutation"]


def _uniform_flows(
    src: np.ndarray, dst: np.ndarray, size: int | str, start: int | str, prio: int
) -> FlowTable:
    """Flows from ``src[i]`` to ``dst[i]``, all of one size, start time and priority."""
    return FlowTable(
        src=src,
        dst=dst,
        size=np.full(src.size, parse_size(size, "size", bare_ok=True), dtype=np.int64),
        start=np.full(src.size, parse_time(start, "start", bare_ok=True), dtype=np.int64),
        prio=priority(prio, "prio"),
    )


def incast(
    senders: int | list[int] | np.ndarray,
    receiver: int,
    size: int | str,
    start: int | str,
    prio: int = DEFAULT_PRIO,
) -> FlowTable:
    """Every sender sends one flow of ``size`` bytes to ``receiver`` at time ``start``.

    ``senders`` is a list of host ids, or a count ``n`` meaning hosts ``0 .. n-1``; it
    must not include the receiver. ``size`` and ``start`` are ints (bytes, ps) or unit
    strings.
    """
    sources = host_ids(senders, "senders")
    target = host_id(receiver, "receiver")
    if (sources == target).any():
        raise ScenarioError(
            "senders", f"the receiver {target} is also listed as a sender; remove it"
        )
    return _uniform_flows(sources, np.full(sources.size, target, dtype=np.int32), size, start, prio)


def _derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of ``0 .. n-1`` with no fixed point (``n >= 2``).

    Rejection sampling: about 1/e of all permutations qualify, so this takes about e
    draws on average.
    """
    identity = np.arange(n)
    while True:
        candidate = rng.permutation(n)
        if not (candidate == identity).any():
            return candidate


def permutation(
    hosts: int | list[int] | np.ndarray,
    size: int | str,
    start: int | str,
    rng: np.random.Generator,
    prio: int = DEFAULT_PRIO,
) -> FlowTable:
    """Each host sends one flow to another host, and each host receives exactly one.

    The pairing is a uniformly random derangement of ``hosts`` (a host count ``n``
    meaning hosts ``0 .. n-1``, or a list of at least two host ids). Flows are listed in
    the order of ``hosts``.
    """
    ids = host_ids(hosts, "hosts", minimum=2)
    return _uniform_flows(ids, ids[_derangement(ids.size, rng)], size, start, prio)
