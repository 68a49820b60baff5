"""Large language models with Megatron-style parallelism: TP, CP, EP, DP and pipeline
parallelism with micro-batches, as one dependency graph per run.

Per micro-batch and Transformer layer, on every rank of a pipeline stage (Shoeybi et al.
2019; Narayanan et al., SC 2021):

* forward: attention compute, an all-reduce of the activations in the TP group (b s h
  values), then the MLP compute and another TP all-reduce; in an MoE layer the MLP is the
  router's all-to-all dispatch in the EP group, the experts' compute, and the all-to-all
  combine (Lepikhin et al. 2021, GShard; Megatron-LM's expert parallelism); with CP > 1
  the attention first all-gathers the keys and values of the whole sequence in the CP
  group (ring attention moves the same bytes);
* backward: the same communication in reverse order (the CP all-gather becomes a
  reduce-scatter), twice the forward compute;
* between stages, each rank sends its share of the activations (b s h / (tp cp) values:
  Megatron's scatter-gather, Narayanan et al. 2021, 4.1) to its peer in the next stage
  (forward) and the gradients back (backward), one flow per rank and micro-batch;
* the stages run the 1F1B schedule (PipeDream-Flush, Narayanan et al. 2021, 2.2) or
  GPipe's (all forwards, then all backwards);
* after a stage's last backward, its gradients are all-reduced in the DP group
  (expert weights in the expert-data-parallel group), and the next iteration's first
  forward of that stage waits for them and the optimizer step.

Values are 2 bytes (bf16). Compute is FLOPs over `tflops` per GPU: a dense layer does
24 b s h^2 + 4 b s^2 h FLOPs forward (Narayanan et al. 2021, eq. 3 without the logits),
split over the TP and CP ranks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocesim.config import DEFAULT_FLOW_PRIORITY
from rocesim.errors import ScenarioError
from rocesim.settings import Section
from rocesim.training.collectives import DEFAULT_ALGORITHM, add_sendrecv, append_collective
from rocesim.training.graph import Graph, TrainingGraph, TrainingInfo
from rocesim.training.parallelism import SCHEDULES, Parallelism, schedule
from rocesim.training.workloads.presets import TFLOPS, Preset, count

BYTES = 2          # bf16


@dataclass(frozen=True)
class LLM:
    """A decoder-only Transformer and its training setup (per iteration)."""

    name: str
    layers: int
    hidden: int
    seq: int
    ffn: int                      # MLP inner width
    micro_batch: int = 1
    micro_batches: int = 8        # per iteration, per data-parallel replica
    kv_ratio: float = 1.0         # key/value heads over query heads (GQA < 1)
    gated: bool = False           # SwiGLU MLP: three matrices instead of two
    experts: int = 0              # MoE: experts per layer (0: dense)
    top_k: int = 1
    tflops: float = 150.0         # effective TFLOP/s per GPU
    optimizer_us: float = 0.0     # optimizer step after the gradients are reduced
    source: str = ""

    def attention_params(self) -> int:
        h = self.hidden
        return int(2 * h * h + 2 * h * h * self.kv_ratio)

    def expert_params(self) -> int:
        return (3 if self.gated else 2) * self.hidden * self.ffn

    def forward_flops(self) -> tuple[float, float]:
        """Forward FLOPs of one layer for one micro-batch: (attention part, MLP part)."""
        b, s, h = self.micro_batch, self.seq, self.hidden
        attn = 2 * b * s * self.attention_params() + 4 * b * s * s * h
        mlp = 2 * b * s * self.expert_params() * (self.top_k if self.experts else 1)
        return attn, mlp


def gpt(layers: int, hidden: int, seq: int, micro_batch: int, micro_batches: int, tp: int, pp: int, cp: int,
        tflops: float) -> tuple[LLM, dict]:
    """A GPT-style dense LLM with Megatron TP x PP x DP.

    Defaults: the 1.7B-parameter model of Narayanan et al. (SC 2021, Table 1: 24 layers,
    hidden 2304), GPT-3's sequence length 2048 (Brown et al. 2020), MLP width 4h; TP 8 and
    PP 4 as the paper runs its larger models (raise layers and hidden for those: 76.1B is
    60 layers x 10240 at TP 8, PP 4 on 1024 GPUs). `tflops` about half of an A100's 312.
    """
    model = LLM("gpt", layers, hidden, seq, 4 * hidden, micro_batch, micro_batches, tflops=tflops,
                source="Megatron-LM (Narayanan et al. 2021, Table 1, 1.7B); GPT-3 (Brown et al. 2020)")
    return model, dict(tp=tp, pp=pp, cp=cp)


def mixtral(layers: int, hidden: int, ffn: int, seq: int, micro_batch: int, micro_batches: int, experts: int,
            top_k: int, tp: int, pp: int, ep: int, cp: int, tflops: float) -> tuple[LLM, dict]:
    """A Mixtral-style sparse MoE LLM: 8 experts per layer, 2 of them per token, SwiGLU
    experts and grouped-query attention with 8 key/value heads for 32 query heads
    (Jiang et al. 2024, "Mixtral of Experts", Table 1: 32 layers, hidden 4096, MLP 14336,
    context 32k). The defaults keep those ratios at a quarter of the width and depth, so
    that 1024 GPUs run in minutes; layers=32, hidden=4096, ffn=14336 give Mixtral 8x7B.
    Experts are spread over EP 8 data-parallel ranks, as Megatron-LM runs MoE models.
    """
    model = LLM("mixtral", layers, hidden, seq, ffn, micro_batch, micro_batches, kv_ratio=0.25, gated=True,
                experts=experts, top_k=top_k, tflops=tflops,
                source="Mixtral of Experts (Jiang et al. 2024, Table 1), scaled; Megatron-LM expert parallelism")
    return model, dict(tp=tp, pp=pp, ep=ep, cp=cp)


LLM_PRESETS = {
    "gpt": Preset(gpt, Section(
        "a dense GPT (Megatron-LM's 1.7B model, Narayanan et al. 2021)",
        layers=count(24, "Transformer layers"), hidden=count(2304, "hidden size"), seq=count(2048, "sequence length"),
        micro_batch=count(1, "micro-batch size"), micro_batches=count(8, "micro-batches per iteration"),
        tp=count(8, "default tensor parallelism"), pp=count(4, "default pipeline stages"),
        cp=count(1, "default context parallelism"), tflops=TFLOPS)),
    "mixtral": Preset(mixtral, Section(
        "a Mixtral-style MoE (Jiang et al. 2024) at a quarter of 8x7B's width and depth",
        layers=count(8, "Transformer layers"), hidden=count(1024, "hidden size"), ffn=count(3584, "expert MLP width"),
        seq=count(4096, "sequence length"), micro_batch=count(1, "micro-batch size"),
        micro_batches=count(4, "micro-batches per iteration"), experts=count(8, "experts per layer"),
        top_k=count(2, "experts per token"), tp=count(1, "default tensor parallelism"),
        pp=count(4, "default pipeline stages"), ep=count(8, "default expert parallelism"),
        cp=count(1, "default context parallelism"), tflops=TFLOPS)),
}
def add_llm_training(sim, model: LLM, ranks, iterations: int, par: Parallelism, **options) -> TrainingInfo:
    """Add `iterations` iterations of `model` under `par` on `ranks` (GPU ranks) to `sim`
    (options as `llm_graph`'s)."""
    return sim.add_workload(llm_graph(sim.platform, model, ranks, iterations, par, check=sim.workload_check,
                                      nccl=sim.nccl, **options))


def llm_graph(platform, model: LLM, ranks, iterations: int, par: Parallelism, *, algorithms=None, chunks=1,
              prio=DEFAULT_FLOW_PRIORITY, start=0, tag=0, job="", pipeline="1f1b", pxn=False,
              check=None, nccl=None) -> TrainingGraph:
    """`iterations` iterations of `model` under `par` on `ranks` (GPU ranks of `platform`)
    as job `job`; `check(what, nodes)` may refuse the whole run after its first iteration;
    `nccl` shapes the nccl_* algorithms."""
    ranks = np.asarray(ranks, np.int64)
    if par.size != ranks.size:
        raise ScenarioError("parallelism", f"tp x cp x dp x pp = {par.size} is not the job's {ranks.size} ranks")
    if pipeline not in SCHEDULES:
        raise ScenarioError("pipeline", f"unknown schedule {pipeline!r}; valid: {', '.join(SCHEDULES)}")
    if model.layers % par.pp:
        raise ScenarioError("parallelism.pp", f"pp={par.pp} does not divide the {model.layers} layers")
    if model.experts and model.experts % par.ep:
        raise ScenarioError("parallelism.ep", f"ep={par.ep} does not divide the {model.experts} experts")
    if iterations < 1:
        raise ScenarioError("iterations", "must be at least 1")
    algorithms = {**DEFAULT_ALGORITHM, **(algorithms or {})}
    hosts = platform.host_of(ranks)
    coords = par.coords()
    stage_of = coords["pp"]
    g = Graph()
    records = []
    tpcp = par.tp * par.cp
    tokens = model.micro_batch * model.seq
    act = tokens * model.hidden * BYTES                       # one micro-batch's activations
    attn_f, mlp_f = model.forward_flops()
    ps = lambda flops: max(1, int(flops / tpcp / (model.tflops * 1e12) * 1e12))
    attn_ps, mlp_ps = ps(attn_f), ps(mlp_f / (par.ep if model.experts else 1))
    per_stage = model.layers // par.pp
    dense_grad = per_stage * (model.attention_params() + (0 if model.experts else model.expert_params()))
    expert_grad = per_stage * model.expert_params() * (model.experts // par.ep) if model.experts else 0
    # a stage's groups of each kind, as job rank indices
    groups = {d: par.groups(d) for d in ("tp", "cp", "dp", "ep", "edp")}
    by_stage = {d: [gr[stage_of[gr[:, 0]] == s] for s in range(par.pp)] for d, gr in groups.items()}
    last = np.full(ranks.size, -1, np.int64)                  # per rank: its compute stream's last node

    def after(ids, parents):
        ok = parents >= 0
        g.depend(ids[ok], parents[ok])

    def compute(members, duration, it):
        ids = g.compute(hosts[members], duration, iteration=it, tag=tag, start=start)
        after(ids, last[members])
        last[members] = ids

    def collective(dim, s, op, size, it, algorithm=None):
        if size <= 0:
            return
        for members in by_stage[dim][s]:
            if members.size < 2:
                continue
            rec = append_collective(g, op, algorithm or algorithms[op], ranks[members], int(size), chunks=chunks,
                                 prio=prio, cid=len(records), iteration=it, tag=tag,
                                 platform=platform, pxn=pxn, job=job, nccl=nccl)
            after(rec.start_nodes, last[members])
            last[members] = rec.done_nodes
            records.append(rec)

    def sendrecv(src, dst, size, it):
        rec = add_sendrecv(g, ranks[src], ranks[dst], int(size), platform=platform, prio=prio,
                           cid=len(records), iteration=it, tag=tag, chunks=chunks,
                           pxn=pxn, job=job)
        k = src.size
        after(rec.start_nodes[:k], last[src])
        after(rec.start_nodes[k:], rec.start_nodes[:k])            # (not roots of the graph)
        records.append(rec)
        return rec.done_nodes[k:]                               # when each receiver has it

    def layer_pass(s, members, it, backward):
        mult = 2 if backward else 1
        steps = [("attn",), ("tp",), ("mlp",), ("tp",)]
        if par.cp > 1:
            steps.insert(0, ("cp",))
        if model.experts:
            steps[-2:-1] = [("a2a",), ("mlp",), ("a2a",)]
        if backward:
            steps = steps[::-1]
        moe_tokens = tokens // tpcp * model.top_k * model.hidden * BYTES
        for (step,) in steps:
            if step == "attn":
                compute(members, mult * attn_ps, it)
            elif step == "mlp":
                compute(members, mult * mlp_ps, it)
            elif step == "tp":
                collective("tp", s, "allreduce", act // par.cp, it)
            elif step == "cp":
                kv = 2 * act * model.kv_ratio // par.tp
                collective("cp", s, "reducescatter" if backward else "allgather", kv, it)
            else:
                collective("ep", s, "alltoall", moe_tokens, it, algorithms.get("moe_alltoall"))

    stage_ranks = [np.flatnonzero(stage_of == s) for s in range(par.pp)]
    boundary = act // tpcp                                          # per rank, per micro-batch
    for it in range(iterations):
        if it == 1 and check is not None:
            check(f"{iterations:,} iterations of {model.name} training", g.n * iterations)
        arrived = {}                                                # (kind, stage, j) -> receiver nodes
        plans = [schedule(pipeline, s, par.pp, model.micro_batches) for s in range(par.pp)]
        cursor = [0] * par.pp
        # run the stages' schedules in an order that respects the data dependencies
        while any(cursor[s] < len(plans[s]) for s in range(par.pp)):
            progressed = False
            for s in range(par.pp):
                while cursor[s] < len(plans[s]):
                    kind, j = plans[s][cursor[s]]
                    need = (kind, s - 1, j) if kind == "F" and s > 0 else \
                        (kind, s + 1, j) if kind == "B" and s < par.pp - 1 else None
                    if need is not None and need not in arrived:
                        break
                    members = stage_ranks[s]
                    if need is not None:
                        recv = arrived.pop(need)
                        join = g.compute(hosts[members], 0, iteration=it, tag=tag)
                        after(join, last[members])
                        after(join, recv)
                        last[members] = join
                    for _ in range(per_stage):
                        layer_pass(s, members, it, kind == "B")
                    peer = s + 1 if kind == "F" else s - 1
                    if 0 <= peer < par.pp:
                        arrived[(kind, s, j)] = sendrecv(members, stage_ranks[peer], boundary, it)
                    cursor[s] += 1
                    progressed = True
            if not progressed:
                raise ScenarioError("pipeline", "the pipeline schedule waits for itself")  # cannot happen
        # gradients, then the optimizer: the stage's next forward waits for both (the
        # collectives' done nodes become the last nodes of the ranks' streams)
        for s in range(par.pp):
            collective("dp", s, "allreduce", dense_grad * BYTES // par.tp, it, algorithms.get("gradients"))
            collective("edp", s, "allreduce", expert_grad * BYTES // par.tp, it, algorithms.get("gradients"))
            if model.optimizer_us > 0:
                compute(stage_ranks[s], int(model.optimizer_us * 1e6), it)
    end = g.compute(hosts, 0, iteration=iterations - 1, tag=tag)
    after(end, last)
    return TrainingGraph(g, records, iterations, job)
