"""PFC: lossless incast at line rate, pause frames, per-ingress-port sharing, loops."""
import numpy as np
import pytest

from helpers import ser_ps, two_switch_loop, wire_bytes
from rocesim import ScenarioError, Simulation, topology

RATE = 100 * 10**9
US = 10**6


def incast(n_senders, size, buffer="1MB", **kw):
    sim = Simulation(topology.star(n_senders + 1, "100Gbps", "1us"), switch={"buffer": buffer}, **kw)
    for h in range(1, n_senders + 1):
        sim.add_flow(h, 0, size)
    return sim.run()


def test_incast_is_lossless_and_runs_the_receiver_link_at_line_rate():
    n, size = 16, 1_000_000
    res = incast(n, size)
    s = res.summary
    assert s["drops"] == 0
    assert s["pfc_pauses"] > 0
    assert s["flows_completed"] == n
    # the receiver's link carries every data byte back to back: the last byte arrives
    # total wire bytes / line rate after the first packet could arrive
    first_arrival = ser_ps(1048, RATE) + US + ser_ps(1048, RATE) + US
    expected_last_byte = first_arrival + ser_ps(n * wire_bytes(size) - 1048, RATE)
    last_byte = np.nanmax(res.flows["rx_fct_ns"]) * 1000
    assert last_byte == pytest.approx(expected_last_byte, rel=1e-4)
    # and the last flow's FCT is that plus the ACK's way back
    ack_back = 2 * (ser_ps(60, RATE) + US)
    assert np.nanmax(res.flows["fct_ns"]) * 1000 == pytest.approx(expected_last_byte + ack_back, rel=1e-4)
    # the switch port towards the receiver sent exactly the data, and it was never paused
    to_receiver = np.flatnonzero((res.ports["peer_node"] == 0))
    assert res.ports["tx_bytes"][to_receiver].sum() == n * wire_bytes(size)
    assert res.ports["paused_ns"][to_receiver].sum() == 0


def test_pauses_are_frames_on_the_wire():
    res = incast(8, 500_000)
    p = res.ports
    # every packet put on a wire crossed it: data, ACKs and PAUSE/RESUME frames
    assert p["tx_packets"].sum() == res.summary["link_crossings"]
    senders_ports = np.flatnonzero((p["node"] >= 1) & (p["node"] <= 8))
    assert p["paused_ns"][senders_ports].sum() > 0          # the senders' NICs obeyed
    assert res.summary["pfc_resumes"] == res.summary["pfc_pauses"]  # every pause released


def test_default_headroom_absorbs_in_flight_data_with_a_small_buffer():
    # 33 ports x (37.5KB headroom + 4KiB reserve) = 1.37MB: 0.6MB left to share
    res = incast(32, 200_000, buffer="2MB")
    assert res.summary["drops"] == 0
    assert res.summary["pfc_pauses"] > 32
    assert res.summary["flows_completed"] == 32


def test_a_buffer_too_small_for_the_headroom_is_refused():
    with pytest.raises(ScenarioError) as e:
        incast(32, 200_000, buffer="600KB")
    assert e.value.key == "switch.buffer" and "headroom" in e.value.reason


def test_static_threshold_pauses_earlier_than_dynamic():
    dyn = incast(4, 2_000_000, buffer="4MB")
    sim = Simulation(topology.star(5, "100Gbps", "1us"),
                     switch={"buffer": "4MB", "pfc": {"threshold": "50KB"}})
    for h in range(1, 5):
        sim.add_flow(h, 0, 2_000_000)
    static = sim.run()
    assert dyn.summary["drops"] == static.summary["drops"] == 0
    assert static.summary["pfc_pauses"] > dyn.summary["pfc_pauses"]
    # the receiver link still runs at line rate
    assert np.nanmax(static.flows["fct_ns"]) == pytest.approx(np.nanmax(dyn.flows["fct_ns"]), rel=1e-3)


def test_a_lone_sender_on_one_of_two_congested_ingress_ports_gets_half():
    """PFC shares per ingress port: A alone on its port gets C/2, three senders behind
    another switch share the other half (PFC's per-ingress accounting, as the HPCC fork's
    SwitchMmu counts it)."""
    t = topology.Topology(5)
    s1, s2 = t.add_switch(), t.add_switch()
    t.add_link(0, s1, "100Gbps", "1us")
    t.add_link(1, s1, "100Gbps", "1us")
    for h in (2, 3, 4):
        t.add_link(h, s2, "100Gbps", "1us")
    t.add_link(s2, s1, "100Gbps", "1us")
    sim = Simulation(t, switch={"buffer": "2MB"})
    size = 4_000_000
    ids = [sim.add_flow(h, 0, size) for h in (1, 2, 3, 4)]
    res = sim.run()
    assert res.summary["drops"] == 0 and res.summary["pfc_pauses"] > 0
    fct = res.flows["fct_ns"][ids] * 1000
    alone = ser_ps(wire_bytes(size), RATE)
    assert fct[0] == pytest.approx(2 * alone, rel=0.03)       # C/2 for A
    # the three others got C/6 each while A ran, then C/3: all four end together at 4x
    assert fct[1:] == pytest.approx([4 * alone] * 3, rel=0.03)


def test_routing_loop_without_pfc_ends_by_ttl():
    t, a, b = two_switch_loop()
    sim = Simulation(t, switch={"pfc": {"enabled": False}}, nic={"ttl": 16},
                     routes=[{"switch": a, "dst": 1, "next": b}, {"switch": b, "dst": 1, "next": a}])
    sim.add_flow(0, 1, 100_000)
    res = sim.run(stop="500us")
    assert res.summary["ttl_drops"] > 0
    assert res.summary["flows_completed"] == 0
    assert res.summary["stopped_at_limit"]


def test_routing_loop_with_pfc_deadlocks():
    """Injection at line rate into a 2-switch loop exceeds 2 x B / TTL: the loop's
    links pause each other and stay paused with packets trapped (Hu et al., "Deadlocks in
    datacenter networks: why do they form, and how to avoid them", HotNets 2016)."""
    def run(stop):
        t, a, b = two_switch_loop()
        sim = Simulation(t, switch={"buffer": "1MB"}, nic={"ttl": 64},
                         routes=[{"switch": a, "dst": 1, "next": b}, {"switch": b, "dst": 1, "next": a}])
        sim.add_flow(0, 1, 3_000_000)
        return sim.run(stop=stop)

    res, later = run("3ms"), run("6ms")
    p = res.ports
    loop_ports = np.flatnonzero((p["node"] >= 2) & (p["peer_node"] >= 2))
    assert res.summary["pfc_pauses"] > 0
    assert all(p["paused_now"][loop_ports] != 0)           # both directions paused
    assert res.summary["packets_in_use_at_end"] > 100       # trapped in the cycle
    assert np.isnan(res.flows["fct_ns"][0])                 # the flow never finishes
    # it never drains: three more milliseconds move nothing
    assert later.summary["link_crossings"] == res.summary["link_crossings"]


def test_a_deadlock_without_stop_time_ends_as_stalled():
    """Nothing drains, only timeouts tick: the run notices and stops with what it has."""
    t, a, b = two_switch_loop()
    sim = Simulation(t, switch={"buffer": "1MB"},
                     routes=[{"switch": a, "dst": 1, "next": b}, {"switch": b, "dst": 1, "next": a}])
    sim.add_flow(0, 1, 3_000_000)
    res = sim.run()
    assert res.summary["stalled"]
    assert res.summary["flows_completed"] == 0
    assert "stalled" in res.describe()
