"""NSCC, the Ultra Ethernet transport's congestion control (rocesim/_core/cc_nscc.pyx, after
uet-htsim's uec.cpp), and the `transport:` key that selects it: fair shares, a bounded
incast queue with nothing lost, quick adapt, determinism across threads."""
import numpy as np
import pytest
from test_cc import bottleneck_run, goodput

from rocesim import ScenarioError, Simulation, topology
from rocesim import config
from rocesim import scenario as sc

US = 10**6
LINE = 100e9 * 1000 / 1048            # payload goodput of a full 100G link (1000 B payload, 48 B header)


def test_two_flows_share_a_link_fairly_at_full_rate():
    """Fair increase adds the same bytes per RTT to every flow and the decrease is
    multiplicative: two flows into one link settle within 10% of half of it each."""
    res, qt, queue = bottleneck_run("nscc", 2, stop="10ms", sample="100us")
    share = [goodput(res, 2e6, 10e6, f) for f in (0, 1)]
    assert sum(share) == pytest.approx(LINE, rel=0.01)
    assert share == pytest.approx([LINE / 2] * 2, rel=0.10)
    assert res.summary["drops"] == 0


def test_eight_flows_reach_a_jain_index_above_099():
    res, _, _ = bottleneck_run("nscc", 8, stop="10ms", sample="100us")
    share = np.array([goodput(res, 2e6, 10e6, f) for f in range(8)])
    assert share.sum() ** 2 / (8 * (share ** 2).sum()) > 0.99
    assert share.sum() == pytest.approx(LINE, rel=0.01)


def incast(n, size, params=None, sample="5us"):
    sim = Simulation(topology.star(n + 1, "100Gbps", "1us"), cc="nscc", cc_params=params)
    for h in range(1, n + 1):
        sim.add_flow(h, 0, size)
    res = sim.run(sample_interval=sample)
    port = int(np.flatnonzero(res.ports["peer_node"] == 0)[0])
    q = res.samples["queues"]
    mine = q["port"] == port
    return sim, res, q["time_ns"][mine], q["queue_bytes"][mine]


def test_incast_queue_is_bounded_and_nothing_is_lost_under_pfc():
    """8 -> 1 of 2 MB: the first window (1.5 BDP per flow, uec.cpp initNscc) queues at most
    8 x 1.5 BDP; from 200 us on the queue stays below ECN's Kmax; PFC loses nothing, every
    byte sent is delivered, and the incast takes its serialization time within 2%."""
    sim, res, t, queue = incast(8, 2_000_000)
    final = sim.cc_final
    bdp = final["network_rtt"] * 100e9 / 8e12
    assert queue.max() <= 8 * final["max_window_bdp"] * bdp + 8 * 1048
    kmax = 145_250                                  # NSCC's ECN at 100G (declaration)
    assert queue[t > 200_000].max() < kmax
    s = res.summary
    assert s["drops"] == 0 and s["timeouts"] == 0 and s["flows_completed"] == 8
    assert (res.flows["delivered_bytes"] == res.flows["size_bytes"]).all()
    ideal_ns = 8 * 2_000_000 * 1048 / 1000 * 8 / 100
    assert res.flows["fct_ns"].max() == pytest.approx(ideal_ns, rel=0.02)


def test_quick_adapt_drains_a_large_incast_sooner():
    """32 -> 1: each flow delivers under max window / 8 per epoch while the delay is far above
    4 x the target, so quick adapt cuts every window to what it delivered; with its
    threshold out of reach the queue drains only by the bounded multiplicative decrease."""
    _, _, t, with_qa = incast(32, 500_000)
    _, _, t2, without = incast(32, 500_000, {"qa_threshold": 1e5})
    early = (t > 20_000) & (t < 200_000)
    early2 = (t2 > 20_000) & (t2 < 200_000)
    assert with_qa[early].mean() < 0.9 * without[early2].mean()


def test_one_thread_or_two_give_the_same_run():
    def run(threads):
        sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), cc="nscc", partition="leaves")
        for h in range(16):
            sim.add_flow(h, (h + 5) % 16, 300_000)
        for h in range(1, 9):
            sim.add_flow(h, 0, 200_000, start=10 * US)
        return sim.run(threads=threads, progress=False)
    one, two = run(1), run(2)
    assert one.summary["flows_completed"] == one.summary["flows_total"] == 24
    for column in ("fct_ns", "delivered_bytes"):
        assert (one.flows[column] == two.flows[column]).all()


def test_gains_scale_with_the_networks_bdp():
    """At uet-htsim's reference network (100G x 12 us) the scale a is 1 and the target 9 us."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="nscc", cc_params={"network_rtt": "12us"})
    sim.add_flow(1, 2, 10_000)
    sim.run()
    assert sim.cc_final["scale"] == pytest.approx(1.0)
    assert sim.cc_final["target_delay"] == 9 * US
    sim = Simulation(topology.star(3, "400Gbps", "1us"), cc="nscc", cc_params={"network_rtt": "12us"})
    sim.add_flow(1, 2, 10_000)
    sim.run()
    assert sim.cc_final["scale"] == pytest.approx(4.0)


# --- transport: roce | uet ------------------------------------------------------------------------

STAR = {"kind": "star", "hosts": 4, "link": {"rate": "100Gbps", "delay": "1us"}}
TRAFFIC = [{"kind": "incast", "senders": [1, 2], "receiver": 0, "size": "10KB"}]


def built(**top):
    return sc.build({"topology": STAR, "traffic": TRAFFIC, **top}).sim


def test_transport_uet_selects_what_its_table_lists():
    sim = built(transport="uet")
    assert sim.scheme.name == config.TRANSPORTS["uet"]["cc.scheme"] == "nscc"
    assert sim.settings.nic["rccc"] is config.TRANSPORTS["uet"]["nic.rccc"] is True
    assert built(transport="uet", nic={"rccc": False}).settings.nic["rccc"] is False
    assert built().scheme.name == built(transport="roce").scheme.name == "none"
    assert Simulation(topology.star(3, "100Gbps", "1us"), transport="uet").scheme.name == "nscc"


def test_an_explicit_key_overrides_the_transport():
    assert built(transport="uet", cc={"scheme": "dcqcn"}).scheme.name == "dcqcn"
    only_params = built(transport="uet", cc={"params": {"target_delay": "5us"}})
    assert only_params.scheme.name == "nscc" and only_params.settings.cc_params["target_delay"] == 5 * US
    api = Simulation(topology.star(3, "100Gbps", "1us"), transport="uet", cc="swift")
    assert api.scheme.name == "swift"


def test_a_line_added_to_a_transport_is_applied(monkeypatch):
    """A part added to a transport is one line of config.TRANSPORTS: its setting becomes a
    default under the scenario's own keys."""
    monkeypatch.setitem(config.TRANSPORTS, "uet", {**config.TRANSPORTS["uet"], "nic.ack_every": 4})
    assert built(transport="uet").settings.nic["ack_every"] == 4
    assert built(transport="uet", nic={"ack_every": 2}).settings.nic["ack_every"] == 2
    assert built(transport="roce").settings.nic["ack_every"] == 1


def test_an_unknown_transport_is_refused_naming_the_key():
    with pytest.raises(ScenarioError) as e:
        built(transport="infiniband")
    assert e.value.key == "transport" and "uet" in e.value.reason


def test_transport_uet_sets_every_entry_of_its_table_and_runs_lossy_with_trimming():
    """Every setting the preset lists reaches the simulation; a 3-to-1 incast into a small
    buffer then loses nothing: no PFC, the switch trims what it would drop, and each trimmed
    packet is sent again once (its payload, 1000 B here)."""
    sim = sc.build({"topology": STAR, "traffic": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0,
                                                     "size": "200KB"}],
                    "transport": "uet", "switch": {"buffer": "100KB"}}).sim
    for path, value in config.TRANSPORTS["uet"].items():
        section, *keys = path.split(".")
        node = sim.scheme.name if path == "cc.scheme" else getattr(sim.settings, section)
        for k in keys if path != "cc.scheme" else ():
            node = node[k]
        assert node == value, path
    s = sim.run(progress=False).summary
    assert s["flows_completed"] == s["flows_total"] == 3
    assert s["drops"] == 0 and s["pfc_pauses"] == 0 and s["trimmed"] > 0
    assert s["retx_bytes"] == 1000 * s["trimmed"]
