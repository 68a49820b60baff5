"""ASTRA-sim 2.0 network files imported as platforms (rocesim.network.astra_network).

One entry per dimension of topology, npus_count, bandwidth (GB/s, read as ASTRA-sim's
analytical backend reads it: 2^30 B/s) and latency (ns), as the ASTRA-sim 2.0 analytical
backend's network inputs."""
import os

import pytest

from helpers import ROOT
from rocesim import ScenarioError, scenario
from rocesim.network.astra_network import to_topology

GIB = 2**30


def rate(gbs):
    """ASTRA-sim's `gbs` GB/s in a topology mapping: 2^30 bytes a second."""
    return f"{round(gbs * GIB * 8)}bps"


def network(kinds, npus, gbs, ns):
    return {"topology": kinds, "npus_count": npus, "bandwidth": gbs, "latency": ns}


def platform(tmp_path, text, **extra):
    path = tmp_path / "net.yml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return scenario.build_platform({"kind": "astra_sim", "path": str(path), **extra})


def test_two_dimensions_are_a_server_and_one_switch_per_rail():
    t = to_topology(network(["Switch", "Switch"], [8, 16], [450.0, 50.0], [250.0, 1000.0]), "net.yml")
    assert t == {"kind": "rail_only", "servers": 16, "gpus_per_server": 8,
                 "scale_up": {"rate": rate(450), "delay": "250ns", "kind": "switch"},
                 "nic_link": {"rate": rate(50), "delay": "1000ns"}}


def test_scale_up_rates_count_the_links_of_each_gpu():
    ring = to_topology(network(["Ring", "Switch"], [4, 2], [50.0, 10.0], [500.0, 2500.0]), "n")["scale_up"]
    mesh = to_topology(network(["FullyConnected", "Switch"], [4, 2], [50.0, 10.0], [500.0, 2500.0]), "n")["scale_up"]
    assert ring == {"rate": rate(100), "delay": "500ns", "kind": "ring"}          # 2 links x 50 GB/s
    assert mesh == {"rate": rate(150), "delay": "500ns", "kind": "mesh"}          # 3 links x 50 GB/s


def test_three_dimensions_are_pods_of_a_rail_optimized_fabric(tmp_path):
    p = platform(tmp_path, "topology: [Switch, Switch, Switch]\nnpus_count: [4, 8, 2]\n"
                           "bandwidth: [300, 25, 50]\nlatency: [100, 500, 700]\n")
    assert (p.kind, p.servers, p.gpus_per_server, p.n_ranks) == ("rail_optimized", 16, 4, 64)
    assert p.notes["pods"] == 2 and p.notes["leaves"] == 8      # a leaf per rail per pod
    t = p.topology
    uplinks = t.link_a >= t.n_hosts                              # leaf-spine links
    assert set(t.rate_ab[uplinks].tolist()) == {50 * GIB * 8} and set(t.rate_ab[~uplinks].tolist()) == {25 * GIB * 8}
    assert p.scale_up.rate_bps == 300 * GIB * 8 and p.scale_up.delay_ps == 100_000


def test_no_scale_up_dimension_gives_one_gpu_per_server(tmp_path):
    p = platform(tmp_path, "topology: [Switch]\nnpus_count: [8]\nbandwidth: [12.5]\nlatency: [1000]\n")
    assert (p.kind, p.servers, p.gpus_per_server, p.topology.n_switches) == ("rail_only", 8, 1, 1)
    assert int(p.topology.host_rate(0)) == 100 * GIB


def test_an_imported_platform_runs_as_the_same_platform_written_by_hand():
    """The shipped example and its hand-written twin give identical collectives."""
    imported = scenario.load(os.path.join(ROOT, "scenarios", "platforms", "astra_dgx16.yaml"),
                             ["traffic[0].size=4MiB"])
    raw = dict(imported.raw, topology=to_topology(
        {"topology": ["Switch", "Switch"], "npus_count": [8, 16], "bandwidth": [450.0, 50.0],
         "latency": [250.0, 1000.0]}, "dgx16.yml"))
    by_hand = scenario.build(scenario.apply_overrides(raw, ["traffic[0].size=4MiB"]))
    a, b = imported.sim.run(), by_hand.sim.run()
    assert a.summary["flows_completed"] == a.summary["flows_total"] > 0
    assert a.collectives["duration_ns"].tolist() == b.collectives["duration_ns"].tolist()


@pytest.mark.parametrize("text,key,reason", [
    ("topology: [Switch, Ring]\nnpus_count: [8, 4]\nbandwidth: [1, 1]\nlatency: [1, 1]\n",
     "topology[1]", "Ring as a fabric dimension beside others"),
    ("topology: [Ring]\nnpus_count: [1]\nbandwidth: [1]\nlatency: [1]\n", "npus_count[0]", "at least 2"),
    ("topology: [Switch, Torus]\nnpus_count: [8, 4]\nbandwidth: [1, 1]\nlatency: [1, 1]\n",
     "topology[1]", "unknown 'Torus'"),
    ("topology: [Switch, Switch]\nnpus_count: [8]\nbandwidth: [1, 1]\nlatency: [1, 1]\n",
     "net.yml", "one entry per dimension"),
    ("topology: [Switch, Switch]\nnpus_count: [8, 0]\nbandwidth: [1, 1]\nlatency: [1, 1]\n",
     "npus_count[1]", "positive integer"),
    ("topology: [Switch, Switch]\nnpus_count: [8, 2]\nbandwidth: [1, 0]\nlatency: [1, 1]\n",
     "bandwidth[1]", "positive number"),
    ("topology: [Switch, Switch]\nnpus_count: [8, 2]\nbandwidth: [1, 1]\n",
     "latency", "missing"),
    ("topology: [Switch, Switch, Switch, Switch]\nnpus_count: [2, 2, 2, 2]\nbandwidth: [1, 1, 1, 1]\n"
     "latency: [1, 1, 1, 1]\n", "topology", "3 fabric dimensions"),
    ("units: [1]\n", "units", "unknown key"),
    (b"topology: [Switch]\n\xff\n", "net.yml:2", "not UTF-8"),
    ("- a list\n", "net.yml", "holds a mapping"),
])
def test_bad_network_files_get_one_error_naming_the_field(tmp_path, text, key, reason):
    with pytest.raises(ScenarioError) as err:
        platform(tmp_path, text)
    assert key in err.value.key and reason in err.value.reason


def test_scale_up_dims_must_leave_a_fabric(tmp_path):
    with pytest.raises(ScenarioError, match="scale_up_dims"):
        platform(tmp_path, "topology: [Switch]\nnpus_count: [8]\nbandwidth: [1]\nlatency: [1]\n", scale_up_dims=1)


def test_bandwidth_is_gb_of_2_to_the_30_bytes_as_astra_sim_reads_it(tmp_path):
    """ASTRA-sim's analytical backend reads 400 "GB/s" as 400 x 2^30 B/s (its
    bw_GBps_to_Bpns): the HGX-H100 example's links run at 3,435.97 Gb/s, not 3,200."""
    p = platform(tmp_path, "topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400.0 ]  # GB/s\n"
                           "latency: [ 936.25 ]  # ns\n")
    t = p.topology
    assert set(t.rate_ab.tolist()) == set(t.rate_ba.tolist()) == {400 * GIB * 8}
    assert set(t.delay_ab.tolist()) == {936_250}


@pytest.mark.parametrize("kind, npus, peers", [("Ring", 8, {1, 7}), ("Ring", 2, {1}), ("FullyConnected", 4, {1, 2, 3})])
def test_a_ring_or_fully_connected_dimension_is_npus_wired_directly(tmp_path, kind, npus, peers):
    """One Ring or FullyConnected dimension (ASTRA-sim's Ring_8npus example) is NPUs linked to
    each other: NPU i a host on its own switch (its ports, at their summed rate and no
    delay), that switch linked to its neighbours' at the file's bandwidth and latency."""
    p = platform(tmp_path, f"topology: [ {kind} ]\nnpus_count: [ {npus} ]\nbandwidth: [ 50.0 ]\n"
                           "latency: [ 500.0 ]\n")
    t = p.topology
    assert (p.n_ranks, t.n_hosts, t.n_switches) == (npus, npus, npus)
    a, b = t.link_a, t.link_b
    port = (a < npus)                                    # host i - switch npus+i
    assert (b[port] == a[port] + npus).all() and set(t.rate_ab[port].tolist()) == {len(peers) * 50 * GIB * 8}
    assert set(t.delay_ab[port].tolist()) == {0}
    npu0 = {int(x if y == npus else y) - npus for x, y in zip(a[~port], b[~port]) if npus in (x, y)}
    assert npu0 == peers
    assert set(t.rate_ab[~port].tolist()) == {50 * GIB * 8} and set(t.delay_ab[~port].tolist()) == {500_000}
