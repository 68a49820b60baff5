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

Values are 2 bytes (bf16). Compute is FLOPs over the effective TFLOP/s per GPU (`tflops`;
the presets take it from a GPU's peak x MFU, `gpus.py`), split over the TP and CP ranks.
A layer's forward FLOPs are 2 per weight and token for its matrices plus the attention
scores: 2 b s^2 per unit of query-key and of value width, i.e. 24 b s h^2 + 4 b s^2 h for a
GPT layer (Narayanan et al. 2021, eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh) with
recomputation counts four forward passes), with grouped-query attention's smaller key
and value projections and SwiGLU's three MLP matrices (Shazeer 2020) where the model has
them; causal masking is not discounted (as in eq. 3). The logits (2 b s h V forward, the
V/16lh term of eq. 3) run on the last stage, split over TP (Megatron's vocabulary-parallel
output layer); the embedding lookup on the first stage has no matrix FLOPs. MoE layers
compute top_k routed and the shared experts per token, and the router's h x E matrix; with
balanced routing a rank computes its own tokens' share, whatever the EP degree. The first
and last stages' gradients include the embedding and the output layer. Not modelled:
activation recomputation, the vocabulary-parallel cross-entropy's small all-reduces, and
the all-reduce of tied embeddings between the first and the last stage.
Stages hold ceil(L/pp) layers, the missing ones taken from the last and first stages
first (Llama 3 405B: 126 layers on 16 stages, Dubey et al. 2024, 3.3.2).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from rocesim.config import DEFAULT_FLOW_PRIORITY
from rocesim.errors import ScenarioError
from rocesim.settings import Section
from rocesim.training.algorithms import DEFAULT_ALGORITHM
from rocesim.training.collectives import (CollectiveBatch, Collectives, Templates, add_sendrecv,
                                         append_collectives, closed_form_rows, node_rows)
from rocesim.training.graph import Graph, Progress, TrainingGraph
from rocesim.training.nccl import PXN_DEFAULT
from rocesim.training.parallelism import SCHEDULES, Parallelism, pipeline_order
from rocesim.training.workloads.gpus import compute_settings, effective_tflops
from rocesim.training.workloads.presets import Preset, count

BYTES = 2          # bf16
LAYERS_AT_ONCE = 256    # layers of a stage's pass built between two reports to the guard


@dataclass(frozen=True)
class Attention:
    """Self-attention's shape: `heads` query heads of `head_dim` values (0: hidden / heads),
    `kv_heads` key/value heads (0: as many as query heads; fewer: grouped-query attention,
    Ainslie et al. 2023).

    Multi-head latent attention (MLA, DeepSeek-V2/V3) when `kv_rank` > 0: queries go through
    a `q_rank` latent (0: none), keys and values through a shared `kv_rank` latent that is
    up-projected per head, and each query and key gets `rope_dim` more dimensions for the
    decoupled rotary part (the key's shared by the heads). Its projections are counted
    exactly (DeepSeek-V3 report, 2.1.1); its scores as standard attention's with query-key
    width head_dim + rope_dim and value width head_dim; CP all-gathers the latent
    (kv_rank + rope_dim values per token) and each rank up-projects it. The latents'
    RMSNorms are left out (a few thousand parameters).
    """

    heads: int = 1
    kv_heads: int = 0
    head_dim: int = 0
    q_rank: int = 0
    kv_rank: int = 0
    rope_dim: int = 0

    def _dims(self, hidden: int) -> tuple[int, int, int]:
        return self.heads, self.kv_heads or self.heads, self.head_dim or hidden // self.heads

    def params(self, hidden: int) -> int:
        """Weights of the query, key, value and output projections."""
        n, kv, d = self._dims(hidden)
        qk = d + self.rope_dim
        q = hidden * self.q_rank + self.q_rank * n * qk if self.q_rank else hidden * n * qk
        if self.kv_rank:
            k_v = hidden * (self.kv_rank + self.rope_dim) + self.kv_rank * n * 2 * d
        else:
            k_v = 2 * hidden * kv * d
        return q + k_v + n * d * hidden

    def score_width(self, hidden: int) -> int:
        """Query-key plus value width over all heads: the scores cost 2 b s^2 x this."""
        n, _, d = self._dims(hidden)
        return n * (2 * d + self.rope_dim)

    def kv_values(self, hidden: int) -> int:
        """Key and value values per token (what context parallelism gathers)."""
        _, kv, d = self._dims(hidden)
        return self.kv_rank + self.rope_dim if self.kv_rank else 2 * kv * d


@dataclass(frozen=True)
class LLM:
    """A decoder-only Transformer and its training setup (per iteration).

    MoE models have `experts` routed experts of width `expert_ffn` (0: ffn) per MoE layer,
    `top_k` of them per token, plus `shared_experts` every token uses (DeepSeekMoE); the
    first `dense_layers` layers have a dense MLP of width `ffn` instead. `vocab` > 0 adds
    the embedding (first stage) and the output layer (last stage; `tied`: the same matrix).
    """

    name: str
    layers: int
    hidden: int
    seq: int
    ffn: int                      # MLP inner width (dense layers)
    micro_batch: int = 1
    micro_batches: int = 8        # per iteration, per data-parallel replica
    attention: Attention = field(default_factory=Attention)
    gated: bool = False           # SwiGLU MLP: three matrices instead of two
    experts: int = 0              # MoE: routed experts per layer (0: dense)
    top_k: int = 1
    shared_experts: int = 0
    expert_ffn: int = 0
    dense_layers: int = 0         # MoE models: the first layers are dense
    vocab: int = 0
    tied: bool = False
    tflops: float = 150.0         # effective TFLOP/s per GPU
    optimizer_us: float = 0.0     # optimizer step after the gradients are reduced
    source: str = ""

    def attention_params(self) -> int:
        return self.attention.params(self.hidden)

    def mlp_params(self) -> int:
        """A dense layer's MLP weights."""
        return (3 if self.gated else 2) * self.hidden * self.ffn

    def expert_params(self) -> int:
        """One expert's weights."""
        return (3 if self.gated else 2) * self.hidden * (self.expert_ffn or self.ffn)

    def is_moe(self, layer: int) -> bool:
        return self.experts > 0 and layer >= self.dense_layers

    def replicated_params(self, moe: bool) -> int:
        """A layer's weights every data-parallel rank holds: attention and the dense MLP, or
        in an MoE layer the router and the shared experts."""
        mlp = self.hidden * self.experts + self.shared_experts * self.expert_params() if moe else self.mlp_params()
        return self.attention_params() + mlp

    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied else 2)

    def params(self) -> int:
        """All weights, every expert included (norms and learned positions left out: under
        0.02% of any preset)."""
        moe = sum(map(self.is_moe, range(self.layers)))
        return (self.layers * self.attention_params() + (self.layers - moe) * self.mlp_params()
                + moe * (self.replicated_params(True) - self.attention_params() + self.experts * self.expert_params())
                + self.embedding_params())

    def forward_flops(self, moe: bool | None = None) -> tuple[float, float]:
        """Forward FLOPs of one layer for one micro-batch: (attention part, MLP part); `moe`
        (default: whether the model has experts) picks an MoE or a dense layer."""
        moe = bool(self.experts) if moe is None else moe
        b, s, h = self.micro_batch, self.seq, self.hidden
        attn = 2 * b * s * self.attention_params() + 2 * b * s * s * self.attention.score_width(h)
        if moe:
            mlp = 2 * b * s * ((self.top_k + self.shared_experts) * self.expert_params() + h * self.experts)
        else:
            mlp = 2 * b * s * self.mlp_params()
        return attn, mlp

    def logits_flops(self) -> float:
        """Forward FLOPs of the output layer for one micro-batch (Narayanan et al. 2021, eq. 3)."""
        return 2 * self.micro_batch * self.seq * self.hidden * self.vocab


def stage_layers(layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage: ceil(layers / pp) each, the missing ones taken one by one
    from the last, the first, the second to last... stage."""
    if pp > layers:
        raise ScenarioError("parallelism.pp", f"pp={pp} is more stages than the {layers} layers")
    base = -(-layers // pp)
    counts = [base] * pp
    for i in range(base * pp - layers):
        counts[pp - 1 - i // 2 if i % 2 == 0 else i // 2] -= 1
    return counts


def gpt(layers: int, hidden: int, seq: int, micro_batch: int, micro_batches: int, tp: int, pp: int, cp: int,
        gpu: str, mfu: float, tflops: float | None) -> tuple[LLM, dict]:
    """A GPT-style dense LLM with Megatron TP x PP x DP.

    Defaults: the 1.7B-parameter model of Narayanan et al. (SC 2021, Table 1: 24 layers,
    hidden 2304), GPT-3's sequence length 2048 (Brown et al. 2020), MLP width 4h; TP 8 and
    PP 4 as the paper runs its larger models. No embedding or logits. An A100 at 48%
    (~150 TFLOP/s; the paper reaches 44-52% of the peak). `gpt3_175b` is GPT-3 itself.
    """
    model = LLM("gpt", layers, hidden, seq, 4 * hidden, micro_batch, micro_batches,
                tflops=effective_tflops(gpu, mfu, tflops),
                source="Megatron-LM (Narayanan et al. 2021, Table 1, 1.7B); GPT-3 (Brown et al. 2020)")
    return model, dict(tp=tp, pp=pp, cp=cp)


def mixtral(layers: int, hidden: int, ffn: int, seq: int, micro_batch: int, micro_batches: int, experts: int,
            top_k: int, tp: int, pp: int, ep: int, cp: int, gpu: str, mfu: float,
            tflops: float | None) -> tuple[LLM, dict]:
    """A Mixtral-style sparse MoE LLM: 8 experts per layer, 2 of them per token, SwiGLU
    experts and grouped-query attention with 8 key/value heads for 32 query heads
    (Jiang et al. 2024, "Mixtral of Experts", Table 1). The defaults keep those ratios at a
    quarter of the width and depth (no embedding or logits), so that 1024 GPUs run in
    minutes; `mixtral_8x7b` is the full model. Experts are spread over EP 8 data-parallel
    ranks, as Megatron-LM runs MoE models.
    """
    model = LLM("mixtral", layers, hidden, seq, ffn, micro_batch, micro_batches, Attention(32, 8), gated=True,
                experts=experts, top_k=top_k, tflops=effective_tflops(gpu, mfu, tflops),
                source="Mixtral of Experts (Jiang et al. 2024, Table 1), scaled; Megatron-LM expert parallelism")
    return model, dict(tp=tp, pp=pp, ep=ep, cp=cp)


# Full-size models: the architecture as published; layers, sequence, batch, parallelism and
# compute are parameters (the defaults: the source's training setup where it gives one).
LLAMA3 = "The Llama 3 Herd of Models (Dubey et al. 2024), Table 3; vocabulary 128,256 (the released tokenizer)"
FULL = {
    "llama3_8b": (LLM("llama3_8b", 32, 4096, 8192, 14336, micro_batches=2, attention=Attention(32, 8), gated=True,
                      vocab=128256, source=LLAMA3),
                  dict(tp=1, pp=1), ("H100", 0.41),
                  "Llama 3 8B (Dubey et al. 2024, Table 3): 32 layers, hidden 4096, SwiGLU 14336, GQA 32/8 heads, "
                  "seq 8192; data parallel (no published layout; a distributed optimizer, whose reduce-scatter and "
                  "all-gather move an all-reduce's bytes, fits it on 80 GB); 2 micro-batches: 16M tokens at 1024 "
                  "GPUs (Llama 3's final batch, 3.4.1); H100 at 41% (Table 4)"),
    "llama3_70b": (LLM("llama3_70b", 80, 8192, 8192, 28672, micro_batches=64, attention=Attention(64, 8),
                       gated=True, vocab=128256, source=LLAMA3),
                   dict(tp=8, pp=8), ("H100", 0.41),
                   "Llama 3 70B (Dubey et al. 2024, Table 3): 80 layers, hidden 8192, SwiGLU 28672, GQA 64/8 heads, "
                   "seq 8192; TP 8 x PP 8; 64 micro-batches: 8M tokens at 1024 GPUs (DP 16; Llama 3's batch from "
                   "252M to 2.87T tokens, 3.4.1); H100 at 41% (Table 4)"),
    "llama3_405b": (LLM("llama3_405b", 126, 16384, 8192, 53248, micro_batches=16, attention=Attention(128, 8),
                        gated=True, vocab=128256, source=LLAMA3),
                    dict(tp=8, pp=16), ("H100", 0.41),
                    "Llama 3 405B (Dubey et al. 2024, Table 3): 126 layers, hidden 16384, SwiGLU 53248, GQA 128/8 "
                    "heads, seq 8192; TP 8 x PP 16 and 16 micro-batches per DP replica (Table 4: 16,384 GPUs, "
                    "DP 128, 16M tokens); H100 at 41% (Table 4: 38-43%)"),
    "gpt3_175b": (LLM("gpt3_175b", 96, 12288, 2048, 4 * 12288, micro_batches=128, attention=Attention(96),
                      vocab=50257, tied=True,
                      source="Language Models are Few-Shot Learners (Brown et al. 2020), Table 2.1; Megatron-LM "
                             "(Narayanan et al. 2021), Table 1"),
                  dict(tp=8, pp=16), ("A100", 0.48),
                  "GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, hidden 12288, 96 heads, MLP 4h, seq 2048, "
                  "vocabulary 50257 (tied); TP 8 x PP 16 with 128 micro-batches per replica, as Megatron-LM "
                  "trains it on 1536 A100s (Narayanan et al. 2021, Table 1: batch 1536); A100 at 48%"),
    "mixtral_8x7b": (LLM("mixtral_8x7b", 32, 4096, 4096, 14336, micro_batches=4, attention=Attention(32, 8),
                         gated=True, experts=8, top_k=2, vocab=32000,
                         source="Mixtral of Experts (Jiang et al. 2024), Table 1"),
                     dict(tp=1, pp=4, ep=8), ("H100", 0.4),
                     "Mixtral 8x7B (Jiang et al. 2024, Table 1): 32 layers, hidden 4096, 8 SwiGLU experts of "
                     "14336, top-2, GQA 32/8 heads, vocabulary 32000; seq 4096 (context up to 32768); no published "
                     "training setup: PP 4 x EP 8, 4 micro-batches (4M tokens at 1024 GPUs); H100 at 40%"),
    "deepseek_v3": (LLM("deepseek_v3", 61, 7168, 4096, 18432, micro_batches=120,
                        attention=Attention(128, 128, 128, q_rank=1536, kv_rank=512, rope_dim=64), gated=True,
                        experts=256, top_k=8, shared_experts=1, expert_ffn=2048, dense_layers=3, vocab=129280,
                        source="DeepSeek-V3 Technical Report (DeepSeek-AI 2024), 2.1, 3.2, 4.2"),
                    dict(tp=1, pp=16, ep=64), ("H100", 0.4),
                    "DeepSeek-V3 (technical report, 4.2): 61 layers, hidden 7168, MLA (128 heads of 128 + 64 RoPE, "
                    "ranks 1536/512), 3 dense layers (SwiGLU 18432) then 256 routed + 1 shared experts of 2048, "
                    "top-8, vocabulary 129280; seq 4096; PP 16 x EP 64 (8 servers), TP 1 (3.2); 120 micro-batches: "
                    "15360 sequences at 2048 GPUs (DP 128); H800 = H100's BF16 peak at 40% (it trained in FP8: "
                    "raise tflops); no multi-token-prediction module"),
}


def full_size(name: str):
    """The builder of the full-size preset `name`: the published model with the given
    layers, sequence, batch, parallelism and compute."""
    spec = FULL[name][0]

    def build(layers, seq, micro_batch, micro_batches, gpu, mfu, tflops, **dims):
        return replace(spec, layers=layers, seq=seq, micro_batch=micro_batch, micro_batches=micro_batches,
                       tflops=effective_tflops(gpu, mfu, tflops)), dims
    return build


def full_size_section(name: str) -> Section:
    """The parameters of the full-size preset `name`, with its defaults."""
    spec, dims, (gpu, mfu), doc = FULL[name]
    par = {d: count(dims.get(d, 1), f"default {what}") for d, what in
           (("tp", "tensor parallelism"), ("pp", "pipeline stages"), ("cp", "context parallelism"))}
    if spec.experts:
        par["ep"] = count(dims["ep"], "default expert parallelism")
    return Section(doc, layers=count(spec.layers, "Transformer layers"), seq=count(spec.seq, "sequence length"),
                   micro_batch=count(spec.micro_batch, "micro-batch size"),
                   micro_batches=count(spec.micro_batches, "micro-batches per iteration per data-parallel replica"),
                   **par, **compute_settings(gpu, mfu))


LLM_PRESETS = {
    "gpt": Preset(gpt, Section(
        "a dense GPT (Megatron-LM's 1.7B model, Narayanan et al. 2021)",
        layers=count(24, "Transformer layers"), hidden=count(2304, "hidden size"), seq=count(2048, "sequence length"),
        micro_batch=count(1, "micro-batch size"), micro_batches=count(8, "micro-batches per iteration"),
        tp=count(8, "default tensor parallelism"), pp=count(4, "default pipeline stages"),
        cp=count(1, "default context parallelism"), **compute_settings("A100", 0.48))),
    "mixtral": Preset(mixtral, Section(
        "a Mixtral-style MoE (Jiang et al. 2024) at a quarter of 8x7B's width and depth",
        layers=count(8, "Transformer layers"), hidden=count(1024, "hidden size"), ffn=count(3584, "expert MLP width"),
        seq=count(4096, "sequence length"), micro_batch=count(1, "micro-batch size"),
        micro_batches=count(4, "micro-batches per iteration"), experts=count(8, "experts per layer"),
        top_k=count(2, "experts per token"), tp=count(1, "default tensor parallelism"),
        pp=count(4, "default pipeline stages"), ep=count(8, "default expert parallelism"),
        cp=count(1, "default context parallelism"), **compute_settings("A100", 0.48))),
    **{name: Preset(full_size(name), full_size_section(name)) for name in FULL},
}


def tp_foldable(platform, model: LLM, ranks, par: Parallelism, algorithm: str, chunks: int, nccl) -> dict | None:
    """When the ranks of every TP group can run as one stream with the same times (`llm_graph`'s
    `fold_tp`): a dense model (no experts: an all-to-all starts rank by rank) without CP,
    TP > 1, every TP group inside one server, and its all-reduce in the same closed form
    wherever it sits (`collectives.closed_form_rows`: it waits for all its ranks, then they
    all finish together; so a rank's compute after it, and a stage's compute after the
    per-rank arrivals from the previous stage, end when the TP group's next all-reduce
    would start anyway).  Returns {all-reduce bytes: (algorithm, closed-form ps)} for the
    size the TP group all-reduces, or None."""
    if par.tp < 2 or par.cp > 1 or model.experts or chunks != 1:
        return None
    size = model.micro_batch * model.seq * model.hidden * BYTES
    form = closed_form_rows("allreduce", algorithm, np.asarray(ranks, np.int64)[par.groups("tp")], size,
                            platform=platform, chunks=chunks, nccl=nccl)
    return None if form is None else {size: form}


def llm_graph(platform, model: LLM, ranks, iterations: int, par: Parallelism, *, algorithms=None, chunks=1,
              prio=DEFAULT_FLOW_PRIORITY, start=0, tag=0, job="", pipeline="1f1b", pxn=PXN_DEFAULT,
              guard=None, nccl=None, fold_tp=False) -> TrainingGraph:
    """`iterations` iterations of `model` under `par` on `ranks` (GPU ranks of `platform`)
    as job `job`; `guard` (a `rocesim.memory.WorkloadGuard`, e.g. `Simulation.workload_guard`)
    may refuse the whole run after its first iteration, or as it goes from its projection;
    `nccl` (`Simulation.nccl`) shapes the nccl_* algorithms.  Add the graph it returns with
    `Simulation.add_workload`.

    `fold_tp` (large jobs in flow mode) runs the ranks of each TP group as one stream when that
    gives every rank the same times (`tp_foldable`): one compute node per TP group and
    step instead of one per rank, and each TP all-reduce as one node of its closed-form
    duration (the collective still has its record, its start being when its last rank
    is ready); transfers between stages and collectives of other groups stay per rank."""
    ranks = np.asarray(ranks, np.int64)
    counts = _stage_layers_checked(model, ranks, iterations, par, pipeline)
    b = _Builder(platform, model, ranks, par, _StageCosts.of(model, par, counts),
                 algorithms={**DEFAULT_ALGORITHM, **(algorithms or {})}, chunks=chunks, prio=prio, start=start,
                 tag=tag, job=job, pxn=pxn, nccl=nccl, fold_tp=fold_tp)
    # progress in layer passes (each micro-batch crosses every layer forward and backward)
    b.passes = Progress(guard, f"{iterations:,} iterations of {model.name} training",
                        iterations * 2 * model.micro_batches * model.layers,
                        hint="" if b.tp_form or model.experts or par.tp < 2 else
                        "; the workload key fold_tp shrinks it")
    for it in range(iterations):
        if it == 1:
            b.passes.check(b.g.n * iterations)
        b.pipeline_iteration(it, pipeline)
        b.gradients(it)
    end = b.g.compute(b.hosts, 0, iteration=iterations - 1, tag=tag)
    b.after(end, b.last)
    return TrainingGraph(b.g, b.records, iterations, job)


def _stage_layers_checked(model: LLM, ranks, iterations: int, par: Parallelism, pipeline: str) -> list[int]:
    """The layers of each pipeline stage (`stage_layers`), once the job's layout is checked."""
    if par.size != ranks.size:
        raise ScenarioError("parallelism", f"tp x cp x dp x pp = {par.size} is not the job's {ranks.size} ranks")
    if pipeline not in SCHEDULES:
        raise ScenarioError("pipeline", f"unknown schedule {pipeline!r}; valid: {', '.join(SCHEDULES)}")
    counts = stage_layers(model.layers, par.pp)
    if model.experts and model.experts % par.ep:
        raise ScenarioError("parallelism.ep", f"ep={par.ep} does not divide the {model.experts} experts")
    if iterations < 1:
        raise ScenarioError("iterations", "must be at least 1")
    return counts


@dataclass(frozen=True)
class _StageCosts:
    """What a rank computes per micro-batch, in ps: a layer's attention and MLP forward
    (`mlp_ps[moe]`: an MoE layer's or a dense one's) and the logits' (on the last stage);
    per stage: whether each of its layers is an MoE layer, and the dense and expert
    parameters its gradients carry."""

    attn_ps: int
    mlp_ps: dict
    logits_ps: int
    moe_of: list
    dense_grad: list
    expert_grad: list

    @classmethod
    def of(cls, model: LLM, par: Parallelism, counts: list[int]) -> "_StageCosts":
        tpcp = par.tp * par.cp

        def ps(flops):
            # per rank: compute time in ps (an MoE layer's rank computes its own tokens'
            # experts, whatever the EP degree, with balanced routing)
            return max(1, int(flops / tpcp / (model.tflops * 1e12) * 1e12))

        first = np.cumsum([0] + counts)
        moe_of = [[model.is_moe(i) for i in range(first[s], first[s + 1])] for s in range(par.pp)]
        embedding = [model.vocab * model.hidden * ((s == 0) + (s == par.pp - 1 and not (model.tied and par.pp == 1)))
                     for s in range(par.pp)]
        return cls(attn_ps=ps(model.forward_flops()[0]),
                   mlp_ps={moe: ps(model.forward_flops(moe)[1]) for moe in (False, True)},
                   logits_ps=ps(model.logits_flops()) if model.vocab else 0,
                   moe_of=moe_of,
                   # (a stage's layers are of two kinds: counted, not summed one by one)
                   dense_grad=[sum(moe_of[s]) * model.replicated_params(True)
                               + (len(moe_of[s]) - sum(moe_of[s])) * model.replicated_params(False) + embedding[s]
                               for s in range(par.pp)],
                   expert_grad=[sum(moe_of[s]) * model.expert_params() * (model.experts // par.ep)
                                if model.experts else 0 for s in range(par.pp)])


class _Builder:
    """The graph of one LLM job under construction: per rank, the last node of its compute
    stream; per stage, its ranks, its groups of each kind (rows of job rank indices) and
    its streams (its ranks one by one, or with `fold_tp` its TP groups)."""

    def __init__(self, platform, model: LLM, ranks, par: Parallelism, costs: _StageCosts, *, algorithms, chunks,
                 prio, start, tag, job, pxn, nccl, fold_tp):
        self.platform, self.model, self.ranks, self.par, self.costs = platform, model, ranks, par, costs
        self.algorithms, self.chunks, self.prio, self.start, self.tag, self.job, self.pxn, self.nccl = \
            algorithms, chunks, prio, start, tag, job, pxn, nccl
        self.hosts = platform.host_of(ranks)
        self.g = Graph()
        self.templates = Templates(platform)
        self.records = Collectives()
        self.passes = Progress(None, "", 1)
        self.tokens = model.micro_batch * model.seq
        self.act = self.tokens * model.hidden * BYTES               # one micro-batch's activations
        self.boundary = self.act // (par.tp * par.cp)                # sent between stages, per rank and micro-batch
        stage_of = par.coords()["pp"]
        self.stage_ranks = [np.flatnonzero(stage_of == s) for s in range(par.pp)]
        self.by_stage = {d: [gr[stage_of[gr[:, 0]] == s] for s in range(par.pp)]
                         for d, gr in ((d, par.groups(d)) for d in ("tp", "cp", "dp", "ep", "edp"))}
        self.last = np.full(ranks.size, -1, np.int64)
        self.tp_form = tp_foldable(platform, model, ranks, par, algorithms["allreduce"], chunks, nccl) \
            if fold_tp else None
        self.streams = [self.by_stage["tp"][s] if self.tp_form else self.stage_ranks[s][:, None]
                        for s in range(par.pp)]

    def after(self, ids, parents):
        ok = parents >= 0
        self.g.depend(ids[ok], parents[ok])

    def compute(self, s, duration, it):
        """A compute step on every stream of stage `s`."""
        self.g.compute_on_streams(self.hosts, self.streams[s], self.last, duration, iteration=it, tag=self.tag,
                                  start=self.start)

    def collective(self, dim, s, op, size, it, algorithm=None):
        """`op` of `size` bytes in every `dim` group of stage `s`, after its ranks' last nodes."""
        if size <= 0:
            return
        rows = self.by_stage[dim][s]
        if rows.shape[1] < 2 or not rows.shape[0]:
            return
        recs = append_collectives(self.g, op, algorithm or self.algorithms[op], self.ranks[rows], int(size),
                                  cids=len(self.records) + np.arange(rows.shape[0]), templates=self.templates,
                                  chunks=self.chunks, prio=self.prio, iteration=it, tag=self.tag,
                                  platform=self.platform, pxn=self.pxn, job=self.job, nccl=self.nccl)
        self.after(node_rows(recs, "start_nodes").ravel(), self.last[rows].ravel())
        self.last[rows] = node_rows(recs, "done_nodes")
        self.records.extend(recs)

    def sendrecv(self, src, dst, it):
        """Each rank of `src` sends its share of the activations to the same-place rank of
        `dst` after its last node; returns, per rank of `dst`, when it has them."""
        rec = add_sendrecv(self.g, self.ranks[src], self.ranks[dst], int(self.boundary), platform=self.platform,
                           prio=self.prio, cid=len(self.records), iteration=it, tag=self.tag, chunks=self.chunks,
                           pxn=self.pxn, job=self.job, nccl=self.nccl)
        k = src.size
        self.after(rec.start_nodes[:k], self.last[src])
        self.after(rec.start_nodes[k:], rec.start_nodes[:k])            # (not roots of the graph)
        self.records.append(rec)
        return rec.done_nodes[k:]

    def join(self, s, arrived, it):
        """Every stream of stage `s` waits for its last node and what `arrived` (per rank of
        the stage) from the neighbouring stage: one node each."""
        got = np.full(self.ranks.size, -1, np.int64)
        got[self.stage_ranks[s]] = arrived
        rows = self.streams[s]
        join = self.g.compute(self.hosts[rows[:, 0]], 0, iteration=it, tag=self.tag)
        self.g.depend_rows(join, self.last[rows])
        self.g.depend_rows(join, got[rows])
        self.last[rows] = join[:, None]

    def pass_steps(self, s, backward) -> Iterator[tuple[int, list[tuple]]]:
        """A stage's steps for one micro-batch, in order, layer by layer: (1, the layer's
        steps), and (0, [the logits]) on the last stage; a step is ("compute", ps) or (group
        kind, op, bytes, algorithm or None).  Made as they are taken (a layer's steps depend
        only on whether it is MoE: two lists, whatever the layer count)."""
        model, par, c = self.model, self.par, self.costs
        logits = c.logits_ps if s == par.pp - 1 else 0
        if logits and backward:
            yield 0, [("compute", 2 * logits)]
        mult = 2 if backward else 1
        moe_tokens = self.tokens // (par.tp * par.cp) * model.top_k * model.hidden * BYTES
        kv = self.tokens * model.attention.kv_values(model.hidden) * BYTES // par.tp
        layer_steps = {}
        for moe in (False, True):
            steps = ["attn", "tp", "mlp", "tp"]
            if par.cp > 1:
                steps.insert(0, "cp")
            if moe:
                steps[-2:-1] = ["a2a", "mlp", "a2a"]
            layer_steps[moe] = [("compute", mult * c.attn_ps) if step == "attn" else
                                ("compute", mult * c.mlp_ps[moe]) if step == "mlp" else
                                ("tp", "allreduce", self.act // par.cp, None) if step == "tp" else
                                ("cp", "reducescatter" if backward else "allgather", kv, None) if step == "cp" else
                                ("ep", "alltoall", moe_tokens, self.algorithms.get("moe_alltoall"))
                                for step in (steps[::-1] if backward else steps)]
        for moe in (reversed(c.moe_of[s]) if backward else c.moe_of[s]):
            yield 1, layer_steps[moe]
        if logits and not backward:
            yield 0, [("compute", logits)]

    def stage_pass(self, s, it, backward):
        """A stage's layers for one micro-batch, with the logits on the last stage, at most
        LAYERS_AT_ONCE layers at a time, each batch reported to the guard first (a model of a
        million layers is sized or refused from its first layers, not from a stage's pass)."""
        layers = self.pass_steps(s, backward)
        while batch := list(itertools.islice(layers, LAYERS_AT_ONCE)):
            self.passes.advance(self.g.n, sum(units for units, _ in batch))
            steps = [step for _, layer in batch for step in layer]
            if self.tp_form:
                self.folded_pass(s, it, steps)
                continue
            for step in steps:
                if step[0] == "compute":
                    self.compute(s, step[1], it)
                else:
                    self.collective(step[0], s, *step[1:3], it, step[3])

    def folded_pass(self, s, it, steps):
        """`stage_pass` with each TP group one stream: its steps (compute, TP all-reduces in
        closed form) one chain of nodes per TP group, added at once."""
        rows = self.streams[s]
        m, q = rows.shape[0], len(steps)
        tp = np.array([step[0] == "tp" for step in steps])
        n_tp = int(tp.sum())
        size = self.act // self.par.cp
        algo, tp_ps = self.tp_form[size]
        duration = np.array([tp_ps if is_tp else step[1] for step, is_tp in zip(steps, tp)], np.int64)
        cid = np.full((q, m), -1, np.int64)
        cid[tp] = len(self.records) + np.arange(n_tp * m).reshape(n_tp, m)
        ids = self.g.compute(np.tile(self.hosts[rows[:, 0]], q), np.repeat(duration, m), collective=cid.ravel(),
                             iteration=it, tag=self.tag, start=np.repeat(np.where(tp, 0, self.start), m)).reshape(q, m)
        self.g.depend_rows(ids[0], self.last[rows])
        self.g.depend(ids[1:], ids[:-1])
        self.last[rows] = ids[-1][:, None]
        if n_tp:
            done = ids[tp].reshape(-1, 1)
            self.records.append(CollectiveBatch(cid[tp].ravel(), "allreduce", algo,
                                                np.tile(self.ranks[rows], (n_tp, 1)), int(size), done, done,
                                                np.zeros((done.size, 0), np.int64), self.job))

    def pipeline_iteration(self, it, pipeline):
        """One iteration of every stage's schedule, in an order that respects the transfers
        (`parallelism.pipeline_order`)."""
        arrived = {}                                                # (kind, stage, j) -> receiver nodes
        for s, step, j, _ in pipeline_order(pipeline, self.par.pp, self.model.micro_batches):
            need = (step, s - 1 if step == "F" else s + 1, j)
            if need in arrived:
                self.join(s, arrived.pop(need), it)
            self.stage_pass(s, it, step == "B")
            peer = s + 1 if step == "F" else s - 1
            if 0 <= peer < self.par.pp:
                arrived[(step, s, j)] = self.sendrecv(self.stage_ranks[s], self.stage_ranks[peer], it)

    def gradients(self, it):
        """Every stage's gradients, then the optimizer: the stage's next forward waits for
        both (the collectives' done nodes become the last nodes of the ranks' streams)."""
        c, par = self.costs, self.par
        for s in range(par.pp):
            self.collective("dp", s, "allreduce", c.dense_grad[s] * BYTES // par.tp, it,
                            self.algorithms.get("gradients"))
            self.collective("edp", s, "allreduce", c.expert_grad[s] * BYTES // par.tp, it,
                            self.algorithms.get("gradients"))
            if self.model.optimizer_us > 0:
                self.compute(s, int(self.model.optimizer_us * 1e6), it)
