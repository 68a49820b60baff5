"""Training iterations: compute and communication dependencies, groups, presets, YAML."""
import numpy as np
import pytest

from rocesim import ScenarioError, Simulation, scenario, topology
from rocesim.training.workloads import Comm, Layer, Workload, preset
from rocesim.workload_api import add_training
from rocesim.training.workloads.model import groups

US = 10**6


def star(n=4):
    return topology.star(n, "100Gbps", "1us")


def test_compute_only_iterations_are_the_sum_of_compute():
    wl = Workload("toy", "DATA", [Layer("a", 10 * US, None, 20 * US, None, 5 * US),
                                  Layer("b", 7 * US, None, 3 * US, None, 1 * US)])
    sim = Simulation(star())
    add_training(sim, wl, [0, 1, 2, 3], 3)
    res = sim.run()
    it = res.iterations
    assert list(it["duration_ns"]) == [46_000] * 3
    assert list(it["start_ns"]) == [0, 46_000, 92_000]


def test_weight_gradient_allreduce_gates_the_next_forward():
    """One layer: F, I, W, then the all-reduce A; iteration 2 starts when A is done."""
    size = 2_000_000
    wl = Workload("one", "DATA", [Layer("l", 30 * US, None, 20 * US, None, 10 * US,
                                        Comm("allreduce", size), update_ps=4 * US)])
    sim = Simulation(star())
    add_training(sim, wl, [0, 1, 2, 3], 2)
    res = sim.run()
    alone = Simulation(star())
    alone.add_collective("allreduce", "auto", [0, 1, 2, 3], size)
    a = alone.run().collectives["duration_ns"][0]
    it = res.iterations
    assert it["duration_ns"] == pytest.approx([60_000 + a + 4_000] * 2, abs=1e-6)
    c = res.collectives
    assert list(c["op"]) == ["allreduce", "allreduce"] and (c["ranks"] == 4).all()
    assert c["start_ns"][0] == 60_000
    assert c["duration_ns"] == pytest.approx([a, a], abs=1e-6)


def test_weight_gradient_communication_overlaps_the_backward_pass():
    """Layer b's all-reduce runs while layer a computes its gradients."""
    size = 300_000
    layers = [Layer("a", 10 * US, None, 50 * US, None, 50 * US, None),
              Layer("b", 10 * US, None, 10 * US, None, 10 * US, Comm("allreduce", size))]
    sim = Simulation(star())
    add_training(sim, Workload("overlap", "DATA", layers), [0, 1, 2, 3], 1)
    res = sim.run()
    c = res.collectives
    assert c["start_ns"][0] == 40_000                    # after F_a, F_b, I_b, W_b
    assert c["finish_ns"][0] < 140_000                   # done before I_a and W_a end
    assert res.iterations["duration_ns"][0] == 140_000   # so it costs nothing


def test_blocking_forward_communication_delays_the_next_layer():
    size = 1_000_000
    layers = [Layer("a", 10 * US, Comm("allgather", size), 0, None, 0, None),
              Layer("b", 10 * US, None, 0, None, 0, None)]
    sim = Simulation(star())
    add_training(sim, Workload("fwd", "MODEL", layers), [0, 1, 2, 3], 1)
    res = sim.run()
    c = res.collectives
    f = res.flows
    b_fwd = (f["is_compute"] == 1) & (f["fct_ns"] == 10 * US / 1000) & (f["start_ns"] > 10_000)
    assert np.allclose(f["start_ns"][b_fwd][:4], c["finish_ns"][0], atol=1e3)


def test_hybrid_groups():
    g = groups("HYBRID_DATA_MODEL", 8, 2)
    assert g["mp"].tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert g["dp"].tolist() == [[0, 2, 4, 6], [1, 3, 5, 7]]
    g = groups("HYBRID_MODEL_DATA", 8, 2)
    assert g["dp"].tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert g["mp"].tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    with pytest.raises(ScenarioError):
        groups("HYBRID_DATA_MODEL", 8, 3)


def test_transformer_preset_uses_tensor_and_data_parallel_groups():
    wl = preset("transformer", layers=1, tp=2, hidden=256, seq=128)
    sim = Simulation(star(8))
    add_training(sim, wl, list(range(8)), 1)
    res = sim.run()
    c = res.collectives
    assert set(c["ranks"]) == {2, 4}                     # tp groups of 2, dp groups of 4
    assert res.summary["flows_completed"] == res.summary["flows_total"]


@pytest.mark.parametrize("name,ops", [("resnet50", {"allreduce"}), ("dlrm", {"allreduce", "alltoall"})])
def test_presets_run(name, ops):
    wl = preset(name)
    compute = sum(l.fwd_ps + l.ig_ps + l.wg_ps for l in wl.layers)
    sim = Simulation(topology.star(4, "400Gbps", "1us"))
    add_training(sim, wl, [0, 1, 2, 3], 1)
    res = sim.run()
    assert set(res.collectives["op"]) == ops
    assert res.iterations["duration_ns"][0] * 1000 >= compute
    assert wl.source


def test_yaml_workload_and_collective(tmp_path):
    raw = {"topology": {"kind": "star", "hosts": 8, "link": {"rate": "100Gbps", "delay": "1us"}},
           "traffic": [{"kind": "workload", "model": "dlrm", "iterations": 2, "params": {"local_batch": 64},
                        "algorithms": {"alltoall": "pairwise"}},
                       {"kind": "collective", "op": "allgather", "ranks": [[0, 1, 2, 3], [4, 5, 6, 7]],
                        "size": "1MB", "chunks": 2, "start": "1ms"}]}
    res = scenario.build(raw).sim.run()
    c = res.collectives
    assert (c["algorithm"][c["op"] == "alltoall"] == "pairwise").all()
    assert ((c["op"] == "allgather") & (c["ranks"] == 4)).sum() == 2
    assert len(res.iterations["iteration"]) == 2
    f = res.flows
    assert set(np.unique(f["iteration"])) == {-1, 0, 1}
    res.write(tmp_path)
    assert (tmp_path / "collectives.csv").read_text().startswith(
        "collective_id,op,algorithm,ranks,size_bytes,start_ns,finish_ns,duration_ns")
    assert (tmp_path / "iterations.csv").read_text().startswith("iteration,start_ns,finish_ns,duration_ns")


@pytest.mark.parametrize("entry,key", [
    ({"kind": "workload", "model": "gpt9"}, "traffic[0].model"),
    ({"kind": "workload", "model": "dlrm", "algorithms": {"alltoall": "ring"}}, "traffic[0].algorithms.alltoall"),
    ({"kind": "workload", "model": "dlrm", "params": {"layers": 3}}, "traffic[0].params.layers"),
    ({"kind": "workload", "model": "dlrm", "iterations": 0}, "traffic[0].iterations"),
    ({"kind": "workload", "model": {"astra_sim": "missing.txt"}}, "traffic[0].model.astra_sim"),
    ({"kind": "collective", "op": "allreduce", "algorithm": "direct", "size": "1MB"}, "traffic[0].algorithm"),
    ({"kind": "collective", "op": "allreduce", "algorithm": "hierarchical", "size": "1MB"}, "traffic[0].group_size"),
    ({"kind": "collective", "op": "scan", "size": "1MB"}, "traffic[0].op"),
    ({"kind": "collective", "op": "allreduce", "size": "1MB", "ranks": [3]}, "traffic[0].ranks"),
])
def test_yaml_errors(entry, key, tmp_path):
    raw = {"topology": {"kind": "star", "hosts": 4, "link": {"rate": "100Gbps", "delay": "1us"}},
           "traffic": [entry]}
    with pytest.raises(ScenarioError) as e:
        scenario.build(raw, str(tmp_path))
    assert e.value.key == key


def test_workload_mixes_with_background_traffic():
    """Background WebSearch and an incast slow the iteration down; nothing is lost."""
    base = {"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 4,
                         "host_link": {"rate": "100Gbps", "delay": "1us"},
                         "fabric_link": {"rate": "100Gbps", "delay": "1us"}},
            "traffic": [{"kind": "workload", "model": "dlrm", "iterations": 1, "params": {"local_batch": 256}}]}
    alone = scenario.build(base).sim.run()
    busy_raw = dict(base, traffic=base["traffic"] + [
        {"kind": "cdf", "distribution": "websearch", "load": 0.5, "duration": "2ms", "prio": 5},
        {"kind": "incast", "senders": [1, 2, 3, 5, 6, 7], "receiver": 4, "size": "2MB", "start": "1ms"}])
    busy = scenario.build(busy_raw).sim.run()
    assert busy.summary["flows_completed"] == busy.summary["flows_total"]
    assert busy.summary["drops"] == 0
    assert busy.iterations["duration_ns"][0] > alone.iterations["duration_ns"][0]
    tags = busy.flows["tag"]
    assert set(np.unique(tags)) == {0, 1, 2}
    assert (busy.flows["iteration"][tags != 0] == -1).all()
