"""Reading ASTRA-sim 1.0 text workloads into a `Workload`.

The file is whitespace-separated text (tabs or spaces, LF or CRLF line ends, blank
lines ignored):

* line 1: the parallelism (DATA, MODEL, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA,
  HYBRID_TRANSFORMER, MICRO), possibly followed by `key: value` tokens.  Names that
  begin with HYBRID_TRANSFORMER (e.g. HYBRID_TRANSFORMER_FWD_IN_BCKWD) count as
  HYBRID_TRANSFORMER; `model_parallel_NPU_group: N` sets the model-parallel group
  size (1 when absent); the other tokens are ignored.
* line 2: the number of layers.
* one line per layer, 12 fields: name, a reserved field (-1), forward compute,
  forward comm type, forward comm size, input-gradient compute, its comm type and
  size, weight-gradient compute, its comm type and size, and the delay after the
  weight update.

Compute times and the update delay are in clock cycles (`clock_hz` turns them into
picoseconds), sizes in bytes.  Comm types are NONE, ALLREDUCE, ALLGATHER, ALLTOALL and
REDUCESCATTER; NONE or a size of 0 means no communication.  Every error is a
`ScenarioError` keyed ``file:line``.
"""
from __future__ import annotations

import os

from rocesim._textfile import Line, end_of_file_error, read_lines
from rocesim.errors import ScenarioError
from rocesim.training.collectives import MAX_COUNT
from rocesim.training.workloads.model import PARALLELISMS, Comm, Layer, Workload
from rocesim.units import MAX_TIME_PS, format_time

COMM_TYPES = {"ALLREDUCE": "allreduce", "ALLGATHER": "allgather", "ALLTOALL": "alltoall",
              "REDUCESCATTER": "reducescatter"}
LAYER_LAYOUT = ("name reserved fwd_compute fwd_comm fwd_size ig_compute ig_comm ig_size "
                "wg_compute wg_comm wg_size update_delay")
MP_KEY = "model_parallel_NPU_group:"


def read_astra_sim(path, clock_hz: float = 1e9) -> Workload:
    """Read the ASTRA-sim 1.0 workload file `path`; cycles are converted at `clock_hz`."""
    name, lines, records, ps = read_layer_lines(path, clock_hz)
    parallelism, mp_size = _header(lines[0])
    layers = [parse_layer(line, ps, _astra_comm) for line in records]
    base = os.path.splitext(os.path.basename(name))[0]
    return Workload(base, parallelism, layers, mp_size=mp_size, source=f"ASTRA-sim workload {name}")


def read_layer_lines(path, clock_hz: float):
    """The file's name, its lines, the layer lines (as many as line 2 declares) and a
    cycles-to-picoseconds function; errors keyed file:line."""
    if isinstance(clock_hz, bool) or not isinstance(clock_hz, (int, float)) or not clock_hz > 0:
        raise ScenarioError("clock", f"expected a positive frequency in Hz, got {clock_hz!r}")
    name = os.fspath(path)
    lines = read_lines(name)
    if not lines:
        raise ScenarioError(f"{name}:1", "empty file: expected the parallelism on line 1 "
                                         f"({', '.join(PARALLELISMS)})")
    if len(lines) < 2:
        raise end_of_file_error(name, lines, "expected the number of layers on the line after the parallelism")
    count_line = lines[1]
    count_line.expect_fields(1, "number_of_layers")
    count = count_line.int_field(0, "the number of layers")
    if count < 1:
        raise count_line.error(f"the number of layers must be at least 1, got {count}")
    records = lines[2:]
    if len(records) < count:
        raise end_of_file_error(name, lines, f"line {count_line.number} declares {count} layers "
                                             f"but the file has {len(records)}")
    if len(records) > count:
        raise records[count].error(f"unexpected line after the {count} layers declared on "
                                   f"line {count_line.number}")

    def ps(cycles: int, line: Line, what: str) -> int:
        # (a time beyond the horizon would overflow the core's int64 picoseconds)
        value = int(round(cycles * 1e12 / clock_hz))
        if value > MAX_TIME_PS:
            raise line.error(f"{what} {cycles:,} is {format_time(value)} at {clock_hz:g} Hz, beyond the "
                             f"simulator's time horizon ({format_time(MAX_TIME_PS)})")
        return value

    return name, lines, records, ps


def parallelism_of(line: Line) -> str:
    """The parallelism named on line 1 (HYBRID_TRANSFORMER* counts as HYBRID_TRANSFORMER)."""
    word = line.fields[0]
    parallelism = "HYBRID_TRANSFORMER" if word.startswith("HYBRID_TRANSFORMER") else word
    if parallelism not in PARALLELISMS:
        raise line.error(f"unknown parallelism {word!r}; valid: {', '.join(PARALLELISMS)}")
    return parallelism


def header_value(line: Line, key: str, i: int) -> tuple[str, int]:
    """The value of the header token `i` (`key:` then the next token, or `key:value`) and
    the index of the token that held it."""
    rest = line.fields
    glued = rest[i][len(key):]
    if glued:
        return glued, i
    return (rest[i + 1], i + 1) if i + 1 < len(rest) else ("", i)


def _header(line: Line) -> tuple[str, int]:
    """The parallelism and the model-parallel group size from line 1."""
    parallelism = parallelism_of(line)
    mp_size = 1
    for i, token in enumerate(line.fields):
        if i == 0 or not token.startswith(MP_KEY):
            continue
        value, _ = header_value(line, MP_KEY, i)
        try:
            mp_size = int(value)
        except ValueError:
            raise line.error(f"{MP_KEY} must be followed by a positive integer, got {value!r}") from None
        if mp_size < 1:
            raise line.error(f"{MP_KEY} must be a positive integer, got {mp_size}")
    return parallelism, mp_size


def _astra_comm(line: Line, kind: str, size: int, phase: str) -> Comm | None:
    if kind == "NONE":
        return None
    if kind not in COMM_TYPES:
        raise line.error(f"unknown {phase} communication type {kind!r}; valid: NONE, {', '.join(COMM_TYPES)}")
    return Comm(COMM_TYPES[kind], size) if size > 0 else None


def parse_layer(line: Line, ps, comm) -> Layer:
    """A layer line (12 fields); `comm(line, TYPE, size, phase)` reads a communication
    (phase: forward, input-gradient, weight-gradient)."""
    line.expect_fields(12, LAYER_LAYOUT)
    line.int_field(1, "the reserved field (normally -1)")

    def count(index: int, what: str) -> int:
        value = line.int_field(index, what)
        if value < 0:
            raise line.error(f"{what} must not be negative, got {value}")
        if value > MAX_COUNT:
            raise line.error(f"{what} {value:,} is too large: at most {MAX_COUNT:,} (sizes are checked against "
                             "what can cross the network, times against the simulator's time horizon)")
        return value

    def read_comm(index: int, phase: str) -> Comm | None:
        size = count(index + 1, f"the {phase} communication size (bytes)")
        return comm(line, line.fields[index].upper(), size, phase)

    def time(index: int, what: str) -> int:
        return ps(count(index, what), line, what)

    return Layer(
        name=line.fields[0],
        fwd_ps=time(2, "the forward compute time (cycles)"),
        fwd_comm=read_comm(3, "forward"),
        ig_ps=time(5, "the input-gradient compute time (cycles)"),
        ig_comm=read_comm(6, "input-gradient"),
        wg_ps=time(8, "the weight-gradient compute time (cycles)"),
        wg_comm=read_comm(9, "weight-gradient"),
        update_ps=time(11, "the delay after the weight update (cycles)"),
        where=line.where,
    )
