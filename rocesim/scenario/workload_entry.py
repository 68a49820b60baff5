"""The scenario's `{kind: workload}` traffic entries: a model (one of the workload formats
of `workload_formats.FORMATS`: a layer-model preset, an LLM preset, an ASTRA-sim 1.0 file,
a SimAI/AICB file or Chakra traces) on a job's ranks, for some iterations.

The ranks are `ranks`, or `gpus` placed `packed` or `spread` on free servers; jobs hold
disjoint ranks and name their rows of iterations.csv and collectives.csv (`job`).  The
entry's format builds its graph; this module, the front, adds it to the Simulation.
"""
from __future__ import annotations

import numpy as np

from rocesim.config import DEFAULT_FLOW_PRIORITY, PRIORITY
from rocesim.errors import ScenarioError
from rocesim.settings import REQUIRED, Boolean, Choice, Custom, Integer, Path, Section, Setting, Text, Time, show
from rocesim.scenario.workload_formats import FORMATS, Job, format_of, joined, models_text
from rocesim.training.algorithms import ALGORITHMS
from rocesim.training.jobs import PLACEMENTS, place
from rocesim.training.parallelism import SCHEDULES
from rocesim.training.workloads.model import DEPENDENCIES

# per-operation algorithms a workload may choose, and the workload roles that map to an op
ROLES = {"moe_alltoall": "alltoall", "gradients": "allreduce"}
# the options every format takes (the others: those its entry in FORMATS names)
COMMON = ("model", "ranks", "gpus", "placement", "job", "iterations", "algorithms", "chunks", "prio", "start", "pxn")

WORKLOAD = Section(
    "a training workload: iterations of a model's compute and communication on a job's ranks",
    model=Setting(Custom(models_text()), REQUIRED, "the model"),
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
    system=Setting(Path(), None, "Chakra traces: an ASTRA-sim 2.0 system file (JSON), read as ASTRA-sim reads "
                                 "it: each collective's implementation (ring: astra_ring), "
                                 "preferred-dataset-splits as chunks, active-chunks-per-dimension, endpoint-delay, "
                                 "local-mem-bw"),
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
    """Add a resolved workload entry `v` (WORKLOAD) to `sim`: its format (`format_of`)
    builds its graph, `Simulation.add_workload` adds it; `ranks_of(value, key)` reads a
    ranks list against the platform.  With `sim.workload_guard.estimate` a large workload
    is only sized: its projected nodes go to the guard's `estimated_nodes`."""
    fmt = format_of(v["model"], key)
    options = _options(fmt, v, key)
    ranks, job = _job_ranks(sim, v, key, index, ranks_of)
    common = dict(algorithms=_algorithms(v["algorithms"], key), chunks=v["chunks"], prio=v["prio"],
                  start=v["start"], tag=index, job=job, pxn=fmt.pxn if v["pxn"] is None else v["pxn"])
    preset = fmt.presets is not None             # model: NAME, or model: {key: value}
    where = Job(platform=sim.platform, ranks=ranks, iterations=v["iterations"], common=common, nccl=sim.nccl,
                guard=sim.workload_guard, key=key, model_key=f"{key}.model" if preset else f"{key}.model.{fmt.key}",
                base_dir=base_dir)
    graph = sim.workload_guard.build(fmt.build, v["model"] if preset else v["model"][fmt.key], options, where)
    if graph is not None:
        sim.add_workload(graph)


def _options(fmt, v, key) -> dict:
    """The options of its own format `fmt` takes, from entry `v` or the format's defaults;
    any other option that is not at its declared default is refused."""
    for name, setting in WORKLOAD.items():
        if name not in COMMON and name not in fmt.options and v[name] != setting.default:
            takers = [f.name for f in FORMATS.values() if name in f.options]
            raise ScenarioError(f"{key}.{name}", f"only {joined(takers, 'and')} take it")
    return {name: default if v[name] is None else v[name] for name, default in fmt.options.items()}


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
