"""The Python API (rocesim.Simulation) checks a value at the boundary, as YAML does.

Nothing the API accepts is refused later by the core, and `rocesim check` refuses what `run` would."""
import pytest

from helpers import write_scenario
from rocesim import ScenarioError, Simulation, topology, traffic
from rocesim.cli import main


def small():
    sim = Simulation(topology.star(3, "100Gbps", "1us"))
    sim.add_flow(1, 0, "1KB")
    sim.add_flow(2, 0, "1KB")
    return sim


def test_seed_has_one_range_in_yaml_and_the_api():
    # the core's seed is a uint64; YAML refused 2**63 while the API passed 2**64 on to the core
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), seed=2**64)
    assert e.value.key == "seed" and "0..9223372036854775807" in e.value.reason
    Simulation(topology.star(3, "100Gbps", "1us"), seed=2**63 - 1).run()      # the largest runs


def test_a_simulation_needs_a_topology():
    with pytest.raises(ScenarioError) as e:
        Simulation(None)
    assert e.value.key == "topology" and "got None" in e.value.reason


@pytest.mark.parametrize("children, parents, key", [([1.7], [0.2], "children"), ([1], [True], "parents"),
                                                    ([5], [0], "children"), ([1], [-1], "parents")])
def test_dependencies_are_flow_ids_never_rounded(children, parents, key):
    sim = small()
    with pytest.raises(ScenarioError) as e:
        sim.add_dependencies(children, parents)
    assert e.value.key == key
    sim.add_dependencies([1], [0])                      # whole ids of existing flows are fine
    res = sim.run()
    assert res.flows["start_ns"][1] >= res.flows["start_ns"][0] + res.flows["rx_fct_ns"][0]


def test_traffic_priority_0_is_refused_when_added_not_at_run():
    sim = small()
    with pytest.raises(ScenarioError) as e:
        sim.add_flows(traffic.incast([1, 2], 0, 1000, 0, prio=0))
    assert "priorities 1..7" in e.value.reason
    assert sim.n_nodes == 2 and sim.run().summary["flows_completed"] == 2


def test_check_refuses_what_run_would(tmp_path, capsys):
    """A scheme's cross-parameter checks ran only when run() built the core."""
    raw = {"topology": {"kind": "star", "hosts": 3, "link": {"rate": "100Gbps", "delay": "1us"}},
           "cc": {"scheme": "swift", "params": {"fs_min_cwnd": 200}},
           "traffic": [{"kind": "incast", "senders": [1, 2], "receiver": 0, "size": "10KB"}]}
    path = write_scenario(tmp_path, raw)
    assert main(["check", str(path)]) == 2
    assert "cc.params.fs_min_cwnd" in capsys.readouterr().err
    raw["cc"]["params"]["fs_min_cwnd"] = 1
    write_scenario(tmp_path, raw)
    assert main(["check", str(path)]) == 0


def test_payload_is_bounded():
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), nic={"payload": "1.2MB"})
    assert e.value.key == "nic.payload"


def test_a_refused_flow_leaves_nothing_behind():
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t)
    with pytest.raises(ScenarioError):
        sim.add_flow(0, 13, 1000, path=[0, 16, 32, 13])
    with pytest.raises(ScenarioError):
        sim.add_flow(0, 13, 1000, after=[7])
    assert sim.n_nodes == 0
