"""Training workloads from Python, in one call each: build a generator's graph with a
Simulation's platform, NCCL settings and workload guard, and add it.

The generators (`rocesim.training.workloads`: `training_graph` for layer models,
ASTRA-sim and SimAI files, `llm_graph` for LLMs, `chakra_graph` for Chakra traces) know
nothing of a Simulation: each returns a `TrainingGraph` that `Simulation.add_workload`
adds.  These functions are that call written once:

    add_training(sim, preset("resnet50"), range(16), 3)
    # is
    sim.add_workload(training_graph(sim.platform, preset("resnet50"), range(16), 3,
                                    nccl=sim.nccl, guard=sim.workload_guard))
"""
from __future__ import annotations

from rocesim.training.graph import TrainingInfo
from rocesim.training.parallelism import Parallelism
from rocesim.training.workloads.chakra import ChakraTrace, chakra_graph
from rocesim.training.workloads.llm import LLM, llm_graph
from rocesim.training.workloads.model import Workload, training_graph


def add_training(sim, workload: Workload, ranks, iterations: int, **options) -> TrainingInfo:
    """Add `iterations` training iterations of `workload` on `ranks` (GPU ranks of the
    platform; on a plain topology, hosts) to `sim` (options as `training_graph`'s)."""
    return sim.add_workload(training_graph(sim.platform, workload, ranks, iterations, nccl=sim.nccl,
                                           guard=sim.workload_guard, **options))


def add_llm_training(sim, model: LLM, ranks, iterations: int, par: Parallelism, **options) -> TrainingInfo:
    """Add `iterations` iterations of `model` under `par` on `ranks` (GPU ranks) to `sim`
    (options as `llm_graph`'s)."""
    return sim.add_workload(llm_graph(sim.platform, model, ranks, iterations, par, nccl=sim.nccl,
                                      guard=sim.workload_guard, **options))


def add_chakra(sim, trace: ChakraTrace, ranks, iterations: int = 1, **options) -> list[int]:
    """Add `iterations` repetitions of `trace` on `ranks` (trace rank i on GPU rank ranks[i]
    of the simulation's platform; on a plain topology, host ranks[i]) to `sim` (options as
    `chakra_graph`'s); returns the iteration ids."""
    return sim.add_workload(chakra_graph(trace, ranks, iterations, platform=sim.platform, nccl=sim.nccl,
                                         guard=sim.workload_guard, **options)).iterations
