"""The memory guard (rocesim.memory): absurd sizes are refused before anything big is built.

Topologies, traffic, workloads and numbers, from YAML and the Python API alike."""
import pytest
import yaml

from helpers import LINK, cli_error, scenario_error, small_scenario, write_file, write_scenario
from rocesim import Simulation, memory
from rocesim import scenario as sc
from rocesim.errors import ScenarioError
from rocesim.network import topology as topo_mod

pytestmark = pytest.mark.usefixtures("no_core")     # errors come before anything runs


def test_memory_estimate_formula():
    H, S, L = topo_mod.shape("fat_tree", k=8)
    assert (H, S, L) == (128, 80, 384)
    P = 2 * L
    expected = 256 * (H + S) + 1024 * P + 32 * (P - H) * H + 4 * (H + S) * H + 16 * S * H + 352 * 10
    assert memory.memory_estimate(H, S, L, 10) == expected
    for k in (4, 8):
        t = topo_mod.fat_tree(k, "1Gbps", "1us")
        assert topo_mod.shape("fat_tree", k=k) == (t.n_hosts, t.n_switches, t.n_links)
    assert memory.default_memory_limit() > 0


@pytest.mark.parametrize("topology, key, words", [
    ({"kind": "fat_tree", "k": 1000, "link": LINK}, "topology.k", "fat_tree with k=1000 (250,000,000 hosts"),
    ({"kind": "star", "hosts": 10**8, "link": LINK}, "topology.hosts", "star (100,000,000 hosts, 1 switch)"),
    ({"kind": "leaf_spine", "leaves": 10**4, "spines": 10**3, "hosts_per_leaf": 100, "link": LINK},
     "topology", "leaf_spine (1,000,000 hosts"),
    ({"kind": "clos3", "tors": 10**5, "aggs_per_pod": 4, "tors_per_pod": 4, "cores": 16,
      "hosts_per_tor": 40, "link": LINK}, "topology", "clos3 (4,000,000 hosts"),
    ({"kind": "dumbbell", "hosts_left": 10**7, "hosts_right": 10**7, "link": LINK}, "topology", "dumbbell"),
])
def test_absurd_topology_refused_before_building(topology, key, words, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(topo_mod.Topology, "__init__", lambda *a: pytest.fail("the topology was built"))
    e = scenario_error(small_scenario(topology=topology))
    assert e.key == key and words in e.reason
    assert "needs about" in e.reason and "the limit is" in e.reason
    path = write_file(tmp_path, "s.yaml", yaml.safe_dump(small_scenario(topology=topology)).encode())
    assert f"rocesim: error: {key}: " in cli_error(capsys, "check", path)


def test_memory_limit_key():
    topology = {"kind": "fat_tree", "k": 16, "link": LINK}          # about 170 MB
    e = scenario_error(small_scenario(topology=topology, limits={"memory": "100MB"}))
    assert e.key == "topology.k" and "the limit is 100 MB" in e.reason
    assert "set `limits.memory: 1GB` to raise it" in e.reason
    for bad in ("lots", 0, "0GB", [1], {"a": 1}, "-1GB"):
        assert scenario_error(small_scenario(limits={"memory": bad})).key == "limits.memory"
    assert scenario_error(small_scenario(limits={"cpu": 1})).key == "limits.cpu"
    assert scenario_error(small_scenario(limits=[1])).key == "limits"


def test_memory_limit_allows_normal_scenarios():
    scn = sc.build(small_scenario(limits={"memory": "1GB"}))
    assert scn.sim.n_nodes == 2


@pytest.mark.parametrize("entry, key, words", [
    ({"kind": "cdf", "distribution": "websearch", "load": 0.5, "duration": "100000s"},
     "traffic[0].duration", "cdf traffic: about"),
    ({"kind": "incast", "senders": 2, "size": "1B", "load": 1.0, "duration": "1000s"},
     "traffic[0].duration", "repeated incast: about"),
    ({"kind": "collective", "op": "alltoall", "ranks": "all", "size": "1GB", "chunks": 10**6},
     "traffic[0]", "alltoall (direct): about"),
])
def test_absurd_traffic_refused_before_generating(entry, key, words, tmp_path, capsys):
    raw = small_scenario(traffic=[entry], limits={"memory": "2GB"})
    e = scenario_error(raw)
    assert e.key == key and words in e.reason and "the limit is 2.0 GB" in e.reason
    path = write_file(tmp_path, "s.yaml", yaml.safe_dump(raw).encode())
    assert f"rocesim: error: {key}: " in cli_error(capsys, "run", path, "-o", str(tmp_path / "out"))


@pytest.mark.parametrize("model", ["resnet50", "gpt"])
def test_workload_with_absurd_iterations_refused_after_one(model, monkeypatch):
    """A million iterations of ResNet-50 grew to 7.9 GB in `check` and died with SystemError:
    the first iteration is built, and the whole workload checked against the limit."""
    from rocesim.training.graph import Graph
    built = []
    flows = Graph.flows
    monkeypatch.setattr(Graph, "flows", lambda g, *a, **k: built.append(1) or flows(g, *a, **k))
    entry = {"kind": "workload", "model": model, "ranks": "all", "iterations": 10**6}
    if model == "gpt":
        entry.update(parallelism={"tp": 2, "pp": 2}, params={"layers": 4})
    e = scenario_error(small_scenario(topology={"kind": "star", "hosts": 8, "link": LINK}, traffic=[entry],
                                      limits={"memory": "2GB"}))
    assert e.key == "traffic[0].iterations" and "1,000,000 iterations of" in e.reason
    assert "the limit is 2.0 GB" in e.reason
    assert 0 < len(built) < 10**4                       # one iteration's worth, not a million


def test_python_api_refuses_a_topology_too_big_before_building_it(monkeypatch):
    """`Simulation(topology.fat_tree(64))` failed after 50 s with numpy's MemoryError."""
    from rocesim import Simulation
    from rocesim.network import routing
    monkeypatch.setattr(routing, "build_ports", lambda *a: pytest.fail("the network was built"))
    topo = topo_mod.fat_tree(16, "100Gbps", "1us")              # about 170 MB
    with pytest.raises(ScenarioError) as e:
        Simulation(topo, memory_limit="100MB")
    assert e.value.key == "topology" and "fat_tree(k=16) (1,024 hosts, 320 switches) needs about" in e.value.reason
    assert 'Simulation(memory_limit="1GB")' in e.value.reason
    with pytest.raises(ScenarioError) as e:
        Simulation(topo, memory_limit="lots")
    assert e.value.key == "memory_limit"


def test_hpcc_file_declaring_huge_node_count(tmp_path):
    write_file(tmp_path, "t.txt", b"1000000000001 1 1\n1000000000000\n0 1000000000000 1Gbps 1us 0\n")
    e = scenario_error(small_scenario(topology={"kind": "hpcc_file", "path": "t.txt"}), str(tmp_path))
    assert e.key.endswith("t.txt:1") and "needs a link" in e.reason


@pytest.mark.parametrize("value", ["1e999999999s", "9" * 5000 + "us", "1e-999999999s", 10**5000, 10**40,
                                   "99999999999999999999999s"], ids=range(6))
def test_huge_numbers_in_units(value):
    e = scenario_error(small_scenario(stop=value))
    assert e.key == "stop"


GPT_64 = {"topology": {"kind": "rail_optimized", "servers": 8, "gpus_per_server": 8,
                       "nic_link": {"rate": "400Gbps", "delay": "1us"}, "scale_up": {"rate": "3600Gbps", "delay": "1us"}},
          "mode": "flow",
          "traffic": [{"kind": "workload", "model": "gpt", "params": {"layers": 8, "micro_batches": 8},
                       "parallelism": {"tp": 8, "pp": 4}, "iterations": 2}]}


def test_check_sizes_a_large_workload_from_its_first_part(tmp_path, monkeypatch):
    """`rocesim check` (estimate_workloads: the workload guard's `estimate`) stops a workload
    above ESTIMATE_ABOVE nodes once it has built ESTIMATE_FROM of itself: its projected size
    is within a factor of 2 of the whole's (here its first passes are forwards, the
    gradients' collectives come last), and nothing of it is in the Simulation."""
    path = write_scenario(tmp_path, GPT_64)
    whole = sc.load(path).sim.n_nodes
    monkeypatch.setattr(memory.WorkloadGuard, "ESTIMATE_ABOVE", 1000)
    est = sc.load(path, estimate_workloads=True).sim
    assert est.n_nodes == 0 and whole / 2 < est.workload_guard.estimated_nodes < 2 * whole
    monkeypatch.setattr(memory.WorkloadGuard, "ESTIMATE_ABOVE", 10 * whole)          # small: built whole
    small = sc.load(path, estimate_workloads=True).sim
    assert small.n_nodes == whole and small.workload_guard.estimated_nodes == 0


def test_a_workload_too_large_is_refused_from_its_projection(tmp_path):
    """Refused once a tenth of it is built (running) or at once (check), before the whole
    graph exists, naming the projection."""
    whole = sc.load(write_scenario(tmp_path, GPT_64)).sim.n_nodes
    raw = dict(GPT_64, limits={"memory": f"{memory.memory_estimate(64, 8, 128, whole // 4) // 10**6}MB"})
    for estimate in (False, True):
        with pytest.raises(ScenarioError, match="projected from its first"):
            sc.load(write_scenario(tmp_path, raw), estimate_workloads=estimate)


def test_sampling_too_fine_for_memory_is_refused_before_anything_runs(tmp_path, capsys):
    """`sample_interval: 1ps` was accepted and ground (0.67 us simulated in 120 s, 1 GB): its
    samples over the run (until `stop`, or until its flows can end at the earliest) are
    counted against the memory limit, in `check` as in `run`."""
    limits = {"memory": "1GB"}
    e = scenario_error(small_scenario(limits=limits, stop="1ms", output={"sample_interval": "1ps"}))
    assert e.key == "output.sample_interval" and "1,000,000,000 samples of 4 queues" in e.reason
    assert "the limit is 1.0 GB" in e.reason
    # without a stop time the run lasts at least until its flows can end: 10 KB at 100 Gbps
    e = scenario_error(small_scenario(limits={"memory": "100MB"}, output={"sample_interval": "1ps"}))
    assert e.key == "output.sample_interval" and "over a run of 800ns at least" in e.reason
    path = write_scenario(tmp_path, small_scenario(limits=limits, stop="1ms", output={"sample_interval": "1ps"}))
    assert "output.sample_interval" in cli_error(capsys, "check", path)
    sc.build(small_scenario(limits=limits, stop="1ms", output={"sample_interval": "1us"}))     # 1,000 samples
    sim = Simulation(topo_mod.star(4, LINK["rate"], LINK["delay"]), memory_limit="100MB")
    sim.add_flow(1, 0, "10KB")
    for interval in (1, "1ps"):
        with pytest.raises(ScenarioError) as e:
            sim.run(sample_interval=interval)          # (the core is never made: `no_core`)
        assert e.value.key == "output.sample_interval"


@pytest.mark.parametrize("model, parallelism", [({"model": "transformer", "params": {"layers": 10**6}}, {}),
                                                ({"model": "gpt", "params": {"layers": 10**6}}, {"tp": 8, "pp": 1})],
                         ids=["transformer", "gpt"])
def test_a_model_of_a_million_layers_is_sized_from_a_bounded_prefix(model, parallelism, tmp_path):
    """A 1,000,000-layer transformer was still building in `check` after 90 s (2.5 GB): its
    projection came from "its first 1%", which grows with the input.  It now comes from the
    first WorkloadGuard.PREFIX_NODES nodes or so, whatever the length."""
    entry = {"kind": "workload", **model, "iterations": 1, **({"parallelism": parallelism} if parallelism else {})}
    raw = {"topology": {"kind": "rail_optimized", "servers": 2, "gpus_per_server": 8,
                        "nic_link": {"rate": "100Gbps", "delay": "1us"}, "scale_up": {"rate": "800Gbps", "delay": "100ns"}},
           "limits": {"memory": "4GB"}, "traffic": [entry]}
    for estimate in (False, True):
        with pytest.raises(ScenarioError) as e:
            sc.load(write_scenario(tmp_path, raw), estimate_workloads=estimate)
        first = int(e.value.reason.split("projected from its first ")[1].split(" nodes")[0].replace(",", ""))
        assert e.value.key == "traffic[0].iterations" and first < 2 * memory.WorkloadGuard.PREFIX_NODES
    raw["limits"]["memory"] = "1000GB"
    sim = sc.load(write_scenario(tmp_path, raw), estimate_workloads=True).sim
    assert sim.n_nodes == 0 and sim.workload_guard.estimated_nodes > 10**8
