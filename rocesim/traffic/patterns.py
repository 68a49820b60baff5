"""Fixed communication patterns: incast and random permutation."""

from __future__ import annotations

import numpy as np

from ..errors import ScenarioError
from ..units import parse_size, parse_time
from ._args import host_id, host_ids, priority
from .flowtable import DEFAULT_FLOW_PRIORITY, FlowTable

__all__ = ["incast", "permutation", "repeated_incast"]


def _uniform_flows(
    src: np.ndarray, dst: np.ndarray, size: int | str, start: int | str, prio: int, connection: int | None
) -> FlowTable:
    """Flows from ``src[i]`` to ``dst[i]``, all of one size, start time, priority and
    connection label."""
    return FlowTable(
        src=src,
        dst=dst,
        size=np.full(src.size, parse_size(size, "size", bare_ok=True), dtype=np.int64),
        start=np.full(src.size, parse_time(start, "start", bare_ok=True), dtype=np.int64),
        prio=priority(prio, "prio"),
        connection=connection,
    )


def incast(
    senders: int | list[int] | np.ndarray,
    receiver: int,
    size: int | str,
    start: int | str,
    prio: int = DEFAULT_FLOW_PRIORITY,
    connection: int | None = None,
) -> FlowTable:
    """Every sender sends one flow of ``size`` bytes to ``receiver`` at time ``start``.

    ``senders`` is a list of host ids, or a count ``n`` meaning hosts ``0 .. n-1``; it
    must not include the receiver. ``size`` and ``start`` are ints (bytes, ps) or unit
    strings.  ``connection`` labels the queue pair of each sender (``FlowTable``; None:
    each flow its own).
    """
    sources = host_ids(senders, "senders")
    target = host_id(receiver, "receiver")
    if (sources == target).any():
        raise ScenarioError(
            "senders", f"the receiver {target} is also listed as a sender; remove it"
        )
    return _uniform_flows(sources, np.full(sources.size, target, dtype=np.int32), size, start, prio, connection)


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
    prio: int = DEFAULT_FLOW_PRIORITY,
    connection: int | None = None,
) -> FlowTable:
    """Each host sends one flow to another host, and each host receives exactly one.

    The pairing is a uniformly random derangement of ``hosts`` (a host count ``n``
    meaning hosts ``0 .. n-1``, or a list of at least two host ids). Flows are listed in
    the order of ``hosts``.  ``connection`` labels each pair's queue pair (``FlowTable``;
    None: each flow its own).
    """
    ids = host_ids(hosts, "hosts", minimum=2)
    return _uniform_flows(ids, ids[_derangement(ids.size, rng)], size, start, prio, connection)


def repeated_incast(
    hosts: int | list[int] | np.ndarray,
    n_senders: int,
    size: int | str,
    load: float,
    host_rate_bps: float,
    duration_ps: int | str,
    rng: np.random.Generator,
    start_ps: int | str = 0,
    prio: int = DEFAULT_FLOW_PRIORITY,
    connection: int | None = None,
) -> FlowTable:
    """Incast events at Poisson times: each one, ``n_senders`` random hosts send ``size``
    bytes to one random receiver, all at the event's time.

    The event rate makes the incast bytes ``load`` of the hosts' total capacity
    (``len(hosts) x host_rate_bps``), as in the HPCC paper's "60 senders x 500 KB at 2% of
    capacity".  Events fall in ``[start_ps, start_ps + duration_ps)``.  ``connection``
    labels the queue pair of each (sender, receiver) pair, which its every flow rides
    (``FlowTable``; None: each flow its own).
    """
    ids = host_ids(hosts, "hosts", minimum=2)
    if not (isinstance(n_senders, (int, np.integer)) and 1 <= n_senders < ids.size):
        raise ScenarioError("senders", f"needs between 1 and {ids.size - 1} senders, got {n_senders!r}")
    nbytes = parse_size(size, "size", bare_ok=True)
    if nbytes <= 0:
        raise ScenarioError("size", "must be positive")
    if not 0 < load <= 1:
        raise ScenarioError("load", f"expected a number in (0, 1], got {load!r}")
    duration = parse_time(duration_ps, "duration", bare_ok=True)
    start = parse_time(start_ps, "start", bare_ok=True)
    events_per_ps = load * ids.size * host_rate_bps / (n_senders * nbytes * 8) / 1e12
    n_events = rng.poisson(events_per_ps * duration)
    times = np.sort(rng.integers(start, start + duration, size=n_events)) if duration > 0 else np.zeros(0, np.int64)
    src, dst = [], []
    for _ in range(n_events):                         # one Python step per incast event, not per flow
        chosen = rng.choice(ids.size, size=n_senders + 1, replace=False)
        dst.append(np.full(n_senders, ids[chosen[0]]))
        src.append(ids[chosen[1:]])
    if not n_events:
        return FlowTable.empty()
    return FlowTable(src=np.concatenate(src), dst=np.concatenate(dst),
                     size=np.full(n_events * n_senders, nbytes, np.int64),
                     start=np.repeat(times, n_senders), prio=priority(prio, "prio"), dport=200,
                     connection=connection)
