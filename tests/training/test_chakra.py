"""Chakra execution traces: decoding the protobuf files, and the timing of the graph they become."""
import gzip
import struct
import tracemalloc

import numpy as np
import pytest

import chakra_writer as w
from rocesim import ScenarioError, Simulation, topology
from rocesim import scenario as sc
from rocesim.training.workloads.chakra import (COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE, ChakraNode, ChakraTrace,
                                               read_chakra)
from rocesim.workload_api import add_chakra

US = 10**6          # ps
STAR = ("100Gbps", "1us")


def run(prefix, n_hosts=4, hosts=None, iterations=1, **kw):
    trace = read_chakra(prefix)
    sim = Simulation(topology.star(n_hosts, *STAR))
    hosts = list(range(trace.n_ranks)) if hosts is None else hosts
    ids = add_chakra(sim, trace, hosts, iterations, **kw)
    res = sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    return sim, res, ids


def end_ns(res, ids):
    f = res.flows
    return f["start_ns"][ids] + np.where(f["is_compute"][ids], f["fct_ns"][ids], f["rx_fct_ns"][ids])


def compute_ids(res, host, duration_us):
    """Ids of the compute steps of `duration_us` on `host` (durations are unique per test; a
    compute step's fct_ns is its duration)."""
    f = res.flows
    return np.flatnonzero(f["is_compute"] & (f["src"] == host) & (f["fct_ns"] == duration_us * US / 1000))


# --- decoding ------------------------------------------------------------------------------------


def test_decodes_nodes_attributes_and_skips_unknown_fields(tmp_path):
    unknown = (w.f_varint(50, 7) + w.f_bytes(51, b"xyz") + w.key(52, 5) + b"\1\2\3\4"
               + w.key(53, 1) + bytes(8) + w.key(54, 3) + w.f_varint(1, 5) + w.key(54, 4))
    io_info = w.f_bytes(8, w.f_bytes(1, b"[[1, 2]]"))           # Node.inputs, not used
    raw_attrs = (w.f_bytes(10, w.f_bytes(1, b"comm_size") + w.f_varint(13, 2**40))        # uint64_val
                 + w.f_bytes(10, w.f_bytes(1, b"comm_dst") + w.f_varint(7, 1))           # int32_val
                 + w.f_bytes(10, w.f_bytes(1, b"comm_tag") + w.f_varint(17, 5))          # sint64 -3
                 + w.f_bytes(10, w.f_bytes(1, b"scale") + w.key(3, 1) + struct.pack("<d", 0.5))
                 + w.f_bytes(10, w.f_bytes(1, b"fx") + w.key(23, 5) + struct.pack("<i", -9))
                 + w.f_bytes(10, w.f_bytes(1, b"bools") + w.f_bytes(28, w.f_varint(1, 1) + w.f_varint(1, 0))))
    w.write_trace(tmp_path / "t", [[
        w.node(0, name="first", duration_us=3, extra=unknown + io_info),       # id 0 and its fields omitted
        w.node(5, w.SEND, data_deps=[0], extra=raw_attrs),
        w.node(2, w.MEM_LOAD, ctrl_deps=[0], data_deps=[0], packed=False,
               attrs={"dims": [1, -2, 300], "is_cpu_op": True, "note": "hi"}),
    ], [w.recv(0, 0, 2**40, tag=-3)]])
    trace = read_chakra(tmp_path / "t")
    assert trace.n_ranks == 2 and trace.versions == ["0.0.4", "0.0.4"]
    a, b, c = trace.ranks[0]
    assert [n.id for n in trace.ranks[0]] == [0, 2, 5]                 # sorted by id
    assert (a.name, a.type, a.duration_ps, a.data_deps) == ("first", COMP_NODE, 3 * US, ())
    assert (b.data_deps, b.ctrl_deps, b.deps) == ((0,), (0,), [0])
    assert b.attrs == {"dims": [1, -2, 300], "is_cpu_op": True, "note": "hi"}
    assert (c.comm_size, c.comm_dst, c.comm_tag, c.data_deps) == (2**40, 1, -3, (0,))
    assert c.attrs["scale"] == 0.5 and c.attrs["fx"] == -9 and c.attrs["bools"] == [True, False]
    assert (trace.ranks[1][0].comm_src, trace.ranks[1][0].comm_tag) == (0, -3)


M = len(w.stream([w.metadata()]))          # where the first Node's length prefix is
MALFORMED = [                              # file contents, what the error says, where (key after "file:")
    (b"", "empty Chakra trace", "byte 0"),
    (w.stream([w.metadata(), w.node(1)])[:-1], "message 1 declares 4 bytes but only 3 remain", f"byte {M}"),
    (w.stream([w.metadata()]) + b"\x85", "truncated varint", f"byte {M}"),
    (w.stream([w.metadata(), w.f_bytes(1, b"x")]), "Node.id (field 1) has wire type length-delimited",
     f"byte {M + 1}"),
    (w.stream([w.metadata(), w.f_varint(10, 3)]), "Node.attr (field 10) has wire type varint", f"byte {M + 1}"),
    (w.stream([w.metadata(), w.node(1, extra=w.key(9, 7))]), "invalid wire type 7", f"byte {M + 5}"),
    (w.stream([w.metadata(), w.key(9, 3) + w.f_varint(1, 1)]), "group of field 9 is not closed", f"byte {M + 1}"),
    (w.stream([w.f_varint(1, 4)]), "GlobalMetadata.version (field 1) has wire type varint", "byte 1"),
    (w.stream([w.metadata(), w.node(1, w.COLL, attrs={"comm_type": 0})]), "no comm_size attribute", "node 1"),
    (w.stream([w.metadata(), w.node(1, w.SEND, attrs={"comm_dst": 1, "comm_size": "big"})]),
     "comm_size must hold an integer", "node 1"),
    (w.stream([w.metadata(), w.node(2, w.SEND, attrs={"comm_dst": 1, "comm_size": -5})]),
     "comm_size must not be negative", "node 2"),
    (w.stream([w.metadata(), w.node(1), w.node(1)]), "two nodes have the id 1", "node 1"),
    (w.stream([w.metadata(), w.node(1, data_deps=[9])]), "depends on node 9, which is not in the file", "node 1"),
    (w.stream([w.metadata(), w.node(1, data_deps=[3]), w.node(2, data_deps=[1]), w.node(3, data_deps=[2])]),
     "cycle: nodes 1 -> 2 -> 3 -> 1", "node 1"),
    (gzip.compress(w.stream([w.metadata()]))[:-6], "gzip data is corrupt", None),
    (gzip.compress(w.stream([w.metadata()]) + b"\x85"), "truncated varint", f"decompressed byte {M}"),
]


@pytest.mark.parametrize("data, reason, where", MALFORMED, ids=[reason for _, reason, _ in MALFORMED])
def test_malformed_files_are_errors_naming_the_file(tmp_path, data, reason, where):
    path = tmp_path / "bad.0.et"
    path.write_bytes(data)
    with pytest.raises(ScenarioError) as info:
        read_chakra(tmp_path / "bad")
    assert info.value.key == (str(path) if where is None else f"{path}:{where}")
    assert reason in info.value.reason


def test_rank_files(tmp_path):
    w.write_trace(tmp_path / "t", [[w.node(1)]] * 3)
    assert read_chakra(tmp_path / "t").n_ranks == 3
    assert read_chakra(tmp_path / "t", 3).paths[2] == f"{tmp_path}/t.2.et"
    for prefix, n, missing in (("t", 4, "t.3.et"), ("nope", None, "nope.0.et"), ("t", 2, "t.2.et")):
        with pytest.raises(ScenarioError) as info:
            read_chakra(tmp_path / prefix, n)
        assert info.value.key == f"{tmp_path}/{missing}"


def test_gzipped_files_are_detected_by_content(tmp_path):
    ranks = [[w.node(1, duration_us=4), w.coll(2, w.ALL_GATHER, 400_000, data_deps=[1])]] * 4
    w.write_trace(tmp_path / "plain", ranks)
    w.write_trace(tmp_path / "zipped", ranks, gz=True)
    assert (tmp_path / "zipped.0.et").read_bytes()[:2] == b"\x1f\x8b"
    _, plain, _ = run(tmp_path / "plain")
    _, zipped, _ = run(tmp_path / "zipped")
    assert plain.collectives["op"][0] == "allgather"
    assert zipped.iterations["duration_ns"][0] == plain.iterations["duration_ns"][0] > 4000


# --- timing ----------------------------------------------------------------------------------------


def test_compute_only_iteration_is_the_critical_path(tmp_path):
    dag = [w.node(1, duration_us=5), w.node(2, duration_us=3, data_deps=[1]),
           w.node(3, duration_us=7, data_deps=[1]), w.node(4, duration_us=2, data_deps=[2, 3]),
           w.node(5, w.METADATA)]                                      # a lone zero-duration node
    w.write_trace(tmp_path / "t", [dag, dag])
    _, res, ids = run(tmp_path / "t", iterations=2)
    assert ids == [0, 1]
    assert res.iterations["duration_ns"].tolist() == [14_000, 14_000]     # 5 + 7 + 2
    assert res.iterations["start_ns"].tolist() == [0, 14_000]
    for host in (0, 1):                                                    # 3 and 7 run side by side
        assert res.flows["start_ns"][compute_ids(res, host, 3)].tolist() == [5_000, 19_000]
        assert res.flows["start_ns"][compute_ids(res, host, 7)].tolist() == [5_000, 19_000]


def test_collective_sits_between_its_parents_and_children(tmp_path):
    rank = [w.node(1, duration_us=5), w.coll(2, w.ALL_REDUCE, 1_000_000, data_deps=[1]),
            w.node(3, duration_us=7, data_deps=[2])]
    w.write_trace(tmp_path / "t", [rank] * 4)
    sim, res, _ = run(tmp_path / "t", algorithms={"allreduce": "halving_doubling"}, chunks=2, tag=9)
    rec = sim.collectives[0]
    assert (rec.op, rec.algorithm, rec.id) == ("allreduce", "halving_doubling", 0)
    assert res.flows["start_ns"][rec.start_nodes].tolist() == [5_000] * 4
    done = end_ns(res, rec.done_nodes)
    for r in range(4):
        assert res.flows["start_ns"][compute_ids(res, r, 7)] == [done[r]]
    assert set(res.flows["tag"].tolist()) == {9}
    assert res.iterations["duration_ns"][0] == pytest.approx(done.max() + 7_000)
    # the collective takes as long as the same collective alone in the network
    alone = Simulation(topology.star(4, *STAR))
    alone.add_collective("allreduce", "halving_doubling", "all", 1_000_000, chunks=2)
    assert res.collectives["duration_ns"][0] == pytest.approx(alone.run().collectives["duration_ns"][0], abs=1e-3)


def test_send_recv_is_one_flow_the_receiver_waits_for(tmp_path):
    r0 = [w.node(1, duration_us=4), w.send(2, 1, 100_000, tag=3, data_deps=[1]),
          w.send(3, 1, 200_000, tag=3, data_deps=[2])]
    r1 = [w.node(1, duration_us=1), w.recv(2, 0, 100_000, tag=3, data_deps=[1]),
          w.node(3, duration_us=2, data_deps=[2]),
          w.node(4, duration_us=50), w.recv(5, 0, 200_000, tag=3, data_deps=[4]),
          w.node(6, duration_us=6, data_deps=[5])]
    w.write_trace(tmp_path / "t", [r0, r1])
    _, res, _ = run(tmp_path / "t", hosts=[3, 2], prio=5)
    f = res.flows
    flows = np.flatnonzero(~f["is_compute"])
    assert f["src"][flows].tolist() == [3, 3] and f["dst"][flows].tolist() == [2, 2]
    assert f["size_bytes"][flows].tolist() == [100_000, 200_000] and f["prio"][flows].tolist() == [5, 5]
    first, second = flows
    assert f["start_ns"][first] == 4_000                       # when the send's parent is done
    arrived = end_ns(res, [first, second])
    assert f["start_ns"][second] == pytest.approx(arrived[0])  # the second send waits for the first
    assert f["start_ns"][compute_ids(res, 2, 2)] == [arrived[0]]  # the first recv: at the arrival
    assert arrived[1] < 50_000
    assert f["start_ns"][compute_ids(res, 2, 6)] == [50_000]   # the second: after its own parent


def test_iterations_follow_each_other_per_rank_and_ids_continue(tmp_path):
    rank = [w.node(1, duration_us=2), w.coll(2, w.REDUCE_SCATTER, 800_000, data_deps=[1])]
    w.write_trace(tmp_path / "t", [rank] * 4)
    trace = read_chakra(tmp_path / "t")
    sim = Simulation(topology.star(4, *STAR))
    assert add_chakra(sim, trace, [0, 1, 2, 3], 2) == [0, 1]
    assert add_chakra(sim, trace, [0, 1, 2, 3], 2, start=500 * US) == [2, 3]
    assert sim.iterations == [0, 1, 2, 3]
    assert [r.id for r in sim.collectives] == [0, 1, 2, 3]
    res = sim.run()
    it = res.iterations
    assert it["start_ns"][2] == 500_000
    for i in (0, 2):     # the next iteration's compute starts when this one's collective is done
        assert res.flows["start_ns"][compute_ids(res, 0, 2)][i + 1] == pytest.approx(
            end_ns(res, sim.collectives[i].done_nodes[:1])[0])
    assert it["duration_ns"][0] == pytest.approx(it["duration_ns"][1], rel=1e-9)


def test_zero_byte_messages_only_order_the_ranks(tmp_path):
    r0 = [w.node(1, duration_us=9), w.send(2, 1, 0, data_deps=[1]), w.coll(3, w.ALL_REDUCE, 0)]
    r1 = [w.recv(1, 0, 0), w.node(2, duration_us=1, data_deps=[1]), w.coll(3, w.ALL_REDUCE, 0),
          w.node(4, duration_us=3, data_deps=[3])]
    w.write_trace(tmp_path / "t", [r0, r1])
    _, res, _ = run(tmp_path / "t")
    assert (~res.flows["is_compute"]).sum() == 0
    assert res.flows["start_ns"][compute_ids(res, 1, 1)] == [9_000]
    assert res.flows["start_ns"][compute_ids(res, 1, 3)] == [0]


# --- errors across ranks ------------------------------------------------------------------------


@pytest.mark.parametrize("ranks, where, reason", [
    ([[w.coll(1, w.ALL_REDUCE, 1000)], [w.coll(4, w.ALL_REDUCE, 2000)]], "1.et:node 4", "the ranks must agree"),
    ([[w.coll(1, w.ALL_REDUCE, 1000)], [w.coll(1, w.ALL_GATHER, 1000)]], "1.et:node 1",
     "ALL_GATHER (2) of 1000 bytes"),
    ([[w.coll(3, w.ALL_REDUCE, 1000)], [w.node(1)]], "0.et:node 3",
     "rank 1 has 0 collective nodes but rank 0 has 1"),
    ([[w.node(1)], [w.coll(2, w.ALL_REDUCE, 1000)]], "1.et:node 2",
     "rank 1 has 1 collective nodes but rank 0 has 0"),
    ([[w.coll(1, w.GATHER, 1000)], [w.coll(1, w.GATHER, 1000)]], "0.et:node 1", "GATHER (3) is not supported"),
    ([[w.send(7, 1, 1000, tag=4)], [w.recv(1, 0, 1000, tag=5)]], "0.et:node 7", "has no matching COMM_RECV_NODE"),
    ([[w.node(1)], [w.recv(1, 0, 1000)]], "1.et:node 1", "has no matching COMM_SEND_NODE on rank 0"),
    ([[w.send(1, 0, 1000)], [w.node(1)]], "0.et:node 1", "sends to rank 0"),
    ([[w.send(1, 1, 1000)], [w.recv(2, 0, 999)]], "1.et:node 2", "receives 999 bytes"),
    ([[w.recv(1, 1, 10), w.send(2, 1, 10, data_deps=[1])],
      [w.recv(1, 0, 10), w.send(2, 0, 10, data_deps=[1])]], "0.et:node 1", "wait for each other in a cycle"),
    ([[w.coll(1, w.ALL_REDUCE, 10), w.send(2, 1, 10, data_deps=[1])],
      [w.recv(1, 0, 10), w.coll(2, w.ALL_REDUCE, 10, data_deps=[1])]], "0.et:node 2",
     "rank 0 node 2 (COMM_SEND_NODE) -> rank 1 node 1 (COMM_RECV_NODE) -> rank 1 node 2 (COMM_COLL_NODE) "
     "-> collective #0 (allreduce); each waits"),
])
def test_ranks_that_do_not_fit_together_are_errors(tmp_path, ranks, where, reason):
    w.write_trace(tmp_path / "t", ranks)
    trace = read_chakra(tmp_path / "t")
    sim = Simulation(topology.star(2, *STAR))
    with pytest.raises(ScenarioError) as info:
        add_chakra(sim, trace, [0, 1])
    assert info.value.key == f"{tmp_path}/t.{where}"
    assert reason in info.value.reason
    assert sim.n_nodes == 0


def test_add_chakra_argument_errors(tmp_path):
    w.write_trace(tmp_path / "t", [[w.node(1)]] * 2)
    trace = read_chakra(tmp_path / "t")
    sim = Simulation(topology.star(2, *STAR))
    for hosts, iterations, key in (([0], 1, "ranks"), ([1, 1], 1, "ranks"), ([0, 1], 0, "iterations")):
        with pytest.raises(ScenarioError) as info:
            add_chakra(sim, trace, hosts, iterations)
        assert info.value.key == key


def test_yaml_workload_with_a_chakra_trace(tmp_path):
    rank = [w.node(1, duration_us=3), w.coll(2, w.ALL_TO_ALL, 300_000, data_deps=[1])]
    w.write_trace(tmp_path / "trace", [rank] * 4)
    raw = {"topology": {"kind": "star", "hosts": 4, "link": {"rate": "100Gbps", "delay": "1us"}},
           "traffic": [{"kind": "workload", "model": {"chakra": "trace"}, "iterations": 2,
                        "algorithms": {"alltoall": "pairwise"}}]}
    scn = sc.build(raw, str(tmp_path))
    res = scn.sim.run()
    assert res.iterations["iteration"].tolist() == [0, 1]
    assert res.collectives["algorithm"].tolist() == ["pairwise", "pairwise"]
    assert res.flows["start_ns"][compute_ids(res, 0, 3)][0] == 0
    # its job names its rows, as every workload's does (a Chakra workload's `job` column was empty)
    raw["traffic"][0]["job"] = "trainA"
    res = sc.build(raw, str(tmp_path)).sim.run()
    assert res.iterations["job"].tolist() == ["trainA"] * 2 and set(res.collectives["job"]) == {"trainA"}
    raw["traffic"][0]["model"] = {"chakra": "missing"}
    with pytest.raises(ScenarioError) as info:
        sc.build(raw, str(tmp_path))
    assert info.value.key.endswith(f"{tmp_path}/missing.0.et")       # (prefixed with the entry's key)


def test_chakra_on_multi_gpu_servers_sends_over_nvlink_inside_and_nics_between(tmp_path):
    """A rank per GPU: rank 0 sends 4 MB to rank 1 (same server: the scale-up domain, no
    flow; delta + b/R) and 4 MB to rank 2 (other server: one flow NIC to NIC); compute runs
    on the GPUs' hosts (their NICs)."""
    from rocesim.network import platform as pf
    from rocesim.network.platform import ScaleUp
    b = 4_000_000
    ranks = [[w.send(1, 1, b), w.send(2, 2, b, data_deps=[1])], [w.recv(1, 0, b)], [w.recv(1, 0, b)], []]
    w.write_trace(tmp_path / "t", ranks)
    plat = pf.rail_optimized(2, 2, "100Gbps", "1us", ScaleUp(800 * 10**9, 10**6))
    sim = Simulation(plat)
    add_chakra(sim, read_chakra(tmp_path / "t"), [0, 1, 2, 3])
    res = sim.run()
    f = res.flows
    net = ~f["is_compute"]
    assert net.sum() == 1
    assert (f["src"][net][0], f["dst"][net][0]) == (plat.host[0], plat.host[2])
    nvlink_s = 1e-6 + b * 8 / 800e9
    # the second send starts when the first is done: arrived, as a flow is done when it has
    assert f["start_ns"][net][0] * 1e-9 == pytest.approx(nvlink_s, abs=1e-9)


@pytest.mark.parametrize("fabric, pxn", [("rail_optimized", True), ("rail_optimized", False), ("rail_only", True)])
def test_chakra_send_to_another_rail_forwards_as_nccl_pxn(tmp_path, fabric, pxn):
    """Rank 0 (server 0, rail 0) sends 4 MB to rank 3 (server 1, rail 1).  With PXN (NCCL's
    default, and always on a rail-only fabric) the data crosses the scale-up domain to rank 1
    (server 0, rail 1; delta + b/R) and then goes NIC 1 -> NIC 3 on rail 1; without it, one
    flow NIC 0 -> NIC 3 from the start."""
    from rocesim.network import platform as pf
    from rocesim.network.platform import ScaleUp
    b = 4_000_000
    w.write_trace(tmp_path / "t", [[w.send(1, 3, b)], [], [], [w.recv(1, 0, b)]])
    plat = getattr(pf, fabric)(2, 2, "100Gbps", "1us", ScaleUp(800 * 10**9, 10**6))
    sim = Simulation(plat)
    add_chakra(sim, read_chakra(tmp_path / "t"), [0, 1, 2, 3], pxn=pxn)
    res = sim.run()
    f = res.flows
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    net = ~f["is_compute"]
    assert net.sum() == 1
    relayed = pxn or fabric == "rail_only"
    assert (f["src"][net][0], f["dst"][net][0]) == (plat.host[1] if relayed else plat.host[0], plat.host[3])
    nvlink_s = 1e-6 + b * 8 / 800e9
    assert f["start_ns"][net][0] * 1e-9 == pytest.approx(nvlink_s if relayed else 0, abs=1e-9)


# --- gzip bombs: streamed, bounded by the memory limit, interruptible ------------------------------

MiB = 1 << 20


def write_bomb(path, head: bytes, zero_mib: int) -> int:
    """A gzipped rank file: `head`, then `zero_mib` MiB of zero bytes, as concatenated gzip
    members (one 1 MiB member repeated: ~1 KB each, made at once); returns its size."""
    zeros = gzip.compress(bytes(MiB))
    data = gzip.compress(head) + zeros * zero_mib
    path.write_bytes(data)
    return len(data)


def bomb_scenario(prefix, memory):
    return {"topology": {"kind": "star", "hosts": 2, "link": {"rate": "100Gbps", "delay": "1us"}},
            "limits": {"memory": memory},
            "traffic": [{"kind": "workload", "model": {"chakra": str(prefix)}, "ranks": [0]}]}


@pytest.mark.parametrize("kind", ["one huge message", "many empty messages"])
def test_a_gzip_bomb_is_refused_by_the_memory_limit_as_it_is_read(tmp_path, kind):
    """A 70 KB file that expands to 64 MiB: one Node declaring 64 MiB (refused before it is
    read), or 64 M empty Nodes (refused once the nodes read so far exceed the limit); the
    reading never holds much more than the limit (it was decompressed whole first)."""
    head = w.stream([w.metadata()]) + (w.varint(64 * MiB) if kind == "one huge message" else b"")
    size = write_bomb(tmp_path / "bomb.0.et", head, 64)
    assert size < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(ScenarioError) as info:
            sc.build(bomb_scenario(tmp_path / "bomb", "8MB"), str(tmp_path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    e = info.value
    assert f"{tmp_path}/bomb.0.et:decompressed byte " in e.key
    assert "reading the Chakra trace" in e.reason and "the limit is 8.0 MB" in e.reason
    assert peak < 24 * MiB                     # the 8 MB limit, a 1 MiB piece, and slack
    if kind == "one huge message":             # refused at its length prefix, unread
        assert e.key.endswith(f"decompressed byte {len(w.stream([w.metadata()]))}")
    # within the limit, the same reader reads a real trace (gzipped) through the scenario
    w.write_trace(tmp_path / "ok", [[w.node(1, duration_us=2)]], gz=True)
    assert sc.build(bomb_scenario(tmp_path / "ok", "8MB"), str(tmp_path)).sim.n_nodes == 1


def test_reading_a_gzip_bomb_stops_at_ctrl_c(tmp_path, monkeypatch):
    """Ctrl-C while a 1 GiB expansion is read: the reader decompresses a piece at a time, so
    Ctrl-C comes once 8 MiB (not the whole) have come out, and the reader lets it through.
    Measured in bytes decompressed, not in wall time (a loaded machine stretches that)."""
    write_bomb(tmp_path / "bomb.0.et", w.stream([w.metadata()]) + w.varint(1024 * MiB), 1024)
    out, sent = [], []

    class Decompressing(gzip.GzipFile):
        """The reader's gzip stream, counting what comes out and sending Ctrl-C at 8 MiB."""

        def read(self, size=-1):
            piece = super().read(size)
            out.append(len(piece))
            if not sent and sum(out) >= 8 * MiB:
                sent.append(sum(out))
                # Ctrl-C's KeyboardInterrupt, raised where Python's handler would raise it
                # (through _thread.interrupt_main() its delivery was left to where the
                # interpreter next checked, and one full run of the suite missed it)
                raise KeyboardInterrupt
            return piece

    monkeypatch.setattr(gzip, "GzipFile", Decompressing)
    with pytest.raises(KeyboardInterrupt):
        read_chakra(tmp_path / "bomb")
    assert sent and sent[0] < 10 * MiB      # pieces of a MiB or so, not the whole at once; and the
                                            # interrupt came through, not turned into another error


# --- numbers out of range: refused at their file and node, before anything is built ------------

U64 = 2**64 - 1


@pytest.mark.parametrize("rank0, rank1, node, words", [
    ([w.node(1, duration_us=5), w.node(7, duration_us=U64, data_deps=[1])], [w.node(1)], 7,
     "COMP_NODE duration_micros 18,446,744,073,709,551,615 is"),
    ([w.node(3, w.COLL, duration_us=10**13, attrs={"is_cpu_op": True})], [w.node(1)], 3,
     "COMM_COLL_NODE duration_micros 10,000,000,000,000 is 10000000s, beyond the simulator's time horizon"),
    ([w.coll(2, w.ALL_REDUCE, 2**63 - 1)], [w.coll(2, w.ALL_REDUCE, 2**63 - 1)], 2,
     "comm_size 9,223,372,036,854,775,807 is too large"),
    ([w.send(4, 1, U64 >> 1)], [w.recv(1, 0, U64 >> 1)], 4, "comm_size 9,223,372,036,854,775,807 is too large"),
    ([w.coll(2, w.REDUCE_SCATTER, 10**18)], [w.coll(2, w.REDUCE_SCATTER, 10**18)], 2,
     "a collective of 1000000TB cannot finish within the simulator's time horizon"),
    ([w.coll(5, w.ALL_GATHER, 2 * 10**17)], [w.coll(5, w.ALL_GATHER, 2 * 10**17)], 5,    # x 2 ranks: its output
     "a collective of 400000TB cannot finish"),
    ([w.node(1), w.send(6, 1, 2 * 10**16, data_deps=[1])], [w.recv(1, 0, 2 * 10**16)], 6,
     "a transfer of 20000TB cannot finish within the simulator's time horizon (1000000s): it sends all of it"),
], ids=["compute", "cpu_op", "int64_collective", "int64_send", "collective", "allgather_output", "send"])
def test_a_traces_numbers_are_checked_against_the_horizon_and_the_network_at_their_node(
        tmp_path, rank0, rank1, node, words):
    """Durations of 2^64 us ended in an OverflowError traceback, and sizes the network cannot
    carry within the time horizon were refused keyed `size` or `graph`, not by the trace's
    file and node; a send of 20,000 TB at 100 Gbps passed the reading."""
    w.write_trace(tmp_path / "big", [rank0, rank1])
    for build in (lambda: add_chakra(Simulation(topology.star(2, *STAR)), read_chakra(tmp_path / "big"), [0, 1]),
                  lambda: sc.build({"topology": {"kind": "star", "hosts": 2,
                                                 "link": {"rate": "100Gbps", "delay": "1us"}},
                                    "traffic": [{"kind": "workload", "model": {"chakra": "big"}}]}, str(tmp_path))):
        with pytest.raises(ScenarioError) as info:
            build()
        assert info.value.key.endswith(f"{tmp_path}/big.0.et:node {node}") and words in info.value.reason
    # within range, the same trace shapes are read and built
    w.write_trace(tmp_path / "ok", [[w.node(1, duration_us=10**12), w.coll(2, w.ALL_GATHER, 10**9, data_deps=[1])],
                                    [w.coll(2, w.ALL_GATHER, 10**9)]])
    assert add_chakra(Simulation(topology.star(2, *STAR)), read_chakra(tmp_path / "ok"), [0, 1]) is not None


def test_a_trace_made_in_code_has_its_numbers_checked_too():
    """A ChakraTrace built of ChakraNodes (not read from files) with numbers beyond int64
    ended in an OverflowError traceback; it is refused keyed by rank and node."""
    for rank0, words in (([ChakraNode(1, type=COMP_NODE, duration_ps=2**70)], "COMP_NODE lasts"),
                         ([ChakraNode(3, type=COMM_SEND_NODE, comm_dst=1, comm_size=2**70)], "comm_size")):
        trace = ChakraTrace([rank0, [ChakraNode(3, type=COMM_RECV_NODE, comm_src=0)]])
        with pytest.raises(ScenarioError) as info:
            add_chakra(Simulation(topology.star(2, *STAR)), trace, [0, 1])
        assert info.value.key == f"rank 0:node {rank0[0].id}" and words in info.value.reason


# --- traces as Chakra's PyTorch converter writes them: CPU launches and GPU collectives ------------

def converter_rank(size):
    """One rank as Chakra's PyTorch converter writes it: CPU ops (`is_cpu_op: true`, their
    duration_micros), among them the CPU-side launch of a collective (COMM_COLL_NODE without
    comm_type, as `c10d::allreduce_`), then the GPU-side collective it launches (with
    comm_type and comm_size) and a GPU kernel after it.  Control dependencies are the call
    tree's parent there, and may point back (the launch's at the kernel) or at a node the
    converter left out (99): they order nothing."""
    cpu = {"is_cpu_op": True}
    return [w.node(1, name="aten::mm", duration_us=5, attrs=cpu),
            w.node(2, w.COLL, name="c10d::allreduce_", duration_us=7, data_deps=[1], ctrl_deps=[4], attrs=cpu),
            w.node(3, w.COLL, name="ncclKernel_AllReduce_RING_LL_Sum_float", data_deps=[2],
                   attrs={"is_cpu_op": False, "comm_type": w.ALL_REDUCE, "comm_size": size}),
            w.node(4, name="ampere_sgemm", duration_us=11, data_deps=[3], attrs={"is_cpu_op": False}),
            w.node(5, w.COLL, name="record_param_comms", data_deps=[2], ctrl_deps=[99], attrs=cpu)]


def test_a_one_rank_converter_trace_runs_on_one_gpu(tmp_path):
    """CPU launches run as CPU time, and a collective of one rank moves nothing: the
    iteration is the CPU ops and the GPU kernel, one after the other."""
    w.write_trace(tmp_path / "t", [converter_rank(1 << 20)])
    trace = read_chakra(tmp_path / "t")
    assert [n.is_cpu_op for n in trace.ranks[0]] == [True, True, False, False, True]
    _, res, _ = run(tmp_path / "t", n_hosts=2)
    assert res.iterations["duration_ns"][0] == (5 + 7 + 11) * 1000
    assert (~res.flows["is_compute"]).sum() == 0


def test_cpu_launches_are_cpu_time_and_gpu_collectives_are_issued(tmp_path):
    """Two ranks: each CPU op takes its duration (the launch too), the GPU-side all-reduce
    is the one collective and moves the data, and the GPU kernel waits for it."""
    size = 4 << 20
    w.write_trace(tmp_path / "t", [converter_rank(size)] * 2)
    _, res, _ = run(tmp_path / "t", n_hosts=2, algorithms={"allreduce": "ring"})
    assert res.collectives["op"].tolist() == ["allreduce"] and res.collectives["size_bytes"][0] == size
    f = res.flows
    net = ~f["is_compute"]
    assert f["size_bytes"][net].sum() >= size                    # 2 ranks: each sends half, twice
    for host in (0, 1):
        mm, launch, gemm = (compute_ids(res, host, us) for us in (5, 7, 11))
        assert len(mm) == len(launch) == len(gemm) == 1
        assert f["start_ns"][launch[0]] == 5_000                  # after aten::mm (its ctrl dep)
        assert f["start_ns"][gemm[0]] >= end_ns(res, np.flatnonzero(net)).max()
    assert f["start_ns"][net].min() == 12_000                     # the collective after the launches
    assert res.iterations["duration_ns"][0] > (5 + 7 + 11) * 1000 + size * 8 / 100e9 * 1e9 / 2


def test_cpu_op_attribute_must_be_a_bool(tmp_path):
    w.write_trace(tmp_path / "t", [[w.node(3, w.COLL, attrs={"is_cpu_op": "yes"})]])
    with pytest.raises(ScenarioError) as info:
        read_chakra(tmp_path / "t")
    assert info.value.key.endswith("t.0.et:node 3") and "is_cpu_op must hold a bool" in info.value.reason


def test_an_all_gathers_comm_size_is_each_ranks_input(tmp_path):
    """ASTRA-sim's all-gather of comm_size gathers comm_size from each rank (its generator
    scripts; its ring's result is comm_size x N): on 4 ranks the collective is 4x comm_size
    as nccl-tests count it, and every rank receives 3 x comm_size."""
    size = 1 << 20
    w.write_trace(tmp_path / "t", [[w.coll(1, w.ALL_GATHER, size)]] * 4)
    _, res, _ = run(tmp_path / "t", algorithms={"allgather": "ring"})
    assert res.collectives["size_bytes"][0] == 4 * size
    f = res.flows
    net = ~f["is_compute"]
    assert f["size_bytes"][net & (f["dst"] == 0)].sum() == 3 * size
