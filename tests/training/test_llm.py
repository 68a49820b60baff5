"""LLM training on platforms (rocesim.training.workloads.llm): groups, pipeline, presets, jobs."""
import numpy as np
import pytest

from rocesim import ScenarioError, Simulation, scenario, topology
from rocesim.network import platform as pf
from rocesim.network.platform import ScaleUp
from rocesim.training.parallelism import Parallelism, schedule
from rocesim.training.workloads.llm import LLM, LLM_PRESETS
from rocesim.workload_api import add_llm_training

SU = ScaleUp(3600 * 10**9, 10**6)


def test_megatron_groups():
    p = Parallelism(tp=2, pp=2, dp=4, ep=2)
    assert p.groups("tp")[:2].tolist() == [[0, 1], [2, 3]]
    assert p.groups("dp")[:2].tolist() == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert p.groups("pp")[0].tolist() == [0, 8]
    assert p.groups("ep")[:3].tolist() == [[0, 2], [1, 3], [4, 6]]  # EP splits each DP group
    assert p.groups("edp")[:3].tolist() == [[0, 4], [1, 5], [2, 6]]  # same experts
    every = lambda d: np.sort(p.groups(d).ravel()).tolist() == list(range(16))
    assert all(every(d) for d in ("tp", "dp", "pp", "ep", "edp"))
    q = Parallelism(tp=2, pp=2, dp=2, order="pp-dp-tp-cp")
    assert q.groups("pp")[0].tolist() == [0, 1] and q.groups("tp")[0].tolist() == [0, 4]
    with pytest.raises(ScenarioError):
        Parallelism(dp=4, ep=3)
    with pytest.raises(ScenarioError):
        Parallelism.for_ranks(12, tp=8)


def test_1f1b_schedule():
    assert schedule("1f1b", 0, 4, 6) == [("F", 0), ("F", 1), ("F", 2), ("F", 3), ("B", 0), ("F", 4), ("B", 1),
                                         ("F", 5), ("B", 2), ("B", 3), ("B", 4), ("B", 5)]
    assert schedule("1f1b", 3, 4, 2) == [("F", 0), ("B", 0), ("F", 1), ("B", 1)]
    assert schedule("gpipe", 1, 4, 2) == [("F", 0), ("F", 1), ("B", 0), ("B", 1)]


@pytest.mark.parametrize("pipeline", ["1f1b", "gpipe"])
def test_pipeline_iteration_is_m_plus_p_minus_1_slots(pipeline):
    """With compute far above communication, both schedules take (m + p - 1)(t_F + t_B)
    on uniform stages (the pipeline bubble, Narayanan et al. 2021, 2.2)."""
    m, p = 6, 4
    model = LLM("toy", layers=4, hidden=64, seq=16, ffn=256, micro_batches=m, tflops=1e-4)
    sim = Simulation(topology.star(p, "100Gbps", "1us"))
    add_llm_training(sim, model, range(p), 2, Parallelism(pp=p), pipeline=pipeline)
    res = sim.run()
    attn, mlp = model.forward_flops()
    t_f = (attn + mlp) / (model.tflops * 1e12) * 1e9          # ns, one layer per stage
    slot = 3 * t_f
    d = res.iterations["duration_ns"]
    assert d[0] == pytest.approx((m + p - 1) * slot, rel=0.01)
    assert d[1] == pytest.approx(d[0], rel=1e-3)
    c = res.collectives
    assert (c["op"] == "sendrecv").sum() == 2 * 2 * (p - 1) * m


def platform(servers=8, gpus=8, **kw):
    return pf.rail_optimized(servers, gpus, "400Gbps", "1us", SU, **kw)


def test_gpt_and_mixtral_presets_run_on_64_gpus():
    sim = Simulation(platform())
    model, dims = LLM_PRESETS["gpt"].make(dict(layers=4, hidden=256, seq=256, micro_batches=2))
    add_llm_training(sim, model, range(64), 1, Parallelism.for_ranks(64, **dims), job="gpt")
    res = sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    c = res.collectives
    tp = (c["op"] == "allreduce") & (c["ranks"] == 8)
    assert tp.sum() == 4 * 2 * 2 * 4            # 4 stages x 2 TP groups (dp 2) x 2 micro-batches x 4 ARs
    assert ((c["op"] == "allreduce") & (c["ranks"] == 2)).sum() == 32  # one DP all-reduce per (stage, tp rank)
    assert set(c["job"]) == {"gpt"} and list(res.iterations["job"]) == ["gpt"]
    # TP stays inside servers: every network flow is a pipeline or a data-parallel transfer
    sim = Simulation(platform())
    model, dims = LLM_PRESETS["mixtral"].make(dict(layers=4, hidden=256, ffn=512, seq=256, micro_batches=2))
    dims.update(tp=2, ep=4)
    add_llm_training(sim, model, range(64), 1, Parallelism.for_ranks(64, **dims))
    res = sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    c = res.collectives
    a2a = c["op"] == "alltoall"
    assert a2a.sum() > 0 and (c["ranks"][a2a] == 4).all()
    assert model.source and "Jiang" in model.source


@pytest.mark.parametrize("preset", ["gpt", "mixtral"])
def test_presets_build_at_256_gpus(preset):
    sim = Simulation(platform(32, 8, servers_per_pod=16))
    model, dims = LLM_PRESETS[preset].make()
    add_llm_training(sim, model, range(256), 1, Parallelism.for_ranks(256, **dims))
    assert sim.n_nodes > 0


def jobs_scenario(placement, with_b=True):
    topo = {"kind": "rail_optimized", "servers": 16, "gpus_per_server": 2, "servers_per_pod": 4,
            "oversubscription": 4, "nic_link": {"rate": "100Gbps", "delay": "1us"},
            "scale_up": {"rate": "1600Gbps", "delay": "1us"}}
    a = {"kind": "workload", "model": "gpt", "job": "dense", "gpus": 16, "placement": placement,
         "params": {"layers": 2, "hidden": 512, "seq": 256, "micro_batches": 1},
         "parallelism": {"tp": 2, "pp": 1}, "iterations": 2}
    b = {"kind": "workload", "model": "mixtral", "job": "moe", "gpus": 16, "placement": placement,
         "params": {"layers": 2, "hidden": 512, "ffn": 1024, "seq": 1024, "micro_batches": 2},
         "parallelism": {"tp": 1, "pp": 1, "ep": 8}, "iterations": 2}
    return {"topology": topo, "traffic": [a, b] if with_b else [a]}


def test_two_jobs_share_a_fabric(tmp_path):
    scn = scenario.build(jobs_scenario("spread"))
    ranks = scn.sim.job_ranks
    assert not set(ranks["dense"]) & set(ranks["moe"])
    assert ranks["dense"].tolist()[:4] == [0, 1, 4, 5]             # every other server
    res = scn.sim.run()
    alone = scenario.build(jobs_scenario("spread", with_b=False)).sim.run()
    it = res.iterations
    dense = it["duration_ns"][it["job"] == "dense"]
    assert (dense > alone.iterations["duration_ns"] * 1.02).all()   # the MoE all-to-all slows it down
    res.write(tmp_path)
    assert (tmp_path / "iterations.csv").read_text().splitlines()[0].endswith(",job")
    assert (tmp_path / "collectives.csv").read_text().splitlines()[0].endswith(",job")
    packed = scenario.build(jobs_scenario("packed")).sim.job_ranks
    assert packed["dense"].tolist() == list(range(16)) and packed["moe"].tolist() == list(range(16, 32))


@pytest.mark.parametrize("change,key", [
    ({"ranks": [0, 1], "gpus": 2}, "traffic[0].gpus"),
    ({"placement": "random", "gpus": 2}, "traffic[0].placement"),
    ({"placement": "packed"}, "traffic[0].placement"),
    ({"gpus": 40}, "traffic[0].gpus"),
    ({"parallelism": {"tq": 2}}, "traffic[0].parallelism.tq"),
    ({"parallelism": {"tp": 3}}, "traffic[0].parallelism"),
    ({"parallelism": {"tp": 0}}, "traffic[0].parallelism.tp"),
    ({"parallelism": {"order": "tp-dp"}}, "traffic[0].parallelism.order"),
    ({"pipeline": "zb"}, "traffic[0].pipeline"),
    ({"pxn": "yes"}, "traffic[0].pxn"),
    ({"params": {"heads": 3}}, "traffic[0].params.heads"),
    ({"job": ""}, "traffic[0].job"),
])
def test_llm_yaml_errors(change, key):
    raw = jobs_scenario("packed", with_b=False)
    entry = {k: v for k, v in raw["traffic"][0].items() if k not in ("gpus", "placement")}
    raw["traffic"] = [{**entry, **change}]
    with pytest.raises(ScenarioError) as e:
        scenario.build(raw)
    assert e.value.key == key


def test_jobs_need_disjoint_ranks_and_names():
    raw = jobs_scenario("packed")
    raw["traffic"][1] = {**raw["traffic"][1], "ranks": list(range(8, 24))}
    del raw["traffic"][1]["gpus"], raw["traffic"][1]["placement"]
    with pytest.raises(ScenarioError) as e:
        scenario.build(raw)
    assert e.value.key == "traffic[1].ranks"
    raw = jobs_scenario("packed")
    raw["traffic"][1]["job"] = "dense"
    with pytest.raises(ScenarioError) as e:
        scenario.build(raw)
    assert e.value.key == "traffic[1].job"
    raw = jobs_scenario("packed")
    raw["traffic"][1] = {"kind": "workload", "model": "dlrm", "parallelism": {"tp": 2}, "gpus": 4}
    with pytest.raises(ScenarioError) as e:
        scenario.build(raw)
    assert e.value.key == "traffic[1].parallelism"
