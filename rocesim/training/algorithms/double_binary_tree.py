"""The double binary tree all-reduce.

Two binary trees, each reducing then broadcasting half of the data; a rank is a leaf in
one tree and inner in the other (NCCL's idea; here tree A is a heap over r_0..r_{p-1} and
tree B the heap over the reversed order: `rocesim.training.trees`).
"""
from __future__ import annotations

from rocesim.training.algorithms.registry import Algorithm, Plan, per_step
from rocesim.training.chunks import split_bytes
from rocesim.training.transfers import Transfers
from rocesim.training.trees import binary_trees, tree_allreduce

__all__ = ["DOUBLE_BINARY_TREE"]


def _double_binary_tree(t: Transfers, plan: Plan) -> None:
    p = t.ranks.size
    for parent, half in zip(binary_trees(p), split_bytes(plan.size, 2)):
        tree_allreduce(t, parent, int(half), p)


DOUBLE_BINARY_TREE = Algorithm("double_binary_tree", ("allreduce",), per_step(lambda op, p: 4),
                               build=_double_binary_tree)
