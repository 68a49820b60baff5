"""Workload formats: what a workload entry's `model:` may be, one table entry each.

A format is a reader (a file format's parser, or a family of presets, in
`rocesim/training/workloads/`) plus its entry in `FORMATS`, a `WorkloadFormat` that says:

* how its `model:` value is recognised: a name among its `presets`, or a mapping of its
  one `key` (`{simai: file}`);
* which WORKLOAD options it takes besides those every format takes
  (`workload_entry.COMMON`): `options` maps each to its default here, used when the entry
  leaves it unset and WORKLOAD declares no default of its own (None: no default; e.g.
  SimAI files' `dependencies: simai`), and `pxn` is its default for NCCL's PXN;
* `build(model, options, job)`, which returns the entry's `TrainingGraph` without touching
  a Simulation (`workload_entry` adds it): `model` is the preset's name or the mapping's
  value, `options` its options resolved, `job` a `Job` (the ranks, the iterations, the
  options every generator takes, and the platform, NCCL settings and workload guard to
  hand on).

Adding a format is adding its entry (tests/scenario/test_workload_formats.py registers one
from outside the package).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.memory import WorkloadGuard
from rocesim.network.platform import Platform
from rocesim.settings import resolve_path, show
from rocesim.training.graph import TrainingGraph
from rocesim.training.nccl import PXN_DEFAULT, NcclConfig
from rocesim.training.parallelism import Parallelism
from rocesim.training.workloads.astra import read_astra_sim
from rocesim.training.workloads.astra_system import read_astra_system
from rocesim.training.workloads.chakra import chakra_graph, read_chakra
from rocesim.training.workloads.llm import LLM_PRESETS, llm_graph
from rocesim.training.workloads.model import Workload, training_graph
from rocesim.training.workloads.presets import PRESETS
from rocesim.training.workloads.simai import read_simai


@dataclass(frozen=True)
class Job:
    """Where and how a workload entry runs, what every format's `build` gets: its `ranks`
    (GPU ranks of `platform`; on a plain topology, hosts), `iterations`, the options every
    generator takes (`common`: algorithms, chunks, prio, start, tag, job, pxn), the NCCL
    settings and the workload guard to hand on, the entry's key and its model's (for
    errors), and the scenario's folder (for files)."""

    platform: Platform
    ranks: np.ndarray
    iterations: int
    common: dict
    nccl: NcclConfig
    guard: WorkloadGuard
    key: str
    model_key: str
    base_dir: str

    def path(self, value) -> str:
        """The model's file `value`, relative to the scenario's folder."""
        return resolve_path(self.base_dir, value, self.model_key)

    def layers(self, workload: Workload, **options) -> TrainingGraph:
        """The graph of a layer model on this job (`training_graph`, with `options`)."""
        return training_graph(self.platform, workload, self.ranks, self.iterations, nccl=self.nccl,
                              guard=self.guard, **self.common, **options)


@dataclass(frozen=True)
class WorkloadFormat:
    """One way of giving a workload's model (see the module's docstring)."""

    name: str                        # the format in messages, plural: "SimAI files"
    build: Callable[[Any, dict, Job], TrainingGraph]
    options: Mapping[str, Any] = field(default_factory=dict)
    presets: Mapping[str, Any] | None = None     # recognised by these names (model: NAME) ...
    key: str = ""                                # ... or by a mapping {key: value}
    value: str = "file"                          # what the mapping's value is, in messages
    about: str = ""                              # what the format is, for `rocesim keys`
    pxn: bool = PXN_DEFAULT                      # NCCL's PXN unless the entry says

    def recognises(self, model) -> bool:
        if self.presets is not None:
            return isinstance(model, str) and model in self.presets
        return isinstance(model, dict) and set(model) == {self.key}

    @property
    def form(self) -> str:
        """The mapping `model:` takes, e.g. "{simai: file}"."""
        return f"{{{self.key}: {self.value}}}"


def hertz(v, key) -> float:
    """A clock frequency such as "1GHz", in Hz."""
    if isinstance(v, str):
        for unit, f in (("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3), ("Hz", 1.0)):
            if v.strip().endswith(unit):
                try:
                    hz = float(v.strip()[:-len(unit)]) * f
                except ValueError:
                    break
                if hz > 0:
                    return hz
    raise ScenarioError(key, f"expected a clock frequency such as 1GHz, got {show(v)}")


def _layer_model(name, o, job: Job) -> TrainingGraph:
    workload = PRESETS[name].make(o["params"], f"{job.key}.params")
    return job.layers(workload, fold_tp=o["fold_tp"], fold_dp=o["fold_dp"])


def _llm(name, o, job: Job) -> TrainingGraph:
    """An LLM preset with `params`, `parallelism` (dp is what is left) and `pipeline`."""
    model, dims = LLM_PRESETS[name].make(o["params"], f"{job.key}.params")
    dims.update({k: x for k, x in (o["parallelism"] or {}).items() if x is not None})
    return llm_graph(job.platform, model, job.ranks, job.iterations, Parallelism.for_ranks(len(job.ranks), **dims),
                     pipeline=o["pipeline"], fold_tp=o["fold_tp"], nccl=job.nccl, guard=job.guard,
                     **job.common)


def _astra_sim(path, o, job: Job) -> TrainingGraph:
    workload = read_astra_sim(job.path(path), hertz(o["clock"], f"{job.key}.clock"))
    return job.layers(workload, dependencies=o["dependencies"], fold_tp=o["fold_tp"], fold_dp=o["fold_dp"])


def _simai(path, o, job: Job) -> TrainingGraph:
    workload = read_simai(job.path(path), hertz(o["clock"], f"{job.key}.clock"))
    return job.layers(workload, dependencies=o["dependencies"], pipeline=o["pipeline"], fold_tp=o["fold_tp"],
                      fold_dp=o["fold_dp"])


def _chakra(prefix, o, job: Job) -> TrainingGraph:
    """Chakra traces; with `system` (an ASTRA-sim system file) its collectives' algorithms
    (where the entry's `algorithms` names none), chunks (where the entry's `chunks` is 1)
    and settings."""
    if not isinstance(prefix, str):
        raise ScenarioError(job.model_key, "expected a path prefix (files <prefix>.<rank>.et)")
    prefix = prefix if os.path.isabs(prefix) else os.path.join(job.base_dir, prefix)
    common, options = dict(job.common), None
    if o["system"] is not None:
        system = read_astra_system(resolve_path(job.base_dir, o["system"], f"{job.key}.system"))
        common["algorithms"] = {**system.algorithms, **common["algorithms"]}
        common["chunks"] = system.chunks if common["chunks"] == 1 else common["chunks"]
        options = system.options
    return chakra_graph(read_chakra(prefix, len(job.ranks), job.guard), job.ranks, job.iterations,
                        platform=job.platform, nccl=job.nccl, guard=job.guard, options=options, **common)


FOLDS = {"fold_tp": None, "fold_dp": None}          # what formats of layers take (training_graph's folds)

FORMATS: dict[str, WorkloadFormat] = {
    "layer_models": WorkloadFormat("layer models", _layer_model, {"params": None, **FOLDS}, presets=PRESETS),
    "llm": WorkloadFormat("the LLM presets", _llm, {"params": None, "parallelism": None, "pipeline": "1f1b",
                                                    "fold_tp": None}, presets=LLM_PRESETS),
    "astra_sim": WorkloadFormat("ASTRA-sim files", _astra_sim, {"clock": None, "dependencies": "overlap", **FOLDS},
                                key="astra_sim"),
    # SimAI 1.6 forwards through the rail's GPU only with AS_PXN_ENABLE=1 (astra-sim/system/
    # MockNcclGroup.cc), off by default and in the runs rocesim is compared with
    # (validation/reference/simai/RUNS.md): SimAI files run without PXN unless told
    "simai": WorkloadFormat("SimAI files", _simai, {"clock": None, "dependencies": "simai", "pipeline": "gpipe",
                                                    **FOLDS}, key="simai", about="SimAI 1.6 / AICB", pxn=False),
    "chakra": WorkloadFormat("Chakra traces", _chakra, {"system": None}, key="chakra", value="prefix",
                             about="files prefix.<rank>.et"),
}
"""The workload formats, in the order messages and `rocesim keys` list them."""


def joined(items, word: str = "or") -> str:
    """"a, b or c" (`word`: or, and)."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {word} {items[-1]}"


def preset_names() -> list[str]:
    return [name for f in FORMATS.values() if f.presets is not None for name in f.presets]


def mapping_formats() -> list[WorkloadFormat]:
    return [f for f in FORMATS.values() if f.presets is None]


def models_text() -> str:
    """What `model:` accepts, for `rocesim keys`."""
    forms = [f.form + (f" ({f.about})" if f.about else "") for f in mapping_formats()]
    return f"a preset ({', '.join(preset_names())}), {joined(forms)}"


def format_of(model, key: str) -> WorkloadFormat:
    """The format that recognises `model` (the `model:` value of entry `key`)."""
    for f in FORMATS.values():
        if f.recognises(model):
            return f
    forms = [f.form for f in mapping_formats()]
    if isinstance(model, str):
        raise ScenarioError(f"{key}.model", f"unknown model {model!r}; presets: {', '.join(preset_names())}, "
                                            f"or {' / '.join(forms)}")
    raise ScenarioError(f"{key}.model", f"expected a preset name, {joined(forms)}")
