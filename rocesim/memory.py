"""The memory guard: a topology and its traffic are refused before anything big is built
when their estimated memory (`rocesim.topology.memory_estimate`) exceeds a limit (by
default 75% of the machine's memory; `limits.memory` in YAML, `memory_limit` in
`Simulation`).  The same guard serves the YAML loader, the Python API and the workload
generators, which check their whole run once its first iteration is built."""
from __future__ import annotations

from rocesim import topology as topo_mod
from rocesim.errors import ScenarioError


class MemoryLimit:
    """Refuses, before anything big is built, a topology and traffic whose estimated
    memory (`rocesim.topology.memory_estimate`) exceeds `limit` bytes."""

    def __init__(self, limit: int | None = None, configured: bool = False, setting: str = "limits.memory: {}"):
        self.limit = topo_mod.default_memory_limit() if limit is None else limit
        self.configured = configured
        self.setting = setting           # how the user raises it, "{}" the size
        self.shape = (0, 0, 0)

    def _over(self, need) -> str:
        where = "" if self.configured else " (75% of this machine's memory)"
        text = (f"needs about {topo_mod.approx_bytes(need)}; the limit is "
                f"{topo_mod.approx_bytes(self.limit)}{where}")
        physical = topo_mod.default_memory_limit() * 4 // 3
        if need > physical:
            return text + f", and this machine has {topo_mod.approx_bytes(physical)}"
        return text + f" (set `{self.setting.format(_raise_to(need))}` to raise it)"

    def topology(self, key, what, hosts, switches, links):
        """Check a topology of this size, from its parameters, before it is built."""
        need = topo_mod.memory_estimate(hosts, switches, links)
        if need > self.limit:
            plural = "" if switches == 1 else "es"
            raise ScenarioError(key, f"{what} ({hosts:,} hosts, {switches:,} switch{plural}) {self._over(need)}")
        self.shape = (hosts, switches, links)

    def flows(self, key, what, existing, more):
        """Check that `more` flows on top of `existing` fit with the topology."""
        need = topo_mod.memory_estimate(*self.shape, existing + more)
        if need > self.limit:
            raise ScenarioError(key, f"{what}: about {int(more):,} flows on {self.shape[0]:,} hosts "
                                     f"{self._over(need)}")


def _raise_to(need) -> str:
    """A round size at least `need`, for the hint in the message."""
    gb = -(-need // 10**9)
    unit, value = "GB", gb
    if gb >= 10_000:
        unit, value = "TB", -(-gb // 1000)
    return f"{value}{unit}"


def iterations_check(sim, key, what, nodes_of_one, iterations) -> None:
    """After a workload's first iteration (`nodes_of_one` flows and compute steps), refuse
    it under `key` if all `iterations` of it would not fit `sim.memory`."""
    if iterations > 1:
        sim.memory.flows(key, f"{iterations:,} iterations of {what}", sim.n_flows, nodes_of_one * iterations)

