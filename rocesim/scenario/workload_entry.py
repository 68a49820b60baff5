"""The scenario's `{kind: workload}` traffic entries: a model (a layer-model preset, an LLM
preset, an ASTRA-sim 1.0 file, a SimAI/AICB file or Chakra traces) on a job's ranks, for
some iterations.

The ranks are `ranks`, or `gpus` placed `packed` or `spread` on free servers; jobs hold
disjoint ranks and name their rows of iterations.csv and collectives.csv (`job`).
"""
from __future__ import annotations

import os

import numpy as np

from rocesim.config import DEFAULT_FLOW_PRIORITY, PRIORITY
from rocesim.errors import ScenarioError
from rocesim.settings import (REQUIRED, Boolean, Choice, Custom, Integer, Section, Setting, Text, Time, resolve_path,
                              show)
from rocesim.training import workloads
from rocesim.training.algorithms import ALGORITHMS
from rocesim.training.graph import WorkloadEstimated
from rocesim.training.jobs import PLACEMENTS, place
from rocesim.training.nccl import PXN_DEFAULT
from rocesim.training.parallelism import Parallelism
from rocesim.training.workloads.astra import read_astra_sim
from rocesim.training.workloads.chakra import add_chakra, read_chakra
from rocesim.training.workloads.llm import LLM_PRESETS, SCHEDULES, add_llm_training
from rocesim.training.workloads.model import DEPENDENCIES
from rocesim.training.workloads.presets import PRESETS
from rocesim.training.workloads.simai import read_simai

# per-operation algorithms a workload may choose, and the workload roles that map to an op
ROLES = {"moe_alltoall": "alltoall", "gradients": "allreduce"}
LLM_ONLY = ("parallelism",)

WORKLOAD = Section(
    "a training workload: iterations of a model's compute and communication on a job's ranks",
    model=Setting(Custom(f"a preset ({', '.join([*PRESETS, *LLM_PRESETS])}), {{astra_sim: file}}, "
                         "{simai: file} (SimAI 1.6 / AICB) or {chakra: prefix} (files prefix.<rank>.et)"),
                  REQUIRED, "the model"),
    params=Setting(Custom("a mapping of the preset's parameters (listed below)"), None, "the preset's parameters"),
    ranks=Setting(Custom("'all' or a list of ranks"), None, "the job's ranks (default all; or gpus and placement)"),
    gpus=Setting(Integer(1), None, "the job's size in GPUs, instead of ranks"),
    placement=Setting(Choice(*PLACEMENTS), None, "where `gpus` go: the lowest free servers (packed, the "
                                                 "default) or evenly spaced ones (spread)"),
    job=Setting(Text(), None, "its name in iterations.csv and collectives.csv (default job<index>)"),
    iterations=Setting(Integer(1), 1, "training iterations"),
    algorithms=Setting(Custom("{op: algorithm} for " + ", ".join([*ALGORITHMS, *ROLES])), None,
                       "collective algorithms by operation (moe_alltoall, gradients: LLM roles)"),
    chunks=Setting(Integer(1), 1, "pieces each collective is cut into"),
    prio=Setting(PRIORITY, DEFAULT_FLOW_PRIORITY, "the flows' priority"),
    start=Setting(Time(), "0us", "when the first iteration starts"),
    clock=Setting(Custom("a frequency, e.g. 1GHz"), "1GHz", "ASTRA-sim and SimAI files: the clock their cycles "
                                                            "count (SimAI's ticks are ns: 1GHz)"),
    dependencies=Setting(Choice(*DEPENDENCIES), None, "ASTRA-sim and SimAI files: what waits for what (simai: a "
                                                      "layer's weight-gradient compute waits for its input-gradient "
                                                      "communication, as SimAI 1.6; overlap: it overlaps it, as "
                                                      "ASTRA-sim 1.0); default simai for SimAI files, overlap for "
                                                      "ASTRA-sim files"),
    parallelism=Setting(Section("{tp, pp, cp, ep, order}: LLM parallelism (dp is what is left)",
                                tp=Setting(Integer(1), None, "tensor parallelism (default: the preset's)"),
                                pp=Setting(Integer(1), None, "pipeline stages"),
                                cp=Setting(Integer(1), None, "context parallelism"),
                                ep=Setting(Integer(1), None, "expert parallelism"),
                                order=Setting(Text(), None, "group order, e.g. tp-cp-dp-pp (Megatron-LM's)")),
                        None, "LLM presets: the parallel groups"),
    pipeline=Setting(Choice(*SCHEDULES), None, "LLM presets and SimAI files with pp > 1: the pipeline schedule "
                                               "(default 1f1b for presets, gpipe, the file's order, for SimAI files)"),
    pxn=Setting(Boolean(), None, "rail-aligned forwarding for the job's transfers (NCCL's PXN); default true "
                                 "(NCCL's default since 2.12), false for SimAI files (SimAI's AS_PXN_ENABLE is "
                                 "off by default)"),
    fold_tp=Setting(Boolean(), False, "LLM presets, layer models, ASTRA-sim and SimAI files: run the ranks of each "
                                      "TP (model-parallel) group as one stream, one compute node per group and "
                                      "step, each TP collective with a closed form inside a server one node of "
                                      "its duration, when every TP group sits inside one server (LLM presets: "
                                      "dense models only; otherwise it does nothing): the same times in many "
                                      "times fewer nodes, for flow-mode runs of large jobs; the flows' ids "
                                      "change, hence their ECMP paths"),
    fold_dp=Setting(Integer(0), 0, "layer models, ASTRA-sim and SimAI files: simulate only this many data-parallel "
                                   "replicas per stage (a multiple of ep dividing dp; 0: all): the others run as "
                                   "them, their TP and EP collectives and stage transfers left out of the fabric "
                                   "(assumed not to slow the simulated ones down), the data-parallel gradients "
                                   "simulated on every rank; collectives.csv lists the simulated groups only"),
)


def add_workload(sim, v, key, base_dir, index, ranks_of):
    """Add a resolved workload entry `v` (WORKLOAD) to `sim`; `ranks_of(value, key)` reads
    a ranks list against the platform.  With `sim.estimate_workloads` a large workload is
    only sized (`Simulation.workload_progress`): its projected nodes go to `sim.estimated_nodes`."""
    try:
        _add_workload(sim, v, key, base_dir, index, ranks_of)
    except WorkloadEstimated as e:
        sim.estimated_nodes += e.nodes


def _add_workload(sim, v, key, base_dir, index, ranks_of):
    model = v["model"]
    llm = isinstance(model, str) and model in LLM_PRESETS
    simai = isinstance(model, dict) and set(model) == {"simai"}
    given = [k for k in LLM_ONLY if v[k] is not None]
    if given and not llm:
        raise ScenarioError(f"{key}.{given[0]}", f"only the LLM presets ({', '.join(LLM_PRESETS)}) take it")
    if v["pipeline"] is not None and not (llm or simai):
        raise ScenarioError(f"{key}.pipeline", "only the LLM presets and SimAI files take it")
    layered = isinstance(model, dict) and set(model) in ({"simai"}, {"astra_sim"})
    if v["dependencies"] is not None and not layered:
        raise ScenarioError(f"{key}.dependencies", "only ASTRA-sim and SimAI files ({astra_sim: file}, "
                                                   "{simai: file}) take it")
    ranks, job = _job_ranks(sim, v, key, index, ranks_of)
    # SimAI 1.6 forwards through the rail's GPU only with AS_PXN_ENABLE=1 (astra-sim/system/
    # MockNcclGroup.cc), off by default and in the runs rocesim is compared with
    # (validation/reference/simai/RUNS.md): SimAI files run without PXN unless told
    pxn = v["pxn"] if v["pxn"] is not None else (PXN_DEFAULT and not simai)
    common = dict(algorithms=_algorithms(v["algorithms"], key), chunks=v["chunks"], prio=v["prio"],
                  start=v["start"], tag=index, job=job, pxn=pxn, fold_tp=v["fold_tp"])
    if llm or (isinstance(model, dict) and set(model) == {"chakra"}):
        if v["fold_dp"]:
            raise ScenarioError(f"{key}.fold_dp", "only layer models, ASTRA-sim and SimAI files take it")
    else:
        common["fold_dp"] = v["fold_dp"]
    if llm:
        return _llm(sim, v, key, model, ranks, common)
    if isinstance(model, str):
        if model not in PRESETS:
            raise ScenarioError(f"{key}.model", f"unknown model {model!r}; presets: "
                                                f"{', '.join([*PRESETS, *LLM_PRESETS])}, or {{astra_sim: file}} / "
                                                "{simai: file} / {chakra: prefix}")
        wl = PRESETS[model].make(v["params"], f"{key}.params")
    elif isinstance(model, dict) and set(model) == {"astra_sim"}:
        wl = read_astra_sim(resolve_path(base_dir, model["astra_sim"], f"{key}.model.astra_sim"),
                            _hertz(v["clock"], f"{key}.clock"))
    elif simai:
        wl = read_simai(resolve_path(base_dir, model["simai"], f"{key}.model.simai"),
                        _hertz(v["clock"], f"{key}.clock"))
        common.update(dependencies=v["dependencies"] or "simai", pipeline=v["pipeline"] or "gpipe")
    elif isinstance(model, dict) and set(model) == {"chakra"}:
        prefix = model["chakra"]
        if not isinstance(prefix, str):
            raise ScenarioError(f"{key}.model.chakra", "expected a path prefix (files <prefix>.<rank>.et)")
        prefix = prefix if os.path.isabs(prefix) else os.path.join(base_dir, prefix)
        if v["fold_tp"]:
            raise ScenarioError(f"{key}.fold_tp", "Chakra traces have no TP groups to fold")
        common.pop("fold_tp")
        add_chakra(sim, read_chakra(prefix, len(ranks)), ranks, v["iterations"], **common)
        return
    else:
        raise ScenarioError(f"{key}.model", "expected a preset name, {astra_sim: file}, {simai: file} or "
                                            "{chakra: prefix}")
    if not simai and v["dependencies"] is not None:
        common.update(dependencies=v["dependencies"])
    workloads.add_training(sim, wl, ranks, v["iterations"], **common)


def _algorithms(algos, key) -> dict:
    if algos is None:
        return {}
    if not isinstance(algos, dict):
        raise ScenarioError(f"{key}.algorithms", f"expected a mapping {{op: algorithm}}, got {show(algos)}")
    for op, alg in algos.items():
        valid = ALGORITHMS.get(ROLES.get(op, op)) if isinstance(op, str) else None
        if valid is None or not (isinstance(alg, str) and alg in valid):
            raise ScenarioError(f"{key}.algorithms.{op}", f"expected one of {', '.join(valid or ())} "
                                                          f"for an op in {', '.join([*ALGORITHMS, *ROLES])}")
    return algos


def _llm(sim, v, key, name, ranks, common):
    """An LLM preset with `params`, `parallelism` (dp is what is left), `pipeline`."""
    model, dims = LLM_PRESETS[name].make(v["params"], f"{key}.params")
    par = v["parallelism"] or {}
    dims.update({k: x for k, x in par.items() if x is not None})
    add_llm_training(sim, model, ranks, v["iterations"], Parallelism.for_ranks(len(ranks), **dims),
                     pipeline=v["pipeline"] or "1f1b", **common)


def _job_ranks(sim, v, key, index, ranks_of):
    """A workload's ranks (`ranks`, or `gpus` and `placement`) and job name, disjoint from
    every other workload's."""
    taken = np.zeros(sim.platform.n_ranks, bool)
    for r in sim.job_ranks.values():
        taken[r] = True
    if v["gpus"] is not None:
        if v["ranks"] is not None:
            raise ScenarioError(f"{key}.gpus", "give ranks or gpus (with placement), not both")
        ranks = place(sim.platform, v["gpus"], v["placement"] or "packed", taken, f"{key}.gpus")
    else:
        if v["placement"] is not None:
            raise ScenarioError(f"{key}.placement", "placement chooses the ranks of `gpus`; it needs gpus")
        ranks = ranks_of("all" if v["ranks"] is None else v["ranks"], f"{key}.ranks")
        if taken[ranks].any():
            raise ScenarioError(f"{key}.ranks", f"rank {int(ranks[taken[ranks]][0])} already runs another job; "
                                                "jobs need disjoint ranks")
    job = f"job{index}" if v["job"] is None else v["job"]
    if not job or job in sim.job_ranks:
        raise ScenarioError(f"{key}.job", f"expected a name no other workload uses, got {show(job)}")
    sim.job_ranks[job] = ranks
    return ranks, job


def _hertz(v, key) -> float:
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
