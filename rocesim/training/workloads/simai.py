"""Reading SimAI 1.6 / AICB workload files into a `Workload`.

SimAI (github aliyun/SimAI, astra-sim-alibabacloud/astra-sim/workload/Workload.cc
`initialize_workload`) extends ASTRA-sim 1.0's text format; AICB
(github aliyun/aicb, workload_generator/SimAI_training_workload_generator.py `dump_file`)
writes it.  Layout (whitespace-separated, one layer per line, 12 fields as ASTRA-sim's:
name, -1, forward compute, type, size, input-gradient compute, type, size,
weight-gradient compute, type, size, delay):

* line 1: the parallelism, then `key: value` tokens.  HYBRID_TRANSFORMER and
  HYBRID_TRANSFORMER_FWD_IN_BCKWD read, as SimAI does: `model_parallel_NPU_group` (TP
  size), `ep` (expert parallelism), `pp` (pipeline stages), `vpp`, `ga` (micro-batches per
  iteration: AICB lists each micro-batch's layers, `ga` times, after the iteration's
  gradient layers), `all_gpus` (the job's GPUs), `pp_comm` or `pp_comm:` (bytes a rank
  sends to the next stage per micro-batch: AICB's 2 b s h, over tp with sequence
  parallelism), `checkpoints: N l1 .. lN` (activation checkpoints) and
  `checkpoint_initiates: M l1 .. lM` (layers whose backward first recomputes the forward
  from the checkpoint below them).  Absent keys default to 1 (all_gpus: the job's ranks;
  pp_comm: 0).  Other tokens are ignored (SimAI ignores them too; AICB's inference files
  write `mode: 1`).  Other parallelisms (MICRO, DATA, ...) read no key, as in SimAI.
* line 2: the number of layers.
* communication types (Workload.cc `initialize_workload`): ALLREDUCE, ALLGATHER,
  REDUCESCATTER, ALLTOALL, ALLREDUCEALLTOALL, each alone (forward and input-gradient: the
  TP group; weight-gradient: the DP group) or with `_EP` (the expert-parallel group) or
  `_DP_EP` (the expert-data-parallel group); NONE; BROADCAST (from the group's first rank).
  A size of 0 is no communication.

Where rocesim differs from SimAI 1.6, on purpose:

* BROADCAST: SimAI's reader knows no BROADCAST and silently drops it (AICB writes one for
  the "norm" layer: Megatron's broadcast of the batch in the TP group); rocesim runs it.
* ALLREDUCEALLTOALL: SimAI tests the ALLREDUCE prefix first, so it reads it as an
  all-reduce with no group, which it cannot run; rocesim runs ASTRA-sim's meaning, an
  all-reduce then an all-to-all of the same size, on the group of its suffix.
* An unknown type or suffix (SimAI: no communication, or group NONE) is an error.
* `checkpoints:` lists: SimAI's parser registers only the first layer of each list
  (its index `j` restarts at 2 on every step); rocesim reads them all.
* Pipeline: SimAI builds its groups with one stage (Sys.cc `mock_nccl_grobal_group_init`:
  PP_size = 1, so DP spans all_gpus / TP) and adds the bubble and pp_comm time after the
  run as a formula (Layer.cc `report`); rocesim runs `pp` stages of all_gpus / pp ranks,
  each with the file's layers, with pp_comm transfers between them (see model.py); `vpp`
  is read and checked but not used (no interleaving).

Every error is one `ScenarioError` keyed ``file:line``, and so is every number out of range:
a compute time or delay beyond the simulator's time horizon at the file's clock, any count
above 2^62, a communication size no collective could move within the horizon on the job's
fastest link (`rocesim.training.collectives.size_limit`), checked before anything is built.
"""
from __future__ import annotations

import os

from rocesim._textfile import Line
from rocesim.training.workloads.astra import header_value, parallelism_of, parse_layer, read_layer_lines
from rocesim.training.workloads.model import Comm, Workload

BASE_TYPES = {"ALLREDUCEALLTOALL": "allreduce_alltoall", "ALLREDUCE": "allreduce", "ALLGATHER": "allgather",
              "REDUCESCATTER": "reducescatter", "ALLTOALL": "alltoall", "BROADCAST": "broadcast"}
SUFFIXES = {"_EP": "ep", "_DP_EP": "dp_ep"}
COUNT_KEYS = {"model_parallel_NPU_group": "tp", "ep": "ep", "pp": "pp", "vpp": "vpp", "ga": "ga",
              "all_gpus": "all_gpus"}
LIST_KEYS = ("checkpoints", "checkpoint_initiates")


def comm_type(line: Line, kind: str, size: int, phase: str, transformer: bool = True) -> Comm | None:
    """A SimAI communication type: the collective and its group (see the module's docstring)."""
    if kind == "NONE" or size == 0:
        if kind != "NONE":
            comm_type(line, kind, 1, phase, transformer)       # still a type it knows
        return None
    for base, op in BASE_TYPES.items():
        if not kind.startswith(base):
            continue
        suffix = kind[len(base):]
        if suffix == "":
            group = ("dp" if phase == "weight-gradient" else "mp") if transformer else "auto"
            return Comm(op, size, group)
        if suffix in SUFFIXES and transformer:
            return Comm(op, size, SUFFIXES[suffix])
        break
    valid = ", ".join(b + s for b in BASE_TYPES for s in ("", *SUFFIXES))
    raise line.error(f"{phase} communication type {kind!r} has no group SimAI knows; valid: NONE, {valid}"
                     + ("" if transformer else " (the _EP and _DP_EP groups need HYBRID_TRANSFORMER)"))


def read_simai(path, clock_hz: float = 1e9) -> Workload:
    """Read the SimAI/AICB workload file `path`; compute times and delays count cycles of
    `clock_hz` (SimAI's ticks are nanoseconds: 1 GHz)."""
    name, lines, records, ps = read_layer_lines(path, clock_hz)
    head = lines[0]
    parallelism = parallelism_of(head)
    transformer = parallelism == "HYBRID_TRANSFORMER"
    h, ignored = _header(head) if transformer else ({}, head.fields[1:])
    layers = [parse_layer(line, ps, lambda ln, k, s, ph: comm_type(ln, k, s, ph, transformer)) for line in records]
    wl = Workload(os.path.splitext(os.path.basename(name))[0], parallelism, layers, mp_size=h.get("tp", 1),
                  source=f"SimAI workload {name}" + (f" (ignored: {' '.join(ignored)})" if ignored else ""),
                  ep_size=h.get("ep", 1), pp=h.get("pp", 1), vpp=h.get("vpp", 1), ga=h.get("ga", 1),
                  all_gpus=h.get("all_gpus"), pp_comm=h.get("pp_comm", 0),
                  checkpoints=frozenset(h.get("checkpoints", ())),
                  checkpoint_initiates=frozenset(h.get("checkpoint_initiates", ())), where=head.where)
    _check(wl, head, lines[1], records)
    return wl


def _integer(line: Line, key: str, text: str, lo: int) -> int:
    """A header value: an integer (AICB may write pp_comm as 50331648.0) of at least `lo`."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value.is_integer() or value < lo:
        raise line.error(f"{key}: expected an integer >= {lo}, got {text!r}")
    return int(value)


def _header(line: Line) -> tuple[dict, list[str]]:
    """The header's values (tp, ep, pp, vpp, ga, all_gpus, pp_comm, checkpoint lists) and
    the tokens it ignores."""
    out, ignored = {}, []
    fields = line.fields
    i = 1
    while i < len(fields):
        token = fields[i]
        key = token.split(":", 1)[0]
        if key in COUNT_KEYS or key == "pp_comm":
            if key != "pp_comm" and not token.startswith(key + ":"):
                raise line.error(f"expected '{key}:' followed by its value, got {token!r}")
            text, i = header_value(line, token[:len(key) + 1] if ":" in token else key, i)
            out[COUNT_KEYS.get(key, key)] = _integer(line, key, text, 0 if key == "pp_comm" else 1)
        elif key in LIST_KEYS and token.startswith(key + ":"):
            text, i = header_value(line, key + ":", i)
            n = _integer(line, key, text, 0)
            if i + n >= len(fields):
                raise line.error(f"{key}: {n} announces {n} layer indices; line 1 ends after {len(fields) - i - 1}")
            out[key] = [_integer(line, f"{key} layer", fields[i + 1 + k], 0) for k in range(n)]
            i += n
        else:
            ignored.append(token)
        i += 1
    return out, ignored


def _check(wl: Workload, head: Line, count_line: Line, records: list[Line]) -> None:
    """Header values that disagree with each other or with the layers (SimAI only warns)."""
    n = len(wl.layers)
    tp, pp, ep = wl.mp_size, wl.pp, wl.ep_size
    if wl.all_gpus is not None:
        if wl.all_gpus % (tp * pp):
            raise head.error(f"model_parallel_NPU_group: {tp} x pp: {pp} = {tp * pp} does not divide "
                             f"all_gpus: {wl.all_gpus}")
        dp = wl.all_gpus // (tp * pp)
        if dp % ep:
            raise head.error(f"ep: {ep} does not divide the data-parallel size all_gpus / (tp pp) = {dp}")
    if pp > 1 and wl.pp_comm == 0:
        raise head.error(f"pp: {pp} needs pp_comm: the bytes a rank sends to the next stage per micro-batch")
    if pp == 1 and wl.pp_comm > 0:
        raise head.error(f"pp_comm: {wl.pp_comm} with pp: 1 (one stage sends nothing); AICB writes pp_comm: 0")
    for key, layers in (("checkpoints", wl.checkpoints), ("checkpoint_initiates", wl.checkpoint_initiates)):
        bad = [x for x in sorted(layers) if x >= n]
        if bad:
            raise head.error(f"{key}: layer {bad[0]} is not one of the {n} layers (0..{n - 1})")
    for li in sorted(wl.checkpoint_initiates):
        if not any(c < li for c in wl.checkpoints):
            raise head.error(f"checkpoint_initiates: layer {li} needs a checkpoint layer before it (checkpoints: "
                             f"{' '.join(map(str, sorted(wl.checkpoints))) or 'none'})")
    if pp > 1:
        wl.prologue, wl.epilogue = _micro_batch_span(records, wl.ga, count_line, pp)


def _micro_batch_span(records: list[Line], ga: int, count_line: Line, pp: int) -> tuple[int, int]:
    """How many layers come before and after the `ga` identical micro-batch blocks (AICB
    writes the iteration's gradient layers, ga copies of a micro-batch's layers, then the
    cross-entropy and optimizer layers): the shortest prologue, then the longest blocks.
    Blocks match by names and communication (AICB's first micro-batch may compute longer)."""
    rows = [tuple(r.fields[i] for i in (0, 3, 4, 6, 7, 9, 10)) for r in records]
    n = len(rows)
    for p in range(n):
        for k in range((n - p) // ga, 0, -1):
            if all(rows[p:p + k] == rows[p + j * k:p + (j + 1) * k] for j in range(1, ga)):
                return p, n - p - ga * k
    raise count_line.error(f"with pp: {pp} and ga: {ga}, the {n} layers must hold {ga} micro-batch "
                           "blocks in a row with the same layer names and communication (AICB repeats a micro-batch's layers "
                           "ga times)")
