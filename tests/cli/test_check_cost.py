"""`rocesim check` predicts a packet-level run's link crossings and CPU time before it runs
(rocesim.run_cost): the crossings of complete runs within 2% of what the run counts."""
import pytest

from helpers import ROOT, TINY, TWO_SERVERS, write_scenario
from rocesim import scenario as sc
from rocesim.cli import main
from rocesim.run_cost import HEAVY_PFC, ns_per_crossing, predict

TOLERANCE = 0.02       # CNPs and PFC frames are not predicted (rocesim.run_cost)

# an AICB/SimAI workload file (TP 4, DP 2 on 8 GPUs: TP all-reduces inside the servers, DP
# all-reduces and reduce-scatters across them) on 2 servers of 4 GPUs, under DCQCN
SIMAI = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 8 "
         "checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0\n2\n"
         "a\t-1\t10\tALLREDUCE\t1048576\t20\tNONE\t0\t30\tALLREDUCE\t4194304\t0\n"
         "b\t-1\t10\tNONE\t0\t20\tALLGATHER\t2097152\t30\tREDUCESCATTER\t4194304\t0\n")
SIMAI_SCENARIO = TWO_SERVERS + """
cc: {scheme: dcqcn}
traffic: [{kind: workload, model: {simai: wl.txt}, iterations: 1}]
"""
LEAF_SPINE = """
seed: 3
topology: {kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 4, host_link: {rate: 100Gbps, delay: 1us},
           fabric_link: {rate: 100Gbps, delay: 1us}}
switch: {pfc: {enabled: true}, ecn: {enabled: true}}
traffic:
  - {kind: permutation, size: 300KB}
  - {kind: flows, flows: [{src: 0, dst: 5, size: 50KB, path: [0, 16, 20, 17, 5]}]}
"""


@pytest.mark.parametrize("text", [TINY, SIMAI_SCENARIO, LEAF_SPINE], ids=["incast", "simai", "leaf_spine_path"])
def test_predicted_crossings_are_the_runs_within_the_tolerance(tmp_path, text):
    (tmp_path / "wl.txt").write_text(SIMAI)
    scn = sc.load(write_scenario(tmp_path, text))
    cost = predict(scn.sim)
    res = scn.sim.run(progress=False)
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    assert cost.crossings == pytest.approx(res.summary["link_crossings"], rel=TOLERANCE)
    assert cost.data_crossings > 0 and cost.ack_crossings > 0


def test_rocesim_check_prints_the_prediction(tmp_path, capsys):
    (tmp_path / "wl.txt").write_text(SIMAI)
    path = write_scenario(tmp_path, SIMAI_SCENARIO)
    assert main(["check", path]) == 0
    err = capsys.readouterr().err
    cost = predict(sc.load(path).sim)
    line, = [x for x in err.splitlines() if x.startswith("predicted at the packet level: ")]
    assert f"{cost.crossings / 1e3:.3g} k link crossings" in line and " of CPU on one thread" in line
    assert main(["check", path, "--mode", "flow"]) == 0              # nothing to predict: no packets
    assert "predicted at the packet level" not in capsys.readouterr().err


def test_cpu_time_follows_the_measured_cost_per_crossing():
    assert [ns_per_crossing(h) for h in (4, 128, 320, 1024, 8192, 10**5)] == [72.0, 108.0, 112.0, 194.0, 320.0, 320.0]
    assert 112 < ns_per_crossing(512) < 194
    scn = sc.load(str(ROOT / "scenarios" / "quickstart.yaml"))
    cost = predict(scn.sim)
    assert cost.cpu_s == pytest.approx(cost.crossings * ns_per_crossing(32) * 1e-9)
    assert cost.cpu_s_high == pytest.approx(cost.cpu_s * HEAVY_PFC)
