"""Topologies (rocesim.network.topology): the Topology class, the builders, HPCC topology files."""

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rocesim.errors import ScenarioError
from rocesim.network.topology import (
    Topology,
    clos3,
    dumbbell,
    fat_tree,
    from_hpcc_file,
    hpcc_320,
    leaf_spine,
    star,
    to_hpcc_file,
)

REFERENCE_320 = Path("/work/shared/reference/hpcc_fat_tree_320.txt")
G100 = 100 * 10**9
US = 10**6


def link_set(topo):
    """Links as an unordered set of (a, b, rate, delay), one entry per direction."""
    forward = zip(
        topo.link_a.tolist(), topo.link_b.tolist(), topo.rate_ab.tolist(), topo.delay_ab.tolist()
    )
    backward = zip(
        topo.link_b.tolist(), topo.link_a.tolist(), topo.rate_ba.tolist(), topo.delay_ba.tolist()
    )
    return Counter(forward) + Counter(backward)


def write(tmp_path, text, name="topo.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the Topology class -------------------------------------------------------------


def test_manual_construction_and_arrays():
    topo = Topology(2, name="pair")
    s = topo.add_switch()
    assert s == 2
    assert topo.add_link(0, s, "100Gbps", "1us") == 0
    assert topo.add_link(1, s, 25 * 10**9, 500_000, rate_back="10Gbps", delay_back="2us") == 1
    assert (topo.n_hosts, topo.n_switches, topo.n_nodes, topo.n_links) == (2, 1, 3, 2)
    assert topo.link_a.dtype == np.int64
    assert topo.link_a.tolist() == [0, 1]
    assert topo.link_b.tolist() == [2, 2]
    assert topo.rate_ab.tolist() == [G100, 25 * 10**9]
    assert topo.rate_ba.tolist() == [G100, 10 * 10**9]
    assert topo.delay_ab.tolist() == [US, 500_000]
    assert topo.delay_ba.tolist() == [US, 2 * US]
    assert topo.is_switch(2) and not topo.is_switch(1)
    assert topo.neighbors(2) == [0, 1]
    assert topo.links_of(1) == [1]
    assert topo.host_rate(1) == 25 * 10**9
    topo.validate()


def test_arrays_are_rebuilt_after_adding_links_and_are_read_only():
    topo = Topology(2)
    topo.add_link(0, 1, "1Gbps", "1us")
    first = topo.link_a
    with pytest.raises(ValueError):
        first[0] = 5
    topo.add_switch()
    topo.add_link(1, 2, "1Gbps", "1us")
    assert topo.link_a.tolist() == [0, 1]


def test_host_rate_uses_the_direction_leaving_the_host():
    topo = Topology(1)
    s = topo.add_switch()
    topo.add_link(s, 0, "40Gbps", "1us", rate_back="10Gbps")  # switch listed first
    assert topo.host_rate(0) == 10 * 10**9


def test_two_hosts_may_be_linked_directly():
    topo = Topology(2)
    topo.add_link(0, 1, "10Gbps", "1us")
    topo.validate()
    assert topo.n_switches == 0


def test_add_link_errors():
    topo = Topology(2)
    s = topo.add_switch()
    with pytest.raises(
        ScenarioError, match=r"topology.links\[0\]: unknown node 7; hosts are 0..1, switches 2..2"
    ):
        topo.add_link(0, 7, "1Gbps", "1us")
    with pytest.raises(ScenarioError, match="node 2 is linked to itself"):
        topo.add_link(s, s, "1Gbps", "1us")
    with pytest.raises(ScenarioError, match=r"topology.links\[0\].rate: rate must be positive"):
        topo.add_link(0, s, 0, "1us")
    with pytest.raises(ScenarioError, match=r"links\[0\].delay: .*must not be negative"):
        topo.add_link(0, s, "1Gbps", -1)
    with pytest.raises(ScenarioError, match="expected an integer"):
        topo.add_link(True, s, "1Gbps", "1us")
    assert topo.n_links == 0


def test_constructor_needs_hosts():
    with pytest.raises(ScenarioError, match="topology.hosts: must be a positive integer"):
        Topology(0)


def test_validate_host_with_two_links():
    topo = Topology(2)
    a, b = topo.add_switch(), topo.add_switch()
    topo.add_link(0, a, "1Gbps", "1us")
    topo.add_link(1, a, "1Gbps", "1us")
    topo.add_link(1, b, "1Gbps", "1us")
    with pytest.raises(ScenarioError) as info:
        topo.validate()
    assert str(info.value) == "topology: host 1 has 2 links; a host must have exactly one link"


def test_validate_host_without_link():
    topo = Topology(3)
    s = topo.add_switch()
    topo.add_link(0, s, "1Gbps", "1us")
    topo.add_link(1, s, "1Gbps", "1us")
    with pytest.raises(ScenarioError, match="host 2 has 0 links"):
        topo.validate()


def test_validate_unreachable_switch():
    topo = Topology(2)
    s, t, u = topo.add_switch(), topo.add_switch(), topo.add_switch()
    topo.add_link(0, s, "1Gbps", "1us")
    topo.add_link(1, s, "1Gbps", "1us")
    topo.add_link(t, u, "1Gbps", "1us")
    with pytest.raises(ScenarioError, match="switch 3 is not connected to host 0"):
        topo.validate()


# --- builders -----------------------------------------------------------------------


def test_star():
    topo = star(8, "100Gbps", "1us")
    assert (topo.n_hosts, topo.n_switches, topo.n_links) == (8, 1, 8)
    assert topo.degree(8) == 8
    assert all(topo.neighbors(h) == [8] for h in topo.hosts)
    assert set(topo.rate_ab.tolist()) == {G100}
    assert set(topo.delay_ab.tolist()) == {US}


def test_dumbbell():
    topo = dumbbell(2, 3, "100Gbps", "1us", bottleneck_rate="10Gbps", bottleneck_delay="5us")
    assert (topo.n_hosts, topo.n_switches, topo.n_links) == (5, 2, 6)
    left, right = 5, 6
    assert [topo.neighbors(h)[0] for h in topo.hosts] == [left, left, right, right, right]
    assert (topo.link_a[-1], topo.link_b[-1]) == (left, right)
    assert (topo.rate_ab[-1], topo.delay_ab[-1]) == (10 * 10**9, 5 * US)
    assert topo.hop_distances(0)[4] == 3
    plain = dumbbell(1, 1, "10Gbps", "1us")
    assert plain.rate_ab.tolist() == [10**10] * 3


def test_leaf_spine():
    topo = leaf_spine(4, 2, 8, "100Gbps", "1us", "400Gbps", "500ns", links_per_spine=2)
    assert (topo.n_hosts, topo.n_switches) == (32, 6)
    assert topo.n_links == 32 + 4 * 2 * 2
    leaves, spines = range(32, 36), range(36, 38)
    for h in topo.hosts:
        assert topo.neighbors(h) == [32 + h // 8]
    for leaf in leaves:
        assert topo.degree(leaf) == 8 + 4
        assert Counter(n for n in topo.neighbors(leaf) if topo.is_switch(n)) == {36: 2, 37: 2}
    for spine in spines:
        assert sorted(set(topo.neighbors(spine))) == list(leaves)
    fabric = topo.link_a >= 32
    assert set(topo.rate_ab[fabric].tolist()) == {400 * 10**9}
    assert set(topo.delay_ab[fabric].tolist()) == {500_000}
    assert topo.hop_distances(0)[31] == 4


def test_leaf_spine_fabric_defaults_to_host_values():
    topo = leaf_spine(2, 1, 1, "25Gbps", "2us")
    assert set(topo.rate_ab.tolist()) == {25 * 10**9}
    assert set(topo.delay_ab.tolist()) == {2 * US}


@pytest.mark.parametrize("k", [4, 8])
def test_fat_tree_structure(k):
    half = k // 2
    topo = fat_tree(k, "100Gbps", "1us")
    hosts = k**3 // 4
    edges = aggs = k * half
    cores = half * half
    assert topo.n_hosts == hosts == {4: 16, 8: 128}[k]
    assert topo.n_switches == edges + aggs + cores
    assert topo.n_links == 3 * hosts  # host, edge-agg and agg-core tiers each carry k^3/4 links
    for switch in topo.switches:
        assert topo.degree(switch) == k
    first_edge, first_agg, first_core = hosts, hosts + edges, hosts + edges + aggs
    for h in topo.hosts:
        assert topo.neighbors(h) == [first_edge + h // half]
    for e in range(edges):
        assert sum(1 for n in topo.neighbors(first_edge + e) if n < hosts) == half
    for a in range(aggs):
        pod, j = divmod(a, half)
        ups = sorted(n for n in topo.neighbors(first_agg + a) if n >= first_core)
        assert ups == [first_core + j * half + i for i in range(half)]
        downs = sorted(n for n in topo.neighbors(first_agg + a) if n < first_agg)
        assert downs == [first_edge + pod * half + i for i in range(half)]
    # shortest paths: same edge 2 hops, same pod 4, other pod 6
    distance = topo.hop_distances(0)[:hosts]
    hosts_per_pod = half * half
    for h in range(1, hosts):
        expected = 2 if h < half else 4 if h < hosts_per_pod else 6
        assert distance[h] == expected
    # each core reaches exactly one agg in every pod
    for core in range(first_core, first_core + cores):
        assert sorted((n - first_agg) // half for n in topo.neighbors(core)) == list(range(k))


def test_fat_tree_fabric_parameters():
    topo = fat_tree(4, "100Gbps", "1us", fabric_rate="400Gbps", fabric_delay="2us")
    host_links = topo.link_a < topo.n_hosts
    assert set(topo.rate_ab[host_links].tolist()) == {G100}
    assert set(topo.rate_ab[~host_links].tolist()) == {400 * 10**9}
    assert set(topo.delay_ab[~host_links].tolist()) == {2 * US}


@pytest.mark.parametrize("k", [3, 0, -2])
def test_fat_tree_needs_even_k(k):
    with pytest.raises(ScenarioError, match="topology.k: fat-tree k must be an even number"):
        fat_tree(k, "100Gbps", "1us")


def test_clos3_general_shape():
    topo = clos3(
        tors=6,
        aggs_per_pod=2,
        tors_per_pod=3,
        cores=4,
        hosts_per_tor=2,
        host_rate="100Gbps",
        host_delay="1us",
        fabric_rate="400Gbps",
        fabric_delay="1us",
    )
    hosts, tors, aggs, cores = 12, 6, 4, 4
    assert (topo.n_hosts, topo.n_switches) == (hosts, tors + aggs + cores)
    assert topo.n_links == hosts + tors * 2 + aggs * 2
    # ToR 3 is in pod 1 and links to that pod's aggs 20 and 21
    assert sorted(n for n in topo.neighbors(hosts + 3) if n >= hosts) == [20, 21]
    # agg j=1 of each pod links to cores 2, 3 of the core block (24, 25)
    assert sorted(n for n in topo.neighbors(19) if n >= 22) == [24, 25]
    assert sorted(n for n in topo.neighbors(21) if n >= 22) == [24, 25]
    topo.validate()


def test_clos3_parameter_errors():
    common = dict(hosts_per_tor=2, host_rate="1Gbps", host_delay="1us")
    with pytest.raises(ScenarioError, match="topology.tors_per_pod: 4 does not divide tors=6"):
        clos3(tors=6, aggs_per_pod=2, tors_per_pod=4, cores=4, **common)
    with pytest.raises(
        ScenarioError, match="topology.cores: 5 is not a multiple of aggs_per_pod=2"
    ):
        clos3(tors=6, aggs_per_pod=2, tors_per_pod=3, cores=5, **common)
    with pytest.raises(ScenarioError, match="topology.tors: must be a positive integer"):
        clos3(tors=0, aggs_per_pod=2, tors_per_pod=3, cores=4, **common)
    with pytest.raises(ScenarioError, match="topology.host_rate: unknown rate unit 'furlong'"):
        clos3(
            tors=6,
            aggs_per_pod=2,
            tors_per_pod=3,
            cores=4,
            hosts_per_tor=2,
            host_rate="1 furlong",
            host_delay="1us",
        )


def test_hpcc_320_shape():
    topo = hpcc_320()
    assert (topo.n_hosts, topo.n_switches, topo.n_links) == (320, 56, 480)
    assert topo.name == "hpcc_320"
    assert topo.neighbors(0) == [320] and topo.neighbors(319) == [339]
    assert sorted(topo.neighbors(325)[-4:]) == [344, 345, 346, 347]  # ToR 325: pod 1
    assert sorted(n for n in topo.neighbors(346) if n >= 360) == [368, 369, 370, 371]
    assert topo.hop_distances(0)[:320].max() == 6


@pytest.mark.skipif(not REFERENCE_320.exists(), reason="reference topology file not present")
def test_hpcc_320_matches_reference_file():
    reference = from_hpcc_file(REFERENCE_320)
    topo = hpcc_320()
    assert (reference.n_hosts, reference.n_switches) == (topo.n_hosts, topo.n_switches)
    assert link_set(topo) == link_set(reference)
    assert reference.original_ids.tolist() == list(range(376))


# --- HPCC files ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: hpcc_320(),
        lambda: fat_tree(4, "100Gbps", "1us", "400Gbps", "1500ps"),
        lambda: dumbbell(2, 2, "25Gbps", "1us", "2.5Gbps"),
    ],
)
def test_hpcc_file_round_trip(tmp_path, build):
    topo = build()
    path = tmp_path / "out.txt"
    to_hpcc_file(topo, path)
    back = from_hpcc_file(path)
    assert (back.n_hosts, back.n_switches, back.n_links) == (
        topo.n_hosts,
        topo.n_switches,
        topo.n_links,
    )
    for column in ("link_a", "link_b", "rate_ab", "rate_ba", "delay_ab", "delay_ba"):
        assert np.array_equal(getattr(back, column), getattr(topo, column))


def test_to_hpcc_file_format(tmp_path):
    path = tmp_path / "star.txt"
    to_hpcc_file(star(2, "100Gbps", "1us"), path)
    assert path.read_text() == "3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n"


def test_to_hpcc_file_refuses_asymmetric_links(tmp_path):
    topo = Topology(1)
    s = topo.add_switch()
    topo.add_link(0, s, "10Gbps", "1us", rate_back="1Gbps")
    with pytest.raises(ScenarioError, match=r"topology.links\[0\]: .*different rates or delays"):
        to_hpcc_file(topo, tmp_path / "x.txt")


def test_from_hpcc_file_renumbers_interleaved_switches(tmp_path):
    # file nodes: 0 switch, 1 host, 2 host, 3 switch, 4 host; switch 0 - switch 3 trunk
    path = write(
        tmp_path,
        "5 2 4\n0 3\n1 0 100Gbps 1000ns 0\n2 0 100Gbps 1000ns 0\n"
        "4 3 10Gbps 2us 0\n0 3 400Gbps 1000ns 0\n",
    )
    topo = from_hpcc_file(path)
    assert (topo.n_hosts, topo.n_switches) == (3, 2)
    assert topo.original_ids.tolist() == [1, 2, 4, 0, 3]
    assert topo.file_id_to_node.tolist() == [3, 0, 1, 4, 2]
    assert topo.link_a.tolist() == [0, 1, 2, 3]
    assert topo.link_b.tolist() == [3, 3, 4, 4]
    assert topo.rate_ab.tolist() == [G100, G100, 10**10, 4 * G100]
    assert topo.delay_ab.tolist() == [US, US, 2 * US, US]
    assert topo.host_rate(2) == 10**10
    assert topo.name == "topo"


def test_from_hpcc_file_ignores_blank_lines_and_comments(tmp_path):
    path = write(
        tmp_path, "# two hosts\n3 1 2\n\n2\n0 2 1Gbps 1us 0.0  # first\n1 2 1Gbps 1us 0\n\n"
    )
    assert from_hpcc_file(path).n_links == 2


@pytest.mark.parametrize(
    "text, where, message",
    [
        ("", "topo.txt", "file is empty"),
        ("3 1\n2\n", "topo.txt:1", "expected 3 fields 'nodes switches links'"),
        ("3 x 2\n2\n", "topo.txt:1", "switches must be an integer, got 'x'"),
        ("3 3 2\n0 1 2\n", "topo.txt:1", "at least one host"),
        ("3 1 2\n", "topo.txt:1", "line 2 must list the 1 switch ids"),
        ("3 1 2\n2 1\n", "topo.txt:2", "declares 1 switches but this line lists 2 ids"),
        ("3 1 2\n5\n", "topo.txt:2", "switch id 5 is not a node"),
        ("3 2 2\n2 2\n", "topo.txt:2", "switch id 2 is listed twice"),
        ("3 1 2\n2\n0 2 1Gbps 1us 0\n", "topo.txt:3", "declares 2 links but the file has 1"),
        (
            "3 1 1\n2\n0 2 1Gbps 1us 0\n1 2 1Gbps 1us 0\n",
            "topo.txt:4",
            "unexpected line after the 1 links",
        ),
        ("3 1 2\n2\n0 2 1Gbps 1us\n1 2 1Gbps 1us 0\n", "topo.txt:3", "expected 5 fields"),
        ("3 1 2\n2\n0 9 1Gbps 1us 0\n1 2 1Gbps 1us 0\n", "topo.txt:3", "unknown node 9"),
        ("3 1 2\n2\n0 2 1Gbps 1us 0\n1 2 1GBps 1us 0\n", "topo.txt:4", "unknown rate unit 'GBps'"),
        ("3 1 2\n2\n0 2 1Gbps 1000 0\n1 2 1Gbps 1us 0\n", "topo.txt:3", "'1000' has no unit"),
        (
            "3 1 2\n2\n0 2 1Gbps 1us 0.01\n1 2 1Gbps 1us 0\n",
            "topo.txt:3",
            "error rate 0.01 is not supported",
        ),
        ("3 1 2\n2\n2 2 1Gbps 1us 0\n1 2 1Gbps 1us 0\n", "topo.txt:3", "linked to itself"),
        ("3 1 2\n2\n0 2 1Gbps 1us 0\n0 2 1Gbps 1us 0\n", "topo.txt", "host 0 has 2 links"),
    ],
)
def test_from_hpcc_file_errors(tmp_path, text, where, message):
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        from_hpcc_file(path)
    assert info.value.key == str(tmp_path / where)
    assert message in info.value.reason


def test_from_hpcc_file_validation_names_file_ids(tmp_path):
    # file host 3 (renumbered to host 1) has no link
    path = write(tmp_path, "4 1 2\n0\n1 0 1Gbps 1us 0\n2 0 1Gbps 1us 0\n")
    with pytest.raises(ScenarioError, match=r"host 2 \(node 3 in the file\) has 0 links"):
        from_hpcc_file(path)


def test_from_hpcc_file_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read file"):
        from_hpcc_file(tmp_path / "nope.txt")
