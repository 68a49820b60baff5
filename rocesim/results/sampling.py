"""Opt-in sampling of sending rates, delivered throughput and switch queues over time.

The run is cut into slices at the sampling times, and after each slice the state is
read from the core as arrays: the rate of every active flow with the bytes it delivered
since the previous sample, and the egress queue (all priorities) of the chosen ports.
Nothing is sampled, and nothing costs, when no interval is given.
"""
from __future__ import annotations

import numpy as np


class Sampler:
    """Collects samples every `interval_ps`; `tables()` returns them as columns."""

    def __init__(self, core, interval_ps: int, n_flows: int, ports, queue_ports=None):
        if interval_ps <= 0:
            raise ValueError("sample interval must be positive")
        self.core = core
        self.interval = interval_ps
        self.next = interval_ps
        H = ports.n_hosts
        self.queue_ports = (np.flatnonzero(ports.node >= H).astype(np.int32) if queue_ports is None
                            else np.asarray(queue_ports, np.int32))
        self.delivered = np.zeros(n_flows, np.int64)
        self.rates, self.queues = [], []

    def take(self, t_ps: int):
        ids, rate, delivered = self.core.sample_flows()
        thr = (delivered - self.delivered[ids]) * 8e12 / self.interval
        self.delivered[ids] = delivered
        self.rates.append((np.full(ids.size, t_ps), ids, rate, thr))
        q = self.core.sample_queues(self.queue_ports)
        self.queues.append((np.full(q.size, t_ps), self.queue_ports, q))
        self.next = t_ps + self.interval

    def tables(self, port_node) -> dict:
        """{'rates': columns, 'queues': columns} (times in ns)."""
        def cat(rows, i, dtype):
            return np.concatenate([r[i] for r in rows]).astype(dtype) if rows else np.zeros(0, dtype)
        rates = dict(time_ns=cat(self.rates, 0, np.int64) / 1000, flow_id=cat(self.rates, 1, np.int64),
                     rate_bps=cat(self.rates, 2, np.int64), throughput_bps=cat(self.rates, 3, np.float64))
        ports = cat(self.queues, 1, np.int64)
        queues = dict(time_ns=cat(self.queues, 0, np.int64) / 1000, node=port_node[ports], port=ports,
                      queue_bytes=cat(self.queues, 2, np.int64))
        return {"rates": rates, "queues": queues}
