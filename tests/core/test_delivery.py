"""Receivers that take packets out of order (`nic.delivery`, issue 31 item 4).

A flow's packets are sprayed over two routes of different delays (round-robin: they
alternate, one flow at a time; at random with two senders): `ordered` receivers
NACK what comes out of order (go-back-N resends everything after it: a NACK storm;
selective repeat resends the packet the NACK names), `unordered` receivers place each
packet and SACK it, and their senders resend a hole only once `nic.reorder_threshold`
packets above it are SACKed, or at the timeout.  Per flow, `reordered_packets` counts
what arrived with a gap below it and `spurious_retx_bytes` what arrived again while held.
"""
import numpy as np
import pytest

from helpers import MTU, lossy_incast
from rocesim import ScenarioError, Simulation, topology
from rocesim._core import debug, engine
from rocesim.cc import builtin_schemes
from rocesim.results.run import CoreReadout, Results

MODES = {"go_back_n": {}, "selective_repeat": {"loss_recovery": "selective_repeat"},
         "unordered": {"delivery": "unordered"}}


def two_routes(slow="1100ns", senders=(0,)):
    """Hosts `senders` and 1 (the receiver) on switches s0 and s3, joined by two switches
    of equal cost: route A (1 us links) and route B (its first link `slow`)."""
    t = topology.Topology(max(*senders, 1) + 1)
    s0, a, b, s3 = (t.add_switch() for _ in range(4))
    for h in senders:
        t.add_link(h, s0, "100Gbps", "1us")
    t.add_link(s0, a, "100Gbps", "1us")          # route A first: a round-robin's first packet
    t.add_link(s0, b, "100Gbps", slow)
    t.add_link(a, s3, "100Gbps", "1us")
    t.add_link(b, s3, "100Gbps", "1us")
    t.add_link(s3, 1, "100Gbps", "1us")
    return t


def reordered_run(nic, *, slow="1100ns", senders=(0,), size=1_000_000, cc="none", cc_params=None,
                  switch=None, partition="none", threads=1):
    """One flow of `size` bytes from each sender to host 1, sprayed over the two routes
    (round-robin with one sender: its packets alternate, the odd ones on route B; at random
    with more), run to the end; (the Simulation, its core).  The ACKs, NACKs and CNPs come
    back by route A alone (an override at s3: switches balance them as they balance data,
    and the reordering studied here is the data's)."""
    order = "round_robin" if len(senders) == 1 else "random"
    t = two_routes(slow, senders)
    s3, a = t.n_hosts + 3, t.n_hosts + 1
    sim = Simulation(t, cc=cc, cc_params=cc_params, nic=nic, partition=partition,
                     routes=[{"switch": s3, "dst": h, "next": a} for h in senders],
                     switch={"load_balancing": {"scheme": "spray", "order": order}, **(switch or {})})
    for h in senders:
        sim.add_flow(h, 1, size)
    core = sim.build_core()
    assert core.run(10**12, threads=threads) == engine.STOP_EMPTY
    return sim, core


def results(sim, core):
    return Results.from_core(sim.record(), CoreReadout.of(core), wall_s=0.0, cpu_s=0.0, interrupted=False,
                             stop_ps=None)


@pytest.mark.parametrize("mode", MODES)
def test_every_byte_arrives_once_under_reordering(mode):
    res = results(*reordered_run(MODES[mode]))
    f, s = res.flows, res.summary
    assert s["flows_completed"] == 1
    assert f["delivered_bytes"][0] == f["size_bytes"][0] == s["data_bytes_delivered"]
    assert f["reordered_packets"][0] > 0 and s["reordered_packets"] == f["reordered_packets"][0]
    assert s["spurious_retx_bytes"] == f["spurious_retx_bytes"][0]
    assert s["delivery"] == ("unordered" if mode == "unordered" else "ordered")
    assert s["drops"] == 0 and s["packets_in_use_at_end"] == 0


def test_reordering_below_the_threshold_costs_unordered_receivers_nothing():
    """Every odd packet arrives one packet late (100 ns slower route): the unordered receiver
    SACKs it and nothing is sent again; go-back-N NACKs each gap and resends what follows
    it (a NACK storm: many times the flow), selective repeat resends each late packet."""
    runs = {m: results(*reordered_run(nic)) for m, nic in MODES.items()}
    uo, gbn, sr = runs["unordered"].summary, runs["go_back_n"].summary, runs["selective_repeat"].summary
    assert uo["reordered_packets"] == 499              # the odd packets but the last, all overtaken
    assert uo["retx_bytes"] == uo["spurious_retx_bytes"] == uo["nacks"] == uo["timeouts"] == 0
    assert gbn["nacks"] > 100 and gbn["retx_bytes"] > 10 * 1_000_000
    assert gbn["spurious_retx_bytes"] > 0               # a NACK's resend of what had arrived since
    assert sr["nacks"] > 100 and sr["retx_bytes"] == sr["spurious_retx_bytes"] > 0
    fct = {m: r.flows["fct_ns"][0] for m, r in runs.items()}
    assert fct["unordered"] < 1.01 * results(*reordered_run({}, slow="1us")).flows["fct_ns"][0]
    assert fct["go_back_n"] > 10 * fct["unordered"]


@pytest.mark.parametrize("threshold, spurious", [(3, True), (64, False), (0, False)])
def test_reordering_deeper_than_the_threshold_is_resent_and_counted_spurious(threshold, spurious):
    """Odd packets 3 us late: a dozen packets overtake each.  With a threshold of 3 the
    sender declares each late packet lost and resends it, which the receiver then holds
    twice; with 64 (deeper than the reordering), or 0 (only the timeout, off under PFC),
    nothing is resent."""
    s = results(*reordered_run({"delivery": "unordered", "reorder_threshold": threshold}, slow="3us")).summary
    assert s["flows_completed"] == 1 and s["nacks"] == 0
    assert s["retx_bytes"] == s["spurious_retx_bytes"]
    assert (s["retx_bytes"] > 300 * MTU) if spurious else s["retx_bytes"] == 0


@pytest.mark.parametrize("nic", [{}, {"ack_every": 4}], ids=["ack_every_1", "ack_every_4"])
@pytest.mark.parametrize("cc", sorted(builtin_schemes()))
def test_every_scheme_with_coalesced_acks_ecn_cnps_and_int_in_both_modes(cc, nic):
    """Two senders share the receiver's link (ECN marks, DCQCN's CNPs, HPCC's INT), each
    sprayed at random over the two routes: every scheme finishes in both modes, and the
    unordered receivers never NACK (what their senders resend had arrived)."""
    switch = {"buffer": "4MB", "ecn": {"kmin": "20KB", "kmax": "80KB"}}
    params = {"notify": "cnp"} if cc == "dcqcn" else None
    for delivery in ("ordered", "unordered"):
        sim, core = reordered_run({"delivery": delivery, **nic}, senders=(0, 2), cc=cc, cc_params=params,
                                  switch=switch)
        res = results(sim, core)
        s, f = res.summary, res.flows
        assert s["flows_completed"] == 2 and list(f["delivered_bytes"]) == list(f["size_bytes"]), delivery
        assert s["reordered_packets"] > 0
        if cc != "none":
            assert res.ports["ecn_marks"].sum() > 0
        if cc == "dcqcn":
            assert s["cnps"] > 0
        if delivery == "unordered":                  # random spraying's queues may reorder deeper
            assert s["nacks"] == 0 and s["drops"] == 0   #   than the threshold: resent, yet not lost
            assert s["retx_bytes"] == s["spurious_retx_bytes"]


@pytest.mark.parametrize("nic", [{}, {"ack_every": 3}], ids=["ack_every_1", "ack_every_3"])
def test_lossy_incast_resends_each_lost_packet_once(nic):
    """Drops without PFC: every flow completes, no NACK is sent, and the bytes resent are
    the bytes dropped plus those resent needlessly (a timeout resends every packet not
    SACKed, some of which may be in flight): each lost packet is resent once.  In this
    incast every recovery is needed: nothing arrives twice."""
    res = lossy_incast(4, "go_back_n", nic={"delivery": "unordered", **nic})
    s, f = res.summary, res.flows
    assert s["flows_completed"] == 4 and list(f["delivered_bytes"]) == list(f["size_bytes"])
    assert s["drops"] > 100 and s["nacks"] == 0
    assert s["retx_bytes"] - s["spurious_retx_bytes"] == MTU * s["drops"]
    assert s["spurious_retx_bytes"] == 0
    assert s["retx_bytes"] == f["retx_bytes"].sum()


@pytest.mark.parametrize("cc", ["dctcp", "swift", "none"])
def test_resent_less_spurious_is_what_was_dropped(cc):
    """The same count in a harder incast (ECN, windows, timeouts that resend packets still
    in flight): what was resent and not needed is exactly what arrived twice."""
    res = lossy_incast(6, "go_back_n", buffer="120KB", size=700_000, cc=cc,
                       switch={"ecn": {"kmin": "10KB", "kmax": "60KB", "pmax": 0.2}},
                       nic={"delivery": "unordered", "ack_every": 3})
    s = res.summary
    assert s["flows_completed"] == 6 and s["drops"] > 0
    assert s["retx_bytes"] - s["spurious_retx_bytes"] == MTU * s["drops"]
    assert (res.flows["retx_bytes"] - res.flows["spurious_retx_bytes"]).sum() == MTU * s["drops"]


def test_same_seed_same_bytes(tmp_path):
    outs = []
    for k in range(2):
        res = results(*reordered_run({"delivery": "unordered", "ack_every": 2}, slow="2us", senders=(0, 2)))
        res.write(tmp_path / str(k))
        outs.append((tmp_path / str(k) / "flows.csv").read_bytes())
        assert res.summary["spurious_retx_bytes"] > 0
    assert outs[0] == outs[1]


@pytest.mark.parametrize("mode", MODES)
def test_a_run_in_parts_is_the_same_on_1_and_2_threads(mode):
    """The receivers' records (bitmaps, counts) live in the receiver's part; the SACKs cross
    the cut links with their ACKs: the run gives the same on any number of threads."""
    runs = []
    for threads in (1, 2):
        sim, core = reordered_run({"delivery": "unordered", "ack_every": 2, **MODES[mode]}, slow="2us",
                                  senders=(0, 2), partition="leaves", threads=threads)
        assert core.n_parts > 1
        st = core.stats()
        runs.append(({k: v for k, v in st.items() if k != "event_queue_bytes"}, core.flow_arrays()))
    (st1, fa1), (st2, fa2) = runs
    assert st1 == st2 and st1["reordered_packets"] > 0
    for k in fa1:
        np.testing.assert_array_equal(fa1[k], fa2[k])
    assert debug.receive_records_in_use(core) == 0


def test_the_summary_says_when_multipath_load_balancing_meets_ordered_receivers():
    """Spraying marks its runs (RunRecord.multipath); with ordered receivers the summary says
    so, and the terminal; with unordered ones, or on one path, it does not."""
    ordered = results(*reordered_run({}))
    assert ordered.summary["multipath_into_ordered"] is True
    assert "ordered receivers under multipath load balancing" in ordered.describe()
    assert results(*reordered_run({"delivery": "unordered"})).summary["multipath_into_ordered"] is False
    sim, core = reordered_run({}, switch={"load_balancing": {"scheme": "ecmp"}})
    single = results(sim, core)
    assert single.summary["multipath_into_ordered"] is False
    assert "multipath" not in single.describe()


@pytest.mark.parametrize("key, value", [("delivery", "sprayed"), ("reorder_threshold", -1)])
def test_bad_settings_name_the_key(key, value):
    with pytest.raises(ScenarioError, match=f"nic.{key}"):
        Simulation(topology.star(2, "100Gbps", "1us"), nic={key: value})
