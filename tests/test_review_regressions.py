"""Regression tests for problems a review of the core found (each failed before its fix)."""
import pytest

from rocesim import ScenarioError, Simulation, topology
from rocesim.cc import PythonScheme


def test_dcqcn_zero_periods_are_refused_before_running():
    for name in ("t_alpha", "t"):
        with pytest.raises(ScenarioError) as e:
            Simulation(topology.star(3, "100Gbps", "1us"), cc="dcqcn", cc_params={name: "0us"})
        assert e.value.key == f"cc.params.{name}" and "positive" in e.value.reason


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


class SlowThenFast(PythonScheme):
    """10 Mb/s for the first 10 us, then line rate (set from a timer)."""

    def on_start(self, flow):
        flow.rate_bps = 10_000_000
        flow.set_timer(10_000_000, 1)

    def on_timer(self, flow, timer_id):
        flow.rate_bps = flow.line_rate_bps


def test_a_rate_increase_takes_effect_at_once():
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="test_review_regressions:SlowThenFast")
    f = sim.add_flow(1, 2, 100_000)
    res = sim.run()
    # the first packet's 838 us gap at 10 Mb/s is re-timed at line rate when the rate changes
    assert res.flows["fct_ns"][f] < res.flows["ideal_fct_ns"][f] + 12_000


class Paced(PythonScheme):
    def on_start(self, flow):
        flow.rate_bps = 4_190_000


def test_no_spurious_timeout_after_an_idle_gap():
    """A slowly paced flow sends one packet per ~2 ms: its timeout must run from each send."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="test_review_regressions:Paced")
    f = sim.add_flow(1, 2, 5_000)
    res = sim.run()
    assert res.flows["timeouts"][f] == 0 and res.summary["retx_bytes"] == 0


def test_payload_is_bounded():
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), nic={"payload": "1.2MB"})
    assert e.value.key == "nic.payload"


def test_pfc_alpha_shift_rounds_up_like_the_fork():
    t = topology.leaf_spine(2, 1, 2, "40Gbps", "1us", "100Gbps", "1us")
    net = Simulation(t)._network
    rate, shift = net["port_rate_bps"], net["port_pfc_shift"]
    assert set(shift[rate == 40_000_000_000]) == {3}
    assert set(shift[rate == 100_000_000_000]) == {1}     # 100/40 = 2.5: two halvings


def test_a_refused_flow_leaves_nothing_behind():
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t)
    with pytest.raises(ScenarioError):
        sim.add_flow(0, 13, 1000, path=[0, 16, 32, 13])
    with pytest.raises(ScenarioError):
        sim.add_flow(0, 13, 1000, after=[7])
    assert sim.n_flows == 0
