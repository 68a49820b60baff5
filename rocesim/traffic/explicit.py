"""Flows listed one by one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..errors import ScenarioError
from ..units import parse_size, parse_time
from ._args import host_id, priority
from .flowtable import DEFAULT_FLOW_PRIORITY, FlowTable

__all__ = ["explicit_flows"]

_REQUIRED = ("src", "dst", "size", "start")
_OPTIONAL = ("prio",)


def _as_mapping(flow: object, key: str) -> Mapping[str, object]:
    if isinstance(flow, Mapping):
        unknown = sorted(set(flow) - set(_REQUIRED) - set(_OPTIONAL))
        if unknown:
            raise ScenarioError(
                key,
                f"unknown field {unknown[0]!r}; valid fields: {', '.join(_REQUIRED + _OPTIONAL)}",
            )
        missing = [name for name in _REQUIRED if name not in flow]
        if missing:
            raise ScenarioError(
                key, f"missing field {missing[0]!r}; a flow needs {', '.join(_REQUIRED)}"
            )
        return flow
    if isinstance(flow, Sequence) and not isinstance(flow, str):
        names = _REQUIRED + _OPTIONAL
        if not len(_REQUIRED) <= len(flow) <= len(names):
            raise ScenarioError(
                key, f"expected (src, dst, size, start[, prio]), got {len(flow)} values: {flow!r}"
            )
        return dict(zip(names, flow))
    raise ScenarioError(
        key, f"expected a mapping or a tuple (src, dst, size, start[, prio]), got {flow!r}"
    )


def explicit_flows(
    flows: Iterable[Mapping[str, object] | Sequence[object]], key: str = "flows"
) -> FlowTable:
    """A flow table from flows given one by one.

    Each flow is a mapping with ``src``, ``dst``, ``size``, ``start`` and optionally
    ``prio``, or a tuple in that order. Sizes and start times are unit strings
    (``"1MB"``, ``"10us"``) or ints in bytes and picoseconds. Errors are keyed
    ``key[i].field``.
    """
    columns: dict[str, list[int]] = {name: [] for name in _REQUIRED + _OPTIONAL}
    for i, flow in enumerate(flows):
        where = f"{key}[{i}]"
        fields = _as_mapping(flow, where)
        columns["src"].append(host_id(fields["src"], f"{where}.src"))
        columns["dst"].append(host_id(fields["dst"], f"{where}.dst"))
        columns["size"].append(parse_size(fields["size"], f"{where}.size", bare_ok=True))
        columns["start"].append(parse_time(fields["start"], f"{where}.start", bare_ok=True))
        columns["prio"].append(priority(fields.get("prio", DEFAULT_FLOW_PRIORITY), f"{where}.prio"))
    if not columns["src"]:
        return FlowTable.empty()
    return FlowTable(**columns)
