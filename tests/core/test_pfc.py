"""PFC: lossless incast at line rate, pause frames, per-ingress-port sharing, loops."""
import numpy as np
import pytest

from helpers import loop_routes, ser_ps, two_switch_loop, wire_bytes
from rocesim import ScenarioError, Simulation, topology
from rocesim.units import parse_time

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
                     routes=loop_routes(a, b))
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
                         routes=loop_routes(a, b))
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


@pytest.mark.parametrize("rto", [None, "1ms"])
def test_a_deadlock_without_stop_time_ends_as_stalled(rto):
    """Nothing drains: with no timeout on lossless priorities (the default, as the HPCC fork)
    no event is left and the run ends at once; with a timeout, only timeouts tick (each
    retransmission is trapped too) and the run notices a simulated second later."""
    t, a, b = two_switch_loop()
    sim = Simulation(t, switch={"buffer": "1MB"}, nic={} if rto is None else {"rto": rto},
                     routes=loop_routes(a, b))
    sim.add_flow(0, 1, 3_000_000)
    res = sim.run()
    assert res.summary["stalled"]
    assert res.summary["flows_completed"] == 0
    assert "stalled" in res.describe()
    if rto is None:
        assert res.summary["timeouts"] == 0 and res.summary["retx_bytes"] == 0
        assert res.summary["sim_time_ns"] < 1e6                     # ended when it froze
    else:
        assert res.summary["timeouts"] > 0 and res.summary["sim_time_ns"] > 1e9


def test_timeout_auto_arms_only_on_lossy_priorities():
    sim = Simulation(topology.star(3, "100Gbps", "1us"), switch={"pfc": {"priorities": [3]}})
    assert sim.network.params["rto_mask"] == 0xFF & ~(1 << 3) and sim.network.params["rto"] == 10**9
    off = Simulation(topology.star(3, "100Gbps", "1us"), switch={"pfc": {"enabled": False}})
    assert off.network.params["rto_mask"] == 0xFF
    fixed = Simulation(topology.star(3, "100Gbps", "1us"), nic={"rto": "200us"})
    assert fixed.network.params["rto_mask"] == 0xFF and fixed.network.params["rto"] == 200 * 10**6


@pytest.mark.parametrize("delay", ["0ns", "100ns", "1us", "10us"])
def test_lossless_means_lossless_across_link_delays(delay):
    """Invariant: with PFC on, no data packet is dropped for buffer reasons.  The automatic
    headroom holds the worst case of what can still arrive after XOFF is decided (the frame
    being received, the PAUSE behind a frame in progress and its own serialization, a
    round trip at line rate, the frame the peer has started); where a 1 MB switch cannot
    hold that for every port (10 us links: 9 x 253 KB), the configuration is refused."""
    def run(buffer):
        sim = Simulation(topology.star(9, "100Gbps", delay), switch={"buffer": buffer})
        for h in range(1, 9):
            sim.add_flow(h, 0, 500_000)
        return sim, sim.run(stop="2ms")

    if delay == "10us":
        with pytest.raises(ScenarioError) as e:
            run("1MB")
        assert e.value.key == "switch.buffer"
        sim, res = run("4MB")
    else:
        sim, res = run("1MB")
    rtt_bytes = 2 * RATE * parse_time(delay) / 8e12
    assert sim.network.arrays["port_headroom"].min() >= rtt_bytes + 3 * 1048     # the worst case
    assert res.summary["pfc_pauses"] > 0                                   # PFC did work
    assert res.summary["drops"] == 0
    assert res.summary["flows_completed"] == 8
    assert res.summary["retx_bytes"] == 0


def test_headroom_below_the_worst_case_is_refused():
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), switch={"pfc": {"headroom": "20KB"}})
    assert e.value.key == "switch.pfc.headroom" and "after a PAUSE" in e.value.reason
    # lossy runs do not care
    Simulation(topology.star(3, "100Gbps", "1us"), switch={"pfc": {"enabled": False, "headroom": "20KB"}})


def test_pfc_frames_are_counted_once():
    sim = Simulation(topology.star(5, "100Gbps", "1us"), switch={"buffer": "2MB"})
    for h in (1, 2, 3, 4):
        sim.add_flow(h, 0, 2_000_000)
    res = sim.run()
    s = res.summary
    # on a star every data packet and every ACK crosses two links; PFC frames cross one
    frames = s["link_crossings"] - 2 * (s["data_packets_sent"] + s["acks"])
    assert s["pfc_pauses"] > 0
    assert s["pfc_pauses"] + s["pfc_resumes"] == frames
    assert res.ports["pauses_sent"].sum() == s["pfc_pauses"]


def test_several_lossless_priorities_never_drop():
    sim = Simulation(topology.star(9, "100Gbps", "1us"), switch={"buffer": "400KB"})
    for h in range(1, 9):
        for prio in (3, 4):
            sim.add_flow(h, 0, 300_000, prio=prio)
    res = sim.run()
    assert res.summary["drops"] == 0 and res.summary["retx_bytes"] == 0
    assert res.summary["flows_completed"] == 16


def test_pfc_alpha_shift_rounds_up_like_the_fork():
    t = topology.leaf_spine(2, 1, 2, "40Gbps", "1us", "100Gbps", "1us")
    net = Simulation(t).network.arrays
    rate, shift = net["port_rate_bps"], net["port_pfc_shift"]
    assert set(shift[rate == 40_000_000_000]) == {3}
    assert set(shift[rate == 100_000_000_000]) == {1}     # 100/40 = 2.5: two halvings
