"""Training workloads: built-in models, ASTRA-sim and Chakra imports, iteration graphs
(each generator returns a `TrainingGraph`; `rocesim.workload_api` adds one to a Simulation)."""
from rocesim.training.workloads.model import Comm, Layer, Workload, training_graph
from rocesim.training.workloads.presets import PRESETS, preset

__all__ = ["Comm", "Layer", "Workload", "training_graph", "PRESETS", "preset"]
