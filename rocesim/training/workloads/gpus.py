"""GPUs' peak dense BF16 throughput, and the settings that turn a model's FLOPs into
compute time: `gpu` x `mfu` (model FLOPs utilisation), or an explicit `tflops`.

Compute time of F FLOPs on one GPU = F / (effective TFLOP/s x 1e12), where the effective
rate is `tflops` if given, else the GPU's peak x `mfu`. MFU is the fraction of the peak
that a training run turns into model FLOPs (Chowdhery et al. 2022, PaLM, appendix B):
Llama 3 405B ran at 38-43% on H100 (Dubey et al. 2024, Table 4), Megatron-LM's GPT
models at 44-52% of an A100's peak (Narayanan et al. 2021, Table 1, with recomputation).
"""
from __future__ import annotations

from rocesim.settings import Choice, Number, Setting

# name: (peak dense BF16 Tensor Core TFLOP/s, source). Datasheets quote "with sparsity"
# figures (2:4 structured sparsity, twice the dense rate); these are the dense ones.
GPUS = {
    "A100": (312.0, "NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS (624 with sparsity)"),
    "H100": (989.0, "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: BF16 Tensor Core 1,979 TFLOPS with "
                    "sparsity, 989 dense (H800 SXM: the same)"),
    "B200": (2250.0, "NVIDIA HGX B200 datasheet: FP16/BF16 Tensor Core 4.5 PFLOPS per GPU with sparsity, "
                     "2.25 dense (1,000 W)"),
}


def compute_settings(gpu: str, mfu: float) -> dict[str, Setting]:
    """An LLM preset's compute parameters, with its default GPU and MFU: `gpu`, `mfu` and
    `tflops` (an explicit effective TFLOP/s per GPU, which overrides gpu x mfu)."""
    peaks = ", ".join(f"{name} {peak:g}" for name, (peak, _) in GPUS.items())
    return dict(
        gpu=Setting(Choice(*GPUS), gpu, f"the GPU; peak dense BF16 TFLOP/s: {peaks} (NVIDIA datasheets)"),
        mfu=Setting(Number(0.0, 1.0), mfu, "model FLOPs utilisation: the fraction of the GPU's peak that "
                                           "becomes model FLOPs"),
        tflops=Setting(Number(0.0, 1e6), None, "effective TFLOP/s per GPU; when given, replaces gpu x mfu"))


def effective_tflops(gpu: str, mfu: float, tflops: float | None) -> float:
    """The effective TFLOP/s per GPU: `tflops`, or the GPU's peak x `mfu`."""
    return tflops if tflops is not None else GPUS[gpu][0] * mfu
