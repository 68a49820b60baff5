"""The network as the core takes it: ports, routes (ECMP groups and overrides), PFC and ECN
per port as flat arrays, and the core's parameters, built and checked once."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocesim._core.params import core_params
from rocesim.cc import Context
from rocesim.errors import ScenarioError
from rocesim.network import routing
from rocesim.network.topology import Topology
from rocesim.world import pfc
from rocesim.world.run_settings import RunSettings


@dataclass(frozen=True)
class Network:
    """A topology's ports and routes with the settings applied: `arrays` (the core's
    network arrays, by name) and `params` (the core's parameters) are made once."""

    topology: Topology
    settings: RunSettings
    ports: routing.Ports
    overrides: list              # (switch, dst, next) next-hop overrides
    farthest_host: np.ndarray    # each host's farthest peer in hops (the base RTT `auto` schemes size by)
    arrays: dict
    params: dict

    @classmethod
    def build(cls, topology: Topology, settings: RunSettings, routes=None) -> "Network":
        """Ports, routes and per-port arrays of `topology` under `settings`; `routes` is the
        list of `{switch, dst, next}` overrides."""
        ports = routing.build_ports(topology)
        overrides = _parse_overrides(routes or [])
        tables = routing.build_routes(ports, overrides)
        H, N = topology.n_hosts, topology.n_nodes
        arrays = dict(n_hosts=H, n_nodes=N, port_node=ports.node, port_peer=ports.peer,
                      port_rate_bps=ports.rate_bps, port_delay_ps=ports.delay_ps, host_port=ports.host_port,
                      switch_buffer=np.full(N - H, settings.switch["buffer"], np.int64),
                      route_off=tables.group_off, route_cnt=tables.group_cnt, route_ports=tables.ports,
                      route_class=tables.host_class)
        arrays.update(_pfc_arrays(topology, ports, settings))
        arrays["port_uplink"] = routing.uplinks(ports, tables)
        arrays.update(_ecn_arrays(ports, settings))
        params = core_params(seed=settings.seed, nic=settings.nic, switch=settings.switch,
                             needs_int=settings.scheme.needs_int, mode=settings.mode, flow=settings.fluid_calibration)
        return cls(topology=topology, settings=settings, ports=ports, overrides=overrides,
                   farthest_host=tables.farthest, arrays=arrays, params=params)

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


def _pfc_arrays(topology, ports, settings: RunSettings) -> dict:
    """Each port's headroom and dynamic-threshold shift; a lossless switch's buffer checked."""
    switch = settings.switch
    need = pfc.headroom_needed(ports, settings.nic, settings.scheme.needs_int, len(switch["pfc"]["priorities"]))
    headroom = pfc.port_headroom(ports, switch["pfc"], need, topology.n_hosts)
    host_rate = int(ports.rate_bps[ports.host_port].min())
    if switch["pfc"]["enabled"]:
        pfc.check_buffer(ports, headroom, switch, topology.n_hosts, topology.n_switches)
    return dict(port_headroom=headroom.astype(np.int64), port_pfc_shift=pfc.threshold_shift(ports, host_rate))


def _ecn_arrays(ports, settings: RunSettings) -> dict:
    """RED/ECN's kmin, kmax and pmax per port: the ones given, or the scheme's for the
    port's rate where `auto`."""
    ecn, rates = settings.switch["ecn"], ports.rate_bps
    n = len(rates)
    kmin, kmax, pmax = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.float64)
    for i, r in enumerate(rates):
        dmin, dmax, dp = settings.scheme.ecn_defaults(int(r), settings.cc_params)
        kmin[i] = _per_rate(ecn["kmin"], int(r), dmin, "switch.ecn.kmin")
        kmax[i] = _per_rate(ecn["kmax"], int(r), dmax, "switch.ecn.kmax")
        pmax[i] = _per_rate(ecn["pmax"], int(r), dp, "switch.ecn.pmax")
    if np.any(kmax < kmin):
        raise ScenarioError("switch.ecn.kmax", "must not be below kmin")
    return dict(port_kmin=kmin, port_kmax=kmax, port_pmax=pmax)


def _per_rate(value, rate: int, default, key: str):
    """A per-rate setting's value for ports of `rate` bps: 'auto' -> `default`, a mapping by
    rate, or one value for every port."""
    if value == "auto":
        return default
    if isinstance(value, dict):
        if rate not in value:
            raise ScenarioError(key, f"no value for ports of rate {rate} bps; give one per link rate")
        return value[rate]
    return value


def _parse_overrides(routes) -> list[tuple[int, int, int]]:
    """The `routes:` list of {switch, dst, next}, checked."""
    if not isinstance(routes, list):
        raise ScenarioError("routes", "expected a list of {switch, dst, next}")
    out = []
    for k, r in enumerate(routes):
        if not isinstance(r, dict) or set(r) != {"switch", "dst", "next"}:
            raise ScenarioError(f"routes[{k}]", "expected exactly the keys switch, dst, next")
        for name in ("switch", "dst", "next"):
            if isinstance(r[name], bool) or not isinstance(r[name], int):
                raise ScenarioError(f"routes[{k}].{name}", f"expected a node id, got {r[name]!r}")
        out.append((r["switch"], r["dst"], r["next"]))
    return out
