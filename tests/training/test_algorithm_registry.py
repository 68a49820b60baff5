"""A collective algorithm added from outside the package: its builder (over the public
`Transfers`) and one `register` call, and the API, a YAML collective entry and a workload's
`algorithms:` mapping run it; each rank receives (p-1)/p of an all-gather's size."""
import numpy as np
import pytest

from rocesim import ScenarioError, Simulation, topology
from rocesim import scenario as sc
from rocesim.training.algorithms import ALGORITHMS, Algorithm, per_step, register, unregister

LINK = {"rate": "100Gbps", "delay": "1us"}
P, SIZE = 4, 400_000


def star_allgather(t, plan):
    """Each rank sends its block (size/p) straight to every other rank."""
    p = t.ranks.size
    src, dst = np.nonzero(~np.eye(p, dtype=bool))
    t.send(src, dst, plan.size // p)


@pytest.fixture
def star():
    register(Algorithm("star", ("allgather",), per_step(lambda op, p: p - 1), build=star_allgather))
    yield
    unregister("star")


def received(res, collective):
    """Bytes each host received in the collective's flows."""
    f = res.flows
    mine = (f["collective"] == collective) & ~f["is_compute"]
    return np.bincount(f["dst"][mine], weights=f["delivered_bytes"][mine], minlength=P)


def test_a_registered_algorithm_is_listed_and_an_unknown_one_refused(star):
    assert ALGORITHMS["allgather"][-1] == "star" and "star" not in ALGORITHMS["allreduce"]
    sim = Simulation(topology.star(P, *LINK.values()))
    with pytest.raises(ScenarioError, match=r"allgather has no algorithm 'nope'; valid: ring, .*, auto, star$"):
        sim.add_collective("allgather", "nope", "all", SIZE)
    with pytest.raises(ScenarioError, match="allreduce has no algorithm 'star'"):
        sim.add_collective("allreduce", "star", "all", SIZE)


def test_unregistered_it_is_gone():
    register(Algorithm("star", ("allgather",), per_step(lambda op, p: p - 1), build=star_allgather))
    unregister("star")
    assert "star" not in ALGORITHMS["allgather"]
    with pytest.raises(ScenarioError, match="no algorithm 'star'"):
        Simulation(topology.star(P, *LINK.values())).add_collective("allgather", "star", "all", SIZE)


def test_through_the_api(star):
    sim = Simulation(topology.star(P, *LINK.values()))
    rec = sim.add_collective("allgather", "star", "all", SIZE)
    res = sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    assert rec.algorithm == "star" and res.collectives["algorithm"].tolist() == ["star"]
    assert received(res, rec.id).tolist() == [(P - 1) * SIZE / P] * P


def test_through_a_yaml_collective_entry(star, tmp_path):
    raw = {"topology": {"kind": "star", "hosts": P, "link": LINK},
           "traffic": [{"kind": "collective", "op": "allgather", "algorithm": "star", "size": f"{SIZE}B"}]}
    res = sc.build(raw, str(tmp_path)).sim.run()
    assert res.collectives["algorithm"].tolist() == ["star"]
    assert received(res, 0).tolist() == [(P - 1) * SIZE / P] * P
    raw["traffic"][0]["algorithm"] = "nope"
    with pytest.raises(ScenarioError, match="valid: .*, star") as info:
        sc.build(raw, str(tmp_path))
    assert info.value.key == "traffic[0].algorithm"


def test_through_a_workloads_algorithms(star, tmp_path):
    (tmp_path / "model.txt").write_text(f"DATA\n1\nl -1 1000 ALLGATHER {SIZE} 1000 NONE 0 1000 NONE 0 0\n")
    raw = {"topology": {"kind": "star", "hosts": P, "link": LINK},
           "traffic": [{"kind": "workload", "model": {"astra_sim": "model.txt"}, "iterations": 2,
                        "algorithms": {"allgather": "star"}}]}
    res = sc.build(raw, str(tmp_path)).sim.run()
    assert res.collectives["algorithm"].tolist() == ["star", "star"]
    for cid in res.collectives["collective_id"]:
        assert received(res, cid).tolist() == [(P - 1) * SIZE / P] * P
    raw["traffic"][0]["algorithms"] = {"allgather": "nope"}
    with pytest.raises(ScenarioError, match="star") as info:
        sc.build(raw, str(tmp_path))
    assert info.value.key == "traffic[0].algorithms.allgather"
