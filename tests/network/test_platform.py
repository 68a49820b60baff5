"""Training platforms (rocesim.network.platform): multi-GPU servers, scale-up, rail fabrics.

Hierarchical collectives on them against closed forms in an idle platform.  Notation as in
training/test_collectives.py: B the NIC rate, alpha a step's latency on one rail
(two 0.5 us wires and a packet's serialization at the rail leaf), F = 1108/1000 the wire
bytes per payload byte when a NIC sends and receives at once; R the scale-up rate per
GPU and delta its latency (the fluid model: a transfer of b bytes takes delta + b/R).
"""
import numpy as np
import pytest

from helpers import ser_ps, write_scenario
from rocesim import ScenarioError, Simulation, scenario, topology
from rocesim.network import platform as pf
from rocesim.network.platform import ScaleUp

B, D = 200e9, 0.5e-6
ALPHA = 2 * D + ser_ps(1048, 200 * 10**9) * 1e-12
F = 1108 / 1000
R, DELTA = 1600e9, 1e-6
SU = ScaleUp(1600 * 10**9, 10**6)
MIB = 1024 * 1024


def rail(servers=4, gpus=8, **kw):
    return pf.rail_optimized(servers, gpus, "200Gbps", "0.5us", SU, **kw)


def run(platform, op, algorithm, m, ranks="all", **kw):
    sim = Simulation(platform)
    rec = sim.add_collective(op, algorithm, ranks, m, **kw)
    res = sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    return res, res.collectives["duration_ns"][0] * 1e-9, rec


def test_ranks_are_server_major_and_nics_sit_on_rails():
    p = rail(servers=4, gpus=8, nics_per_server=4)
    assert p.n_ranks == 32 and p.topology.n_hosts == 16
    assert p.host_of([0, 1, 2, 7, 8, 31]).tolist() == [0, 0, 1, 3, 4, 15]
    assert p.rail[[0, 2, 7, 9]].tolist() == [0, 1, 3, 0]
    # 4 rail leaves (one pod) each with the 4 NICs of its rail, 1:1 -> 4 spines
    assert p.topology.n_switches == 8
    leaf_of = [p.topology.neighbors(h)[0] for h in range(16)]
    assert leaf_of[:4] == leaf_of[4:8] and len(set(leaf_of[:4])) == 4
    two_to_one = rail(servers=8, gpus=8, servers_per_pod=4, oversubscription=2)
    assert two_to_one.notes["spines"] == 2 and two_to_one.notes["leaves"] == 16
    # bisection: half of the narrowest tier (leaf uplinks: 16 leaves x 2 spines x 200G)
    assert two_to_one.bisection_bps() == 16 * 2 * 200 * 10**9 // 2
    assert "bisection: 3.2Tbps" in two_to_one.describe()


def test_scale_up_fluid_model_is_exact_and_close_to_the_packet_model():
    """Inside one idle server, the fluid model gives the ring's closed form to the ps; a
    packet-level NVSwitch (a star at R with the same latency) is 5-11% slower, the cost
    of RoCE headers and ACKs that the scale-up domain does not carry."""
    G, m = 8, 4 * MIB
    one = pf.on_topology(topology.star(8, "200Gbps", "0.5us"), G, SU, nics_per_server=8)
    _, fluid, _ = run(one, "allreduce", "ring", m)
    assert fluid == pytest.approx(2 * (G - 1) * (DELTA + m / G * 8 / R), abs=2 * G * 1e-12)
    packets = Simulation(topology.star(G, "1600Gbps", "0.5us"))   # two 0.5 us wires = delta
    packets.add_collective("allreduce", "ring", "all", m)
    t_pkt = packets.run().collectives["duration_ns"][0] * 1e-9
    assert 0.05 < t_pkt / fluid - 1 < 0.11
    _, a2a, _ = run(one, "alltoall", "direct", m)
    assert a2a == pytest.approx(DELTA + (G - 1) * m / G * 8 / R, abs=1e-11)
    packets = Simulation(topology.star(G, "1600Gbps", "0.5us"))
    packets.add_collective("alltoall", "direct", "all", m)
    t_pkt = packets.run().collectives["duration_ns"][0] * 1e-9
    assert 0.0 < t_pkt / a2a - 1 < 0.11


@pytest.mark.parametrize("kind", ["switch", "mesh", "ring"])
@pytest.mark.parametrize("op,algorithm", [("allreduce", "ring"), ("allgather", "ring"), ("alltoall", "direct")])
def test_in_server_closed_form_equals_the_step_by_step_fluid_model(kind, op, algorithm):
    from rocesim.training.collectives import append_collective
    from rocesim.training.graph import Graph
    one = pf.on_topology(topology.star(8, "200Gbps", "0.5us"), 8, ScaleUp(1600 * 10**9, 10**6, kind))
    times = []
    for closed in (True, False):
        sim = Simulation(one)
        g = Graph()
        rec = append_collective(g, op, algorithm, np.arange(8), 4 * MIB, platform=one, closed_form=closed)
        sim.collectives.append(rec.shifted(sim.add_graph(g)))
        res = sim.run()
        times.append(res.collectives["duration_ns"][0])
        assert (res.flows["is_compute"]).all()           # nothing crossed a NIC
    assert times[0] == pytest.approx(times[1], abs=1e-3)


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reducescatter"])
def test_nvls_in_server_closed_form_equals_its_pieces(op):
    """NVLS in one server (`nccl.nvls_in_server_ps`): the same time as its 16 pieces' stages,
    in one node per rank (and its start and done) instead of a stage per piece and rank; odd
    sizes (pieces a byte apart) too."""
    from rocesim.training.collectives import append_collective
    from rocesim.training.graph import Graph
    one = pf.on_topology(topology.star(8, "200Gbps", "0.5us"), 8, ScaleUp(1600 * 10**9, 10**6, "switch", True))
    for m in (4 * MIB, 4 * MIB + 7):
        times, nodes = [], []
        for closed in (True, False):
            sim = Simulation(one)
            g = Graph()
            rec = append_collective(g, op, "nccl_nvls", np.arange(8), m, platform=one, closed_form=closed)
            sim.collectives.append(rec.shifted(sim.add_graph(g)))
            res = sim.run()
            times.append(res.collectives["duration_ns"][0])
            nodes.append(g.n)
        assert times[0] == pytest.approx(times[1], abs=1e-3)
        assert 4 * nodes[0] < nodes[1]


def test_hierarchical_allreduce_closed_form():
    """Ring reduce-scatter in the server, ring all-reduce rail by rail, all-gather in the
    server: 2(G-1)(delta + m/(G R)) + 2(S-1)(alpha + m/(G S) F/B)."""
    S, G, m = 4, 8, 8 * MIB
    res, t, _ = run(rail(S, G), "allreduce", "hierarchical", m)
    assert t == pytest.approx(2 * (G - 1) * (DELTA + m / G * 8 / R) + 2 * (S - 1) * (ALPHA + m / (G * S) * F * 8 / B),
                              rel=0.01)
    spines = res.ports["node"] >= rail(S, G).topology.n_hosts + G          # ports of spine switches
    assert res.ports["tx_bytes"][spines].sum() == 0                          # every NIC stays on its rail


def test_hierarchical_tree_closed_form():
    """Across two servers, each tree reduces half of a rank's block m/G up one edge and
    broadcasts it down, both trees at once (one each way): 2(alpha + m/(2G) F/B)."""
    S, G, m = 2, 8, 8 * MIB
    _, t, _ = run(rail(S, G), "allreduce", "hierarchical_tree", m)
    assert t == pytest.approx(2 * (G - 1) * (DELTA + m / G * 8 / R) + 2 * (ALPHA + m / (2 * G) * F * 8 / B), rel=0.01)
    _, t4, _ = run(rail(4, G), "allreduce", "hierarchical_tree", m)
    assert t4 > t                                  # deeper trees cost more steps


def test_alltoall_closed_form_with_and_without_rail_aligned_forwarding():
    """Each rank sends m/p to each rank. Without PXN the NIC carries (S-1)G m/p and the
    scale-up domain (G-1) m/p at once; with PXN a GPU first moves S(G-1) m/p over the
    scale-up domain (its own peers' share and what it forwards for them), then its NIC
    sends everything to its rail: done at max(total, T1 + forwarded) F/B."""
    S, G, m = 4, 8, 8 * MIB
    p = S * G
    plat = rail(S, G, spines=2, fabric_rate="800Gbps")
    far = 2 * D + 2 * D + 3 * 1048 * 8 / B                     # NIC-leaf-spine-leaf-NIC
    res, t, _ = run(plat, "alltoall", "direct", m, pxn=False)
    assert t == pytest.approx(max((S - 1) * G * m / p * F * 8 / B + far, DELTA + (G - 1) * m / p * 8 / R), rel=0.02)
    assert res.ports["tx_bytes"][res.ports["node"] >= plat.topology.n_hosts + G].sum() > 0   # across rails
    res, t_pxn, _ = run(plat, "alltoall", "direct", m, pxn=True)
    t1 = DELTA + S * (G - 1) * m / p * 8 / R
    nic = max((S - 1) * G * m / p, (S - 1) * (G - 1) * m / p + t1 * B / 8) * F * 8 / B
    assert t_pxn == pytest.approx(nic + ALPHA, rel=0.02)
    spines = res.ports["node"] >= plat.topology.n_hosts + G
    assert res.ports["tx_bytes"][spines].sum() == 0


def test_pxn_is_on_unless_told_off_as_in_nccl():
    """NCCL enables PXN by default since 2.12 (NCCL_PXN_DISABLE=0, NCCL_P2P_PXN_LEVEL=2): an
    all-to-all with no `pxn` given, from the API or YAML, gives exactly the flows of `pxn:
    true` (every network flow on its rail), and `pxn: false` still sends across rails."""
    S, G, m = 2, 4, 1 * MIB
    plat = rail(S, G, spines=2, fabric_rate="800Gbps")
    flows = {}
    for pxn in (None, True, False):
        kw = {} if pxn is None else {"pxn": pxn}
        res, _, _ = run(plat, "alltoall", "direct", m, **kw)
        net = ~res.flows["is_compute"]
        flows[pxn] = (res.flows["src"][net], res.flows["dst"][net], res.flows["size_bytes"][net])
    assert all((a == b).all() for a, b in zip(flows[None], flows[True]))
    assert (flows[None][0] % G == flows[None][1] % G).all()
    assert (flows[False][0] % G != flows[False][1] % G).any()
    entry = {"kind": "collective", "op": "alltoall", "size": "1MiB"}
    for extra, cross in (({}, False), ({"pxn": False}, True)):
        res = scenario.build({"topology": PLATFORM, "traffic": [{**entry, **extra}]}).sim.run()
        net = ~res.flows["is_compute"]
        assert (res.flows["src"][net] % 8 != res.flows["dst"][net] % 8).any() == cross


def test_rail_only_forwards_across_rails_and_refuses_direct_cross_rail_flows():
    p = pf.rail_only(4, 8, "200Gbps", "0.5us", SU)
    assert p.topology.n_switches == 8 and p.rail_only
    _, t, _ = run(p, "alltoall", "direct", 4 * MIB)
    _, t_opt, _ = run(rail(4, 8, spines=2, fabric_rate="800Gbps"), "alltoall", "direct", 4 * MIB, pxn=True)
    assert t == pytest.approx(t_opt, rel=0.02)        # the same transfers as PXN on a rail-optimized fabric
    sim = Simulation(p)
    sim.add_flow(0, 5, "1MB")                         # NIC 0 of server 0 to NIC 5 of server 0: other rail
    with pytest.raises(ScenarioError, match="different rails"):
        sim.run()


def test_shared_nics_carry_both_gpus():
    """Two GPUs per NIC: a rail-by-rail ring carries twice the bytes per NIC."""
    S, G, m = 4, 8, 8 * MIB
    _, t_own, _ = run(rail(S, G), "allreduce", "hierarchical", m)
    _, t_shared, _ = run(rail(S, G, nics_per_server=4), "allreduce", "hierarchical", m)
    inter = 2 * (S - 1) * m / (G * S) * F * 8 / B
    assert t_shared - t_own == pytest.approx(inter, rel=0.1)


PLATFORM = {"kind": "rail_optimized", "servers": 4, "gpus_per_server": 8,
            "nic_link": {"rate": "200Gbps", "delay": "0.5us"}, "scale_up": {"rate": "1600Gbps", "delay": "1us"}}


def test_yaml_platforms(tmp_path):
    raw = {"topology": PLATFORM, "traffic": [
        {"kind": "collective", "op": "allreduce", "algorithm": "hierarchical", "ranks": "all", "size": "8MiB"},
        {"kind": "collective", "op": "alltoall", "ranks": [[0, 8, 16, 24], [1, 9, 17, 25]], "size": "1MB",
         "pxn": True}]}
    scn = scenario.build(raw)
    assert scn.sim.platform.n_ranks == 32
    res = scn.sim.run()
    assert len(res.collectives["op"]) == 3
    ls = scenario.build_platform({"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 8,
                                  "link": {"rate": "100Gbps", "delay": "1us"}, "gpus_per_server": 8,
                                  "nics_per_server": 4, "scale_up": {"rate": "900Gbps", "delay": "1us",
                                                                    "kind": "mesh"}})
    assert ls.servers == 4 and ls.n_ranks == 32 and ls.scale_up.kind == "mesh"
    ro = scenario.build_platform({"kind": "rail_only", "servers": 2, "gpus_per_server": 4,
                                  "nic_link": {"rate": "100Gbps", "delay": "1us"},
                                  "scale_up": {"rate": "900Gbps", "delay": "1us"}})
    assert ro.rail_only and ro.n_ranks == 8


@pytest.mark.parametrize("change,key", [
    ({"scale_up": {"rate": "1600Gbps"}}, "topology.scale_up.delay"),
    ({"scale_up": {"rate": "1600Gbps", "delay": "1us", "kind": "torus"}}, "topology.scale_up.kind"),
    ({"nics_per_server": 3}, "topology.nics_per_server"),
    ({"servers_per_pod": 3}, "topology.servers_per_pod"),
    ({"spines": 2, "oversubscription": 2}, "topology.spines"),
    ({"oversubscription": -1}, "topology.oversubscription"),
    ({"rails": 8}, "topology.rails"),
    ({"servers": 0}, "topology.servers"),
])
def test_yaml_platform_errors(change, key):
    raw = {"topology": {**PLATFORM, **change},
           "traffic": [{"kind": "collective", "op": "allreduce", "size": "1MB"}]}
    with pytest.raises(ScenarioError) as e:
        scenario.build(raw)
    assert e.value.key == key


def test_yaml_rank_and_server_key_errors():
    base = {"topology": PLATFORM, "traffic": [{"kind": "collective", "op": "allreduce", "size": "1MB",
                                               "ranks": [0, 32]}]}
    with pytest.raises(ScenarioError) as e:
        scenario.build(base)
    assert e.value.key == "traffic[0].ranks"
    star = {"topology": {"kind": "star", "hosts": 4, "link": {"rate": "100Gbps", "delay": "1us"},
                         "gpus_per_server": 2}, "traffic": [{"kind": "collective", "op": "allreduce", "size": "1MB"}]}
    with pytest.raises(ScenarioError) as e:
        scenario.build(star)
    assert e.value.key == "topology.gpus_per_server"
    bad_pxn = {"topology": PLATFORM, "traffic": [{"kind": "collective", "op": "alltoall", "size": "1MB", "pxn": 1}]}
    with pytest.raises(ScenarioError) as e:
        scenario.build(bad_pxn)
    assert e.value.key == "traffic[0].pxn"


def test_check_prints_the_platform(tmp_path, capsys):
    from rocesim.cli import main
    path = write_scenario(tmp_path, {"topology": PLATFORM, "traffic": [
        {"kind": "collective", "op": "allreduce", "algorithm": "hierarchical", "size": "1MB"}]}, "p.yaml")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 servers x 8 GPUs = 32 ranks" in out and "rails: 8" in out and "bisection" in out


def test_rail_optimized_three_tiers():
    """Blocks of pods under their own spines, cores in one plane per spine index: the
    counts, every leaf on its block's spines only, and a flow between blocks crossing leaf,
    spine, core, spine, leaf completes."""
    plat = pf.rail_optimized(8, 2, "100Gbps", "1us", ScaleUp(10**12, 10**6), servers_per_pod=2, pods_per_block=2)
    t = plat.topology
    leaves, spines, cores = 4 * 2, 2 * 2, 2 * 4          # 4 pods x 2 rails; 2 blocks x 2; 2 planes x (2 pods x 2 rails)
    assert t.n_switches == leaves + spines + cores
    assert t.n_links == 16 + leaves * 2 + spines * 4
    assert plat.notes["blocks"] == 2 and plat.notes["core_oversubscription"] == "1:1"
    first_spine = 16 + leaves
    a, b = np.asarray(t.link_a), np.asarray(t.link_b)
    up = (a >= 16) & (a < first_spine)                   # leaf -> spine links
    assert set(zip(a[up] - 16, b[up] - first_spine)) == {(leaf, leaf // 4 * 2 + j) for leaf in range(8) for j in (0, 1)}
    sim = Simulation(plat, mode="flow")
    sim.add_flow(0, 15, 10**6)                           # server 0 rail 0 -> server 7 rail 1: another block
    res = sim.run(progress=False)
    assert res.summary["flows_completed"] == 1
    with pytest.raises(ScenarioError, match="pods_per_block"):
        pf.rail_optimized(8, 2, "100Gbps", "1us", ScaleUp(10**12, 10**6), servers_per_pod=2, pods_per_block=3)
    with pytest.raises(ScenarioError, match="cores"):
        pf.rail_optimized(8, 2, "100Gbps", "1us", ScaleUp(10**12, 10**6), servers_per_pod=2, cores=4)
