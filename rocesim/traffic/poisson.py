"""Open-loop traffic: Poisson flow arrivals with sizes from an empirical CDF."""

from __future__ import annotations

import numpy as np

from ..errors import ScenarioError
from ..memory import MemoryLimit, memory_estimate
from ..units import format_time, parse_rate, parse_time
from ._args import host_ids, positive_number, priority
from .distributions import FlowSizeCDF, builtin
from .flowtable import DEFAULT_FLOW_PRIORITY, FlowTable

__all__ = ["poisson_cdf"]

_PS_PER_SECOND = 10**12


def _host_rates(host_rate_bps: object, n_hosts: int) -> np.ndarray:
    """Per-host rates in bps from one rate (int or unit string) or one per host."""
    if np.ndim(host_rate_bps) == 0:
        return np.full(
            n_hosts, parse_rate(host_rate_bps, "host_rate", bare_ok=True), dtype=np.float64
        )
    rates = np.asarray(host_rate_bps)
    if rates.shape != (n_hosts,) or rates.dtype.kind not in "iuf":
        raise ScenarioError(
            "host_rate",
            f"expected one rate or {n_hosts} numbers (one per host), got {host_rate_bps!r}",
        )
    rates = rates.astype(np.float64)
    if not (np.isfinite(rates) & (rates > 0)).all():
        raise ScenarioError(
            "host_rate", "every host rate must be a positive number of bits per second"
        )
    return rates


def poisson_cdf(
    hosts: int | list[int] | np.ndarray,
    host_rate_bps: int | str | list[float] | np.ndarray,
    load: float,
    duration_ps: int | str,
    cdf: FlowSizeCDF | str,
    rng: np.random.Generator,
    start_ps: int | str = 0,
    prio: int = DEFAULT_FLOW_PRIORITY,
    memory_limit: int | str | MemoryLimit | None = None,
) -> FlowTable:
    """Flows arriving at every host as independent Poisson processes.

    Each host of ``hosts`` (a count ``n`` meaning hosts ``0 .. n-1``, or a list of ids)
    starts flows at rate ``load * host_rate / (8 * cdf.mean())`` per second, so that it
    offers on average ``load`` times its link rate. ``host_rate_bps`` is one rate (bps or
    a unit string) or an array with one rate per host. Each flow goes to a host drawn
    uniformly from the other hosts of ``hosts`` and has a size drawn from ``cdf`` (a
    :class:`FlowSizeCDF` or a built-in name). Arrivals fall in ``[start_ps, start_ps +
    duration_ps)``; the table is sorted by start time.

    The process is drawn without a per-flow loop: each host's flow count is Poisson with
    mean ``duration / mean_gap``, and given its count the arrival times of a Poisson
    process are independent and uniform over the window.  Flows expected to exceed
    ``memory_limit`` (a size or a :class:`rocesim.memory.MemoryLimit`; default: 75% of the
    machine's memory) are refused before any is drawn.
    """
    ids = host_ids(hosts, "hosts", minimum=2)
    rates = _host_rates(host_rate_bps, ids.size)
    offered = positive_number(load, "load")
    duration = parse_time(duration_ps, "duration", bare_ok=True)
    if duration == 0:
        raise ScenarioError("duration", "must be longer than 0; write e.g. 10ms")
    begin = parse_time(start_ps, "start", bare_ok=True)
    sizes = builtin(cdf) if isinstance(cdf, str) else cdf
    if not isinstance(sizes, FlowSizeCDF):
        raise ScenarioError("cdf", f"expected a FlowSizeCDF or a built-in name, got {cdf!r}")
    priority(prio, "prio")

    mean_gap_ps = sizes.mean() * 8.0 / (offered * rates) * _PS_PER_SECOND
    expected = duration / mean_gap_ps
    MemoryLimit.of(memory_limit, 'poisson_cdf(memory_limit="{}")', "memory_limit").holds(
        "duration", f"{format_time(duration)} of Poisson arrivals (about {expected.sum():,.0f} flows)",
        memory_estimate(0, 0, 0, int(expected.sum())))
    counts = rng.poisson(expected)
    total = int(counts.sum())
    src_index = np.repeat(np.arange(ids.size), counts)
    offsets = np.floor(rng.random(total) * duration).astype(np.int64)
    dst_index = rng.integers(0, ids.size - 1, size=total)
    dst_index += dst_index >= src_index  # skip the sender itself
    table = FlowTable(
        src=ids[src_index],
        dst=ids[dst_index],
        size=sizes.sample(rng, total),
        start=begin + offsets,
        prio=prio,
    )
    return table.sorted_by_start()
