"""The Python API (rocesim.Simulation) checks a value at the boundary, as YAML does.

Nothing the API accepts is refused later by the core, and `rocesim check` refuses what `run` would."""
import numpy as np
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


def test_queue_ports_are_checked_before_the_run_starts():
    """A port id out of range was refused by the core's array once the run had begun."""
    sim = small()
    for bad in ([10**9], [-1], [0.5], [], "some"):
        with pytest.raises(ScenarioError) as e:
            sim.run(sample_interval="10us", queue_ports=bad, progress=False)
        assert e.value.key == "output.queue_ports" and "port ids 0..5" in e.value.reason
    res = sim.run(sample_interval="1us", queue_ports=[np.int64(3)], progress=False)
    assert set(res.samples["queues"]["port"].tolist()) == {3}


def test_the_memory_limit_counts_flows_and_collectives_added_through_the_api():
    """A 100 KB limit took 56,016 flows one by one, and any collective."""
    sim = Simulation(topology.star(8, "100Gbps", "1us"), memory_limit="100KB")
    with pytest.raises(ScenarioError) as e:
        for _ in range(60_000):
            sim.add_flow(0, 1, 1000)
    assert e.value.key.startswith("flows[") and "the limit is 100 KB" in e.value.reason
    assert sim.n_nodes < 1000
    sim = Simulation(topology.star(8, "100Gbps", "1us"), memory_limit="100KB")
    with pytest.raises(ScenarioError) as e:
        sim.add_collective("alltoall", "direct", size="1GB", chunks=64)
    assert e.value.key == "add_collective" and sim.n_nodes == 0
    with pytest.raises(ScenarioError) as e:
        sim.add_flows(traffic.FlowTable(src=np.ones(10_000, np.int64), dst=np.zeros(10_000, np.int64),
                                        size=np.full(10_000, 1000), start=np.zeros(10_000, np.int64)))
    assert e.value.key == "traffic" and sim.n_nodes == 0


def test_poisson_arrivals_too_many_for_memory_are_refused_before_drawing():
    """A huge duration raised numpy's MemoryError allocating the arrivals."""
    with pytest.raises(ScenarioError) as e:
        traffic.poisson_cdf(np.arange(8), 100 * 10**9, 0.5, "1000000s", "websearch", np.random.default_rng(1))
    assert e.value.key == "duration" and "flows" in e.value.reason
    with pytest.raises(ScenarioError, match="the limit is 1.0 MB"):
        traffic.poisson_cdf(np.arange(8), 100 * 10**9, 0.5, "1s", "websearch", np.random.default_rng(1),
                            memory_limit="1MB")
    assert len(traffic.poisson_cdf(np.arange(8), 100 * 10**9, 0.5, "100us", "websearch",
                                   np.random.default_rng(1))) > 0


def test_what_is_not_a_flow_table_or_a_parent_gets_a_clear_answer():
    sim = small()
    for bad in (None, [(0, 1, 1000)], {"src": [0]}):
        with pytest.raises(ScenarioError) as e:              # (None raised AttributeError)
            sim.add_flows(bad)
        assert e.value.key == "traffic" and "FlowTable" in e.value.reason
    # after=None means no parent (it raised TypeError), for flows, compute steps and collectives
    fid = sim.add_flow(1, 2, 1000, after=None)
    cid = sim.add_compute(0, "1us", after=None)
    rec = sim.add_collective("allreduce", "ring", ranks=[0, 1, 2], size="3KB", after=None)
    parents = set(sim.dependencies()[1].tolist())
    assert fid not in sim.dependencies()[0] and cid not in sim.dependencies()[0] and not parents & {fid, cid}
    assert sim.run(progress=False).summary["flows_completed"] == sim.n_nodes and rec.ranks.size == 3


def test_numpy_integers_are_whole_numbers_for_seed_and_threads_as_for_flows():
    seed = Simulation(topology.star(3, "100Gbps", "1us"), seed=np.int64(3))
    assert seed.run(progress=False).summary["seed"] == 3
    sim = small()
    assert sim.threads_to_run(np.int32(1)) == (1, None)
    assert sim.run(threads=np.int64(1), progress=False).threads == 1
    for bad in (np.float64(2.0), True):
        with pytest.raises(ScenarioError):
            Simulation(topology.star(3, "100Gbps", "1us"), seed=bad)


def test_a_collectives_ranks_and_size_are_refused_with_their_reason():
    sim = Simulation(topology.star(8, "100Gbps", "1us"))
    with pytest.raises(ScenarioError) as e:              # was "needs at least two distinct hosts"
        sim.add_collective("allreduce", "ring", ranks=[0, 1, 1, 2], size="1MB")
    assert e.value.key == "ranks" and "rank 1 is given 2 times" in e.value.reason
    with pytest.raises(ScenarioError) as e:
        sim.add_collective("allreduce", "ring", ranks=[3], size="1MB")
    assert e.value.key == "ranks" and "at least two ranks, got 1" in e.value.reason
    for op in ("allreduce", "reducescatter", "allgather"):
        with pytest.raises(ScenarioError) as e:          # a 1-byte ring on 8 hosts was keyed `graph`
            sim.add_collective(op, "ring", ranks="all", size=1)
        assert e.value.key == "size" and "more blocks than it has bytes" in e.value.reason
    assert sim.n_nodes == 0
    sim.add_collective("allreduce", "ring", ranks="all", size=8)
