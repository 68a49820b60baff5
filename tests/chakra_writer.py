"""A minimal Chakra execution-trace writer, for tests only.

It encodes what `rocesim.training.workloads.chakra` reads: each file is varint-length-prefixed
protobuf messages, a GlobalMetadata then Nodes, with the field numbers of Chakra's
schema/protobuf/et_def.proto.  Like a proto3 serializer it leaves out scalar fields
that hold their default (id 0, empty name, type 0, duration 0) and packs repeated
numbers, so the reader is tested on what real traces contain.
"""
import gzip

COMP, SEND, RECV, COLL, MEM_LOAD, METADATA = 4, 5, 6, 7, 2, 1
ALL_REDUCE, REDUCE, ALL_GATHER, GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER = 0, 1, 2, 3, 5, 6, 7


def varint(v: int) -> bytes:
    v &= (1 << 64) - 1                  # negative numbers: ten bytes, as protobuf does
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def f_varint(number: int, v: int) -> bytes:
    return key(number, 0) + varint(v)


def f_bytes(number: int, data: bytes) -> bytes:
    return key(number, 2) + varint(len(data)) + data


def attr(name: str, value) -> bytes:
    """An AttributeProto: bool -> bool_val, int -> int64_val, str -> string_val,
    list of ints -> int64_list (packed)."""
    body = f_bytes(1, name.encode())
    if isinstance(value, bool):
        body += f_varint(27, int(value))
    elif isinstance(value, int):
        body += f_varint(9, value)
    elif isinstance(value, str):
        body += f_bytes(29, value.encode())
    else:
        body += f_bytes(10, f_bytes(1, b"".join(varint(v) for v in value)))
    return body


def node(id, type=COMP, *, name="", duration_us=0, data_deps=(), ctrl_deps=(), attrs=None,
         packed=True, extra=b"") -> bytes:
    """A Node message; `extra` is appended raw (e.g. unknown fields)."""
    body = b""
    if id:
        body += f_varint(1, id)
    if name:
        body += f_bytes(2, name.encode())
    if type:
        body += f_varint(3, type)
    for number, deps in ((4, ctrl_deps), (5, data_deps)):
        if deps and packed:
            body += f_bytes(number, b"".join(varint(d) for d in deps))
        elif deps:
            body += b"".join(f_varint(number, d) for d in deps)
    if duration_us:
        body += f_varint(7, duration_us)
    for k, v in (attrs or {}).items():
        body += f_bytes(10, attr(k, v))
    return body + extra


def metadata(version: str = "0.0.4") -> bytes:
    return f_bytes(1, version.encode()) + f_bytes(2, attr("schema", "test"))


def stream(messages) -> bytes:
    """Messages, each preceded by its length."""
    return b"".join(varint(len(m)) + m for m in messages)


def write_rank(path, nodes, *, gz=False, version="0.0.4") -> None:
    """Write one rank's file: GlobalMetadata, then the given Node messages."""
    data = stream([metadata(version)] + list(nodes))
    with open(path, "wb") as f:
        f.write(gzip.compress(data) if gz else data)


def write_trace(prefix, ranks, *, gz=False) -> None:
    """Write <prefix>.<r>.et for each list of Node messages in `ranks`."""
    for r, nodes in enumerate(ranks):
        write_rank(f"{prefix}.{r}.et", nodes, gz=gz)


def coll(id, comm_type, size, **kw) -> bytes:
    return node(id, COLL, attrs={"comm_type": comm_type, "comm_size": size}, **kw)


def send(id, dst, size, tag=0, **kw) -> bytes:
    return node(id, SEND, attrs={"comm_dst": dst, "comm_size": size, "comm_tag": tag}, **kw)


def recv(id, src, size, tag=0, **kw) -> bytes:
    return node(id, RECV, attrs={"comm_src": src, "comm_size": size, "comm_tag": tag}, **kw)
