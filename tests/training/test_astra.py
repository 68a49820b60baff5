"""ASTRA-sim 1.0 text workloads: parsing, errors keyed file:line, and iteration times when run."""
import pytest

from rocesim import ScenarioError, Simulation, topology
from rocesim import scenario as sc
from rocesim.training.workloads import Comm
from rocesim.workload_api import add_training
from rocesim.training.workloads.astra import read_astra_sim

STAR = ("100Gbps", "1us")
MB = 1_000_000


def write(tmp_path, text, name="wl.txt", newline="\n"):
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode())
    return path


def two_layers(wg0="NONE 0", wg1="NONE 0", update=0):
    """DATA parallel, 2 layers; compute in cycles: forward 1000/2000, input grad 3000/4000,
    weight grad 5000/6000."""
    return ("DATA\n"
            "2\n"
            f"conv1\t-1\t1000\tNONE\t0\t3000\tNONE\t0\t5000\t{wg0.replace(' ', chr(9))}\t{update}\n"
            f"fc  -1  2000  NONE  0  4000  NONE  0  6000  {wg1}  {update}\n")


def run_training(wl, iterations=2):
    sim = Simulation(topology.star(4, *STAR))
    add_training(sim, wl, [0, 1, 2, 3], iterations)
    res = sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    return res


def test_fields_and_units(tmp_path):
    path = write(tmp_path, two_layers(wg0="ALLREDUCE 4000000", wg1="REDUCESCATTER 0", update=10).replace(
        "conv1\t-1\t1000\tNONE\t0", "conv1\t-1\t1000\tALLGATHER\t2048"))
    wl = read_astra_sim(path, clock_hz=2e9)                  # 2 GHz: a cycle is 500 ps
    assert (wl.name, wl.parallelism, wl.mp_size) == ("wl", "DATA", 1)
    a, b = wl.layers
    assert (a.name, a.fwd_ps, a.ig_ps, a.wg_ps, a.update_ps) == ("conv1", 500_000, 1_500_000, 2_500_000, 5_000)
    assert (a.fwd_comm, a.ig_comm, a.wg_comm) == (Comm("allgather", 2048), None, Comm("allreduce", 4 * MB))
    assert (b.name, b.fwd_ps, b.wg_comm) == ("fc", 1_000_000, None)          # a size of 0 is no comm
    assert str(path) in wl.source


@pytest.mark.parametrize("first, parallelism, mp_size", [
    ("MODEL", "MODEL", 1),
    ("HYBRID_MODEL_DATA model_parallel_NPU_group: 2", "HYBRID_MODEL_DATA", 2),
    ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 32",
     "HYBRID_TRANSFORMER", 8),
    ("HYBRID_TRANSFORMER model_parallel_NPU_group:4", "HYBRID_TRANSFORMER", 4),
])
def test_first_line_variants(tmp_path, first, parallelism, mp_size):
    wl = read_astra_sim(write(tmp_path, first + "\n1\nl -1 1 NONE 0 1 ALLTOALL 64 1 NONE 0 0\n"))
    assert (wl.parallelism, wl.mp_size, wl.layers[0].ig_comm) == (parallelism, mp_size, Comm("alltoall", 64))


def test_crlf_tabs_and_blank_lines_read_the_same(tmp_path):
    text = two_layers(wg0="ALLREDUCE 1000")
    plain = read_astra_sim(write(tmp_path, text))
    crlf = read_astra_sim(write(tmp_path, "\n" + text.replace("2\n", "2\n\n\t \n"), "crlf.txt", "\r\n"))
    assert crlf.layers == plain.layers and crlf.parallelism == plain.parallelism


LAYER = "l -1 10 NONE 0 10 NONE 0 10 NONE 0 0"
ERRORS = [   # file text, line of the error, what the message says
    ("DATA\n2\n" + LAYER + "\n" + LAYER + " 7\n", 4, "expected 12 fields"),
    ("DATA\n1\n" + LAYER.replace("10 NONE 0 10", "10 NONE 0 1.5", 1) + "\n", 3, "must be an integer, got '1.5'"),
    ("DATA\n1\n" + LAYER.replace("-1 10", "-1 -10") + "\n", 3, "forward compute time (cycles) must not be negative"),
    ("DATA\n1\n" + LAYER.replace("NONE 0 0", "NONE 0 -3") + "\n", 3, "update (cycles) must not be negative"),
    ("DATA\n1\n" + LAYER.replace("10 NONE 0 10 NONE 0 10 NONE 0", "10 NONE 0 10 NONE 0 10 ALLREDUCE -8") + "\n", 3,
     "weight-gradient communication size (bytes) must not be negative"),
    ("DATA\n1\n" + LAYER.replace("10 NONE", "10 BROADCAST", 1) + "\n", 3, "unknown forward communication type"),
    ("DATA\n1\nl x 1 NONE 0 1 NONE 0 1 NONE 0 0\n", 3, "reserved field"),
    ("PIPELINE\n1\n" + LAYER + "\n", 1, "unknown parallelism 'PIPELINE'"),
    ("HYBRID_DATA_MODEL model_parallel_NPU_group: two\n1\n" + LAYER + "\n", 1, "positive integer, got 'two'"),
    ("DATA\n3\n" + LAYER + "\n\n" + LAYER + "\n\n", 5, "line 2 declares 3 layers but the file has 2"),
    ("DATA\n1\n" + LAYER + "\n" + LAYER + "\n", 4, "unexpected line after the 1 layers declared on line 2"),
    ("DATA\n0\n", 2, "at least 1"),
    ("DATA\ntwo\n" + LAYER + "\n", 2, "number of layers must be an integer"),
    ("DATA\n", 1, "expected the number of layers"),
    ("\n\n", 1, "empty file"),
]


@pytest.mark.parametrize("text, line, reason", ERRORS, ids=[e[2] for e in ERRORS])
def test_errors_are_keyed_file_and_line(tmp_path, text, line, reason):
    path = write(tmp_path, text, newline="\r\n")
    with pytest.raises(ScenarioError) as info:
        read_astra_sim(path)
    assert info.value.key == f"{path}:{line}"
    assert reason in info.value.reason


def test_bad_clock_and_missing_file(tmp_path):
    with pytest.raises(ScenarioError) as info:
        read_astra_sim(write(tmp_path, two_layers()), clock_hz=0)
    assert info.value.key == "clock"
    with pytest.raises(ScenarioError) as info:
        read_astra_sim(tmp_path / "none.txt")
    assert info.value.key == str(tmp_path / "none.txt")


def test_without_communication_an_iteration_is_the_compute_sum(tmp_path):
    res = run_training(read_astra_sim(write(tmp_path, two_layers()), clock_hz=1e9))
    compute_ns = 1000 + 2000 + 3000 + 4000 + 5000 + 6000          # 1 GHz: a cycle is 1 ns
    assert res.iterations["duration_ns"].tolist() == [compute_ns, compute_ns]
    assert res.iterations["start_ns"].tolist() == [0, compute_ns]
    slow = run_training(read_astra_sim(write(tmp_path, two_layers()), clock_hz=0.5e9))
    assert slow.iterations["duration_ns"].tolist() == [2 * compute_ns, 2 * compute_ns]


def test_exposed_communication_adds_to_the_iteration(tmp_path):
    """At 100 MHz (10 ns a cycle) backward runs fc then conv1; fc's 100 kB all-reduce
    hides behind conv1's 80 us of compute, conv1's 1 MB all-reduce comes last and is
    exposed, followed by the update delay."""
    text = two_layers(wg0="ALLREDUCE 1000000", wg1="ALLREDUCE 100000", update=700)
    res = run_training(read_astra_sim(write(tmp_path, text), clock_hz=1e8))
    alone = Simulation(topology.star(4, *STAR))
    alone.add_collective("allreduce", "auto", "all", MB)
    allreduce_ns = alone.run().collectives["duration_ns"][0]
    compute_ns = 210_000
    assert allreduce_ns > 100_000
    assert res.iterations["duration_ns"] == pytest.approx([compute_ns + allreduce_ns + 7_000] * 2, abs=1e-3)
    small = res.collectives["size_bytes"] == 100_000
    assert (res.collectives["finish_ns"][small] < res.collectives["start_ns"][~small]).all()   # hidden


def test_yaml_workload_with_an_astra_sim_file(tmp_path):
    write(tmp_path, two_layers(wg0="ALLREDUCE 200000"), "model.txt")
    raw = {"topology": {"kind": "star", "hosts": 4, "link": {"rate": "100Gbps", "delay": "1us"}},
           "traffic": [{"kind": "workload", "model": {"astra_sim": "model.txt"}, "clock": "2GHz",
                        "iterations": 2}]}
    res = sc.build(raw, str(tmp_path)).sim.run()
    assert res.iterations["iteration"].tolist() == [0, 1]
    assert (res.iterations["duration_ns"] > 21_000 / 2).all()
    assert res.collectives["size_bytes"].tolist() == [200_000, 200_000]
    write(tmp_path, "DATA\n1\nbad\n", "model.txt")
    with pytest.raises(ScenarioError) as info:
        sc.build(raw, str(tmp_path))
    assert info.value.key == f"{tmp_path}/model.txt:3"
