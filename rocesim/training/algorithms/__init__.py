"""Collective algorithms: one file per algorithm (or per family), one entry each in the table
below, found by name through the registry (`registry`).

An algorithm builds over the public `rocesim.training.transfers.Transfers`; its `Algorithm`
entry carries its operations, its flow-count estimate, its plan, its builder, its closed
form inside one server and, if NCCL's tuning may pick it, its tuned time.  From outside the
package: one file and one `register(Algorithm(...))` call; YAML, the API and `auto` see it.
"""
from rocesim.training.algorithms import (alltoall, astra_ring, auto, dimensional, double_binary_tree, halving_doubling,
                                         hierarchical, nccl_nvls, nccl_ring, nccl_tree, ring, rooted)
from rocesim.training.algorithms.registry import (ALGORITHMS, DEFAULT_ALGORITHM, Algorithm, Plan, algorithms_for,
                                                  lookup, per_step, register, unregister)

# the built-in algorithms, in the order `ALGORITHMS` lists them per operation
for _algorithm in (ring.RING, ring.RING_BIDIR, halving_doubling.HALVING_DOUBLING,
                   double_binary_tree.DOUBLE_BINARY_TREE, hierarchical.HIERARCHICAL, hierarchical.HIERARCHICAL_TREE,
                   dimensional.DIMENSIONAL, dimensional.THEMIS, nccl_ring.NCCL_RING, nccl_tree.NCCL_TREE,
                   nccl_nvls.NCCL_NVLS, nccl_nvls.NCCL_NVLS_TREE, astra_ring.ASTRA_RING, auto.AUTO, alltoall.DIRECT, alltoall.PAIRWISE,
                   rooted.CHAIN, rooted.DIRECT):
    register(_algorithm)
