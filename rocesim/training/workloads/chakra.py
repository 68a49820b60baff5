"""Importing Chakra execution traces (one file per rank) and running them as a graph.

A trace is the files ``<prefix>.0.et``, ``<prefix>.1.et``, ..., one per rank, each
possibly gzip-compressed (recognised by its magic bytes, not its name).  A file is a
stream of protobuf messages, each preceded by its length as a varint: first a
``GlobalMetadata``, then ``Node`` messages.  The messages are decoded here from the
wire format (`rocesim.training.workloads._protowire`); there is no generated code.

Where the numbers come from: the schema file ``schema/protobuf/et_def.proto`` of the
mlcommons/chakra repository (the copy in astra-sim/chakra has the same numbers).  Used:

* ``GlobalMetadata``: version = 1 (string), attr = 2 (repeated AttributeProto).
* ``Node``: id = 1, name = 2, type = 3 (NodeType), ctrl_deps = 4, data_deps = 5
  (repeated uint64, packed or not), start_time_micros = 6, duration_micros = 7,
  inputs = 8, outputs = 9 (IOInfo, skipped), attr = 10 (repeated AttributeProto),
  storage = 11 (skipped).
* ``AttributeProto``: name = 1, doc_string = 2, then one value: double 3, float 5,
  int32 7, int64 9, uint32 11, uint64 13, sint32 15, sint64 17, fixed32 19,
  fixed64 21, sfixed32 23, sfixed64 25, bool 27, string 29, bytes 31; each list
  variant is the next number (4, 6, ..., 32) and is a message whose field 1 holds the
  repeated values.
* ``NodeType``: INVALID 0, METADATA 1, MEM_LOAD 2, MEM_STORE 3, COMP 4, COMM_SEND 5,
  COMM_RECV 6, COMM_COLL 7 (newer: STORAGE 8, BATCH 9, CHECKPOINT 10).
* ``CollectiveCommType``: ALL_REDUCE 0, REDUCE 1, ALL_GATHER 2, GATHER 3, SCATTER 4,
  BROADCAST 5, ALL_TO_ALL 6, REDUCE_SCATTER 7, REDUCE_SCATTER_BLOCK 8, BARRIER 9.

As in proto3, a field that is absent reads as its default (id 0, type INVALID, no
dependencies); an attribute without a value reads as 0.

Every number is checked, keyed by its file and node: a duration beyond the simulator's time
horizon and a comm_size above 2^62 as the node is read; each collective's size and the
largest send against what the job's fastest link carries within the horizon
(`rocesim.training.collectives.check_size`), before anything is built; comm_src and
comm_dst against the ranks.  Ids and tags are names (any uint64 or int64, as the schema has
them), only compared.

Semantics (`chakra_graph`), ASTRA-sim 2.0's (astra-sim/workload/Workload.cc, `issue`, as of
its releases with Chakra's feeder v2; its feeder reads an absent ``is_cpu_op`` as false): a
node starts when all its data dependencies are done (its control dependencies, the call
tree's parent in what Chakra's PyTorch converter writes, order nothing: ASTRA-sim's feeder
reads data dependencies only, and Chakra's own feeder test trace has control dependencies
on nodes it left out and against the data dependencies).  A node with the attribute
``is_cpu_op: true`` is CPU time, whatever its type (but MEM_LOAD/MEM_STORE): it takes its
duration_micros, and no communication: what Chakra's PyTorch converter writes for the CPU
side of a collective (``c10d::allreduce_``, ``record_param_comms``: COMM_COLL_NODE without
comm_type) is the launch's CPU time, and the GPU-side node (``ncclKernel``, with comm_type
and comm_size) the collective.  On the GPU side, COMP_NODE computes for duration_micros;
COMM_COLL_NODE (attributes comm_type, comm_size in bytes) is a collective over all ranks:
the k-th GPU collective node of every rank (in node-id order) is the same collective, and
its comm_size is what ASTRA-sim reads it as: each rank's buffer, the input for an
all-gather (whose result is comm_size x ranks; rocesim counts an all-gather by its output,
as nccl-tests do, so it runs comm_size x ranks); COMM_SEND_NODE (comm_dst, comm_size,
comm_tag) and COMM_RECV_NODE (comm_src, comm_tag) pair up in node-id order per (sender,
receiver, tag) and become one flow that the recv node waits for.  Every other node is a
zero-duration step that only keeps the ordering.  Independent nodes of a rank may overlap:
only the dependencies order them (ASTRA-sim also runs one CPU op, one GPU compute and one
GPU communication of a rank at a time, in the order they become ready).
"""
from __future__ import annotations

import gzip
import io
import os
import zlib
from dataclasses import dataclass, field

import numpy as np

from rocesim._textfile import note_read
from rocesim.training.algorithms import DEFAULT_ALGORITHM
from rocesim.training.collectives import MAX_COUNT, append_collective, check_size, point_to_point
from rocesim.config import DEFAULT_FLOW_PRIORITY
from rocesim.errors import ScenarioError
from rocesim.memory import MEMORY_PER_FLOW, MemoryLimit, WorkloadGuard
from rocesim.training.graph import Graph, Progress, TrainingGraph
from rocesim.training.nccl import PXN_DEFAULT
from rocesim.training.transfers import hosts_platform
from rocesim.training.workloads import _protowire as pw
from rocesim.units import MAX_TIME_PS, format_time

INVALID_NODE, METADATA_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, \
    COMM_COLL_NODE = range(8)
NODE_TYPES = {0: "INVALID_NODE", 1: "METADATA_NODE", 2: "MEM_LOAD_NODE", 3: "MEM_STORE_NODE", 4: "COMP_NODE",
              5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE", 8: "STORAGE_NODE",
              9: "BATCH_NODE", 10: "CHECKPOINT_NODE"}
COMM_TYPES = {0: "ALL_REDUCE", 1: "REDUCE", 2: "ALL_GATHER", 3: "GATHER", 4: "SCATTER", 5: "BROADCAST",
              6: "ALL_TO_ALL", 7: "REDUCE_SCATTER", 8: "REDUCE_SCATTER_BLOCK", 9: "BARRIER"}
COLLECTIVE_OPS = {0: "allreduce", 1: "reduce", 2: "allgather", 5: "broadcast", 6: "alltoall", 7: "reducescatter"}
PS_PER_US = 10**6
GZIP_MAGIC = b"\x1f\x8b"

# Node fields: number -> (name, wire type); the dependency lists also come packed (LEN)
_NODE_FIELDS = {1: ("id", pw.VARINT), 2: ("name", pw.LEN), 3: ("type", pw.VARINT),
                4: ("ctrl_deps", pw.VARINT), 5: ("data_deps", pw.VARINT),
                6: ("start_time_micros", pw.VARINT), 7: ("duration_micros", pw.VARINT),
                8: ("inputs", pw.LEN), 9: ("outputs", pw.LEN), 10: ("attr", pw.LEN), 11: ("storage", pw.LEN)}
# AttributeProto scalar values: number -> (type, wire type, conversion of the raw value)
_ATTR_SCALARS = {
    3: ("double", pw.I64, pw.as_double), 5: ("float", pw.I32, pw.as_float),
    7: ("int32", pw.VARINT, lambda v: pw.as_signed(v, 32)), 9: ("int64", pw.VARINT, pw.as_signed),
    11: ("uint32", pw.VARINT, lambda v: v & 0xFFFFFFFF), 13: ("uint64", pw.VARINT, int),
    15: ("sint32", pw.VARINT, pw.unzigzag), 17: ("sint64", pw.VARINT, pw.unzigzag),
    19: ("fixed32", pw.I32, int), 21: ("fixed64", pw.I64, int),
    23: ("sfixed32", pw.I32, lambda v: pw.as_signed(v, 32)), 25: ("sfixed64", pw.I64, pw.as_signed),
    27: ("bool", pw.VARINT, bool), 29: ("string", pw.LEN, None), 31: ("bytes", pw.LEN, None),
}


@dataclass
class ChakraNode:
    """One node of a rank's trace, with the attributes the simulator uses pulled out."""

    id: int
    name: str = ""
    type: int = INVALID_NODE
    duration_ps: int = 0                 # duration_micros in ps (COMP_NODE and CPU ops)
    is_cpu_op: bool = False              # CPU time, whatever the type (ASTRA-sim's Workload::issue)
    comm_type: int | None = None         # CollectiveCommType (COMM_COLL_NODE)
    comm_size: int | None = None         # bytes
    comm_src: int | None = None          # rank (COMM_RECV_NODE)
    comm_dst: int | None = None          # rank (COMM_SEND_NODE)
    comm_tag: int | None = None
    data_deps: tuple = ()
    ctrl_deps: tuple = ()
    attrs: dict = field(default_factory=dict)    # every attribute, by name

    @property
    def type_name(self) -> str:
        return NODE_TYPES.get(self.type, f"node type {self.type}")

    @property
    def deps(self) -> list[int]:
        """What the node waits for: its data dependencies, each once.  Its control
        dependencies are its parent in the call tree (what Chakra's PyTorch converter writes
        there), which ASTRA-sim's feeder does not wait for either."""
        return list(dict.fromkeys(self.data_deps))


@dataclass
class ChakraTrace:
    """Per rank, its nodes sorted by id; `paths` names each rank's file (for errors)."""

    ranks: list[list[ChakraNode]]
    paths: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)

    @property
    def n_ranks(self) -> int:
        return len(self.ranks)

    def where(self, rank: int, node_id: int) -> str:
        """The error key of a node: ``file:node ID`` ("rank R" for a trace built in code)."""
        return f"{self.paths[rank] if rank < len(self.paths) else f'rank {rank}'}:node {node_id}"


# --- reading -----------------------------------------------------------------------------

def read_chakra(prefix, n_ranks: int | None = None, guard: WorkloadGuard | None = None) -> ChakraTrace:
    """Read ``<prefix>.<rank>.et`` for ranks 0..n_ranks-1 (None: as many consecutive ranks
    as there are files).  Every file is checked: wire format, node attributes, that each
    dependency names a node of the file and that the dependencies have no cycle.  What the
    reading holds is bounded by `guard`'s memory limit (`Simulation.workload_guard`; None:
    75% of the machine's memory), the ranks read before counted (`read_chakra_file`).

    Errors are `ScenarioError`s keyed by the file, ``file:byte N`` (wire format; N counts
    decompressed bytes for a gzipped file) or ``file:node ID``."""
    prefix = os.fspath(prefix)
    if n_ranks is not None and (isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1):
        raise ScenarioError("n_ranks", f"expected a positive number of ranks, got {n_ranks!r}")
    first = f"{prefix}.0.et"
    if not os.path.isfile(first):
        raise ScenarioError(first, "no such file: a Chakra trace is one file per rank, <prefix>.<rank>.et, "
                                   "starting at rank 0")
    if n_ranks is None:
        n_ranks = 1
        while os.path.isfile(f"{prefix}.{n_ranks}.et"):
            n_ranks += 1
    else:
        for r in range(n_ranks):
            if not os.path.isfile(f"{prefix}.{r}.et"):
                raise ScenarioError(f"{prefix}.{r}.et", f"no such file: the trace must have a file for each of "
                                                        f"the {n_ranks} ranks (0..{n_ranks - 1}); run it on as "
                                                        "many hosts as it has ranks")
        if os.path.isfile(f"{prefix}.{n_ranks}.et"):
            raise ScenarioError(f"{prefix}.{n_ranks}.et", f"the trace has more than the {n_ranks} ranks asked "
                                                          "for; run it on as many hosts as it has ranks")
    guard = _guard(guard)
    trace = ChakraTrace([], [], [])
    held = WorkloadGuard(guard.memory, lambda: guard.existing() + sum(map(len, trace.ranks)))
    for r in range(n_ranks):
        path = f"{prefix}.{r}.et"
        version, nodes = read_chakra_file(path, held)
        trace.ranks.append(nodes)
        trace.paths.append(path)
        trace.versions.append(version)
    return trace


def read_chakra_file(path, guard: WorkloadGuard | None = None) -> tuple[str, list[ChakraNode]]:
    """One rank's file: its GlobalMetadata version and its nodes, sorted by id.

    A gzipped file is decompressed as it is read, a piece at a time (so Ctrl-C stops it),
    and what the reading holds (the nodes so far, the message being read) is checked
    against `guard`'s memory limit (a `rocesim.memory.WorkloadGuard`; None: 75% of the
    machine's memory) as it grows: a small file that expands beyond it is refused, keyed
    by the byte where it went over."""
    path = os.fspath(path)
    guard = _guard(guard)
    try:
        size = os.path.getsize(path)
        guard.reading(path, "the Chakra trace file", size)
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ScenarioError(path, f"cannot read the Chakra trace: {e.strerror or e}") from None
    note_read(path, raw)                       # a sweep records what its runs were made from
    gzipped = raw[:2] == GZIP_MAGIC
    where = f"{path}:decompressed byte" if gzipped else f"{path}:byte"
    source = gzip.GzipFile(fileobj=io.BytesIO(raw)) if gzipped else io.BytesIO(raw)
    reader = _MessageReader(source, where, guard, len(raw))
    version, nodes = None, []
    try:
        for k, (at, msg) in enumerate(reader):
            what = "the GlobalMetadata message" if k == 0 else f"message {k} (a Node)"
            try:
                if k == 0:
                    version = _metadata(msg, (0, len(msg)))
                else:
                    nodes.append(_node(msg, (0, len(msg))))
            except pw.WireError as e:
                raise ScenarioError(f"{where} {at + e.offset}", f"malformed Chakra trace, in {what}: "
                                                                f"{e.reason}") from None
            except _BadNode as e:
                raise ScenarioError(f"{path}:node {e.node.id}", f"{what}: {e.node.type_name} {e.reason}") from None
            if k % _CHECK_EVERY == 0:
                reader.holding(k)
    except (OSError, EOFError, zlib.error) as e:
        raise ScenarioError(path, f"the gzip data is corrupt: {e}") from None
    if version is None:
        raise ScenarioError(f"{where} 0", "empty Chakra trace: expected a GlobalMetadata message and then "
                                          "the nodes")
    return version, _checked(path, nodes)


def _guard(guard: WorkloadGuard | None) -> WorkloadGuard:
    """`guard`, or without one the machine's default memory limit and nothing else held."""
    return WorkloadGuard(MemoryLimit(), lambda: 0) if guard is None else guard


# what reading one node holds, in bytes: its ChakraNode, its attributes' dict and values
# (measured with tracemalloc on traces of compute and collective nodes: 600-800 B held,
# 1.0-1.2 KB at the peak of the checks after the reading), and the graph node it becomes
# (MEMORY_PER_FLOW)
NODE_READ_BYTES = 1024 + MEMORY_PER_FLOW
_READ_PIECE = 1 << 20          # bytes read (decompressed) at a time
_CHECK_EVERY = 4096            # messages between two checks of the memory held


class _MessageReader:
    """The length-prefixed messages of a stream read a piece at a time: yields (offset of
    the message's first byte in the stream, its bytes).  `holding(k)` checks the memory of
    k nodes read and of what is buffered against the guard."""

    def __init__(self, source, where: str, guard: WorkloadGuard, raw_bytes: int) -> None:
        self.source, self.where, self.guard = source, where, guard
        self.raw_bytes = raw_bytes          # the file itself, held while it is read
        self.buf = bytearray()
        self.pos = 0                        # the next message's length prefix in buf
        self.base = 0                       # stream offset of buf[0]
        self.eof = False

    def _more(self, need: int) -> None:
        """Read until buf holds `need` bytes from pos on, or the stream ends."""
        if len(self.buf) - self.pos >= need or self.eof:
            return
        del self.buf[:self.pos]             # drop what was read (once per piece, not per message)
        self.base += self.pos
        self.pos = 0
        while len(self.buf) < need and not self.eof:
            piece = self.source.read(_READ_PIECE)
            if piece:
                self.buf += piece
            else:
                self.eof = True

    def holding(self, nodes: int, message: int = 0) -> None:
        need = self.raw_bytes + len(self.buf) + message + nodes * NODE_READ_BYTES
        self.guard.reading(f"{self.where} {self.base + self.pos}",
                           f"reading the Chakra trace ({nodes:,} nodes so far)", need)

    def __iter__(self):
        k = 0
        while True:
            self._more(10)                  # a length prefix is at most 10 bytes
            if self.pos == len(self.buf):
                return
            try:
                length, start = pw.read_varint(self.buf, self.pos, len(self.buf))
            except pw.WireError as e:
                raise ScenarioError(f"{self.where} {self.base + e.offset}", f"malformed Chakra trace: "
                                                                            f"{e.reason}") from None
            if length > len(self.buf) - start:
                self.holding(k, length)     # a declared length beyond the limit: refused unread
                prefix = start - self.pos
                self._more(prefix + length)           # (moves pos to 0)
                start = self.pos + prefix
            remain = len(self.buf) - start
            if length > remain:
                raise ScenarioError(f"{self.where} {self.base + self.pos}", f"malformed Chakra trace: message {k} "
                                                                            f"declares {length} bytes but only "
                                                                            f"{remain} remain (is the file "
                                                                            "truncated?)")
            yield self.base + start, bytes(self.buf[start:start + length])
            self.pos = start + length
            k += 1


class _BadNode(Exception):
    """A node whose fields decode but do not make sense."""

    def __init__(self, node: ChakraNode, reason: str) -> None:
        self.node = node
        self.reason = reason
        super().__init__(reason)


def _expect(f: pw.Field, wire: int, what: str) -> None:
    if f.wire != wire:
        raise pw.WireError(f.offset, f"{what} (field {f.number}) has wire type {pw.WIRE_NAMES.get(f.wire, f.wire)}, "
                                     f"expected {pw.WIRE_NAMES[wire]}")


def _metadata(buf, span) -> str:
    version = ""
    for f in pw.fields(buf, *span):
        if f.number == 1:
            _expect(f, pw.LEN, "GlobalMetadata.version")
            version = pw.text(buf, f.value)
        elif f.number == 2:
            _expect(f, pw.LEN, "GlobalMetadata.attr")
            _attribute(buf, f.value)
    return version


def _attribute(buf, span) -> tuple[str, object]:
    """An AttributeProto: its name and value (a list for the list variants; None if unset)."""
    name, value = "", None
    for f in pw.fields(buf, *span):
        if f.number == 1:
            _expect(f, pw.LEN, "AttributeProto.name")
            name = pw.text(buf, f.value)
        elif f.number == 2:
            _expect(f, pw.LEN, "AttributeProto.doc_string")
        elif f.number in _ATTR_SCALARS:
            kind, wire, conv = _ATTR_SCALARS[f.number]
            _expect(f, wire, f"AttributeProto.{kind}_val")
            value = _scalar(buf, f.value, kind, conv)
        elif f.number - 1 in _ATTR_SCALARS:
            kind, wire, conv = _ATTR_SCALARS[f.number - 1]
            _expect(f, pw.LEN, f"AttributeProto.{kind}_list")
            value = _list(buf, f.value, kind, wire, conv)
    return name, value


def _scalar(buf, raw, kind, conv):
    if kind == "string":
        return pw.text(buf, raw)
    if kind == "bytes":
        return bytes(buf[raw[0]:raw[1]])
    return conv(raw)


def _list(buf, span, kind, wire, conv) -> list:
    out = []
    for f in pw.fields(buf, *span):
        if f.number != 1:
            continue
        if wire != pw.LEN and f.wire == pw.LEN:            # packed numbers
            out.extend(conv(v) for v in pw.packed(buf, *f.value, wire))
        else:
            _expect(f, wire, f"{kind} list value")
            out.append(_scalar(buf, f.value, kind, conv))
    return out


def _node(buf, span) -> ChakraNode:
    raw = dict(id=0, name="", type=INVALID_NODE, duration_micros=0)
    deps = {"ctrl_deps": [], "data_deps": []}
    attrs = {}
    for f in pw.fields(buf, *span):
        if f.number not in _NODE_FIELDS:
            continue
        name, wire = _NODE_FIELDS[f.number]
        if name in deps:
            if f.wire == pw.LEN:
                deps[name].extend(pw.packed(buf, *f.value, pw.VARINT))
                continue
            _expect(f, pw.VARINT, f"Node.{name}")
            deps[name].append(f.value)
            continue
        _expect(f, wire, f"Node.{name}")
        if name == "name":
            raw["name"] = pw.text(buf, f.value)
        elif name == "attr":
            key, value = _attribute(buf, f.value)
            attrs[key] = value
        elif wire == pw.VARINT:
            raw[name] = f.value
    node = ChakraNode(id=raw["id"], name=raw["name"], type=raw["type"],
                      duration_ps=raw["duration_micros"] * PS_PER_US,
                      data_deps=tuple(deps["data_deps"]), ctrl_deps=tuple(deps["ctrl_deps"]), attrs=attrs)
    if node.duration_ps > MAX_TIME_PS:       # (it would overflow the core's int64 picoseconds)
        raise _BadNode(node, f"duration_micros {raw['duration_micros']:,} is {format_time(node.duration_ps)}, beyond "
                             f"the simulator's time horizon ({format_time(MAX_TIME_PS)})")
    for key in ("comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag"):
        setattr(node, key, _int_attr(node, attrs, key))
    node.is_cpu_op = bool(_int_attr(node, attrs, "is_cpu_op"))
    if not node.is_cpu_op:                # a CPU op is replayed as time: it communicates nothing
        _check_comm_attrs(node)
    return node


def _int_attr(node, attrs, key) -> int | None:
    if key not in attrs:
        return None
    v = attrs[key]
    if v is None:                       # an attribute with no value: proto3's default
        return 0
    if isinstance(v, (list, str, bytes, float)):
        raise _BadNode(node, f"attribute {key} must hold {'a bool' if key == 'is_cpu_op' else 'an integer'}, "
                             f"got {v!r}")
    return int(v)


def _check_comm_attrs(node: ChakraNode) -> None:
    need = {COMM_COLL_NODE: ("comm_type", "comm_size"), COMM_SEND_NODE: ("comm_dst", "comm_size"),
            COMM_RECV_NODE: ("comm_src",)}.get(node.type, ())
    for key in need:
        if getattr(node, key) is None:
            raise _BadNode(node, f"has no {key} attribute")
    for key in ("comm_size", "comm_src", "comm_dst"):
        v = getattr(node, key)
        if v is not None and v < 0:
            raise _BadNode(node, f"{key} must not be negative, got {v}")
    if node.comm_size is not None and node.comm_size > MAX_COUNT:
        raise _BadNode(node, f"comm_size {node.comm_size:,} is too large: at most {MAX_COUNT:,} bytes (and what "
                             "can cross the network within the simulator's time horizon)")


def _checked(path, nodes: list[ChakraNode]) -> list[ChakraNode]:
    """The nodes sorted by id, after checking ids are unique, dependencies exist, no cycle."""
    nodes = sorted(nodes, key=lambda n: n.id)
    index = {}
    for i, n in enumerate(nodes):
        if n.id in index:
            raise ScenarioError(f"{path}:node {n.id}", f"two nodes have the id {n.id}")
        index[n.id] = i
    parents = []
    for n in nodes:
        for d in n.deps:
            if d not in index:
                raise ScenarioError(f"{path}:node {n.id}", f"{n.type_name} {n.id} depends on node {d}, "
                                                           "which is not in the file")
        parents.append([index[d] for d in n.deps])
    cycle = find_cycle(parents)
    if cycle:
        ids = " -> ".join(str(nodes[i].id) for i in cycle + cycle[:1])
        raise ScenarioError(f"{path}:node {nodes[cycle[0]].id}", f"the dependencies form a cycle: nodes {ids} "
                                                                 "(each waits for the one before it); a trace "
                                                                 "must be acyclic")
    return nodes


def find_cycle(parents: list[list[int]]) -> list[int] | None:
    """A cycle of the graph given by each node's parents (indices), in dependency
    order, or None when the graph is acyclic."""
    n = len(parents)
    children = [[] for _ in range(n)]
    waiting = [0] * n
    for c, ps in enumerate(parents):
        for p in set(ps):
            children[p].append(c)
            waiting[c] += 1
    ready = [i for i in range(n) if waiting[i] == 0]
    finished = 0
    while ready:
        u = ready.pop()
        finished += 1
        for c in children[u]:
            waiting[c] -= 1
            if waiting[c] == 0:
                ready.append(c)
    if finished == n:
        return None
    # every node left waits for at least one other node left: walk back until a repeat
    u = next(i for i in range(n) if waiting[i] > 0)
    seen: dict[int, int] = {}
    path = []
    while u not in seen:
        seen[u] = len(path)
        path.append(u)
        u = next(p for p in parents[u] if waiting[p] > 0)
    cycle = path[seen[u]:][::-1]
    first = cycle.index(min(cycle))
    return cycle[first:] + cycle[:first]


# --- building the graph --------------------------------------------------------------------

@dataclass
class _Collective:
    op: str
    size: int
    nodes: np.ndarray         # per rank: the node (plan index)


@dataclass
class _Plan:
    """What one iteration of the trace becomes, worked out once for all iterations.

    Nodes are numbered across ranks: rank r's node i is `base[r] + i`."""

    base: np.ndarray               # n_ranks + 1 offsets
    rank_of: np.ndarray            # per node: its rank
    steps: np.ndarray              # nodes that become compute steps
    durations: np.ndarray          # their durations (ps)
    children: np.ndarray           # dependency edges inside ranks
    parents: np.ndarray
    roots: np.ndarray              # nodes without parents
    sinks: np.ndarray              # nodes without children
    collectives: list[_Collective]
    flow_nodes: np.ndarray         # send nodes that become flows
    flow_dst: np.ndarray           # their receiving rank
    flow_size: np.ndarray
    recv_nodes: np.ndarray         # each recv node waits for the send node beside it
    send_nodes: np.ndarray

    def node(self, trace: ChakraTrace, u: int) -> tuple[int, ChakraNode]:
        r = int(self.rank_of[u])
        return r, trace.ranks[r][u - self.base[r]]


def chakra_graph(trace: ChakraTrace, ranks, iterations: int = 1, *, algorithms=None, chunks=1,
                 prio=DEFAULT_FLOW_PRIORITY, start=0, tag=0, job="", guard=None, nccl=None,
                 platform=None, pxn=PXN_DEFAULT, options=None) -> TrainingGraph:
    """`iterations` repetitions of `trace` on `ranks` (trace rank i on rank ranks[i] of
    `platform`, a GPU of a multi-GPU server, or on a plain topology (None) host ranks[i]),
    as job `job`; `guard` (a `rocesim.memory.WorkloadGuard`, e.g.
    `Simulation.workload_guard`) may refuse the whole run after its first iteration;
    `nccl` (`Simulation.nccl`) shapes the nccl_* algorithms; `pxn` (NCCL's PXN) forwards
    transfers to other rails through the scale-up domain, the collectives' and the trace's
    send/recv pairs' alike.  On a multi-GPU platform a send between GPUs of one server
    crosses the scale-up domain, one between servers their NICs (after a scale-up hop to
    the destination's rail with `pxn`).  Add the graph it returns with
    `Simulation.add_workload`.

    One graph holds everything; each iteration starts, on each rank, when that rank's
    previous iteration is done (its sinks: every node leads to one of them).
    Collectives use `algorithms[op]` (default: `DEFAULT_ALGORITHM`), `chunks` pieces,
    priority `prio` and the algorithms' own `options` (an ASTRA-sim system file's:
    `rocesim.training.workloads.astra_system`), the flows of send/recv pairs `prio`; roots
    start at `start` (ps); every node gets `tag`.
    """
    if not isinstance(trace, ChakraTrace):
        raise ScenarioError("trace", f"expected a ChakraTrace (from read_chakra), got {type(trace).__name__}")
    ranks = np.asarray(ranks, np.int64)
    n = trace.n_ranks
    if ranks.ndim != 1 or ranks.size != n:
        raise ScenarioError("ranks", f"the trace has {n} ranks, so it needs {n} ranks; got {ranks.size}")
    if np.unique(ranks).size != n:
        raise ScenarioError("ranks", "every trace rank needs its own rank (GPU or host); the list repeats one")
    hosts = ranks if platform is None else platform.host_of(ranks)
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ScenarioError("iterations", f"expected an integer >= 1, got {iterations!r}")
    algos = {**DEFAULT_ALGORITHM, **(algorithms or {})}
    plan = _plan(trace)
    _check_deadlock(trace, plan)
    _check_sizes(trace, plan, hosts_platform(ranks) if platform is None else platform)
    g = Graph()
    records = []
    busy = np.flatnonzero(np.diff(plan.base) > 0)          # ranks with nodes
    total = int(plan.base[-1])
    prev_exit = None
    guarded = Progress(guard, f"{iterations:,} iterations of the Chakra trace", iterations)
    for it in range(int(iterations)):
        if it == 1:
            guarded.check(g.n * iterations)
        entry = np.full(total, -1, np.int64)     # what a node's parents release
        exit_ = np.full(total, -1, np.int64)     # what its children wait for
        if plan.steps.size:
            steps = g.compute(hosts[plan.rank_of[plan.steps]], plan.durations, iteration=it, tag=tag, start=start)
            entry[plan.steps] = exit_[plan.steps] = steps
        for coll in plan.collectives:
            if coll.size == 0:                   # no data: only the synchronization is left
                join = g.compute(hosts[0], 0, iteration=it, tag=tag, start=start)
                entry[coll.nodes] = exit_[coll.nodes] = join
                continue
            rec = append_collective(g, coll.op, algos.get(coll.op, DEFAULT_ALGORITHM[coll.op]), ranks, coll.size,
                                 chunks=chunks, prio=prio, cid=len(records), iteration=it, tag=tag, start=start,
                                 job=job, nccl=nccl, platform=platform, pxn=pxn, options=options)
            records.append(rec)
            entry[coll.nodes] = rec.start_nodes
            exit_[coll.nodes] = rec.done_nodes
        if plan.flow_nodes.size:
            entry[plan.flow_nodes], exit_[plan.flow_nodes] = point_to_point(
                g, platform, ranks[plan.rank_of[plan.flow_nodes]], ranks[plan.flow_dst], plan.flow_size, prio=prio,
                iteration=it, tag=tag, start=start, pxn=pxn, nccl=nccl, job=job)
        g.depend(entry[plan.children], exit_[plan.parents])
        g.depend(entry[plan.recv_nodes], exit_[plan.send_nodes])
        if prev_exit is not None:                # each rank waits for its previous iteration
            barrier = np.full(n, -1, np.int64)
            barrier[busy] = g.compute(hosts[busy], 0, iteration=it - 1, tag=tag)
            g.depend(barrier[plan.rank_of[plan.sinks]], prev_exit[plan.sinks])
            g.depend(entry[plan.roots], barrier[plan.rank_of[plan.roots]])
        prev_exit = exit_
    return TrainingGraph(g, records, int(iterations), job)


def _check_sizes(trace: ChakraTrace, plan: _Plan, platform) -> None:
    """Refuse, keyed by its file and node, a collective or send whose bytes cannot cross the
    network of `platform` within the time horizon (`collectives.check_size`), before
    anything is built."""
    for coll in plan.collectives:
        r, node = plan.node(trace, int(coll.nodes[0]))
        check_size(coll.size, platform, trace.where(r, node.id))
    if plan.flow_nodes.size:                                      # the largest send
        k = int(np.argmax(plan.flow_size))
        r, node = plan.node(trace, int(plan.flow_nodes[k]))
        check_size(int(plan.flow_size[k]), platform, trace.where(r, node.id), send=True)


def _plan(trace: ChakraTrace) -> _Plan:
    """Sort the nodes into compute steps, collectives and flows, and match them across ranks."""
    n = trace.n_ranks
    base = np.cumsum([0] + [len(nodes) for nodes in trace.ranks]).astype(np.int64)
    steps, durations, children, parents, coll_nodes = [], [], [], [], []
    sends, recvs = {}, {}
    for r, nodes in enumerate(trace.ranks):
        index = {node.id: int(base[r]) + i for i, node in enumerate(nodes)}
        colls = []
        for u, node in enumerate(nodes, start=int(base[r])):
            for d in node.deps:
                if d not in index:
                    raise ScenarioError(trace.where(r, node.id), f"depends on node {d}, which is not in the "
                                                                 "rank's trace")
                children.append(u)
                parents.append(index[d])
            if node.is_cpu_op:               # CPU time, communication or not (ASTRA-sim's issue)
                steps.append(u)
                durations.append(0 if node.type in (MEM_LOAD_NODE, MEM_STORE_NODE) else _duration(trace, r, node))
                continue
            try:                                 # (a file's are checked as read; a trace made in code here)
                _check_comm_attrs(node)
            except _BadNode as e:
                raise ScenarioError(trace.where(r, node.id), f"{node.type_name} {e.reason}") from None
            if node.type == COMM_COLL_NODE and n > 1:
                colls.append(u)
                continue
            if node.type == COMM_SEND_NODE:
                dst = node.comm_dst
                if not (isinstance(dst, int) and 0 <= dst < n) or dst == r:
                    raise ScenarioError(trace.where(r, node.id), f"COMM_SEND_NODE sends to rank {dst}; expected "
                                                                 f"another rank in 0..{n - 1}")
                sends.setdefault((r, dst, node.comm_tag or 0), []).append(u)
                if node.comm_size:
                    continue                     # a flow; a 0-byte send only orders the ranks
            if node.type == COMM_RECV_NODE:
                src = node.comm_src
                if not (isinstance(src, int) and 0 <= src < n) or src == r:
                    raise ScenarioError(trace.where(r, node.id), f"COMM_RECV_NODE receives from rank {src}; "
                                                                 f"expected another rank in 0..{n - 1}")
                recvs.setdefault((src, r, node.comm_tag or 0), []).append(u)
            steps.append(u)
            durations.append(_duration(trace, r, node) if node.type == COMP_NODE else 0)
        coll_nodes.append(colls)
    total = int(base[-1])
    children = np.asarray(children, np.int64)
    parents = np.asarray(parents, np.int64)
    has_parent = np.zeros(total, bool)
    has_parent[children] = True
    has_child = np.zeros(total, bool)
    has_child[parents] = True
    rank_of = np.repeat(np.arange(n), np.diff(base))
    plan = _Plan(base, rank_of, np.asarray(steps, np.int64), np.asarray(durations, np.int64), children, parents,
                 np.flatnonzero(~has_parent), np.flatnonzero(~has_child), [], *([np.zeros(0, np.int64)] * 5))
    if n > 1:
        plan.collectives = _match_collectives(trace, plan, coll_nodes)
    _match_p2p(trace, plan, sends, recvs)
    return plan


def _duration(trace: ChakraTrace, r: int, node: ChakraNode) -> int:
    """The node's duration in ps, within the time horizon (a file's are checked as they are
    read; a trace made in code is checked here)."""
    if not 0 <= node.duration_ps <= MAX_TIME_PS:
        raise ScenarioError(trace.where(r, node.id), f"{node.type_name} lasts {node.duration_ps:,} ps; expected 0 to "
                                                     f"{MAX_TIME_PS:,} (the simulator's time horizon, "
                                                     f"{format_time(MAX_TIME_PS)})")
    return node.duration_ps


def _match_collectives(trace: ChakraTrace, plan: _Plan, coll_nodes: list[list[int]]) -> list[_Collective]:
    """The k-th collective node of every rank, as one collective (they must agree)."""
    counts = [len(c) for c in coll_nodes]
    for r, c in enumerate(counts):
        if c != counts[0]:          # point at the first collective node without a partner
            at, k = (r, counts[0]) if c > counts[0] else (0, c)
            raise ScenarioError(trace.where(at, plan.node(trace, coll_nodes[at][k])[1].id),
                                f"rank {r} has {c} collective nodes but rank 0 has {counts[0]}; the k-th "
                                "collective node of every rank must be the same collective")
    out = []
    for k in range(counts[0]):
        _, first = plan.node(trace, coll_nodes[0][k])
        for r in range(1, trace.n_ranks):
            _, node = plan.node(trace, coll_nodes[r][k])
            if (node.comm_type, node.comm_size) != (first.comm_type, first.comm_size):
                raise ScenarioError(trace.where(r, node.id), f"collective #{k} is "
                                                             f"{_comm_name(node.comm_type)} of {node.comm_size} "
                                                             f"bytes, but on rank 0 (node {first.id}) "
                                                             f"{_comm_name(first.comm_type)} of {first.comm_size} "
                                                             "bytes; the ranks must agree")
        if first.comm_type not in COLLECTIVE_OPS:
            raise ScenarioError(trace.where(0, first.id), f"collective {_comm_name(first.comm_type)} is not "
                                                          "supported; supported: " +
                                                          ", ".join(COMM_TYPES[t] for t in COLLECTIVE_OPS))
        op = COLLECTIVE_OPS[first.comm_type]
        size = first.comm_size * (trace.n_ranks if op == "allgather" else 1)   # ASTRA-sim: the input
        out.append(_Collective(op, size, np.array([c[k] for c in coll_nodes], np.int64)))
    return out


def _comm_name(t) -> str:
    return f"{COMM_TYPES[t]} ({t})" if t in COMM_TYPES else f"comm_type {t}"


def _match_p2p(trace: ChakraTrace, plan: _Plan, sends: dict, recvs: dict) -> None:
    """Pair the k-th send a->b with tag t with the k-th recv at b from a with tag t."""
    flow_nodes, flow_dst, flow_size, recv_nodes, send_nodes = [], [], [], [], []
    for key in sorted(set(sends) | set(recvs)):
        a, b, t = key
        s, v = sends.get(key, []), recvs.get(key, [])
        if len(s) > len(v):
            lone = plan.node(trace, s[len(v)])[1]
            raise ScenarioError(trace.where(a, lone.id), f"COMM_SEND_NODE to rank {b} with tag {t} has no "
                                                         f"matching COMM_RECV_NODE on rank {b} ({len(s)} sends, "
                                                         f"{len(v)} recvs with this source, destination and tag)")
        if len(v) > len(s):
            lone = plan.node(trace, v[len(s)])[1]
            raise ScenarioError(trace.where(b, lone.id), f"COMM_RECV_NODE from rank {a} with tag {t} has no "
                                                         f"matching COMM_SEND_NODE on rank {a} ({len(s)} sends, "
                                                         f"{len(v)} recvs with this source, destination and tag)")
        for i, j in zip(s, v):
            send, recv = plan.node(trace, i)[1], plan.node(trace, j)[1]
            if recv.comm_size is not None and recv.comm_size != send.comm_size:
                raise ScenarioError(trace.where(b, recv.id), f"receives {recv.comm_size} bytes but the matching "
                                                             f"send (rank {a} node {send.id}) sends {send.comm_size}")
            if send.comm_size:
                flow_nodes.append(i)
                flow_dst.append(b)
                flow_size.append(send.comm_size)
            recv_nodes.append(j)
            send_nodes.append(i)
    plan.flow_nodes, plan.flow_dst, plan.flow_size, plan.recv_nodes, plan.send_nodes = (
        np.asarray(x, np.int64) for x in (flow_nodes, flow_dst, flow_size, recv_nodes, send_nodes))


def _check_deadlock(trace: ChakraTrace, plan: _Plan) -> None:
    """Refuse a trace whose ranks wait for each other in a cycle (through collectives or
    send/recv pairs): it would never finish."""
    total = int(plan.base[-1])
    done_of = np.arange(total)                               # what a node's children wait for
    parents = [[] for _ in range(total + len(plan.collectives))]
    for k, coll in enumerate(plan.collectives):             # collective k: one more node
        done_of[coll.nodes] = total + k
        parents[total + k].extend(coll.nodes.tolist())
    for c, p in zip(plan.children.tolist(), done_of[plan.parents].tolist()):
        parents[c].append(p)
    for c, p in zip(plan.recv_nodes.tolist(), plan.send_nodes.tolist()):
        parents[c].append(p)
    cycle = find_cycle(parents)
    if cycle is None:
        return

    def describe(u):
        if u >= total:
            return f"collective #{u - total} ({plan.collectives[u - total].op})"
        r, node = plan.node(trace, u)
        return f"rank {r} node {node.id} ({node.type_name})"

    steps = " -> ".join(describe(u) for u in cycle[:8]) + (" -> ..." if len(cycle) > 8 else "")
    r, node = plan.node(trace, cycle[0])          # the cycle starts at a node, not a collective
    raise ScenarioError(trace.where(r, node.id), f"the ranks wait for each other in a cycle and would never "
                                                 f"finish: {steps}; each waits for the one before it")
