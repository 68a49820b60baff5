"""The full-size LLM presets (rocesim.training.workloads.llm): FLOPs against closed forms,
parameter counts against the published sizes, graphs at 64-1024 GPUs, compute from GPUs."""
import numpy as np
import pytest

from rocesim import ScenarioError, Simulation, scenario
from rocesim.network import platform as pf
from rocesim.network.platform import ScaleUp
from rocesim.training.parallelism import Parallelism
from rocesim.training.workloads.gpus import GPUS
from rocesim.training.collectives import flow_count_estimate
from rocesim.training.workloads.llm import FULL, LLM_PRESETS, llm_graph, stage_layers
from rocesim.workload_api import add_llm_training

SU = ScaleUp(3600 * 10**9, 10**6)
# published sizes: Llama 3 model cards (8.03B, 70.6B, 405B), Brown et al. 2020 (175B),
# Jiang et al. 2024 (46.7B), DeepSeek-V3 report (671B, without its 14B MTP module)
PUBLISHED = {"llama3_8b": 8.03e9, "llama3_70b": 70.6e9, "llama3_405b": 405e9, "gpt3_175b": 175e9,
             "mixtral_8x7b": 46.7e9, "deepseek_v3": 671e9}


def test_every_full_size_preset_has_a_published_size():
    assert set(PUBLISHED) == set(FULL)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_parameter_count_matches_publication(name):
    model, _ = LLM_PRESETS[name].make()
    assert model.params() == pytest.approx(PUBLISHED[name], rel=0.02)
    assert model.source


def test_llama3_70b_layer_flops_closed_form():
    """GQA (64 query, 8 key/value heads of 128) and SwiGLU, per layer, b=1, s=8192."""
    model, _ = LLM_PRESETS["llama3_70b"].make()
    b, s, h, f, kv = 1, 8192, 8192, 28672, 8 * 128
    attn, mlp = model.forward_flops()
    assert attn == 2 * b * s * (2 * h * h + 2 * h * kv) + 4 * b * s * s * h
    assert mlp == 2 * b * s * 3 * h * f
    assert model.logits_flops() == 2 * b * s * h * 128256


def test_moe_layer_flops_closed_form():
    """Mixtral 8x7B: top-2 of 8 SwiGLU experts plus the router; DeepSeek-V3: MLA, top-8 of 256
    plus one shared expert of 2048, and its first three layers dense (SwiGLU 18432)."""
    model, _ = LLM_PRESETS["mixtral_8x7b"].make()
    T, h, f = 4096, 4096, 14336
    attn, mlp = model.forward_flops()
    assert attn == 2 * T * (2 * h * h + 2 * h * 1024) + 4 * T * T * h
    assert mlp == 2 * T * (2 * 3 * h * f + 8 * h)
    ds, _ = LLM_PRESETS["deepseek_v3"].make()
    T, h = 4096, 7168
    # MLA by hand: q down 7168x1536, q up 1536 x 128 heads x (128 + 64 RoPE), kv down 7168 x
    # (512 + 64), kv up 512 x 128 x (128 + 128), output 128 x 128 x 7168
    mla = 11_010_048 + 37_748_736 + 4_128_768 + 16_777_216 + 117_440_512
    attn, mlp = ds.forward_flops()
    assert ds.attention_params() == mla == 187_105_280
    assert attn == 2 * T * mla + 2 * T * T * 128 * (192 + 128)
    assert mlp == 2 * T * (9 * 3 * h * 2048 + 256 * h)
    assert ds.forward_flops(moe=False)[1] == 2 * T * 3 * h * 18432
    assert [ds.is_moe(i) for i in range(4)] == [False, False, False, True]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_matrix_flops_are_two_per_weight_and_token(name):
    """Two routes to one number: a forward pass's matrix FLOPs (without the attention scores)
    are 2 per token and weight used (the input embedding is a lookup; MoE layers use top_k
    routed and the shared experts, Kaplan et al. 2020's C = 2N per token, forward)."""
    m, _ = LLM_PRESETS[name].make()
    T = m.micro_batch * m.seq
    scores = 2 * m.micro_batch * m.seq ** 2 * m.attention.score_width(m.hidden)
    flops = sum(sum(m.forward_flops(m.is_moe(i))) - scores for i in range(m.layers)) + m.logits_flops()
    unused = (m.layers - m.dense_layers) * (m.experts - m.top_k) * m.expert_params() if m.experts else 0
    used = m.params() - unused - (0 if m.tied else m.vocab * m.hidden)
    assert flops == 2 * T * used


def test_stages_take_layers_from_the_ends():
    assert stage_layers(126, 16) == [7] + [8] * 14 + [7]        # Llama 3 405B (Dubey et al. 2024, 3.3.2)
    assert stage_layers(61, 16) == [3] + [4] * 13 + [3, 3]       # DeepSeek-V3: stage 0 = its 3 dense layers
    assert stage_layers(80, 8) == [10] * 8
    with pytest.raises(ScenarioError):
        stage_layers(4, 8)


def test_compute_comes_from_gpu_and_mfu_or_tflops():
    model, _ = LLM_PRESETS["llama3_70b"].make()
    assert model.tflops == pytest.approx(989 * 0.41)
    assert LLM_PRESETS["llama3_70b"].make(dict(gpu="B200", mfu=0.5))[0].tflops == pytest.approx(1125)
    assert LLM_PRESETS["llama3_70b"].make(dict(gpu="B200", tflops=300))[0].tflops == 300
    assert LLM_PRESETS["gpt"].make()[0].tflops == pytest.approx(312 * 0.48)   # ~150, as before
    assert {k: v[0] for k, v in GPUS.items()} == {"A100": 312, "H100": 989, "B200": 2250}
    for change, key in (({"gpu": "V100"}, "params.gpu"), ({"mfu": 1.5}, "params.mfu"),
                        ({"tflops": -1}, "params.tflops")):
        with pytest.raises(ScenarioError) as e:
            LLM_PRESETS["deepseek_v3"].make(change)
        assert e.value.key == key


def fitted(name, gpus, **params):
    """A preset with `params` and its default parallelism cut to fit `gpus` (pp halved,
    ep capped at dp)."""
    model, dims = LLM_PRESETS[name].make(params)
    while dims["tp"] * dims["pp"] * dims["cp"] > gpus:
        dims["pp"] //= 2
    if "ep" in dims:
        dims["ep"] = min(dims["ep"], gpus // (dims["tp"] * dims["pp"] * dims["cp"]))
    return model, Parallelism.for_ranks(gpus, **dims)


@pytest.mark.parametrize("gpus", [64, 256, 1024])
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_full_size_preset_graph_builds(name, gpus):
    """One micro-batch: per micro-batch, 4 TP all-reduces per layer and TP group, 4 all-to-alls
    per MoE layer and EP group, a send each way per stage boundary; every rank computes, and
    a rank's compute is 3 x its stage's forward FLOPs at the preset's TFLOP/s."""
    model, par = fitted(name, gpus, micro_batches=1)
    servers = gpus // 8
    platform = pf.rail_optimized(servers, 8, "400Gbps", "1us", SU, servers_per_pod=min(servers, 32))
    # the textbook ring keeps the 1024-GPU graphs small; NCCL's algorithms: the test below
    tg = llm_graph(platform, model, range(gpus), 1, par, algorithms={"allreduce": "ring"})
    ops = np.array([r.op for r in tg.collectives])
    tp_group = np.array([r.ranks.size == par.tp and np.ptp(r.ranks) == par.tp - 1 for r in tg.collectives])
    groups = gpus // par.pp
    assert ((ops == "allreduce") & tp_group).sum() == (4 * model.layers * groups // par.tp if par.tp > 1 else 0)
    moe = sum(map(model.is_moe, range(model.layers)))
    assert (ops == "alltoall").sum() == (4 * moe * groups // par.ep if par.ep > 1 else 0)
    assert (ops == "sendrecv").sum() == 2 * (par.pp - 1)
    g = tg.graph
    own = (g.column("compute") == 1) & (g.column("collective") == -1)
    per_rank = np.bincount(g.column("src")[own], g.column("duration")[own], minlength=gpus)
    stage = par.coords()["pp"]
    counts = stage_layers(model.layers, par.pp)
    first = np.cumsum([0] + counts)
    for s in (0, par.pp - 1):
        flops = sum(sum(model.forward_flops(model.is_moe(i))) for i in range(first[s], first[s + 1]))
        flops += model.logits_flops() if s == par.pp - 1 else 0
        expect = 3 * flops / (par.tp * par.cp) / (model.tflops * 1e12) * 1e12
        assert per_rank[stage == s] == pytest.approx(expect, rel=1e-6)
    assert g.n < 4600 * gpus       # the most: Llama 3 8B's ring all-reduce over 1024 ranks, 2 x 1023 steps each,
    #                                with PXN's second leg on the hops that change servers and rails


def test_llama3_70b_with_nccl_algorithms_at_1024_gpus_stays_within_the_memory_estimate():
    """NCCL's algorithms (the default) on 1024 GPUs: each collective's nodes stay within the
    memory guard's estimate (`flow_count_estimate`, capped by nccl.max_transfers)."""
    model, par = fitted("llama3_70b", 1024, micro_batches=1)
    platform = pf.rail_optimized(128, 8, "400Gbps", "1us", SU, servers_per_pod=32)
    tg = llm_graph(platform, model, range(1024), 1, par)
    g = tg.graph
    per = np.bincount(g.column("collective")[g.column("collective") >= 0])
    for r in tg.collectives:
        if r.op != "sendrecv":
            assert per[r.id] <= flow_count_estimate(r.op, r.algorithm, r.ranks.size, 1, r.size)
    assert {r.algorithm for r in tg.collectives if r.op == "allreduce"} <= {"nccl_ring", "nccl_tree"}


@pytest.mark.parametrize("name", ["llama3_70b", "llama3_405b", "gpt3_175b", "deepseek_v3"])
def test_full_size_preset_iteration_on_64_gpus(name):
    """One micro-batch through the whole pipeline at 64 GPUs (TP and EP inside the servers,
    PP across them): the stages' compute in sequence (3 x forward each) plus, on the
    scale-up domain, each TP ring all-reduce's 2(p-1)/p and each all-to-all's (p-1)/p of its
    bytes over a GPU's port (4 of each per layer); within 3% (latencies, the stage-to-stage
    sends, the gradients)."""
    model, par = fitted(name, 64, micro_batches=1)
    sim = Simulation(pf.rail_optimized(8, 8, "400Gbps", "1us", SU), nic={"payload": "4000B"})
    add_llm_training(sim, model, range(64), 1, par)
    res = sim.run(progress=False)
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    flops = sum(sum(model.forward_flops(model.is_moe(i))) for i in range(model.layers)) + model.logits_flops()
    compute_s = 3 * flops / (par.tp * par.cp) / (model.tflops * 1e12)
    act = model.micro_batch * model.seq * model.hidden * 2
    tp_s = 2 * (par.tp - 1) / par.tp * act * 8 / SU.rate_bps
    a2a_s = (par.ep - 1) / par.ep * act * model.top_k / (par.tp * par.cp) * 8 / SU.rate_bps
    moe = sum(map(model.is_moe, range(model.layers)))
    expect_ns = (compute_s + 4 * model.layers * tp_s + 4 * moe * a2a_s) * 1e9
    assert expect_ns <= res.iterations["duration_ns"][0] <= 1.03 * expect_ns


def test_full_size_preset_in_yaml():
    raw = {"topology": {"kind": "rail_optimized", "servers": 8, "gpus_per_server": 8,
                        "nic_link": {"rate": "400Gbps", "delay": "1us"},
                        "scale_up": {"rate": "3600Gbps", "delay": "1us"}},
           "traffic": [{"kind": "workload", "model": "deepseek_v3", "params": {"micro_batches": 1, "gpu": "B200"},
                        "parallelism": {"pp": 16, "ep": 4}}]}
    assert scenario.build(raw).sim.n_nodes > 0
    raw["traffic"][0]["params"]["gpu"] = "H200"
    with pytest.raises(ScenarioError) as e:
        scenario.build(raw)
    assert e.value.key == "traffic[0].params.gpu"
