"""ASTRA-sim 2.0 system files (rocesim.training.workloads.astra_system) and ASTRA-sim's ring
with its chunks and delays (the astra_ring algorithm), on Chakra traces."""
import json

import numpy as np
import pytest

import chakra_writer as w
from rocesim import ScenarioError, Simulation, topology
from rocesim import scenario as sc
from rocesim.training.workloads.astra_system import read_astra_system

P, SIZE = 4, 4_000_000
STAR = {"kind": "star", "hosts": P, "link": {"rate": "100Gbps", "delay": "1us"}}
HGX = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 2,
       "preferred-dataset-splits": 4, "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
       "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"],
       "collective-optimization": "localBWAware", "local-mem-bw": 3350, "boost-mode": 0}


def write_system(tmp_path, values, name="sys.json"):
    (tmp_path / name).write_text(json.dumps(values))
    return str(tmp_path / name)


def run(tmp_path, comm_type, system, size=SIZE, **entry):
    """One collective of every rank's trace on a star of P hosts, with ASTRA-sim system values."""
    w.write_trace(tmp_path / "t", [[w.coll(1, comm_type, size)]] * P)
    raw = {"topology": STAR, "cc": {"scheme": "none"},
           "traffic": [{"kind": "workload", "model": {"chakra": "t"}, "system": write_system(tmp_path, system),
                        **entry}]}
    res = sc.build(raw, str(tmp_path)).sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"] > 0
    return res


def ring(**values):
    """A system file of one chunk, no delays, the ring for every collective, and `values`."""
    return {"endpoint-delay": 0, "preferred-dataset-splits": 1, "all-reduce-implementation": ["ring"],
            "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
            "all-to-all-implementation": ["ring"], **values}


def test_the_hgx_system_file_reads_as_astra_sim_reads_it(tmp_path):
    s = read_astra_system(write_system(tmp_path, HGX))
    assert s.algorithms == dict.fromkeys(("allreduce", "reducescatter", "allgather", "alltoall"), "astra_ring")
    assert s.chunks == 4
    assert s.options == {"active_chunks": 2, "endpoint_delay_ps": 10_000, "local_mem_bw": 3350e9}
    t = read_astra_system(write_system(tmp_path, {"all-to-all-implementation": ["direct4"],
                                                  "all-reduce-implementation": ["halvingDoubling"] * 2}))
    assert t.algorithms == {"alltoall": "direct", "allreduce": "halving_doubling"} and t.chunks == 1


@pytest.mark.parametrize("values, key, reason", [
    ({"all-reduce-implementation": ["ring", "direct"]}, "all-reduce-implementation", "one implementation per"),
    ({"all-reduce-implementation": ["torus"]}, "all-reduce-implementation", "unknown implementation 'torus'"),
    ({"all-reduce-implementation": ["direct"]}, "all-reduce-implementation", "direct all-to-all only"),
    ({"all-gather-implementation": "ring"}, "all-gather-implementation", "a list of implementations"),
    ({"preferred-dataset-splits": 0}, "preferred-dataset-splits", "an integer >= 1"),
    ({"endpoint-delay": -1}, "endpoint-delay", "a number >= 0"),
    ({"local-mem-bw": "fast"}, "local-mem-bw", "a number"),
    ({"splits": 4}, "splits", "not a key ASTRA-sim 2.0 reads"),
])
def test_bad_system_files_are_refused_naming_the_key(tmp_path, values, key, reason):
    with pytest.raises(ScenarioError) as info:
        read_astra_system(write_system(tmp_path, values))
    assert info.value.key == f"{tmp_path}/sys.json: {key}" and reason in info.value.reason
    (tmp_path / "bad.json").write_text("{\n  nope\n}")
    with pytest.raises(ScenarioError) as info:
        read_astra_system(tmp_path / "bad.json")
    assert info.value.key == f"{tmp_path}/bad.json:2" and "not JSON" in info.value.reason


def test_a_chakra_workload_runs_its_system_files_algorithms_and_chunks(tmp_path):
    res = run(tmp_path, w.ALL_REDUCE, HGX)
    assert res.collectives["algorithm"].tolist() == ["astra_ring"]
    f = res.flows
    net = ~f["is_compute"]
    # 4 chunks, each a ring of 2(P-1) steps of chunk/P from every rank
    assert net.sum() == 4 * 2 * (P - 1) * P and set(f["size_bytes"][net].tolist()) == {SIZE // 4 // P}
    # the entry's own algorithms win over the file's
    assert run(tmp_path, w.ALL_REDUCE, HGX, algorithms={"allreduce": "ring"}).collectives["algorithm"][0] == "ring"
    with pytest.raises(ScenarioError) as info:           # a system file is for Chakra traces
        sc.build({"topology": STAR, "traffic": [{"kind": "workload", "model": "resnet50", "system": "s.json"}]})
    assert info.value.key == "traffic[0].system" and "Chakra traces" in info.value.reason


def test_each_message_waits_the_endpoint_delay(tmp_path):
    """A 4-rank ring all-gather of one chunk: 3 steps, each sent once the previous message is
    processed, and the last one processed: 1 us of endpoint delay makes it 4 us longer (to a
    few ns: a step's data and the previous step's ACKs meet a little differently)."""
    base = run(tmp_path, w.ALL_GATHER, ring()).collectives["duration_ns"][0]
    slow = run(tmp_path, w.ALL_GATHER, ring(**{"endpoint-delay": 1000})).collectives["duration_ns"][0]
    assert slow - base == pytest.approx(4000, abs=20)


def test_reductions_take_three_passes_of_local_memory(tmp_path):
    """The all-reduce's 3 reduce-scatter receives each take 3 x block / local-mem-bw (a write
    and two reads): 1 MB blocks at 3,000 GB/s, 1 us each, 3 us in all; an all-gather's none."""
    base = run(tmp_path, w.ALL_REDUCE, ring()).collectives["duration_ns"][0]
    mem = run(tmp_path, w.ALL_REDUCE, ring(**{"local-mem-bw": 3000})).collectives["duration_ns"][0]
    assert mem - base == pytest.approx(3000, abs=20)
    gather = [run(tmp_path, w.ALL_GATHER, ring(**m)).collectives["duration_ns"][0] for m in ({}, {"local-mem-bw": 3000})]
    assert gather[0] == gather[1]


def test_active_chunks_limit_the_streams_a_rank_runs_at_once(tmp_path):
    """Two chunks: with one active at a time a rank starts the second chunk's ring where the
    first ended there (its last message in), with two it starts both at once."""
    starts = {}
    for active in (1, 2):
        res = run(tmp_path, w.ALL_GATHER, ring(**{"preferred-dataset-splits": 2, "active-chunks-per-dimension": active}))
        f = res.flows
        mine = ~f["is_compute"] & (f["src"] == 0)
        order = np.argsort(f["start_ns"][mine], kind="stable")
        starts[active] = f["start_ns"][mine][order]
        if active == 1:                      # stream 1 begins after stream 0's last message reached rank 0
            into0 = ~f["is_compute"] & (f["dst"] == 0)
            first_three_in = np.sort(f["start_ns"][into0] + f["rx_fct_ns"][into0])[:3]
            assert starts[1][3] >= first_three_in[-1]
    assert starts[1].size == starts[2].size == 2 * (P - 1)
    assert (starts[1] == 0).sum() == 1 and (starts[2] == 0).sum() == 2


def test_ring_all_to_all_relays_every_block_around_the_ring(tmp_path):
    """ASTRA-sim's ring all-to-all: P(P-1)/2 steps of size/P to the next rank (each block
    relayed to its destination), so every rank sends (P-1)/2 x size, all to its successor."""
    res = run(tmp_path, w.ALL_TO_ALL, ring())
    f = res.flows
    net = ~f["is_compute"]
    assert net.sum() == P * P * (P - 1) // 2
    assert ((f["dst"][net] - f["src"][net]) % P == 1).all()
    assert np.bincount(f["src"][net], weights=f["size_bytes"][net]).tolist() == [(P - 1) / 2 * SIZE] * P
