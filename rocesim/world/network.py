"""The network as the core takes it: ports, routes (ECMP groups and overrides), the parts a
run in parts is cut into, PFC (`world.pfc`) and ECN (`world.ecn`) per port as flat arrays,
and the core's parameters, built and checked once."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocesim._core.params import core_params
from rocesim.cc import Context
from rocesim.lb.registry import switch_schemes
from rocesim.network import partition, routing
from rocesim.network.partition import Partition
from rocesim.network.platform import Platform
from rocesim.network.topology import Topology
from rocesim.world import ecn, pfc
from rocesim.world.run_settings import RunSettings


@dataclass(frozen=True)
class Network:
    """A topology's ports and routes with the settings applied: `arrays` (the core's
    network arrays, by name) and `params` (the core's parameters) are made once."""

    topology: Topology
    settings: RunSettings
    partition_level: str         # the level the packet core runs at ('auto' resolved)
    parts: Partition | None      # the parts it runs in, or None for one part
    ports: routing.Ports
    overrides: list              # (switch, dst, next) next-hop overrides
    farthest_host: np.ndarray    # each host's farthest peer in hops (the base RTT `auto` schemes size by)
    balancers: list              # (load-balancing scheme, its params, [switch indices]) other than ECMP
    port_tier: np.ndarray        # per port: its switch's tier if it leads a tier up (1: a ToR's uplink), else 0
    arrays: dict
    params: dict

    @classmethod
    def build(cls, platform: Platform, settings: RunSettings, routes=None) -> "Network":
        """Ports, routes, parts and per-port arrays of `platform`'s topology under
        `settings`; `routes` is the list of `{switch, dst, next}` overrides."""
        topology = platform.topology
        ports = routing.build_ports(topology)
        overrides = routing.parse_overrides(routes or [])
        tables = routing.build_routes(ports, overrides)
        level, parts = partition.run_parts(settings.partition, settings.mode, platform, ports)
        H, N = topology.n_hosts, topology.n_nodes
        arrays = dict(n_hosts=H, n_nodes=N, port_node=ports.node, port_peer=ports.peer,
                      port_rate_bps=ports.rate_bps, port_delay_ps=ports.delay_ps, host_port=ports.host_port,
                      switch_buffer=np.full(N - H, settings.switch["buffer"], np.int64),
                      route_off=tables.group_off, route_cnt=tables.group_cnt, route_ports=tables.ports,
                      route_class=tables.host_class)
        arrays["port_uplink"] = routing.uplinks(ports, tables)
        arrays.update(pfc.port_arrays(ports, settings.switch, settings.nic, settings.scheme.needs_int,
                                      topology.n_hosts, topology.n_switches))
        arrays.update(ecn.port_arrays(ports, settings.switch["ecn"], settings.scheme, settings.cc_params))
        levels = topology.host_levels()
        balancers = switch_schemes(settings.switch["load_balancing"], levels[topology.n_hosts:])
        reorders = multipath(balancers, settings.nic) and settings.nic["delivery"] == "ordered"
        params = core_params(seed=settings.seed, nic=settings.nic, switch=settings.switch,
                             needs_int=settings.scheme.needs_int, mode=settings.mode, flow=settings.fluid_calibration,
                             multipath_into_ordered=reorders)
        up = (ports.node >= topology.n_hosts) & (levels[ports.peer_node] > levels[ports.node])
        return cls(topology=topology, settings=settings, partition_level=level, parts=parts, ports=ports,
                   overrides=overrides, balancers=balancers, port_tier=np.where(up, levels[ports.node], 0),
                   farthest_host=tables.farthest, arrays=arrays, params=params)

    @property
    def multipath(self) -> bool:
        """One connection's packets may take several paths (`multipath`)."""
        return multipath(self.balancers, self.settings.nic)

    def headroom_needed(self) -> np.ndarray:
        """Per port: the most bytes that can still arrive on one lossless priority after the
        switch decides XOFF for it (`pfc.headroom_needed`)."""
        s = self.settings
        return pfc.headroom_needed(self.ports, s.nic, s.scheme.needs_int, len(s.switch["pfc"]["priorities"]))

    def route_tables(self, alive_ports=None) -> routing.RouteTables:
        """The routing tables, converged around the ports that are down (`alive_ports`)."""
        return routing.build_routes(self.ports, self.overrides, alive_ports)

    def scheme_context(self, core) -> Context:
        """What `auto` scheme parameters depend on.  As the HPCC fork's third.cc, the base
        RTT that sizes HPCC's T and the windows (BDP = that RTT x the fastest host link) is
        the largest between any two hosts (taken at each host's farthest peer in hops), or
        of any flow if larger (explicit paths)."""
        ports = self.ports
        host_rate = int(ports.rate_bps[ports.host_port].max())
        src = np.arange(self.topology.n_hosts, dtype=np.int32)
        max_rtt = int(max(core.base_rtt_between(src, self.farthest_host).max(initial=0),
                          core.base_rtt_ps().max(initial=0)))
        return Context(host_rate_bps=host_rate, max_base_rtt_ps=max_rtt, max_bdp_bytes=int(max_rtt * host_rate / 8e12))


def multipath(balancers: list, nic: dict) -> bool:
    """One connection's packets may take several paths: a switch balances by flowlet or per
    packet (`balancers`: a scheme other than ECMP), or senders vary their entropy
    (nic.entropy_every, nic.entropy)."""
    return bool(balancers) or nic["entropy_every"] != "none" or nic["entropy"] != "fixed"
