"""ASTRA-sim 2.0 system files (its ``--system-configuration`` JSON) as the collectives'
algorithms and settings, read as ASTRA-sim reads them (astra-sim/system/Sys.cc
`initialize_sys` and `generate_collective_impl_from_input`):

* ``all-reduce-implementation``, ``reduce-scatter-implementation``,
  ``all-gather-implementation``, ``all-to-all-implementation``: one implementation per
  network dimension (rocesim runs one for the whole collective: the list must name one, or
  the same one for every dimension): ``ring``/``oneRing`` -> ``astra_ring`` (ASTRA-sim's
  ring with its chunks and delays, `rocesim.training.algorithms.astra_ring`),
  ``direct``/``oneDirect`` (an all-to-all) -> ``direct``, ``halvingDoubling``/
  ``oneHalvingDoubling`` -> ``halving_doubling``, ``doubleBinaryTree`` (an all-reduce) ->
  ``double_binary_tree`` (these three as rocesim builds them, without the chunks' limits and
  delays below);
* ``preferred-dataset-splits``: the chunks each collective is cut into;
* ``active-chunks-per-dimension``: how many of them a rank runs at once (default 1);
* ``endpoint-delay``: ns a rank takes to process a message it received (default 10);
* ``local-mem-bw``: GB/s (10^9 B/s: Sys.cc multiplies by 10^9) at which a received message
  is reduced, written once and read twice.

The other keys are accepted and do nothing here, each for its reason (`IGNORED`).  Errors
are `ScenarioError`s keyed ``file: key``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from rocesim._textfile import read_text
from rocesim.errors import ScenarioError
from rocesim.training.algorithms.astra_ring import ACTIVE_CHUNKS, ENDPOINT_DELAY_PS, LOCAL_MEM_BW

__all__ = ["AstraSystem", "read_astra_system", "IMPLEMENTATIONS", "IGNORED"]

# the system file's key per operation, and each ASTRA-sim implementation -> rocesim's algorithm
OPS = {"allreduce": "all-reduce-implementation", "reducescatter": "reduce-scatter-implementation",
       "allgather": "all-gather-implementation", "alltoall": "all-to-all-implementation"}
IMPLEMENTATIONS = {"ring": "astra_ring", "oneRing": "astra_ring", "direct": "direct", "oneDirect": "direct",
                   "halvingDoubling": "halving_doubling", "oneHalvingDoubling": "halving_doubling",
                   "doubleBinaryTree": "double_binary_tree"}
IGNORED = {
    "scheduling-policy": "the order of chunks of different collectives ready at once (LIFO, FIFO): rocesim "
                         "starts every ready collective",
    "collective-optimization": "localBWAware splits a multi-dimensional all-reduce; the collective runs on one "
                               "platform here",
    "intra-dimension-scheduling": "the order of chunks in a dimension's queue",
    "inter-dimension-scheduling": "the order of a chunk's dimensions; one here",
    "boost-mode": "simulates one NPU per dimension and replicates it; rocesim simulates every NPU",
    "roofline-enabled": "compute time from a roofline model; rocesim replays each node's duration_micros",
    "peak-perf": "the roofline's peak",
    "local-reduction-delay": "read by ASTRA-sim but used by no collective it runs from Chakra traces",
    "model-shared-bus": "a shared memory bus model (off by default)",
    "L": "LogGP's latency (the shared bus model)", "o": "LogGP's overhead", "g": "LogGP's gap",
    "G": "LogGP's gap per byte",
    "replay-only": "replays every node's duration", "trace-enabled": "ASTRA-sim's debug log",
    "track-local-mem": "ASTRA-sim's memory trace", "local-mem-trace-filename": "ASTRA-sim's memory trace",
}
for _op, _key in OPS.items():
    IGNORED[f"{_key}-custom"] = "a custom collective (an MSCCL-style Chakra graph) rocesim does not run"


@dataclass(frozen=True)
class AstraSystem:
    """What a system file makes of the collectives: `algorithms` per operation, the
    `chunks` each is cut into, and `options` for the algorithms (`Plan.options`)."""

    algorithms: dict = field(default_factory=dict)
    chunks: int = 1
    options: dict = field(default_factory=dict)


def _number(j, key, where, default, integer, low):
    v = j.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not float(v).is_integer()) \
            or not v >= low:
        raise ScenarioError(f"{where}: {key}", f"expected {'an integer' if integer else 'a number'} >= {low}, "
                                               f"got {v!r}")
    return int(v) if integer else float(v)


def _implementation(j, op, key, where) -> str | None:
    names = j.get(key)
    if names is None:
        return None
    if not isinstance(names, list) or not names or not all(isinstance(x, str) for x in names):
        raise ScenarioError(f"{where}: {key}", f"expected a list of implementations (one per dimension), got "
                                               f"{names!r}")
    if len(set(names)) != 1:
        raise ScenarioError(f"{where}: {key}", f"one implementation per dimension ({', '.join(names)}): rocesim "
                                               "runs one algorithm over the whole collective; name the same one "
                                               "for every dimension")
    name = names[0]
    base = name if name in IMPLEMENTATIONS else name.rstrip("0123456789")      # direct<window>
    algorithm = IMPLEMENTATIONS.get(base)
    if algorithm is None:
        raise ScenarioError(f"{where}: {key}", f"unknown implementation {name!r}; ASTRA-sim's: "
                                               f"{', '.join(IMPLEMENTATIONS)}")
    if algorithm == "direct" and op != "alltoall":
        raise ScenarioError(f"{where}: {key}", f"{name} for {op}: rocesim has a direct all-to-all only")
    if algorithm == "double_binary_tree" and op != "allreduce":
        raise ScenarioError(f"{where}: {key}", f"{name} is an all-reduce")
    return algorithm


def read_astra_system(path) -> AstraSystem:
    """The ASTRA-sim 2.0 system file `path` (JSON), read as ASTRA-sim reads it."""
    where = os.fspath(path)
    try:
        j = json.loads(read_text(where))
    except json.JSONDecodeError as e:
        raise ScenarioError(f"{where}:{e.lineno}", f"not JSON: {e.msg}") from None
    if not isinstance(j, dict):
        raise ScenarioError(where, "an ASTRA-sim system file holds a JSON object")
    known = set(IGNORED) | set(OPS.values()) | {"preferred-dataset-splits", "active-chunks-per-dimension",
                                                 "endpoint-delay", "local-mem-bw"}
    for k in j:
        if k not in known:
            raise ScenarioError(f"{where}: {k}", "not a key ASTRA-sim 2.0 reads; its keys: " + ", ".join(sorted(known)))
    algorithms = {op: a for op, key in OPS.items() if (a := _implementation(j, op, key, where)) is not None}
    options = {ACTIVE_CHUNKS: _number(j, "active-chunks-per-dimension", where, 1, True, 1),
               ENDPOINT_DELAY_PS: round(_number(j, "endpoint-delay", where, 10, False, 0) * 1000)}
    if "local-mem-bw" in j:
        options[LOCAL_MEM_BW] = _number(j, "local-mem-bw", where, 0, False, 1e-9) * 1e9
    return AstraSystem(algorithms, _number(j, "preferred-dataset-splits", where, 1, True, 1), options)
