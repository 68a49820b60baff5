"""The flow table: the flows of a scenario as parallel numpy arrays."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np

from ..config import DEFAULT_FLOW_PRIORITY, OWN_QP
from ..errors import ScenarioError
from ..units import MAX_TIME_PS

__all__ = ["FlowTable", "DEFAULT_FLOW_PRIORITY", "DEFAULT_DPORT", "OWN_QP"]


DEFAULT_DPORT = 100
"""Destination port of flows that do not name one, as in HPCC's generated flow files."""

_DTYPES: dict[str, type[np.integer]] = {
    "src": np.int32,
    "dst": np.int32,
    "size": np.int64,
    "start": np.int64,
    "prio": np.uint8,
    "dport": np.int32,
    "tag": np.int32,
    "connection": np.int64,
}
_DEFAULTS = {"prio": DEFAULT_FLOW_PRIORITY, "dport": DEFAULT_DPORT, "tag": 0, "connection": OWN_QP}


def _integer_column(value: object, name: str, length: int | None) -> np.ndarray:
    """``value`` as a 1-D array of the column's dtype; a scalar fills ``length`` rows."""
    dtype = _DTYPES[name]
    array = np.asarray(value)
    if array.ndim == 0 and length is not None:
        array = np.full(length, array)
    if array.ndim != 1:
        raise ScenarioError(f"flows.{name}", f"expected a 1-D sequence, got shape {array.shape}")
    if length is not None and array.size != length:
        raise ScenarioError(
            f"flows.{name}", f"has {array.size} entries but src has {length}; columns must match"
        )
    if array.size == 0:
        return np.empty(0, dtype=dtype)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise ScenarioError(f"flows.{name}", f"values must be integers, got dtype {array.dtype}")
    info = np.iinfo(dtype)
    low, high = int(array.min()), int(array.max())
    if low < info.min or high > info.max:
        raise ScenarioError(
            f"flows.{name}", f"values {low}..{high} do not fit {np.dtype(dtype).name}"
        )
    return array.astype(dtype, copy=False)


@dataclass(eq=False)
class FlowTable:
    """Flows as equal-length numpy arrays, one row per flow.

    Columns: ``src`` and ``dst`` host ids (int32), ``size`` in bytes (int64), ``start``
    in picoseconds (int64), ``prio`` the 802.1p priority (uint8, default
    :data:`DEFAULT_FLOW_PRIORITY`), ``dport`` the destination port used when exporting to HPCC
    (int32, default :data:`DEFAULT_DPORT`), ``tag`` (int32, default 0), the index of
    the traffic entry that produced the flow, and ``connection`` (int64, default
    :data:`OWN_QP`: each flow its own queue pair), the label of the queue pair it rides:
    the flows of one (src, dst) pair with the same label ride one, and take one path.
    The constructor converts its arguments to these dtypes; ``prio``, ``dport``, ``tag``
    and ``connection`` may be scalars.
    """

    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    start: np.ndarray
    prio: np.ndarray | int | None = None
    dport: np.ndarray | int | None = None
    tag: np.ndarray | int | None = None
    connection: np.ndarray | int | None = None

    def __post_init__(self) -> None:
        self.src = _integer_column(self.src, "src", None)
        length = self.src.size
        for name in ("dst", "size", "start"):
            setattr(self, name, _integer_column(getattr(self, name), name, length))
        for name, default in _DEFAULTS.items():
            value = getattr(self, name)
            setattr(self, name, _integer_column(default if value is None else value, name, length))

    @classmethod
    def empty(cls) -> FlowTable:
        """A table with no flows."""
        return cls(*(np.empty(0, dtype=_DTYPES[name]) for name in ("src", "dst", "size", "start")))

    @classmethod
    def concat(cls, tables: Iterable[FlowTable]) -> FlowTable:
        """All rows of ``tables``, in order, as one table."""
        tables = list(tables)
        if not tables:
            return cls.empty()
        return cls(**{name: np.concatenate([getattr(t, name) for t in tables]) for name in _DTYPES})

    def __len__(self) -> int:
        return int(self.src.size)

    def __repr__(self) -> str:
        if not len(self):
            return "FlowTable(0 flows)"
        return (
            f"FlowTable({len(self)} flows, {int(self.size.sum())} bytes, "
            f"start {int(self.start.min())}..{int(self.start.max())} ps)"
        )

    def columns(self) -> dict[str, np.ndarray]:
        """The columns by name, in declaration order."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def take(self, index: np.ndarray | slice) -> FlowTable:
        """The rows selected by ``index`` (an index array, boolean mask or slice)."""
        return FlowTable(**{name: column[index] for name, column in self.columns().items()})

    def sorted_by_start(self) -> FlowTable:
        """The rows ordered by start time; flows starting together keep their order."""
        return self.take(np.argsort(self.start, kind="stable"))

    def with_tag(self, tag: int) -> FlowTable:
        """A copy with every flow's ``tag`` set to ``tag``."""
        columns = self.columns()
        columns["tag"] = tag
        return FlowTable(**columns)

    def equals(self, other: FlowTable) -> bool:
        """Whether ``other`` holds exactly the same rows in the same order."""
        return all(
            np.array_equal(a, b) for a, b in zip(self.columns().values(), other.columns().values())
        )

    def validate(self, n_hosts: int, key: str = "traffic") -> None:
        """Check every flow runs between two different hosts, carries data and starts at t >= 0.

        Raises :class:`ScenarioError` keyed ``key`` for the first bad flow, naming the
        flow's row and tag.
        """
        checks = (
            (
                (self.src < 0) | (self.src >= n_hosts),
                "src {src} is not a host; hosts are 0..{last}",
            ),
            (
                (self.dst < 0) | (self.dst >= n_hosts),
                "dst {dst} is not a host; hosts are 0..{last}",
            ),
            (self.src == self.dst, "src and dst are both {src}; a flow needs two different hosts"),
            (self.size <= 0, "size {size} B must be at least 1 byte"),
            ((self.prio < 1) | (self.prio > 7), "prio {prio}: data flows use priorities 1..7 (0 is the control "
                                                "queue)"),
            (self.start < 0, "start {start} ps must not be negative"),
            (self.start > MAX_TIME_PS, "start {start} ps is after the simulator's time horizon "
                                       f"({MAX_TIME_PS} ps, a million seconds)"),
            (self.connection < OWN_QP, "connection {connection}: a queue pair's label is a number >= 0 "
                                       f"({OWN_QP}: the flow's own)"),
        )
        for bad, message in checks:
            if bad.any():
                row = int(np.argmax(bad))
                values = {name: int(column[row]) for name, column in self.columns().items()}
                reason = message.format(last=n_hosts - 1, **values)
                raise ScenarioError(key, f"flow {row} (tag {values['tag']}): {reason}")
