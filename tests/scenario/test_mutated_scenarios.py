"""Hostile input: every malformed scenario or input file gets one ScenarioError (printed by
the CLI as `rocesim: error: <key>: <reason>`), before the core starts, never a traceback."""
import copy

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocesim import scenario as sc
from rocesim import memory, simulation
from rocesim.network import topology as topo_mod
from rocesim.cli import main
from rocesim.errors import ScenarioError
from helpers import ROOT

LINK = {"rate": "100Gbps", "delay": "1us"}


def small(**top):
    raw = {"seed": 1, "topology": {"kind": "star", "hosts": 4, "link": dict(LINK)},
           "traffic": [{"kind": "incast", "senders": [1, 2], "receiver": 0, "size": "10KB"}]}
    raw.update(top)
    return raw


@pytest.fixture(autouse=True)
def no_core(monkeypatch):
    """Nothing here may create the packet core: errors come before anything runs."""
    monkeypatch.setattr(simulation, "Core", lambda *a, **k: pytest.fail("the core was created"))


def build_error(raw, base_dir=".") -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        sc.build(raw, base_dir)
    return info.value


def cli_error(capsys, *argv) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocesim: error: ") and err.count("\n") == 1, err
    return err


def write(tmp_path, name, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# --- 1. bytes that are not UTF-8 ------------------------------------------------------------

def test_scenario_file_not_utf8(tmp_path, capsys):
    path = write(tmp_path, "s.yaml", b"seed: 1\nname: caf\xe9\n")
    with pytest.raises(ScenarioError) as info:
        sc.load(path)
    assert info.value.key == f"{path}:2"
    assert "not UTF-8 text" in info.value.reason and "byte offset 17" in info.value.reason
    err = cli_error(capsys, "check", path)
    assert f"{path}:2: not UTF-8" in err
    assert "not UTF-8" in cli_error(capsys, "run", path, "-o", str(tmp_path / "out"))


def test_scenario_file_utf16(tmp_path):
    path = write(tmp_path, "s.yaml", yaml.safe_dump(small()).encode("utf-16"))
    with pytest.raises(ScenarioError, match="not UTF-8 text.*UTF-16"):
        sc.load(path)


@pytest.mark.parametrize("kind", ["hpcc_file", "hpcc_flow_file", "cdf_file", "astra_sim"])
def test_named_text_files_not_utf8(kind, tmp_path, capsys):
    bad = write(tmp_path, "in.txt", b"1 0 1\n\xff\xfe\x00 garbage\n")
    raw = small()
    if kind == "hpcc_file":
        raw["topology"] = {"kind": "hpcc_file", "path": "in.txt"}
    elif kind == "hpcc_flow_file":
        raw["traffic"] = [{"kind": "hpcc_flow_file", "path": "in.txt"}]
    elif kind == "cdf_file":
        raw["traffic"] = [{"kind": "cdf", "distribution": {"file": "in.txt"}, "load": 0.5, "duration": "1ms"}]
    else:
        raw["traffic"] = [{"kind": "workload", "model": {"astra_sim": "in.txt"}}]
    e = build_error(raw, str(tmp_path))
    assert e.key == f"{bad}:2" and "not UTF-8 text" in e.reason and "0xff" in e.reason
    path = write(tmp_path, "s.yaml", yaml.safe_dump(raw).encode())
    assert f"{bad}:2: not UTF-8 text" in cli_error(capsys, "check", path)


# --- 2. deep nesting --------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [80, 5000, 100_000])
def test_deep_yaml_file(depth, tmp_path, capsys):
    path = write(tmp_path, "s.yaml", ("seed: " + "[" * depth + "]" * depth + "\n").encode())
    with pytest.raises(ScenarioError) as info:
        sc.load(path)
    assert "nested" in info.value.reason and "64" in info.value.reason
    assert "nested" in cli_error(capsys, "check", path)


def test_deep_mapping_names_where():
    raw = small()
    node = raw["traffic"][0]
    for _ in range(200):
        node["x"] = {}
        node = node["x"]
    e = build_error(raw)
    assert e.key.startswith("traffic[0].x.x") and "nested more than 64 levels" in e.reason


def test_deep_structure_beyond_python_recursion_limit():
    raw = small()
    deep = []
    for _ in range(50_000):          # far beyond sys.getrecursionlimit(): the check is iterative
        deep = [deep]
    raw["name"] = deep
    assert "nested more than" in build_error(raw).reason
    with pytest.raises(ScenarioError, match="nested more than"):
        sc.apply_overrides(raw, ["seed=2"])


def test_shared_anchors_checked_once(tmp_path):
    # a billion-laughs style document: 9 levels of 10 aliases each, shared, not copied
    lines = ["a0: &a0 [1, 2]"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    path = write(tmp_path, "s.yaml", ("\n".join(lines) + "\n").encode())
    with pytest.raises(ScenarioError) as info:
        sc.load(path)
    assert info.value.key == "a0" and "unknown key" in info.value.reason


def test_self_referencing_anchor(tmp_path, capsys):
    path = write(tmp_path, "s.yaml", b"seed: 1\nname: &a [*a]\n")
    assert "name[0]: refers to itself" in cli_error(capsys, "check", path)


def test_deep_set_override(tmp_path, capsys):
    path = write(tmp_path, "s.yaml", yaml.safe_dump(small()).encode())
    err = cli_error(capsys, "check", path, "--set", "name=" + "[" * 3000 + "]" * 3000)
    assert "--set name" in err and "nested" in err


def test_impossible_yaml_date(tmp_path, capsys):
    path = write(tmp_path, "s.yaml", b"seed: 2024-13-45\n")
    assert "not valid YAML" in cli_error(capsys, "check", path)


# --- 3. a mapping or list where a name is expected ------------------------------------------

NAME_SLOTS = [
    ("topology.kind", lambda r, v: r["topology"].__setitem__("kind", v)),
    ("traffic[0].kind", lambda r, v: r["traffic"][0].__setitem__("kind", v)),
    ("traffic[0].op", lambda r, v: r.__setitem__("traffic", [{"kind": "collective", "op": v, "size": "1MB"}])),
    ("traffic[0].algorithm", lambda r, v: r.__setitem__(
        "traffic", [{"kind": "collective", "op": "allreduce", "algorithm": v, "size": "1MB"}])),
    ("traffic[0].distribution", lambda r, v: r.__setitem__(
        "traffic", [{"kind": "cdf", "distribution": v, "load": 0.5, "duration": "10us"}])),
    ("traffic[0].model", lambda r, v: r.__setitem__("traffic", [{"kind": "workload", "model": v}])),
    ("traffic[0].algorithms.allreduce", lambda r, v: r.__setitem__(
        "traffic", [{"kind": "workload", "model": "resnet50", "algorithms": {"allreduce": v}}])),
    ("traffic[0].senders", lambda r, v: r["traffic"][0].__setitem__("senders", v)),
    ("cc.scheme", lambda r, v: r.__setitem__("cc", {"scheme": v})),
    ("output.flows_format", lambda r, v: r.__setitem__("output", {"flows_format": v})),
]


@pytest.mark.parametrize("value", [{"a": 1}, ["star"], [], {}, None, 3, 1.5, True])
@pytest.mark.parametrize("key, put", NAME_SLOTS, ids=[k for k, _ in NAME_SLOTS])
def test_wrong_type_for_a_name(key, put, value):
    if value is None and key == "traffic[0].algorithm":
        return           # null leaves an optional setting at its default (the op's algorithm)
    raw = small()
    put(raw, value)
    e = build_error(raw)
    assert e.key.startswith(key), (e.key, key)


def test_name_error_lists_choices(tmp_path, capsys):
    raw = small(topology={"kind": {"star": 1}, "hosts": 4, "link": LINK})
    path = write(tmp_path, "s.yaml", yaml.safe_dump(raw).encode())
    err = cli_error(capsys, "check", path)
    assert err.startswith("rocesim: error: topology.kind: expected a topology name, got dict")
    assert "valid kinds: star, dumbbell" in err


# --- 4. absurd sizes ---------------------------------------------------------------------------

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
    e = build_error(small(topology=topology))
    assert e.key == key and words in e.reason
    assert "needs about" in e.reason and "the limit is" in e.reason
    path = write(tmp_path, "s.yaml", yaml.safe_dump(small(topology=topology)).encode())
    assert f"rocesim: error: {key}: " in cli_error(capsys, "check", path)


def test_memory_limit_key():
    topology = {"kind": "fat_tree", "k": 16, "link": LINK}          # about 170 MB
    e = build_error(small(topology=topology, limits={"memory": "100MB"}))
    assert e.key == "topology.k" and "the limit is 100 MB" in e.reason
    assert "set `limits.memory: 1GB` to raise it" in e.reason
    for bad in ("lots", 0, "0GB", [1], {"a": 1}, "-1GB"):
        assert build_error(small(limits={"memory": bad})).key == "limits.memory"
    assert build_error(small(limits={"cpu": 1})).key == "limits.cpu"
    assert build_error(small(limits=[1])).key == "limits"


def test_memory_limit_allows_normal_scenarios():
    scn = sc.build(small(limits={"memory": "1GB"}))
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
    raw = small(traffic=[entry], limits={"memory": "2GB"})
    e = build_error(raw)
    assert e.key == key and words in e.reason and "the limit is 2.0 GB" in e.reason
    path = write(tmp_path, "s.yaml", yaml.safe_dump(raw).encode())
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
    e = build_error(small(topology={"kind": "star", "hosts": 8, "link": LINK}, traffic=[entry],
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
    write(tmp_path, "t.txt", b"1000000000001 1 1\n1000000000000\n0 1000000000000 1Gbps 1us 0\n")
    e = build_error(small(topology={"kind": "hpcc_file", "path": "t.txt"}), str(tmp_path))
    assert e.key.endswith("t.txt:1") and "needs a link" in e.reason


@pytest.mark.parametrize("value", ["1e999999999s", "9" * 5000 + "us", "1e-999999999s", 10**5000, 10**40,
                                   "99999999999999999999999s"], ids=range(6))
def test_huge_numbers_in_units(value):
    e = build_error(small(stop=value))
    assert e.key == "stop"


# --- 5. property-based: mutated valid scenarios never raise anything but ScenarioError ---------

def _quickstart():
    raw = yaml.safe_load((ROOT / "scenarios" / "quickstart.yaml").read_text())
    raw["traffic"][0]["duration"] = "20us"          # keep each example cheap
    return raw


def _collectives():
    return small(topology={"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4, "link": LINK},
                 traffic=[{"kind": "collective", "op": "allreduce", "algorithm": "ring", "ranks": "all",
                           "size": "64KB", "chunks": 2},
                          {"kind": "permutation", "size": "10KB"},
                          {"kind": "flows", "flows": [{"src": 0, "dst": 5, "size": "1KB", "prio": 3,
                                                       "path": [0, 8, 10, 9, 5]}]},
                          {"kind": "workload", "model": "resnet50", "ranks": [0, 1, 2, 3],
                           "params": {"batch_time_us": 100}}],
                 cc={"scheme": "dcqcn", "params": {"window": "bdp"}},
                 routes=[{"switch": 8, "dst": 0, "next": 0}],
                 output={"sample_interval": "10us", "queue_ports": [0, 1]})


SEEDS = [small(), _quickstart(), _collectives(),
         small(topology={"kind": "fat_tree", "k": 4, "link": LINK}, stop="1ms", name="ft"),
         small(topology={"kind": "dumbbell", "hosts_left": 2, "hosts_right": 2, "link": LINK,
                         "bottleneck": {"rate": "40Gbps", "delay": "2us"}},
               switch={"buffer": "8MB", "pfc": {"enabled": False}, "ecn": {"enabled": True, "kmin": "10KB"}},
               nic={"payload": "1000B", "ack_every": 2}),
         small(topology={"kind": "clos3", "tors": 4, "aggs_per_pod": 2, "tors_per_pod": 2, "cores": 2,
                         "hosts_per_tor": 2, "host_link": LINK, "fabric_link": LINK},
               traffic=[{"kind": "cdf", "distribution": "fb_hadoop", "load": 0.3, "duration": "5us",
                         "hosts": [0, 1, 2, 3]},
                        {"kind": "incast", "senders": 2, "size": "1KB", "load": 0.1, "duration": "5us"}])]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from([0, -1, 1, 2, 7, 10**9, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "all", "1MB", "-1MB", "1 parsec", "100Gbps", "1us", "1e999s", "0.5", "websearch",
                     "ring", "star", "none", "résumé", "µs", "1µs", "\u00e9\u4e2d", "1e30GB", "NaN",
                     "nan us", "inf", "a/b.txt", "x:y", "os:path", "rocesim.errors:ScenarioError",
                     "\x00", "../../etc/passwd", "auto"]),
    st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=6)


def _paths(node, prefix=()):
    """Every (path, value) in a nested mapping/list."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated(draw):
    raw = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        paths = [p for p, _ in _paths(raw)]
        path = draw(st.sampled_from(paths))
        parent = raw
        for step in path[:-1]:
            parent = parent[step]
        target = parent[path[-1]] if path else raw
        action = draw(st.sampled_from(["replace"] * 4 + ["scalar"] * 4 + ["delete", "add", "nest"]))
        if not path:
            if action == "add":
                raw[draw(st.text(max_size=6))] = draw(values)
            continue
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "scalar":
            parent[path[-1]] = draw(scalars)
        elif action == "delete":
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif action == "add" and isinstance(target, dict):
            target[draw(st.sampled_from(["kind", "bogus", "path", "size", "limits", "é", "1"]))] = draw(values)
        elif action == "add" and isinstance(target, list):
            target.append(draw(values))
        elif action == "nest":
            wrapped = target
            for _ in range(draw(st.sampled_from([1, 1, 2, 2, 3, 70]))):
                wrapped = [wrapped] if draw(st.booleans()) else {"x": wrapped}
            parent[path[-1]] = wrapped
    return raw


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(mutated())
def test_mutated_scenarios_raise_only_scenario_error(raw):
    try:
        sc.build(raw, str(ROOT / "scenarios"))
    except ScenarioError as e:
        assert isinstance(e.key, str) and e.reason


@pytest.mark.parametrize("value", [2**63, -1, 0, True, "fast", [1], float("inf")])
def test_preset_params_checked(value):
    raw = small(traffic=[{"kind": "workload", "model": "resnet50", "params": {"batch_time_us": value}}])
    assert build_error(raw).key == "traffic[0].params.batch_time_us"
