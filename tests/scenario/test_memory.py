"""The memory guard (rocesim.memory): absurd sizes are refused before anything big is built.

Topologies, traffic, workloads and numbers, from YAML and the Python API alike."""
import pytest
import yaml

from helpers import LINK, cli_error, scenario_error, small_scenario, write_file
from rocesim import memory
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
    assert scn.sim.n_flows == 2


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
