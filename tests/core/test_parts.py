"""The core holds its run in parts (issue 20, stage 1: engine.pyx): one `Sim` per part with
its own queue, pools, counters, RNG and timeline, the world shared.  With one part the
readbacks are that part's own; a part with nothing in it changes none of them.  Receivers
may keep their own records (stage 2: qp.rx_of), as they must in a run in parts: nothing a
run gives changes."""
import numpy as np
import pytest

from rocesim import Simulation, topology, traffic
from rocesim._core import debug, engine

FS_DONE = 2      # defs.pxd


def fat_tree_core():
    """A fat_tree(4) under DCQCN with PFC and small buffers: an incast that pauses links
    and marks ECN (the RNG), behind Poisson background traffic, in one part (`partition:
    none`): the tests below add parts to it by hand."""
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t, seed=3, cc="dcqcn", switch={"buffer": "400KB", "pfc": {"enabled": True}},
                     partition="none")
    rng = np.random.default_rng(3)
    sim.add_flows(traffic.poisson_cdf(t.n_hosts, 100e9, 0.5, 100 * 10**6, traffic.WEBSEARCH, rng))
    sim.add_flows(traffic.incast(list(range(1, 13)), 0, 300_000, 20 * 10**6))
    core = sim.build_core()
    return core


def readbacks(core):
    """Everything Python reads from a core, as plain values."""
    ids, rate, delivered = core.sample_flows()
    st = core.stats()
    st.pop("event_queue_bytes")       # capacity, not state: an empty part's calendar adds some
    return dict(stats=st, flows=core.flow_arrays(), ports=core.port_arrays(),
                timeline=core.pause_timeline(), switches=core.switch_arrays(),
                queues=core.sample_queues(np.arange(len(core.port_arrays()["buffer_drops"]))),
                sampled=dict(ids=ids, rate=rate, delivered=delivered),
                now=core.now_ps, next=core.next_event_ps, in_use=core.packets_in_use)


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    else:
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def mid_run():
    """A fat_tree(4) core stopped while flows are in flight and links paused."""
    core = fat_tree_core()
    core.run(300 * 10**6)             # 300 us
    return core



def test_cores_test_hooks_are_in_the_debug_module_not_its_face():
    """What only tests need (adding empty parts, splitting receivers, the parts' order) is
    rocesim._core.debug's; a Core's methods are its supported face."""
    assert [name for name in dir(engine.Core) if name.startswith("_") and not name.startswith("__")] == []
    assert {"add_empty_part", "split_receivers", "part_order", "part_stats", "receive_records_in_use"} <= set(dir(debug))

def test_one_part_is_the_whole_run(mid_run):
    core = mid_run
    assert core.n_parts == 1
    assert core.stats() == debug.part_stats(core, 0)
    st, fl = core.stats(), core.flow_arrays()
    assert st["flows_done"] == (fl["state"] == FS_DONE).sum() > 0
    assert st["queue_pairs_in_use"] > 0 and st["pfc_pauses"] > 0 and len(core.pause_timeline()["port"]) > 0
    # the flows in flight, read two ways: by flow (flow_arrays) and by queue pair (sample_flows)
    ids, _, delivered = core.sample_flows()
    assert len(ids) == st["queue_pairs_in_use"]
    np.testing.assert_array_equal(fl["delivered_bytes"][ids], delivered)
    # sent, less what is still on the wires
    assert 0 < st["link_crossings"] <= core.port_arrays()["tx_packets"].sum()


def test_an_empty_part_changes_no_readback():
    """A part with no events, flows or packets: every readback (sums, maxima, the timeline
    put together, the queue pairs of every part) is what the one part gave, mid-run and at
    the end; stats() is the sum over parts of each part's own."""
    core = fat_tree_core()
    core.run(300 * 10**6)
    before = readbacks(core)
    debug.add_empty_part(core)
    assert core.n_parts == 2
    assert_same(before, readbacks(core))
    one, empty, both = debug.part_stats(core, 0), debug.part_stats(core, 1), core.stats()
    for k in both:
        if k in ("sim_time_ps", "last_activity_ps"):
            assert both[k] == max(one[k], empty[k]) and empty[k] == 0
        elif k != "event_queue_bytes":
            assert both[k] == one[k] + empty[k] and empty[k] == 0
    assert both["event_queue_bytes"] == one["event_queue_bytes"] + empty["event_queue_bytes"]
    with pytest.raises(NotImplementedError):
        core.run(10**9)
    del core                          # frees the world once, each part's own state once


def test_an_empty_part_after_the_end_changes_no_readback():
    core = fat_tree_core()
    assert core.run(10**12) == engine.STOP_EMPTY
    before = readbacks(core)
    debug.add_empty_part(core)
    assert_same(before, readbacks(core))
    fl = core.flow_arrays()
    assert (fl["state"] == FS_DONE).all()
    st = core.stats()
    assert st["data_bytes_delivered"] == fl["delivered_bytes"].sum() > 0
    assert st["link_crossings"] == core.port_arrays()["tx_packets"].sum()
    assert st["packets_in_use"] == 0 and st["flows_done"] == len(fl["state"])


def lossy_core(recovery, cc="dcqcn", ack_every=1):
    """An incast into one 100G link without PFC (drops), ECN marks (DCQCN's answered by
    CNPs), with `recovery` (or `unordered` delivery) and ACKs every `ack_every` packets
    (the coalescing timer on)."""
    nic = {"delivery": "unordered"} if recovery == "unordered" else {"loss_recovery": recovery}
    t = topology.Topology(7)
    sw = t.add_switch()
    t.add_link(0, sw, "100Gbps", "1us")
    for h in range(1, 7):
        t.add_link(h, sw, "40Gbps", "1us")
    sim = Simulation(t, seed=5, cc=cc, cc_params={"notify": "cnp"} if cc == "dcqcn" else None, switch={"buffer": "120KB", "pfc": {"enabled": False},
                                               "ecn": {"kmin": "10KB", "kmax": "60KB", "pmax": 0.2}},
                     nic={**nic, "rto": "100us", "ack_every": ack_every})
    for h in range(1, 7):
        sim.add_flow(h, 0, 700_000, start=h * 17_123)
        sim.add_flow(0, h, 50_000, start=h * 9_001)
    core = sim.build_core()
    return core


CORES = {"fat_tree_pfc_dcqcn": fat_tree_core,
         "lossy_go_back_n_acks_every_4": lambda: lossy_core("go_back_n", ack_every=4),
         "lossy_selective_repeat": lambda: lossy_core("selective_repeat"),
         "lossy_selective_repeat_acks_every_3_hpcc": lambda: lossy_core("selective_repeat", "hpcc", 3),
         "lossy_unordered_acks_every_3_swift": lambda: lossy_core("unordered", "swift", 3)}


@pytest.mark.parametrize("case", CORES)
def test_receivers_with_their_own_records_change_nothing(case):
    """The same run with the receive state in the sender's queue pair and in receive
    records of the receiver's own (opened at a flow's first data, closed at its last
    byte): every readback equal mid-run (records open, ACKs owed, losses being repaired)
    and at the end, where no record and no packet is left."""
    one, split = CORES[case](), CORES[case]()
    debug.split_receivers(split)
    mid = 200 * 10**6
    assert one.run(mid) == split.run(mid)
    assert debug.receive_records_in_use(split) > 0 and debug.receive_records_in_use(one) == 0
    assert_same(readbacks(one), readbacks(split))
    assert one.run(10**12) == split.run(10**12) == engine.STOP_EMPTY
    end = readbacks(split)
    assert_same(readbacks(one), end)
    assert debug.receive_records_in_use(split) == 0 and end["in_use"] == 0
    st = end["stats"]
    assert (end["flows"]["state"] == FS_DONE).all()
    assert st["data_bytes_delivered"] == end["flows"]["delivered_bytes"].sum() > 0
    if case.startswith("lossy"):
        assert st["buffer_drops"] > 0 and st["retx_bytes"] > 0 and end["ports"]["ecn_marks"].sum() > 0
        assert st["nacks"] > 0 if "unordered" not in case else st["reordered_packets"] > 0
        assert st["cnps"] > 0 or case.endswith(("hpcc", "swift"))       # DCQCN's CNPs


def test_receive_records_are_split_only_before_the_run():
    core = lossy_core("go_back_n")
    core.run(10 * 10**6)
    with pytest.raises(RuntimeError, match="before the run"):
        debug.split_receivers(core)
