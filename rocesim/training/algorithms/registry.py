"""The collective algorithms by name: one `Algorithm` per name and set of operations.

An algorithm is a file with its builder (over the public `rocesim.training.transfers.Transfers`)
and one `Algorithm` entry, registered with `register`: the built-in ones by the package's
table (`rocesim.training.algorithms`), others from anywhere with the same call.  Everything
that dispatches on an algorithm asks its entry: `append_collective` (plan, closed form,
builder), the memory guard (`estimate`), `auto` (the algorithms with a tuned-time model),
and YAML and the API (`ALGORITHMS`, the names valid per operation).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterator

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.network.platform import Platform
from rocesim.training.nccl import NcclConfig
from rocesim.training.transfers import Transfers

__all__ = ["Algorithm", "Plan", "ALGORITHMS", "DEFAULT_ALGORITHM", "register", "unregister", "lookup",
           "algorithms_for", "per_step", "smallest_block"]

# the operations, and the algorithm each runs unless told (nccl-tests' names)
DEFAULT_ALGORITHM = MappingProxyType({"allreduce": "auto", "reducescatter": "auto", "allgather": "auto",
                                      "alltoall": "direct", "broadcast": "ring", "reduce": "ring"})


@dataclass(frozen=True)
class Plan:
    """What a collective's builder is asked for, its inputs checked: the operation, its size
    as nccl-tests counts it (`rocesim.training.collectives`), the options, and how its
    transfers are cut."""

    op: str
    size: int
    chunks: int                  # collective chunks, at least one byte each
    pieces: int                  # what each transfer is cut into (`Transfers.pieces`)
    lanes: int = 1               # channels sharing each GPU's scale-up port (`Transfers.lanes`)
    stream: bool = False         # built as streams, one transfer per hop (NCCL's tree, `pipeline: stream`)
    group_size: int | None = None
    nccl: NcclConfig = NcclConfig()
    # the algorithm's own settings (ASTRA-sim's system file's for astra_ring)
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


# (op, ranks, chunks, size, nccl) -> about how many nodes, an upper end
Estimate = Callable[[str, int, int, int, NcclConfig], int]


@dataclass(frozen=True)
class Algorithm:
    """One collective algorithm: its `name` and the operations (`ops`) it runs, and

    * `estimate(op, p, chunks, size, nccl)`: about how many flows and compute steps it adds
      on p ranks, an upper end (the memory guard's, before anything is built);
    * `build(t, plan)`: adds its transfers to a `Transfers`, marking the first and final ones;
    * `plan(plan, platform, ranks)`: the plan it runs, from the default one (pieces = chunks,
      one lane), if it cuts its transfers otherwise (None: the default);
    * `closed_form(t, plan)`: its duration in ps when every rank sits in one server, from the
      fluid scale-up model, or None (None: it has none);
    * for the algorithms NCCL's tuning may pick (`auto`): `tuned_us(op, platform, ranks, size)`,
      NCCL's estimate of its time, and `available(op, platform, ranks)`, whether NCCL has it there;
    * `pick(op, platform, ranks, size)` instead of `build`: the name of the algorithm it
      runs (`auto`);
    * `copyable`: whether a group's graph may be copied from another group's of the same
      shape (`collectives.Templates`: it depends on the ranks only through their servers'
      order and their GPUs' local indices).
    """

    name: str
    ops: tuple[str, ...]
    estimate: Estimate
    build: Callable[[Transfers, Plan], None] | None = None
    plan: Callable[[Plan, Platform, np.ndarray], Plan] | None = None
    closed_form: Callable[[Transfers, Plan], int | None] | None = None
    tuned_us: Callable[[str, Platform, np.ndarray, int], float] | None = None
    available: Callable[[str, Platform, np.ndarray], bool] | None = None
    pick: Callable[[str, Platform, np.ndarray, int], str] | None = None
    copyable: bool = True


_REGISTERED: dict[tuple[str, str], Algorithm] = {}        # (op, name) -> algorithm, in registration order


def register(algorithm: Algorithm) -> None:
    """Make `algorithm` available by its name for each of its operations."""
    if not isinstance(algorithm.name, str) or not algorithm.name.isidentifier():
        raise ValueError(f"an algorithm's name is a word, got {algorithm.name!r}")
    if (algorithm.build is None) == (algorithm.pick is None):
        raise ValueError(f"algorithm {algorithm.name!r} needs a builder or a pick, and not both")
    if (algorithm.tuned_us is None) != (algorithm.available is None):
        raise ValueError(f"algorithm {algorithm.name!r}: tuned_us and available go together")
    for op in algorithm.ops:
        if op not in DEFAULT_ALGORITHM:
            raise ValueError(f"algorithm {algorithm.name!r}: unknown operation {op!r}; "
                             f"valid: {', '.join(DEFAULT_ALGORITHM)}")
        if (op, algorithm.name) in _REGISTERED:
            raise ValueError(f"{op} has an algorithm {algorithm.name!r} already")
    for op in algorithm.ops:
        _REGISTERED[(op, algorithm.name)] = algorithm


def unregister(name: str) -> None:
    """Remove the algorithm called `name`, for every operation."""
    for key in [key for key in _REGISTERED if key[1] == name]:
        del _REGISTERED[key]


def algorithms_for(op: str) -> tuple[Algorithm, ...]:
    """The algorithms of `op`, in registration order."""
    return tuple(a for (o, _), a in _REGISTERED.items() if o == op)


def lookup(op, name, key: str = "algorithm") -> Algorithm:
    """The algorithm `name` of operation `op`; a ScenarioError naming the valid ones if there
    is none (`key`: the algorithm's key in the caller's input)."""
    if op not in DEFAULT_ALGORITHM:
        raise ScenarioError("op", f"unknown collective {op!r}; valid: {', '.join(DEFAULT_ALGORITHM)}")
    found = _REGISTERED.get((op, name)) if isinstance(name, str) else None
    if found is None:
        raise ScenarioError(key, f"{op} has no algorithm {name!r}; valid: {', '.join(ALGORITHMS[op])}")
    return found


class _Names(Mapping):
    """Operation -> the names of its algorithms, in registration order, as registered now."""

    def __getitem__(self, op: str) -> tuple[str, ...]:
        if op not in DEFAULT_ALGORITHM:
            raise KeyError(op)
        return tuple(a.name for a in algorithms_for(op))

    def __iter__(self) -> Iterator[str]:
        return iter(DEFAULT_ALGORITHM)

    def __len__(self) -> int:
        return len(DEFAULT_ALGORITHM)


ALGORITHMS: Mapping[str, tuple[str, ...]] = _Names()


def smallest_block(op: str, size: int, p: int) -> int:
    """The smallest block a rank sends of a collective of `size` bytes on p ranks with the
    textbook algorithms (a chunk smaller than that would be empty)."""
    return {"allreduce": size // (2 * p), "reducescatter": size // p, "allgather": size // p,
            "alltoall": size // p}.get(op, size)


def per_step(steps: Callable[[str, int], int]) -> Estimate:
    """The estimate of an algorithm whose ranks each send `steps(op, p)` times per chunk:
    chunks x p x (steps + 4) (a start, a done and a node or two of slack per rank)."""
    return lambda op, p, chunks, size, nccl: chunks * p * (steps(op, p) + 4)
