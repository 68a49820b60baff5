"""The parts a parallel packet core would cut the network into (rocesim.network.partition,
issue 20 stage 0), against counts worked out by hand from the builders' numbering.

fat_tree(4): hosts 0-15, edges 16-23 (edge e holds hosts 2e, 2e+1), aggregations 24-31
(pod p holds 24+2p, 25+2p), cores 32-35; links: 16 host, 16 edge-agg, 16 agg-core (96
ports, port 2l at the link's first end).
"""
import numpy as np
import pytest

from rocesim import ScenarioError, Simulation, topology
from rocesim.network import platform as pf
from rocesim.network import routing
from rocesim.network.partition import Partition, _grouped, partition
from rocesim.network.platform import ScaleUp

US = 10**6
SU = ScaleUp(1600 * 10**9, 10**6)


def parts(net, level="leaves", **kw) -> Partition:
    p = net if isinstance(net, pf.Platform) else pf.Platform.hosts(net)
    return partition(p, routing.build_ports(p.topology), level, **kw)


def fat4(**kw):
    return topology.fat_tree(4, "100Gbps", "1us", **kw)


def test_partition_fat_tree_leaves_is_edge_groups_and_single_switches():
    p = parts(fat4())
    # 8 edges each with its 2 hosts, then the 8 aggregations and 4 cores alone: 20 parts;
    # a leaf group's lowest node is its first host (2e), so edge e's group is part e
    assert p.n_parts == 8 + 8 + 4
    expected = np.concatenate([np.arange(16) // 2, np.arange(8), 8 + np.arange(8), 16 + np.arange(4)])
    assert p.part_of_node.tolist() == expected.tolist()
    # every edge-agg and agg-core link is cut, at both ends; no host link is
    assert p.n_cut_ports == 2 * (16 + 16) and p.cut_port.size == 96
    assert not p.cut_port[:32].any() and p.cut_port[32:].all()
    assert p.lookahead_ps == 1 * US
    assert p.describe() == "20 parts at the leaf level (8 leaf groups, 12 switches), lookahead 1us, 64/96 ports cut"


def test_partition_tiers_count_links_from_the_hosts():
    # the threads share each tier out in id order (window.pyx _homes): leaf groups hold
    # hosts (0), the aggregations are 2 links from a host, the cores 3; at `pods` a pod
    # holds hosts and the core groups are tier 3
    net = fat4()
    levels = net.host_levels()
    assert parts(net).tiers(levels).tolist() == [0] * 8 + [2] * 8 + [3] * 4
    assert parts(net, "pods").tiers(levels).tolist() == [0] * 4 + [3] * 4
    # a part no host reaches (a switch cut off from every host) comes after every tier
    lone = np.append(levels[:-1], -1)
    assert parts(net).tiers(lone).tolist() == [0] * 8 + [2] * 8 + [3] * 3 + [levels.size]


def test_partition_fat_tree_pods_sets_the_cores_apart():
    p = parts(fat4(), "pods")
    # 4 pods (4 hosts, 2 edges, 2 aggregations each) and the 4 cores split into 4 groups
    pod = np.concatenate([np.arange(16) // 4, np.arange(8) // 2, np.arange(8) // 2, 4 + np.arange(4)])
    assert p.n_parts == 8 and p.part_of_node.tolist() == pod.tolist()
    assert p.n_cut_ports == 2 * 16 and p.cut_port[64:].all()          # the agg-core links only
    assert p.lookahead_ps == 1 * US
    assert p.describe() == "8 parts at the pod level (4 pods, 4 switches), lookahead 1us, 32/96 ports cut"


def test_partition_grouped_coarsens_consecutive_parts():
    # the debug coarsening of validation/parallel_model.py: part k joins group k * N // parts
    net = fat4()
    ports = routing.build_ports(net)
    p = parts(net)
    same = _grouped(p, ports, p.n_parts)
    assert same.part_of_node.tolist() == p.part_of_node.tolist() and same.n_cut_ports == p.n_cut_ports
    g = _grouped(p, ports, 4)          # 20 parts by 5: edges 0-4, edges 5-7 + aggs 0-1, aggs 2-6, agg 7 + cores
    assert g.n_parts == 4 and g.part_of_node.tolist() == (p.part_of_node * 4 // 20).tolist()
    assert g.cut_port.tolist() == (g.part_of_node[ports.node] != g.part_of_node[ports.peer_node]).tolist()
    assert g.lookahead_ps == 1 * US and g.level == "leaves"
    one = _grouped(p, ports, 1)
    assert one.n_parts == 1 and one.n_cut_ports == 0 and one.lookahead_ps == 0
    with pytest.raises(ValueError, match="groups"):
        _grouped(p, ports, 21)


def test_partition_lookahead_is_the_shortest_cut_link_not_the_shortest_link():
    # host links of 1us stay inside leaf groups; the cut fabric links take 3us
    p = parts(fat4(fabric_delay="3us"))
    assert p.n_parts == 20 and p.lookahead_ps == 3 * US


def test_partition_star_and_none_are_one_part():
    star = parts(topology.star(9, "100Gbps", "1us"))
    # every host is single-homed to the one switch: one leaf group
    assert (star.n_parts, star.lookahead_ps, star.n_cut_ports) == (1, 0, 0)
    assert (star.part_of_node == 0).all() and star.part_of_node.size == 10
    assert star.describe() == "1 part at the leaf level: the whole network is one leaf group"
    assert parts(topology.star(9, "100Gbps", "1us"), "pods").n_parts == 1
    none = parts(fat4(), "none")
    assert (none.n_parts, none.lookahead_ps, none.n_cut_ports) == (1, 0, 0)
    assert "level none" in none.describe()


def triangle(d46="0us", d56="3us", d45="2us", order=(0, 1, 2), **back) -> topology.Topology:
    """Hosts 0,1 on switch 4, hosts 2,3 on switch 5 (1us), switches 4-6, 5-6, 4-5 linked with
    the given delays (in `order`)."""
    t = topology.Topology(4)
    t.add_switches(3)
    for h in range(4):
        t.add_link(h, 4 + h // 2, "100Gbps", "1us")
    links = [(4, 6, d46), (5, 6, d56), (4, 5, d45)]
    for i in order:
        t.add_link(*links[i][:2], "100Gbps", links[i][2], **(back if i == 0 else {}))
    t.validate()
    return t


def test_partition_zero_delay_link_is_never_cut():
    # leaf groups {0,1,4}, {2,3,5} and {6}; the 4-6 link (0 ps) is under the floor
    # (0.1 x median(0, 0, 2, 2, 3, 3 us) = 200 ns): 6 joins 4's group; then the cut links are
    # 4-5 (2us) and 5-6 (3us), above 0.1 x 2.5us
    p = parts(triangle())
    assert p.part_of_node.tolist() == [0, 0, 1, 1, 0, 1, 0]
    assert p.n_parts == 2 and p.lookahead_ps == 2 * US and p.n_cut_ports == 4 and p.short_links == 1
    # a zero delay in one direction is enough
    one_way = parts(triangle(d46="2us", delay_back=0))
    assert one_way.part_of_node.tolist() == [0, 0, 1, 1, 0, 1, 0] and one_way.short_links == 1
    # every link of delay 0: nothing to overlap on, one part
    zero = topology.Topology(4)
    zero.add_switches(2)
    for h in range(4):
        zero.add_link(h, 4 + h // 2, "100Gbps", 0)
    zero.add_link(4, 5, "100Gbps", 0)
    z = parts(zero)
    assert (z.n_parts, z.lookahead_ps, z.n_cut_ports) == (1, 0, 0)
    assert z.describe() == "1 part at the leaf level: every link it would cut is too short to overlap on"


def test_partition_floor_merges_short_links_relative_to_the_median():
    # 4-6 of 100 ns is under 0.1 x 2us: kept whole; with floor 0 only zero delays are
    p = parts(triangle(d46="100ns"))
    assert p.n_parts == 2 and p.lookahead_ps == 2 * US
    p0 = parts(triangle(d46="100ns"), floor=0)
    assert p0.n_parts == 3 and p0.lookahead_ps == 100_000 and p0.n_cut_ports == 6 and p0.short_links == 0


def test_partition_rail_optimized_servers_stay_whole():
    # 2 servers x 8 NICs: hosts 0-15, 8 rail leaves 16-23, 2 spines 24-25 (1:1)
    rail = pf.rail_optimized(2, 8, "200Gbps", "0.5us", SU)
    p = parts(rail)
    # each server is one part of hosts only (its NICs sit on 8 leaves); every switch alone
    assert p.part_of_node.tolist() == [0] * 8 + [1] * 8 + list(range(2, 12))
    assert p.n_parts == 12 and p.lookahead_ps == 500_000
    assert p.n_cut_ports == p.cut_port.size == 2 * (16 + 16)            # every link is cut
    assert p.describe().startswith("12 parts at the leaf level (2 servers, 10 switches)")
    # pods: one pod (servers and leaves) below the 2 spines, which make one group
    pods = parts(rail, "pods")
    assert pods.part_of_node.tolist() == [0] * 24 + [1, 1] and pods.n_cut_ports == 2 * 16


def test_partition_is_a_function_of_the_topology():
    a, b = parts(fat4()), parts(fat4())
    assert np.array_equal(a.part_of_node, b.part_of_node) and np.array_equal(a.cut_port, b.cut_port)
    # the order links are added in changes port ids, not the parts of the nodes
    assert parts(triangle(order=(2, 1, 0))).part_of_node.tolist() == parts(triangle()).part_of_node.tolist()
    # parts are numbered by their lowest node: first appearances in node order are 0, 1, 2, ...
    for p in (a, parts(fat4(), "pods"), parts(pf.rail_optimized(4, 8, "200Gbps", "1us", SU, servers_per_pod=2))):
        _, first = np.unique(p.part_of_node, return_index=True)
        assert (np.diff(first) > 0).all() and p.part_of_node[np.sort(first)].tolist() == list(range(p.n_parts))
    assert not a.part_of_node.flags.writeable and not a.cut_port.flags.writeable


def test_partition_shares_the_tier_levels_with_bisection():
    t = fat4()
    assert t.host_levels().tolist() == [0] * 16 + [1] * 8 + [2] * 8 + [3] * 4
    # narrowest tier: 16 links of 100 Gbps, halved
    assert pf.Platform.hosts(t).bisection_bps() == 16 * 100 * 10**9 // 2


def test_partition_crossing_share_of_three_dependencies():
    sim = Simulation(fat4())
    f0 = sim.add_flow(0, 5, "10KB")                  # completes at host 5 (edge 18: part 2)
    f1 = sim.add_compute(4, "1us", after=[f0])       # starts at 4 (part 2): does not cross
    sim.add_flow(1, 2, "10KB", after=[f1])           # a compute parent completes at its host, 4: crosses
    sim.add_flow(0, 9, "10KB", after=[f0])           # starts at 0 (part 0), f0 done at 5: crosses
    done, start = sim.dependency_hosts()
    assert done.tolist() == [5, 4, 5] and start.tolist() == [4, 1, 0]
    assert sim.dependency_crossing() == pytest.approx(2 / 3)
    # pods: hosts 0-3 and 4-7 in pods 0 and 1, the same two edges cross
    assert sim.dependency_crossing(sim.partition("pods")) == pytest.approx(2 / 3)
    assert sim.dependency_crossing(sim.partition("none")) == 0.0
    p = sim.partition()
    assert p.crossing_share([0, 2, 15], [1, 3, 14]) == 0.0           # each pair shares an edge switch
    assert p.crossing_share([], []) == 0.0
    with pytest.raises(ValueError, match="2 parent hosts for 1 child"):
        p.crossing_share([0, 1], [2])
    with pytest.raises(ValueError, match="outside 0..15"):
        p.crossing_share([16], [0])


def test_partition_refuses_unknown_levels_and_floors():
    with pytest.raises(ScenarioError, match="partition.*leaves, pods, none"):
        parts(fat4(), "racks")
    with pytest.raises(ScenarioError, match="partition.floor"):
        parts(fat4(), floor=2)
    with pytest.raises(ScenarioError, match="partition"):
        Simulation(fat4()).dependency_crossing("leaves")
