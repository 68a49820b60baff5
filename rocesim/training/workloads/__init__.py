"""Training workloads: built-in models, ASTRA-sim and Chakra imports, iteration graphs."""
from rocesim.training.workloads.model import Comm, Layer, Workload, add_training
from rocesim.training.workloads.presets import PRESETS, preset

__all__ = ["Comm", "Layer", "Workload", "add_training", "PRESETS", "preset"]
