"""Built-in training workloads with sizes and compute times from published figures.

They are representative, not measurements: each names where its numbers come from so
that a user can change them knowingly.  Times are per iteration on one GPU, split
forward : input-gradient : weight-gradient = 1 : 1 : 1 as ASTRA-sim's examples do
(the backward pass costs about twice the forward pass).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from rocesim.errors import ScenarioError
from rocesim.settings import Integer, Number, Section, Setting
from rocesim.training.workloads.model import Comm, Layer, Workload

US = 10**6       # ps


def resnet50(batch_time_us: float) -> Workload:
    """ResNet-50, data parallel: one gradient all-reduce per stage, overlapped with backward.

    Gradient sizes: fp32 gradients of torchvision's ResNet-50 (25.6 M parameters) per
    stage (He et al., CVPR 2016, Table 1).  Time: about 1,200 images/s per V100 GPU
    with mixed precision at a batch of 32 (NVIDIA Deep Learning Examples, ResNet-50
    v1.5), i.e. ~26.7 ms per iteration, split over stages by their share of the
    4.1 GFLOPs per image.
    """
    stages = [  # name, parameters, share of FLOPs
        ("conv1", 9_536, 0.03), ("layer1", 215_808, 0.17), ("layer2", 1_219_584, 0.25),
        ("layer3", 7_098_368, 0.35), ("layer4", 14_964_736, 0.19), ("fc", 2_049_000, 0.01),
    ]
    third = batch_time_us * US / 3
    layers = [Layer(name, fwd_ps=int(third * share), ig_ps=int(third * share), wg_ps=int(third * share),
                    wg_comm=Comm("allreduce", 4 * params)) for name, params, share in stages]
    return Workload("resnet50", "DATA", layers, source="He et al. 2016; NVIDIA DL Examples (V100, AMP)")


def transformer(layers: int, hidden: int, seq: int, micro_batch: int, tp: int, tflops: float) -> Workload:
    """A GPT-style Transformer with Megatron tensor parallelism (tp) and data parallelism.

    Per layer (Shoeybi et al. 2019; Narayanan et al., SC 2021): the attention and the
    MLP block each end with an all-reduce of the activations (b s h fp16 bytes) in the
    tensor-parallel group, forward and backward; the layer's 12 h^2 parameters, split
    over tp ranks, are all-reduced in fp16 across the data-parallel group.  Compute:
    24 b s h^2 + 4 b s^2 h FLOPs forward per layer, split over tp ranks, at `tflops`
    effective TFLOP/s per GPU (about half of an A100's 312), backward twice that.
    """
    act = micro_batch * seq * hidden * 2
    params = 12 * hidden * hidden // tp * 2
    flops = (24 * micro_batch * seq * hidden ** 2 + 4 * micro_batch * seq ** 2 * hidden) / tp
    half_ps = int(flops / (tflops * 1e12) * 1e12 / 2)          # per block (attention, MLP)
    # every layer's two blocks are alike: one Layer each, listed `layers` times (a million
    # layers cost a list, not two million objects)
    blocks = [Layer(block, fwd_ps=half_ps, fwd_comm=Comm("allreduce", act, "mp"),
                    ig_ps=half_ps, ig_comm=Comm("allreduce", act, "mp"),
                    wg_ps=half_ps, wg_comm=Comm("allreduce", params // 2, "dp")) for block in ("attn", "mlp")]
    return Workload("transformer", "HYBRID_TRANSFORMER", blocks * layers, mp_size=tp,
                    source="Megatron-LM (Shoeybi et al. 2019; Narayanan et al. 2021), GPT-3 1.3B-like layer")


def dlrm(local_batch: int, tables: int, dim: int) -> Workload:
    """DLRM (Naumov et al. 2019): model-parallel embeddings exchanged by all-to-all,
    data-parallel MLPs all-reduced.

    Pooled embeddings (local_batch x tables x dim fp32) go all-to-all forward and their
    gradients all-to-all backward, over every rank (Criteo-like: 26 sparse features,
    dimension 128).  MLP gradients: bottom 13-512-256-128 (~0.2 M parameters) and top
    ~2.7 M parameters, fp32.  Compute times are typical of one GPU at batch 2048
    (Mudigere et al., ISCA 2022, report all-to-all dominating such iterations).
    """
    a2a = local_batch * tables * dim * 4
    layers = [
        Layer("bottom_mlp", fwd_ps=200 * US, ig_ps=200 * US, wg_ps=200 * US,
              wg_comm=Comm("allreduce", 4 * 222_000, "all")),
        Layer("embedding", fwd_ps=800 * US, fwd_comm=Comm("alltoall", a2a, "all"),
              ig_ps=100 * US, ig_comm=Comm("alltoall", a2a, "all"), wg_ps=400 * US),
        Layer("top_mlp", fwd_ps=500 * US, ig_ps=500 * US, wg_ps=500 * US,
              wg_comm=Comm("allreduce", 4 * 2_700_000, "all")),
    ]
    return Workload("dlrm", "DATA", layers, source="Naumov et al. 2019; Mudigere et al. 2022")


@dataclass(frozen=True)
class Preset:
    """A built-in model: the function that builds it from its parameters, and their
    declaration (names, types, defaults, meanings; `rocesim keys` lists them)."""

    build: Callable
    params: Section

    def make(self, given=None, key: str = "params"):
        """The model, from the user's `params` mapping (defaults for the rest)."""
        return self.build(**self.params.resolve(given, key))


def count(default: int, doc: str) -> Setting:
    """A positive whole-number parameter of a model, at most a million (so that a preset
    cannot overflow or run away)."""
    return Setting(Integer(1, 10**6), default, doc)


def amount(default: float, doc: str) -> Setting:
    """A positive real parameter of a model, at most 1e12."""
    return Setting(Number(0.0, 1e12), default, doc)


TFLOPS = amount(150.0, "effective TFLOP/s per GPU (about half of an A100's 312)")

PRESETS = {
    "resnet50": Preset(resnet50, Section(
        "ResNet-50, data parallel (He et al. 2016; NVIDIA DL Examples)",
        batch_time_us=amount(26_700, "one iteration on one GPU, in us (~1,200 images/s per V100 at batch 32)"))),
    "transformer": Preset(transformer, Section(
        "a GPT-style Transformer, Megatron tensor + data parallel",
        layers=count(8, "Transformer layers"), hidden=count(2048, "hidden size"), seq=count(2048, "sequence length"),
        micro_batch=count(1, "micro-batch size"), tp=count(8, "tensor-parallel group size"), tflops=TFLOPS)),
    "dlrm": Preset(dlrm, Section(
        "DLRM: embedding all-to-all, MLP all-reduce (Naumov et al. 2019)",
        local_batch=count(2048, "samples per GPU"), tables=count(26, "embedding tables (sparse features)"),
        dim=count(128, "embedding dimension"))),
}


def preset(name: str, key: str = "model", **params) -> Workload:
    """The layer model `name` (a key of PRESETS) with `params` (the others at their defaults)."""
    if name not in PRESETS:
        raise ScenarioError(key, f"unknown model {name!r}; presets: {', '.join(PRESETS)}, "
                                 "or {astra_sim: file} / {chakra: prefix}")
    return PRESETS[name].make(params, key.rsplit(".", 1)[0] + ".params" if "." in key else "params")
