"""Import and export of flow lists in the HPCC ns-3 format."""

from __future__ import annotations

import os
from pathlib import Path

from .._textfile import Line, declared_records, read_lines
from ..errors import ScenarioError
from ..network.topology import Topology
from ..units import parse_time
from ._args import MAX_PRIO
from .flowtable import FlowTable

__all__ = ["hpcc_flow_file", "write_hpcc_flow_file"]

_LAYOUT = "src dst priority dport size_bytes start_seconds"
_PS_PER_SECOND = 10**12
_MAX_PORT = 65535


def _node(line: Line, index: int, name: str, topology: Topology | None) -> int:
    """Field ``index`` as a host id, mapped from file ids through ``topology`` if given."""
    node = line.int_field(index, name)
    if node < 0:
        raise line.error(f"{name} {node} must not be negative")
    if topology is None:
        return node
    mapping = topology.file_id_to_node
    if node >= mapping.size:
        raise line.error(
            f"{name} {node} is not a node of the topology (nodes 0..{mapping.size - 1})"
        )
    mapped = int(mapping[node])
    if topology.is_switch(mapped):
        raise line.error(f"{name} {node} is a switch; flows run between hosts")
    return mapped


def _bounded(line: Line, index: int, name: str, low: int, high: int | None = None) -> int:
    """Field ``index`` as an integer within ``low .. high`` (no upper bound if None)."""
    value = line.int_field(index, name)
    if value < low or (high is not None and value > high):
        bounds = f"at least {low}" if high is None else f"within {low}..{high}"
        raise line.error(f"{name} {value} must be {bounds}")
    return value


def hpcc_flow_file(path: str | os.PathLike[str], topology: Topology | None = None) -> FlowTable:
    """Read a flow file in the HPCC ns-3 format.

    Line 1 is the flow count; then one flow per line: ``src dst priority dport
    size_bytes start_seconds``. With ``topology``, node ids are the file ids of the
    topology's source file and are mapped to rocesim ids (and must be hosts). Rows keep
    the file's order. Blank lines and ``#`` comments are ignored. Problems raise
    :class:`ScenarioError` keyed ``file:line``.
    """
    name = os.fspath(path)
    lines = read_lines(name)
    if not lines:
        raise ScenarioError(name, "file is empty; line 1 must be the number of flows")
    lines[0].expect_fields(1, "flow_count")
    count = lines[0].int_field(0, "flow count")
    if count < 0:
        raise lines[0].error(f"flow count {count} must not be negative")
    columns: dict[str, list[int]] = {
        column: [] for column in ("src", "dst", "prio", "dport", "size", "start")
    }
    for line in declared_records(name, lines, 1, count, "flows"):
        line.expect_fields(6, _LAYOUT)
        src = _node(line, 0, "src", topology)
        dst = _node(line, 1, "dst", topology)
        if src == dst:
            raise line.error(f"src and dst are both node {line.fields[0]}; a flow needs two hosts")
        columns["src"].append(src)
        columns["dst"].append(dst)
        columns["prio"].append(_bounded(line, 2, "priority", 0, MAX_PRIO))
        columns["dport"].append(_bounded(line, 3, "dport", 0, _MAX_PORT))
        columns["size"].append(_bounded(line, 4, "size_bytes", 1))
        line.float_field(5, "start_seconds")
        columns["start"].append(parse_time(line.fields[5] + "s", line.where))
    if not count:
        return FlowTable.empty()
    return FlowTable(**columns)


def _seconds(ps: int) -> str:
    """Exact decimal seconds for a picosecond count."""
    whole, rest = divmod(ps, _PS_PER_SECOND)
    return f"{whole}.{rest:012d}"


def write_hpcc_flow_file(
    table: FlowTable, path: str | os.PathLike[str], topology: Topology | None = None
) -> None:
    """Write ``table`` as an HPCC ns-3 flow file, sorted by start time.

    With ``topology``, node ids are written as the ids of the file the topology was read
    from (see :attr:`Topology.original_ids`). Start times are written in seconds with
    picosecond precision.
    """
    flows = table.sorted_by_start()
    src, dst = flows.src, flows.dst
    if topology is not None:
        src, dst = topology.original_ids[src], topology.original_ids[dst]
    rows = zip(src, dst, flows.prio, flows.dport, flows.size, flows.start)
    out = [str(len(flows))]
    out += [
        f"{s} {d} {prio} {dport} {size} {_seconds(int(start))}"
        for s, d, prio, dport, size, start in rows
    ]
    Path(path).write_text("\n".join(out) + "\n", encoding="utf-8")
