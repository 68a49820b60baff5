"""SimAI 1.6 / AICB workload files: every communication type and its group, the header
(tp, ep, pp, vpp, ga, all_gpus, pp_comm, checkpoints), pipeline stages and their sends,
SimAI's dependency rule against the overlapping one, errors keyed file:line, and the
published AICB/SimAI files (validation/reference/simai/workloads)."""
import json
import os

import numpy as np
import pytest

from rocesim import ScenarioError, Simulation
from rocesim import scenario as sc
from rocesim.cli import main
from rocesim.network import platform as pf
from rocesim.training.workloads.model import Comm, training_graph
from rocesim.workload_api import add_training
from rocesim.training.workloads.simai import read_simai
from helpers import write_scenario

REF = os.path.join(os.path.dirname(__file__), "..", "..", "validation", "reference", "simai")
WORKLOADS = os.path.join(REF, "workloads")
HEAD = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {tp} ep: {ep} pp: {pp} vpp: 1 ga: {ga} " \
       "all_gpus: {n} checkpoints: 0 checkpoint_initiates: 0 pp_comm: {ppc}"


def write(tmp_path, head, rows, name="wl.txt"):
    path = tmp_path / name
    path.write_text(head + "\n" + f"{len(rows)}\n" + "\n".join(rows) + "\n")
    return path


def row(name="l", fwd=10, fc="NONE 0", ig=20, ic="NONE 0", wg=30, wc="NONE 0", delay=0):
    return f"{name}\t-1\t{fwd}\t{fc}\t{ig}\t{ic}\t{wg}\t{wc}\t{delay}".replace(" ", "\t")


def rails(servers, gpus):
    return pf.rail_optimized(servers, gpus, "100Gbps", "1us", pf.ScaleUp(800 * 10**9, 100_000))


def ranks_of(records, op=None):
    return sorted(sorted(r.ranks.tolist()) for r in records if op is None or r.op == op)


def test_each_type_runs_on_its_simai_group(tmp_path):
    """Groups as SimAI's MockNcclGroup.cc builds them (tp 2, ep 2, 8 GPUs): TP consecutive,
    DP strided by TP, EP = consecutive DP members, DP_EP = DP members strided by EP."""
    rows = [row("a", fc="ALLREDUCE 4096", ic="ALLTOALL_EP 8192", wc="REDUCESCATTER_DP_EP 16384"),
            row("b", fc="BROADCAST 4096", ic="ALLGATHER_DP_EP 8192", wc="ALLGATHER 16384"),
            row("c", fc="ALLREDUCEALLTOALL_EP 4096", ic="REDUCESCATTER 8192", wc="ALLREDUCE_EP 65536"),
            row("d", fc="ALLTOALL 4096", ic="NONE 0", wc="ALLTOALL_DP_EP 16384")]
    wl = read_simai(write(tmp_path, HEAD.format(tp=2, ep=2, pp=1, ga=1, n=8, ppc=0), rows))
    assert wl.layers[0].fwd_comm == Comm("allreduce", 4096, "mp")
    assert wl.layers[1].wg_comm == Comm("allgather", 16384, "dp")
    assert wl.layers[2].fwd_comm == Comm("allreduce_alltoall", 4096, "ep")
    tg = training_graph(rails(2, 4), wl, np.arange(8), 1, dependencies="simai")
    tp = [[0, 1], [2, 3], [4, 5], [6, 7]]
    dp = [[0, 2, 4, 6], [1, 3, 5, 7]]
    ep = [[0, 2], [1, 3], [4, 6], [5, 7]]
    dp_ep = [[0, 4], [1, 5], [2, 6], [3, 7]]
    by = {(r.op, r.size): [] for r in tg.collectives}
    for r in tg.collectives:
        by[(r.op, r.size)].append(sorted(r.ranks.tolist()))
    assert sorted(by[("allreduce", 4096)]) == sorted(tp + ep)          # a's TP all-reduce, c's first half
    assert sorted(by[("broadcast", 4096)]) == tp
    assert sorted(by[("alltoall", 4096)]) == sorted(tp + ep)           # d's TP all-to-all, c's second half
    assert sorted(by[("alltoall", 8192)]) == ep
    assert sorted(by[("reducescatter", 16384)]) == dp_ep
    assert sorted(by[("allgather", 8192)]) == dp_ep
    assert sorted(by[("allgather", 16384)]) == dp
    assert sorted(by[("reducescatter", 8192)]) == tp
    assert sorted(by[("allreduce", 65536)]) == ep
    assert sorted(by[("alltoall", 16384)]) == dp_ep
    assert len(tg.collectives) == 12 + 10 + 16 + 8      # 4 groups per type (2 DP groups), the combined type twice
    # the combined type: the all-to-all starts when its all-reduce is done, rank by rank
    c_ar = [r for r in tg.collectives if (r.op, r.size) == ("allreduce", 4096) and r.ranks.tolist() == [0, 2]][0]
    c_a2a = [r for r in tg.collectives if (r.op, r.size) == ("alltoall", 4096) and r.ranks.tolist() == [0, 2]][0]
    child, parent = tg.graph.edges()
    pairs = set(zip(child.tolist(), parent.tolist()))
    assert all((int(s), int(d)) in pairs for s, d in zip(c_a2a.start_nodes, c_ar.done_nodes))


def test_header_fields(tmp_path):
    head = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 2 pp: 2 vpp: 3 ga: 2 all_gpus: 16 "
            "mode: 1 checkpoints: 2 1 2 checkpoint_initiates: 1 3 pp_comm 2048.0")
    rows = [row("p", wc="ALLGATHER 4096")] + [row("x"), row("y"), row("z")] * 2 + [row("e", fc="ALLREDUCE 64")]
    wl = read_simai(write(tmp_path, head, rows), clock_hz=2e9)       # 2 GHz: a cycle is 500 ps
    assert (wl.parallelism, wl.mp_size, wl.ep_size, wl.pp, wl.vpp, wl.ga, wl.all_gpus, wl.pp_comm) == \
        ("HYBRID_TRANSFORMER", 2, 2, 2, 3, 2, 16, 2048)
    assert (wl.checkpoints, wl.checkpoint_initiates) == ({1, 2}, {3})
    assert (wl.prologue, wl.epilogue, wl.micro_batches()) == (1, 1, [[1, 2, 3], [4, 5, 6]])
    assert (wl.layers[0].fwd_ps, wl.layers[0].ig_ps, wl.layers[0].wg_ps) == (5000, 10000, 15000)
    assert "ignored: mode: 1" in wl.source and wl.where == f"{tmp_path}/wl.txt:1"
    # the same keys glued to their values, and absent ones: 1, all_gpus the job's
    wl = read_simai(write(tmp_path, "HYBRID_TRANSFORMER model_parallel_NPU_group:4 ga:1", [row()]))
    assert (wl.mp_size, wl.ep_size, wl.pp, wl.ga, wl.all_gpus, wl.pp_comm) == (4, 1, 1, 1, None, 0)


def test_pipeline_stages_send_per_micro_batch_and_ga_multiplies_them(tmp_path):
    """pp 2, ga 3, tp 2 on 8 GPUs: stage 0 is ranks 0-3, stage 1 ranks 4-7; per iteration each
    stage boundary carries 3 forward and 3 backward transfers of pp_comm bytes per rank."""
    rows = ([row("grads", wc="ALLREDUCE 65536")]
            + [row("attn", fc="ALLREDUCE 8192"), row("mlp", ic="ALLREDUCE 8192")] * 3
            + [row("loss", fc="ALLREDUCE 64")])
    head = HEAD.format(tp=2, ep=1, pp=2, ga=3, n=8, ppc=4096)
    for pipeline in ("gpipe", "1f1b"):
        wl = read_simai(write(tmp_path, head, rows))
        tg = training_graph(rails(2, 4), wl, np.arange(8), 2, dependencies="simai", pipeline=pipeline)
        sends = [r for r in tg.collectives if r.op == "sendrecv"]
        assert len(sends) == 2 * 2 * 3                                  # iterations x directions x ga
        assert {r.size for r in sends} == {4096}
        fwd = {tuple(r.ranks.tolist()) for r in sends if r.ranks[0] < 4}
        bwd = {tuple(r.ranks.tolist()) for r in sends if r.ranks[0] >= 4}
        assert fwd == {(0, 1, 2, 3, 4, 5, 6, 7)} and bwd == {(4, 5, 6, 7, 0, 1, 2, 3)}
        tp_ar = [r for r in tg.collectives if (r.op, r.size) == ("allreduce", 8192)]
        assert len(tp_ar) == 2 * 2 * 3 * 2 * 2                         # iterations x stages x ga x layers x TP groups
        dp_ar = ranks_of([r for r in tg.collectives if r.size == 65536])
        assert dp_ar == [[0, 2], [0, 2], [1, 3], [1, 3], [4, 6], [4, 6], [5, 7], [5, 7]]   # once per stage and iteration
        # the epilogue's 64 B (raised to SimAI's 4096 B forward minimum): once per stage and TP group
        assert len([r for r in tg.collectives if (r.op, r.size) == ("allreduce", 4096)]) == 2 * 2 * 2
    sim = Simulation(rails(2, 4))
    add_training(sim, wl, np.arange(8), 2, dependencies="simai")
    res = sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    assert len(res.iterations["duration_ns"]) == 2


def simai_vs_overlap(tmp_path, dependencies):
    """Two layers on one server of 4 GPUs (TP 4): forward 1000/2000 ns, input grad 3000/4000 ns
    with a 1 MB TP all-reduce each, weight grad 5000/6000 ns."""
    rows = [row("a", 1000, "NONE 0", 3000, "ALLREDUCE 1000000", 5000, "NONE 0"),
            row("b", 2000, "NONE 0", 4000, "ALLREDUCE 1000000", 6000, "NONE 0")]
    wl = read_simai(write(tmp_path, HEAD.format(tp=4, ep=1, pp=1, ga=1, n=4, ppc=0), rows))
    sim = Simulation(rails(1, 4))
    add_training(sim, wl, np.arange(4), 1, dependencies=dependencies)
    res = sim.run()
    comm = res.collectives["duration_ns"]
    assert len(comm) == 2 and comm[0] == pytest.approx(comm[1]) and comm[0] > 6000
    return res.iterations["duration_ns"][0], comm[0]


def test_simai_semantics_is_the_closed_form_sum_and_overlap_hides_the_weight_gradient(tmp_path):
    simai, c = simai_vs_overlap(tmp_path, "simai")
    # SimAI: everything in a row: F0 F1 I1 C W1 I0 C W0
    assert simai == pytest.approx(1000 + 2000 + 4000 + c + 6000 + 3000 + c + 5000, abs=1e-3)
    overlap, c2 = simai_vs_overlap(tmp_path, "overlap")
    assert c2 == pytest.approx(c)
    # overlap: W1 runs during b's all-reduce (longer), then I0 and a's all-reduce ends the iteration
    assert overlap == pytest.approx(1000 + 2000 + 4000 + c + 3000 + c, abs=1e-3)
    assert simai - overlap == pytest.approx(11000, abs=1e-3)


def test_simai_delay_follows_every_communication(tmp_path):
    rows = [row("a", 1000, "ALLREDUCE 1000000", 3000, "NONE 0", 5000, "NONE 0", delay=700)]
    wl = read_simai(write(tmp_path, HEAD.format(tp=4, ep=1, pp=1, ga=1, n=4, ppc=0), rows))
    times = {}
    for dependencies in ("simai", "overlap"):
        sim = Simulation(rails(1, 4))
        add_training(sim, wl, np.arange(4), 1, dependencies=dependencies)
        res = sim.run()
        times[dependencies] = res.iterations["duration_ns"][0] - res.collectives["duration_ns"][0]
    assert times["simai"] == pytest.approx(1000 + 700 + 3000 + 5000, abs=1e-3)
    assert times["overlap"] == pytest.approx(1000 + 3000 + 5000 + 700, abs=1e-3)    # after the weight gradient


def test_checkpoint_recomputes_the_forward_before_the_backward(tmp_path):
    head = HEAD.format(tp=4, ep=1, pp=1, ga=1, n=4, ppc=0).replace(
        "checkpoints: 0 checkpoint_initiates: 0", "checkpoints: 1 0 checkpoint_initiates: 1 2")
    rows = [row("a", fc="ALLREDUCE 8192"), row("b", fc="ALLREDUCE 8192"), row("c")]
    wl = read_simai(write(tmp_path, head, rows))
    tg = training_graph(rails(1, 4), wl, np.arange(4), 1, dependencies="simai")
    assert len(tg.collectives) == 2 + 2                  # a and b forward, then again before c's backward
    plain = training_graph(rails(1, 4), read_simai(write(tmp_path, HEAD.format(tp=4, ep=1, pp=1, ga=1, n=4, ppc=0),
                                                         rows, "b.txt")), np.arange(4), 1)
    assert len(plain.collectives) == 2


@pytest.mark.parametrize("head, rows, line, words", [
    (HEAD.format(tp=3, ep=1, pp=1, ga=1, n=8, ppc=0), [row()], 1, "does not divide all_gpus"),
    (HEAD.format(tp=2, ep=3, pp=1, ga=1, n=8, ppc=0), [row()], 1, "ep: 3 does not divide"),
    (HEAD.format(tp=2, ep=1, pp=2, ga=1, n=8, ppc=0), [row()], 1, "needs pp_comm"),
    (HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=64), [row()], 1, "with pp: 1"),
    (HEAD.format(tp=2, ep=1, pp=2, ga=2, n=8, ppc=64), [row("a"), row("b"), row("c")], 2, "micro-batch blocks"),
    (HEAD.format(tp=2, ep=1, pp=1, ga=0, n=8, ppc=0), [row()], 1, "ga: expected an integer >= 1"),
    (HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0), [row(fc="ALLREDUCE_TP 64")], 3, "has no group"),
    (HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0), [row(wc="ALLGATHER_PP 0")], 3, "has no group"),
    (HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0), [row(ic="SEND 64")], 3, "input-gradient"),
    ("MICRO", [row(wc="ALLREDUCE_EP 64")], 3, "need HYBRID_TRANSFORMER"),
    (HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0).replace("checkpoint_initiates: 0", "checkpoint_initiates: 1 0"),
     [row()], 1, "needs a checkpoint layer before it"),
    (HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0).replace("checkpoints: 0", "checkpoints: 3"), [row()], 1,
     "checkpoints layer: expected an integer"),
    (HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0).replace("ep: 1", "ep 1"), [row()], 1, "expected 'ep:'"),
])
def test_malformed_files_name_file_and_line(tmp_path, head, rows, line, words):
    path = write(tmp_path, head, rows)
    with pytest.raises(ScenarioError) as info:
        read_simai(path)
    assert info.value.key == f"{path}:{line}" and words in info.value.reason


def test_truncated_file_and_rank_mismatch(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text(HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0) + "\n3\n" + row() + "\n" + row() + "\n")
    with pytest.raises(ScenarioError) as info:
        read_simai(path)
    assert info.value.key == f"{path}:4" and "declares 3 layers but the file has 2" in info.value.reason
    wl = read_simai(write(tmp_path, HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0), [row()]))
    with pytest.raises(ScenarioError) as info:
        training_graph(rails(1, 4), wl, np.arange(4), 1)
    assert info.value.key == f"{tmp_path}/wl.txt:1" and "all_gpus: 8 but the job has 4 ranks" in info.value.reason
    wl = read_simai(write(tmp_path, "HYBRID_TRANSFORMER model_parallel_NPU_group: 3", [row()]))
    with pytest.raises(ScenarioError) as info:
        training_graph(rails(1, 4), wl, np.arange(4), 1)
    assert info.value.key == f"{tmp_path}/wl.txt:1" and "do not split" in info.value.reason


def test_yaml_entry_with_a_simai_file(tmp_path):
    write(tmp_path, HEAD.format(tp=4, ep=1, pp=1, ga=1, n=8, ppc=0),
          [row("a", 1000, "NONE 0", 3000, "ALLREDUCE 100000", 5000, "ALLREDUCE 200000")], "model.txt")
    raw = {"topology": {"kind": "rail_optimized", "servers": 2, "gpus_per_server": 4,
                        "nic_link": {"rate": "100Gbps", "delay": "1us"},
                        "scale_up": {"rate": "800Gbps", "delay": "100ns"}},
           "traffic": [{"kind": "workload", "model": {"simai": "model.txt"}, "iterations": 2}]}
    res = sc.build(raw, str(tmp_path)).sim.run()
    assert res.iterations["iteration"].tolist() == [0, 1]
    assert sorted(res.collectives["size_bytes"].tolist()) == [100_000] * 4 + [200_000] * 8
    for bad, key in (({"dependencies": "both"}, "traffic[0].dependencies"),
                     ({"gpus": 4}, f"{tmp_path}/model.txt:1"),
                     ({"model": "gpt", "dependencies": "simai"}, "traffic[0].dependencies")):
        entry = {**raw["traffic"][0], **bad}
        with pytest.raises(ScenarioError) as info:
            sc.build({**raw, "traffic": [entry]}, str(tmp_path))
        assert info.value.key == key


def test_simai_files_run_without_pxn_as_simai_does_unless_told(tmp_path):
    """SimAI forwards through the destination rail's GPU only with AS_PXN_ENABLE=1
    (astra-sim/system/MockNcclGroup.cc; off in the reference runs): a SimAI file's all-to-all
    across servers and rails crosses rails by default, and stays on its rails with `pxn: true`
    (NCCL's default, which the LLM presets and layer models take)."""
    write(tmp_path, HEAD.format(tp=8, ep=1, pp=1, ga=1, n=8, ppc=0),
          [row("a", 1000, "ALLTOALL 800000", 1000, "NONE 0", 1000, "NONE 0")], "model.txt")
    raw = {"topology": {"kind": "rail_optimized", "servers": 2, "gpus_per_server": 4,
                        "nic_link": {"rate": "100Gbps", "delay": "1us"},
                        "scale_up": {"rate": "800Gbps", "delay": "100ns"}},
           "traffic": [{"kind": "workload", "model": {"simai": "model.txt"}}]}
    for extra, cross in (({}, True), ({"pxn": True}, False)):
        res = sc.build({**raw, "traffic": [{**raw["traffic"][0], **extra}]}, str(tmp_path)).sim.run()
        net = ~res.flows["is_compute"]
        assert net.any()
        assert (res.flows["src"][net] % 4 != res.flows["dst"][net] % 4).any() == cross


PUBLISHED = sorted(f for f in os.listdir(WORKLOADS) if f.endswith(".txt"))


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_workloads_load_and_check(tmp_path, name):
    """AICB's published SimAI workloads and SimAI's examples (README there): each one
    loads, and builds (as `rocesim check` does) on SimAI's 64-GPU Spectrum-X topology, except
    the 9,216-GPU example (read only) and the Llama-65B file AICB publishes truncated."""
    path = os.path.join(WORKLOADS, name)
    if name.startswith("L65B-M1-C05"):
        with pytest.raises(ScenarioError) as info:
            read_simai(path)
        assert info.value.key == f"{path}:35" and "declares 839 layers but the file has 33" in info.value.reason
        return
    wl = read_simai(path)
    if name == "workload_analytical.txt":
        assert (wl.all_gpus, wl.mp_size, wl.ep_size, wl.pp, wl.ga, wl.pp_comm) == (9216, 2, 16, 12, 24, 50331648)
        assert (wl.prologue, wl.epilogue, len(wl.micro_batches()[0])) == (6, 7, 74)
        return
    raw = {"topology": {"kind": "simai_file", "path": os.path.join(REF, "topo", "Spectrum-X_64g_8gps_400Gbps_H100")},
           "traffic": [{"kind": "workload", "model": {"simai": path}, "gpus": wl.all_gpus or 64}]}
    scn = sc.build(raw, str(tmp_path))
    scn.sim.check()
    assert scn.sim.collectives and len(scn.sim.iterations) == 1


def _folded_runs(tmp_path, folds, ep=1, gradients=True):
    """Iteration times, node counts and collectives of a pp 2, ga 3, tp 2, dp 4 SimAI workload
    on one pod (no flow has a choice of path) in flow mode, for each (fold_tp, fold_dp)."""
    grads = [row("grads", wc="ALLREDUCE 6553600"), row("moe", wc="ALLREDUCE_DP_EP 65536")] if gradients else []
    rows = (grads + [row("moe", fc="ALLTOALL_EP 65536", ic="ALLTOALL_EP 65536")]
            + [row("attn", fc="ALLGATHER 819200", ic="REDUCESCATTER 819200"), row("mlp", ic="ALLREDUCE 8192")] * 3
            + [row("loss", fc="ALLREDUCE 64", delay=100)] + [row("pad")] * (2 - len(grads)))
    wl = read_simai(write(tmp_path, HEAD.format(tp=2, ep=ep, pp=2, ga=3, n=16, ppc=409600), rows))
    out = []
    for fold_tp, fold_dp in folds:
        sim = Simulation(rails(4, 4), mode="flow")
        add_training(sim, wl, np.arange(16), 2, dependencies="simai", fold_tp=fold_tp, fold_dp=fold_dp)
        res = sim.run(progress=False)
        assert res.summary["flows_completed"] == res.summary["flows_total"]
        out.append((res.iterations["duration_ns"].tolist(), res.summary["flows_total"], len(sim.collectives)))
    return out


def test_fold_tp_and_fold_dp_keep_the_iteration_times(tmp_path):
    """Folding the TP groups changes no time; nor does folding the data-parallel replicas
    when they share no link (one pod, rail-aligned transfers between stages, no collective
    across replicas); with the data-parallel gradients, whose rings share NICs with the
    transfers of the replicas left out, within 1%."""
    (t0, n0, c0), (t1, n1, c1), (t2, n2, c2), (t3, n3, c3) = _folded_runs(
        tmp_path, [(False, 0), (True, 0), (True, 2), (False, 4)], gradients=False)
    assert t0 == t1 == t2 == t3
    assert n3 == n0 and c3 == c0                       # fold_dp = dp: everything simulated
    assert n1 < n0 / 2 and n2 < n1 and c2 < c1 == c0
    (g0, _, _), (g1, _, _), (g2, _, _) = _folded_runs(tmp_path, [(False, 0), (True, 0), (True, 2)])
    assert g0 == g1 and np.allclose(g0, g2, rtol=0.01)


def test_fold_dp_must_divide_dp_in_multiples_of_ep(tmp_path):
    with pytest.raises(ScenarioError, match="fold_dp"):
        _folded_runs(tmp_path, [(False, 3)])
    with pytest.raises(ScenarioError, match="fold_dp"):
        _folded_runs(tmp_path, [(False, 1)], ep=2)


def test_collectives_on_groups_of_one_gpu_are_counted_and_said(tmp_path, capsys):
    """AICB's DeepSpeed ZeRO-3 files declare `model_parallel_NPU_group: 1`: their TP
    all-gathers run on groups of one GPU, no communication in SimAI as here, but the run
    said only `collectives: 1/1 finished`. `check`, the terminal and summary.json say how
    many declared collectives were empty and why."""
    write(tmp_path, HEAD.format(tp=1, ep=1, pp=1, ga=1, n=8, ppc=0),
          [row(f"z{i}", fc="ALLGATHER 4096") for i in range(11)] + [row("grads", wc="ALLREDUCE 65536")], "zero3.txt")
    raw = {"topology": {"kind": "rail_optimized", "servers": 2, "gpus_per_server": 4,
                        "nic_link": {"rate": "100Gbps", "delay": "1us"},
                        "scale_up": {"rate": "800Gbps", "delay": "100ns"}},
           "traffic": [{"kind": "workload", "model": {"simai": "zero3.txt"}, "iterations": 1}]}
    path = write_scenario(tmp_path, raw)
    why = ("workload zero3: 11 of its 12 declared collectives are on groups of one GPU and move nothing, "
           "as in SimAI (allgather on model-parallel (TP) groups x11)")
    assert main(["check", path]) == 0
    assert why in capsys.readouterr().err
    assert main(["run", path, "-o", str(tmp_path / "out"), "--no-plot"]) == 0
    assert "collectives: 1/1 finished" in (out := capsys.readouterr().out) and why in out
    with open(tmp_path / "out" / "summary.json") as f:
        summary = json.load(f)
    assert (summary["collectives"], summary["collectives_empty"], summary["collectives_empty_why"]) == (1, 11, [why])
    # a workload whose every group has two GPUs or more declares none empty: no such keys
    write(tmp_path, HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0), [row("a", fc="ALLGATHER 4096")], "zero3.txt")
    assert "collectives_empty" not in sc.build(raw, str(tmp_path)).sim.run(progress=False).summary


@pytest.mark.parametrize("fields, words", [
    (dict(fwd=10**16), "the forward compute time (cycles) 10,000,000,000,000,000 is 10000000s"),
    (dict(delay=2**63), "the delay after the weight update (cycles) 9,223,372,036,854,775,808 is too large"),
    (dict(fc="ALLREDUCE 10000000000000000000"), "the forward communication size (bytes) 10,000,000,000,000,000,000 "
                                                "is too large"),
    (dict(wc="REDUCESCATTER 4000000000000000000"), "a collective of 4000000TB cannot finish within the simulator's "
                                                   "time horizon"),
], ids=["time", "int64", "size", "network"])
def test_a_files_numbers_are_checked_against_the_horizon_and_the_network_at_its_line(fields, words, tmp_path):
    """Compute times of 1e16 ns and sizes of 1e19 B ended in an OverflowError without the
    file and line; a 9.2e18-byte reduce-scatter passed `check` and hung flow mode."""
    write(tmp_path, HEAD.format(tp=2, ep=1, pp=1, ga=1, n=8, ppc=0), [row("a"), row("b", **fields)], "big.txt")
    raw = {"topology": {"kind": "rail_optimized", "servers": 2, "gpus_per_server": 4,
                        "nic_link": {"rate": "100Gbps", "delay": "1us"},
                        "scale_up": {"rate": "800Gbps", "delay": "100ns"}},
           "traffic": [{"kind": "workload", "model": {"simai": "big.txt"}, "iterations": 1}]}
    for mode in ("packet", "flow"):
        with pytest.raises(ScenarioError) as info:
            sc.build({**raw, "mode": mode}, str(tmp_path), estimate_workloads=True)
        assert info.value.key == f"{tmp_path}/big.txt:4" and words in info.value.reason
