"""Routing (rocesim.network.routing): ECMP, explicit paths and next-hop overrides."""
import numpy as np
import pytest

from helpers import ser_ps
from rocesim import ScenarioError, Simulation, topology
from rocesim.network import routing


def test_ecmp_tables_hold_every_shortest_next_hop():
    t = topology.fat_tree(4, "100Gbps", "1us")
    ports = routing.build_ports(t)
    tables = routing.build_routes(ports)
    H = t.n_hosts
    edge0 = H                                    # edge switch of hosts 0 and 1
    to_remote = (edge0 - H) * H + 15             # towards a host in another pod
    to_local = (edge0 - H) * H + 1
    assert tables.cnt[to_remote] == 2            # both aggregation switches of the pod
    assert tables.cnt[to_local] == 1
    up = tables.ports[tables.off[to_remote]:tables.off[to_remote] + 2]
    assert set(ports.peer_node[up]) == set(t.neighbors(edge0)) - {0, 1}


def test_ecmp_spreads_flows_over_the_core():
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t, seed=3)
    for i in range(64):
        sim.add_flow(i % 4, 12 + i % 4, 20_000)        # pod 0 -> pod 3
    res = sim.run()
    p = res.ports
    H = t.n_hosts
    cores = set(range(H + 16, H + 20))
    into_core = np.isin(p["peer_node"], list(cores))
    used = p["tx_bytes"][into_core] > 0
    assert used.sum() >= 3                                  # most core links carry traffic
    assert res.summary["flows_completed"] == 64


def test_explicit_path_is_followed():
    t = topology.fat_tree(4, "100Gbps", "1us")
    H = t.n_hosts
    # host 0 -> edge 16 -> agg 24 -> core 32 -> agg 30 -> edge 22 -> host 13
    path = [0, H, H + 8, H + 16, H + 14, H + 6, 13]
    sim = Simulation(t)
    sim.add_flow(0, 13, 100_000, path=path)
    res = sim.run()
    p = res.ports
    for a, b in zip(path, path[1:]):
        k = np.flatnonzero((p["node"] == a) & (p["peer_node"] == b))
        assert p["tx_bytes"][k].sum() >= 100_000
    assert res.flows["slowdown"][0] == 1.0


def test_bad_path_and_override_are_refused():
    t = topology.fat_tree(4, "100Gbps", "1us")
    H = t.n_hosts
    sim = Simulation(t)
    with pytest.raises(ScenarioError, match="not linked"):
        sim.add_flow(0, 13, 1000, path=[0, H, H + 16, 13])
    with pytest.raises(ScenarioError) as e:
        Simulation(t, routes=[{"switch": H, "dst": 5, "next": H + 16}]).run()
    assert e.value.key == "routes[0].next"


def detour():
    """Dumbbell whose two switches a, b are also joined through a third switch c."""
    t = topology.dumbbell(1, 1, "100Gbps", "1us")
    a, b = t.n_hosts, t.n_hosts + 1
    c = t.add_switch()
    t.add_link(a, c, "100Gbps", "1us")
    t.add_link(c, b, "100Gbps", "1us")
    return t, a, b, c


def test_override_reroutes_one_destination():
    t, a, b, c = detour()
    sim = Simulation(t, routes=[{"switch": a, "dst": 1, "next": c}])
    sim.add_flow(0, 1, 50_000)
    res = sim.run()
    plain = Simulation(detour()[0])
    plain.add_flow(0, 1, 50_000)
    direct_fct = plain.run().flows["fct_ns"][0]
    p = res.ports
    via_c = np.flatnonzero((p["node"] == a) & (p["peer_node"] == c))
    direct = np.flatnonzero((p["node"] == a) & (p["peer_node"] == b))
    assert p["tx_bytes"][via_c].sum() > 50_000
    assert p["tx_bytes"][direct].sum() == 0
    # one more hop (1 us and a packet time) for the data; the ideal follows the same route
    assert res.flows["fct_ns"][0] == pytest.approx(direct_fct + 1000 + ser_ps(1048, 10**11) / 1000)
    assert res.flows["slowdown"][0] == 1.0
