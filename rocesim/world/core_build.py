"""The core built from a simulation's parts: the network's arrays, the nodes and their queue
pairs' hashes handed over once, the congestion-control scheme finalized against the network
and installed, the PFC deadlock detector, the watchdog and the faults set."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from rocesim._core.engine import Core
from rocesim.lb import fluid_split_switches, get_balancer
from rocesim.network import faults as faults_mod
from rocesim.network.partition import Partition
from rocesim.world import connections
from rocesim.world.network import Network
from rocesim.world.nodes import Nodes


@dataclass(frozen=True)
class Built:
    """A core ready to run, and the scheme's parameters as it was finalized for it."""

    core: Core
    cc_final: dict


def core_inputs(network: Network, nodes: Nodes, parts: Partition | None) -> tuple[dict, dict]:
    """(the core's arrays, its parameters): the network's, the nodes', their queue pairs'
    5-tuple hashes when some flow rides a connection, and, in parts, each node's part, each
    part's tier and the lookahead."""
    column = functools.partial(nodes.column, copy=False)
    arrays = {**network.arrays, **nodes.core_arrays(),
              **connections.hash_arrays(column("src"), column("dst"), column("qp"),
                                        switch=network.settings.switch, nic=network.settings.nic)}
    if parts is None:
        return arrays, network.params
    arrays["part_of_node"] = parts.part_of_node
    arrays["part_tier"] = parts.tiers(network.topology.host_levels())
    return arrays, {**network.params, "lookahead_ps": parts.lookahead_ps}


def finalized_scheme(network: Network, core: Core) -> dict:
    """The scheme's parameters with their `auto` values sized to the network (HPCC's T and
    windows from the largest base RTT, say); cross-parameter errors are raised here."""
    settings = network.settings
    return settings.scheme.finalize(dict(settings.cc_params), network.scheme_context(core))


def build_core(network: Network, nodes: Nodes, parts: Partition | None, faults: list) -> Built:
    """The core with the world in it, the scheme finalized and installed, and the PFC
    deadlock detector, the watchdog and `faults` (rocesim.network.faults.Fault) set."""
    core = Core(*core_inputs(network, nodes, parts))
    settings = network.settings
    scheme, cc_final = settings.scheme, finalized_scheme(network, core)
    core.install_scheme(scheme.load_module(), scheme.install_params(cc_final), needs_cnp=scheme.cnp_needed(cc_final))
    for name, params, switches in network.balancers:
        get_balancer(name).load_module().install(core, switches, params)
    if settings.mode == "flow":                 # where the fluid splits flows over equal-cost ports
        split = fluid_split_switches(network.balancers)
        if split:
            core.split_in_fluid(split)
    dl = settings.deadlock
    if dl["enabled"]:
        core.enable_deadlock_detection(dl["interval"], dl["threshold"], dl["stop"])
    pfc = settings.switch["pfc"]
    wd = pfc["watchdog"]
    if wd["enabled"] and pfc["enabled"]:
        core.enable_watchdog(wd["poll_interval"], wd["detection_time"], wd["restoration_time"],
                             0 if wd["action"] == "drop" else 1)
    if faults:
        core.set_faults(*faults_mod.core_schedule(faults, network.headroom_needed()[network.ports.host_port]))
    return Built(core=core, cc_final=cc_final)


def set_routes(network: Network, core: Core, alive_ports) -> None:
    """The core's routing tables converged after a link went down or came back up."""
    tables = network.route_tables(alive_ports)
    core.set_routes(tables.group_off, tables.group_cnt, tables.ports, tables.host_class)
